'use strict';
// The generic JS driver: runs any of the core's flow machines against host
// objects with promises, one timer and AbortControllers. It knows effects,
// time and cancellation, never a flow.
//
// A native call answers with a batch (run, deadline, ending, effects). Each
// op's row of the core's operand table (proto/src/machine/effect_table.rs) names the
// host method, how its slots become arguments and how its answer is
// reported; each row becomes a starter and a reporter once, at load
// (host-calls.cjs; the driver's own op, a cancellation, below). Host values (a thrown
// error, claimed entries) stay here by effect id. Logs and progress events run
// at once, in order: a throwing logger is completed as failed and nothing
// after it in that batch starts (the machine emits again what other runs had
// there), a throwing progress callback is ignored. An
// AbortSignal given to the run stops it; the machine answers like a timeout.

const native = require('./native.cjs');
const { withCoreMessage, messageOf, SandboxReclaimFailedError } = require('./flow-errors.cjs');
const { checkString: exactString } = require('./errors.cjs');
const { tables } = require('./host-calls.cjs');
const batches = require('./batches.cjs');

const protocol = native.protocol();
const HEADER = protocol.header;
const ENDING_OPERANDS = protocol.endingOperands;
const [RUNNING, RESOLVE_UNDEFINED, RESOLVE_STRING, RESOLVE_JSON, REJECT_HOST_ERROR, REJECT_RECLAIM_FAILED] = protocol.endings;

/** Where time comes from; the vector suite swaps in a virtual clock. */
let clock = { now: Date.now, setTimer: (callback, ms) => setTimeout(callback, ms), clearTimer: (timer) => clearTimeout(timer) };

/** Internal, for tests: replaces the clock (`{ now, setTimer, clearTimer }`); returns the previous one. */
function setClock(next) {
  const previous = clock;
  clock = next;
  return previous;
}

// The driver's own op: a cancellation (logs and progress events are host
// calls, in host-calls.cjs).
function cancel(run, id, batch, at) {
  (run.cancelled ??= new Set()).add(batch[at]);
  run.controllers?.get(batch[at])?.abort();
  return at + 1;
}

const { STARTERS, REPORTERS } = tables(cancel);

/**
 * One flow run. `host` holds the checked host objects, each method read once:
 * { providers, provided: { destroy, list } (arrays by provider number),
 * instances, store (methods by the table's names), logger, log, onProgress }.
 */
class Run {
  constructor(host, resolve, reject) {
    this.host = host;
    this.resolve = resolve;
    this.reject = reject;
    this.run = -1;
    this.done = false;
    this.strings = undefined; // the strings this run passed to the machine (batches.cjs)
    this.specs = []; // effect id → its table row
    this.values = []; // effect id → the host value it produced (error, entries)
    this.controllers = undefined; // effect id → AbortController (deadlined destroys, listings)
    this.cancelled = undefined;
    this.processing = false; // a batch is being started: a stop waits for its end
    this.stopPending = false;
    this.replaced = undefined; // the batch a throwing logger's completion answered
    this.detach = undefined;
    this.timer = undefined;
    this.deadline = undefined;
  }

  /** Starts every effect of `batch`, then arms the timer or ends. */
  process(batch) {
    this.processing = true;
    try {
      while (batch !== undefined) {
        this.run = batch[0];
        let at = HEADER + ENDING_OPERANDS[batch[2]];
        while (at < batch.length && this.replaced === undefined) {
          const start = STARTERS[batch[at]];
          if (start === undefined) throw new Error(`sandbox-reclaim: unknown effect op ${batch[at]}`);
          at = start(this, batch[at + 1], batch, at + 2);
        }
        if (this.replaced !== undefined) {
          [batch, this.replaced] = [this.replaced, undefined];
        } else if (batch[2] !== RUNNING) {
          return this.finish(batch);
        } else if (this.stopPending) {
          this.stopPending = false; // aborted while this batch started: tell the machine now, in order
          batch = batches.stop(this, clock.now());
        } else {
          this.arm(batch[1]);
          batch = undefined;
        }
      }
    } finally {
      this.processing = false;
    }
  }

  /** The logger threw `error` for effect `id`: the machine hears of it at once, with its message (the
   * rest of the batch is not started; the machine emits again what other runs had in it). */
  loggerFailed(id, error) {
    this.replaced = this.failed(id, error, clock.now());
  }

  /** An AbortSignal for effect `id`, which a later CANCEL of it aborts. */
  cancellable(id) {
    const controller = new AbortController();
    (this.controllers ??= new Map()).set(id, controller);
    return controller.signal;
  }

  /** Calls a host method for effect `id` and feeds its settle back (an
   * async function: V8's await is cheaper than a then() with two closures). */
  async call(id, spec, method, target, args) {
    this.specs[id] = spec;
    let value;
    let failed = false;
    try {
      value = await method.apply(target, args);
    } catch (error) {
      value = error;
      failed = true;
      // A method that threw before returning settles after the rest of its
      // batch has started, in start order, as one that returned does (and as
      // the Python and Rust drivers feed them): a microtask later.
      await null;
    }
    if (this.done || this.cancelled?.has(id)) return; // a late settle changes nothing
    try {
      this.process(this.completion(id, value, failed));
    } catch (error) {
      this.abandon(error);
    }
  }

  /** Feeds one settle to the machine; answers the next batch. */
  completion(id, value, failed) {
    const now = clock.now();
    this.controllers?.delete(id);
    if (failed) return this.failed(id, value, now);
    const spec = this.specs[id];
    if (spec.keeps) this.values[id] = value;
    return REPORTERS[spec.op](this, id, value, now);
  }

  /** Effect `id` failed with `error`: the error stays here, its message goes to the machine. */
  failed(id, error, now) {
    this.values[id] = error;
    return batches.failed(this, id, messageOf(error).toWellFormed(), now);
  }

  /** Arms the one timer at `deadline` (epoch ms), or disarms it (undefined). */
  arm(deadline) {
    if (deadline === this.deadline) return;
    if (this.timer !== undefined) clock.clearTimer(this.timer);
    this.timer = undefined;
    this.deadline = deadline;
    if (deadline === undefined) return;
    this.timer = clock.setTimer(() => {
      this.timer = this.deadline = undefined;
      if (!this.done) this.guarded(() => batches.timeout(this, clock.now()));
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
    if (this.processing) this.stopPending = true;
    else this.guarded(() => batches.stop(this, clock.now()));
  }

  /** Processes the batch `next()` answers; a throw (a broken host answer, a bug) abandons the run. */
  guarded(next) {
    try {
      this.process(next());
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

  /** Rejects with `error` and drops the run. */
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
 * Runs the flow whose first batch `start(now)` answers against
 * `host`; `sent` are the strings the start passes, in the order the native
 * start keeps them (batches.cjs). `host.signal` stops it.
 */
function drive(start, host, sent) {
  return new Promise((resolve, reject) => {
    const run = new Run(host, resolve, reject);
    const batch = batches.start(run, sent, start, clock.now());
    try {
      run.process(batch);
      run.watch(host.signal);
    } catch (error) {
      run.abandon(error);
    }
  });
}

module.exports = { drive, exactString, setClock, levels: protocol.levels };
