// The Vercel fake (tests/fakes/vercel.mjs) is only as good as its proof:
// Vercel's official SDK (npm `@vercel/sandbox`, pinned in bindings-node's
// devDependencies) must accept it. Every call a Vercel provider makes is made
// here by the SDK itself, pointed at the fake by its own `fetch` option (the
// SDK has no base-URL option: its client always calls https://vercel.com/api).

import test from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

import { startFakeVercel, STATUSES } from '../fakes/vercel.mjs';

const require = createRequire(new URL('../../bindings-node/package.json', import.meta.url));
const { Sandbox, APIError } = require('@vercel/sandbox');

const OWNER = 'io.sandbox-reclaim.owner';

async function withFake(body) {
  const fake = await startFakeVercel();
  // Send what the SDK addresses to Vercel to the fake instead, path and query untouched.
  const fetch = (address, init) => {
    const url = new URL(address);
    assert.equal(url.origin, 'https://vercel.com', 'the SDK calls Vercel at https://vercel.com/api');
    return globalThis.fetch(`${fake.url}${url.pathname}${url.search}`, init);
  };
  try {
    await body(fake, { token: fake.token, teamId: fake.teamId, projectId: fake.projectId, fetch });
  } finally {
    await fake.close();
  }
}

const nameOf = (index) => `sbx${String(index).padStart(3, '0')}`;

function seedFleet(fake, count, owner) {
  fake.seed(
    Array.from({ length: count }, (_, index) => ({
      name: nameOf(index),
      createdAt: Date.UTC(2026, 0, 1, 0, 0, index),
      tags: index % 3 === 0 ? { team: 'other' } : { [OWNER]: owner, 'io.sandbox-reclaim.key': `key-${index}` },
      status: STATUSES[index % STATUSES.length],
    })),
  );
}

const apiError = (status, code) => (error) =>
  error instanceof APIError && error.response.status === status && (code === undefined || error.json?.error?.code === code);

const deletes = (fake) => fake.state().requests.filter((r) => r.method === 'DELETE').length;

test('the SDK is refused with a wrong token or team, as Vercel refuses it', async () => {
  await withFake(async (fake, options) => {
    seedFleet(fake, 2, 'me');
    await assert.rejects(Sandbox.list({ ...options, token: 'vercel_wrong' }), (error) =>
      apiError(403, 'forbidden')(error) && error.json.error.invalidToken === true && /Status code 403 is not ok: Not authorized/.test(error.message));
    await assert.rejects(Sandbox.get({ ...options, token: 'vercel_wrong', name: 'sbx001' }), apiError(403, 'forbidden'));
    await assert.rejects(Sandbox.list({ ...options, teamId: 'team_other' }), apiError(403, 'forbidden'));
    assert.equal(fake.state().requests.length, 3, 'a 403 is final to the SDK: it does not retry it');
    assert.ok(fake.state().requests.every((r) => r.path.startsWith('/api/v2/sandboxes')));
  });
});

test('the SDK lists every page of a tag filter, newest first, in every status', async () => {
  await withFake(async (fake, options) => {
    seedFleet(fake, 25, 'team a&b/ü');
    const listing = await Sandbox.list({ ...options, limit: 4, tags: { [OWNER]: 'team a&b/ü' } });
    const seen = [];
    let pages = 0;
    let last;
    for await (const page of listing.pages()) {
      pages += 1;
      assert.ok(page.sandboxes.length <= 4);
      assert.equal(page.pagination.count, page.sandboxes.length);
      seen.push(...page.sandboxes);
      last = page;
    }
    assert.equal(last.pagination.next, null);
    const owned = Array.from({ length: 25 }, (_, i) => i).filter((i) => i % 3 !== 0);
    assert.deepEqual(seen.map((s) => s.name), owned.reverse().map(nameOf));
    assert.equal(pages, Math.ceil(owned.length / 4));
    assert.ok(seen.every((s) => s.tags[OWNER] === 'team a&b/ü' && s.createdAt === Date.UTC(2026, 0, 1, 0, 0, Number(s.name.slice(3)))));
    assert.deepEqual(new Set(seen.map((s) => s.status)), new Set(STATUSES));

    const lists = fake.state().requests.filter((r) => r.method === 'GET');
    assert.equal(lists.length, pages);
    for (const { query } of lists) {
      const params = new URLSearchParams(query);
      assert.equal(params.get('project'), fake.projectId);
      assert.equal(params.get('tags'), `${OWNER}:team a&b/ü`);
    }

    const oldestFirst = await Sandbox.list({ ...options, limit: 50, sortOrder: 'asc' });
    assert.deepEqual(oldestFirst.sandboxes.map((s) => s.name), Array.from({ length: 25 }, (_, i) => nameOf(i)));
    assert.equal(oldestFirst.pagination.next, null);
    await assert.rejects(Sandbox.list({ ...options, limit: 51 }), apiError(400, 'bad_request'));
  });
});

test('the SDK gets a sandbox, stops it (it stays), deletes it (it goes), and reads what follows as not found', async () => {
  await withFake(async (fake, options) => {
    seedFleet(fake, 3, 'me');
    const box = await Sandbox.get({ ...options, name: 'sbx001' });
    assert.equal(box.name, 'sbx001');
    assert.equal(box.status, 'running');
    assert.equal(box.tags[OWNER], 'me');
    assert.equal(box.createdAt.getTime(), Date.UTC(2026, 0, 1, 0, 0, 1));

    const stopped = await box.stop();
    assert.equal(stopped.status, 'stopped');
    assert.equal((await Sandbox.get({ ...options, name: 'sbx001' })).status, 'stopped');
    assert.ok((await Sandbox.list(options)).sandboxes.some((s) => s.name === 'sbx001' && s.status === 'stopped'));
    assert.deepEqual(fake.state().alive, ['sbx000', 'sbx001', 'sbx002'], 'stop is not delete');

    await box.delete();
    assert.deepEqual(fake.state().alive, ['sbx000', 'sbx002']);
    assert.deepEqual(fake.state().deleted, ['sbx001']);
    assert.ok(!(await Sandbox.list(options)).sandboxes.some((s) => s.name === 'sbx001'));
    await assert.rejects(box.delete(), (error) => apiError(404, 'not_found')(error) && /Sandbox not found: sbx001/.test(error.message));
    await assert.rejects(Sandbox.get({ ...options, name: 'sbx001' }), apiError(404, 'not_found'));
    await assert.rejects(Sandbox.get({ ...options, projectId: 'prj_other', name: 'sbx000' }), apiError(404));
  });
});

test('the SDK reads the fake\'s server error and rate-limit answers as Vercel\'s', async () => {
  await withFake(async (fake, options) => {
    seedFleet(fake, 2, 'me');
    const box = await Sandbox.get({ ...options, name: 'sbx001' });

    fake.setFaults({ failDeleteEvery: 1 });
    await assert.rejects(box.delete(), (error) => apiError(500, 'internal_server_error')(error) && /Status code 500 is not ok: An unexpected internal error/.test(error.message));
    assert.equal(deletes(fake), 3, 'the SDK retries a 5xx twice');

    // A Retry-After over 20 s makes the SDK give up at once, so it read the header.
    fake.setFaults({ failDeleteEvery: 0, rateLimitDeletes: 1, retryAfterSeconds: 30 });
    await assert.rejects(box.delete(), (error) => apiError(429, 'rate_limited')(error) && error.response.headers.get('retry-after') === '30');
    assert.equal(deletes(fake), 4);

    // A short one it waits out, then succeeds.
    fake.setFaults({ rateLimitDeletes: 1, retryAfterSeconds: 1 });
    const started = Date.now();
    await box.delete();
    assert.ok(Date.now() - started >= 1_000, 'the SDK waited the Retry-After');
    assert.equal(deletes(fake), 6);
    assert.deepEqual(fake.state().alive, ['sbx000']);
  });
});

test('the listing faults reach the SDK as a real fleet\'s would', async () => {
  await withFake(async (fake, options) => {
    seedFleet(fake, 6, 'me');
    fake.setFaults({ deletedStayListedMs: 60_000 });
    await (await Sandbox.get({ ...options, name: 'sbx001' })).delete();
    const lagging = (await Sandbox.list(options)).sandboxes.find((s) => s.name === 'sbx001');
    assert.equal(lagging?.status, 'stopped', 'a just-deleted sandbox may still be listed, no longer running');
    await assert.rejects(Sandbox.get({ ...options, name: 'sbx001' }), apiError(404));

    fake.setFaults({ deletedStayListedMs: 0, repeatAcrossPages: true });
    const repeated = await (await Sandbox.list({ ...options, limit: 2 })).toArray();
    assert.ok(repeated.length > new Set(repeated.map((s) => s.name)).size, 'pages overlap');

    fake.setFaults({ repeatAcrossPages: false, malformedPage: 2 });
    const listing = await Sandbox.list({ ...options, limit: 2 });
    await assert.rejects(listing.toArray(), /Response JSON is not valid/);

    fake.setFaults({ malformedPage: 0, hangLists: true });
    await assert.rejects(Sandbox.list({ ...options, signal: AbortSignal.timeout(300) }), (error) => error.name === 'TimeoutError');
  });
});
