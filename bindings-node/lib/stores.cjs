'use strict';
// The durable instance stores (the core's SQLite and PostgreSQL stores) and
// the leak-ledger function `listLeaks` (`retryLeaks` is a flow: lib/flows.cjs).
//
// A store is a thin facade over the native `SqlStore`: every method checks
// its arguments' types (TypeError naming the field), then awaits the native
// Promise; numbers cross as given, and the core checks their ranges
// (proto/src/options/arguments.rs). Reclaims use these stores like any JS store (they
// have `deleteRecordingLeak`, so a failed destroy is recorded in the ledger).

const native = require('./native.cjs');
const { nativeCall, checkObject, checkString, checkStringArray, checkOptionalString } = require('./errors.cjs');
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
    return nativeCall(() => this.#native.claimLeaks(provider, limit, leaseMs));
  }

  /** Removes a claimed leak whose sandbox is now destroyed; `false`: its claim had passed on, nothing written. */
  async resolveLeak(entry) {
    checkEntry(entry);
    return nativeCall(() => this.#native.resolveLeak(entry));
  }

  /** Bumps a claimed leak's attempts, keeps `message`, releases the claim; `false`: its claim had passed on. */
  async recordRetryFailure(entry, message, failedAt) {
    checkEntry(entry);
    checkString(message, 'message');
    return nativeCall(() => this.#native.recordRetryFailure(entry, message, failedAt));
  }

  // ---- what a fleet pass (reconcile) calls; times are epoch milliseconds

  /** Instance records last updated before `olderThan`, oldest first, at most `limit`. */
  async listStale(olderThan, limit) {
    return nativeCall(() => this.#native.listStale(olderThan, limit));
  }

  /**
   * Deletes `key` only if its `updatedAt` is still `updatedAt`, and records
   * `leak` (reason `idle`), in one transaction; false when the record was
   * touched or is gone (then nothing is written).
   */
  async expireIdle(key, updatedAt, leak) {
    checkKey(key);
    checkLeak(leak);
    return nativeCall(() => this.#native.expireIdle(key, updatedAt, leak));
  }

  /**
   * Every providerSandboxId of `provider` that a record or a leak entry
   * references, and (with `destroyedSince`, epoch ms) every one the audit
   * log says was destroyed at or after it.
   */
  async sandboxReferences(provider, destroyedSince) {
    checkString(provider, 'provider');
    return nativeCall(() => this.#native.sandboxReferences(provider, destroyedSince));
  }

  /**
   * The registry: every providerSandboxId of `provider` that an instance
   * record named, whose record still exists or was last written or deleted
   * at or after `since` (epoch ms). Reconcile takes a listed sandbox without
   * an owner label for ours only when this names it.
   */
  async registeredSandboxes(provider, since) {
    checkString(provider, 'provider');
    return nativeCall(() => this.#native.registeredSandboxes(provider, since));
  }

  // A sweep's questions about what it listed (every native store answers
  // them, so a pass's store work follows what it lists, not the store's history).

  /**
   * A mark of the store's record deletions, taken before a sweep lists: a
   * record deleted (or pointed at another sandbox) after it is counted by
   * `referencedAmong` with this mark. A whole number that never goes down.
   */
  async sweepMark(provider) {
    checkString(provider, 'provider');
    return nativeCall(() => this.#native.sweepMark(provider));
  }

  /**
   * Those of `ids` (listed sandboxes of `provider`) that a record or a leak
   * entry references now, that an audit row says was destroyed (or a leak
   * retry resolved) at or after `destroyedSince` (epoch ms), or whose record
   * was deleted after `mark` (see `sweepMark`); sorted, each once.
   */
  async referencedAmong(provider, ids, destroyedSince, mark) {
    checkString(provider, 'provider');
    checkStringArray(ids, 'ids');
    return nativeCall(() => this.#native.referencedAmong(provider, ids, destroyedSince, mark));
  }

  /**
   * Those of `ids` the registry names: a record of `provider` names it now,
   * or one last written or deleted at or after `since` (epoch ms) did;
   * sorted, each once.
   */
  async registeredAmong(provider, ids, since) {
    checkString(provider, 'provider');
    checkStringArray(ids, 'ids');
    return nativeCall(() => this.#native.registeredAmong(provider, ids, since));
  }

  /**
   * At most `limit` registered providerSandboxIds of `provider` for a lookup
   * by id: last written or deleted at or after `since` (epoch ms), named by
   * no record or leak entry now, not known gone; never checked first (most
   * recently deleted first), then least recently checked first.
   */
  async lookupCandidates(provider, since, limit) {
    checkString(provider, 'provider');
    return nativeCall(() => this.#native.lookupCandidates(provider, since, limit));
  }

  /**
   * What a lookup learned: the sandboxes of `gone` are gone (no candidate
   * again until a record names them), those of `checked` were checked at
   * `now` (epoch ms) and go to the back of the queue.
   */
  async lookupChecked(provider, gone, checked, now) {
    checkString(provider, 'provider');
    checkStringArray(gone, 'gone');
    checkStringArray(checked, 'checked');
    await nativeCall(() => this.#native.lookupChecked(provider, gone, checked, now));
  }

  /**
   * Bounded growth: deletes `provider`'s registry rows last seen before
   * `registryBefore` and its audit rows from before `auditBefore` (epoch ms).
   * Reconcile calls it from the pass that holds the provider's sweep.
   */
  async prune(provider, registryBefore, auditBefore) {
    checkString(provider, 'provider');
    await nativeCall(() => this.#native.prune(provider, registryBefore, auditBefore));
  }

  /** Records a leak (`reason`: 'destroy-failed', 'orphan' or 'idle') due at `nextAttemptAt`. */
  async recordLeak(leak, reason, nextAttemptAt) {
    checkLeak(leak);
    checkReason(reason);
    await nativeCall(() => this.#native.recordLeak(leak, reason, nextAttemptAt));
  }

  /** `provider`'s entries due at `now`, at most `limit`; with `leaseMs`, claimed until `now + leaseMs`. */
  async dueLeaks(provider, limit, leaseMs, now) {
    checkString(provider, 'provider');
    return nativeCall(() => this.#native.dueLeaks(provider, limit, leaseMs, now));
  }

  /** A claimed entry failed again: attempts + 1, keeps `message`, due at `nextAttemptAt`, claim released; `false`: its claim had passed on. */
  async deferLeak(entry, message, failedAt, nextAttemptAt) {
    checkEntry(entry);
    checkString(message, 'message');
    return nativeCall(() => this.#native.deferLeak(entry, message, failedAt, nextAttemptAt));
  }

  /** Takes `provider`'s orphan sweep for `holder` until `now + leaseMs`, unless another holder has it. */
  async claimSweep(provider, holder, leaseMs, now) {
    checkString(provider, 'provider');
    checkString(holder, 'holder');
    return nativeCall(() => this.#native.claimSweep(provider, holder, leaseMs, now));
  }

  /** Gives `provider`'s sweep back, if `holder` still holds it. */
  async releaseSweep(provider, holder) {
    checkString(provider, 'provider');
    checkString(holder, 'holder');
    await nativeCall(() => this.#native.releaseSweep(provider, holder));
  }

  /** Appends audit rows, in order, in one transaction. */
  async appendAudit(entries) {
    checkAuditEntries(entries);
    await nativeCall(() => this.#native.appendAudit(entries));
  }

  /** Audit rows with `at >= since`, oldest first, at most `limit` (default 1000). */
  async listAudit(options) {
    const [since, limit] = readAuditQuery(options);
    return nativeCall(() => this.#native.listAudit(since, limit));
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
    const { busyTimeoutMs, maxConnections } = options;
    const store = await nativeCall(() => native.SqlStore.openSqlite(path, busyTimeoutMs, maxConnections));
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
    const { schema, instancesTable, leaksTable, schemaVersionTable, maxConnections } = options;
    const names = { schema, instancesTable, leaksTable, schemaVersionTable };
    for (const field of Object.keys(names)) checkOptionalString(names, field, 'options');
    const store = await nativeCall(() => native.SqlStore.connectPostgres(url, names, maxConnections));
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
 * The store over a native `SqlStore` opened elsewhere (the command's
 * `hostOpen`, lib/cli.cjs); `kind`: 'sqlite' or 'postgres'. Not exported by
 * the package.
 */
function adoptNativeStore(kind, nativeStore) {
  const Store = kind === 'postgres' ? PostgresSandboxInstanceStore : SqliteSandboxInstanceStore;
  return new Store(OPENING, nativeStore);
}

module.exports = { SqliteSandboxInstanceStore, PostgresSandboxInstanceStore, listLeaks, adoptNativeStore };
