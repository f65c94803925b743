'use strict';
// The flows, as declarations: each checks its arguments (TypeError naming the
// field, before any host call), reads every host property once, and starts
// the core's machine on the generic driver. No rule lives here.

const os = require('node:os');
const native = require('./native.cjs');
const { drive, exactString, levels } = require('./driver.cjs');

/** The largest count the core takes (a `u32`). */
const MAX_U32 = 0xffff_ffff;

function checkObject(value, name, what) {
  if (value === null || typeof value !== 'object') throw new TypeError(`${name} must be an object${what ? ` (${what})` : ''}`);
  return value;
}

function method(target, name, owner, hint = '') {
  const found = target[name];
  if (typeof found !== 'function') throw new TypeError(`${owner}.${name} must be a function${hint}`);
  return found;
}

/** Milliseconds: a whole number from `minimum`, or undefined when absent. */
function optionalWhole(value, name, minimum, fallback) {
  if (value === undefined) return fallback;
  if (!(Number.isSafeInteger(value) && value >= minimum)) {
    throw new TypeError(`${name} must be a whole number >= ${minimum}`);
  }
  return value;
}

/** A count: a whole number from `minimum` below 2^32, or `fallback` when absent. */
function optionalCount(value, name, minimum, fallback) {
  const checked = optionalWhole(value, name, minimum, fallback);
  if (checked !== undefined && checked > MAX_U32) throw new TypeError(`${name} must be a whole number >= ${minimum} and < 2^32`);
  return checked;
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
    destroys: [destroy],
    instances,
    get,
    remove,
    deleteRecordingLeak: typeof ledger === 'function' ? ledger : undefined,
    logger: log === undefined ? undefined : logger,
    log,
    destroyTimeoutMs: optionalWhole(destroyTimeoutMs, 'options.destroyTimeoutMs', 1, undefined),
  };
}

function providerName(provider) {
  return exactString(provider.name, 'options.provider.name');
}

function reclaim(reclaimer, { runId, sandboxKey }, host, name) {
  const ledger = host.deleteRecordingLeak !== undefined;
  return drive((now) => native.startReclaim(reclaimer, runId, sandboxKey, name, ledger, host.destroyTimeoutMs, now), host);
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
  const { provider, instances, limit, leaseMs, destroyTimeoutMs } = options;
  checkObject(provider, 'options.provider');
  const name = providerName(provider);
  const destroy = method(provider, 'destroy', 'options.provider');
  checkObject(instances, 'options.instances', 'a store with a leak ledger');
  const ledger = ' (a store with a leak ledger)';
  const host = {
    providers: [provider],
    destroys: [destroy],
    instances,
    claimLeaks: method(instances, 'claimLeaks', 'options.instances', ledger),
    resolveLeak: method(instances, 'resolveLeak', 'options.instances', ledger),
    recordRetryFailure: method(instances, 'recordRetryFailure', 'options.instances', ledger),
  };
  const checkedLimit = optionalWhole(limit, 'options.limit', 0, 100);
  if (checkedLimit > 0xffff_ffff) throw new TypeError('options.limit must be a whole number >= 0 and < 2^32');
  const lease = optionalWhole(leaseMs, 'options.leaseMs', 1, 300_000);
  const timeout = optionalWhole(destroyTimeoutMs, 'options.destroyTimeoutMs', 1, undefined);
  return drive((now) => native.startRetry(name, checkedLimit, lease, timeout, now), host);
}

// ------------------------------------------------------------- fleet passes

/** The owner namespace sandboxes are swept under unless a provider or the pass names another. */
const DEFAULT_OWNER = 'sandbox-reclaim';

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
 * { providers, names, destroys, lists, owners } by provider number. With
 * `forSweep`, `list` (optional function) and `owner` (optional string) are
 * read too.
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
  if (given.length === 0) throw new TypeError('options.providers must name at least one provider');
  const read = { providers: given, names: [], destroys: [], lists: [], owners: [] };
  given.forEach((each, index) => {
    const name = label(index);
    checkObject(each, name, 'a provider');
    read.names.push(exactString(each.name, `${name}.name`));
    read.destroys.push(method(each, 'destroy', name));
    if (!forSweep) return;
    const list = each.list;
    if (list !== undefined && list !== null && typeof list !== 'function') throw new TypeError(`${name}.list must be a function when present`);
    read.lists.push(typeof list === 'function' ? list : undefined);
    const owner = each.owner;
    if (owner !== undefined && owner !== null && typeof owner !== 'string') throw new TypeError(`${name}.owner must be a string when present`);
    read.owners.push(typeof owner === 'string' ? exactString(owner, `${name}.owner`) : undefined);
  });
  const seen = new Set();
  for (const name of read.names) {
    if (seen.has(name)) throw new TypeError(`options.providers: two providers share the name ${JSON.stringify(name)}`);
    seen.add(name);
  }
  return read;
}

/** The options every fleet pass shares, each read once and checked. */
function readPassOptions(options) {
  const { concurrency, perProviderConcurrency, destroyTimeoutMs, budgetMs, signal, onProgress } = options;
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError('options.signal must be an AbortSignal');
  if (onProgress !== undefined && typeof onProgress !== 'function') throw new TypeError('options.onProgress must be a function');
  return {
    concurrency: optionalCount(concurrency, 'options.concurrency', 1, 16),
    perProviderConcurrency: optionalCount(perProviderConcurrency, 'options.perProviderConcurrency', 1, undefined),
    destroyTimeoutMs: optionalWhole(destroyTimeoutMs, 'options.destroyTimeoutMs', 1, undefined),
    budgetMs: optionalWhole(budgetMs, 'options.budgetMs', 1, undefined),
    signal,
    onProgress,
  };
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
  const pass = readPassOptions(options);
  const host = {
    providers: providers.providers,
    destroys: providers.destroys,
    instances,
    get,
    remove,
    deleteRecordingLeak: typeof ledger === 'function' ? ledger : undefined,
    logger: log === undefined ? undefined : logger,
    log,
    onProgress: pass.onProgress,
    signal: pass.signal,
  };
  const runIds = fields.map((record) => record.runId);
  const sandboxKeys = fields.map((record) => record.sandboxKey);
  return drive(
    (now) =>
      native.startReclaimAll(
        runIds,
        sandboxKeys,
        providers.names,
        host.deleteRecordingLeak !== undefined,
        pass.concurrency,
        pass.perProviderConcurrency,
        pass.destroyTimeoutMs,
        pass.budgetMs,
        pass.onProgress !== undefined,
        pass.signal?.aborted === true,
        now,
      ),
    host,
  );
}

/** Passes started by this process: part of each sweep holder's name. */
let passes = 0;

/**
 * One reconcile pass: expires idle records (with `maxIdleMs`), retries due
 * leaks with backoff, and sweeps orphans (listed under the owner,
 * referenced by nothing, older than `orphanGraceMs`), failing closed.
 * Resolves with a report; rejects with the very error a store write threw.
 */
async function reconcile(options) {
  checkObject(options, 'options');
  const providers = readProviders(options, true);
  const { instances, dryRun, orphanGraceMs, maxIdleMs, limit, leaseMs, backoffMs, maxBackoffMs, owner, host: hostName } = options;
  checkObject(instances, 'options.instances', 'a fleet store');
  const store = {};
  for (const name of FLEET_METHODS) store[name] = method(instances, name, 'options.instances', ' (a fleet store)');
  if (dryRun !== undefined && typeof dryRun !== 'boolean') throw new TypeError('options.dryRun must be a boolean');
  const pass = readPassOptions(options);
  const grace = optionalWhole(orphanGraceMs, 'options.orphanGraceMs', 0, 600_000);
  const maxIdle = optionalWhole(maxIdleMs, 'options.maxIdleMs', 1, undefined);
  const checkedLimit = optionalCount(limit, 'options.limit', 1, 1000);
  const lease = optionalWhole(leaseMs, 'options.leaseMs', 1, 300_000);
  const backoff = optionalWhole(backoffMs, 'options.backoffMs', 0, 30_000);
  const maxBackoff = optionalWhole(maxBackoffMs, 'options.maxBackoffMs', 0, 3_600_000);
  const passOwner = owner === undefined ? DEFAULT_OWNER : exactString(owner, 'options.owner');
  const passHost = hostName === undefined ? os.hostname() : exactString(hostName, 'options.host');
  passes += 1;
  const holder = `${passHost}/${process.pid}/${Date.now()}/${passes}`;
  const host = {
    providers: providers.providers,
    destroys: providers.destroys,
    lists: providers.lists,
    instances,
    ...store,
    onProgress: pass.onProgress,
    signal: pass.signal,
  };
  const start = {
    providers: providers.names.map((name, index) => ({
      name,
      canList: providers.lists[index] !== undefined,
      owner: providers.owners[index] ?? passOwner,
    })),
    host: exactString(passHost, 'options.host'),
    holder: exactString(holder, 'options.host'),
    dryRun: dryRun ?? false,
    concurrency: pass.concurrency,
    perProviderConcurrency: pass.perProviderConcurrency,
    destroyTimeoutMs: pass.destroyTimeoutMs,
    budgetMs: pass.budgetMs,
    orphanGraceMs: grace,
    maxIdleMs: maxIdle,
    limit: checkedLimit,
    leaseMs: lease,
    backoffMs: backoff,
    maxBackoffMs: maxBackoff,
    progress: pass.onProgress !== undefined,
    stopped: false,
  };
  return drive((now) => native.startReconcile({ ...start, stopped: pass.signal?.aborted === true }, now), host);
}

module.exports = { reclaimSandbox, sandboxReclaimer, retryLeaks, reclaimAll, reconcile };
