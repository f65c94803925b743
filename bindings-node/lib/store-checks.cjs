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

module.exports = { MAX_U32, checkKey, checkRecord, checkLeak, checkEntry, checkProvider, checkLimit, checkLeaseMs };
