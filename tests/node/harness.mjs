// Runs the parity vectors of tests/vectors/ against any implementation of the
// reclaim API (the reference module or our binding), on a virtual clock; and
// the fleet vectors (reclaimAll, reconcile) against the binding, whose native
// in-memory store sits behind a recording, scripting proxy.
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

/** The fleet passes' APIs (README "Fleet passes"): their own runner below. */
export const FLEET_APIS = new Set(['reclaimAll', 'reconcile']);

/** Whether `vector` is a fleet pass's case. */
export const isFleet = (vector) => FLEET_APIS.has(vector.api);

/** Whether the reference can express the vector: its APIs, without our options. */
export function referenceCanRun(vector) {
  return !isFleet(vector) && vector.api !== 'retryLeaks' && vector.options === undefined;
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

/**
 * A fleet case's logger: records every line; a level named in
 * `vector.loggerThrows` then throws an Error with that message (synchronously,
 * as a broken logger would).
 */
function fleetLogger(vector, record) {
  const logger = {};
  for (const level of ['warn', 'errors', 'sandbox']) {
    logger[level] = (message, meta) => {
      record({ level, message, meta });
      const thrown = vector.loggerThrows?.[level];
      if (thrown !== undefined) throw new Error(thrown);
    };
  }
  return logger;
}

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

// ------------------------------------------------------------ fleet passes

/**
 * Acts out a fleet script (a Behaviour) on the virtual clock. `produce()`
 * makes the answer (the native store's call, made at once; a listing);
 * `value()` is a `return`'s value. An error made is kept under every name in
 * `sources` (e.g. `resolveLeak` and `resolveLeak:c1`).
 */
function act(behaviour, { thrown, sources, clock, produce, value, settling }) {
  const latency = behaviour?.latencyMs ?? 0;
  const delay = () => new Promise((resolve) => clock.setTimer(resolve, latency));
  const fail = () => {
    const error = new Error(behaviour.message);
    for (const source of sources) thrown[source] ??= error; // the first: a pass rejects with its first store error
    return error;
  };
  // `settling` runs as a successful answer settles, just before it is handed over.
  const settled = (answer) => {
    if (settling === undefined) return answer;
    return Promise.resolve(answer).then(async (got) => {
      await settling();
      return got;
    });
  };
  switch (behaviour?.mode ?? 'resolve') {
    case 'resolve': {
      const answer = Promise.resolve(produce());
      answer.catch(() => {}); // read below, after the delay
      return settled(latency === 0 ? answer : delay().then(() => answer));
    }
    case 'return': {
      const answer = 'value' in behaviour ? value() : produce();
      return settled(latency === 0 ? answer : delay().then(() => answer));
    }
    case 'hang':
      return new Promise(() => {});
    case 'throw':
      throw fail();
    case 'reject':
      return (latency === 0 ? Promise.resolve() : delay()).then(() => {
        throw fail();
      });
    default:
      throw new Error(`unknown behaviour mode ${behaviour.mode}`);
  }
}

/** How each recorded store method's arguments appear in `expect.calls` (times relative). */
function storeRecorders(rel) {
  const leakOf = (leak) => {
    const { failedAt, ...rest } = leak;
    assert.equal(typeof failedAt, 'number', 'leak.failedAt is epoch milliseconds');
    return rest;
  };
  return {
    get: (key) => [key],
    delete: (key) => [key],
    deleteRecordingLeak: (key, leak) => [key, leakOf(leak)],
    listStale: (olderThan, limit) => [rel(olderThan), limit],
    expireIdle: (key, updatedAt, leak) => [key, rel(updatedAt), leakOf(leak)],
    dueLeaks: (provider, limit, leaseMs, now) => [provider, limit, leaseMs ?? null, rel(now)],
    claimSweep: (provider, holder, leaseMs, now) => [provider, '$holder', leaseMs, rel(now)],
    sandboxReferences: (provider, destroyedSince) => [provider, rel(destroyedSince)],
    registeredSandboxes: (provider, since) => [provider, rel(since)],
    resolveLeak: (entry) => [entry.providerSandboxId],
    deferLeak: (entry, message, failedAt, nextAttemptAt) => [entry.providerSandboxId, message, rel(failedAt), rel(nextAttemptAt)],
    recordLeak: (leak, reason, nextAttemptAt) => [leakOf(leak), reason, rel(nextAttemptAt)],
    appendAudit: (entries) => [entries.length],
    releaseSweep: (provider, holder) => [provider, '$holder'],
    prune: (provider, registryBefore, auditBefore) => [provider, rel(registryBefore), rel(auditBefore)],
    // The scoped reads (README "Scoped sweeps"): the mark is the store's own number, recorded as "$mark".
    sweepMark: (provider) => [provider],
    referencedAmong: (provider, ids, destroyedSince, mark) => {
      assert.ok(Array.isArray(ids), 'referencedAmong is handed an array of ids');
      assert.ok(Number.isInteger(mark) && mark >= 0, 'referencedAmong is handed the mark as a whole number');
      return [provider, [...ids], rel(destroyedSince), '$mark'];
    },
    registeredAmong: (provider, ids, since) => {
      assert.ok(Array.isArray(ids), 'registeredAmong is handed an array of ids');
      return [provider, [...ids], rel(since)];
    },
    lookupCandidates: (provider, since, limit) => [provider, rel(since), limit],
    lookupChecked: (provider, gone, checked, now) => {
      assert.ok(Array.isArray(gone) && Array.isArray(checked), 'lookupChecked is handed arrays of ids');
      return [provider, [...gone], [...checked], rel(now)];
    },
  };
}

/** Store methods the proxy passes through unrecorded (seeding and inspection). */
const UNRECORDED = ['upsert', 'listLeaks', 'countLeaks', 'listAudit', 'records', 'claimLeaks', 'recordRetryFailure'];

/**
 * A fleet case's world on `clock`: the binding's native in-memory store
 * seeded from the case and wrapped by a proxy that records and scripts
 * every call, scripted providers, a logger and a progress callback.
 */
export async function buildFleetFixture(vector, binding, clock) {
  const start = clock.start;
  const abs = (t) => (t === null || t === undefined ? t : t + start);
  const rel = (t) => (t === null || t === undefined ? t : t - start);
  const at = () => clock.now() - start;
  const calls = [];
  const logs = [];
  const progress = [];
  const thrown = {};
  const aborted = [];
  const holders = [];
  const native = new binding.InMemorySandboxInstanceStore({ ledger: vector.store.ledger !== false });
  for (const record of vector.store.instances ?? []) await native.upsert({ ...record, updatedAt: abs(record.updatedAt) });
  // `store.registered`: records written then deleted, so the registry names
  // their sandboxes with no record left (seeded unrecorded, before the pass).
  const seededKeys = new Set((vector.store.instances ?? []).map((record) => record.key));
  for (const record of vector.store.registered ?? []) {
    assert.ok(!seededKeys.has(record.key), `store.registered key ${JSON.stringify(record.key)} is not also in store.instances`);
    await native.upsert({ ...record, updatedAt: abs(record.updatedAt) });
    await native.delete(record.key);
  }
  for (const leak of vector.store.leaks ?? []) {
    const { reason = 'destroy-failed', nextAttemptAt, attempts = 1, failedAt, ...rest } = leak;
    for (let i = 0; i < attempts; i++) await native.recordLeak({ ...rest, failedAt: abs(failedAt ?? 0) }, reason, abs(nextAttemptAt ?? 0));
  }
  for (const sweep of vector.store.sweeps ?? []) {
    assert.equal(await native.claimSweep(sweep.provider, sweep.holder, sweep.leaseMs, start), true, 'seeded sweep lease');
  }
  for (const row of vector.store.audit ?? []) await native.appendAudit([{ ...row, at: abs(row.at) }]);

  const scripts = vector.store.scripts ?? {};
  const recorders = storeRecorders(rel);
  const store = {};
  for (const [method, record] of Object.entries(recorders)) {
    if (typeof native[method] !== 'function') continue; // a store without a ledger has no ledger methods
    store[method] = function (...args) {
      assert.equal(this, store, `store.${method} is called as a method`);
      const recorded = record(...args);
      calls.push({ on: 'store', method, args: recorded, at: at() });
      if (method === 'claimSweep' || method === 'releaseSweep') holders.push(args[1]);
      const keyed = `${method}:${recorded[0]}`;
      const behaviour = typeof recorded[0] === 'string' && keyed in scripts ? scripts[keyed] : scripts[method];
      const produce = () => native[method](...args);
      if (behaviour === undefined) return produce();
      return act(behaviour, { thrown, sources: [method, keyed], clock, produce, value: () => structuredClone(behaviour.value) });
    };
  }
  for (const method of UNRECORDED) {
    if (typeof native[method] === 'function') store[method] = (...args) => native[method](...args);
  }

  // A listing's `meanwhile` (README "Meanwhile"): what other processes do to
  // the store while the listing is out, applied to the native store as it
  // settles (not recorded as calls). The in-memory store answers at once.
  const meanwhile = async (ops) => {
    for (const op of ops) {
      if (op.op === 'delete') await native.delete(op.key);
      else if (op.op === 'upsert') await native.upsert({ ...op.record, updatedAt: abs(op.record.updatedAt) });
      else if (op.op === 'resolveLeaks') {
        for (const entry of await native.claimLeaks(op.provider, 1000, 60_000)) {
          assert.equal(await native.resolveLeak(entry), true, 'meanwhile: another host resolves the leak');
        }
      } else throw new Error(`unknown meanwhile op ${op.op}`);
    }
  };
  const listedValue = (value) =>
    (value ?? []).map((sandbox) => ('createdAt' in sandbox ? { ...sandbox, createdAt: abs(sandbox.createdAt) } : { ...sandbox }));
  const providers = vector.providers.map((spec) => {
    const provider = {
      name: spec.name,
      destroy(input) {
        assert.equal(this, provider, 'destroy is called as a method');
        const { id, signal, ...rest } = input;
        calls.push({ on: 'provider', name: spec.name, method: 'destroy', args: [{ id, ...structuredClone(rest) }], at: at() });
        if (signal !== undefined) {
          assert.ok(signal instanceof AbortSignal, 'destroy input.signal is an AbortSignal');
          signal.addEventListener('abort', () => aborted.push(id));
        }
        return act(spec.destroy?.[id], { thrown, sources: ['destroy', `destroy:${id}`], clock, produce: () => undefined, value: () => spec.destroy[id].value });
      },
    };
    if (spec.owner !== undefined) provider.owner = spec.owner;
    if (spec.list !== undefined) {
      provider.list = function (...args) {
        assert.equal(this, provider, 'list is called as a method');
        calls.push({ on: 'provider', name: spec.name, method: 'list', args: [], at: at() });
        const signal = args[0]?.signal;
        if (signal !== undefined) {
          assert.ok(signal instanceof AbortSignal, 'list input.signal is an AbortSignal');
          signal.addEventListener('abort', () => aborted.push(`list:${spec.name}`));
        } else {
          assert.equal(args.length, 0, 'list() without a deadline gets no argument');
        }
        const listed = () => listedValue(spec.list.value);
        const settling = spec.list.meanwhile === undefined ? undefined : () => meanwhile(spec.list.meanwhile);
        return act(spec.list, { thrown, sources: ['list', `list:${spec.name}`], clock, produce: listed, value: listed, settling });
      };
    }
    if (spec.lookup !== undefined) {
      provider.lookup = function (input) {
        assert.equal(this, provider, 'lookup is called as a method');
        const { ids, signal, ...rest } = input;
        assert.deepEqual(rest, {}, 'lookup is handed { ids, signal? }');
        calls.push({ on: 'provider', name: spec.name, method: 'lookup', args: [{ ids: [...ids] }], at: at() });
        if (signal !== undefined) {
          assert.ok(signal instanceof AbortSignal, 'lookup input.signal is an AbortSignal');
          signal.addEventListener('abort', () => aborted.push(`lookup:${spec.name}`));
        }
        const found = () => listedValue(spec.lookup.value);
        return act(spec.lookup, { thrown, sources: ['lookup', `lookup:${spec.name}`], clock, produce: found, value: found });
      };
    }
    return provider;
  });

  const logger = fleetLogger(vector, (line) => logs.push(line));

  const options = { providers, instances: store, ...vector.options };
  if (vector.api === 'reclaimAll' && vector.logger) options.logger = logger;
  if (vector.progress) {
    options.onProgress = (event) => {
      progress.push(event);
      if (vector.progressThrows) throw new Error('progress callback down');
    };
  }
  return {
    clock,
    native,
    options,
    calls,
    logs,
    progress,
    thrown,
    aborted,
    holders,
    rel,
    instancesAfter: () => native.records().map((record) => ({ ...record, updatedAt: rel(record.updatedAt) })),
    leaksAfter: async () => (await native.listLeaks()).map(({ failedAt, ...rest }) => rest),
    auditAfter: async () => (await native.listAudit()).map((row) => ({ ...row, at: rel(row.at) })),
  };
}

/**
 * `actual` matches `expected` partially: each key of an expected object
 * matches (extra keys in `actual` are fine); arrays match element by element
 * with the same length; anything else is equal.
 */
export function assertPartial(actual, expected, path = 'report') {
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${path} is an array`);
    assert.equal(actual.length, expected.length, `${path}.length`);
    expected.forEach((item, index) => assertPartial(actual[index], item, `${path}[${index}]`));
  } else if (expected !== null && typeof expected === 'object') {
    assert.ok(actual !== null && typeof actual === 'object', `${path} is an object, got ${JSON.stringify(actual)}`);
    for (const [key, value] of Object.entries(expected)) assertPartial(actual[key], value, `${path}.${key}`);
  } else {
    assert.deepStrictEqual(actual, expected, path);
  }
}

/** The logged lines against a fleet case's: `$hostError: destroy` is that sandbox's destroy's own error. */
function assertFleetLogs(actual, expected, thrown, impl) {
  assert.equal(actual.length, expected.length, 'number of log lines');
  expected.forEach((line, index) => {
    const got = actual[index];
    assert.equal(got.level, line.level, `log ${index} level`);
    assert.equal(got.message, line.message, `log ${index} message`);
    assert.deepStrictEqual(Object.keys(got.meta), Object.keys(line.meta), `log ${index} meta keys in order`);
    for (const [key, value] of Object.entries(line.meta)) {
      const source = value?.$hostError;
      const errors = source !== undefined && line.meta.providerSandboxId !== undefined ? { [source]: thrown[`${source}:${line.meta.providerSandboxId}`] } : thrown;
      assertMetaValue(got.meta[key], value, errors, impl, `log ${index} meta.${key}`);
    }
  });
}

/**
 * Runs one fleet case (`reclaimAll` or `reconcile`) on the binding's driver
 * with the virtual clock and asserts everything in `expect`.
 */
export async function runFleetVector(vector, binding) {
  const clock = virtualClock(vector.clock?.start ?? DEFAULT_CLOCK_START);
  const fixture = await buildFleetFixture(vector, binding, clock);
  const driver = bindingDriver();
  const previous = driver.setClock(clock);
  let result;
  let error;
  let failed = false;
  try {
    const options = fixture.options;
    if (vector.stopAtMs !== undefined) {
      const controller = new AbortController();
      options.signal = controller.signal;
      clock.setTimer(() => controller.abort(), vector.stopAtMs);
    }
    const call = () => (vector.api === 'reclaimAll' ? binding.reclaimAll(vector.records, options) : binding.reconcile(options));
    const promise = Promise.resolve().then(call);
    await clock.runUntil(promise);
    result = await promise;
  } catch (caught) {
    failed = true;
    error = caught;
  } finally {
    driver.setClock(previous);
  }
  const elapsed = clock.now() - clock.start;
  const expected = vector.expect;

  if (expected.error === undefined) {
    assert.equal(failed, false, `expected success, got ${error?.stack ?? error}`);
    assert.equal(Object.getPrototypeOf(result), Object.prototype, 'the report is a plain object');
    if (expected.report !== undefined) assertPartial(result, expected.report);
  } else {
    assert.equal(failed, true, `expected an error, got ${JSON.stringify(result)}`);
    assert.equal(expected.error.kind, 'hostError', 'fleet passes reject only with a host error');
    assert.ok(fixture.thrown[expected.error.source], 'the host fault was raised');
    assert.equal(error, fixture.thrown[expected.error.source], 'rejects with the very host error');
  }
  const actualCalls = fixture.calls.map((call, index) => {
    const { at, ...rest } = call;
    return expected.calls[index]?.at === undefined ? rest : call;
  });
  assert.deepStrictEqual(actualCalls, expected.calls, 'calls on store and providers');
  assert.ok(new Set(fixture.holders).size <= 1, 'one sweep holder per pass');
  for (const holder of fixture.holders) {
    assert.ok(holder.startsWith(`${fixture.options.host ?? ''}`), `holder ${holder} names the host`);
  }
  if (expected.logs !== undefined) assertFleetLogs(fixture.logs, expected.logs, fixture.thrown, binding);
  else assert.deepStrictEqual(fixture.logs, [], 'no log lines');
  if (expected.progress !== undefined) assert.deepStrictEqual(fixture.progress, expected.progress, 'progress events');
  if (expected.instancesAfter !== undefined) assert.deepStrictEqual(fixture.instancesAfter(), expected.instancesAfter, 'store contents afterwards');
  if (expected.leaksAfter !== undefined) assert.deepStrictEqual(await fixture.leaksAfter(), expected.leaksAfter, 'leak ledger afterwards');
  if (expected.auditAfter !== undefined) assert.deepStrictEqual(await fixture.auditAfter(), expected.auditAfter, 'audit log afterwards');
  assert.deepStrictEqual(fixture.aborted, expected.aborted ?? [], 'cancelled destroys and listings');
  if (expected.elapsedMs !== undefined) assert.equal(elapsed, expected.elapsedMs, 'virtual time at the end');
}

/**
 * Whether the reference can check a `reclaimAll` case record by record: one
 * provider, and none of what only a fleet pass has (budget, stop,
 * per-provider slots, deadlines).
 */
export function referenceCanCheckFleet(vector) {
  const options = vector.options ?? {};
  return (
    vector.api === 'reclaimAll' &&
    vector.providers.length === 1 &&
    vector.stopAtMs === undefined &&
    ['budgetMs', 'perProviderConcurrency', 'destroyTimeoutMs'].every((name) => options[name] === undefined)
  );
}

/**
 * Runs the reference's `reclaimSandbox` record by record (sequentially,
 * skipping a record whose key an earlier record had) against a fresh
 * scripted JS store seeded like the case, and asserts that each record's
 * outcome is the vector's report outcome and that, per sandbox key, the
 * store/provider calls and log lines are the vector's filtered to that key.
 * The reference knows no ledger: a `deleteRecordingLeak(key, leak)` there is
 * a `delete(key)` here.
 */
export async function runFleetRecordsOnReference(vector, reference) {
  const clock = virtualClock(vector.clock?.start ?? DEFAULT_CLOCK_START);
  const scripts = vector.store.scripts ?? {};
  const spec = vector.providers[0];
  const records = new Map((vector.store.instances ?? []).map((record) => [record.key, { ...record, updatedAt: record.updatedAt + clock.start }]));
  const sandboxOf = new Map((vector.store.instances ?? []).map((record) => [record.key, record.providerSandboxId]));
  let calls;
  let logs;
  let thrown;
  const storeMethod = (method, produce) =>
    function (key) {
      calls.push({ on: 'store', method, args: [key] });
      const keyed = `${method}:${key}`;
      const behaviour = keyed in scripts ? scripts[keyed] : scripts[method];
      return act(behaviour, { thrown, sources: [method, keyed], clock, produce: () => produce(key), value: () => structuredClone(behaviour.value) });
    };
  const store = {
    get: storeMethod('get', (key) => (records.has(key) ? structuredClone(records.get(key)) : null)),
    upsert: (record) => void records.set(record.key, structuredClone(record)),
    delete: storeMethod('delete', (key) => void records.delete(key)),
  };
  const provider = {
    name: spec.name,
    destroy(input) {
      const { id, ...rest } = input;
      calls.push({ on: 'provider', name: spec.name, method: 'destroy', args: [{ id, ...structuredClone(rest) }] });
      return act(spec.destroy?.[id], { thrown, sources: ['destroy', `destroy:${id}`], clock, produce: () => undefined, value: () => spec.destroy[id].value });
    },
  };
  const logger = fleetLogger(vector, (line) => logs.push(line));

  const expectedReport = vector.expect.report?.records;
  const asReference = (call) => {
    const { at, ...rest } = call;
    return rest.method === 'deleteRecordingLeak' ? { ...rest, method: 'delete', args: [rest.args[0]] } : rest;
  };
  const seen = new Set();
  let checked = 0;
  for (const [index, record] of vector.records.entries()) {
    const key = record.sandboxKey;
    if (key !== undefined && seen.has(key)) continue;
    if (key !== undefined) seen.add(key);
    calls = [];
    logs = [];
    thrown = {};
    let outcome;
    let error;
    const promise = Promise.resolve().then(() => reference.reclaimSandbox(record, { provider, instances: store, ...(vector.logger ? { logger } : {}) }));
    await clock.runUntil(promise);
    try {
      outcome = await promise;
    } catch (caught) {
      outcome = 'error';
      error = caught;
    }
    const where = `record ${index} (${record.runId})`;
    if (expectedReport !== undefined) {
      assert.equal(outcome, expectedReport[index].outcome, `${where}: outcome`);
      if (outcome === 'error') assert.equal(error.message, expectedReport[index].error, `${where}: the store's message`);
    }
    const mine =
      key === undefined
        ? () => false
        : (call) => (call.on === 'store' ? call.args[0] === key : call.args[0]?.id === sandboxOf.get(key));
    assert.deepStrictEqual(calls, vector.expect.calls.filter(mine).map(asReference), `${where}: calls for its key`);
    const lines = key === undefined ? [] : (vector.expect.logs ?? []).filter((line) => line.meta.sandboxKey === key);
    if (vector.logger) assertFleetLogs(logs, lines, thrown, reference);
    checked += 1;
  }
  return checked;
}
