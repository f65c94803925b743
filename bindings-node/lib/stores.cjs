'use strict';
// The durable instance stores (the core's SQLite and PostgreSQL stores) and
// the leak-ledger function `listLeaks` (`retryLeaks` is a flow: lib/flows.cjs).
//
// A store is a thin facade over the native `SqlStore`: every method checks
// its arguments' types (TypeError naming the field), then awaits the native
// Promise. Reclaims use these stores like any JS store (they have
// `deleteRecordingLeak`, so a failed destroy is recorded in the ledger).

const native = require('./native.cjs');
const { nativeCall, checkObject, checkString, checkOptionalString, checkOptionalWhole, checkWhole } = require('./errors.cjs');
const { MAX_U32, checkKey, checkRecord, checkLeak, checkEntry, checkProvider, checkLimit, checkLeaseMs } = require('./store-checks.cjs');

/** The longest busy timeout SQLite takes: an `int` of milliseconds. */
const MAX_BUSY_TIMEOUT_MS = 0x7fff_ffff;

/** Lets only the static factories construct a store. */
const OPENING = Symbol('opening');

/** What both SQL stores share: the methods, over one native `SqlStore`. */
class SqlSandboxInstanceStore {
  #native;

  constructor(token, nativeStore) {
    if (token !== OPENING) throw new TypeError(`use ${new.target.name}.${new.target.factoryName}(...) to open a store`);
    this.#native = nativeStore;
  }

  /** @param {string} key */
  async get(key) {
    checkKey(key);
    return nativeCall(() => this.#native.get(key));
  }

  async upsert(record) {
    checkRecord(record);
    await nativeCall(() => this.#native.upsert(record));
  }

  /** @param {string} key */
  async delete(key) {
    checkKey(key);
    await nativeCall(() => this.#native.delete(key));
  }

  /** Deletes `key` and records `leak`, in one transaction. */
  async deleteRecordingLeak(key, leak) {
    checkKey(key);
    checkLeak(leak);
    await nativeCall(() => this.#native.deleteRecordingLeak(key, leak));
  }

  /** Pending leaks, oldest first, of one provider or of all. */
  async listLeaks(provider) {
    checkProvider(provider);
    return nativeCall(() => this.#native.listLeaks(provider ?? undefined));
  }

  async countLeaks(provider) {
    checkProvider(provider);
    return nativeCall(() => this.#native.countLeaks(provider ?? undefined));
  }

  /** Claims up to `limit` of `provider`'s leaks for `leaseMs` (for a retry loop). */
  async claimLeaks(provider, limit, leaseMs) {
    checkString(provider, 'provider');
    checkLimit(limit);
    checkLeaseMs(leaseMs);
    return nativeCall(() => this.#native.claimLeaks(provider, limit, leaseMs));
  }

  /** Removes a claimed leak whose sandbox is now destroyed. */
  async resolveLeak(entry) {
    checkEntry(entry);
    await nativeCall(() => this.#native.resolveLeak(entry));
  }

  /** Bumps a claimed leak's attempts, keeps `message`, releases the claim. */
  async recordRetryFailure(entry, message, failedAt) {
    checkEntry(entry);
    checkString(message, 'message');
    checkWhole(failedAt, 'failedAt', 0, Number.MAX_SAFE_INTEGER);
    await nativeCall(() => this.#native.recordRetryFailure(entry, message, failedAt));
  }

  /** Closes the connection pool; later calls reject with a SandboxStoreError. */
  async close() {
    await nativeCall(() => this.#native.close());
  }
}

/** An instance store with a leak ledger in one SQLite file (WAL mode), shareable by processes. */
class SqliteSandboxInstanceStore extends SqlSandboxInstanceStore {
  static factoryName = 'open';

  /**
   * Opens (creating if missing) the store at `path` and migrates it. A file
   * that is not ours (another application's tables, a table of ours we did
   * not create, a newer schema) rejects with a SandboxStoreOpenError and is
   * left unchanged.
   * @param {string} path
   * @param {{ busyTimeoutMs?: number, maxConnections?: number }} [options]
   */
  static async open(path, options = {}) {
    checkString(path, 'path');
    checkObject(options, 'options');
    checkOptionalWhole(options, 'busyTimeoutMs', 'options', 0, MAX_BUSY_TIMEOUT_MS);
    checkOptionalWhole(options, 'maxConnections', 'options', 1, MAX_U32);
    const { busyTimeoutMs, maxConnections } = options;
    const store = await nativeCall(() => native.SqlStore.openSqlite(path, { busyTimeoutMs, maxConnections }));
    return new SqliteSandboxInstanceStore(OPENING, store);
  }
}

/** An instance store with a leak ledger in PostgreSQL, shared by a fleet of hosts. */
class PostgresSandboxInstanceStore extends SqlSandboxInstanceStore {
  static factoryName = 'connect';

  /**
   * Connects a pool to `url`, creates the schema if missing and migrates.
   * @param {string} url
   * @param {{ schema?: string, instancesTable?: string, leaksTable?: string, schemaVersionTable?: string, maxConnections?: number }} [options]
   */
  static async connect(url, options = {}) {
    checkString(url, 'url');
    checkObject(options, 'options');
    for (const field of ['schema', 'instancesTable', 'leaksTable', 'schemaVersionTable']) checkOptionalString(options, field, 'options');
    checkOptionalWhole(options, 'maxConnections', 'options', 1, MAX_U32);
    const { schema, instancesTable, leaksTable, schemaVersionTable, maxConnections } = options;
    const store = await nativeCall(() =>
      native.SqlStore.connectPostgres(url, { schema, instancesTable, leaksTable, schemaVersionTable, maxConnections }),
    );
    return new PostgresSandboxInstanceStore(OPENING, store);
  }
}

/** Pending leaks of `store`'s ledger, oldest first (the store's own `listLeaks`). */
async function listLeaks(store, provider) {
  if (store === null || typeof store !== 'object' || typeof store.listLeaks !== 'function') {
    throw new TypeError('store must be a store with a leak ledger (listLeaks)');
  }
  checkProvider(provider);
  return store.listLeaks(provider ?? undefined);
}

module.exports = { SqliteSandboxInstanceStore, PostgresSandboxInstanceStore, listLeaks };
