// The fleet passes through the Node binding on the real clock: reclaimAll and
// reconcile refuse bad options before touching anything, an AbortSignal stops
// a pass, reconcile sweeps real LocalProvider sandboxes against the native
// SQLite store (audit included), and JS providers with list() drive the sweep,
// failing closed when the listing fails. (Timing and ordering are the parity
// vectors' job: binding.test.mjs.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import * as binding from '../../bindings-node/index.mjs';
import { service, tempDir, uniqueSchema } from './services.mjs';

const { reclaimAll, reconcile, InMemorySandboxInstanceStore, SqliteSandboxInstanceStore, PostgresSandboxInstanceStore, LocalProvider } = binding;

const scratch = tempDir('fleet');
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const run = (key, runId = `run-${key}`) => ({ runId, threadId: 'thread-1', status: 'completed', startedAt: 1, ...(key === undefined ? {} : { sandboxKey: key }) });
const record = (key, provider, providerSandboxId, updatedAt = Date.now()) => ({ key, provider, providerSandboxId, threadId: 'thread-1', updatedAt });
const FLEET_METHODS = ['listStale', 'expireIdle', 'sandboxReferences', 'recordLeak', 'dueLeaks', 'deferLeak', 'claimSweep', 'releaseSweep', 'appendAudit', 'resolveLeak'];

/** A store and provider that count every call made on them (reading a property is not a call). */
function watched() {
  const calls = [];
  const store = {};
  for (const method of ['get', 'upsert', 'delete', 'deleteRecordingLeak', ...FLEET_METHODS]) {
    store[method] = (...args) => {
      calls.push(`store.${method}`);
      return method === 'get' ? null : method === 'dueLeaks' || method === 'sandboxReferences' || method === 'listStale' ? [] : method === 'claimSweep';
    };
  }
  const provider = {
    name: 'docker',
    destroy: () => void calls.push('provider.destroy'),
    list: () => {
      calls.push('provider.list');
      return [];
    },
  };
  return { calls, store, provider };
}

// ------------------------------------------------------------ option checks

test('reclaimAll: every bad argument is a TypeError naming it, before any call', async () => {
  const lone = 'k\uD800';
  const cases = [
    [(w) => reclaimAll('nope', { provider: w.provider, instances: w.store }), /records/],
    [(w) => reclaimAll([run('k'), { runId: 5 }], { provider: w.provider, instances: w.store }), /records\[1\]\.runId/],
    [(w) => reclaimAll([run(lone, 'run-1')], { provider: w.provider, instances: w.store }), /records\[0\]\.sandboxKey/],
    [(w) => reclaimAll([run('k'), null], { provider: w.provider, instances: w.store }), /records\[1\]/],
    [() => reclaimAll([run('k')], null), /options/],
    [(w) => reclaimAll([run('k')], { provider: w.provider, providers: [w.provider], instances: w.store }), /options\.provider/],
    [(w) => reclaimAll([run('k')], { instances: w.store }), /options\.providers/],
    [(w) => reclaimAll([run('k')], { providers: [], instances: w.store }), /options\.providers/],
    [(w) => reclaimAll([run('k')], { providers: w.provider, instances: w.store }), /options\.providers/],
    [(w) => reclaimAll([run('k')], { providers: [null], instances: w.store }), /options\.providers\[0\]/],
    [(w) => reclaimAll([run('k')], { providers: [{ name: 5, destroy() {} }], instances: w.store }), /options\.providers\[0\]\.name/],
    [(w) => reclaimAll([run('k')], { providers: [{ name: lone, destroy() {} }], instances: w.store }), /options\.providers\[0\]\.name/],
    [(w) => reclaimAll([run('k')], { providers: [w.provider, { name: 'x' }], instances: w.store }), /options\.providers\[1\]\.destroy/],
    [(w) => reclaimAll([run('k')], { provider: { name: 'x' }, instances: w.store }), /options\.provider\.destroy/],
    [(w) => reclaimAll([run('k')], { providers: [w.provider, { ...w.provider }], instances: w.store }), /options\.providers: two providers share the name "docker"/],
    [(w) => reclaimAll([run('k')], { provider: w.provider }), /options\.instances/],
    [(w) => reclaimAll([run('k')], { provider: w.provider, instances: { delete() {} } }), /options\.instances\.get/],
    [(w) => reclaimAll([run('k')], { provider: w.provider, instances: { get() {} } }), /options\.instances\.delete/],
    [(w) => reclaimAll([run('k')], { provider: w.provider, instances: w.store, logger: { warn() {} } }), /options\.logger\.errors/],
  ];
  for (const name of ['concurrency', 'perProviderConcurrency']) {
    for (const value of [0, -1, 1.5, '2', NaN, 2 ** 32]) {
      cases.push([(w) => reclaimAll([run('k')], { provider: w.provider, instances: w.store, [name]: value }), new RegExp(`options\\.${name}`)]);
    }
  }
  for (const name of ['destroyTimeoutMs', 'budgetMs']) {
    for (const value of [0, -1, 2.5, '10', Infinity, 2 ** 53]) {
      cases.push([(w) => reclaimAll([run('k')], { provider: w.provider, instances: w.store, [name]: value }), new RegExp(`options\\.${name}`)]);
    }
  }
  cases.push([(w) => reclaimAll([run('k')], { provider: w.provider, instances: w.store, signal: {} }), /options\.signal/]);
  cases.push([(w) => reclaimAll([run('k')], { provider: w.provider, instances: w.store, onProgress: 'log' }), /options\.onProgress/]);
  for (const [call, message] of cases) {
    const world = watched();
    await assert.rejects(call(world), (error) => {
      assert.ok(error instanceof TypeError, `${message}: got ${error}`);
      assert.match(error.message, message);
      return true;
    });
    assert.deepStrictEqual(world.calls, [], `${message}: nothing was called`);
  }
});

test('reconcile: every bad option is a TypeError naming it, before any call', async () => {
  const lone = 'h\uD800';
  const base = (w) => ({ provider: w.provider, instances: w.store });
  const cases = [
    [() => reconcile(), /options/],
    [(w) => reconcile({ instances: w.store }), /options\.providers/],
    [(w) => reconcile({ providers: [{ ...w.provider, list: 5 }], instances: w.store }), /options\.providers\[0\]\.list/],
    // Python raises the same text (tests/python/test_fleet.py): a non-string owner must not fall back to the pass's.
    [(w) => reconcile({ providers: [{ ...w.provider, owner: 5 }], instances: w.store }), /^options\.providers\[0\]\.owner must be a string when present$/],
    [(w) => reconcile({ provider: { ...w.provider, owner: ['team-a'] }, instances: w.store }), /^options\.provider\.owner must be a string when present$/],
    [(w) => reconcile({ providers: [{ ...w.provider, owner: lone }], instances: w.store }), /options\.providers\[0\]\.owner/],
    [(w) => reconcile({ provider: w.provider }), /options\.instances/],
    [(w) => reconcile({ ...base(w), dryRun: 'yes' }), /options\.dryRun/],
    [(w) => reconcile({ ...base(w), owner: 5 }), /options\.owner/],
    [(w) => reconcile({ ...base(w), host: 5 }), /options\.host/],
    [(w) => reconcile({ ...base(w), host: lone }), /options\.host/],
    [(w) => reconcile({ ...base(w), signal: new AbortController() }), /options\.signal/],
    [(w) => reconcile({ ...base(w), onProgress: {} }), /options\.onProgress/],
  ];
  // Every fleet method is required, and the missing one is named.
  for (const missing of FLEET_METHODS) {
    cases.push([
      (w) => {
        const instances = { ...w.store };
        delete instances[missing];
        return reconcile({ provider: w.provider, instances });
      },
      new RegExp(`options\\.instances\\.${missing} must be a function`),
    ]);
  }
  const numbers = {
    concurrency: [0, 1.5, 2 ** 32],
    perProviderConcurrency: [0, -2],
    destroyTimeoutMs: [0, 0.5],
    budgetMs: [0, '5'],
    orphanGraceMs: [-1, 1.5, '0'],
    maxIdleMs: [0, -5],
    limit: [0, 2 ** 32, 3.5],
    leaseMs: [0, -1],
    backoffMs: [-1, 0.25],
    maxBackoffMs: [-1, NaN],
    registryRetentionMs: [-1, 'x', 1.5, null],
    auditRetentionMs: [-1, 'x', 1.5, null],
  };
  for (const [name, values] of Object.entries(numbers)) {
    for (const value of values) cases.push([(w) => reconcile({ ...base(w), [name]: value }), new RegExp(`options\\.${name}`)]);
  }
  for (const [call, message] of cases) {
    const world = watched();
    await assert.rejects(call(world), (error) => {
      assert.ok(error instanceof TypeError, `${message}: got ${error}`);
      assert.match(error.message, message);
      return true;
    });
    assert.deepStrictEqual(world.calls, [], `${message}: nothing was called`);
  }
});

test('reconcile accepts the documented zero values (orphanGraceMs, backoffMs, maxBackoffMs) and a dry run', async () => {
  const world = watched();
  const report = await reconcile({ ...{ provider: world.provider, instances: world.store }, orphanGraceMs: 0, backoffMs: 0, maxBackoffMs: 0, dryRun: true, host: 'h' });
  assert.equal(report.dryRun, true);
  assert.equal(report.host, 'h');
  // A dry run only reads: due leaks listed without a lease, references read, then the provider listed.
  assert.deepStrictEqual(world.calls, ['store.dueLeaks', 'store.sandboxReferences', 'provider.list']);
});

// ------------------------------------------------------------ listings that are not sets

test('reconcile destroys each sandbox once however a listing repeats or lags, and says stillLeaking', async () => {
  const store = new InMemorySandboxInstanceStore({ ledger: true });
  const old = Date.now() - 3_600_000;
  await store.recordLeak({ key: 'k1', provider: 'cloud', providerSandboxId: 'l1', runId: 'r1', errorMessage: 'boom', failedAt: old }, 'destroy-failed', 0);
  const calls = [];
  const listing = ['o1', 'o1', 'o2', 'l1'].map((id) => ({ id, createdAt: old, owner: 'sandbox-reclaim' }));
  // A lagging cloud listing: what was destroyed stays listed; offset pages repeat o1.
  const provider = { name: 'cloud', destroy: ({ id }) => void calls.push(id), list: () => listing };
  const first = await reconcile({ provider, instances: store, host: 'host-a' });
  assert.deepStrictEqual(calls.sort(), ['l1', 'o1', 'o2']);
  assert.deepStrictEqual([first.counts.destroyed, first.providers[0].orphans.listed, first.stillLeaking], [3, 3, false]);

  // Right after, another host: the audit log says all three were just destroyed.
  const second = await reconcile({ provider, instances: store, host: 'host-b' });
  assert.equal(calls.length, 3, 'nothing destroyed twice');
  assert.deepStrictEqual([second.providers[0].orphans.referenced, second.providers[0].orphans.found, second.stillLeaking], [3, 0, false]);

  // A dry run that plans a destroy is still leaking.
  const fresh = { name: 'cloud', destroy: () => void calls.push('never'), list: () => [{ id: 'o9', createdAt: old, owner: 'sandbox-reclaim' }] };
  const planned = await reconcile({ provider: fresh, instances: store, dryRun: true });
  assert.deepStrictEqual([planned.counts.planned, planned.stillLeaking], [1, true]);
  assert.equal(calls.length, 3);
});

test('reconcile with retryLeaks: false sweeps orphans only, leaving due leaks in the ledger', async () => {
  const store = new InMemorySandboxInstanceStore({ ledger: true });
  const old = Date.now() - 3_600_000;
  await store.recordLeak({ key: 'k1', provider: 'cloud', providerSandboxId: 'l1', runId: 'r1', errorMessage: 'boom', failedAt: old }, 'destroy-failed', 0);
  const calls = [];
  const provider = { name: 'cloud', destroy: ({ id }) => void calls.push(id), list: () => [{ id: 'o1', createdAt: old, owner: 'sandbox-reclaim' }] };
  const report = await reconcile({ provider, instances: store, retryLeaks: false });
  assert.deepStrictEqual(calls, ['o1']);
  assert.equal(report.providers[0].leaks.due, 0);
  assert.equal((await store.listLeaks()).length, 1, 'the due leak waits for a full pass');
  await assert.rejects(reconcile({ provider, instances: store, retryLeaks: 'no' }), { name: 'TypeError', message: /options\.retryLeaks must be a boolean/ });
});

// ------------------------------------------------------------ reclaimAll

test('reclaimAll: one provider as `provider`, routing among `providers`, a plain-object report', async () => {
  const store = new InMemorySandboxInstanceStore({ ledger: true });
  await store.upsert(record('k1', 'docker', 'c1'));
  await store.upsert(record('k2', 'local', 'l2'));
  await store.upsert(record('k3', 'e2b', 'e3'));
  const destroyed = [];
  const docker = { name: 'docker', destroy: ({ id }) => void destroyed.push(`docker:${id}`) };
  const local = { name: 'local', destroy: async ({ id }) => void destroyed.push(`local:${id}`) };
  const report = await reclaimAll([run('k1'), run('k2'), run('k3'), run(undefined, 'no-key')], { providers: [docker, local], instances: store });
  assert.equal(Object.getPrototypeOf(report), Object.prototype);
  assert.deepStrictEqual(report.records.map((r) => r.outcome), ['destroyed', 'destroyed', 'provider-mismatch', 'no-sandbox-key']);
  assert.deepStrictEqual(destroyed.sort(), ['docker:c1', 'local:l2']);
  assert.deepStrictEqual(store.records().map((r) => r.key), ['k3'], 'a record of no provider of ours is left alone');

  await store.upsert(record('k4', 'docker', 'c4'));
  const single = await reclaimAll([run('k4')], { provider: docker, instances: store });
  assert.equal(single.total, 1);
  assert.equal(single.counts.destroyed, 1);
});

test('reclaimAll: a failed destroy and a failing store are reported per record with their messages; progress errors are ignored', async () => {
  const store = new InMemorySandboxInstanceStore({ ledger: true });
  for (const key of ['k1', 'k2', 'k3']) await store.upsert(record(key, 'docker', `c-${key}`));
  const provider = {
    name: 'docker',
    destroy: ({ id }) => {
      if (id === 'c-k2') throw new Error('engine unreachable');
    },
  };
  const failing = Object.create(store);
  failing.get = (key) => (key === 'k3' ? Promise.reject(new Error('db down')) : store.get(key));
  failing.delete = (key) => store.delete(key);
  failing.deleteRecordingLeak = (key, leak) => store.deleteRecordingLeak(key, leak);
  const events = [];
  const report = await reclaimAll([run('k1'), run('k2'), run('k3')], {
    provider,
    instances: failing,
    onProgress: (event) => {
      events.push(event);
      throw new Error('a broken progress callback changes nothing');
    },
  });
  assert.deepStrictEqual(
    report.records.map(({ outcome, error }) => [outcome, error]),
    [
      ['destroyed', undefined],
      ['destroy-failed', 'engine unreachable'],
      ['error', 'db down'],
    ],
  );
  assert.equal(events.length, 3);
  assert.deepStrictEqual(events.map((e) => e.kind), ['record', 'record', 'record']);
  const [leak] = await store.listLeaks();
  assert.deepStrictEqual([leak.providerSandboxId, leak.lastError], ['c-k2', 'engine unreachable'], 'the failed destroy is in the ledger');
});

test('reclaimAll: an AbortSignal defers what has not started; in-flight destroys finish', async () => {
  const store = new InMemorySandboxInstanceStore();
  const keys = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6'];
  for (const key of keys) await store.upsert(record(key, 'docker', `c-${key}`));
  const controller = new AbortController();
  const started = [];
  const finished = [];
  const provider = {
    name: 'docker',
    async destroy({ id }) {
      started.push(id);
      if (started.length === 2) setTimeout(() => controller.abort(), 10);
      await sleep(60);
      finished.push(id);
    },
  };
  const report = await reclaimAll(keys.map((key) => run(key)), { provider, instances: store, concurrency: 2, signal: controller.signal });
  assert.deepStrictEqual(started, ['c-k1', 'c-k2'], 'nothing started after the abort');
  assert.deepStrictEqual(finished, ['c-k1', 'c-k2'], 'the destroys in flight were not cancelled');
  assert.deepStrictEqual(report.records.map((r) => r.outcome), ['destroyed', 'destroyed', 'deferred', 'deferred', 'deferred', 'deferred']);
  assert.equal(report.counts.deferred, 4);
  assert.deepStrictEqual(store.records().map((r) => r.key), ['k3', 'k4', 'k5', 'k6'], 'deferred records are untouched');
});

test('reclaimAll: aborting from inside onProgress stops the pass in order (no re-entry)', async () => {
  const store = new InMemorySandboxInstanceStore();
  const keys = ['k1', 'k2', 'k3', 'k4'];
  for (const key of keys) await store.upsert(record(key, 'docker', `c-${key}`));
  const controller = new AbortController();
  const destroyed = [];
  const provider = { name: 'docker', destroy: ({ id }) => void destroyed.push(id) };
  const events = [];
  const onProgress = (event) => {
    events.push(event.outcome);
    if (event.done === 1) controller.abort();
  };
  const report = await reclaimAll(keys.map((key) => run(key)), { provider, instances: store, concurrency: 1, signal: controller.signal, onProgress });
  // The batch carrying k1's event also started k2 (the machine's order); the stop
  // reaches the machine right after that batch, so k2 finishes and k3, k4 never start.
  assert.deepStrictEqual(report.records.map((r) => r.outcome), ['destroyed', 'destroyed', 'deferred', 'deferred']);
  assert.deepStrictEqual(events, ['destroyed', 'deferred', 'deferred', 'destroyed'], 'one event per record, as each concluded');
  assert.deepStrictEqual(destroyed, ['c-k1', 'c-k2']);
  assert.deepStrictEqual(store.records().map((r) => r.key), ['k3', 'k4']);
});

test('reclaimAll: a signal aborted before the call starts nothing', async () => {
  const store = new InMemorySandboxInstanceStore();
  const keys = ['k1', 'k2', 'k3', 'k4'];
  for (const key of keys) await store.upsert(record(key, 'docker', `c-${key}`));
  const destroyed = [];
  const provider = { name: 'docker', destroy: ({ id }) => void destroyed.push(id) };
  const report = await reclaimAll(keys.map((key) => run(key)), { provider, instances: store, concurrency: 1, signal: AbortSignal.abort() });
  assert.equal(report.counts.deferred, keys.length, JSON.stringify(report.counts));
  assert.deepStrictEqual(destroyed, []);
  assert.deepStrictEqual(store.records().map((r) => r.key), keys, 'every record untouched');
});

test('reconcile: a signal aborted before the call touches nothing', async () => {
  const store = new InMemorySandboxInstanceStore({ ledger: true });
  const listed = [];
  const provider = { name: 'docker', list: () => void listed.push(1) ?? [], destroy: () => assert.fail('no destroy') };
  const report = await reconcile({ providers: [provider], instances: store, signal: AbortSignal.abort(), maxIdleMs: 1 });
  assert.equal(report.cutShort, true);
  assert.equal(report.providers[0].orphans.status, 'skipped');
  assert.deepStrictEqual(listed, []);
});

// ------------------------------------------------------------ reconcile

/** A JS provider with list(): `sandboxes` are `{id, createdAt, owner, key}`; destroys are recorded. */
function listingProvider(name, sandboxes, { fail } = {}) {
  const destroyed = [];
  return {
    destroyed,
    provider: {
      name,
      async list() {
        if (fail) throw new Error(fail);
        return sandboxes;
      },
      async destroy({ id }) {
        destroyed.push(id);
      },
    },
  };
}

test('reconcile: a JS provider with list() drives the orphan sweep (in-memory store)', async () => {
  const store = new InMemorySandboxInstanceStore({ ledger: true });
  const old = Date.now() - 3_600_000;
  await store.upsert(record('k-ref', 'js', 'ref'));
  const sandboxes = [
    { id: 'orphan', createdAt: old, owner: 'sandbox-reclaim', key: 'k-orphan' },
    { id: 'ref', createdAt: old, owner: 'sandbox-reclaim', key: 'k-ref' },
    { id: 'young', createdAt: Date.now(), owner: 'sandbox-reclaim', key: null },
    { id: 'foreign', createdAt: old, owner: 'someone-else', key: null },
  ];
  const { provider, destroyed } = listingProvider('js', sandboxes);
  const events = [];
  const report = await reconcile({ provider, instances: store, host: 'node-test', onProgress: (event) => events.push(event) });
  assert.deepStrictEqual(destroyed, ['orphan']);
  const [js] = report.providers;
  assert.equal(js.orphans.status, 'swept');
  assert.deepStrictEqual(
    [js.orphans.listed, js.orphans.foreign, js.orphans.referenced, js.orphans.young, js.orphans.found, js.orphans.destroyed],
    [4, 1, 1, 1, 1, 1],
  );
  assert.deepStrictEqual(report.actions, [{ reason: 'orphan', provider: 'js', providerSandboxId: 'orphan', key: 'k-orphan', result: 'destroyed' }]);
  assert.deepStrictEqual(events.map(({ kind, providerSandboxId, result }) => [kind, providerSandboxId, result]), [['action', 'orphan', 'destroyed']]);
  const [row] = await store.listAudit();
  assert.deepStrictEqual({ ...row, at: typeof row.at }, { at: 'number', host: 'node-test', provider: 'js', providerSandboxId: 'orphan', key: 'k-orphan', reason: 'orphan', result: 'destroyed' });
  assert.equal(await store.claimSweep('js', 'another-pass', 1000, Date.now()), true, 'the pass released its sweep lease');

  // The provider's own owner wins over the pass's: now only the foreign-owned one matches, and it is old.
  const owned = listingProvider('js', [{ id: 'theirs', createdAt: old, owner: 'team-b', key: null }]);
  owned.provider.owner = 'team-b';
  await store.releaseSweep('js', 'another-pass');
  const second = await reconcile({ provider: owned.provider, instances: store, owner: 'ignored-here' });
  assert.deepStrictEqual(owned.destroyed, ['theirs']);
  assert.equal(second.host, hostname(), 'host defaults to os.hostname()');
});

test('reconcile: a listing that throws, or answers what cannot cross, leaves the sweep unavailable and destroys nothing', async () => {
  const store = new InMemorySandboxInstanceStore({ ledger: true });
  const thrown = listingProvider('js', [], { fail: 'the engine is down' });
  const report = await reconcile({ provider: thrown.provider, instances: store });
  assert.equal(report.providers[0].orphans.status, 'unavailable');
  assert.equal(report.providers[0].orphans.error, 'the engine is down');
  assert.deepStrictEqual(thrown.destroyed, []);

  const old = Date.now() - 3_600_000;
  const weird = [
    [{ id: 'x', createdAt: BigInt(old), owner: 'sandbox-reclaim' }], // JSON.stringify throws
    [{ id: 'x\uDC00', createdAt: old, owner: 'sandbox-reclaim' }], // a lone surrogate: refused by the core's parser
    [{ id: 'x', createdAt: new Date(old), owner: 'sandbox-reclaim' }], // not epoch ms: unknown creation time
    [{ id: 'x', owner: 'sandbox-reclaim' }], // unknown creation time
    [{ id: 'x', createdAt: old }], // unknown owner
    { not: 'an array' },
  ];
  for (const answer of weird) {
    const destroyed = [];
    const provider = { name: 'js', list: () => answer, destroy: ({ id }) => void destroyed.push(id) };
    const result = await reconcile({ provider, instances: store });
    assert.equal(result.providers[0].orphans.status, 'unavailable', `${String(answer)}: ${result.providers[0].orphans.error}`);
    assert.equal(typeof result.providers[0].orphans.error, 'string');
    assert.deepStrictEqual(destroyed, []);
  }

  // No list() at all: no sweep, said so.
  const none = await reconcile({ provider: { name: 'js', destroy() {} }, instances: store });
  assert.equal(none.providers[0].orphans.status, 'unavailable');
  assert.match(none.providers[0].orphans.error, /no list\(\)/);
});

test('reconcile: real LocalProvider sandboxes, native SQLite store: only the unreferenced old one is destroyed, and audited', { timeout: 120_000 }, async () => {
  const owner = `node-fleet-${process.pid}-${Date.now().toString(36)}`;
  const provider = new LocalProvider({ baseDir: join(scratch, 'local'), owner });
  assert.equal(provider.owner, owner, 'a native provider exposes its owner');
  const store = await SqliteSandboxInstanceStore.open(join(scratch, 'fleet.db'));
  try {
    const referenced = await provider.create('thread-ref:sandbox');
    const orphan = await provider.create('thread-orphan:sandbox');
    await sleep(1500);
    const young = await provider.create('thread-young:sandbox');
    await store.upsert(record(referenced.key, provider.name, referenced.id));

    const listed = await provider.list();
    assert.deepStrictEqual(listed.map((s) => s.id).sort(), [referenced.id, orphan.id, young.id].sort());
    for (const sandbox of listed) {
      assert.deepStrictEqual(Object.keys(sandbox).sort(), ['createdAt', 'id', 'key', 'owner']);
      assert.equal(sandbox.owner, owner);
      assert.equal(typeof sandbox.createdAt, 'number');
    }

    // A grace longer than every sandbox's age: nothing is an orphan yet.
    const patient = await reconcile({ provider, instances: store, orphanGraceMs: 3_600_000 });
    assert.equal(patient.providers[0].orphans.status, 'swept');
    assert.deepStrictEqual([patient.providers[0].orphans.young, patient.providers[0].orphans.found], [2, 0]);
    assert.deepStrictEqual(await store.listAudit(), []);

    // A grace between the two unreferenced sandboxes' ages: only the older goes.
    const since = Date.now();
    const report = await reconcile({ provider, instances: store, orphanGraceMs: 1000, host: 'fleet-test' });
    const orphans = report.providers[0].orphans;
    assert.equal(orphans.status, 'swept');
    assert.deepStrictEqual([orphans.listed, orphans.referenced, orphans.young, orphans.found, orphans.destroyed], [3, 1, 1, 1, 1]);
    assert.deepStrictEqual(report.actions, [
      { reason: 'orphan', provider: 'local', providerSandboxId: orphan.id, key: orphan.key, result: 'destroyed' },
    ]);
    assert.deepStrictEqual((await provider.list()).map((s) => s.id).sort(), [referenced.id, young.id].sort(), 'the referenced and the young survive');
    assert.equal((await provider.exec(referenced.id, ['echo', 'alive'])).stdout, 'alive\n');

    const audit = await store.listAudit({ since });
    assert.equal(audit.length, 1);
    assert.deepStrictEqual({ ...audit[0], at: audit[0].at >= since }, {
      at: true,
      host: 'fleet-test',
      provider: 'local',
      providerSandboxId: orphan.id,
      key: orphan.key,
      reason: 'orphan',
      result: 'destroyed',
    });
    assert.deepStrictEqual(await store.listAudit({ since: Date.now() + 60_000 }), []);
    assert.deepStrictEqual(await store.listAudit({ limit: 0 }), []);
  } finally {
    for (const sandbox of await provider.list()) await provider.destroy({ id: sandbox.id });
    await store.close();
  }
});

// ------------------------------------------------------------ fleet store methods

const pg = service('SANDBOX_RECLAIM_PG_URL', 'fleet store methods in PostgreSQL');
const stores = [
  ['in-memory', async () => new InMemorySandboxInstanceStore({ ledger: true })],
  ['SQLite', () => SqliteSandboxInstanceStore.open(join(scratch, `methods-${Date.now()}.db`))],
  ['PostgreSQL', () => PostgresSandboxInstanceStore.connect(pg.value, { schema: uniqueSchema('node_fleet'), maxConnections: 2 })],
];

for (const [kind, open] of stores) {
  test(`fleet store methods, camelCase in and out: ${kind}`, { skip: kind === 'PostgreSQL' && pg.skip }, async () => {
    const store = await open();
    try {
      const now = 1_700_000_000_000;
      await store.upsert(record('old', 'docker', 'c-old', now - 10_000));
      await store.upsert(record('new', 'docker', 'c-new', now));
      assert.deepStrictEqual((await store.listStale(now - 1, 10)).map((r) => r.key), ['old']);
      const leak = { key: 'old', provider: 'docker', providerSandboxId: 'c-old', runId: '', errorMessage: 'idle', failedAt: now };
      assert.equal(await store.expireIdle('old', now - 5, leak), false, 'touched since: nothing written');
      assert.equal(await store.expireIdle('old', now - 10_000, leak), true);
      assert.equal(await store.get('old'), null);
      assert.deepStrictEqual((await store.sandboxReferences('docker')).sort(), ['c-new', 'c-old']);

      await store.recordLeak({ ...leak, key: 'o1', providerSandboxId: 'orphan-1', errorMessage: 'boom' }, 'orphan', now + 60_000);
      const due = await store.dueLeaks('docker', 10, 1000, now);
      assert.deepStrictEqual(due.map((e) => [e.providerSandboxId, e.reason, e.nextAttemptAt, e.attempts]), [['c-old', 'idle', now, 1]]);
      assert.deepStrictEqual(await store.dueLeaks('docker', 10, 1000, now), [], 'claimed under the lease');
      await store.deferLeak(due[0], 'still there', now + 1, now + 30_000);
      const later = await store.dueLeaks('docker', 10, undefined, now + 60_000);
      assert.deepStrictEqual(later.map((e) => [e.providerSandboxId, e.attempts, e.lastError]), [['c-old', 2, 'still there'], ['orphan-1', 1, 'boom']]);
      await store.resolveLeak(later[0]);
      assert.deepStrictEqual((await store.listLeaks()).map((e) => e.providerSandboxId), ['orphan-1']);

      assert.equal(await store.claimSweep('docker', 'a', 1000, now), true);
      assert.equal(await store.claimSweep('docker', 'b', 1000, now + 10), false, 'held by a');
      await store.releaseSweep('docker', 'b');
      assert.equal(await store.claimSweep('docker', 'b', 1000, now + 20), false, 'only the holder releases');
      await store.releaseSweep('docker', 'a');
      assert.equal(await store.claimSweep('docker', 'b', 1000, now + 30), true);

      const rows = [
        { at: now, host: 'h', provider: 'docker', providerSandboxId: 'c1', key: 'k1', reason: 'orphan', result: 'destroyed' },
        { at: now + 5, host: 'h', provider: 'docker', providerSandboxId: 'c2', reason: 'leak-retry', result: 'failed', error: 'boom' },
      ];
      await store.appendAudit(rows);
      assert.deepStrictEqual(await store.listAudit(), rows);
      assert.deepStrictEqual(await store.listAudit({ since: now + 1 }), [rows[1]]);
      assert.deepStrictEqual(await store.listAudit({ limit: 1 }), [rows[0]]);
      // Without a limit, the core's default (1000 rows) bounds the answer.
      const many = Array.from({ length: 1000 }, (_, i) => ({ ...rows[0], at: now + 10 + i, providerSandboxId: `m${i}` }));
      await store.appendAudit(many);
      assert.equal((await store.listAudit()).length, 1000);
      assert.equal((await store.listAudit({ limit: 1002 })).length, 1002);

      // Argument types are checked before the native store sees anything.
      await assert.rejects(store.listStale('x', 1), { name: 'TypeError', message: /olderThan/ });
      await assert.rejects(store.recordLeak(leak, 'lost', now), { name: 'TypeError', message: /reason/ });
      await assert.rejects(store.dueLeaks('docker', 1, -1, now), { name: 'TypeError', message: /leaseMs/ });
      await assert.rejects(store.appendAudit([{ ...rows[0], at: 1.5 }]), { name: 'TypeError', message: /entries\[0\]\.at/ });
      await assert.rejects(store.listAudit({ since: -1 }), { name: 'TypeError', message: /options\.since/ });
    } finally {
      await store.close?.();
    }
  });
}
