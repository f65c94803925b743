'use strict';
// The JavaScript half of the binding: a small generic interpreter of the
// core's sans-IO reclaim machine (core/src/machine.rs).
//
// Each native call feeds the machine one answer and writes its next steps into
// `steps` (an Int32Array) as a tiny program (bindings-node/src/program.rs):
// log lines, then one host step (get / destroy / delete / deleteRecordingLeak)
// or the end (finish / fail). The interpreter only decodes and performs those
// steps on plain JS host objects; every decision is the core's. A native store
// is answered inside the native call, so its records never reach JavaScript.

const native = require('../sandbox-reclaim.node');
// The per-step entry points, as raw napi functions (see src/raw.rs).
const hot = native.hotPaths();

const [OP_LOG, OP_GET, OP_DESTROY, OP_DELETE, OP_DELETE_LEAK, OP_FINISH, OP_FAIL, REF_NONE, REF_DESTROY_ERROR, STASH_BASE, KIND_RECLAIM, KIND_RECLAIMER] =
  native.opcodes();
const { texts: TEXTS, outcomes: OUTCOMES, levels: LEVELS, errorName: ERROR_NAME } = native.protocol();
const FINISHED = -1;

/**
 * Where every native call writes its program, registered once. Shared by all
 * reclaims of this thread: safe because each program is read (fully decoded)
 * right after the native call that wrote it, before any host code, which may
 * start another reclaim, runs. Far larger than the longest program.
 */
const steps = new Int32Array(256);
native.init(steps);

/**
 * The symbol of `text` among the first `count` slots: the index of the first
 * slot holding an equal string, or `count` (its own slot). Strings cross to
 * the native machine as these small numbers; equal strings get equal symbols.
 */
function symbolOf(slots, count, text) {
  for (let index = 0; index < count; index++) {
    if (slots[index] === text) return index;
  }
  return count;
}

// ---------------------------------------------------------------- errors

/**
 * Thrown by `sandboxReclaimer` when the provider's destroy failed and the
 * instance record was deleted anyway. The message is built by the core.
 */
class SandboxReclaimFailedError extends Error {
  /** @param {string} runId @param {string | undefined} [sandboxKey] */
  constructor(runId, sandboxKey) {
    super(native.reclaimFailedMessage(String(runId), sandboxKey === undefined ? undefined : String(sandboxKey)));
    this.name = ERROR_NAME;
    this.runId = runId;
    this.sandboxKey = sandboxKey;
  }
}

// ------------------------------------------------------- native store

let nativeStoreOf;

/**
 * An instance store kept natively (the core's in-memory store). It copies
 * records in and out. A reclaim given this store answers `get` and `delete`
 * in Rust, unless a subclass overrides them (then they are called as usual).
 */
class InMemorySandboxInstanceStore {
  #native;
  /** The native store's number, which reclaims pass instead of the object. */
  #nativeId;
  /** The `deleteRecordingLeak` this class installed (ledger stores only). */
  #ledgerMethod;

  /** @param {{ ledger?: boolean }} [options] */
  constructor(options) {
    if (options !== undefined && (options === null || typeof options !== 'object')) {
      throw new TypeError('InMemorySandboxInstanceStore: options must be an object');
    }
    const ledger = options?.ledger ?? false;
    if (typeof ledger !== 'boolean') throw new TypeError('InMemorySandboxInstanceStore: options.ledger must be a boolean');
    this.#native = new native.MemoryStore(ledger);
    this.#nativeId = this.#native.id;
    if (ledger) {
      // Own properties, so `typeof store.deleteRecordingLeak === 'function'`
      // holds exactly for ledger stores.
      const store = this.#native;
      this.deleteRecordingLeak = async (key, leak) => refused(() => store.deleteRecordingLeak(checkKey(key), checkLeak(leak)));
      this.#ledgerMethod = this.deleteRecordingLeak;
      this.listLeaks = async (provider) => {
        if (provider !== undefined && typeof provider !== 'string') throw new TypeError('provider must be a string');
        return store.listLeaks(provider);
      };
    }
  }

  /** @param {string} key */
  async get(key) {
    return this.#native.get(checkKey(key));
  }

  /** @param {SandboxInstanceRecord} record */
  async upsert(record) {
    const native = this.#native;
    refused(() => native.upsert(checkInstanceRecord(record)));
  }

  /** @param {string} key */
  async delete(key) {
    this.#native.delete(checkKey(key));
  }

  /** Every record, sorted by key: copies, for inspection. */
  records() {
    return this.#native.records();
  }

  static {
    const { get, delete: remove } = InMemorySandboxInstanceStore.prototype;
    // Native answers only while the store's methods are the class's own: a
    // subclass or an instance that replaces one gets its method called.
    nativeStoreOf = (store) =>
      #native in store &&
      store.get === get &&
      store.delete === remove &&
      store.deleteRecordingLeak === store.#ledgerMethod
        ? store.#nativeId
        : undefined;
  }
}

/** Runs a native store call; a value the core refused becomes a TypeError. */
function refused(call) {
  try {
    return call();
  } catch (error) {
    if (error?.code === 'InvalidArg') throw new TypeError(error.message);
    throw error;
  }
}

function checkKey(key) {
  if (typeof key !== 'string') throw new TypeError('key must be a string');
  return key;
}

function checkString(object, field, owner, optional) {
  const value = object[field];
  if (optional && value === undefined) return;
  if (typeof value !== 'string') throw new TypeError(`${owner}.${field} must be a string`);
}

function checkInstanceRecord(record) {
  if (record === null || typeof record !== 'object') throw new TypeError('record must be an object');
  for (const field of ['key', 'provider', 'providerSandboxId', 'threadId']) checkString(record, field, 'record', false);
  for (const field of ['latestSnapshotId', 'latestRunId']) checkString(record, field, 'record', true);
  if (typeof record.updatedAt !== 'number') throw new TypeError('record.updatedAt must be a number (epoch milliseconds)');
  return record;
}

function checkLeak(leak) {
  if (leak === null || typeof leak !== 'object') throw new TypeError('leak must be an object');
  for (const field of ['key', 'provider', 'providerSandboxId', 'runId', 'errorMessage']) checkString(leak, field, 'leak', false);
  if (typeof leak.failedAt !== 'number') throw new TypeError('leak.failedAt must be a number (epoch milliseconds)');
  return leak;
}

/**
 * Declares a JS instance store with its types checked; returns it unchanged.
 * @template T
 * @param {T} store
 * @returns {T}
 */
function defineSandboxInstanceStore(store) {
  checkStore(store, 'store', STORE_METHODS);
  return store;
}

// ------------------------------------------------------- input checks

function checkRecord(record) {
  if (record === null || typeof record !== 'object') throw new TypeError('record must be an object (a RunRecord)');
  if (typeof record.runId !== 'string') throw new TypeError('record.runId must be a string');
  const key = record.sandboxKey;
  if (key !== undefined && typeof key !== 'string') throw new TypeError('record.sandboxKey must be a string when present');
}

/** A store declares all three; a reclaim calls only `get` and `delete`. */
const STORE_METHODS = ['get', 'upsert', 'delete'];
const RECLAIM_STORE_METHODS = ['get', 'delete'];

function checkStore(store, name, methods) {
  if (store === null || typeof store !== 'object') throw new TypeError(`${name} must be an object (a SandboxInstanceStore)`);
  for (const method of methods) {
    if (typeof store[method] !== 'function') throw new TypeError(`${name}.${method} must be a function`);
  }
}

function checkOptions(options) {
  if (options === null || typeof options !== 'object') throw new TypeError('options must be an object');
  const { provider, instances, logger } = options;
  if (provider === null || typeof provider !== 'object') throw new TypeError('options.provider must be an object');
  if (typeof provider.name !== 'string') throw new TypeError('options.provider.name must be a string');
  if (typeof provider.destroy !== 'function') throw new TypeError('options.provider.destroy must be a function');
  checkStore(instances, 'options.instances', RECLAIM_STORE_METHODS);
  if (logger !== undefined && logger !== null) {
    if (typeof logger !== 'object' && typeof logger !== 'function') throw new TypeError('options.logger must be an object');
    for (const level of LEVELS) {
      if (typeof logger[level] !== 'function') throw new TypeError(`options.logger.${level} must be a function`);
    }
  }
}

/** Turns whatever the store's `get` gave into the machine's answer, or throws. */
function checkInstance(instance) {
  if (instance === null) return;
  if (typeof instance !== 'object') {
    throw new TypeError(`options.instances.get must resolve to a SandboxInstanceRecord or null, got ${instance === undefined ? 'undefined' : typeof instance}`);
  }
  if (typeof instance.provider !== 'string') throw new TypeError('the instance record from options.instances.get has no string `provider`');
  if (typeof instance.providerSandboxId !== 'string') {
    throw new TypeError('the instance record from options.instances.get has no string `providerSandboxId`');
  }
}

/** The leak ledger's `errorMessage` for a thrown value. */
function messageOf(error) {
  if (error !== null && typeof error === 'object' && typeof error.message === 'string') return error.message;
  try {
    return String(error);
  } catch {
    return Object.prototype.toString.call(error);
  }
}

// ------------------------------------------------------- the interpreter

/** A string ref of the program: a slot, a stash entry, or absent. */
function stringAt(ref, slots) {
  if (ref >= 0) return slots[ref];
  if (ref === REF_NONE) return undefined;
  return hot.stashed(STASH_BASE - ref);
}

function textAt(ref) {
  return ref >= 0 ? TEXTS[ref] : hot.stashed(STASH_BASE - ref);
}

/**
 * Decodes the program in `steps` into segments `[lines, op, a, b]`: the log
 * lines to emit, then one instruction with its operands already resolved to
 * strings (or the leak object). Decoding everything up front matters: host
 * code run later may start another reclaim, which rewrites `steps`.
 */
function decodeProgram(slots) {
  const segments = [];
  let pc = 0;
  for (;;) {
    let lines = null;
    while (steps[pc] === OP_LOG) {
      const level = LEVELS[steps[pc + 1]];
      const message = textAt(steps[pc + 2]);
      const count = steps[pc + 3];
      const meta = [];
      pc += 4;
      for (let i = 0; i < count; i++, pc += 2) {
        const value = steps[pc + 1];
        meta.push(textAt(steps[pc]), value === REF_DESTROY_ERROR ? REF_DESTROY_ERROR : stringAt(value, slots));
      }
      (lines ??= []).push(level, message, meta);
    }
    const op = steps[pc];
    switch (op) {
      case OP_GET:
      case OP_DESTROY:
        segments.push(lines, op, stringAt(steps[pc + 1], slots), undefined);
        return segments;
      case OP_DELETE:
        segments.push(lines, op, stringAt(steps[pc + 1], slots), undefined);
        pc += 2;
        break;
      case OP_DELETE_LEAK:
        segments.push(lines, op, stringAt(steps[pc + 1], slots), {
          key: stringAt(steps[pc + 2], slots),
          provider: stringAt(steps[pc + 3], slots),
          providerSandboxId: stringAt(steps[pc + 4], slots),
          runId: stringAt(steps[pc + 5], slots),
          errorMessage: stringAt(steps[pc + 6], slots),
          failedAt: 0,
        });
        pc += 7;
        break;
      case OP_FINISH:
        segments.push(lines, op, OUTCOMES[steps[pc + 1]], undefined);
        return segments;
      case OP_FAIL:
        segments.push(lines, op, stringAt(steps[pc + 1], slots), stringAt(steps[pc + 2], slots));
        return segments;
      default:
        throw new Error(`sandbox-reclaim: unknown step ${op} from the native machine`);
    }
  }
}

function emitLogs(lines, logger, destroyError) {
  for (let i = 0; i < lines.length; i += 3) {
    const pairs = lines[i + 2];
    const meta = {};
    for (let j = 0; j < pairs.length; j += 2) {
      meta[pairs[j]] = pairs[j + 1] === REF_DESTROY_ERROR ? destroyError : pairs[j + 1];
    }
    // Called as a method: `this` is the logger.
    if (logger !== undefined && logger !== null) logger[lines[i]](lines[i + 1], meta);
  }
}

/**
 * Feeds GET's answer; returns the handle (or FINISHED). Synchronous on
 * purpose, like every feed: the caller must read the new program from
 * `steps` before it next awaits, since other reclaims write `steps` too.
 */
function instanceLoaded(instance, slots, handle) {
  checkInstance(instance);
  if (instance === null) return hot.instanceLoaded(handle, REF_NONE, REF_NONE);
  slots[3] = instance.provider;
  slots[4] = instance.providerSandboxId;
  return hot.instanceLoaded(handle, symbolOf(slots, 3, slots[3]), symbolOf(slots, 4, slots[4]));
}

/** Feeds DESTROY's result: the failure travels as its message (the error stays here). */
function destroyFinished(failed, destroyError, slots, nativeStore, handle) {
  if (failed) slots[5] = messageOf(destroyError);
  return nativeStore === undefined
    ? hot.destroyFinished(handle, failed ? symbolOf(slots, 5, slots[5]) : REF_NONE)
    : hot.nativeDestroyFinished(handle, failed ? slots[5] : undefined);
}

async function interpret(kind, record, options) {
  checkRecord(record);
  checkOptions(options);
  const { provider, instances, logger } = options;
  const runId = record.runId;
  const sandboxKey = record.sandboxKey;
  const providerName = provider.name;
  // Slots, numbered as in program.rs: strings travel between the two halves by index.
  const slots = [runId, sandboxKey, providerName, undefined, undefined, undefined];
  const nativeStore = nativeStoreOf(instances);
  let handle =
    nativeStore === undefined
      ? hot.start(
          kind,
          sandboxKey === undefined ? REF_NONE : symbolOf(slots, 1, sandboxKey),
          symbolOf(slots, 2, providerName),
          typeof instances.deleteRecordingLeak === 'function' ? 1 : 0,
        )
      : hot.startWithNativeStore(kind, nativeStore, runId, sandboxKey, providerName);
  let destroyError;
  try {
    for (;;) {
      const first = steps[0];
      // Fast paths for the common programs (no log lines): they need no
      // decoding pass and allocate nothing. Everything else, and anything
      // these do not recognise, goes through `decodeProgram` below.
      if (first === OP_GET) {
        const instance = await instances.get(stringAt(steps[1], slots));
        handle = instanceLoaded(instance, slots, handle);
        continue;
      }
      if (first === OP_DESTROY) {
        const id = stringAt(steps[1], slots);
        let failed = false;
        try {
          await provider.destroy({ id });
        } catch (error) {
          failed = true;
          destroyError = error;
        }
        handle = destroyFinished(failed, destroyError, slots, nativeStore, handle);
        continue;
      }
      if (first === OP_DELETE && steps[2] === OP_FINISH) {
        const key = stringAt(steps[1], slots);
        const outcome = OUTCOMES[steps[3]];
        await instances.delete(key);
        return kind === KIND_RECLAIM ? outcome : undefined;
      }
      const program = decodeProgram(slots);
      for (let s = 0; s < program.length; s += 4) {
        const lines = program[s];
        const operand = program[s + 2];
        if (lines !== null) emitLogs(lines, logger, destroyError);
        switch (program[s + 1]) {
          case OP_GET: {
            const instance = await instances.get(operand);
            handle = instanceLoaded(instance, slots, handle);
            break;
          }
          case OP_DESTROY: {
            let failed = false;
            try {
              await provider.destroy({ id: operand });
            } catch (error) {
              failed = true;
              destroyError = error;
            }
            handle = destroyFinished(failed, destroyError, slots, nativeStore, handle);
            break;
          }
          // The machine has already taken this delete's success: the program
          // goes on with what follows it (see session.rs `run`).
          case OP_DELETE:
            await instances.delete(operand);
            break;
          case OP_DELETE_LEAK: {
            const leak = program[s + 3];
            leak.failedAt = Date.now();
            await instances.deleteRecordingLeak(operand, leak);
            break;
          }
          case OP_FINISH:
            return kind === KIND_RECLAIM ? operand : undefined;
          case OP_FAIL:
            throw new SandboxReclaimFailedError(operand, program[s + 3]);
        }
      }
    }
  } finally {
    // A host call threw: drop the machine (a finished one is already gone).
    if (handle !== FINISHED) hot.abort(handle);
  }
}

/**
 * Destroys the sandbox a terminal run was bound to, then deletes its instance
 * record (even when destroy failed). Resolves with the outcome.
 */
function reclaimSandbox(record, options) {
  return interpret(KIND_RECLAIM, record, options);
}

/**
 * Adapts `reclaimSandbox` to `ReapOptions.reclaim`: logs the outcome, and
 * rejects with `SandboxReclaimFailedError` on `destroy-failed`.
 */
function sandboxReclaimer(options) {
  return (record) => interpret(KIND_RECLAIMER, record, options);
}

module.exports = {
  reclaimSandbox,
  sandboxReclaimer,
  SandboxReclaimFailedError,
  InMemorySandboxInstanceStore,
  defineSandboxInstanceStore,
  /** Internal: reclaims in flight on this thread (for leak tests). */
  sessionsInFlight: native.sessionsInFlight,
};
