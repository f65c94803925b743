// Runs the parity vectors of tests/vectors/ against any implementation of the
// reclaim API (the reference module or our binding). Format: tests/vectors/README.md.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const vectorsDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'vectors');

/** Every case of every vector file, in file order. */
export function loadVectors() {
  return readdirSync(vectorsDir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .flatMap((file) => JSON.parse(readFileSync(join(vectorsDir, file), 'utf8')).cases);
}

/**
 * Acts out a host method's scripted `behaviour` ({mode, message, value}):
 * `produce` makes the successful answer; an error made is kept in `thrown`.
 */
function perform(behaviour, thrown, source, produce) {
  switch (behaviour?.mode ?? 'resolve') {
    case 'resolve':
      return Promise.resolve().then(produce);
    case 'return': {
      const produced = produce();
      return 'value' in behaviour ? behaviour.value : produced;
    }
    case 'throw':
      thrown[source] = new Error(behaviour.message);
      throw thrown[source];
    case 'reject':
      thrown[source] = new Error(behaviour.message);
      return Promise.reject(thrown[source]);
    default:
      throw new Error(`unknown behaviour mode ${behaviour.mode}`);
  }
}

/** Scripted store, provider and logger that record every call. */
export function buildFixture(vector, { offerLedger }) {
  const calls = [];
  const logs = [];
  const thrown = {};
  const records = new Map(vector.store.instances.map((record) => [record.key, structuredClone(record)]));
  const leaks = [];
  const store = {
    get(key) {
      calls.push({ on: 'store', method: 'get', args: [key] });
      return perform(vector.store.get, thrown, 'get', () => (records.has(key) ? structuredClone(records.get(key)) : null));
    },
    upsert(record) {
      records.set(record.key, structuredClone(record));
      return Promise.resolve();
    },
    delete(key) {
      calls.push({ on: 'store', method: 'delete', args: [key] });
      return perform(vector.store.delete, thrown, 'delete', () => records.delete(key));
    },
  };
  if (offerLedger && vector.store.ledger) {
    store.deleteRecordingLeak = function (key, leak) {
      const { failedAt, ...rest } = leak;
      assert.equal(typeof failedAt, 'number', 'leak.failedAt is epoch milliseconds');
      calls.push({ on: 'store', method: 'deleteRecordingLeak', args: [key, rest] });
      return perform(vector.store.delete, thrown, 'delete', () => {
        records.delete(key);
        const { errorMessage, ...identity } = rest;
        leaks.push({ ...identity, lastError: errorMessage, attempts: 1 });
      });
    };
  }
  const provider = {
    name: vector.provider.name,
    destroy(args) {
      calls.push({ on: 'provider', method: 'destroy', args: [structuredClone(args)] });
      return perform(vector.provider.destroy?.[args.id], thrown, 'destroy', () => {});
    },
  };
  const logger = {};
  for (const level of ['warn', 'errors', 'sandbox']) {
    logger[level] = (message, meta) => logs.push({ level, message, meta });
  }
  return {
    options: { provider, instances: store, ...(vector.logger ? { logger } : {}) },
    calls,
    logs,
    thrown,
    instancesAfter: () => [...records.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
    leaksAfter: () => leaks,
  };
}

/**
 * Runs one vector against `impl` ({reclaimSandbox, sandboxReclaimer,
 * SandboxReclaimFailedError}) and asserts every expectation.
 * `supportsLedger` is false for the reference, which predates the ledger: it
 * must then make a plain `delete` where the vector expects the ledger step.
 */
export async function runVector(vector, impl, { supportsLedger }) {
  const fixture = buildFixture(vector, { offerLedger: supportsLedger });
  const call =
    vector.api === 'reclaimSandbox'
      ? () => impl.reclaimSandbox(vector.record, fixture.options)
      : () => impl.sandboxReclaimer(fixture.options)(vector.record);

  let result;
  let error;
  let failed = false;
  try {
    result = await call();
  } catch (caught) {
    failed = true;
    error = caught;
  }

  const expected = vector.expect;
  if (expected.error === undefined) {
    assert.equal(failed, false, `expected success, got ${error}`);
    assert.equal(result, expected.result ?? undefined, 'result');
  } else {
    assert.equal(failed, true, 'expected an error');
    if (expected.error.kind === 'hostError') {
      assert.ok(fixture.thrown[expected.error.source], 'the host fault was raised');
      assert.equal(error, fixture.thrown[expected.error.source], 'rejects with the very host error');
    } else {
      assert.ok(error instanceof impl.SandboxReclaimFailedError, 'instanceof SandboxReclaimFailedError');
      assert.ok(error instanceof Error, 'instanceof Error');
      assert.equal(error.name, 'SandboxReclaimFailedError');
      assert.equal(error.message, expected.error.message);
      assert.equal(error.runId, expected.error.runId);
      assert.equal(error.sandboxKey, expected.error.sandboxKey);
    }
  }

  const expectedCalls = supportsLedger
    ? expected.calls
    : expected.calls.map((c) => (c.method === 'deleteRecordingLeak' ? { ...c, method: 'delete', args: [c.args[0]] } : c));
  assert.deepStrictEqual(fixture.calls, expectedCalls, 'calls on store and provider');

  assert.equal(fixture.logs.length, expected.logs.length, 'number of log lines');
  expected.logs.forEach((line, index) => {
    const actual = fixture.logs[index];
    assert.equal(actual.level, line.level, `log ${index} level`);
    assert.equal(actual.message, line.message, `log ${index} message`);
    assert.deepStrictEqual(Object.keys(actual.meta), Object.keys(line.meta), `log ${index} meta keys in order`);
    for (const [key, value] of Object.entries(line.meta)) {
      if (value !== null && typeof value === 'object' && '$hostError' in value) {
        assert.equal(actual.meta[key], fixture.thrown[value.$hostError], `log ${index} meta.${key} is the host's error`);
      } else {
        assert.equal(actual.meta[key], value, `log ${index} meta.${key}`);
      }
    }
  });

  assert.deepStrictEqual(fixture.instancesAfter(), expected.instancesAfter, 'store contents afterwards');
  if (supportsLedger && expected.leaksAfter !== undefined) {
    assert.deepStrictEqual(fixture.leaksAfter(), expected.leaksAfter, 'leak ledger afterwards');
  }
}
