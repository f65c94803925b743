// The E2B fake (tests/fakes/e2b.mjs) is only as good as its proof: E2B's
// official SDK (npm `e2b`, pinned in bindings-node's devDependencies) must
// accept it. Every call our E2bProvider makes is made here by the SDK itself,
// pointed at the fake by its own `apiUrl` option.

import test from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

import { startFakeE2b } from '../fakes/e2b.mjs';

const require = createRequire(new URL('../../bindings-node/package.json', import.meta.url));
const { Sandbox, AuthenticationError, SandboxNotFoundError } = require('e2b');

const OWNER = 'io.sandbox-reclaim.owner';

async function withFake(body) {
  const fake = await startFakeE2b();
  try {
    await body(fake, { apiKey: fake.key, apiUrl: fake.url, requestTimeoutMs: 5_000 });
  } finally {
    await fake.close();
  }
}

function seedFleet(fake, count, owner) {
  fake.seed(
    Array.from({ length: count }, (_, index) => ({
      sandboxID: `sbx${String(index).padStart(3, '0')}`,
      startedAt: new Date(Date.UTC(2026, 0, 1, 0, 0, index)).toISOString(),
      metadata: index % 3 === 0 ? { team: 'other' } : { [OWNER]: owner, 'io.sandbox-reclaim.key': `key ${index}` },
      state: index % 2 === 0 ? 'running' : 'paused',
    })),
  );
}

test('the SDK is refused with a wrong key, as E2B refuses it', async () => {
  await withFake(async (fake, options) => {
    const paginator = Sandbox.list({ ...options, apiKey: 'e2b_wrong' });
    await assert.rejects(paginator.nextItems(), (error) => error instanceof AuthenticationError && /401|Invalid API key/.test(error.message));
    await assert.rejects(Sandbox.kill('sbx000', { ...options, apiKey: 'e2b_wrong' }), AuthenticationError);
  });
});

test('the SDK lists every page of a metadata filter, with the states it asks for', async () => {
  await withFake(async (fake, options) => {
    seedFleet(fake, 25, 'team a&b/ü');
    const paginator = Sandbox.list({ ...options, limit: 4, query: { metadata: { [OWNER]: 'team a&b/ü' }, state: ['running', 'paused'] } });
    const seen = [];
    let pages = 0;
    while (paginator.hasNext) {
      const items = await paginator.nextItems();
      pages += 1;
      assert.ok(items.length <= 4);
      seen.push(...items);
    }
    const expected = Array.from({ length: 25 }, (_, i) => i).filter((i) => i % 3 !== 0);
    assert.deepEqual(seen.map((s) => s.sandboxId), expected.map((i) => `sbx${String(i).padStart(3, '0')}`));
    assert.equal(pages, Math.ceil(expected.length / 4));
    assert.ok(seen.every((s) => s.metadata[OWNER] === 'team a&b/ü' && s.startedAt instanceof Date && !Number.isNaN(s.startedAt.getTime())));
    assert.deepEqual(new Set(seen.map((s) => s.state)), new Set(['running', 'paused']));

    const running = Sandbox.list({ ...options, query: { metadata: { [OWNER]: 'team a&b/ü' }, state: ['running'] } });
    assert.ok((await running.nextItems()).every((s) => s.state === 'running'));
  });
});

test('the SDK gets a sandbox, kills it, and reads a second kill and a get as not found', async () => {
  await withFake(async (fake, options) => {
    seedFleet(fake, 2, 'me');
    const info = await Sandbox.getInfo('sbx001', options);
    assert.equal(info.sandboxId, 'sbx001');
    assert.equal(info.metadata[OWNER], 'me');
    assert.equal(await Sandbox.kill('sbx001', options), true);
    assert.equal(await Sandbox.kill('sbx001', options), false, 'a 404 kill is "not found" to the SDK');
    await assert.rejects(Sandbox.getInfo('sbx001', options), SandboxNotFoundError);
    assert.deepEqual(fake.state().alive, ['sbx000']);
    assert.deepEqual(fake.state().deleted, ['sbx001']);
  });
});

test('the SDK reads the fake\'s server error and rate-limit answers as E2B\'s', async () => {
  await withFake(async (fake, options) => {
    seedFleet(fake, 2, 'me');
    fake.setFaults({ failDeleteEvery: 1 });
    await assert.rejects(Sandbox.kill('sbx001', options), /500: internal server error/);
    fake.setFaults({ failDeleteEvery: 0, rateLimitDeletes: 1, retryAfterSeconds: 0 });
    // The SDK retries a 429 itself (its rate-limit wrapper) and then succeeds.
    assert.equal(await Sandbox.kill('sbx001', options), true);
    assert.deepEqual(fake.state().alive, ['sbx000']);
  });
});
