'use strict';
// The JavaScript half of the binding: a generic walker of the core's compiled
// reclaim programs (core/src/program.rs).
//
// The core runs its sans-IO reclaim machine ahead of time for every class of
// host answer and records what it did as a small branch table: instructions
// such as `getInstance`, `ifProviderDiffers {target}`, `log {level, message,
// meta}` whose operands name values (runId, sandboxKey, ...) instead of
// holding them. The four programs (reclaimSandbox / sandboxReclaimer, with or
// without a leak ledger) are fetched once at load; a reclaim then walks one
// with no native call at all. The walker knows only what each op means, never
// the reclaim flow: every decision, string and ordering is the machine's.

const native = require('./native.cjs');
// The ledger's `errorMessage` for a thrown value, shared with retryLeaks.
const { messageOf } = require('./errors.cjs');
// The native store's reclaim path, as raw napi functions (src/hot_store.rs):
// lookup(storeId, key) → null | provider + '\0' + providerSandboxId; remove(storeId, key).
const { lookup, remove } = native.nativeStorePaths();

const { levels: LEVELS, errorName: ERROR_NAME } = native.protocol();

// Ops, as small integers for the walker's switch.
const IF_NO_SANDBOX_KEY = 0;
const GET_INSTANCE = 1;
const IF_INSTANCE_MISSING = 2;
const IF_PROVIDER_DIFFERS = 3;
const DESTROY = 4;
const IF_DESTROY_FAILED = 5;
const DELETE_INSTANCE = 6;
const DELETE_INSTANCE_RECORDING_LEAK = 7;
const LOG = 8;
const FINISH = 9;
const FAIL_RECLAIM = 10;
const OPS = {
  ifNoSandboxKey: IF_NO_SANDBOX_KEY,
  getInstance: GET_INSTANCE,
  ifInstanceMissing: IF_INSTANCE_MISSING,
  ifProviderDiffers: IF_PROVIDER_DIFFERS,
  destroy: DESTROY,
  ifDestroyFailed: IF_DESTROY_FAILED,
  deleteInstance: DELETE_INSTANCE,
  deleteInstanceRecordingLeak: DELETE_INSTANCE_RECORDING_LEAK,
  log: LOG,
  finish: FINISH,
  failReclaim: FAIL_RECLAIM,
};

// Registers, by the operand names of the programs.
const REGISTERS = ['runId', 'sandboxKey', 'providerName', 'instanceProvider', 'providerSandboxId', 'destroyError', 'destroyErrorMessage'];
const R_RUN_ID = 0;
const R_SANDBOX_KEY = 1;
const R_PROVIDER_NAME = 2;
const R_INSTANCE_PROVIDER = 3;
const R_PROVIDER_SANDBOX_ID = 4;
const R_DESTROY_ERROR = 5;
const R_DESTROY_ERROR_MESSAGE = 6;

function registerOf(operand) {
  const index = REGISTERS.indexOf(operand);
  if (index < 0) throw new Error(`sandbox-reclaim: unknown operand ${operand} in the core's program`);
  return index;
}

/**
 * Translates a program's JSON into instructions of one shape (so the
 * walker's property reads stay monomorphic), operands as register numbers.
 * `finish` carries what the API resolves with: the outcome for
 * reclaimSandbox, nothing for sandboxReclaimer.
 */
function translate(json) {
  const program = JSON.parse(json);
  const resolvesOutcome = program.api === 'reclaimSandbox';
  return program.instructions.map((instruction) => {
    const op = OPS[instruction.op];
    if (op === undefined) throw new Error(`sandbox-reclaim: unknown op ${instruction.op} in the core's program`);
    const leak = instruction.leak;
    return {
      op,
      target: instruction.target ?? -1,
      level: instruction.level ?? '',
      message: instruction.message ?? '',
      meta: (instruction.meta ?? []).map(([key, operand]) => [key, registerOf(operand)]),
      leak:
        leak === undefined
          ? null
          : [leak.key, leak.provider, leak.providerSandboxId, leak.runId, leak.errorMessage].map(registerOf),
      result: op === FINISH && resolvesOutcome ? instruction.outcome : undefined,
    };
  });
}

/** The four programs, by API and whether the store keeps a leak ledger. */
const PROGRAMS = {
  reclaimSandbox: [translate(native.reclaimProgram('reclaimSandbox', false)), translate(native.reclaimProgram('reclaimSandbox', true))],
  sandboxReclaimer: [translate(native.reclaimProgram('sandboxReclaimer', false)), translate(native.reclaimProgram('sandboxReclaimer', true))],
};

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
let memoryNativeOf;

/**
 * An instance store kept natively (the core's in-memory store). It copies
 * records in and out. A reclaim given this store calls its native `get` and
 * `delete` synchronously, without awaiting them, unless a subclass or the
 * instance replaces them (then they are called and awaited as usual).
 */
class InMemorySandboxInstanceStore {
  #native;
  /** The native store's number, which the walker's raw calls take. */
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
      this.listLeaks = async (provider) => refused(() => store.listLeaks(checkProvider(provider)));
      this.countLeaks = async (provider) => refused(() => store.countLeaks(checkProvider(provider)));
      this.claimLeaks = async (provider, limit, leaseMs) => {
        if (typeof provider !== 'string') throw new TypeError('provider must be a string');
        if (!(Number.isInteger(limit) && limit >= 0 && limit <= 0xffff_ffff)) throw new TypeError('limit must be a whole number >= 0');
        if (!(Number.isInteger(leaseMs) && leaseMs >= 0)) throw new TypeError('leaseMs must be a whole number of milliseconds >= 0');
        return refused(() => store.claimLeaks(provider, limit, leaseMs));
      };
      this.resolveLeak = async (entry) => refused(() => store.resolveLeak(checkEntry(entry)));
      this.recordRetryFailure = async (entry, message, failedAt) => {
        checkEntry(entry);
        if (typeof message !== 'string') throw new TypeError('message must be a string');
        if (typeof failedAt !== 'number') throw new TypeError('failedAt must be a number (epoch milliseconds)');
        return refused(() => store.recordRetryFailure(entry, message, failedAt));
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
    memoryNativeOf = (store) => (store !== null && typeof store === 'object' && #native in store ? store.#native : undefined);
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

function checkProvider(provider) {
  if (provider !== undefined && provider !== null && typeof provider !== 'string') {
    throw new TypeError('provider must be a string (or undefined for every provider)');
  }
  return provider ?? undefined;
}

function checkEntry(entry) {
  if (entry === null || typeof entry !== 'object') throw new TypeError('entry must be an object (a leak entry)');
  for (const field of ['key', 'provider', 'providerSandboxId', 'runId', 'lastError']) checkString(entry, field, 'entry', false);
  if (typeof entry.failedAt !== 'number') throw new TypeError('entry.failedAt must be a number (epoch milliseconds)');
  if (!Number.isInteger(entry.attempts) || entry.attempts < 0) throw new TypeError('entry.attempts must be a whole number >= 0');
  return entry;
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

/**
 * Whether a native store's answer must be awaited: its methods are
 * synchronous, so never today; a thenable would still be awaited.
 */
function isThenable(value) {
  return value !== null && typeof value === 'object' && typeof value.then === 'function';
}

// ------------------------------------------------------- the walker

/**
 * Checks the input, picks the program (by whether the store keeps a leak
 * ledger) and walks it for one reclaim. A native in-memory store's methods
 * are called directly and not awaited; any other store is called and awaited
 * like the reference does.
 */
async function walk(programs, record, options) {
  checkRecord(record);
  checkOptions(options);
  const { provider, instances, logger } = options;
  const program = programs[typeof instances.deleteRecordingLeak === 'function' ? 1 : 0];
  const store = nativeStoreOf(instances);
  const registers = [record.runId, record.sandboxKey, provider.name, undefined, undefined, undefined, undefined];
  let failed = false;
  let instance = null;
  let pc = 0;
  for (;;) {
    const instruction = program[pc++];
    switch (instruction.op) {
      case IF_NO_SANDBOX_KEY:
        if (registers[R_SANDBOX_KEY] === undefined) pc = instruction.target;
        break;
      case GET_INSTANCE:
        if (store === undefined) {
          instance = await instances.get(registers[R_SANDBOX_KEY]);
          checkInstance(instance);
          if (instance !== null) {
            registers[R_INSTANCE_PROVIDER] = instance.provider;
            registers[R_PROVIDER_SANDBOX_ID] = instance.providerSandboxId;
          }
        } else {
          // Synchronous: nothing to await. Only the two fields a reclaim reads cross over.
          instance = lookup(store, registers[R_SANDBOX_KEY]);
          if (instance !== null) {
            const cut = instance.indexOf('\0');
            registers[R_INSTANCE_PROVIDER] = instance.slice(0, cut);
            registers[R_PROVIDER_SANDBOX_ID] = instance.slice(cut + 1);
          }
        }
        break;
      case IF_INSTANCE_MISSING:
        if (instance === null) pc = instruction.target;
        break;
      case IF_PROVIDER_DIFFERS:
        if (registers[R_INSTANCE_PROVIDER] !== registers[R_PROVIDER_NAME]) pc = instruction.target;
        break;
      case DESTROY:
        failed = false;
        try {
          // Called as a method: `this` is the provider; a fresh input per call.
          await provider.destroy({ id: registers[R_PROVIDER_SANDBOX_ID] });
        } catch (error) {
          failed = true;
          registers[R_DESTROY_ERROR] = error;
          registers[R_DESTROY_ERROR_MESSAGE] = messageOf(error);
        }
        break;
      case IF_DESTROY_FAILED:
        if (failed) pc = instruction.target;
        break;
      case DELETE_INSTANCE:
        if (store === undefined) await instances.delete(registers[R_SANDBOX_KEY]);
        else remove(store, registers[R_SANDBOX_KEY]);
        break;
      case DELETE_INSTANCE_RECORDING_LEAK: {
        const operands = instruction.leak;
        const leak = {
          key: registers[operands[0]],
          provider: registers[operands[1]],
          providerSandboxId: registers[operands[2]],
          runId: registers[operands[3]],
          errorMessage: registers[operands[4]],
          failedAt: Date.now(),
        };
        if (store === undefined) {
          await instances.deleteRecordingLeak(registers[R_SANDBOX_KEY], leak);
        } else {
          const done = refused(() => memoryNativeOf(instances).deleteRecordingLeak(registers[R_SANDBOX_KEY], leak));
          if (isThenable(done)) await done;
        }
        break;
      }
      case LOG:
        if (logger !== undefined && logger !== null) {
          const pairs = instruction.meta;
          const meta = {};
          for (let i = 0; i < pairs.length; i++) meta[pairs[i][0]] = registers[pairs[i][1]];
          // Called as a method: `this` is the logger.
          logger[instruction.level](instruction.message, meta);
        }
        break;
      case FINISH:
        return instruction.result;
      case FAIL_RECLAIM:
        throw new SandboxReclaimFailedError(registers[R_RUN_ID], registers[R_SANDBOX_KEY]);
      default:
        throw new Error(`sandbox-reclaim: unknown op ${instruction.op}`);
    }
  }
}

/**
 * Destroys the sandbox a terminal run was bound to, then deletes its instance
 * record (even when destroy failed). Resolves with the outcome.
 */
function reclaimSandbox(record, options) {
  return walk(PROGRAMS.reclaimSandbox, record, options);
}

/**
 * Adapts `reclaimSandbox` to `ReapOptions.reclaim`: logs the outcome, and
 * rejects with `SandboxReclaimFailedError` on `destroy-failed`.
 */
function sandboxReclaimer(options) {
  const programs = PROGRAMS.sandboxReclaimer;
  return (record) => walk(programs, record, options);
}

module.exports = {
  reclaimSandbox,
  sandboxReclaimer,
  SandboxReclaimFailedError,
  InMemorySandboxInstanceStore,
  defineSandboxInstanceStore,
  /** Internal: the native half of an InMemorySandboxInstanceStore (for retryLeaks). */
  memoryNativeOf: (store) => memoryNativeOf(store),
};
