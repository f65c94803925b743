'use strict';
// The argument checks every store facade shares (the in-memory store in
// memory.cjs, the SQL stores in stores.cjs): a TypeError naming the field,
// before the native store sees anything. Only types and exact strings are
// checked here: every number (a limit, a lease, epoch milliseconds, a leak's
// attempts) crosses as it is, and the core checks its range
// (proto/src/options/arguments.rs), refusing it as a TypeError with its own text.

const { checkObject, checkString, checkOptionalString } = require('./errors.cjs');

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
  return entry;
}

function checkProvider(provider) {
  if (provider !== undefined && provider !== null && typeof provider !== 'string') {
    throw new TypeError('provider must be a string (or undefined for every provider)');
  }
  return provider ?? undefined;
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
    for (const field of ['host', 'provider', 'providerSandboxId', 'reason', 'result']) checkString(entry[field], `${name}.${field}`);
    for (const field of ['key', 'error']) {
      if (entry[field] !== undefined && entry[field] !== null) checkString(entry[field], `${name}.${field}`);
    }
  });
  return entries;
}

/**
 * `listAudit`'s options: `{ since?, limit? }` (absent: every row from the
 * start, at most the core's default), each read once; answers `[since, limit]`
 * as given, for the core to check.
 */
function readAuditQuery(options) {
  if (options === undefined || options === null) return [undefined, undefined];
  checkObject(options, 'options');
  const { since, limit } = options;
  return [since, limit];
}

module.exports = {
  checkKey,
  checkRecord,
  checkLeak,
  checkEntry,
  checkProvider,
  checkReason,
  checkAuditEntries,
  readAuditQuery,
};
