// Runs the parity vectors of tests/vectors/ against any implementation of the
// reclaim API (the reference module or our binding), on a virtual clock.
// Format: tests/vectors/README.md.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const vectorsDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'vectors');
const DEFAULT_CLOCK_START = 1_700_000_000_000;

/**
 * The binding's driver, whose clock is swapped for the virtual one while a
 * vector runs. Loaded on first use: the reference suite runs before the
 * addon is built.
 */
const bindingDriver = () => require('../../bindings-node/lib/driver.cjs');

/** Every case of every vector file, in file order. */
export function loadVectors() {
  return readdirSync(vectorsDir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .flatMap((file) => JSON.parse(readFileSync(join(vectorsDir, file), 'utf8')).cases);
}

/** Whether the reference can express the vector: its APIs, without our options. */
export function referenceCanRun(vector) {
  return vector.api !== 'retryLeaks' && vector.options === undefined;
}

/**
 * A virtual clock: timers fire in (time, order set) order, and only when
 * nothing else can run (every microtask and immediate has settled).
 */
export function virtualClock(start) {
  let now = start;
  let order = 0;
  const timers = new Map();
  const settle = () => new Promise((done) => setImmediate(done));
  return {
    start,
    now: () => now,
    setTimer(callback, ms) {
      const handle = ++order;
      timers.set(handle, { at: now + Math.max(0, ms), order: handle, callback });
      return handle;
    },
    clearTimer(handle) {
      timers.delete(handle);
    },
    /** Runs the world until `promise` settles; fails if it never can. */
    async runUntil(promise) {
      let settled = false;
      promise.then(
        () => (settled = true),
        () => (settled = true),
      );
      for (;;) {
        await settle();
        if (settled) return;
        let next;
        for (const [handle, timer] of timers) {
          if (next === undefined || timer.at < next[1].at || (timer.at === next[1].at && timer.order < next[1].order)) next = [handle, timer];
        }
        if (next === undefined) throw new Error('the vector hangs: nothing scheduled and the call has not settled');
        timers.delete(next[0]);
        now = Math.max(now, next[1].at);
        next[1].callback();
      }
    },
  };
}

/**
 * Acts out a host method's scripted `behaviour` ({mode, message, value,
 * latencyMs}): `produce` makes the successful answer when it settles; an
 * error made is kept in `thrown[source]`.
 */
function perform(behaviour, thrown, source, clock, produce) {
  const latency = behaviour?.latencyMs ?? 0;
  const later = (settle) =>
    latency === 0 ? Promise.resolve().then(settle) : new Promise((resolve) => clock.setTimer(() => resolve(), latency)).then(settle);
  switch (behaviour?.mode ?? 'resolve') {
    case 'resolve':
      return later(produce);
    case 'return': {
      const produced = produce();
      return 'value' in behaviour ? behaviour.value : produced;
    }
    case 'hang':
      return new Promise(() => {});
    case 'throw':
      thrown[source] = new Error(behaviour.message);
      throw thrown[source];
    case 'reject':
      return later(() => {
        thrown[source] = new Error(behaviour.message);
        throw thrown[source];
      });
    default:
      throw new Error(`unknown behaviour mode ${behaviour.mode}`);
  }
}

const sameSandbox = (a, b) => a.provider === b.provider && a.providerSandboxId === b.providerSandboxId;

/** Scripted store, provider and logger that record every call. */
export function buildFixture(vector, { offerLedger, clock = virtualClock(vector.clock?.start ?? DEFAULT_CLOCK_START) }) {
  const calls = [];
  const logs = [];
  const thrown = {};
  const aborted = [];
  const signals = [];
  const at = () => clock.now() - clock.start;
  const records = new Map(vector.store.instances.map((record) => [record.key, structuredClone(record)]));
  const leaks = (vector.store.leaks ?? []).map((leak) => {
    const copy = structuredClone(leak);
    if (copy.claimedUntil !== undefined) copy.claimedUntil += clock.start;
    return copy;
  });
  const record = (on, method, args) => calls.push({ on, method, args, at: at() });
  const script = vector.store;
  const store = {
    get(key) {
      record('store', 'get', [key]);
      return perform(script.get, thrown, 'get', clock, () => (records.has(key) ? structuredClone(records.get(key)) : null));
    },
    upsert(value) {
      records.set(value.key, structuredClone(value));
      return Promise.resolve();
    },
    delete(key) {
      record('store', 'delete', [key]);
      return perform(script.delete, thrown, 'delete', clock, () => records.delete(key));
    },
  };
  if (offerLedger && script.ledger) {
    store.deleteRecordingLeak = function (key, leak) {
      const { failedAt, ...rest } = leak;
      assert.equal(typeof failedAt, 'number', 'leak.failedAt is epoch milliseconds');
      record('store', 'deleteRecordingLeak', [key, rest]);
      return perform(script.delete, thrown, 'delete', clock, () => {
        records.delete(key);
        const { errorMessage, ...identity } = rest;
        const entry = { ...identity, lastError: errorMessage, failedAt, attempts: 1 };
        const known = leaks.findIndex((existing) => sameSandbox(existing, entry));
        if (known < 0) leaks.push(entry);
        else leaks[known] = { ...entry, attempts: leaks[known].attempts + 1 };
      });
    };
    store.claimLeaks = function (provider, limit, leaseMs) {
      record('store', 'claimLeaks', [provider, limit, leaseMs]);
      return perform(script.claimLeaks, thrown, 'claimLeaks', clock, () => {
        const now = clock.now();
        const taken = [];
        for (const leak of leaks) {
          const free = leak.claimedUntil === undefined || leak.claimedUntil <= now;
          if (taken.length < limit && leak.provider === provider && free) {
            leak.claimedUntil = now + leaseMs;
            const { claimedUntil, ...entry } = leak;
            taken.push(structuredClone(entry));
          }
        }
        return taken;
      });
    };
    store.resolveLeak = function (entry) {
      record('store', 'resolveLeak', [entry.providerSandboxId]);
      return perform(script.resolveLeak, thrown, 'resolveLeak', clock, () => {
        const index = leaks.findIndex((leak) => sameSandbox(leak, entry));
        if (index >= 0) leaks.splice(index, 1);
      });
    };
    store.recordRetryFailure = function (entry, message, failedAt) {
      record('store', 'recordRetryFailure', [entry.providerSandboxId, message, failedAt - clock.start]);
      return perform(script.recordRetryFailure, thrown, 'recordRetryFailure', clock, () => {
        const leak = leaks.find((known) => sameSandbox(known, entry));
        if (leak !== undefined) {
          leak.attempts += 1;
          leak.lastError = message;
          leak.failedAt = failedAt;
          delete leak.claimedUntil;
        }
      });
    };
  }
  const provider = {
    name: vector.provider.name,
    destroy(input) {
      const { id, signal, ...rest } = input;
      record('provider', 'destroy', [{ id, ...structuredClone(rest) }]);
      signals.push(signal);
      signal?.addEventListener('abort', () => aborted.push(id));
      return perform(vector.provider.destroy?.[id], thrown, 'destroy', clock, () => {});
    },
  };
  const logger = {};
  for (const level of ['warn', 'errors', 'sandbox']) {
    logger[level] = (message, meta) => logs.push({ level, message, meta });
  }
  return {
    clock,
    options: { provider, instances: store, ...(vector.logger ? { logger } : {}) },
    calls,
    logs,
    thrown,
    aborted,
    signals,
    instancesAfter: () => [...records.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
    leaksAfter: () => leaks.map(({ failedAt, claimedUntil, ...rest }) => rest),
  };
}

/** Starts the vector's call on `impl` with `options` (its vector options merged in). */
export function callOf(vector, impl, options) {
  const merged = { ...options, ...vector.options };
  switch (vector.api) {
    case 'reclaimSandbox':
      return () => impl.reclaimSandbox(vector.record, merged);
    case 'sandboxReclaimer':
      return () => impl.sandboxReclaimer(merged)(vector.record);
    case 'retryLeaks':
      return () => impl.retryLeaks(merged);
    default:
      throw new Error(`unknown api ${vector.api}`);
  }
}

/** Asserts a log line's meta value against the vector's. */
export function assertMetaValue(actual, expected, thrown, impl, where) {
  if (expected !== null && typeof expected === 'object' && '$hostError' in expected) {
    assert.equal(actual, thrown[expected.$hostError], `${where} is the host's own error`);
  } else if (expected !== null && typeof expected === 'object' && '$timeoutError' in expected) {
    const want = expected.$timeoutError;
    assert.ok(actual instanceof impl.SandboxDestroyTimeoutError, `${where} is a SandboxDestroyTimeoutError`);
    assert.ok(actual instanceof Error);
    assert.equal(actual.name, 'SandboxDestroyTimeoutError');
    assert.equal(actual.providerSandboxId, want.providerSandboxId);
    assert.equal(actual.timeoutMs, want.timeoutMs);
    assert.equal(actual.message, want.message);
  } else {
    assert.equal(actual, expected, where);
  }
}

/** Asserts the logged lines against the vector's. */
export function assertLogs(actual, expected, thrown, impl) {
  assert.equal(actual.length, expected.length, 'number of log lines');
  expected.forEach((line, index) => {
    const got = actual[index];
    assert.equal(got.level, line.level, `log ${index} level`);
    assert.equal(got.message, line.message, `log ${index} message`);
    assert.deepStrictEqual(Object.keys(got.meta), Object.keys(line.meta), `log ${index} meta keys in order`);
    for (const [key, value] of Object.entries(line.meta)) assertMetaValue(got.meta[key], value, thrown, impl, `log ${index} meta.${key}`);
  });
}

/**
 * Runs one vector against `impl` ({reclaimSandbox, sandboxReclaimer,
 * retryLeaks, SandboxReclaimFailedError, SandboxDestroyTimeoutError}) and
 * asserts every expectation. `supportsLedger` is false for the reference,
 * which predates the ledger: it must then make a plain `delete` where the
 * vector expects the ledger step. `usesDriver`: the implementation runs on
 * the binding's driver, whose clock is made virtual too.
 */
export async function runVector(vector, impl, { supportsLedger, usesDriver = supportsLedger }) {
  const fixture = buildFixture(vector, { offerLedger: supportsLedger });
  const clock = fixture.clock;
  const driver = usesDriver ? bindingDriver() : undefined;
  const previous = driver?.setClock(clock);
  let result;
  let error;
  let failed = false;
  try {
    const promise = Promise.resolve().then(callOf(vector, impl, fixture.options));
    await clock.runUntil(promise);
    result = await promise;
  } catch (caught) {
    failed = true;
    error = caught;
  } finally {
    driver?.setClock(previous);
  }
  const elapsed = clock.now() - clock.start;

  const expected = vector.expect;
  if (expected.error === undefined) {
    assert.equal(failed, false, `expected success, got ${error?.stack ?? error}`);
    assert.deepStrictEqual(result, expected.result ?? undefined, 'result');
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
  const actualCalls = fixture.calls.map((call, index) => {
    const { at, ...rest } = call;
    return expectedCalls[index]?.at === undefined ? rest : call;
  });
  assert.deepStrictEqual(actualCalls, expectedCalls, 'calls on store and provider');
  // A destroy gets an AbortSignal exactly when a deadline applies.
  const cancellable = vector.api === 'retryLeaks' || vector.options?.destroyTimeoutMs !== undefined;
  for (const signal of fixture.signals) assert.equal(signal instanceof AbortSignal, cancellable && usesDriver, 'destroy input.signal');
  assertLogs(fixture.logs, expected.logs, fixture.thrown, impl);
  assert.deepStrictEqual(fixture.instancesAfter(), expected.instancesAfter, 'store contents afterwards');
  if (supportsLedger && expected.leaksAfter !== undefined) {
    assert.deepStrictEqual(fixture.leaksAfter(), expected.leaksAfter, 'leak ledger afterwards');
  }
  assert.deepStrictEqual(fixture.aborted, expected.aborted ?? [], 'cancelled destroys');
  if (expected.elapsedMs !== undefined) assert.equal(elapsed, expected.elapsedMs, 'virtual time at the end');
}
