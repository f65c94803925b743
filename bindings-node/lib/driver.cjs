'use strict';
// The generic JS driver: runs any of the core's flow machines (src/flow.rs)
// against host objects with promises, one timer and AbortControllers.
//
// It knows effects, never rules. A native call answers with a batch (the
// run's number, its next deadline, its ending, the effects to start); the
// driver starts each effect, keeps the host's own values (a thrown error, the
// entries a claim returned) by effect id, feeds each settle back with
// `complete`, arms one timer at the machine's deadline and aborts what the
// machine cancels. Logs and progress events run at once, in order; a throwing
// logger is completed as failed, and the rest of that batch is dropped by the
// machine (a throwing progress callback is ignored). An AbortSignal given to
// the run stops it: the machine is told, and answers like a timeout.

const native = require('./native.cjs');
const { withCoreMessage, messageOf, SandboxReclaimFailedError, SandboxDestroyTimeoutError } = require('./flow-errors.cjs');
const { checkString: exactString } = require('./errors.cjs');

const protocol = native.protocol();
const HEADER = protocol.header;
const ENDING_OPERANDS = protocol.endingOperands;
const [RUNNING, RESOLVE_UNDEFINED, RESOLVE_STRING, RESOLVE_JSON, REJECT_HOST_ERROR, REJECT_RECLAIM_FAILED] = protocol.endings;
const [
  GET_INSTANCE,
  DELETE_INSTANCE,
  DELETE_RECORDING_LEAK,
  DESTROY,
  CLAIM_LEAKS,
  RESOLVE_LEAK,
  RECORD_RETRY_FAILURE,
  LOG,
  CANCEL,
  LIST_SANDBOXES,
  SANDBOX_REFERENCES,
  LIST_STALE,
  EXPIRE_IDLE,
  RECORD_LEAK,
  DUE_LEAKS,
  DEFER_LEAK,
  CLAIM_SWEEP,
  RELEASE_SWEEP,
  APPEND_AUDIT,
  PROGRESS,
] = protocol.ops;
const [META_TEXT, META_HOST_ERROR, META_DESTROY_TIMEOUT] = protocol.metaKinds;
const [COMPLETE_OK, COMPLETE_FAILED, COMPLETE_INSTANCE, COMPLETE_NO_INSTANCE, COMPLETE_JSON] = protocol.completions;

/** The ops whose answer the core reads as JSON (kind COMPLETE_JSON). */
const ANSWERED_WITH_JSON = new Set([LIST_SANDBOXES, SANDBOX_REFERENCES, LIST_STALE, EXPIRE_IDLE, DUE_LEAKS, CLAIM_SWEEP]);
/** The ops whose answer the driver keeps, for effects that name its entries later. */
const KEEPS_ANSWER = new Set([CLAIM_LEAKS, DUE_LEAKS]);

/** Where time comes from; the vector suite swaps in a virtual clock. */
let clock = { now: Date.now, setTimer: (callback, ms) => setTimeout(callback, ms), clearTimer: (timer) => clearTimeout(timer) };

/** Internal, for tests: replaces the clock (`{ now, setTimer, clearTimer }`); returns the previous one. */
function setClock(next) {
  const previous = clock;
  clock = next;
  return previous;
}

/** `(provider, providerSandboxId)` of what `get` answered, each read once. */
function instanceFields(instance) {
  if (typeof instance !== 'object') {
    throw new TypeError(`options.instances.get must resolve to a SandboxInstanceRecord or null, got ${instance === undefined ? 'undefined' : typeof instance}`);
  }
  const provider = instance.provider;
  if (typeof provider !== 'string') throw new TypeError('the instance record from options.instances.get has no string `provider`');
  const providerSandboxId = instance.providerSandboxId;
  if (typeof providerSandboxId !== 'string') throw new TypeError('the instance record from options.instances.get has no string `providerSandboxId`');
  exactString(provider, 'the instance record\'s `provider`');
  exactString(providerSandboxId, 'the instance record\'s `providerSandboxId`');
  return [provider, providerSandboxId];
}

/** The provider sandbox id of each entry `claimLeaks` answered, each read once. */
function claimedSandboxIds(entries) {
  if (!Array.isArray(entries)) throw new TypeError('options.instances.claimLeaks must resolve to an array of leak entries');
  return entries.map((entry, index) => {
    if (entry === null || typeof entry !== 'object') throw new TypeError(`leak entry ${index} from claimLeaks must be an object`);
    return exactString(entry.providerSandboxId, `leak entry ${index}'s providerSandboxId`);
  });
}

/** A leak from its six slots at `batch[at]`: key, provider, providerSandboxId, runId, errorMessage, failedAt. */
function leakAt(batch, at) {
  return { key: batch[at], provider: batch[at + 1], providerSandboxId: batch[at + 2], runId: batch[at + 3], errorMessage: batch[at + 4], failedAt: batch[at + 5] };
}

/**
 * One flow run. `host` holds the checked host objects and their methods,
 * read once: { providers, destroys, lists (by provider number), instances and
 * its methods (get, remove, deleteRecordingLeak, claimLeaks, resolveLeak,
 * recordRetryFailure, listStale, expireIdle, sandboxReferences, recordLeak,
 * dueLeaks, deferLeak, claimSweep, releaseSweep, appendAudit), logger,
 * log: {warn, errors, sandbox}, onProgress }; a flow reads only those its
 * effects name.
 */
class Run {
  constructor(host, resolve, reject) {
    this.host = host;
    this.resolve = resolve;
    this.reject = reject;
    this.run = -1;
    this.done = false;
    /** Effect id → op, and → the host value it produced (error, entries). */
    this.ops = [];
    this.values = [];
    /** Effect id → AbortController, for destroys and listings with a deadline. */
    this.controllers = undefined;
    /** The caller's AbortSignal listener, while one is attached. */
    this.detach = undefined;
    /** A batch is being started; a stop then waits for its end (no re-entry). */
    this.processing = false;
    this.stopPending = false;
    this.cancelled = undefined;
    this.timer = undefined;
    this.deadline = undefined;
  }

  /** Starts every effect of `batch`, then arms the timer or ends. */
  process(batch) {
    this.processing = true;
    try {
      this.startAll(batch);
    } finally {
      this.processing = false;
    }
  }

  startAll(batch) {
    while (batch !== undefined) {
      this.run = batch[0];
      let replaced;
      let at = HEADER + ENDING_OPERANDS[batch[2]];
      while (at < batch.length && replaced === undefined) {
        const op = batch[at];
        const id = batch[at + 1];
        at += 2;
        switch (op) {
          case GET_INSTANCE:
            this.call(id, op, this.host.get, this.host.instances, batch[at++]);
            break;
          case DELETE_INSTANCE:
            this.call(id, op, this.host.remove, this.host.instances, batch[at++]);
            break;
          case DELETE_RECORDING_LEAK: {
            const key = batch[at];
            const leak = leakAt(batch, at + 1);
            at += 7;
            this.call(id, op, this.host.deleteRecordingLeak, this.host.instances, key, leak);
            break;
          }
          case DESTROY: {
            const provider = batch[at];
            const input = { id: batch[at + 1] };
            if (batch[at + 2] !== undefined) input.signal = this.cancellable(id);
            at += 3;
            this.call(id, op, this.host.destroys[provider], this.host.providers[provider], input);
            break;
          }
          case LIST_SANDBOXES: {
            const provider = batch[at];
            // `{ signal }` only when a deadline applies; otherwise list() as the provider declares it.
            const args = batch[at + 1] === undefined ? [] : [{ signal: this.cancellable(id) }];
            at += 2;
            this.call(id, op, this.host.lists[provider], this.host.providers[provider], ...args);
            break;
          }
          case SANDBOX_REFERENCES:
            this.call(id, op, this.host.sandboxReferences, this.host.instances, batch[at], batch[at + 1]);
            at += 2;
            break;
          case LIST_STALE:
            this.call(id, op, this.host.listStale, this.host.instances, batch[at], batch[at + 1]);
            at += 2;
            break;
          case EXPIRE_IDLE:
            this.call(id, op, this.host.expireIdle, this.host.instances, batch[at], batch[at + 1], leakAt(batch, at + 2));
            at += 8;
            break;
          case RECORD_LEAK:
            this.call(id, op, this.host.recordLeak, this.host.instances, leakAt(batch, at), batch[at + 6], batch[at + 7]);
            at += 8;
            break;
          case DUE_LEAKS:
            this.call(id, op, this.host.dueLeaks, this.host.instances, batch[at], batch[at + 1], batch[at + 2], batch[at + 3]);
            at += 4;
            break;
          case DEFER_LEAK:
            this.call(id, op, this.host.deferLeak, this.host.instances, this.values[batch[at]][batch[at + 1]], batch[at + 2], batch[at + 3], batch[at + 4]);
            at += 5;
            break;
          case CLAIM_SWEEP:
            this.call(id, op, this.host.claimSweep, this.host.instances, batch[at], batch[at + 1], batch[at + 2], batch[at + 3]);
            at += 4;
            break;
          case RELEASE_SWEEP:
            this.call(id, op, this.host.releaseSweep, this.host.instances, batch[at], batch[at + 1]);
            at += 2;
            break;
          case APPEND_AUDIT:
            this.call(id, op, this.host.appendAudit, this.host.instances, JSON.parse(batch[at++]));
            break;
          case PROGRESS: {
            const event = JSON.parse(batch[at++]);
            const onProgress = this.host.onProgress;
            if (onProgress !== undefined) {
              try {
                onProgress(event);
              } catch {
                // Progress never changes a pass.
              }
            }
            break;
          }
          case CLAIM_LEAKS:
            this.call(id, op, this.host.claimLeaks, this.host.instances, batch[at], batch[at + 1], batch[at + 2]);
            at += 3;
            break;
          case RESOLVE_LEAK:
            this.call(id, op, this.host.resolveLeak, this.host.instances, this.values[batch[at]][batch[at + 1]]);
            at += 2;
            break;
          case RECORD_RETRY_FAILURE:
            this.call(id, op, this.host.recordRetryFailure, this.host.instances, this.values[batch[at]][batch[at + 1]], batch[at + 2], batch[at + 3]);
            at += 4;
            break;
          case LOG: {
            const level = batch[at];
            const message = batch[at + 1];
            const count = batch[at + 2];
            at += 3;
            const meta = {};
            for (let i = 0; i < count; i++) {
              const key = batch[at];
              const kind = batch[at + 1];
              if (kind === META_TEXT) {
                meta[key] = batch[at + 2];
                at += 3;
              } else if (kind === META_HOST_ERROR) {
                meta[key] = this.values[batch[at + 2]];
                at += 3;
              } else {
                meta[key] = withCoreMessage(SandboxDestroyTimeoutError, batch[at + 4], batch[at + 2], batch[at + 3]);
                at += 5;
              }
            }
            const logger = this.host.logger;
            if (logger !== undefined) {
              try {
                // Called as a method (`this` is the logger), never awaited, like the reference.
                this.host.log[level].call(logger, message, meta);
              } catch (error) {
                this.values[id] = error;
                replaced = native.complete(this.run, id, COMPLETE_FAILED, undefined, undefined, clock.now());
              }
            }
            break;
          }
          case CANCEL: {
            const target = batch[at++];
            (this.cancelled ??= new Set()).add(target);
            const controller = this.controllers?.get(target);
            if (controller !== undefined) controller.abort();
            break;
          }
          default:
            throw new Error(`sandbox-reclaim: unknown effect op ${op}`);
        }
      }
      if (replaced !== undefined) {
        batch = replaced;
        continue;
      }
      if (batch[2] !== RUNNING) return this.finish(batch);
      if (this.stopPending) {
        // The signal aborted while this batch was being started (from a host
        // call or a progress callback): tell the machine now, in order.
        this.stopPending = false;
        batch = native.stop(this.run, clock.now());
        continue;
      }
      this.arm(batch[1]);
      batch = undefined;
    }
  }

  /** An AbortSignal for effect `id`, which a later CANCEL of it aborts. */
  cancellable(id) {
    const controller = new AbortController();
    (this.controllers ??= new Map()).set(id, controller);
    return controller.signal;
  }

  /** Calls a host method for effect `id` and feeds its settle back. */
  call(id, op, method, target, ...args) {
    this.ops[id] = op;
    let answer;
    try {
      answer = Promise.resolve(method.call(target, ...args));
    } catch (error) {
      answer = Promise.reject(error);
    }
    answer.then(
      (value) => this.settled(id, value, false),
      (error) => this.settled(id, error, true),
    );
  }

  settled(id, value, failed) {
    if (this.done || this.cancelled?.has(id)) return; // a late settle changes nothing
    let batch;
    try {
      batch = this.completion(id, value, failed);
    } catch (error) {
      return this.abandon(error);
    }
    try {
      this.process(batch);
    } catch (error) {
      this.abandon(error);
    }
  }

  /** Feeds one settle to the machine; answers the next batch. */
  completion(id, value, failed) {
    const now = clock.now();
    const op = this.ops[id];
    this.controllers?.delete(id);
    if (failed) {
      this.values[id] = value;
      // The machine gets the message (ledger entries, fleet reports); the very value stays here.
      return native.complete(this.run, id, COMPLETE_FAILED, messageOf(value).toWellFormed(), undefined, now);
    }
    if (ANSWERED_WITH_JSON.has(op)) {
      // The core reads the answer (and refuses a malformed one); the host's own objects stay here.
      let json;
      try {
        json = JSON.stringify(value);
      } catch (error) {
        this.values[id] = error;
        return native.complete(this.run, id, COMPLETE_FAILED, messageOf(error).toWellFormed(), undefined, now);
      }
      if (KEEPS_ANSWER.has(op)) this.values[id] = value;
      return native.complete(this.run, id, COMPLETE_JSON, json, undefined, now);
    }
    if (op === GET_INSTANCE) {
      if (value === null) return native.complete(this.run, id, COMPLETE_NO_INSTANCE, undefined, undefined, now);
      const [provider, providerSandboxId] = instanceFields(value);
      return native.complete(this.run, id, COMPLETE_INSTANCE, provider, providerSandboxId, now);
    }
    if (op === CLAIM_LEAKS) {
      const sandboxIds = claimedSandboxIds(value);
      this.values[id] = value;
      return native.completeLeaks(this.run, id, sandboxIds, now);
    }
    return native.complete(this.run, id, COMPLETE_OK, undefined, undefined, now);
  }

  /** Arms the one timer at `deadline` (epoch ms), or disarms it (undefined). */
  arm(deadline) {
    if (deadline === this.deadline) return;
    if (this.timer !== undefined) clock.clearTimer(this.timer);
    this.timer = undefined;
    this.deadline = deadline;
    if (deadline === undefined) return;
    this.timer = clock.setTimer(() => {
      this.timer = undefined;
      this.deadline = undefined;
      if (this.done) return;
      try {
        this.process(native.timeout(this.run, clock.now()));
      } catch (error) {
        this.abandon(error);
      }
    }, Math.max(0, deadline - clock.now()));
  }

  finish(batch) {
    this.done = true;
    this.arm(undefined);
    this.detach?.();
    switch (batch[2]) {
      case RESOLVE_UNDEFINED:
        return this.resolve(undefined);
      case RESOLVE_STRING:
        return this.resolve(batch[3]);
      case RESOLVE_JSON:
        return this.resolve(JSON.parse(batch[3]));
      case REJECT_HOST_ERROR:
        return this.reject(this.values[batch[3]]);
      case REJECT_RECLAIM_FAILED:
        return this.reject(withCoreMessage(SandboxReclaimFailedError, batch[5], batch[3], batch[4]));
      default:
        return this.reject(new Error(`sandbox-reclaim: unknown ending ${batch[2]}`));
    }
  }

  /** The caller's signal aborted: the machine starts nothing new and answers like a timeout. */
  stop() {
    if (this.done) return;
    if (this.processing) {
      this.stopPending = true;
      return;
    }
    try {
      this.process(native.stop(this.run, clock.now()));
    } catch (error) {
      this.abandon(error);
    }
  }

  /** Stops the run when `signal` aborts (at once if it already has). */
  watch(signal) {
    if (signal === undefined || this.done) return;
    if (signal.aborted) return this.stop();
    const onAbort = () => this.stop();
    signal.addEventListener('abort', onAbort, { once: true });
    this.detach = () => {
      this.detach = undefined;
      signal.removeEventListener('abort', onAbort);
    };
  }

  /** A host answer broke its contract (or a bug): reject with it, drop the run. */
  abandon(error) {
    if (this.done) return;
    this.done = true;
    this.arm(undefined);
    this.detach?.();
    native.abandon(this.run);
    this.reject(error);
  }
}

/**
 * Runs a flow whose first batch is `start()` against `host`; resolves or
 * rejects as the machine ends it. `host.signal` (an AbortSignal), when
 * given, stops it.
 */
function drive(start, host) {
  return new Promise((resolve, reject) => {
    const run = new Run(host, resolve, reject);
    const batch = start(clock.now());
    try {
      run.process(batch);
      run.watch(host.signal);
    } catch (error) {
      run.abandon(error);
    }
  });
}

module.exports = { drive, exactString, setClock, levels: protocol.levels };
