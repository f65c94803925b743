'use strict';
// The argument checks every store facade shares (the in-memory store in
// memory.cjs, the SQL stores in stores.cjs): a TypeError naming the field,
// before the native store sees anything.

const { checkObject, checkString, checkOptionalString, checkWhole } = require('./errors.cjs');

/** The largest count the native side takes (a `u32`: pool sizes, limits, attempts). */
const MAX_U32 = 0xffff_ffff;

function checkKey(key) {
  return checkString(key, 'key');
}

function checkRecord(record) {
  checkObject(record, 'record');
  for (const field of ['key', 'provider', 'providerSandboxId', 'threadId']) checkString(record[field], `record.${field}`);
  for (const field of ['latestSnapshotId', 'latestRunId']) checkOptionalString(record, field, 'record');
  if (typeof record.updatedAt !== 'number') throw new TypeError('record.updatedAt must be a number (epoch milliseconds)');
  return record;
}

function checkLeak(leak) {
  checkObject(leak, 'leak');
  for (const field of ['key', 'provider', 'providerSandboxId', 'runId', 'errorMessage']) checkString(leak[field], `leak.${field}`);
  if (typeof leak.failedAt !== 'number') throw new TypeError('leak.failedAt must be a number (epoch milliseconds)');
  return leak;
}

function checkEntry(entry) {
  checkObject(entry, 'entry');
  for (const field of ['key', 'provider', 'providerSandboxId', 'runId', 'lastError']) checkString(entry[field], `entry.${field}`);
  if (typeof entry.failedAt !== 'number') throw new TypeError('entry.failedAt must be a number (epoch milliseconds)');
  checkWhole(entry.attempts, 'entry.attempts', 0, MAX_U32);
  return entry;
}

function checkProvider(provider) {
  if (provider !== undefined && provider !== null && typeof provider !== 'string') {
    throw new TypeError('provider must be a string (or undefined for every provider)');
  }
  return provider ?? undefined;
}

function checkLimit(limit) {
  return checkWhole(limit, 'limit', 0, MAX_U32);
}

function checkLeaseMs(leaseMs) {
  return checkWhole(leaseMs, 'leaseMs', 0, Number.MAX_SAFE_INTEGER);
}

/** Epoch milliseconds (or a duration in ms): a whole number from 0 to 2^53-1. */
function checkMillis(value, name) {
  return checkWhole(value, name, 0, Number.MAX_SAFE_INTEGER);
}

/** An optional lease (`dueLeaks` without one only lists): undefined/null or milliseconds. */
function checkOptionalLeaseMs(leaseMs) {
  if (leaseMs === undefined || leaseMs === null) return undefined;
  return checkMillis(leaseMs, 'leaseMs');
}

const LEAK_REASONS = ['destroy-failed', 'orphan', 'idle'];

function checkReason(reason) {
  if (!LEAK_REASONS.includes(reason)) throw new TypeError(`reason must be one of ${LEAK_REASONS.map((r) => `'${r}'`).join(', ')}`);
  return reason;
}

/** Audit rows: `{at, host, provider, providerSandboxId, key?, reason, result, error?}`. */
function checkAuditEntries(entries) {
  if (!Array.isArray(entries)) throw new TypeError('entries must be an array of audit entries');
  entries.forEach((entry, index) => {
    const name = `entries[${index}]`;
    checkObject(entry, name);
    checkMillis(entry.at, `${name}.at`);
    for (const field of ['host', 'provider', 'providerSandboxId', 'reason', 'result']) checkString(entry[field], `${name}.${field}`);
    for (const field of ['key', 'error']) {
      if (entry[field] !== undefined && entry[field] !== null) checkString(entry[field], `${name}.${field}`);
    }
  });
  return entries;
}

/**
 * `listAudit`'s options: `{ since?, limit? }` (absent: every row from the
 * start, at most the core's default); answers `[since | undefined, limit | undefined]`.
 */
function checkAuditQuery(options) {
  if (options === undefined || options === null) return [undefined, undefined];
  checkObject(options, 'options');
  const { since, limit } = options;
  if (since !== undefined && since !== null) checkMillis(since, 'options.since');
  if (limit !== undefined) checkWhole(limit, 'options.limit', 0, MAX_U32);
  return [since ?? undefined, limit];
}

module.exports = {
  MAX_U32,
  checkKey,
  checkRecord,
  checkLeak,
  checkEntry,
  checkProvider,
  checkLimit,
  checkLeaseMs,
  checkMillis,
  checkOptionalLeaseMs,
  checkReason,
  checkAuditEntries,
  checkAuditQuery,
};
