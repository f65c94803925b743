// Bounded growth through the Node binding: the pass that takes a provider's
// sweep calls the store's `prune(provider, registryBefore, auditBefore)` once,
// with now − registryRetentionMs and now − auditRetentionMs (never within the
// orphan grace, whose destroys the sweep still counts); never a dry run,
// never a pass whose sweep another host holds. The native stores (in memory,
// SQLite, PostgreSQL) have it; on a user's store it is optional, and a failing
// one fails nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';

import * as binding from '../../bindings-node/index.mjs';
import { service, tempDir, uniqueSchema } from './services.mjs';
import { userStore } from './user-store.mjs';

const { reconcile, InMemorySandboxInstanceStore, SqliteSandboxInstanceStore, PostgresSandboxInstanceStore } = binding;

const scratch = tempDir('prune');
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));
const pg = service('SANDBOX_RECLAIM_PG_URL', 'pruning in PostgreSQL');

const DAY_MS = 86_400_000;
const row = (at, provider, providerSandboxId) => ({ at, host: 'host-b', provider, providerSandboxId, reason: 'orphan', result: 'destroyed' });
const emptyListing = (name) => ({ name, list: async () => [], destroy: async () => {} });

let files = 0;
const STORES = [
  ['in-memory', false, async () => new InMemorySandboxInstanceStore({ ledger: true })],
  ['SQLite', false, () => SqliteSandboxInstanceStore.open(join(scratch, `prune-${(files += 1)}.db`))],
  ['PostgreSQL', pg.skip, () => PostgresSandboxInstanceStore.connect(pg.value, { schema: uniqueSchema('node_prune'), maxConnections: 2 })],
];

for (const [kind, skip, open] of STORES) {
  test(`prune on the native ${kind} store: one provider's audit rows before the bound go`, { skip }, async () => {
    const store = await open();
    try {
      await store.appendAudit([row(100, 'js', 'a'), row(200, 'js', 'b'), row(100, 'other', 'c')]);
      await store.prune('js', 0, 200);
      const kept = (await store.listAudit({ since: 0, limit: 10 })).map((entry) => [entry.provider, entry.at]);
      assert.deepStrictEqual(kept, [['js', 200], ['other', 100]], 'the row at the bound and another provider\'s stay');
      await assert.rejects(store.prune(5, 0, 0), { name: 'TypeError', message: /^provider must be a string/ });
      for (const bad of [-1, 1.5, 2 ** 53, 'x']) {
        await assert.rejects(store.prune('js', bad, 0), { name: 'TypeError', message: /^registryBefore must be a whole number/ }, String(bad));
        await assert.rejects(store.prune('js', 0, bad), { name: 'TypeError', message: /^auditBefore must be a whole number/ }, String(bad));
      }
    } finally {
      await store.close?.();
    }
  });

  test(`reconcile with the native ${kind} store: the sweep's holder prunes audit rows past auditRetentionMs`, { skip }, async () => {
    const store = await open();
    try {
      const now = Date.now();
      await store.appendAudit([row(now - 2 * DAY_MS, 'js', 'old'), row(now - 60_000, 'js', 'recent'), row(now - 2 * DAY_MS, 'other', 'theirs')]);
      const dry = await reconcile({ provider: emptyListing('js'), instances: store, auditRetentionMs: DAY_MS, dryRun: true });
      assert.equal(dry.dryRun, true);
      assert.equal((await store.listAudit({ since: 0, limit: 10 })).length, 3, 'a dry run prunes nothing');
      await reconcile({ provider: emptyListing('js'), instances: store, auditRetentionMs: DAY_MS });
      const kept = (await store.listAudit({ since: 0, limit: 10 })).map((entry) => entry.providerSandboxId).sort();
      assert.deepStrictEqual(kept, ['recent', 'theirs']);
    } finally {
      await store.close?.();
    }
  });
}


test('a user store without prune still reconciles and is never asked to prune', async () => {
  const { store, calls } = userStore(new InMemorySandboxInstanceStore({ ledger: true }), []);
  const report = await reconcile({ provider: emptyListing('js'), instances: store });
  assert.equal(report.providers[0].orphans.status, 'swept');
  assert.ok(!calls.some((call) => call.method === 'prune'));
});

test('a user store with prune is asked once per sweep, after the sweep\'s reads, with now − 30 days and now − 90 days by default', async () => {
  const { store, calls } = userStore(new InMemorySandboxInstanceStore({ ledger: true }), ['prune']);
  const before = Date.now();
  await reconcile({ provider: emptyListing('js'), instances: store });
  const after = Date.now();
  const asked = calls.filter((call) => call.method === 'prune');
  assert.equal(asked.length, 1, 'asked once');
  const [provider, registryBefore, auditBefore] = asked[0].args;
  assert.equal(provider, 'js');
  assert.ok(registryBefore >= before - 30 * DAY_MS && registryBefore <= after - 30 * DAY_MS, `registryBefore ${registryBefore}`);
  assert.ok(auditBefore >= before - 90 * DAY_MS && auditBefore <= after - 90 * DAY_MS, `auditBefore ${auditBefore}`);
  const methods = calls.map((call) => call.method);
  assert.ok(methods.indexOf('sandboxReferences') < methods.indexOf('prune'), 'after the references are read');
  assert.ok(methods.indexOf('claimSweep') < methods.indexOf('prune'), 'by the sweep\'s holder');

  calls.length = 0;
  const start = Date.now();
  await reconcile({ provider: emptyListing('js'), instances: store, registryRetentionMs: 1000, auditRetentionMs: 0 });
  const [, shortRegistry, shortAudit] = calls.find((call) => call.method === 'prune').args;
  assert.ok(shortRegistry >= start - 1000 && shortRegistry <= Date.now() - 1000, `registryBefore ${shortRegistry}`);
  // Never past the orphan grace (600 000 ms by default), whatever auditRetentionMs says: the sweep still
  // counts an audit row of a destroy within it.
  assert.ok(shortAudit >= start - 600_000 && shortAudit <= Date.now() - 600_000, `auditBefore ${shortAudit}`);
});

test('a dry run, and a pass whose sweep another host holds, never prune', async () => {
  const native = new InMemorySandboxInstanceStore({ ledger: true });
  const { store, calls } = userStore(native, ['prune']);
  await reconcile({ provider: emptyListing('js'), instances: store, dryRun: true });
  assert.ok(!calls.some((call) => call.method === 'prune'), 'dry run');
  assert.equal(await native.claimSweep('js', 'host-b/1', 600_000, Date.now()), true);
  const report = await reconcile({ provider: emptyListing('js'), instances: store });
  assert.equal(report.providers[0].orphans.status, 'held-elsewhere');
  assert.ok(!calls.some((call) => call.method === 'prune'), 'held elsewhere');
});

test('a failing or synchronous prune fails nothing; prune that is not a function, and a bad auditRetentionMs, are TypeErrors before any call', async () => {
  const native = new InMemorySandboxInstanceStore({ ledger: true });
  for (const prune of [() => Promise.reject(new Error('disk full')), () => { throw new Error('sync failure'); }, () => undefined]) {
    // A fresh store each time: the audit log of a pass that destroyed o1 spares it for the next.
    const { store } = userStore(new InMemorySandboxInstanceStore({ ledger: true }), []);
    store.prune = prune;
    const orphan = { id: 'o1', createdAt: Date.now() - 3_600_000, owner: 'sandbox-reclaim' };
    const destroyed = [];
    const provider = { name: 'js', list: async () => [orphan], destroy: async ({ id }) => void destroyed.push(id) };
    const report = await reconcile({ provider, instances: store });
    assert.deepStrictEqual(destroyed, ['o1'], String(prune));
    assert.equal(report.counts.destroyed, 1);
  }
  const cases = [[{ prune: 5 }, {}, /options\.instances\.prune/], [{ prune: 'yes' }, {}, /options\.instances\.prune/]];
  for (const value of [-1, 'x', 1.5, Number.NaN, 2 ** 53, null]) cases.push([{}, { auditRetentionMs: value }, /options\.auditRetentionMs/]);
  for (const [extra, options, message] of cases) {
    const { store, calls } = userStore(native, []);
    Object.assign(store, extra);
    await assert.rejects(reconcile({ provider: emptyListing('js'), instances: store, ...options }), (error) => {
      assert.ok(error instanceof TypeError, `${message}: got ${error}`);
      assert.match(error.message, message);
      return true;
    });
    assert.deepStrictEqual(calls, [], `${message}: nothing was called`);
  }
  for (const prune of [null, undefined]) {
    const { store } = userStore(native, []);
    store.prune = prune;
    assert.equal((await reconcile({ provider: emptyListing('js'), instances: store })).providers[0].orphans.status, 'swept');
  }
});
