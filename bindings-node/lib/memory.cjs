'use strict';
// InMemorySandboxInstanceStore (the core's in-memory store behind a JS class)
// and defineSandboxInstanceStore.

const native = require('./native.cjs');
const { exactString } = require('./driver.cjs');

/**
 * An instance store kept natively (the core's in-memory store). It copies
 * records in and out; a flow calls its methods like any store's.
 */
class InMemorySandboxInstanceStore {
  #native;

  /** @param {{ ledger?: boolean }} [options] */
  constructor(options) {
    if (options !== undefined && (options === null || typeof options !== 'object')) {
      throw new TypeError('InMemorySandboxInstanceStore: options must be an object');
    }
    const ledger = options?.ledger ?? false;
    if (typeof ledger !== 'boolean') throw new TypeError('InMemorySandboxInstanceStore: options.ledger must be a boolean');
    this.#native = new native.MemoryStore(ledger);
    if (ledger) {
      // Own properties, so `typeof store.deleteRecordingLeak === 'function'`
      // holds exactly for ledger stores.
      const store = this.#native;
      this.deleteRecordingLeak = async (key, leak) => refused(() => store.deleteRecordingLeak(checkKey(key), checkLeak(leak)));
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
  return exactString(key, 'key');
}

function checkString(object, field, owner, optional) {
  const value = object[field];
  if (optional && value === undefined) return;
  exactString(value, `${owner}.${field}`);
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


/** A store declares all three. */
const STORE_METHODS = ['get', 'upsert', 'delete'];

function checkStore(store, name, methods) {
  if (store === null || typeof store !== 'object') throw new TypeError(`${name} must be an object (a SandboxInstanceStore)`);
  for (const method of methods) {
    if (typeof store[method] !== 'function') throw new TypeError(`${name}.${method} must be a function`);
  }
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

module.exports = { InMemorySandboxInstanceStore, defineSandboxInstanceStore };
