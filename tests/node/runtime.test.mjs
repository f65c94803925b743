// The effect runtime's contracts in Node, beyond the vectors: strings that
// cannot cross exactly, host properties read once, hostile thrown values,
// real-time deadlines, the native calls a reclaim makes, and where options
// are checked. Each is a regression test for a defect the old runtime had.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import * as binding from '../../bindings-node/index.mjs';
import { tempDir } from './services.mjs';

const require = createRequire(import.meta.url);
const native = require('../../bindings-node/lib/native.cjs');
const { reclaimSandbox, sandboxReclaimer, retryLeaks, InMemorySandboxInstanceStore, SqliteSandboxInstanceStore } = binding;

const instance = (key, id = `ctr-${key}`) => ({ key, provider: 'docker', providerSandboxId: id, threadId: 't', updatedAt: 1 });

function recordingProvider(name = 'docker', destroy = () => undefined) {
  const calls = [];
  return { calls, name, destroy: (input) => (calls.push(input.id), destroy(input)) };
}

function recordingLogger() {
  const lines = [];
  const logger = {};
  for (const level of ['warn', 'errors', 'sandbox']) logger[level] = (message, meta) => lines.push({ level, message, meta });
  return { logger, lines };
}

// ------------------------------------------------- exact strings (lone surrogates)

const loneSurrogates = ['victim\uD800', 'x\uDBFF', '\uDC00lead', 'a\uD83E'];

for (const [kind, open] of [
  ['native in-memory', async () => new InMemorySandboxInstanceStore()],
  ['SQLite', () => SqliteSandboxInstanceStore.open(join(tempDir('surrogates'), 's.db'))],
]) {
  test(`a key with a lone surrogate is refused (TypeError) and touches nothing: ${kind} store`, async () => {
    const store = await open();
    try {
      // The record a U+FFFD replacement would have hit.
      await store.upsert(instance('victim\uFFFD', 'ctr-victim'));
      await store.upsert(instance('x\uFFFD', 'ctr-x'));
      const provider = recordingProvider();
      for (const key of loneSurrogates) {
        await assert.rejects(
          reclaimSandbox({ runId: 'r', sandboxKey: key }, { provider, instances: store }),
          (error) => error instanceof TypeError && /record\.sandboxKey/.test(error.message) && /surrogate/.test(error.message),
        );
        await assert.rejects(store.get(key), TypeError, 'the store itself refuses it too');
        await assert.rejects(store.delete(key), TypeError);
      }
      assert.deepStrictEqual(provider.calls, [], 'nothing destroyed');
      assert.equal((await store.get('victim\uFFFD')).providerSandboxId, 'ctr-victim', 'the look-alike record survives');
      await assert.rejects(store.upsert(instance('k\uD800')), TypeError);
      await assert.rejects(store.upsert({ ...instance('k'), providerSandboxId: 'id\uDFFF' }), TypeError);
    } finally {
      await store.close?.();
    }
  });
}

test('lone surrogates in runId, provider.name or the record a JS store returns are refused by name', async () => {
  const store = { get: async () => instance('k'), delete: async () => assert.fail('no delete') };
  const provider = recordingProvider();
  await assert.rejects(reclaimSandbox({ runId: 'r\uD800', sandboxKey: 'k' }, { provider, instances: store }), /record\.runId/);
  await assert.rejects(
    reclaimSandbox({ runId: 'r', sandboxKey: 'k' }, { provider: recordingProvider('docker\uD800'), instances: store }),
    /options\.provider\.name/,
  );
  const strange = { get: async () => ({ ...instance('k'), providerSandboxId: 'ctr\uDC00' }), delete: async () => assert.fail('no delete') };
  await assert.rejects(reclaimSandbox({ runId: 'r', sandboxKey: 'k' }, { provider, instances: strange }), /providerSandboxId/);
  assert.deepStrictEqual(provider.calls, []);
  // Well-formed astral characters (surrogate pairs) are ordinary keys.
  const crab = new InMemorySandboxInstanceStore();
  await crab.upsert(instance('🦀'));
  assert.equal(await reclaimSandbox({ runId: 'r', sandboxKey: '🦀' }, { provider, instances: crab }), 'destroyed');
  assert.deepStrictEqual(provider.calls, ['ctr-🦀']);
});

test('a key longer than any fixed buffer, ending in a multi-byte character, is never cut to its prefix', async () => {
  const store = new InMemorySandboxInstanceStore();
  const prefix = 'a'.repeat(126);
  await store.upsert(instance(prefix, 'ctr-prefix'));
  const provider = recordingProvider();
  assert.equal(await reclaimSandbox({ runId: 'r', sandboxKey: `${prefix}€` }, { provider, instances: store }), 'not-found');
  assert.deepStrictEqual(provider.calls, []);
  assert.equal((await store.get(prefix)).providerSandboxId, 'ctr-prefix');
});

// ------------------------------------------------- host properties read once

test('record.runId, record.sandboxKey and provider.name are read once each, and what was checked is used', async () => {
  const reads = { runId: 0, sandboxKey: 0, name: 0 };
  const keys = ['k', 'other'];
  const record = {
    get runId() {
      reads.runId += 1;
      return 'run-1';
    },
    get sandboxKey() {
      reads.sandboxKey += 1;
      return keys[reads.sandboxKey - 1] ?? 'later';
    },
  };
  const store = new InMemorySandboxInstanceStore();
  await store.upsert(instance('k'));
  await store.upsert(instance('other'));
  const destroyed = [];
  const provider = {
    get name() {
      reads.name += 1;
      return reads.name === 1 ? 'docker' : 'stranger';
    },
    destroy: ({ id }) => destroyed.push(id),
  };
  const { logger, lines } = recordingLogger();
  await assert.rejects(sandboxReclaimer({ provider, instances: store, logger })(record).then(() => {
    throw new Error('resolved');
  }), /resolved/);
  assert.deepStrictEqual(reads, { runId: 1, sandboxKey: 1, name: 1 });
  assert.deepStrictEqual(destroyed, ['ctr-k'], 'the key that was checked is the one reclaimed');
  assert.equal(await store.get('k'), null);
  assert.notEqual(await store.get('other'), null, 'a second read would have named this record');
  assert.deepStrictEqual(lines.map((l) => l.meta), [{ runId: 'run-1', sandboxKey: 'k' }]);
});

// ------------------------------------------------- hostile thrown values

function hostileValues() {
  const getterThrows = {
    get message() {
      throw new Error('no message for you');
    },
    toString() {
      throw new Error('no string either');
    },
  };
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  return [
    ['a value whose message getter throws', getterThrows],
    ['a revoked Proxy', proxy],
  ];
}

for (const [name, thrown] of hostileValues()) {
  test(`destroy throwing ${name}: still destroy-failed after get, delete; the warn line carries it`, async () => {
    const calls = [];
    const store = {
      get: async (key) => (calls.push(['get', key]), instance(key)),
      delete: async (key) => void calls.push(['delete', key]),
    };
    const { logger, lines } = recordingLogger();
    const provider = { name: 'docker', destroy: () => Promise.reject(thrown) };
    assert.equal(await reclaimSandbox({ runId: 'r', sandboxKey: 'k' }, { provider, instances: store, logger }), 'destroy-failed');
    assert.deepStrictEqual(calls, [['get', 'k'], ['delete', 'k']]);
    assert.equal(lines.length, 1);
    assert.equal(lines[0].level, 'warn');
    assert.equal(lines[0].meta.error, thrown, 'the very value thrown');
  });

  test(`destroy throwing ${name} with a ledger: the leak is recorded with a fallback message`, async () => {
    const store = new InMemorySandboxInstanceStore({ ledger: true });
    await store.upsert(instance('k'));
    const provider = { name: 'docker', destroy: () => { throw thrown; } };
    assert.equal(await reclaimSandbox({ runId: 'r', sandboxKey: 'k' }, { provider, instances: store }), 'destroy-failed');
    assert.equal(await store.get('k'), null);
    const [leak] = await store.listLeaks();
    assert.equal(leak.providerSandboxId, 'ctr-k');
    assert.equal(typeof leak.lastError, 'string');
    assert.ok(leak.lastError.length > 0);
  });
}

// ------------------------------------------------- deadlines on the real clock

test('destroyTimeoutMs: a hanging destroy is aborted and reported with SandboxDestroyTimeoutError', async () => {
  const store = new InMemorySandboxInstanceStore({ ledger: true });
  await store.upsert(instance('k'));
  let signal;
  const provider = { name: 'docker', destroy: (input) => ((signal = input.signal), new Promise(() => {})) };
  const { logger, lines } = recordingLogger();
  const started = Date.now();
  assert.equal(await reclaimSandbox({ runId: 'r', sandboxKey: 'k' }, { provider, instances: store, logger, destroyTimeoutMs: 50 }), 'destroy-failed');
  assert.ok(Date.now() - started >= 45, 'waited for the deadline');
  assert.ok(signal instanceof AbortSignal && signal.aborted, 'the destroy was aborted');
  const error = lines[0].meta.error;
  assert.ok(error instanceof binding.SandboxDestroyTimeoutError && error instanceof Error);
  assert.equal(error.providerSandboxId, 'ctr-k');
  assert.equal(error.timeoutMs, 50);
  assert.equal((await store.listLeaks())[0].lastError, error.message);
  const made = new binding.SandboxDestroyTimeoutError('ctr-1', 250);
  assert.equal(made.message, 'destroying sandbox "ctr-1" did not settle within 250 ms; it was cancelled');
  assert.equal(made.name, 'SandboxDestroyTimeoutError');
});

test('without destroyTimeoutMs the destroy input is exactly { id }, as the reference passes it', async () => {
  const store = new InMemorySandboxInstanceStore();
  await store.upsert(instance('k'));
  let input;
  await reclaimSandbox({ runId: 'r', sandboxKey: 'k' }, { provider: { name: 'docker', destroy: (i) => void (input = i) }, instances: store });
  assert.deepStrictEqual(Object.keys(input), ['id']);
});

test('bad deadlines and leases are TypeErrors naming the option, before any call', async () => {
  const provider = recordingProvider();
  const store = new InMemorySandboxInstanceStore({ ledger: true });
  for (const destroyTimeoutMs of [0, -1, 1.5, NaN, '100', null]) {
    await assert.rejects(reclaimSandbox({ runId: 'r', sandboxKey: 'k' }, { provider, instances: store, destroyTimeoutMs }), /options\.destroyTimeoutMs/);
    await assert.rejects(retryLeaks({ provider, instances: store, destroyTimeoutMs }), /options\.destroyTimeoutMs/);
  }
  for (const leaseMs of [0, -5, 2.5]) await assert.rejects(retryLeaks({ provider, instances: store, leaseMs }), /options\.leaseMs/);
  for (const limit of [-1, 1.5, 2 ** 32]) await assert.rejects(retryLeaks({ provider, instances: store, limit }), /options\.limit/);
  assert.deepStrictEqual(provider.calls, []);
});

// ------------------------------------------------- where options are checked

test('sandboxReclaimer checks its options when made, not when called', () => {
  for (const options of [null, undefined, {}, { provider: { name: 'docker' } }]) {
    assert.throws(() => sandboxReclaimer(options), TypeError);
  }
});

// ------------------------------------------------- native calls per reclaim

test('a reclaim makes at most 4 native calls, whatever path it takes', async () => {
  const counted = ['startReclaim', 'completeOk', 'completeFailed', 'completeInstance', 'completeNoInstance', 'completeJson', 'completeLeaks', 'timeout', 'stop', 'abandon', 'reclaimFailedMessage', 'destroyTimeoutMessage', 'reclaimDeadline'];
  const originals = Object.fromEntries(counted.map((name) => [name, native[name]]));
  let calls = 0;
  for (const name of counted) native[name] = (...args) => ((calls += 1), originals[name](...args));
  try {
    const paths = [
      ['destroyed', () => undefined, false],
      ['destroy-failed', () => Promise.reject(new Error('down')), false],
      ['reclaimer destroy-failed', () => Promise.reject(new Error('down')), true],
    ];
    for (const [name, destroy, reclaimer] of paths) {
      const map = new Map([['k', instance('k')]]);
      const store = { get: async (key) => map.get(key) ?? null, delete: async (key) => void map.delete(key) };
      const options = { provider: { name: 'docker', destroy }, instances: store, logger: recordingLogger().logger };
      calls = 0;
      const call = reclaimer ? sandboxReclaimer(options)({ runId: 'r', sandboxKey: 'k' }) : reclaimSandbox({ runId: 'r', sandboxKey: 'k' }, options);
      await call.catch(() => undefined);
      assert.ok(calls <= 4, `${name}: ${calls} native calls`);
      assert.ok(calls >= 4, `${name}: every answer went through the machine (${calls})`);
    }
  } finally {
    Object.assign(native, originals);
  }
});
