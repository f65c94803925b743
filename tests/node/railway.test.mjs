// RailwayProvider through the Node binding, against Railway's GraphQL fake
// (tests/fakes/railway.mjs, proven by the official SDK in
// tests/node/railway-fake.test.mjs), started in-process; the provider's
// apiUrl is the fake's GraphQL `endpoint`. Railway sandboxes carry no
// labels: ours are those a record (or the store's registry) names, read by
// `sandbox` get, or with `sweepUnlabelled` by listing the whole environment.
// The options checked before any request (the environment required), and
// the fault set every hosted vendor meets: a failed destroy reaches the
// ledger without the token, throttling waits, a hanging call is cut by its
// deadline, repeated items and a lagging listing are harmless, a malformed
// page makes the sweep unavailable, unregistered strangers are never touched
// and registered ones are found by id.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import * as binding from '../../bindings-node/index.mjs';
import { startFakeRailway } from '../fakes/railway.mjs';

const { RailwayProvider, InMemorySandboxInstanceStore, reclaimSandbox, reconcile, listLeaks } = binding;

const TOKEN = 'railway_node_account_secret';
const PROJECT_TOKEN = 'railway_node_project_secret';
const ENVIRONMENT = 'env-node';
const OLD = '2026-01-01T00:00:00.123Z';
/** The variables the core reads for Railway: cleared while a test runs, so only the options count. */
const VARIABLES = ['RAILWAY_TOKEN', 'RAILWAY_API_TOKEN', 'RAILWAY_ENVIRONMENT_ID', 'RAILWAY_GRAPHQL_ENDPOINT'];

const sandbox = (id, more = {}) => ({ id, createdAt: OLD, ...more });
const make = (fake, options = {}) =>
  new RailwayProvider({ apiKey: TOKEN, apiUrl: fake.endpoint, environmentId: ENVIRONMENT, requestTimeoutMs: 10_000, ...options });
const run = (key) => ({ runId: `run-${key}`, threadId: 'thread-1', status: 'completed', startedAt: 1, sandboxKey: key });
/** The GraphQL calls the fake saw of root field `field` naming sandbox `id`. */
const calls = (fake, field, id) => fake.state().requests.filter((request) => request.field === field && request.variables.id === id).length;
const destroysOf = (fake, id) => calls(fake, 'sandboxDestroy', id);

async function storeWith(records) {
  const store = new InMemorySandboxInstanceStore({ ledger: true });
  for (const [key, id] of records) {
    await store.upsert({ key, provider: 'railway', providerSandboxId: id, threadId: 'thread-1', updatedAt: 1 });
  }
  return store;
}

/** A store whose registry names `ids`: each record written, then deleted. */
async function registered(ids) {
  const store = await storeWith(ids.map((id) => [`k-${id}`, id]));
  for (const id of ids) await store.delete(`k-${id}`);
  return store;
}

async function withFake(body) {
  const saved = Object.fromEntries(VARIABLES.map((name) => [name, process.env[name]]));
  for (const name of VARIABLES) delete process.env[name];
  const fake = await startFakeRailway({ token: TOKEN, projectToken: PROJECT_TOKEN, environmentId: ENVIRONMENT });
  try {
    await body(fake);
  } finally {
    await fake.close();
    for (const [name, value] of Object.entries(saved)) if (value !== undefined) process.env[name] = value;
  }
}

test('railway: bad options are TypeErrors naming the field, the environment is required, before any request', async () => {
  await withFake(async (fake) => {
    assert.throws(() => make(fake, { apiKey: 5 }), { name: 'TypeError', message: /options\.apiKey/ });
    assert.throws(() => make(fake, { apiKey: '' }), { name: 'TypeError', message: /RAILWAY_TOKEN or RAILWAY_API_TOKEN/ });
    assert.throws(() => make(fake, { apiUrl: 'nope' }), { name: 'TypeError', message: /apiUrl/ });
    assert.throws(() => make(fake, { environmentId: 5 }), { name: 'TypeError', message: /options\.environmentId/ });
    assert.throws(() => make(fake, { environmentId: undefined }), { name: 'TypeError', message: /environmentId.*RAILWAY_ENVIRONMENT_ID/ });
    assert.throws(() => make(fake, { pageSize: 101 }), { name: 'TypeError', message: /pageSize/ });
    assert.deepEqual(fake.state().requests, [], 'nothing was sent');
    // The environment from its variable when no option gives it.
    process.env.RAILWAY_ENVIRONMENT_ID = ENVIRONMENT;
    const provider = make(fake, { environmentId: undefined });
    assert.equal(provider.name, 'railway');
    assert.equal(provider.apiUrl, fake.endpoint);
    assert.ok(!JSON.stringify(provider).includes(TOKEN));
    await provider.checkAccess();
    const checks = fake.state().requests;
    assert.equal(checks.length, 1);
    assert.deepEqual([checks[0].operation, checks[0].auth, checks[0].variables.environmentId], ['RailwaySandboxes', 'bearer', ENVIRONMENT]);
  });
});

test('railway: a reclaim destroys the sandbox; a failed destroy is destroy-failed and reaches the ledger without the token', async () => {
  await withFake(async (fake) => {
    fake.seed([sandbox('sb0'), sandbox('sb1')]);
    const provider = make(fake);
    const store = await storeWith([['k0', 'sb0'], ['k1', 'sb1']]);
    assert.equal(await reclaimSandbox(run('k0'), { provider, instances: store }), 'destroyed');
    assert.equal(fake.state().statuses.sb0, 'DESTROYED');
    assert.equal(destroysOf(fake, 'sb0'), 1);
    fake.setFaults({ failDestroyEvery: 1 });
    assert.equal(await reclaimSandbox(run('k1'), { provider, instances: store }), 'destroy-failed');
    assert.deepEqual(fake.state().alive, ['sb1']);
    const leaks = await listLeaks(store);
    assert.deepEqual(leaks.map((leak) => leak.providerSandboxId), ['sb1']);
    assert.match(leaks[0].lastError, /Problem processing request/);
    assert.ok(!JSON.stringify(leaks).includes(TOKEN));
  });
});

test('railway: a throttled destroy waits its Retry-After', async () => {
  await withFake(async (fake) => {
    fake.seed([sandbox('sb0')]);
    fake.setFaults({ rateLimitDestroys: 1, retryAfterSeconds: 0.3 });
    const started = Date.now();
    await make(fake).destroy({ id: 'sb0' });
    assert.ok(Date.now() - started >= 300, `${Date.now() - started} ms`);
    assert.deepEqual(fake.state().alive, []);
    assert.equal(destroysOf(fake, 'sb0'), 2, 'the throttled one, then the one that went');
  });
});

test('railway: the destroy deadline cuts the call itself, and the sandbox reaches the ledger', async () => {
  await withFake(async (fake) => {
    fake.seed([sandbox('sb0')]);
    fake.setFaults({ hangDestroys: true });
    const store = await storeWith([['k0', 'sb0']]);
    const started = Date.now();
    assert.equal(await reclaimSandbox(run('k0'), { provider: make(fake), instances: store, destroyTimeoutMs: 200 }), 'destroy-failed');
    assert.ok(Date.now() - started < 5_000);
    for (let tries = 0; fake.state().abandoned === 0 && tries < 100; tries += 1) await new Promise((r) => setTimeout(r, 10));
    assert.equal(fake.state().abandoned, 1);
    assert.deepEqual((await listLeaks(store)).map((leak) => leak.providerSandboxId), ['sb0']);
    assert.deepEqual(fake.state().alive, ['sb0']);
  });
});

test('railway: a wrong token, or an environment it cannot see, rejects naming the variables, never the token', async () => {
  await withFake(async (fake) => {
    fake.seed([sandbox('sb0')]);
    const wrong = make(fake, { apiKey: 'railway_wrong_secret_value' });
    const elsewhere = make(fake, { environmentId: 'env-unknown' });
    // The apiKey option is an account token: a project token there is refused too.
    const misplaced = make(fake, { apiKey: PROJECT_TOKEN });
    for (const provider of [wrong, elsewhere, misplaced]) {
      for (const call of [() => provider.checkAccess(), () => provider.list(), () => provider.destroy({ id: 'sb0' })]) {
        await assert.rejects(call(), (error) =>
          ['RAILWAY_TOKEN', 'RAILWAY_API_TOKEN', 'RAILWAY_ENVIRONMENT_ID'].every((name) => error.message.includes(name))
          && !error.message.includes('railway_wrong_secret_value') && !error.message.includes(TOKEN) && !error.message.includes(PROJECT_TOKEN));
      }
    }
    assert.deepEqual(fake.state().alive, ['sb0']);
    assert.deepEqual(fake.state().destroys, []);
  });
});

test('railway: reconcile with sweepUnlabelled destroys what the registry names once, repeated or lagging, and spares the rest', async () => {
  await withFake(async (fake) => {
    const ours = Array.from({ length: 6 }, (_, i) => `sb${i}`);
    fake.seed([...ours.map((id) => sandbox(id)), sandbox('stranger-1'), sandbox('referenced-1')]);
    fake.setFaults({ repeatAcrossPages: true, destroyingMs: 60_000 });
    const provider = make(fake, { sweepUnlabelled: true, pageSize: 2 });
    assert.equal(provider.lookup, undefined, 'the listing already takes every sandbox');
    const store = await registered(ours);
    await store.upsert({ key: 'k-live', provider: 'railway', providerSandboxId: 'referenced-1', threadId: 'thread-1', updatedAt: Date.now() });
    const report = await reconcile({ providers: [provider], instances: store, orphanGraceMs: 60_000 });
    const orphans = report.providers[0].orphans;
    assert.equal(orphans.status, 'swept');
    assert.deepEqual([orphans.listed, orphans.found, orphans.destroyed, orphans.foreign, orphans.referenced], [8, 6, 6, 1, 1]);
    assert.deepEqual(fake.state().alive, ['referenced-1', 'stranger-1']);
    for (const id of ours) assert.equal(destroysOf(fake, id), 1, `${id}: once`);
    // Destroyed, still listed DESTROYING a minute: reported deleting, never destroyed again.
    const again = await reconcile({ providers: [provider], instances: store, orphanGraceMs: 60_000 });
    const second = again.providers[0].orphans;
    assert.deepEqual([second.status, second.deleting, second.found, second.failed], ['swept', 6, 0, 0]);
    for (const id of ours) assert.equal(destroysOf(fake, id), 1, `${id}: still once`);
    assert.equal(destroysOf(fake, 'stranger-1') + calls(fake, 'sandbox', 'stranger-1'), 0, 'the stranger never touched');
  });
});

test('railway: a malformed page makes the sweep unavailable and destroys nothing', async () => {
  await withFake(async (fake) => {
    const ids = Array.from({ length: 5 }, (_, i) => `sb${i}`);
    fake.seed(ids.map((id) => sandbox(id)));
    fake.setFaults({ malformedPage: 2 });
    const provider = make(fake, { sweepUnlabelled: true, pageSize: 2 });
    const report = await reconcile({ providers: [provider], instances: await registered(ids), orphanGraceMs: 60_000 });
    const orphans = report.providers[0].orphans;
    assert.equal(orphans.status, 'unavailable');
    assert.equal(orphans.destroyed, 0);
    assert.match(orphans.error, /POST sandboxes/);
    assert.match(orphans.error, /vouch for/);
    assert.equal(fake.state().alive.length, 5);
    assert.deepEqual(fake.state().destroys, []);
  });
});

test('railway: a registered sandbox whose record is gone is found by get; an unregistered one is never touched', async () => {
  await withFake(async (fake) => {
    fake.seed([sandbox('reg-1'), sandbox('stranger-1')]);
    const provider = make(fake);
    assert.equal(typeof provider.lookup, 'function');
    const report = await reconcile({ providers: [provider], instances: await registered(['reg-1']), orphanGraceMs: 60_000 });
    const orphans = report.providers[0].orphans;
    assert.equal(orphans.status, 'swept');
    assert.equal(orphans.destroyed, 1);
    assert.deepEqual(fake.state().alive, ['stranger-1']);
    assert.equal(calls(fake, 'sandbox', 'reg-1'), 1, 'looked up by id');
    assert.equal(destroysOf(fake, 'stranger-1') + calls(fake, 'sandbox', 'stranger-1'), 0, 'never the stranger');
  });
});
