'use strict';
// InMemorySandboxInstanceStore (the core's in-memory store behind a JS class)
// and defineSandboxInstanceStore.

const native = require('./native.cjs');
const {
  checkKey,
  checkRecord,
  checkLeak,
  checkEntry,
  checkProvider,
  checkReason,
  checkAuditEntries,
  readAuditQuery,
} = require('./store-checks.cjs');
const { checkString, checkStringArray } = require('./errors.cjs');

/**
 * An instance store kept natively (the core's in-memory store). It copies
 * records in and out; a flow calls its methods like any store's. Numbers
 * cross as given: the core checks their ranges (a TypeError with its text).
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
        checkString(provider, 'provider');
        return refused(() => store.claimLeaks(provider, limit, leaseMs));
      };
      this.resolveLeak = async (entry) => refused(() => store.resolveLeak(checkEntry(entry)));
      this.recordRetryFailure = async (entry, message, failedAt) => {
        checkEntry(entry);
        if (typeof message !== 'string') throw new TypeError('message must be a string');
        return refused(() => store.recordRetryFailure(entry, message, failedAt));
      };
      // What a fleet pass (reconcile) calls; times are epoch milliseconds.
      this.listStale = async (olderThan, limit) => refused(() => store.listStale(olderThan, limit));
      this.expireIdle = async (key, updatedAt, leak) => {
        checkKey(key);
        checkLeak(leak);
        return refused(() => store.expireIdle(key, updatedAt, leak));
      };
      this.sandboxReferences = async (provider, destroyedSince) => {
        checkString(provider, 'provider');
        return refused(() => store.sandboxReferences(provider, destroyedSince));
      };
      this.registeredSandboxes = async (provider, since) => {
        checkString(provider, 'provider');
        return refused(() => store.registeredSandboxes(provider, since));
      };
      // A sweep's questions about what it listed (see FleetStore.sweepMark ...).
      this.sweepMark = async (provider) => {
        checkString(provider, 'provider');
        return refused(() => store.sweepMark(provider));
      };
      this.referencedAmong = async (provider, ids, destroyedSince, mark) => {
        checkString(provider, 'provider');
        checkStringArray(ids, 'ids');
        return refused(() => store.referencedAmong(provider, ids, destroyedSince, mark));
      };
      this.registeredAmong = async (provider, ids, since) => {
        checkString(provider, 'provider');
        checkStringArray(ids, 'ids');
        return refused(() => store.registeredAmong(provider, ids, since));
      };
      this.lookupCandidates = async (provider, since, limit) => {
        checkString(provider, 'provider');
        return refused(() => store.lookupCandidates(provider, since, limit));
      };
      this.lookupChecked = async (provider, gone, checked, now) => {
        checkString(provider, 'provider');
        checkStringArray(gone, 'gone');
        checkStringArray(checked, 'checked');
        return refused(() => store.lookupChecked(provider, gone, checked, now));
      };
      this.prune = async (provider, registryBefore, auditBefore) => {
        checkString(provider, 'provider');
        return refused(() => store.prune(provider, registryBefore, auditBefore));
      };
      this.recordLeak = async (leak, reason, nextAttemptAt) => {
        checkLeak(leak);
        checkReason(reason);
        return refused(() => store.recordLeak(leak, reason, nextAttemptAt));
      };
      this.dueLeaks = async (provider, limit, leaseMs, now) => {
        checkString(provider, 'provider');
        return refused(() => store.dueLeaks(provider, limit, leaseMs, now));
      };
      this.deferLeak = async (entry, message, failedAt, nextAttemptAt) => {
        checkEntry(entry);
        checkString(message, 'message');
        return refused(() => store.deferLeak(entry, message, failedAt, nextAttemptAt));
      };
      this.claimSweep = async (provider, holder, leaseMs, now) => {
        checkString(provider, 'provider');
        checkString(holder, 'holder');
        return refused(() => store.claimSweep(provider, holder, leaseMs, now));
      };
      this.releaseSweep = async (provider, holder) => {
        checkString(provider, 'provider');
        checkString(holder, 'holder');
        return refused(() => store.releaseSweep(provider, holder));
      };
      this.appendAudit = async (entries) => refused(() => store.appendAudit(checkAuditEntries(entries)));
      this.listAudit = async (options) => {
        const [since, limit] = readAuditQuery(options);
        return refused(() => store.listAudit(since, limit));
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
    refused(() => native.upsert(checkRecord(record)));
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
