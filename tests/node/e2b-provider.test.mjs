// E2bProvider through the Node binding, against the E2B fake (proven by E2B's
// official SDK in e2b-fake.test.mjs): a reclaim kills for good, a failed kill
// is `destroy-failed` (TanStack's provider would swallow it), the deadline
// aborts a hanging request, and reconcile sweeps every page once.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import * as binding from '../../bindings-node/index.mjs';
import { startFakeE2b } from '../fakes/e2b.mjs';

const { E2bProvider, InMemorySandboxInstanceStore, reclaimSandbox, reconcile, ownerLabels, listLeaks } = binding;

const OWNER_LABEL = 'io.sandbox-reclaim.owner';
const run = (key) => ({ runId: `run-${key}`, threadId: 'thread-1', status: 'completed', startedAt: 1, sandboxKey: key });

async function withFake(body) {
  const fake = await startFakeE2b();
  try {
    await body(fake, (options = {}) => new E2bProvider({ apiKey: fake.key, apiUrl: fake.url, ...options }));
  } finally {
    await fake.close();
  }
}

const seed = (fake, prefix, count, metadata) =>
  fake.seed(Array.from({ length: count }, (_, i) => ({ sandboxID: `${prefix}${i}`, startedAt: '2026-01-01T00:00:00Z', metadata })));

async function storeWith(records) {
  const store = new InMemorySandboxInstanceStore({ ledger: true });
  for (const [key, id] of records) {
    await store.upsert({ key, provider: 'e2b', providerSandboxId: id, threadId: 'thread-1', updatedAt: 1 });
  }
  return store;
}

test('E2bProvider refuses bad options with a TypeError naming the field, and never shows its key', () => {
  const saved = process.env.E2B_API_KEY;
  delete process.env.E2B_API_KEY;
  try {
    assert.throws(() => new E2bProvider(), { name: 'TypeError', message: /E2B_API_KEY/ });
    assert.throws(() => new E2bProvider({ apiKey: 5 }), { name: 'TypeError', message: /options\.apiKey/ });
    assert.throws(() => new E2bProvider({ apiKey: 'k', apiUrl: 'ftp://x' }), { name: 'TypeError', message: /apiUrl/ });
    assert.throws(() => new E2bProvider({ apiKey: 'k', pageSize: 0 }), { name: 'TypeError', message: /pageSize/ });
    assert.throws(() => new E2bProvider({ apiKey: 'k', pageSize: 101 }), { name: 'TypeError', message: /pageSize/ });
    assert.throws(() => new E2bProvider({ apiKey: 'k', name: '' }), { name: 'TypeError', message: /name/ });
    // The core's ranges and texts: E2B's largest page, a request timeout of at most a day.
    assert.throws(() => new E2bProvider({ apiKey: 'k', pageSize: 101 }), {
      name: 'TypeError',
      message: 'options.pageSize must be a whole number between 1 and 100',
    });
    assert.throws(() => new E2bProvider({ apiKey: 'k', requestTimeoutMs: 86_400_001 }), {
      name: 'TypeError',
      message: 'options.requestTimeoutMs must be a whole number between 1 and 86400000',
    });
    assert.throws(() => new E2bProvider({ apiKey: 'k', sweepUnlabelled: 'yes' }), {
      name: 'TypeError',
      message: 'options.sweepUnlabelled must be a boolean',
    });
    assert.throws(() => new E2bProvider({ apiKey: 'k\uD800' }), { name: 'TypeError', message: /options\.apiKey must not contain a lone UTF-16 surrogate/ });
  } finally {
    if (saved !== undefined) process.env.E2B_API_KEY = saved;
  }
  const provider = new E2bProvider({ apiKey: 'e2b_very_secret', apiUrl: 'http://127.0.0.1:9' });
  assert.equal(provider.name, 'e2b');
  assert.equal(provider.owner, 'sandbox-reclaim');
  assert.equal(provider.apiUrl, 'http://127.0.0.1:9');
  assert.ok(!JSON.stringify(provider).includes('e2b_very_secret'));
  assert.deepEqual(ownerLabels('team-a', 'thread-1:sandbox'), { [OWNER_LABEL]: 'team-a', 'io.sandbox-reclaim.key': 'thread-1:sandbox' });
  assert.equal(ownerLabels(undefined, 'k')[OWNER_LABEL], 'sandbox-reclaim');
  assert.throws(() => ownerLabels('team-a', ''), { name: 'TypeError', message: /key/ });
});

test('a reclaim kills the sandbox for good; a failed kill is destroy-failed and reaches the ledger', async () => {
  await withFake(async (fake, make) => {
    seed(fake, 'sbx', 2, { [OWNER_LABEL]: 'sandbox-reclaim' });
    const provider = make();
    const store = await storeWith([['k0', 'sbx0'], ['k1', 'sbx1']]);
    assert.equal(await reclaimSandbox(run('k0'), { provider, instances: store }), 'destroyed');
    assert.deepEqual(fake.state().alive, ['sbx1']);

    fake.setFaults({ failDeleteEvery: 1 });
    assert.equal(await reclaimSandbox(run('k1'), { provider, instances: store }), 'destroy-failed');
    assert.deepEqual(fake.state().alive, ['sbx1'], 'still running, and reported so');
    const leaks = await listLeaks(store);
    assert.deepEqual(leaks.map((leak) => leak.providerSandboxId), ['sbx1']);
    assert.match(leaks[0].lastError, /HTTP 500/);
  });
});

test('the destroy deadline aborts a hanging kill: the request itself is dropped', async () => {
  await withFake(async (fake, make) => {
    seed(fake, 'sbx', 1, {});
    fake.setFaults({ hangDeletes: true });
    const store = await storeWith([['k0', 'sbx0']]);
    const started = Date.now();
    const outcome = await reclaimSandbox(run('k0'), { provider: make(), instances: store, destroyTimeoutMs: 200 });
    assert.equal(outcome, 'destroy-failed');
    assert.ok(Date.now() - started < 5_000);
    for (let tries = 0; fake.state().abandoned === 0 && tries < 100; tries += 1) await new Promise((r) => setTimeout(r, 10));
    assert.equal(fake.state().abandoned, 1, 'the HTTP request was cancelled, not left running');
  });
});

test('a wrong key rejects naming E2B_API_KEY, never the key', async () => {
  await withFake(async (fake, make) => {
    const provider = make({ apiKey: 'e2b_wrong_secret' });
    for (const call of [() => provider.checkAccess(), () => provider.list(), () => provider.destroy({ id: 'sbx0' })]) {
      await assert.rejects(call(), (error) => /E2B_API_KEY/.test(error.message) && !error.message.includes('e2b_wrong_secret'));
    }
  });
});

test('reconcile sweeps every page of the owner once, spares strangers, and a malformed page sweeps nothing', async () => {
  await withFake(async (fake, make) => {
    seed(fake, 'ours', 9, { [OWNER_LABEL]: 'sandbox-reclaim' });
    seed(fake, 'theirs', 2, { [OWNER_LABEL]: 'someone-else' });
    seed(fake, 'bare', 2, {});
    fake.setFaults({ repeatAcrossPages: true, malformedPage: 2 });
    const provider = make({ pageSize: 4 });
    const store = await storeWith([]);
    const refused = await reconcile({ providers: [provider], instances: store, orphanGraceMs: 60_000 });
    assert.equal(refused.providers[0].orphans.status, 'unavailable');
    assert.equal(refused.stillLeaking, true);
    assert.equal(fake.state().alive.length, 13);

    fake.setFaults({ malformedPage: 0 });
    const report = await reconcile({ providers: [provider], instances: store, orphanGraceMs: 60_000 });
    const orphans = report.providers[0].orphans;
    assert.equal(orphans.status, 'swept');
    assert.deepEqual([orphans.listed, orphans.found, orphans.destroyed], [9, 9, 9]);
    assert.deepEqual(fake.state().alive, ['bare0', 'bare1', 'theirs0', 'theirs1']);
    const deletes = fake.state().requests.filter((r) => r.method === 'DELETE');
    assert.equal(deletes.length, 9, 'each sandbox destroyed once');
  });
});

test('maxListingPages and maxListingItems bound a listing: past either the sweep fails closed, naming the ceiling', async () => {
  await withFake(async (fake, make) => {
    seed(fake, 'ours', 5, { [OWNER_LABEL]: 'sandbox-reclaim' });
    const store = await storeWith([]);
    for (const [options, ceiling] of [[{ pageSize: 2, maxListingPages: 2 }, /ceiling of 2 pages per listing/], [{ pageSize: 2, maxListingItems: 3 }, /ceiling of 3 sandboxes per listing/]]) {
      const report = await reconcile({ providers: [make(options)], instances: store, orphanGraceMs: 60_000 });
      const { orphans } = report.providers[0];
      assert.equal(orphans.status, 'unavailable');
      assert.match(orphans.error, ceiling);
      assert.equal(fake.state().alive.length, 5, 'nothing swept');
    }
    const report = await reconcile({ providers: [make({ pageSize: 2, maxListingPages: 3, maxListingItems: 5 })], instances: store, orphanGraceMs: 60_000 });
    assert.equal(report.providers[0].orphans.destroyed, 5, 'at the ceilings, every page is read and swept');
    assert.throws(() => make({ maxListingPages: 0 }), { name: 'TypeError', message: /^options\.maxListingPages must be a whole number between 1 and 1000000$/ });
    assert.throws(() => make({ maxListingItems: 100_000_001 }), { name: 'TypeError', message: /options\.maxListingItems/ });
  });
});
