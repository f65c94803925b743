// Behaviour of the Node binding beyond the parity vectors: input contracts,
// host-object calling conventions, error identity, the native store, mixing
// native and JS objects, and the two entry points.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { resolve, dirname } from 'node:path';
import * as binding from '../../bindings-node/index.mjs';

const require = createRequire(import.meta.url);
const here = dirname(fileURLToPath(import.meta.url));
const referencePath = process.env.RECLAIM_REFERENCE ?? resolve(here, '..', '..', '..', 'shared', 'reference', 'reclaim.mjs');
const reference = await import(pathToFileURL(referencePath).href);
const { reclaimSandbox, sandboxReclaimer, SandboxReclaimFailedError, InMemorySandboxInstanceStore, defineSandboxInstanceStore } =
  binding;

const instance = (key, overrides = {}) => ({
  key,
  provider: 'docker',
  providerSandboxId: `ctr-${key}`,
  threadId: 'thread-1',
  updatedAt: 1_700_000_000_000,
  ...overrides,
});
const run = (key, runId = `run-${key}`) => ({ runId, threadId: 'thread-1', status: 'completed', startedAt: 1, sandboxKey: key });

/** A JS store over a Map that records calls; `sync` makes every method synchronous. */
function jsStore(records = [], { sync = false } = {}) {
  const map = new Map(records.map((r) => [r.key, structuredClone(r)]));
  const calls = [];
  const answer = (value) => (sync ? value : Promise.resolve(value));
  return {
    calls,
    map,
    get(key) {
      calls.push(['get', key]);
      return answer(map.has(key) ? structuredClone(map.get(key)) : null);
    },
    upsert(record) {
      map.set(record.key, structuredClone(record));
      return answer(undefined);
    },
    delete(key) {
      calls.push(['delete', key]);
      map.delete(key);
      return answer(undefined);
    },
  };
}

function jsProvider(name = 'docker', destroy = () => undefined) {
  const calls = [];
  return {
    calls,
    name,
    destroy(input) {
      calls.push(input);
      return destroy(input);
    },
  };
}

function recordingLogger() {
  const lines = [];
  const logger = {};
  for (const level of ['warn', 'errors', 'sandbox']) logger[level] = (message, meta) => lines.push({ level, message, meta });
  return { logger, lines };
}

// ---------------------------------------------------------------- errors

test('SandboxReclaimFailedError: constructible, an Error, message built by the core like the reference', () => {
  for (const key of ['k1', undefined, 'quote " ünïcode 🚀']) {
    const ours = new SandboxReclaimFailedError('run-1', key);
    const theirs = new reference.SandboxReclaimFailedError('run-1', key);
    assert.ok(ours instanceof SandboxReclaimFailedError);
    assert.ok(ours instanceof Error);
    assert.equal(ours.name, 'SandboxReclaimFailedError');
    assert.equal(ours.runId, 'run-1');
    assert.equal(ours.sandboxKey, key);
    assert.equal(ours.message, theirs.message);
    assert.match(ours.stack, /SandboxReclaimFailedError/);
  }
});

test('sandboxReclaimer rejects with an instanceof SandboxReclaimFailedError on destroy-failed', async () => {
  const store = jsStore([instance('k')]);
  const failure = new Error('engine down');
  const provider = jsProvider('docker', () => Promise.reject(failure));
  const { logger, lines } = recordingLogger();
  const error = await sandboxReclaimer({ provider, instances: store, logger })(run('k')).then(
    () => assert.fail('must reject'),
    (caught) => caught,
  );
  assert.ok(error instanceof SandboxReclaimFailedError);
  assert.ok(error instanceof Error);
  assert.equal(error.runId, 'run-k');
  assert.equal(error.sandboxKey, 'k');
  assert.equal(lines[0].meta.error, failure, 'the destroy-failed warning carries the very error thrown');
  assert.deepStrictEqual(
    lines.map((l) => l.level),
    ['warn', 'errors'],
  );
});

// ------------------------------------------------------------- bad input

const goodOptions = () => ({ provider: jsProvider(), instances: jsStore([instance('k')]) });

const badInputs = [
  ['record is null', () => [null, goodOptions()], /record must be an object/],
  ['record is a string', () => ['run-1', goodOptions()], /record must be an object/],
  ['runId is missing', () => [{ sandboxKey: 'k' }, goodOptions()], /record\.runId/],
  ['runId is a number', () => [{ runId: 1, sandboxKey: 'k' }, goodOptions()], /record\.runId/],
  ['sandboxKey is null', () => [{ runId: 'r', sandboxKey: null }, goodOptions()], /record\.sandboxKey/],
  ['sandboxKey is a number', () => [{ runId: 'r', sandboxKey: 7 }, goodOptions()], /record\.sandboxKey/],
  ['options missing', () => [run('k'), undefined], /options must be an object/],
  ['provider missing', () => [run('k'), { instances: jsStore() }], /options\.provider must/],
  ['provider name not a string', () => [run('k'), { ...goodOptions(), provider: { name: 1, destroy() {} } }], /options\.provider\.name/],
  ['provider without destroy', () => [run('k'), { ...goodOptions(), provider: { name: 'docker' } }], /options\.provider\.destroy/],
  ['store missing', () => [run('k'), { provider: jsProvider() }], /options\.instances must/],
  ['store without get', () => [run('k'), { provider: jsProvider(), instances: { delete() {} } }], /options\.instances\.get/],
  ['store without delete', () => [run('k'), { provider: jsProvider(), instances: { get() {} } }], /options\.instances\.delete/],
  ['logger without sandbox', () => [run('k'), { ...goodOptions(), logger: { warn() {}, errors() {} } }], /options\.logger\.sandbox/],
];

for (const [name, make, message] of badInputs) {
  test(`TypeError naming the field, before any call: ${name}`, async () => {
    const [record, options] = make();
    const matches = (error) => error instanceof TypeError && message.test(error.message);
    const promise = reclaimSandbox(record, options);
    assert.ok(promise instanceof Promise, 'reclaimSandbox rejects rather than throwing synchronously');
    await assert.rejects(promise, matches);
    // sandboxReclaimer checks its options when it is made, its record when called.
    let reclaimer;
    try {
      reclaimer = sandboxReclaimer(options);
    } catch (error) {
      assert.ok(matches(error), `sandboxReclaimer(options) throws the TypeError: ${error}`);
    }
    if (reclaimer !== undefined) {
      const called = reclaimer(record);
      assert.ok(called instanceof Promise, 'the reclaimer rejects rather than throwing synchronously');
      await assert.rejects(called, matches);
    }
    if (options?.instances?.calls) assert.deepStrictEqual(options.instances.calls, [], 'no call on the store');
    if (options?.provider?.calls) assert.deepStrictEqual(options.provider.calls, [], 'no call on the provider');
  });
}

const brokenAnswers = [
  ['get resolves undefined', undefined, /options\.instances\.get must resolve to a SandboxInstanceRecord or null, got undefined/],
  ['get resolves a number', 42, /got number/],
  ['get resolves a record without provider', { providerSandboxId: 'x' }, /no string `provider`/],
  ['get resolves a record without providerSandboxId', { provider: 'docker' }, /no string `providerSandboxId`/],
];
for (const [name, answer, message] of brokenAnswers) {
  test(`TypeError naming the broken contract: ${name}`, async () => {
    const provider = jsProvider();
    const store = { get: async () => answer, delete: async () => assert.fail('no delete') };
    await assert.rejects(reclaimSandbox(run('k'), { provider, instances: store }), (e) => e instanceof TypeError && message.test(e.message));
    assert.deepStrictEqual(provider.calls, []);
  });
}

// ----------------------------------------------------- host conventions

test('host methods are called as methods: `this` is the store, provider and logger', async () => {
  class Store {
    #map = new Map([['k', instance('k')]]);
    async get(key) {
      return this.#map.get(key) ?? null;
    }
    async upsert() {}
    delete(key) {
      this.#map.delete(key);
    }
    get size() {
      return this.#map.size;
    }
  }
  class Provider {
    name = 'docker';
    #destroyed = [];
    destroy({ id }) {
      this.#destroyed.push(id);
    }
    get destroyed() {
      return this.#destroyed;
    }
  }
  class Logger {
    #lines = [];
    warn(message) {
      this.#lines.push(message);
    }
    errors(message) {
      this.#lines.push(message);
    }
    sandbox(message) {
      this.#lines.push(message);
    }
    get lines() {
      return this.#lines;
    }
  }
  const store = new Store();
  const provider = new Provider();
  const logger = new Logger();
  await sandboxReclaimer({ provider, instances: store, logger })(run('k'));
  assert.deepStrictEqual(provider.destroyed, ['ctr-k']);
  assert.equal(store.size, 0);
  assert.deepStrictEqual(logger.lines, ['reclaim: destroyed']);
});

test('synchronous and asynchronous host methods give the same results', async () => {
  for (const sync of [true, false]) {
    const store = jsStore([instance('a'), instance('b', { provider: 'other' })], { sync });
    const provider = jsProvider('docker', sync ? () => 'ignored value' : async () => undefined);
    assert.equal(await reclaimSandbox(run('a'), { provider, instances: store }), 'destroyed');
    assert.equal(await reclaimSandbox(run('b'), { provider, instances: store }), 'provider-mismatch');
    assert.equal(await reclaimSandbox(run('c'), { provider, instances: store }), 'not-found');
    assert.equal(await reclaimSandbox({ runId: 'r' }, { provider, instances: store }), 'no-sandbox-key');
    assert.deepStrictEqual([...store.map.keys()], ['b']);
  }
});

test('destroy receives a fresh { id } object on every call', async () => {
  const store = jsStore([instance('a'), instance('b')]);
  const provider = jsProvider();
  await reclaimSandbox(run('a'), { provider, instances: store });
  await reclaimSandbox(run('b'), { provider, instances: store });
  const [first, second] = provider.calls;
  assert.notEqual(first, second);
  assert.deepStrictEqual(first, { id: 'ctr-a' });
  assert.deepStrictEqual(Object.keys(second), ['id']);
});

test('store errors propagate as the very object thrown, sync or async', async () => {
  const thrown = { notAnError: true };
  for (const get of [() => Promise.reject(thrown), () => { throw thrown; }]) {
    await assert.rejects(reclaimSandbox(run('k'), { provider: jsProvider(), instances: { get, delete() {} } }), (e) => e === thrown);
  }
  const deleteError = new RangeError('write failed');
  const store = { get: () => instance('k'), delete: () => { throw deleteError; } };
  await assert.rejects(reclaimSandbox(run('k'), { provider: jsProvider(), instances: store }), (e) => e === deleteError);
});

test('a throwing logger rejects the reclaim with its error and leaves nothing in flight', async () => {
  const loggerError = new Error('logger broke');
  const logger = { warn() { throw loggerError; }, errors() {}, sandbox() {} };
  const store = jsStore([instance('k', { provider: 'other' })]);
  await assert.rejects(reclaimSandbox(run('k'), { provider: jsProvider(), instances: store, logger }), (e) => e === loggerError);
});

test('the leak ledger gets errorMessage = message of an Error-like, else String(value)', async () => {
  const cases = [
    [new Error('engine down'), 'engine down'],
    ['plain string', 'plain string'],
    [{ message: 'error-like' }, 'error-like'],
    [{ message: 5 }, '[object Object]'],
    [undefined, 'undefined'],
    [Object.create(null), '[object Object]'],
  ];
  for (const [thrownValue, errorMessage] of cases) {
    const store = jsStore([instance('k')]);
    const leaks = [];
    store.deleteRecordingLeak = function (key, leak) {
      assert.equal(this, store);
      leaks.push([key, leak]);
      this.map.delete(key);
    };
    const { logger, lines } = recordingLogger();
    const provider = jsProvider('docker', () => { throw thrownValue; });
    assert.equal(await reclaimSandbox(run('k'), { provider, instances: store, logger }), 'destroy-failed');
    assert.equal(leaks.length, 1);
    const [key, { failedAt, ...leak }] = leaks[0];
    assert.equal(key, 'k');
    assert.ok(Number.isInteger(failedAt) && Math.abs(failedAt - Date.now()) < 60_000, 'failedAt is epoch ms');
    assert.deepStrictEqual(leak, { key: 'k', provider: 'docker', providerSandboxId: 'ctr-k', runId: 'run-k', errorMessage });
    assert.equal(lines[0].meta.error, thrownValue, 'log meta holds the very value thrown');
    assert.ok(!store.calls.some(([method]) => method === 'delete'), 'no plain delete beside the ledger step');
  }
});

test('strings equal to one another stay distinct roles (symbols are by value, not by slot)', async () => {
  // runId, key, provider name and sandbox id all the same string.
  const same = 'x';
  const store = jsStore([{ key: same, provider: same, providerSandboxId: same, threadId: 't', updatedAt: 1 }]);
  const provider = jsProvider(same, () => { throw new Error(same); });
  const { logger, lines } = recordingLogger();
  await assert.rejects(sandboxReclaimer({ provider, instances: store, logger })({ runId: same, sandboxKey: same }), SandboxReclaimFailedError);
  assert.deepStrictEqual(provider.calls, [{ id: same }]);
  assert.deepStrictEqual(lines[0].meta, { runId: same, sandboxKey: same, providerSandboxId: same, error: lines[0].meta.error });
});

test('a logger may start another reclaim from inside a log call', async () => {
  const store = jsStore([instance('a', { provider: 'other' }), instance('b')]);
  const provider = jsProvider();
  const nested = [];
  const logger = {
    warn() {
      nested.push(reclaimSandbox(run('b'), { provider, instances: store }));
    },
    errors() {},
    sandbox() {},
  };
  assert.equal(await reclaimSandbox(run('a'), { provider, instances: store, logger }), 'provider-mismatch');
  assert.deepStrictEqual(await Promise.all(nested), ['destroyed']);
});

// ------------------------------------------------------- native store

test('the native store copies records in and out, and validates them', async () => {
  const store = new InMemorySandboxInstanceStore();
  const record = instance('k', { latestRunId: 'run-0' });
  await store.upsert(record);
  record.provider = 'mutated';
  const read = await store.get('k');
  assert.deepStrictEqual(read, instance('k', { latestRunId: 'run-0' }));
  read.provider = 'mutated again';
  assert.equal((await store.get('k')).provider, 'docker');
  assert.equal(await store.get('missing'), null);
  assert.ok(!('latestSnapshotId' in read), 'absent optionals stay absent');
  await assert.rejects(store.upsert({ ...instance('k'), updatedAt: -1 }), (e) => e instanceof TypeError && /updatedAt/.test(e.message));
  await assert.rejects(store.upsert({ ...instance('k'), provider: undefined }), (e) => e instanceof TypeError && /record\.provider/.test(e.message));
  await assert.rejects(store.upsert({ ...instance('k'), key: '' }), (e) => e instanceof TypeError && /`key`/.test(e.message));
  await store.delete('k');
  await store.delete('k');
  assert.deepStrictEqual(store.records(), []);
  assert.equal(typeof store.deleteRecordingLeak, 'undefined', 'no ledger unless asked for');
});

test('native and JS stores and providers mix freely, concurrently', async () => {
  const native = new InMemorySandboxInstanceStore();
  const js = jsStore();
  const count = 200;
  for (let i = 0; i < count; i++) {
    const store = i % 2 === 0 ? native : js;
    await store.upsert(instance(`k${i}`, { provider: i % 5 === 0 ? 'other' : 'docker' }));
  }
  const syncProvider = jsProvider('docker', () => undefined);
  const asyncProvider = jsProvider('docker', ({ id }) => (id.endsWith('3') ? Promise.reject(new Error('nope')) : Promise.resolve()));
  const outcomes = await Promise.all(
    Array.from({ length: count + 2 }, (_, i) =>
      reclaimSandbox(run(`k${i}`), { provider: i % 3 === 0 ? syncProvider : asyncProvider, instances: i % 2 === 0 ? native : js }),
    ),
  );
  outcomes.forEach((outcome, i) => {
    const expected =
      i >= count ? 'not-found' : i % 5 === 0 ? 'provider-mismatch' : i % 3 !== 0 && String(i).endsWith('3') ? 'destroy-failed' : 'destroyed';
    assert.equal(outcome, expected, `reclaim ${i}`);
  });
  const left = [...native.records().map((r) => r.key), ...js.map.keys()].sort();
  const mismatched = Array.from({ length: count }, (_, i) => i).filter((i) => i % 5 === 0).map((i) => `k${i}`).sort();
  assert.deepStrictEqual(left, mismatched);
});

test('the native ledger store records a leak', async () => {
  const store = new InMemorySandboxInstanceStore({ ledger: true });
  await store.upsert(instance('k'));
  const provider = jsProvider('docker', () => Promise.reject(new Error('engine down')));
  assert.equal(await reclaimSandbox(run('k'), { provider, instances: store }), 'destroy-failed');
  const [leak, ...rest] = await store.listLeaks();
  assert.deepStrictEqual(rest, []);
  assert.equal(leak.lastError, 'engine down');
  assert.equal(leak.attempts, 1);
  assert.equal(leak.providerSandboxId, 'ctr-k');
  assert.deepStrictEqual(store.records(), []);
});

test('a subclass overriding get is called instead of the native fast path', async () => {
  class Audited extends InMemorySandboxInstanceStore {
    seen = [];
    async get(key) {
      this.seen.push(key);
      return super.get(key);
    }
  }
  const store = new Audited();
  await store.upsert(instance('k'));
  assert.equal(await reclaimSandbox(run('k'), { provider: jsProvider(), instances: store }), 'destroyed');
  assert.deepStrictEqual(store.seen, ['k']);
  assert.deepStrictEqual(store.records(), []);
});

test('defineSandboxInstanceStore returns the store and checks its methods', () => {
  const store = jsStore();
  assert.equal(defineSandboxInstanceStore(store), store);
  assert.throws(() => defineSandboxInstanceStore({ get() {}, delete() {} }), (e) => e instanceof TypeError && /store\.upsert/.test(e.message));
});

// ------------------------------------------------------- entry points

test('CommonJS and ESM entry points export the very same objects', () => {
  const cjs = require('../../bindings-node/index.cjs');
  const names = ['reclaimSandbox', 'sandboxReclaimer', 'SandboxReclaimFailedError', 'SandboxDestroyTimeoutError', 'InMemorySandboxInstanceStore', 'defineSandboxInstanceStore'];
  names.push('SqliteSandboxInstanceStore', 'PostgresSandboxInstanceStore', 'listLeaks', 'retryLeaks', 'DockerProvider', 'LocalProvider', 'SandboxNotOwnedError');
  names.push('SandboxStoreError', 'SandboxStoreOpenError', 'SchemaTooNewError', 'reclaimAll', 'reconcile');
  names.push('ownerLabels');
  // One provider class per row of the core's vendor table (index.d.ts declares them from it).
  const vendors = require('../../bindings-node/lib/native.cjs').hostedVendors().map((vendor) => vendor.className);
  assert.deepStrictEqual(vendors, [
    'E2bProvider', 'DaytonaProvider', 'VercelProvider', 'SpritesProvider', 'RunloopProvider', 'BlaxelProvider', 'ModalProvider',
    'KubernetesProvider', 'UpstashBoxProvider', 'BoxdProvider', 'RailwayProvider',
  ]);
  names.push(...vendors);
  assert.deepStrictEqual(Object.keys(cjs).sort(), [...names].sort(), 'exactly the documented exports');
  for (const name of names) {
    assert.equal(typeof binding[name], 'function', name);
    assert.equal(cjs[name], binding[name], name);
  }
  assert.ok(new cjs.SandboxReclaimFailedError('r', 'k') instanceof binding.SandboxReclaimFailedError);
});
