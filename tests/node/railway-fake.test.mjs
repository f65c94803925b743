// The Railway fake (tests/fakes/railway.mjs) is only as good as its proof:
// Railway's official TypeScript SDK (npm `railway` 3.11.0, pinned in
// bindings-node's devDependencies) must accept it. Every call a provider makes
// is made here by the SDK itself, pointed at the fake by its own `endpoint`
// option (or RAILWAY_GRAPHQL_ENDPOINT): every page listed once (the SDK drops
// `pageInfo`, so a recording `fetch` reads it, as a sweep must), one got, one
// destroyed (and what follows), one created, both kinds of token accepted, a
// wrong one refused, and the faults read as Railway's would. The exact
// documents the SDK sends are pinned below: they are what a provider copies.

import test from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

import { startFakeRailway, DEFAULT_ENVIRONMENT_ID, STATUSES } from '../fakes/railway.mjs';

const require = createRequire(new URL('../../bindings-node/package.json', import.meta.url));
const { Sandbox, RailwayGraphQLError, SandboxNotFoundError } = require('railway');

// The SDK reads these at every call: none may leak in from the machine.
const RAILWAY_VARIABLES = ['RAILWAY_TOKEN', 'RAILWAY_API_TOKEN', 'RAILWAY_ENVIRONMENT_ID', 'RAILWAY_GRAPHQL_ENDPOINT', 'RAILWAY_VERBOSE'];
for (const name of RAILWAY_VARIABLES) delete process.env[name];

const FIELDS = `fragment RailwaySandboxFields on Sandbox {
  id
  status
  networkIsolation
  environmentId
  region
  idleTimeoutMinutes
  createdAt
}`;
// What the SDK sends (graphql's `print` of its generated documents).
const DOCUMENTS = {
  RailwaySandboxes: `query RailwaySandboxes($environmentId: String!, $first: Int, $after: String, $before: String, $last: Int) {
  sandboxes(
    environmentId: $environmentId
    first: $first
    after: $after
    before: $before
    last: $last
  ) {
    edges {
      node {
        ...RailwaySandboxFields
      }
    }
    pageInfo {
      hasNextPage
      endCursor
    }
  }
}

${FIELDS}`,
  RailwaySandbox: `query RailwaySandbox($environmentId: String!, $id: String!) {
  sandbox(environmentId: $environmentId, id: $id) {
    ...RailwaySandboxFields
  }
}

${FIELDS}`,
  RailwaySandboxDestroy: `mutation RailwaySandboxDestroy($id: String!, $environmentId: String!) {
  sandboxDestroy(id: $id, environmentId: $environmentId) {
    ...RailwaySandboxFields
  }
}

${FIELDS}`,
  RailwaySandboxCreate: `mutation RailwaySandboxCreate($input: SandboxCreateInput!) {
  sandboxCreate(input: $input) {
    ...RailwaySandboxFields
  }
}

${FIELDS}`,
};

const OTHER_ENV = '6f9c1b2a-0000-4000-8000-00000000e002';
const t0 = Date.UTC(2026, 0, 1);
const sbId = (i) => `sb-${String(i).padStart(3, '0')}`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const hosted = (fake) => fake.state().requests;

/** A `fetch` for the SDK that keeps every request and answer it carried. */
function recorder() {
  const calls = [];
  const recordingFetch = async (url, init) => {
    const res = await fetch(url, init);
    const text = await res.clone().text();
    calls.push({
      url,
      headers: { ...init.headers },
      request: JSON.parse(init.body),
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      body: text ? JSON.parse(text) : undefined,
    });
    return res;
  };
  return { fetch: recordingFetch, calls, last: () => calls[calls.length - 1] };
}

/** A `fetch` that gives up after `ms`. */
const impatient = (ms) => (url, init) => fetch(url, { ...init, signal: AbortSignal.timeout(ms) });

const options = (fake, more = {}) => ({ token: fake.token, endpoint: fake.endpoint, environmentId: fake.environmentId, ...more });

const graphqlError = (status, message) => (error) =>
  error instanceof RailwayGraphQLError && error.status === status && error.message === message;

async function withFake(body, config) {
  const fake = await startFakeRailway(config);
  try {
    await body(fake);
  } finally {
    await fake.close();
  }
}

async function withEnv(vars, body) {
  const saved = Object.fromEntries(RAILWAY_VARIABLES.map((name) => [name, process.env[name]]));
  Object.assign(process.env, vars);
  try {
    return await body();
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

function seedSandboxes(fake, count, more = () => ({})) {
  return fake.seed(Array.from({ length: count }, (_, i) => ({ id: sbId(i), createdAt: t0 + i * 1000, ...more(i) })));
}

// Every page through the SDK, reading `pageInfo` off the wire.
async function listAll(fake, { first, maxPages = 50, ...more } = {}) {
  const rec = recorder();
  const seen = [];
  let after;
  let pages = 0;
  for (;;) {
    const nodes = await Sandbox.list(options(fake, { fetch: rec.fetch, first, after, ...more }));
    pages += 1;
    seen.push(...nodes);
    const { pageInfo } = rec.last().body.data.sandboxes;
    if (!pageInfo.hasNextPage || pages >= maxPages) return { seen, pages, rec };
    after = pageInfo.endCursor;
  }
}

// ---------------------------------------------------------------- listing

test('Railway: Sandbox.list pages through the environment with the documented query, every sandbox once', async () => {
  await withFake(async (fake) => {
    seedSandboxes(fake, 45, (i) => ({ status: STATUSES.filter((s) => s !== 'DESTROYED')[i % 4], region: i % 2 ? 'europe-west4' : 'us-west2', idleTimeoutMinutes: i % 3 ? 30 : null }));
    fake.seed([{ id: 'elsewhere-1', environmentId: OTHER_ENV }, { id: 'elsewhere-2', environmentId: OTHER_ENV }]);

    const { seen, pages, rec } = await listAll(fake, { first: 17 });
    assert.equal(pages, 3);
    assert.deepEqual(seen.map((s) => s.id), Array.from({ length: 45 }, (_, i) => sbId(i)), 'oldest first, each once, no other environment');
    assert.deepEqual(rec.calls.map((c) => c.request.query), Array(3).fill(DOCUMENTS.RailwaySandboxes));
    assert.ok(rec.calls.every((c) => c.request.operationName === undefined), 'the SDK sends no operationName');
    assert.deepEqual(rec.calls[0].request.variables, { environmentId: fake.environmentId, first: 17 });
    assert.deepEqual(rec.calls[1].request.variables, { environmentId: fake.environmentId, first: 17, after: rec.calls[0].body.data.sandboxes.pageInfo.endCursor });
    assert.deepEqual(rec.calls.map((c) => c.body.data.sandboxes.pageInfo.hasNextPage), [true, true, false]);
    assert.equal(Buffer.from(rec.calls[0].body.data.sandboxes.pageInfo.endCursor, 'base64').toString(), 'OffsetConnection:16');
    assert.deepEqual(Object.keys(rec.calls[0].body.data.sandboxes.edges[0]), ['node'], 'no cursor unless asked for');
    assert.equal(rec.calls[0].headers.Authorization, `Bearer ${fake.token}`);
    assert.equal(rec.calls[0].headers['User-Agent'], 'railway-ts-sdk/3.11.0');
    assert.equal(rec.calls[0].url, fake.endpoint);

    const s5 = seen[5];
    assert.deepEqual(s5, {
      id: sbId(5),
      status: 'RUNNING',
      networkIsolation: 'ISOLATED',
      environmentId: fake.environmentId,
      region: 'europe-west4',
      idleTimeoutMinutes: 30,
      createdAt: '2026-01-01T00:00:05.000Z',
    });
    assert.equal(seen[0].idleTimeoutMinutes, null);
    assert.deepEqual(new Set(seen.map((s) => s.status)), new Set(['CREATING', 'RUNNING', 'DESTROYING', 'FAILED']));

    // No `first`: a page of 20. A `first` over 100 is clamped to 100, not refused.
    assert.equal((await Sandbox.list(options(fake))).length, 20);
    seedSandboxes(fake, 130, (i) => ({ id: `big-${String(i).padStart(3, '0')}`, environmentId: OTHER_ENV }));
    const big = recorder();
    assert.equal((await Sandbox.list(options(fake, { environmentId: OTHER_ENV, first: 500, fetch: big.fetch }))).length, 100);
    assert.equal(big.last().body.data.sandboxes.pageInfo.hasNextPage, true);
    assert.deepEqual((await listAll(fake, { environmentId: OTHER_ENV, first: 100 })).seen.length, 132);
    await assert.rejects(Sandbox.list(options(fake, { first: -1 })), graphqlError(200, 'Argument "first" must be a non-negative integer'));
    await assert.rejects(Sandbox.list(options(fake, { after: 'not-a-cursor' })), graphqlError(200, 'Invalid offset cursor OffsetConnection:'));
    // An empty environment the token sees lists nothing, with no next page.
    const empty = recorder();
    fake.seed([{ id: 'lonely', environmentId: 'env-empty', status: 'DESTROYED' }]);
    assert.deepEqual(await Sandbox.list(options(fake, { environmentId: 'env-empty', fetch: empty.fetch })), []);
    assert.equal(empty.last().body.data.sandboxes.pageInfo.hasNextPage, false);
  });
});

// ------------------------------------------------------------ get, destroy

test('Railway: Sandbox.connect gets one; an unknown, destroyed or other-environment id is `sandbox: null`, SandboxNotFoundError', async () => {
  await withFake(async (fake) => {
    seedSandboxes(fake, 3);
    fake.seed([{ id: 'tomb', status: 'DESTROYED' }, { id: 'far', environmentId: OTHER_ENV }]);
    const rec = recorder();
    const sandbox = await Sandbox.connect(sbId(1), options(fake, { fetch: rec.fetch }));
    assert.equal(sandbox.id, sbId(1));
    assert.equal(sandbox.status, 'RUNNING');
    assert.equal(sandbox.createdAt, '2026-01-01T00:00:01.000Z');
    assert.equal(rec.last().request.query, DOCUMENTS.RailwaySandbox);
    assert.deepEqual(rec.last().request.variables, { id: sbId(1), environmentId: fake.environmentId });

    for (const id of ['never-was', 'tomb', 'far']) {
      await assert.rejects(Sandbox.connect(id, options(fake, { fetch: rec.fetch })), (error) => error instanceof SandboxNotFoundError && error.id === id);
      assert.equal(rec.last().status, 200);
      assert.deepEqual(rec.last().body, { data: { sandbox: null } }, 'no error, no HTTP 404: a null sandbox');
    }
    // With tombstones on, a DESTROYED sandbox reads back as such (what TanStack guards against).
    fake.setFaults({ tombstones: true });
    assert.equal((await Sandbox.connect('tomb', options(fake))).status, 'DESTROYED');
    assert.ok((await Sandbox.list(options(fake))).some((s) => s.id === 'tomb' && s.status === 'DESTROYED'));
  });
});

test('Railway: sandbox.destroy answers DESTROYING, then the sandbox is gone; a second destroy is a GraphQL error', async () => {
  await withFake(async (fake) => {
    seedSandboxes(fake, 4);
    const rec = recorder();
    const sandbox = await Sandbox.connect(sbId(2), options(fake, { fetch: rec.fetch }));
    const again = await Sandbox.connect(sbId(2), options(fake, { fetch: rec.fetch }));
    assert.equal(await sandbox.destroy(), undefined);
    assert.equal(rec.last().request.query, DOCUMENTS.RailwaySandboxDestroy);
    assert.deepEqual(rec.last().request.variables, { id: sbId(2), environmentId: fake.environmentId });
    assert.equal(rec.last().body.data.sandboxDestroy.status, 'DESTROYING');
    assert.equal(rec.last().body.data.sandboxDestroy.id, sbId(2));

    const state = fake.state();
    assert.deepEqual(state.destroys, [sbId(2)]);
    assert.deepEqual(state.destroyed, [sbId(2)]);
    assert.equal(state.statuses[sbId(2)], 'DESTROYED');
    assert.deepEqual(state.alive, [sbId(0), sbId(1), sbId(3)]);
    await assert.rejects(Sandbox.connect(sbId(2), options(fake)), SandboxNotFoundError);
    assert.deepEqual((await Sandbox.list(options(fake))).map((s) => s.id), [sbId(0), sbId(1), sbId(3)]);

    // Gone: destroying it again is an error under HTTP 200 (the SDK never says "not found" here)...
    await assert.rejects(again.destroy(), (error) => graphqlError(200, 'Sandbox not found')(error) && error.errors[0].path[0] === 'sandboxDestroy');
    assert.deepEqual(rec.last().body.data, { sandboxDestroy: null }, 'a nullable root field: data holds null beside the error');
    await assert.rejects(Sandbox.connect('x', options(fake)).then(() => 0), SandboxNotFoundError);
    // ...or, with destroyMissing 'null', a plain `sandboxDestroy: null`.
    fake.setFaults({ destroyMissing: 'null' });
    await again.destroy();
    assert.deepEqual(rec.last().body, { data: { sandboxDestroy: null } });
    assert.deepEqual(fake.state().destroys, [sbId(2)]);
  });
});

test('Railway: with destroyingMs a destroyed sandbox lingers, DESTROYING, in the listing and the get, then is gone', async () => {
  await withFake(async (fake) => {
    seedSandboxes(fake, 3);
    fake.setFaults({ destroyingMs: 400 });
    const sandbox = await Sandbox.connect(sbId(0), options(fake));
    await sandbox.destroy();
    assert.equal((await Sandbox.connect(sbId(0), options(fake))).status, 'DESTROYING');
    assert.deepEqual((await Sandbox.list(options(fake))).map((s) => [s.id, s.status]), [[sbId(0), 'DESTROYING'], [sbId(1), 'RUNNING'], [sbId(2), 'RUNNING']]);
    assert.deepEqual(fake.state().alive, [sbId(1), sbId(2)], 'DESTROYING is not alive');
    // A destroy while DESTROYING is accepted again, unchanged.
    const rec = recorder();
    await (await Sandbox.connect(sbId(0), options(fake))).destroy();
    await Sandbox.list(options(fake, { fetch: rec.fetch }));
    assert.deepEqual(fake.state().destroys, [sbId(0), sbId(0)]);
    await wait(450);
    await assert.rejects(Sandbox.connect(sbId(0), options(fake)), SandboxNotFoundError);
    assert.deepEqual((await Sandbox.list(options(fake))).map((s) => s.id), [sbId(1), sbId(2)]);
  });
});

// ----------------------------------------------------------------- create

test('Railway: Sandbox.create mints a RUNNING sandbox that lists, gets and destroys like any other', async () => {
  await withFake(async (fake) => {
    const rec = recorder();
    const created = await Sandbox.create(options(fake, { fetch: rec.fetch, idleTimeoutMinutes: 0, networkIsolation: 'PRIVATE', region: 'us-east4-eqdc4a', env: { OWNER: 'sandbox-reclaim' } }));
    assert.equal(rec.calls.length, 1, 'RUNNING at once: the SDK does not poll');
    assert.equal(rec.last().request.query, DOCUMENTS.RailwaySandboxCreate);
    assert.deepEqual(rec.last().request.variables, {
      input: { environmentId: fake.environmentId, idleTimeoutMinutes: 0, networkIsolation: 'PRIVATE', region: 'us-east4-eqdc4a', variables: { OWNER: 'sandbox-reclaim' } },
    });
    assert.match(created.id, UUID);
    assert.equal(created.status, 'RUNNING');
    assert.equal(created.networkIsolation, 'PRIVATE');
    assert.equal(created.region, 'us-east4-eqdc4a');
    assert.equal(created.idleTimeoutMinutes, 0);
    assert.ok(Math.abs(Date.parse(created.createdAt) - Date.now()) < 5_000);
    assert.match(created.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const plain = await Sandbox.create(options(fake));
    assert.equal(plain.networkIsolation, 'ISOLATED');
    assert.equal(plain.region, 'us-west2');
    assert.equal(plain.idleTimeoutMinutes, null);

    assert.deepEqual((await Sandbox.list(options(fake))).map((s) => s.id).sort(), [created.id, plain.id].sort());
    assert.deepEqual(fake.state().sandboxes.find((s) => s.id === created.id).variables, { OWNER: 'sandbox-reclaim' }, 'env is kept, never served');
    assert.equal((await Sandbox.connect(created.id, options(fake))).id, created.id);
    await created.destroy();
    assert.deepEqual(fake.state().alive, [plain.id]);
    // An environment the token cannot see is refused, and nothing is made.
    await assert.rejects(Sandbox.create(options(fake, { token: fake.projectToken, authType: 'project-token', environmentId: OTHER_ENV })), graphqlError(200, 'Not Authorized'));
    assert.equal(fake.state().sandboxes.length, 2);
  });
});

// ----------------------------------------------------------------- tokens

test('Railway: a project token (project-access-token) and an account token (Bearer) are both accepted, from options or variables', async () => {
  await withFake(async (fake) => {
    seedSandboxes(fake, 2);
    fake.seed([{ id: 'far', environmentId: OTHER_ENV }]);

    // RAILWAY_TOKEN is a project token: the SDK sends it as project-access-token.
    const viaProject = recorder();
    await withEnv({ RAILWAY_TOKEN: fake.projectToken, RAILWAY_ENVIRONMENT_ID: fake.environmentId, RAILWAY_GRAPHQL_ENDPOINT: fake.endpoint }, async () => {
      assert.equal((await Sandbox.list({ fetch: viaProject.fetch })).length, 2);
      assert.equal((await Sandbox.connect(sbId(0), { fetch: viaProject.fetch })).id, sbId(0));
    });
    assert.equal(viaProject.last().headers['project-access-token'], fake.projectToken);
    assert.equal(viaProject.last().headers.Authorization, undefined);

    // RAILWAY_API_TOKEN is an account/workspace token: Bearer.
    const viaApi = recorder();
    await withEnv({ RAILWAY_API_TOKEN: fake.token, RAILWAY_ENVIRONMENT_ID: fake.environmentId, RAILWAY_GRAPHQL_ENDPOINT: fake.endpoint }, async () => {
      assert.equal((await Sandbox.list({ fetch: viaApi.fetch })).length, 2);
    });
    assert.equal(viaApi.last().headers.Authorization, `Bearer ${fake.token}`);
    assert.equal(viaApi.last().headers['project-access-token'], undefined);

    // Options: `token` is Bearer unless authType says project-token.
    assert.equal((await Sandbox.list(options(fake, { token: fake.projectToken, authType: 'project-token' }))).length, 2);
    assert.deepEqual(hosted(fake).map((r) => r.auth), ['project-token', 'project-token', 'bearer', 'project-token']);

    // An account token sees every environment; a project token only its own.
    assert.deepEqual((await Sandbox.list(options(fake, { environmentId: OTHER_ENV }))).map((s) => s.id), ['far']);
    await assert.rejects(Sandbox.list(options(fake, { token: fake.projectToken, authType: 'project-token', environmentId: OTHER_ENV })), graphqlError(200, 'Not Authorized'));
    await assert.rejects(Sandbox.list(options(fake, { environmentId: 'no-such-environment' })), graphqlError(200, 'Not Authorized'));
    assert.ok(!JSON.stringify(fake.state()).includes(fake.token) && !JSON.stringify(fake.state()).includes(fake.projectToken), 'the state never holds a token');
  });
});

test('Railway: a wrong token is refused as Railway does it, HTTP 200 with GraphQL errors, which the SDK raises', async () => {
  await withFake(async (fake) => {
    seedSandboxes(fake, 2);
    const rec = recorder();
    await assert.rejects(Sandbox.list(options(fake, { token: 'wrong', fetch: rec.fetch })), graphqlError(200, 'Not Authorized'));
    const refused = rec.last().body;
    assert.equal(refused.data, null, 'sandboxes is non-null: data is null');
    assert.deepEqual(refused.errors[0].path, ['sandboxes']);
    assert.equal(refused.errors[0].extensions.code, 'INTERNAL_SERVER_ERROR');
    assert.match(refused.errors[0].traceId, /^[0-9a-f]{16}$/);
    assert.deepEqual(refused.errors[0].locations, [{ line: 2, column: 3 }]);

    await assert.rejects(Sandbox.connect(sbId(0), options(fake, { token: 'wrong', authType: 'project-token', fetch: rec.fetch })), graphqlError(200, 'Project Token not found'));
    assert.deepEqual(rec.last().body.data, { sandbox: null });
    // A project token sent as Bearer is "Project Token not found" too.
    await assert.rejects(Sandbox.list(options(fake, { token: fake.projectToken })), graphqlError(200, 'Project Token not found'));
    const victim = await Sandbox.connect(sbId(1), options(fake));
    // A handle got rightly whose destroy goes out with a wrong token.
    const wrongOnDestroy = (url, init) => fetch(url, init.body.includes('sandboxDestroy') ? { ...init, headers: { ...init.headers, Authorization: 'Bearer wrong' } } : init);
    const wrongHandle = await Sandbox.connect(sbId(1), options(fake, { fetch: wrongOnDestroy }));
    await assert.rejects(wrongHandle.destroy(), graphqlError(200, 'Not Authorized'));
    assert.equal((await Sandbox.connect(victim.id, options(fake))).status, 'RUNNING');
    assert.deepEqual(fake.state().destroys, []);
    assert.equal(hosted(fake).length, 7, 'the SDK never retries');
  });
});

// ----------------------------------------------------------------- faults

test('Railway: a 429 with Retry-After and a GraphQL error on destroy surface from the SDK, unretried', async () => {
  await withFake(async (fake) => {
    seedSandboxes(fake, 4);
    const rec = recorder();
    const handles = await Promise.all([0, 1, 2, 3].map((i) => Sandbox.connect(sbId(i), options(fake, { fetch: rec.fetch }))));

    fake.setFaults({ rateLimitDestroys: 1, retryAfterSeconds: 7 });
    await assert.rejects(handles[0].destroy(), graphqlError(429, 'Too Many Requests'));
    assert.equal(rec.last().status, 429);
    assert.equal(rec.last().retryAfter, '7');
    assert.equal(fake.state().statuses[sbId(0)], 'RUNNING');
    await handles[0].destroy();
    assert.deepEqual(fake.state().destroys, [sbId(0)]);

    fake.setFaults({ failDestroyEvery: 2 });
    await handles[1].destroy(); // the 3rd destroy call
    await assert.rejects(handles[2].destroy(), (error) => graphqlError(200, 'Problem processing request')(error) && error.errors[0].extensions.code === 'INTERNAL_SERVER_ERROR');
    assert.deepEqual(rec.last().body.data, { sandboxDestroy: null });
    assert.equal(fake.state().statuses[sbId(2)], 'RUNNING', 'a failed destroy destroys nothing');
    fake.setFaults({ failDestroyEvery: 1, failDestroyStatus: 500 });
    await assert.rejects(handles[3].destroy(), graphqlError(500, 'Problem processing request'));
    assert.deepEqual(fake.state().destroys, [sbId(0), sbId(1)]);
    assert.equal(hosted(fake).filter((r) => r.field === 'sandboxDestroy').length, 5, 'the SDK never retries');
  });
});

test('Railway: malformed, repeating and cycling pages reach the SDK as they are', async () => {
  await withFake(async (fake) => {
    seedSandboxes(fake, 25);
    fake.setFaults({ malformedPage: 2 });
    const { rec } = await listAll(fake, { first: 10, maxPages: 1 });
    const after = rec.last().body.data.sandboxes.pageInfo.endCursor;
    await assert.rejects(Sandbox.list(options(fake, { first: 10, after })), TypeError);

    fake.setFaults({ malformedPage: 0, repeatAcrossPages: true });
    const repeated = await listAll(fake, { first: 10 });
    assert.equal(repeated.pages, 3);
    assert.equal(repeated.seen.length, 27);
    assert.equal(repeated.seen[10].id, sbId(9), "page 2 opens with page 1's last");
    assert.equal(repeated.seen[21].id, sbId(19));
    assert.equal(new Set(repeated.seen.map((s) => s.id)).size, 25);

    fake.setFaults({ repeatAcrossPages: false, cycleCursor: true });
    const cycling = await listAll(fake, { first: 10, maxPages: 5 });
    assert.equal(cycling.pages, 5, 'the cursor never moves on');
    const infos = cycling.rec.calls.map((c) => c.body.data.sandboxes.pageInfo);
    assert.equal(infos[1].endCursor, infos[0].endCursor);
    assert.ok(infos.every((i) => i.hasNextPage));
    assert.deepEqual(cycling.seen.slice(20, 30).map((s) => s.id), cycling.seen.slice(10, 20).map((s) => s.id));
  });
});

test('Railway: hanging lists and destroys leave the SDK waiting until its fetch gives up; latency slows every answer', async () => {
  await withFake(async (fake) => {
    seedSandboxes(fake, 2);
    const sandbox = await Sandbox.connect(sbId(0), options(fake));
    fake.setFaults({ hangLists: true });
    await assert.rejects(Sandbox.list(options(fake, { fetch: impatient(300) })), { name: 'TimeoutError' });
    for (let waited = 0; fake.state().abandoned < 1 && waited < 2_000; waited += 20) await wait(20);
    assert.equal(fake.state().abandoned, 1);
    assert.equal((await Sandbox.connect(sbId(1), options(fake))).id, sbId(1), 'a get still answers');

    fake.setFaults({ hangLists: false, hangDestroys: true });
    const stuck = await Sandbox.connect(sbId(0), options(fake, { fetch: impatient(300) }));
    await assert.rejects(stuck.destroy(), { name: 'TimeoutError' });
    for (let waited = 0; fake.state().abandoned < 2 && waited < 2_000; waited += 20) await wait(20);
    assert.equal(fake.state().abandoned, 2);
    assert.equal(fake.state().statuses[sbId(0)], 'RUNNING');

    fake.setFaults({ hangDestroys: false, latencyMs: 150 });
    const started = Date.now();
    await sandbox.destroy();
    assert.ok(Date.now() - started >= 140);
    assert.deepEqual(fake.state().destroys, [sbId(0)]);
  });
});

// ------------------------------------------------------------------- wire

test('Railway: by hand, the fake dispatches on the root field (aliases, literals, operationName) and refuses what it does not know', async () => {
  await withFake(async (fake) => {
    seedSandboxes(fake, 3);
    const post = async (body, headers = { authorization: `Bearer ${fake.token}` }) => {
      const res = await fetch(fake.endpoint, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
      return { status: res.status, body: await res.json() };
    };
    // As a hand-written client (say, serde over reqwest) might send it.
    const mine = await post({
      operationName: 'Sweep',
      query: `# two operations, one chosen by name
        query Other { sandbox(environmentId: "x", id: "y") { id } }
        query Sweep($env: String!, $after: String) {
          page: sandboxes(environmentId: $env, first: 2, after: $after) {
            edges { cursor node { id status createdAt } }
            pageInfo { hasNextPage endCursor hasPreviousPage startCursor }
          }
        }`,
      variables: { env: fake.environmentId },
    });
    assert.equal(mine.status, 200);
    assert.deepEqual(mine.body.data.page.edges.map((e) => e.node.id), [sbId(0), sbId(1)]);
    assert.equal(Buffer.from(mine.body.data.page.edges[1].cursor, 'base64').toString(), 'OffsetConnection:1');
    assert.deepEqual(Object.keys(mine.body.data.page.pageInfo).sort(), ['endCursor', 'hasNextPage', 'hasPreviousPage', 'startCursor']);
    assert.deepEqual(fake.state().requests.at(-1), { operation: 'Sweep', field: 'sandboxes', variables: { env: fake.environmentId }, auth: 'bearer' });
    const destroyed = await post({ query: `mutation { sandboxDestroy(id: "${sbId(2)}", environmentId: "${fake.environmentId}") { id status } }` });
    assert.deepEqual(destroyed.body.data.sandboxDestroy.status, 'DESTROYING');

    // Unknown fields, or a field on the wrong root type: a validation error, HTTP 200, no data.
    const unknown = await post({ query: '{ sandboxCheckpoints(environmentId: "x") { id } }' });
    assert.equal(unknown.status, 200);
    assert.equal(unknown.body.errors[0].message, 'Cannot query field "sandboxCheckpoints" on type "Query".');
    assert.equal('data' in unknown.body, false);
    const wrongRoot = await post({ query: `mutation M { sandboxes(environmentId: "x") { edges { node { id } } } }` });
    assert.equal(wrongRoot.body.errors[0].message, 'Cannot query field "sandboxes" on type "Mutation".');
    const missing = await post({ query: DOCUMENTS.RailwaySandbox, variables: { id: sbId(0) } });
    assert.match(missing.body.errors[0].message, /argument "environmentId" of type "String!" is required/);
    assert.equal((await post({ query: DOCUMENTS.RailwaySandbox, operationName: 'Nope', variables: {} })).body.errors[0].message, 'Unknown operation named "Nope".');
    assert.equal((await post('{not json')).status, 400);
    assert.equal((await post({ variables: {} })).status, 400);
    assert.equal((await fetch(fake.endpoint)).status, 405);
    assert.equal((await fetch(`${fake.url}/graphql`, { method: 'POST', body: '{}' })).status, 404);
    // No credential at all: Not Authorized.
    assert.equal((await post({ query: DOCUMENTS.RailwaySandbox, variables: { id: sbId(0), environmentId: fake.environmentId } }, {})).body.errors[0].message, 'Not Authorized');
  });
});

test('Railway: run as a program, the fake serves its control routes without a token and stops when stdin closes', async () => {
  const child = spawn(process.execPath, [fileURLToPath(new URL('../fakes/railway.mjs', import.meta.url)), '--token', 'cli-token', '--environment', 'env-cli'], { stdio: ['pipe', 'pipe', 'inherit'] });
  try {
    const [line] = await new Promise((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (chunk) => {
        out += chunk;
        if (out.includes('\n')) resolve(out.split('\n'));
      });
      child.on('error', reject);
    });
    const { url, endpoint } = JSON.parse(line);
    assert.equal(endpoint, `${url}/graphql/v2`);
    const control = async (method, route, body) => {
      const res = await fetch(`${url}/_fake/${route}`, { method, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: res.status, body: await res.json() };
    };
    const seeded = await control('POST', 'sandboxes', [{ id: 'a', createdAt: '2026-01-01T00:00:00Z' }, { status: 'CREATING' }]);
    assert.equal(seeded.status, 200);
    assert.equal(seeded.body.ids[0], 'a');
    assert.match(seeded.body.ids[1], UUID);
    assert.equal((await control('POST', 'sandboxes', [{ id: 'b', status: 'STOPPED' }])).status, 400);
    assert.equal((await control('POST', 'sandboxes', [{ id: 'b', labels: {} }])).status, 400);
    assert.equal((await control('POST', 'faults', { destroyingMs: 50 })).body.destroyingMs, 50);
    assert.equal((await control('POST', 'faults', { noSuchFault: 1 })).status, 400);

    const listed = await Sandbox.list({ token: 'cli-token', endpoint, environmentId: 'env-cli' });
    assert.deepEqual(listed.map((s) => [s.id, s.environmentId, s.createdAt]).slice(0, 1), [['a', 'env-cli', '2026-01-01T00:00:00.000Z']]);
    await (await Sandbox.connect('a', { token: 'cli-token', endpoint, environmentId: 'env-cli' })).destroy();
    const state = (await control('GET', 'state')).body;
    assert.deepEqual(state.destroys, ['a']);
    assert.deepEqual(state.alive, [seeded.body.ids[1]]);
    assert.deepEqual(state.requests.map((r) => r.operation), ['RailwaySandboxes', 'RailwaySandbox', 'RailwaySandboxDestroy']);
    assert.ok(!JSON.stringify(state).includes('cli-token'));
    await control('POST', 'reset');
    const after = (await control('GET', 'state')).body;
    assert.deepEqual([after.sandboxes, after.requests, after.destroys], [[], [], []]);
    assert.equal((await control('POST', 'faults', {})).body.destroyingMs, 0, 'reset clears the faults');
  } finally {
    child.stdin.end();
    const [code] = child.exitCode === null ? await once(child, 'exit') : [child.exitCode];
    assert.equal(code, 0);
  }
});

test('Railway: the default environment is fixed, and seeding refuses what Railway would never answer', async () => {
  await withFake(async (fake) => {
    assert.equal(fake.environmentId, DEFAULT_ENVIRONMENT_ID);
    assert.throws(() => fake.seed([{ id: 'x', status: 'STOPPED' }]), /status "STOPPED" is none of CREATING, RUNNING, DESTROYING, DESTROYED, FAILED/);
    assert.throws(() => fake.seed([{ id: 'x', networkIsolation: 'PUBLIC' }]), /networkIsolation "PUBLIC"/);
    assert.throws(() => fake.seed([{ id: 'x', createdAt: 'yesterday' }]), /createdAt must be/);
    assert.throws(() => fake.seed({ id: 'x' }), /array/);
    assert.throws(() => fake.setFaults({ destroyMissing: 'maybe' }), /destroyMissing/);
    // A name may be seeded for the test's own bookkeeping; Railway has none, so it is never served.
    fake.seed([{ id: 'named', name: 'ours' }]);
    const rec = recorder();
    await Sandbox.list(options(fake, { fetch: rec.fetch }));
    assert.equal(JSON.stringify(rec.last().body).includes('ours'), false);
    assert.equal(fake.state().sandboxes[0].name, 'ours');
  });
});
