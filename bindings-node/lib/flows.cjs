'use strict';
// The flows, as declarations: each checks its arguments (TypeError naming the
// field, before any host call), reads every host property once, and starts
// the core's machine on the generic driver. No rule lives here.

const os = require('node:os');
const native = require('./native.cjs');
const { drive, exactString, levels } = require('./driver.cjs');
const { plainValue, plainOptions } = require('./plain.cjs');

// The plain-valued options each flow takes, as the core names them: read from
// the user's options (once each) and checked, defaulted and ranged by the core.
const RECLAIM_ALL_OPTIONS = native.optionNames('reclaimAll');
const RECONCILE_OPTIONS = native.optionNames('reconcile');
const RETRY_OPTIONS = native.optionNames('retryLeaks');

/** Starts a machine; an option the core refuses is a TypeError with the core's text. */
function checkedByCore(start) {
  try {
    return start();
  } catch (error) {
    if (error && error.code === 'InvalidArg') throw new TypeError(error.message);
    throw error;
  }
}

function checkObject(value, name, what) {
  if (value === null || typeof value !== 'object') throw new TypeError(`${name} must be an object${what ? ` (${what})` : ''}`);
  return value;
}

function method(target, name, owner, hint = '') {
  const found = target[name];
  if (typeof found !== 'function') throw new TypeError(`${owner}.${name} must be a function${hint}`);
  return found;
}

/** The run record's two fields a reclaim reads, each read once. */
function readRecord(record, name = 'record') {
  checkObject(record, name, 'a RunRecord');
  const runId = record.runId;
  if (typeof runId !== 'string') throw new TypeError(`${name}.runId must be a string`);
  exactString(runId, `${name}.runId`);
  const sandboxKey = record.sandboxKey;
  if (sandboxKey !== undefined && typeof sandboxKey !== 'string') throw new TypeError(`${name}.sandboxKey must be a string when present`);
  if (sandboxKey !== undefined) exactString(sandboxKey, `${name}.sandboxKey`);
  return { runId, sandboxKey };
}

/** The logger's methods, read once; undefined when there is no logger. */
function readLogger(logger) {
  if (logger === undefined || logger === null) return undefined;
  if (typeof logger !== 'object' && typeof logger !== 'function') throw new TypeError('options.logger must be an object');
  const log = {};
  for (const level of levels) log[level] = method(logger, level, 'options.logger');
  return log;
}

/**
 * A reclaim's options, read once. `readName` reads `provider.name` now
 * (reclaimSandbox); the reclaimer reads it at each reclaim instead.
 */
function readReclaimOptions(options, readName) {
  checkObject(options, 'options');
  const { provider, instances, logger, destroyTimeoutMs } = options;
  checkObject(provider, 'options.provider');
  const name = readName ? providerName(provider) : undefined;
  const destroy = method(provider, 'destroy', 'options.provider');
  checkObject(instances, 'options.instances', 'a SandboxInstanceStore');
  const get = method(instances, 'get', 'options.instances');
  const remove = method(instances, 'delete', 'options.instances');
  // A store "keeps a ledger" exactly when it has a deleteRecordingLeak function.
  const ledger = instances.deleteRecordingLeak;
  const log = readLogger(logger);
  return {
    name,
    provider,
    providers: [provider],
    provided: { destroy: [destroy] },
    instances,
    store: { get, delete: remove, deleteRecordingLeak: typeof ledger === 'function' ? ledger : undefined },
    logger: log === undefined ? undefined : logger,
    log,
    // Checked by the core, only when given: a plain reclaim makes no extra native call.
    destroyTimeoutMs: destroyTimeoutMs === undefined ? undefined : checkedByCore(() => native.reclaimDeadline(JSON.stringify({ destroyTimeoutMs: plainValue(destroyTimeoutMs) }))),
  };
}

function providerName(provider) {
  return exactString(provider.name, 'options.provider.name');
}

function reclaim(reclaimer, { runId, sandboxKey }, host, name) {
  const ledger = host.store.deleteRecordingLeak !== undefined;
  const sent = sandboxKey === undefined ? [runId, name] : [runId, sandboxKey, name];
  return drive((now) => native.startReclaim(reclaimer, runId, sandboxKey, name, ledger, host.destroyTimeoutMs, now), host, sent);
}

/**
 * Destroys the sandbox a terminal run was bound to, then deletes its instance
 * record (even when destroy failed). Resolves with the outcome.
 */
async function reclaimSandbox(record, options) {
  const fields = readRecord(record);
  const host = readReclaimOptions(options, true);
  return reclaim(false, fields, host, host.name);
}

/**
 * Adapts `reclaimSandbox` to `ReapOptions.reclaim`: logs the outcome, and
 * rejects with `SandboxReclaimFailedError` on `destroy-failed`. The options
 * are checked now; `provider.name` is read at each reclaim, as the reference does.
 */
function sandboxReclaimer(options) {
  const host = readReclaimOptions(options, false);
  return async (record) => {
    const fields = readRecord(record);
    return reclaim(true, fields, host, providerName(host.provider));
  };
}

/**
 * Retries the destroy of `provider`'s pending leaks in `instances`' ledger:
 * claims up to `limit` under a lease of `leaseMs`, destroys each while the
 * lease holds, resolves it or records the failure.
 */
async function retryLeaks(options) {
  checkObject(options, 'options');
  const { provider, instances } = options;
  checkObject(provider, 'options.provider');
  const name = providerName(provider);
  const destroy = method(provider, 'destroy', 'options.provider');
  checkObject(instances, 'options.instances', 'a store with a leak ledger');
  const ledger = ' (a store with a leak ledger)';
  const host = {
    providers: [provider],
    provided: { destroy: [destroy] },
    instances,
    store: {
      claimLeaks: method(instances, 'claimLeaks', 'options.instances', ledger),
      resolveLeak: method(instances, 'resolveLeak', 'options.instances', ledger),
      recordRetryFailure: method(instances, 'recordRetryFailure', 'options.instances', ledger),
    },
  };
  const values = plainOptions(options, RETRY_OPTIONS);
  return drive((now) => checkedByCore(() => native.startRetry(values, name, now)), host, [name]);
}

// ------------------------------------------------------------- fleet passes

/** The store methods a reconcile pass calls, in the order they are checked. */
const FLEET_METHODS = [
  'listStale',
  'expireIdle',
  'sandboxReferences',
  'recordLeak',
  'dueLeaks',
  'deferLeak',
  'claimSweep',
  'releaseSweep',
  'appendAudit',
  'resolveLeak',
];

/**
 * `options.provider` (one) or `options.providers` (an array), each read once:
 * { providers, names, destroys, lists, lookups, owners } by provider
 * number. With `forSweep`, `list` and `lookup` (optional functions) and
 * `owner` (optional string) are read too.
 */
function readProviders(options, forSweep) {
  const { provider, providers } = options;
  if (provider !== undefined && providers !== undefined) {
    throw new TypeError('options.provider and options.providers: give one of them, not both');
  }
  let given;
  let label;
  if (providers !== undefined) {
    if (!Array.isArray(providers)) throw new TypeError('options.providers must be an array of providers');
    given = [...providers];
    label = (index) => `options.providers[${index}]`;
  } else if (provider !== undefined) {
    given = [provider];
    label = () => 'options.provider';
  } else {
    throw new TypeError('options.providers must be an array of providers (or options.provider one provider)');
  }
  const read = { providers: given, names: [], destroys: [], lists: [], lookups: [], owners: [] };
  given.forEach((each, index) => {
    const name = label(index);
    checkObject(each, name, 'a provider');
    read.names.push(exactString(each.name, `${name}.name`));
    read.destroys.push(method(each, 'destroy', name));
    if (!forSweep) return;
    const list = each.list;
    if (list !== undefined && list !== null && typeof list !== 'function') throw new TypeError(`${name}.list must be a function when present`);
    read.lists.push(typeof list === 'function' ? list : undefined);
    const lookup = each.lookup;
    if (lookup !== undefined && lookup !== null && typeof lookup !== 'function') throw new TypeError(`${name}.lookup must be a function when present`);
    read.lookups.push(typeof lookup === 'function' ? lookup : undefined);
    const owner = each.owner;
    if (owner !== undefined && owner !== null && typeof owner !== 'string') throw new TypeError(`${name}.owner must be a string when present`);
    read.owners.push(typeof owner === 'string' ? exactString(owner, `${name}.owner`) : undefined);
  });
  return read;
}

/** The host objects every fleet pass shares (its signal and progress callback), each read once. */
function readPassHost(options) {
  const { signal, onProgress } = options;
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError('options.signal must be an AbortSignal');
  if (onProgress !== undefined && typeof onProgress !== 'function') throw new TypeError('options.onProgress must be a function');
  return { signal, onProgress };
}

/**
 * Reclaims many runs side by side, each exactly as `reclaimSandbox` would:
 * at most `concurrency` at once, each record routed to the provider its
 * instance names; resolves with a report (never rejects because one record
 * failed: a store failure is reported on its record).
 */
async function reclaimAll(records, options) {
  if (!Array.isArray(records)) throw new TypeError('records must be an array of RunRecords');
  const fields = [...records].map((record, index) => readRecord(record, `records[${index}]`));
  checkObject(options, 'options');
  const providers = readProviders(options, false);
  const { instances, logger } = options;
  checkObject(instances, 'options.instances', 'a SandboxInstanceStore');
  const get = method(instances, 'get', 'options.instances');
  const remove = method(instances, 'delete', 'options.instances');
  const ledger = instances.deleteRecordingLeak;
  const log = readLogger(logger);
  const pass = readPassHost(options);
  const values = plainOptions(options, RECLAIM_ALL_OPTIONS);
  const host = {
    providers: providers.providers,
    provided: { destroy: providers.destroys },
    instances,
    store: { get, delete: remove, deleteRecordingLeak: typeof ledger === 'function' ? ledger : undefined },
    logger: log === undefined ? undefined : logger,
    log,
    onProgress: pass.onProgress,
    signal: pass.signal,
  };
  const runIds = fields.map((record) => record.runId);
  const sandboxKeys = fields.map((record) => record.sandboxKey);
  const keepsLedger = host.store.deleteRecordingLeak !== undefined;
  const progress = pass.onProgress !== undefined;
  const sent = [...runIds, ...sandboxKeys.filter((key) => key !== undefined), ...providers.names];
  return drive(
    (now) =>
      checkedByCore(() =>
        native.startReclaimAll(values, runIds, sandboxKeys, providers.names, keepsLedger, progress, pass.signal?.aborted === true, now),
      ),
    host,
    sent,
  );
}

/** The scoped reads a store answers all or none of (`FleetStore.sweepMark` ...), from the core's effect table. */
const SCOPED_METHODS = native.scopedReadMethods();

/**
 * Whether the store answers a sweep's questions about what it listed: the
 * core decides from which scoped methods are functions (each read once,
 * kept in `store`); a store with some but not all of them is refused with
 * the core's text.
 */
function readScopedReads(instances, store) {
  const found = SCOPED_METHODS.map((name) => {
    const value = instances[name];
    if (value !== undefined && value !== null && typeof value !== 'function') {
      throw new TypeError(`options.instances.${name} must be a function when present`);
    }
    return typeof value === 'function' ? value : undefined;
  });
  const { scoped, refusal } = native.scopedReads(found.map((method) => method !== undefined));
  if (refusal != null) throw new TypeError(refusal);
  if (!scoped) return false;
  SCOPED_METHODS.forEach((name, index) => {
    store[name] = found[index];
  });
  return true;
}

/**
 * One reconcile pass: expires idle records (with `maxIdleMs`), retries due
 * leaks with backoff, and sweeps orphans (listed under the owner,
 * referenced by nothing, older than `orphanGraceMs`), failing closed.
 * Resolves with a report; rejects with the very error a store write threw.
 */
async function reconcile(options) {
  checkObject(options, 'options');
  const providers = readProviders(options, true);
  const { instances } = options;
  checkObject(instances, 'options.instances', 'a fleet store');
  const store = {};
  for (const name of FLEET_METHODS) store[name] = method(instances, name, 'options.instances', ' (a fleet store)');
  // The registry is optional: a store without it names nothing as ours.
  const registered = instances.registeredSandboxes;
  if (registered !== undefined && registered !== null && typeof registered !== 'function') {
    throw new TypeError('options.instances.registeredSandboxes must be a function when present');
  }
  const registry = typeof registered === 'function';
  if (registry) store.registeredSandboxes = registered;
  // So is pruning (bounded growth): a store without it keeps every row.
  const pruner = instances.prune;
  if (pruner !== undefined && pruner !== null && typeof pruner !== 'function') {
    throw new TypeError('options.instances.prune must be a function when present');
  }
  const prune = typeof pruner === 'function';
  if (prune) store.prune = pruner;
  const scoped = readScopedReads(instances, store);
  const pass = readPassHost(options);
  const values = plainOptions(options, RECONCILE_OPTIONS);
  const host = {
    providers: providers.providers,
    provided: { destroy: providers.destroys, list: providers.lists, lookup: providers.lookups },
    instances,
    store,
    onProgress: pass.onProgress,
    signal: pass.signal,
  };
  const plans = providers.names.map((name, index) => ({
    name,
    canList: providers.lists[index] !== undefined,
    canLookup: providers.lookups[index] !== undefined,
    owner: providers.owners[index],
  }));
  const progress = pass.onProgress !== undefined;
  const stopped = pass.signal?.aborted === true;
  const hostName = os.hostname();
  const sent = [...plans.flatMap((plan) => (plan.owner === undefined ? [plan.name] : [plan.name, plan.owner])), hostName];
  return drive((now) => checkedByCore(() => native.startReconcile(values, plans, hostName, progress, stopped, registry, prune, scoped, now)), host, sent);
}

module.exports = { reclaimSandbox, sandboxReclaimer, retryLeaks, reclaimAll, reconcile };
