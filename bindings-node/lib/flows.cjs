'use strict';
// The flows, as declarations: each checks its arguments (TypeError naming the
// field, before any host call), reads every host property once, and starts
// the core's machine on the generic driver. No rule lives here.

const native = require('./native.cjs');
const { drive, exactString, levels } = require('./driver.cjs');

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

/** The run record's two fields a reclaim reads, each read once. */
function readRecord(record) {
  checkObject(record, 'record', 'a RunRecord');
  const runId = record.runId;
  if (typeof runId !== 'string') throw new TypeError('record.runId must be a string');
  exactString(runId, 'record.runId');
  const sandboxKey = record.sandboxKey;
  if (sandboxKey !== undefined && typeof sandboxKey !== 'string') throw new TypeError('record.sandboxKey must be a string when present');
  if (sandboxKey !== undefined) exactString(sandboxKey, 'record.sandboxKey');
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
    destroy,
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
    provider,
    destroy,
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

module.exports = { reclaimSandbox, sandboxReclaimer, retryLeaks };
