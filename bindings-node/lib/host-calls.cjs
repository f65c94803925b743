'use strict';
// The host calls of the core's operand table (proto/src/machine/effect_table.rs): how
// an op's slots become a host method's arguments (the logger's and the
// progress callback's included), and how its answer is reported to the
// machine. The driver (driver.cjs) takes one starter and one reporter per op
// from `tables` at load. The two answers that cross as fields
// (an instance record, claimed leak entries) are read here, each field once
// and checked to cross exactly; a broken one is a TypeError naming the method.

const native = require('./native.cjs');
const batches = require('./batches.cjs');
const { checkString: exactString } = require('./errors.cjs');
const { withCoreMessage, SandboxDestroyTimeoutError } = require('./flow-errors.cjs');

const protocol = native.protocol();
const [META_TEXT, META_HOST_ERROR] = protocol.metaKinds;

// Operand kinds: each pushes its host argument and answers the next slot.
const oneSlot = (run, id, batch, at, args) => (args.push(batch[at]), at + 1);
const OPERANDS = {
  value: oneSlot,
  reason: oneSlot,
  lease: oneSlot, // Node stores take leases in ms, as the wire does
  audit: (run, id, batch, at, args) => (args.push(JSON.parse(batch[at])), at + 1),
  // One slot, the ids as a JSON array: the host gets a plain array of strings.
  idList: (run, id, batch, at, args) => (args.push(JSON.parse(batch[at])), at + 1),
  entry: (run, id, batch, at, args) => (args.push(run.values[batch[at]][batch[at + 1]]), at + 2),
  leak: (run, id, batch, at, args) => {
    args.push({ key: batch[at], provider: batch[at + 1], providerSandboxId: batch[at + 2], runId: batch[at + 3], errorMessage: batch[at + 4], failedAt: batch[at + 5] });
    return at + 6;
  },
  // `destroy({ id, signal? })`: a signal only when a deadline applies.
  sandbox: (run, id, batch, at, args) => {
    args.push(batch[at + 1] === undefined ? { id: batch[at] } : { id: batch[at], signal: run.cancellable(id) });
    return at + 2;
  },
  // `list({ signal })` under a deadline; otherwise `list()` as the provider declares it.
  signal: (run, id, batch, at, args) => (batch[at] !== undefined && args.push({ signal: run.cancellable(id) }), at + 1),
  // `lookup({ ids, signal? })`: a signal only when a deadline applies.
  ids: (run, id, batch, at, args) => {
    const ids = JSON.parse(batch[at]);
    args.push(batch[at + 1] === undefined ? { ids } : { ids, signal: run.cancellable(id) });
    return at + 2;
  },
};

// Answer kinds: how a settled value is reported (the core reads JSON answers and refuses malformed ones).
const ANSWERS = {
  ok: (run, id, value, now) => batches.ok(run, id, now),
  instance: (run, id, value, now) => {
    if (value === null) return batches.noInstance(run, id, now);
    const [provider, providerSandboxId] = instanceFields(value);
    return batches.instance(run, id, provider, providerSandboxId, now);
  },
  claimed: (run, id, value, now) => batches.completeLeaks(run, id, claimedSandboxIds(value), now),
  // A fenced ledger write: only `false` says the store refused it.
  held: (run, id, value, now) => batches.json(run, id, value === false ? 'false' : 'true', now),
  json: (run, id, value, now) => {
    let json;
    try {
      json = JSON.stringify(value);
    } catch (error) {
      return run.failed(id, error, now);
    }
    return batches.json(run, id, json, now);
  },
};

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

/** A host op's row → `(run, id, batch, at) => next at`, which starts its host call. */
function hostCall(spec) {
  const viaProvider = spec.target === 'provider';
  const readers = spec.operands.filter((kind) => kind !== 'provider').map((kind) => OPERANDS[kind]);
  const name = spec.method;
  return (run, id, batch, at) => {
    const { host } = run;
    const provider = viaProvider ? batch[at++] : undefined;
    const args = [];
    for (const read of readers) at = read(run, id, batch, at, args);
    if (viaProvider) run.call(id, spec, host.provided[name][provider], host.providers[provider], args);
    else run.call(id, spec, host.store[name], host.instances, args);
    return at;
  };
}

/** How a settled value of `spec`'s op is reported: `(run, id, value, now) => next batch`. */
function reporter(spec) {
  return ANSWERS[spec.answer] ?? (() => {
    throw new Error(`sandbox-reclaim: op ${spec.op} is never answered`);
  });
}

/** The logger's call: a log line runs at once, in order; a throwing logger fails its effect. */
function logCall(run, id, batch, at) {
  const [level, message, count] = [batch[at], batch[at + 1], batch[at + 2]];
  at += 3;
  const meta = {};
  for (let i = 0; i < count; i++) {
    const [key, kind] = [batch[at], batch[at + 1]];
    if (kind === META_TEXT) meta[key] = batch[at + 2];
    else if (kind === META_HOST_ERROR) meta[key] = run.values[batch[at + 2]];
    else meta[key] = withCoreMessage(SandboxDestroyTimeoutError, batch[at + 4], batch[at + 2], batch[at + 3]);
    at += kind === META_TEXT || kind === META_HOST_ERROR ? 3 : 5;
  }
  const { logger, log } = run.host;
  if (logger === undefined) return at;
  try {
    log[level].call(logger, message, meta); // as a method, never awaited, like the reference
  } catch (error) {
    run.loggerFailed(id, error);
  }
  return at;
}

/** The progress callback's call, at once; one that throws is ignored (progress never changes a pass). */
function progressCall(run, id, batch, at) {
  try {
    run.host.onProgress?.(JSON.parse(batch[at]));
  } catch {
    // Progress never changes a pass.
  }
  return at + 1;
}

/**
 * Every op's starter and reporter, by op number, from the core's table;
 * `cancel` is the driver's own op.
 */
function tables(cancel) {
  const effects = JSON.parse(protocol.effects);
  const own = { log: logCall, progress: progressCall, cancel };
  return {
    STARTERS: effects.map((spec) => (spec.target === 'driver' ? own[spec.method] : hostCall(spec))),
    REPORTERS: effects.map(reporter),
  };
}

module.exports = { tables };
