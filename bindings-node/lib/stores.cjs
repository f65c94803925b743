'use strict';
// The durable instance stores (the core's SQLite and PostgreSQL stores) and
// the leak-ledger functions `listLeaks` and `retryLeaks`.
//
// A store is a thin facade over the native `SqlStore`: every method checks
// its arguments' types (TypeError naming the field), then awaits the native
// Promise. Reclaims use these stores like any JS store (they have
// `deleteRecordingLeak`, so a failed destroy is recorded in the ledger).

const native = require('./native.cjs');
const {
  nativeCall,
  checkObject,
  checkString,
  checkOptionalString,
  checkOptionalWhole,
  messageOf,
} = require('./errors.cjs');

/** Lets only the static factories construct a store. */
const OPENING = Symbol('opening');

let sqlNativeOf;

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
  if (!Number.isInteger(entry.attempts) || entry.attempts < 0) throw new TypeError('entry.attempts must be a whole number >= 0');
  return entry;
}

function checkProvider(provider) {
  if (provider !== undefined && provider !== null && typeof provider !== 'string') {
    throw new TypeError('provider must be a string (or undefined for every provider)');
  }
  return provider ?? undefined;
}

function checkLimit(limit) {
  if (!(Number.isInteger(limit) && limit >= 0 && limit <= 0xffff_ffff)) throw new TypeError('limit must be a whole number >= 0');
  return limit;
}

function checkLeaseMs(leaseMs) {
  if (!(Number.isInteger(leaseMs) && leaseMs >= 0)) throw new TypeError('leaseMs must be a whole number of milliseconds >= 0');
  return leaseMs;
}

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
    if (typeof failedAt !== 'number') throw new TypeError('failedAt must be a number (epoch milliseconds)');
    await nativeCall(() => this.#native.recordRetryFailure(entry, message, failedAt));
  }

  /** Closes the connection pool; later calls reject. */
  async close() {
    await nativeCall(() => this.#native.close());
  }

  static {
    sqlNativeOf = (store) => (store !== null && typeof store === 'object' && #native in store ? store.#native : undefined);
  }
}

/** An instance store with a leak ledger in one SQLite file (WAL mode), shareable by processes. */
class SqliteSandboxInstanceStore extends SqlSandboxInstanceStore {
  static factoryName = 'open';

  /**
   * Opens (creating if missing) the store at `path` and migrates it.
   * @param {string} path
   * @param {{ busyTimeoutMs?: number, maxConnections?: number }} [options]
   */
  static async open(path, options = {}) {
    checkString(path, 'path');
    checkObject(options, 'options');
    checkOptionalWhole(options, 'busyTimeoutMs', 'options');
    checkOptionalWhole(options, 'maxConnections', 'options');
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
    checkOptionalWhole(options, 'maxConnections', 'options');
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

/**
 * Retries the destroy of `provider`'s pending leaks in `instances`' ledger.
 * Native provider + native store: one call into the core's `retry_leaks`.
 * Otherwise a short loop over the store's claimLeaks / resolveLeak /
 * recordRetryFailure, with the provider's `destroy` called as a method.
 *
 * `nativeParts` (from index wiring) maps a provider or store to its native half.
 */
function makeRetryLeaks({ nativeProviderOf, memoryNativeOf }) {
  return async function retryLeaks(options) {
    checkObject(options, 'options');
    const { provider, instances } = options;
    const limit = options.limit ?? 100;
    const leaseMs = options.leaseMs ?? 300_000;
    checkObject(provider, 'options.provider');
    if (typeof provider.name !== 'string') throw new TypeError('options.provider.name must be a string');
    if (typeof provider.destroy !== 'function') throw new TypeError('options.provider.destroy must be a function');
    checkObject(instances, 'options.instances');
    for (const method of ['claimLeaks', 'resolveLeak', 'recordRetryFailure']) {
      if (typeof instances[method] !== 'function') {
        throw new TypeError(`options.instances.${method} must be a function (a store with a leak ledger)`);
      }
    }
    if (!(Number.isInteger(limit) && limit >= 0 && limit <= 0xffff_ffff)) throw new TypeError('options.limit must be a whole number >= 0');
    if (!(Number.isInteger(leaseMs) && leaseMs >= 0)) throw new TypeError('options.leaseMs must be a whole number of milliseconds >= 0');

    const nativeProvider = nativeProviderOf(provider);
    if (nativeProvider !== undefined) {
      const sql = sqlNativeOf(instances);
      if (sql !== undefined) return nativeCall(() => nativeProvider.retryLeaksInSql(sql, limit, leaseMs));
      const memory = memoryNativeOf(instances);
      if (memory !== undefined) return nativeCall(() => nativeProvider.retryLeaksInMemory(memory, limit, leaseMs));
    }
    const summary = { retried: 0, destroyed: 0, stillFailing: 0 };
    for (const entry of await instances.claimLeaks(provider.name, limit, leaseMs)) {
      summary.retried += 1;
      try {
        await provider.destroy({ id: entry.providerSandboxId });
      } catch (error) {
        await instances.recordRetryFailure(entry, messageOf(error), Date.now());
        summary.stillFailing += 1;
        continue;
      }
      await instances.resolveLeak(entry);
      summary.destroyed += 1;
    }
    return summary;
  };
}

module.exports = { SqliteSandboxInstanceStore, PostgresSandboxInstanceStore, listLeaks, makeRetryLeaks };
