// The Daytona fake (tests/fakes/daytona.mjs) is only as good as its proof:
// Daytona's official SDK (npm `@daytonaio/sdk`, pinned in bindings-node's
// devDependencies) must accept it. Every call our Daytona provider makes is
// made here by the SDK itself, pointed at the fake by its own `apiUrl` option.

import test from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

import { startFakeDaytona } from '../fakes/daytona.mjs';

const require = createRequire(new URL('../../bindings-node/package.json', import.meta.url));
const {
  Daytona,
  SandboxState,
  DaytonaAuthenticationError,
  DaytonaNotFoundError,
  DaytonaConflictError,
  DaytonaRateLimitError,
  DaytonaInternalServerError,
  DaytonaBadRequestError,
  DaytonaConnectionTimeoutError,
} = require('@daytonaio/sdk');

const OWNER = 'io.sandbox-reclaim.owner';
const AWKWARD = 'team a&b/ü ☃ "x"';

async function withFake(body) {
  const fake = await startFakeDaytona();
  try {
    // `useDeprecatedPolling` keeps the SDK off its event socket, which the fake does not serve.
    const client = (more = {}) => new Daytona({ apiKey: fake.key, apiUrl: fake.url, requestTimeoutMs: 5_000, useDeprecatedPolling: true, ...more });
    await body(fake, client);
  } finally {
    await fake.close();
  }
}

const idOf = (index) => `sbx${String(index).padStart(3, '0')}`;

function seedFleet(fake, count, owner) {
  fake.seed(
    Array.from({ length: count }, (_, index) => ({
      id: idOf(index),
      createdAt: new Date(Date.UTC(2026, 0, 1, 0, 0, index)).toISOString(),
      labels: index % 3 === 0 ? { team: 'other' } : { [OWNER]: owner, 'io.sandbox-reclaim.key': `key ${index}` },
      state: index % 2 === 0 ? 'started' : 'stopped',
    })),
  );
}

async function collect(iterator) {
  const seen = [];
  for await (const sandbox of iterator) seen.push(sandbox);
  return seen;
}

const listRequests = (fake) => fake.state().requests.filter((r) => r.method === 'GET' && r.path === '/api/sandbox');

test('the SDK is refused with a wrong key, as Daytona refuses it', async () => {
  await withFake(async (fake, client) => {
    seedFleet(fake, 2, 'me');
    const wrong = client({ apiKey: 'dtn_wrong' });
    await assert.rejects(wrong.list().next(), (error) => error instanceof DaytonaAuthenticationError && error.statusCode === 401 && error.message === 'Invalid credentials');
    await assert.rejects(wrong.get('sbx001'), DaytonaAuthenticationError);
    assert.deepEqual(fake.state().alive, ['sbx000', 'sbx001']);
  });
});

test('the SDK lists every page of a labels filter, newest activity first', async () => {
  await withFake(async (fake, client) => {
    seedFleet(fake, 25, AWKWARD);
    fake.seed([
      { id: 'gone', state: 'destroyed', labels: { [OWNER]: AWKWARD } },
      { id: 'failed-deleted', state: 'error', desiredState: 'destroyed', labels: { [OWNER]: AWKWARD } },
      { id: 'failed', state: 'error', labels: { [OWNER]: AWKWARD }, createdAt: '2025-01-01T00:00:00.000Z' },
    ]);
    const seen = await collect(client().list({ labels: { [OWNER]: AWKWARD }, limit: 4 }));
    const expected = Array.from({ length: 25 }, (_, i) => i).filter((i) => i % 3 !== 0).reverse().map(idOf);
    assert.deepEqual(seen.map((s) => s.id), [...expected, 'failed']);
    const pages = listRequests(fake);
    assert.equal(pages.length, Math.ceil(seen.length / 4));
    assert.ok(pages.every((r) => new URLSearchParams(r.query).get('limit') === '4'));
    assert.ok(seen.every((s) => s.labels[OWNER] === AWKWARD && !Number.isNaN(Date.parse(s.createdAt))));
    assert.deepEqual(new Set(seen.map((s) => s.state)), new Set(['started', 'stopped', 'error']));
    await assert.rejects(client().get('gone'), DaytonaNotFoundError, 'a destroyed sandbox is not found');
    await assert.rejects(client().get('failed-deleted'), DaytonaNotFoundError, 'nor is a failed one marked for destruction');

    const started = await collect(client().list({ labels: { [OWNER]: AWKWARD }, states: [SandboxState.STARTED] }));
    assert.ok(started.length > 0 && started.every((s) => s.state === 'started'));
    await assert.rejects(client().list({ limit: 201 }).next(), (error) => error instanceof DaytonaBadRequestError && /not be greater than 200/.test(error.message));
  });
});

test('deleting while listing skips nothing (the cursor is a key, not an offset)', async () => {
  await withFake(async (fake, client) => {
    seedFleet(fake, 20, 'me');
    const daytona = client();
    const seen = [];
    for await (const sandbox of daytona.list({ labels: { [OWNER]: 'me' }, limit: 3 })) {
      seen.push(sandbox.id);
      await daytona.delete(sandbox);
    }
    const owned = Array.from({ length: 20 }, (_, i) => i).filter((i) => i % 3 !== 0).map(idOf);
    assert.deepEqual([...seen].sort(), owned);
    assert.deepEqual(fake.state().deleted, owned);
  });
});

test('the SDK gets a sandbox, deletes it, and reads a second delete and a get as not found', async () => {
  await withFake(async (fake, client) => {
    seedFleet(fake, 2, 'me');
    const daytona = client();
    const sandbox = await daytona.get('sbx001');
    assert.equal(sandbox.id, 'sbx001');
    assert.equal(sandbox.labels[OWNER], 'me');
    assert.equal(sandbox.state, 'stopped');
    await daytona.delete(sandbox);
    assert.equal(sandbox.desiredState, 'destroyed', 'the DELETE answer is the sandbox, marked for destruction');
    assert.equal(sandbox.state, 'destroying');
    await assert.rejects(daytona.delete(sandbox), (error) => error instanceof DaytonaNotFoundError && error.statusCode === 404 && error.message === 'Sandbox with ID or name sbx001 not found');
    await assert.rejects(daytona.get('sbx001'), DaytonaNotFoundError);
    assert.deepEqual(fake.state().alive, ['sbx000']);
    assert.deepEqual(fake.state().deleted, ['sbx001']);
  });
});

test('a deleted sandbox stays listed as destroying for a while, and a second delete then conflicts', async () => {
  await withFake(async (fake, client) => {
    seedFleet(fake, 3, 'me');
    fake.setFaults({ deletedStayListedMs: 1_500 });
    const daytona = client();
    await daytona.delete(await daytona.get('sbx001'));
    const listed = await collect(daytona.list({ labels: { [OWNER]: 'me' } }));
    const lagging = listed.find((s) => s.id === 'sbx001');
    assert.equal(lagging?.state, 'destroying');
    assert.equal(lagging.desiredState, 'destroyed');
    assert.match(lagging.name, /^DESTROYED_sbx001_\d+$/);
    assert.equal((await daytona.get('sbx001')).state, 'destroying');
    await assert.rejects(daytona.delete(lagging), (error) => error instanceof DaytonaConflictError && error.statusCode === 409);
    // The SDK's own wait for `destroyed` ends when the get turns into a 404.
    await daytona.delete(await daytona.get('sbx002'), 10, true);
    await assert.rejects(daytona.get('sbx002'), DaytonaNotFoundError);
  });
});

test('the SDK reads the fake\'s server error, rate-limit and hang answers as Daytona\'s', async () => {
  await withFake(async (fake, client) => {
    seedFleet(fake, 2, 'me');
    const daytona = client();
    const sandbox = await daytona.get('sbx001');
    fake.setFaults({ failDeleteEvery: 1 });
    await assert.rejects(daytona.delete(sandbox), (error) => error instanceof DaytonaInternalServerError && error.message === 'An unexpected error occurred.');
    fake.setFaults({ failDeleteEvery: 0, rateLimitDeletes: 1, retryAfterSeconds: 7 });
    await assert.rejects(daytona.delete(sandbox), (error) => error instanceof DaytonaRateLimitError && error.statusCode === 429 && error.headers['retry-after-sandbox-lifecycle'] === '7');
    assert.deepEqual(fake.state().alive, ['sbx000', 'sbx001'], 'the SDK does not retry a 429 itself');
    await daytona.delete(sandbox);
    assert.deepEqual(fake.state().alive, ['sbx000']);

    fake.setFaults({ hangLists: true });
    await assert.rejects(client({ requestTimeoutMs: 300 }).list().next(), DaytonaConnectionTimeoutError);
  });
});
