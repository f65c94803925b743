// Type declarations of `sandbox-reclaim`, a drop-in for the reclaim module of
// `@tanstack/ai-sandbox`. TanStack's own types (`RunRecord` from
// `@tanstack/ai`, `InternalLogger`, `SandboxProvider`, `SandboxStore`) are
// assignable to these: see type-tests/tanstack.ts (`npm run typecheck`).

/** Lifecycle state of an agent run (TanStack's `RunStatus`). */
export type RunStatus = 'running' | 'interrupted' | 'completed' | 'failed' | 'aborted';

/**
 * Durable bookkeeping for one agent run (TanStack's `RunRecord`). The
 * reclaimer reads only `runId` and `sandboxKey`.
 */
export interface RunRecord {
  runId: string;
  threadId: string;
  status: RunStatus;
  /** Epoch milliseconds. */
  startedAt: number;
  finishedAt?: number;
  /** TanStack's `RunError`; carried, never read. */
  error?: unknown;
  /** TanStack's `TokenUsage`; carried, never read. */
  usage?: unknown;
  /** Key of the sandbox instance this run was bound to, if it ran in one. */
  sandboxKey?: string;
  detachedSince?: number;
  cancelRequested?: boolean;
  driverEpoch?: number;
}

/** What a reclaim reads of a run: any `RunRecord` will do. */
export type ReclaimableRun = Pick<RunRecord, 'runId' | 'sandboxKey'>;

/** One stored sandbox instance (`SandboxRecord` in `@tanstack/ai-sandbox`). */
export interface SandboxInstanceRecord {
  /** Compound sandbox key. */
  key: string;
  /** Name of the provider that owns `providerSandboxId`. */
  provider: string;
  /** The provider's id of the sandbox. */
  providerSandboxId: string;
  latestSnapshotId?: string;
  threadId: string;
  latestRunId?: string;
  /** Epoch milliseconds of the last write. */
  updatedAt: number;
}

/**
 * Maps sandbox keys to instance records (`SandboxStore` in
 * `@tanstack/ai-sandbox`). Methods may be async or synchronous; they are
 * called as methods (`this` is the store).
 */
export interface SandboxInstanceStore {
  /** The record under `key`, or `null` when there is none. */
  get(key: string): Promise<SandboxInstanceRecord | null> | SandboxInstanceRecord | null;
  /** Stores `record`, replacing any record under its key. */
  upsert(record: SandboxInstanceRecord): Promise<void> | void;
  /** Removes the record under `key`; a missing key is a no-op. */
  delete(key: string): Promise<void> | void;
}

/** A leak a ledger store records when a destroy failed (see `LedgerSandboxInstanceStore`). */
export interface SandboxLeak {
  key: string;
  provider: string;
  providerSandboxId: string;
  runId: string;
  /** The destroy failure's `message`, or `String(thrown)`. */
  errorMessage: string;
  /** Epoch milliseconds of the failure. */
  failedAt: number;
}

/** A pending leak-ledger entry of the native in-memory store. */
export interface SandboxLeakEntry {
  key: string;
  provider: string;
  providerSandboxId: string;
  runId: string;
  lastError: string;
  failedAt: number;
  attempts: number;
  /**
   * The claim this entry was handed out under (`claimLeaks`, `dueLeaks`):
   * pass the entry back as it came, and `resolveLeak`, `recordRetryFailure`
   * and `deferLeak` write only while that claim still holds. Absent on an
   * entry that was only listed.
   */
  claim?: number;
}

/**
 * A store that keeps a leak ledger: when a destroy fails, the reclaim calls
 * `deleteRecordingLeak(key, leak)` instead of `delete(key)`, and the store
 * deletes the record and records the leak in one transaction. A store has a
 * ledger exactly when `typeof store.deleteRecordingLeak === 'function'`.
 */
export interface LedgerSandboxInstanceStore extends SandboxInstanceStore {
  deleteRecordingLeak(key: string, leak: SandboxLeak): Promise<void> | void;
}

/**
 * What the provider's `destroy` receives: a fresh object per call. `signal`
 * is present only when a deadline applies (`destroyTimeoutMs`): it aborts
 * when the deadline passes, and a destroy that settles later changes nothing.
 */
export interface ReclaimDestroyInput {
  id: string;
  signal?: AbortSignal;
}

/** The part of a `SandboxProvider` a reclaim uses. */
export interface ReclaimProvider {
  readonly name: string;
  /** Destroys the sandbox; may be async or synchronous, may throw or reject. */
  destroy(input: ReclaimDestroyInput): Promise<unknown> | unknown;
}

/** The part of TanStack's `InternalLogger` a reclaim uses. */
export interface ReclaimLogger {
  warn(message: string, meta?: Record<string, unknown>): void;
  errors(message: string, meta?: Record<string, unknown>): void;
  sandbox(message: string, meta?: Record<string, unknown>): void;
}

/** How a reclaim ended. */
export type ReclaimOutcome = 'no-sandbox-key' | 'not-found' | 'provider-mismatch' | 'destroyed' | 'destroy-failed';

export interface ReclaimSandboxOptions {
  provider: ReclaimProvider;
  instances: SandboxInstanceStore;
  logger?: ReclaimLogger;
  /**
   * Cancel a destroy still running after this many milliseconds (a whole
   * number >= 1): its `signal` aborts and the reclaim takes the destroy-failed
   * path with a {@link SandboxDestroyTimeoutError}. Absent: no deadline, as
   * the reference.
   */
  destroyTimeoutMs?: number;
}

/**
 * Destroys the sandbox a terminal run was bound to, then deletes its instance
 * record, even when the destroy failed.
 *
 * Resolves `'no-sandbox-key'` (no I/O), `'not-found'`, `'provider-mismatch'`
 * (nothing touched), `'destroyed'` or `'destroy-failed'`. Rejects with the
 * very error a failing `get`/`delete` threw, or with a `TypeError` naming the
 * field for out-of-contract input (before any call on the store or provider).
 */
export declare function reclaimSandbox(record: ReclaimableRun, options: ReclaimSandboxOptions): Promise<ReclaimOutcome>;

/**
 * Adapts {@link reclaimSandbox} to `ReapOptions.reclaim`: logs the outcome and
 * rejects with {@link SandboxReclaimFailedError} on `'destroy-failed'`. The
 * options are checked here (a `TypeError` naming the field); `provider.name`
 * is read at each reclaim.
 */
export declare function sandboxReclaimer(options: ReclaimSandboxOptions): (record: ReclaimableRun) => Promise<void>;

/**
 * A destroy that did not settle within `destroyTimeoutMs`: the `error` of the
 * destroy-failed warning, and the leak entry's message.
 */
export declare class SandboxDestroyTimeoutError extends Error {
  constructor(providerSandboxId: string, timeoutMs: number);
  readonly name: 'SandboxDestroyTimeoutError';
  readonly providerSandboxId: string;
  readonly timeoutMs: number;
}

/** Thrown by {@link sandboxReclaimer} when the destroy failed and the record was deleted anyway. */
export declare class SandboxReclaimFailedError extends Error {
  constructor(runId: string, sandboxKey?: string);
  readonly name: 'SandboxReclaimFailedError';
  readonly runId: string;
  /** Absent only when the record had no key, which cannot reach this error. */
  readonly sandboxKey: string | undefined;
}

export interface InMemorySandboxInstanceStoreOptions {
  /** Keep a leak ledger (adds `deleteRecordingLeak` and `listLeaks`). Default `false`. */
  ledger?: boolean;
}

/**
 * A native (Rust) in-memory store. It copies records in and out; a reclaim
 * calls it like any store.
 */
export declare class InMemorySandboxInstanceStore implements SandboxInstanceStore {
  constructor(options?: InMemorySandboxInstanceStoreOptions);
  get(key: string): Promise<SandboxInstanceRecord | null>;
  upsert(record: SandboxInstanceRecord): Promise<void>;
  delete(key: string): Promise<void>;
  /** Copies of every record, sorted by key. */
  records(): SandboxInstanceRecord[];
  /** Present when constructed with `{ ledger: true }`. */
  deleteRecordingLeak?: (key: string, leak: SandboxLeak) => Promise<void>;
  /** Present when constructed with `{ ledger: true }`: pending leaks, oldest first. */
  listLeaks?: (provider?: string | null) => Promise<SandboxLeakEntry[]>;
  /** Present when constructed with `{ ledger: true }`. */
  countLeaks?: (provider?: string | null) => Promise<number>;
  /** Present when constructed with `{ ledger: true }` (see {@link LeakLedgerStore.claimLeaks}). */
  claimLeaks?: (provider: string, limit: number, leaseMs: number) => Promise<SandboxLeakEntry[]>;
  /** Present when constructed with `{ ledger: true }` (see {@link LeakLedgerStore.resolveLeak}). */
  resolveLeak?: (entry: SandboxLeakEntry) => Promise<boolean>;
  /** Present when constructed with `{ ledger: true }`. */
  recordRetryFailure?: (entry: SandboxLeakEntry, message: string, failedAt: number) => Promise<boolean>;
  /** Present when constructed with `{ ledger: true }` (see {@link FleetStore}). */
  listStale?: FleetStore['listStale'];
  /** Present when constructed with `{ ledger: true }`. */
  expireIdle?: FleetStore['expireIdle'];
  /** Present when constructed with `{ ledger: true }`. */
  sandboxReferences?: FleetStore['sandboxReferences'];
  /** Present when constructed with `{ ledger: true }` (see {@link FleetStore.registeredSandboxes}). */
  registeredSandboxes?: (provider: string, since: number) => Promise<string[]>;
  /** Present when constructed with `{ ledger: true }` (see {@link FleetStore.prune}). */
  prune?: (provider: string, registryBefore: number, auditBefore: number) => Promise<void>;
  /** Present when constructed with `{ ledger: true }`. */
  recordLeak?: FleetStore['recordLeak'];
  /** Present when constructed with `{ ledger: true }`. */
  dueLeaks?: FleetStore['dueLeaks'];
  /** Present when constructed with `{ ledger: true }`. */
  deferLeak?: FleetStore['deferLeak'];
  /** Present when constructed with `{ ledger: true }`. */
  claimSweep?: FleetStore['claimSweep'];
  /** Present when constructed with `{ ledger: true }`. */
  releaseSweep?: FleetStore['releaseSweep'];
  /** Present when constructed with `{ ledger: true }`. */
  appendAudit?: FleetStore['appendAudit'];
  /** Present when constructed with `{ ledger: true }`: audit rows, oldest first. */
  listAudit?: (options?: ListAuditOptions) => Promise<AuditEntry[]>;
}

/** Checks a JS store's shape (TypeError naming the missing method) and returns it unchanged. */
export declare function defineSandboxInstanceStore<T extends SandboxInstanceStore>(store: T): T;

// ------------------------------------------------ durable stores and the ledger

/**
 * A store whose leak ledger can be listed and retried: what `retryLeaks` and
 * `listLeaks` need. The native SQL stores are; so is
 * `new InMemorySandboxInstanceStore({ ledger: true })` at run time.
 */
export interface LeakLedgerStore extends LedgerSandboxInstanceStore {
  /** Pending leaks, oldest first, of one provider or of all. */
  listLeaks(provider?: string | null): Promise<SandboxLeakEntry[]>;
  /** How many leaks are pending, of one provider or of all. */
  countLeaks(provider?: string | null): Promise<number>;
  /**
   * Claims up to `limit` of `provider`'s leaks for `leaseMs` milliseconds: an
   * entry claimed by another retrier whose lease has not ended is skipped.
   * `leaseMs: 0` claims with a lease that has already ended.
   */
  claimLeaks(provider: string, limit: number, leaseMs: number): Promise<SandboxLeakEntry[]>;
  /**
   * Removes a claimed leak whose sandbox is now destroyed (identified by
   * provider + providerSandboxId), only while the entry's `claim` still
   * holds. `false`: another retrier took the entry after the lease ran out,
   * and nothing was written. (A store of your own may answer nothing: any
   * answer but `false` counts as written.)
   */
  resolveLeak(entry: SandboxLeakEntry): Promise<boolean | void>;
  /** Bumps a claimed leak's attempts, keeps `message` and releases the claim; `false` as for `resolveLeak`. */
  recordRetryFailure(entry: SandboxLeakEntry, message: string, failedAt: number): Promise<boolean | void>;
}

/** The native durable stores' methods (SQLite and PostgreSQL): instance store, leak ledger and fleet store. */
declare abstract class SqlSandboxInstanceStore implements LeakLedgerStore, FleetStore {
  /** Not constructible: use the static `open` / `connect`. */
  protected constructor();
  get(key: string): Promise<SandboxInstanceRecord | null>;
  /** Refuses an invalid record (TypeError naming the field) before writing anything. */
  upsert(record: SandboxInstanceRecord): Promise<void>;
  delete(key: string): Promise<void>;
  /** Deletes `key` and records `leak`, in one transaction. */
  deleteRecordingLeak(key: string, leak: SandboxLeak): Promise<void>;
  listLeaks(provider?: string | null): Promise<SandboxLeakEntry[]>;
  countLeaks(provider?: string | null): Promise<number>;
  claimLeaks(provider: string, limit: number, leaseMs: number): Promise<SandboxLeakEntry[]>;
  listStale(olderThan: number, limit: number): Promise<SandboxInstanceRecord[]>;
  expireIdle(key: string, updatedAt: number, leak: SandboxLeak): Promise<boolean>;
  sandboxReferences(provider: string, destroyedSince?: number): Promise<string[]>;
  /** The registry (schema version 3): see {@link FleetStore.registeredSandboxes}. */
  registeredSandboxes(provider: string, since: number): Promise<string[]>;
  /** Bounded growth: see {@link FleetStore.prune}. */
  prune(provider: string, registryBefore: number, auditBefore: number): Promise<void>;
  recordLeak(leak: SandboxLeak, reason: LeakReason, nextAttemptAt: number): Promise<void>;
  dueLeaks(provider: string, limit: number, leaseMs: number | undefined | null, now: number): Promise<DueLeakEntry[]>;
  resolveLeak(entry: SandboxLeakEntry): Promise<boolean>;
  recordRetryFailure(entry: SandboxLeakEntry, message: string, failedAt: number): Promise<boolean>;
  deferLeak(entry: SandboxLeakEntry, message: string, failedAt: number, nextAttemptAt: number): Promise<boolean>;
  claimSweep(provider: string, holder: string, leaseMs: number, now: number): Promise<boolean>;
  releaseSweep(provider: string, holder: string): Promise<void>;
  /** Appends the rows in one transaction. */
  appendAudit(entries: readonly AuditEntry[]): Promise<void>;
  /** Audit rows with `at >= since`, oldest first, at most `limit` (default 1000). */
  listAudit(options?: ListAuditOptions): Promise<AuditEntry[]>;
  /** Closes the connection pool; later calls reject. */
  close(): Promise<void>;
}

export interface SqliteStoreOptions {
  /** How long a write waits for another process's lock, in ms. Default 30 000. */
  busyTimeoutMs?: number;
  /** Connections in this handle's pool. Default 4. */
  maxConnections?: number;
}

/** An instance store with a leak ledger in one SQLite file (WAL mode), shareable by processes on one machine. */
export declare class SqliteSandboxInstanceStore extends SqlSandboxInstanceStore {
  /** Opens (creating if missing) the store at `path` and applies pending migrations. */
  static open(path: string, options?: SqliteStoreOptions): Promise<SqliteSandboxInstanceStore>;
}

export interface PostgresStoreOptions {
  /** Schema holding the tables, created if missing. Default `'public'`. */
  schema?: string;
  /** Default `'sandbox_instances'`. */
  instancesTable?: string;
  /** Default `'sandbox_leaks'`. */
  leaksTable?: string;
  /** Default `'sandbox_reclaim_schema_version'`. */
  schemaVersionTable?: string;
  /** Most connections of this handle's pool. Default 10. */
  maxConnections?: number;
}

/** An instance store with a leak ledger in PostgreSQL, shared by a fleet of hosts. */
export declare class PostgresSandboxInstanceStore extends SqlSandboxInstanceStore {
  /** Connects to `url` (`postgres://user@host:port/db`), creates the schema if missing and migrates. */
  static connect(url: string, options?: PostgresStoreOptions): Promise<PostgresSandboxInstanceStore>;
}

/** Pending leaks of `store`'s ledger, oldest first (alias of `store.listLeaks(provider)`). */
export declare function listLeaks(
  store: Pick<LeakLedgerStore, 'listLeaks'>,
  provider?: string | null,
): Promise<SandboxLeakEntry[]>;

export interface RetryLeaksOptions {
  /** A native provider, or any `{ name, destroy({ id }) }`. Only leaks recorded under its name are retried. */
  provider: ReclaimProvider;
  /** A store with a leak ledger. */
  instances: Pick<LeakLedgerStore, 'claimLeaks' | 'resolveLeak' | 'recordRetryFailure'>;
  /** Most leaks claimed in this call. Default 100. */
  limit?: number;
  /**
   * How long a claim holds before another retrier may take the entry, in ms
   * (a whole number >= 1). No destroy starts after it ends, and one still
   * running then is cancelled and its entry left to its new holder. Default 300 000.
   */
  leaseMs?: number;
  /** Cancel a destroy still running after this many ms and record it as failed. */
  destroyTimeoutMs?: number;
}

/**
 * Retries the destroy of the provider's pending leaks: claims them under a
 * lease, destroys each while the lease holds, removes the entry on success
 * and records the failure otherwise.
 */
export declare function retryLeaks(options: RetryLeaksOptions): Promise<RetrySummary>;

// ------------------------------------------------ managed providers

/** A sandbox a managed provider created or listed. */
export interface SandboxHandle {
  /** The sandbox key it was created for. */
  key: string;
  /** The provider-side id: an instance record's `providerSandboxId`. */
  id: string;
  /** Epoch milliseconds. */
  createdAt: number;
}

/** What {@link ManagedSandboxProvider.exec} produced (output as UTF-8, invalid bytes replaced). */
export interface ExecResult {
  stdout: string;
  stderr: string;
  /** `128 + n` when killed by signal `n`. */
  exitCode: number;
}

/** The methods Docker and local providers share; usable as a reclaim `provider` and a reconcile provider. */
declare abstract class ManagedSandboxProvider implements FleetProvider {
  protected constructor();
  /** The name instance records carry in `provider`. */
  get name(): string;
  /** The owner namespace its sandboxes carry (`options.owner`, default `'sandbox-reclaim'`): the orphan sweep destroys only those. */
  get owner(): string;
  /** Destroys the sandbox; already gone is success; not owned rejects with {@link SandboxNotOwnedError}. */
  destroy(input: ReclaimDestroyInput): Promise<void>;
  /** Creates the running sandbox for `key`, or returns the one it already has. */
  create(key: string, labels?: Record<string, string>): Promise<SandboxHandle>;
  /**
   * The sandboxes under this provider's owner, ordered by id, as the orphan
   * sweep reads them: a field it cannot read is `null` (a sandbox whose owner
   * cannot be read is listed with `owner: null`), so a sweep fails closed.
   */
  list(input?: FleetListInput): Promise<ListedSandbox[]>;
  /** Runs `argv` in sandbox `id` and waits for it. */
  exec(id: string, argv: readonly string[]): Promise<ExecResult>;
}

export interface DockerProviderOptions {
  /** Image every sandbox runs; must already be present on the engine. */
  image: string;
  /** Command keeping the container alive. Default `['sleep', 'infinity']`. */
  keepAlive?: string[];
  /** Default `'none'`. */
  networkMode?: string;
  /** CPU limit in CPUs. */
  cpus?: number;
  /** Memory limit in bytes (at least 6 MiB). */
  memoryBytes?: number;
  /** Owner namespace written to the owner label. Default `'sandbox-reclaim'`. */
  owner?: string;
  /** Provider name. Default `'docker'`. */
  name?: string;
  /** Engine address; default `DOCKER_HOST`, else the local socket. */
  dockerHost?: string;
}

/** Sandboxes as containers on a Docker Engine API (Docker or podman), guarded by owner labels. */
export declare class DockerProvider extends ManagedSandboxProvider {
  /** Refuses bad options with a TypeError naming the field. */
  constructor(options: DockerProviderOptions);
}

export type LocalIsolation = 'namespaces' | 'process-group';

export interface LocalProviderOptions {
  /** Directory holding one subdirectory per sandbox; created if missing. */
  baseDir: string;
  /** Owner namespace written to each sandbox's owner file. Default `'sandbox-reclaim'`. */
  owner?: string;
  /** Command keeping the sandbox alive. Default `['sleep', 'infinity']`. */
  keepAlive?: string[];
  /** Default `'auto'`: namespaces where the kernel allows, else a process group. */
  isolation?: 'auto' | LocalIsolation;
  /** Provider name. Default `'local'`. */
  name?: string;
}

/** Sandboxes as private directories plus supervised process trees. */
export declare class LocalProvider extends ManagedSandboxProvider {
  constructor(options: LocalProviderOptions);
  /** The isolation new sandboxes get. */
  isolation(): LocalIsolation;
}

// ------------------------------------------------ hosted providers

/** What every hosted provider takes. */
export interface HostedProviderOptions {
  /** Provider name instance records carry. Default the vendor's: `'e2b'`, `'daytona'`, `'vercel'`. */
  name?: string;
  /** Owner namespace: the label / metadata / tag the listing is filtered by. Default `'sandbox-reclaim'`. */
  owner?: string;
  /** API key (Vercel: access token). Default the vendor's variable (`E2B_API_KEY`, `DAYTONA_API_KEY`, `VERCEL_TOKEN`). Never printed. */
  apiKey?: string;
  /** API base URL. Default the vendor's variable (`E2B_API_URL`, `DAYTONA_API_URL`), else its public API. */
  apiUrl?: string;
  /** Sandboxes per listing page. Default (and most) E2B 100, Daytona 100 (most 200), Vercel 50. */
  pageSize?: number;
  /** Longest one HTTP request may take, 1 ms to a day. Default 30 000 ms. */
  requestTimeoutMs?: number;
  /**
   * List every sandbox of the account / project, not only those under
   * `owner`'s label / metadata / tag, so `reconcile` also finds unlabelled
   * ones (what TanStack's providers create): such a sandbox is listed with
   * `owner: ''` and swept only when the store's registry
   * (`registeredSandboxes`) names it; one labelled for another owner is
   * never touched. Default `false` (the listing is filtered by owner).
   */
  sweepUnlabelled?: boolean;
  /**
   * Most pages one listing follows (1 to 1 000 000): past it the listing
   * fails closed (the sweep is `unavailable`, naming the ceiling), whatever
   * cursors the vendor offers. Default 10 000.
   */
  maxListingPages?: number;
  /** Most sandboxes one listing reads, duplicates included (1 to 100 000 000); past it the listing fails closed. Default 1 000 000. */
  maxListingItems?: number;
}

export type E2bProviderOptions = HostedProviderOptions;
export type DaytonaProviderOptions = HostedProviderOptions;

export interface VercelProviderOptions extends HostedProviderOptions {
  /** Default `VERCEL_TEAM_ID` (absent: the token's personal account). */
  teamId?: string;
  /** Required: default `VERCEL_PROJECT_ID`. */
  projectId?: string;
}

/**
 * A provider on a vendor's hosted API: an honest `destroy` (the vendor's
 * permanent delete; already gone is success; any other failure rejects, so a
 * reclaim reports `destroy-failed` and the ledger retries it; the destroy's
 * `signal` aborts the HTTP request) and a `list` of every page under the
 * owner, for `reconcile`. Create sandboxes with the vendor's SDK, passing
 * `ownerLabels(owner, key)` as labels / metadata / tags.
 */
declare abstract class HostedSandboxProvider implements FleetProvider {
  readonly name: string;
  readonly owner: string;
  /** The API base URL in use. */
  readonly apiUrl: string;
  destroy(input: ReclaimDestroyInput): Promise<void>;
  /** Every sandbox under the owner, for the orphan sweep. */
  list(input?: FleetListInput): Promise<ListedSandbox[]>;
  /** One small authenticated call; rejects naming the variable to set when the vendor refuses the credential. */
  checkAccess(): Promise<void>;
}

/** E2B: destroy kills (`DELETE /sandboxes/{id}`); lists running and paused sandboxes by metadata. */
export declare class E2bProvider extends HostedSandboxProvider {
  /** Refuses bad options (and a missing key) with a TypeError naming the field. Sends nothing. */
  constructor(options?: E2bProviderOptions);
}

/** Daytona: destroy deletes (`DELETE /sandbox/{id}`); lists by label; `destroying` ones are listed `deleting`. */
export declare class DaytonaProvider extends HostedSandboxProvider {
  constructor(options?: DaytonaProviderOptions);
}

/** Vercel Sandbox: destroy deletes (`DELETE /v2/sandboxes/{name}`), not only stops; lists by tag. */
export declare class VercelProvider extends HostedSandboxProvider {
  constructor(options?: VercelProviderOptions);
}

/**
 * The labels / metadata to attach when creating a sandbox through a vendor
 * SDK (E2B `metadata`, Daytona `labels`, Docker labels), so `reconcile`'s
 * orphan sweep knows it as `owner`'s (default `'sandbox-reclaim'`) and for `key`.
 */
export declare function ownerLabels(owner: string | undefined, key: string): Record<string, string>;

/** A provider refused to touch a sandbox it does not own. */
export declare class SandboxNotOwnedError extends Error {
  constructor(message: string);
  readonly name: 'SandboxNotOwnedError';
  readonly code: 'SANDBOX_NOT_OWNED';
}

// ------------------------------------------------ store errors

/** The `code` of each {@link SandboxStoreError}. */
export type SandboxStoreErrorCode =
  | 'SANDBOX_STORE_FAILED'
  | 'SANDBOX_STORE_OPEN_FAILED'
  | 'SANDBOX_STORE_FOREIGN_DATABASE'
  | 'SANDBOX_STORE_INCOMPATIBLE_SCHEMA'
  | 'SANDBOX_STORE_SCHEMA_TOO_NEW';

/**
 * A durable store (SQLite, PostgreSQL) failed; the message is the backend's.
 * Refused input is a `TypeError` instead, thrown before anything is written.
 * A failed query has `code` `'SANDBOX_STORE_FAILED'` (a closed store's calls too).
 */
export declare class SandboxStoreError extends Error {
  constructor(message: string, code?: SandboxStoreErrorCode);
  readonly name: 'SandboxStoreError' | 'SandboxStoreOpenError' | 'SchemaTooNewError';
  readonly code: SandboxStoreErrorCode;
}

/**
 * A store could not be opened: the database was unreachable or a migration
 * failed (`'SANDBOX_STORE_OPEN_FAILED'`), or the SQLite file is not ours and
 * was left unchanged: another application's tables
 * (`'SANDBOX_STORE_FOREIGN_DATABASE'`), or a table of ours in a shape we did
 * not create (`'SANDBOX_STORE_INCOMPATIBLE_SCHEMA'`).
 */
export declare class SandboxStoreOpenError extends SandboxStoreError {
  constructor(message: string, code?: SandboxStoreErrorCode);
  readonly name: 'SandboxStoreOpenError' | 'SchemaTooNewError';
}

/**
 * The database was migrated by a newer version of this library; `code` is
 * `'SANDBOX_STORE_SCHEMA_TOO_NEW'`. Upgrade this package to open it.
 */
export declare class SchemaTooNewError extends SandboxStoreOpenError {
  constructor(message: string, found: number, supported: number);
  readonly name: 'SchemaTooNewError';
  readonly code: 'SANDBOX_STORE_SCHEMA_TOO_NEW';
  /** The schema version the database is at. */
  readonly found: number;
  /** The newest schema version this library knows. */
  readonly supported: number;
}

// ------------------------------------------------ fleet passes

/** Why a sandbox is in the leak ledger. */
export type LeakReason = 'destroy-failed' | 'orphan' | 'idle';

/** A ledger entry a fleet pass may retry now (what `dueLeaks` answers). */
export interface DueLeakEntry extends SandboxLeakEntry {
  reason: LeakReason;
  /** Epoch milliseconds before which no retry is due. */
  nextAttemptAt: number;
}

/** One audit row: a destroy attempt a fleet pass made. */
export interface AuditEntry {
  /** Epoch milliseconds when the attempt settled. */
  at: number;
  /** Who ran the pass (`ReconcileOptions.host`). */
  host: string;
  provider: string;
  providerSandboxId: string;
  key?: string;
  /** Why it was destroyed. */
  reason: ActionReason;
  /** `'timeout'`: the destroy did not settle within `destroyTimeoutMs`. */
  result: 'destroyed' | 'failed' | 'timeout';
  error?: string;
}

/** `listAudit`'s options. */
export interface ListAuditOptions {
  /** Rows with `at >= since` (epoch ms). Default: from the start. */
  since?: number | null;
  /** At most this many rows. Default 1000. */
  limit?: number;
}

/**
 * A sandbox as a provider's `list()` answers it for the orphan sweep. The
 * sweep fails closed: a listing with any sandbox of unknown (`null` or
 * missing) `createdAt` or `owner` destroys nothing of that provider.
 */
export interface ListedSandbox {
  /** The provider-side id (what `destroy` takes). */
  id: string;
  /** Creation time, epoch milliseconds; `null` when unknown. */
  createdAt?: number | null;
  /**
   * The owner namespace it was created under; `null` when unknown; `''`
   * when it carries no owner label (ours only when the store's registry
   * names it, see {@link FleetStore.registeredSandboxes}).
   */
  owner?: string | null;
  /** The sandbox key it was created for, when known. */
  key?: string | null;
  /** The vendor is already deleting it (Daytona `destroying`): counted as `deleting`, never destroyed again. */
  deleting?: boolean;
}

/** What a provider's `list` receives: `signal` only when a deadline applies (`destroyTimeoutMs`). */
export interface FleetListInput {
  signal?: AbortSignal;
}

/**
 * A provider of a fleet pass: a reclaim provider that may also list its
 * sandboxes (no `list`: no orphan sweep, reported `unavailable`) and name
 * its owner namespace (else the pass's `owner`).
 */
export interface FleetProvider extends ReclaimProvider {
  /** The owner namespace its sandboxes carry; wins over `ReconcileOptions.owner`. */
  readonly owner?: string;
  /** Its sandboxes; may be async or synchronous, may throw or reject (the sweep is then `unavailable`). */
  list?(input?: FleetListInput): Promise<readonly ListedSandbox[]> | readonly ListedSandbox[];
}

/**
 * What a reconcile pass calls on its store, beyond the leak ledger; every
 * store of this package has them (the in-memory one with `{ ledger: true }`).
 * Times are epoch milliseconds; methods may be async or synchronous and are
 * called as methods.
 */
export interface FleetStore {
  /** Instance records last updated before `olderThan`, oldest first, at most `limit`. */
  listStale(olderThan: number, limit: number): Promise<SandboxInstanceRecord[]> | SandboxInstanceRecord[];
  /**
   * In one transaction: deletes record `key` only if its `updatedAt` is still
   * `updatedAt`, and records `leak` (reason `idle`, due at once). `false`: the
   * record was touched or is gone, and nothing was written.
   */
  expireIdle(key: string, updatedAt: number, leak: SandboxLeak): Promise<boolean> | boolean;
  /**
   * Every `providerSandboxId` of `provider` that a record or a leak entry
   * references, and every one an audit row says was destroyed at or after
   * `destroyedSince` (epoch ms): a listing lags, and what a pass just
   * destroyed is nobody's orphan.
   */
  sandboxReferences(provider: string, destroyedSince: number): Promise<string[]> | string[];
  /**
   * Optional: the registry of every sandbox an instance record of `provider`
   * named, kept after the record is deleted. Answers the `providerSandboxId`s
   * whose record still exists or was last written or deleted at or after
   * `since` (epoch ms). With it, the orphan sweep also takes a sandbox listed
   * without an owner label (`owner: ''`) for ours when this names it; a
   * store without it names none (an unlabelled sandbox is never destroyed).
   */
  registeredSandboxes?(provider: string, since: number): Promise<string[]> | string[];
  /**
   * Optional, bounded growth: deletes `provider`'s registry rows last seen
   * before `registryBefore` and its audit rows from before `auditBefore`
   * (epoch ms). Reconcile calls it once per provider from the pass that took
   * that provider's sweep (never in a dry run), with `now −
   * registryRetentionMs` and `now − auditRetentionMs`; a failure is ignored
   * (the next holder prunes). A store without it keeps every row.
   */
  prune?(provider: string, registryBefore: number, auditBefore: number): Promise<void> | void;
  /** Records a leak without touching any record; a known sandbox's attempts are bumped. */
  recordLeak(leak: SandboxLeak, reason: LeakReason, nextAttemptAt: number): Promise<void> | void;
  /**
   * `provider`'s entries due at `now` and not claimed by another pass, oldest
   * first, at most `limit`; with `leaseMs`, claims them until `now + leaseMs`
   * (without: a dry run's listing).
   */
  dueLeaks(provider: string, limit: number, leaseMs: number | undefined, now: number): Promise<DueLeakEntry[]> | DueLeakEntry[];
  /** A claimed entry's destroy failed again: attempts + 1, keep `message`, due at `nextAttemptAt`, claim released. */
  deferLeak(entry: SandboxLeakEntry, message: string, failedAt: number, nextAttemptAt: number): Promise<boolean | void> | boolean | void;
  /**
   * Removes an entry whose sandbox is now destroyed. Both write only while
   * the entry's `claim` still holds, answering `false` when it does not (any
   * other answer counts as written).
   */
  resolveLeak(entry: SandboxLeakEntry): Promise<boolean | void> | boolean | void;
  /** Takes `provider`'s orphan sweep for `holder` until `now + leaseMs`, unless another holder's lease runs. */
  claimSweep(provider: string, holder: string, leaseMs: number, now: number): Promise<boolean> | boolean;
  /** Gives `provider`'s sweep back, if `holder` still holds it. */
  releaseSweep(provider: string, holder: string): Promise<void> | void;
  /** Appends audit rows, in order. */
  appendAudit(entries: AuditEntry[]): Promise<void> | void;
}

/** A progress event of {@link reclaimAll}: after each record. */
export interface RecordProgressEvent {
  kind: 'record';
  /** Records concluded so far, of `total`. */
  done: number;
  total: number;
  runId: string;
  sandboxKey: string | null;
  outcome: RecordOutcome;
  /** Since the pass started. */
  elapsedMs: number;
}

/** A progress event of {@link reconcile}: after each destroy settles (or is deferred). */
export interface ActionProgressEvent {
  kind: 'action';
  done: number;
  total: number;
  reason: ActionReason;
  provider: string;
  providerSandboxId: string;
  result: ActionResult;
  elapsedMs: number;
}

/** Any fleet pass's progress event. */
export type ProgressEvent = RecordProgressEvent | ActionProgressEvent;

/** What both fleet passes take (besides their store). */
export interface FleetPassOptions<Provider extends ReclaimProvider> {
  /** The one provider; or give `providers`. */
  provider?: Provider;
  /** The providers, by distinct `name`: each record (or leak, or listing) goes to the one it names. */
  providers?: readonly Provider[];
  /**
   * Records (reconcile: destroys) in progress at once: a whole number >= 1. Default 16.
   * reclaimAll: a record writing its outcome gives its slot to the next one
   * meanwhile, with at most `concurrency` such writes at once.
   */
  concurrency?: number;
  /** Destroys in flight per provider: a whole number >= 1. Default: `concurrency`. */
  perProviderConcurrency?: number;
  /**
   * Cancel a destroy (reconcile: or a listing) still running after this many
   * ms (a whole number >= 1): its `signal` aborts and it counts as failed.
   * Default: no deadline.
   */
  destroyTimeoutMs?: number;
  /** Start nothing new after this many ms (a whole number >= 1); the rest is reported `deferred`. Default: no budget. */
  budgetMs?: number;
  /** Stops the pass: nothing new starts, what runs settles (or reaches its deadline), the rest is reported `deferred`. */
  signal?: AbortSignal;
  /** Called synchronously with each progress event; whatever it throws is ignored. */
  onProgress?: (event: ProgressEvent) => void;
}

/** {@link reclaimAll}'s options. */
export interface FleetReclaimOptions extends FleetPassOptions<ReclaimProvider> {
  /** The instance store; with `deleteRecordingLeak` a failed destroy is recorded as a leak. */
  instances: SandboxInstanceStore;
  /** Gets exactly `reclaimSandbox`'s lines, per record. */
  logger?: ReclaimLogger;
}

/** {@link reconcile}'s options. */
export interface ReconcileOptions extends FleetPassOptions<FleetProvider> {
  /** A store with a leak ledger and the fleet methods (every native store; `InMemorySandboxInstanceStore({ ledger: true })`). */
  instances: FleetStore;
  /** Plan only: read, change nothing, report what would be destroyed (`planned`). Default `false`. */
  dryRun?: boolean;
  /** Retry the ledger's due leaks. Default `true`; `false`: sweep orphans and expire idle records only (the command's `orphans`). */
  retryLeaks?: boolean;
  /** Spare unreferenced sandboxes younger than this many ms (by the provider's `createdAt`): a whole number >= 0. Default 600 000 (10 min). */
  orphanGraceMs?: number;
  /** Expire records not updated for this many ms into the ledger (reason `idle`): a whole number >= 1. Default: no idle expiry. */
  maxIdleMs?: number;
  /** Most ledger entries claimed per provider, and stale records read: a whole number >= 1. Default 1000. */
  limit?: number;
  /** How long claims (ledger entries, a provider's sweep) hold, in ms: a whole number >= 1. Default 300 000 (5 min). */
  leaseMs?: number;
  /** First wait after a failed retry, in ms, doubling per failure: a whole number >= 0. Default 30 000. */
  backoffMs?: number;
  /** The longest wait between retries, in ms: a whole number >= 0. Default 3 600 000 (1 h). */
  maxBackoffMs?: number;
  /**
   * How long, in ms after its record was last written or deleted, the store's
   * registry (`registeredSandboxes`) still names a sandbox as ours, so that
   * an unlabelled listed sandbox (`owner: ''`) it names is swept: a whole
   * number >= 0. Default 2 592 000 000 (30 days). Ignored by a store without
   * `registeredSandboxes`.
   */
  registryRetentionMs?: number;
  /**
   * How long, in ms, the audit log keeps a row: the pass that takes a
   * provider's sweep prunes that provider's audit rows older than this, and
   * its registry rows past `registryRetentionMs`: a whole number >= 0.
   * Default 7 776 000 000 (90 days). Ignored by a store without `prune`.
   */
  auditRetentionMs?: number;
  /** The owner namespace of providers that name none. Default `'sandbox-reclaim'`. */
  owner?: string;
  /** Who runs the pass: the audit rows' `host`. Default `os.hostname()`. */
  host?: string;
}

// ---- generated by scripts/gen_declarations.py from the Rust types (proto/src): do not edit ----
/** How one record of a fleet reclaim ended. */
export type RecordOutcome =
  /** The run had no `sandboxKey`: nothing to reclaim. */
  | 'no-sandbox-key'
  /** No instance record under the key. */
  | 'not-found'
  /** No provider of the pass has the name its instance record names; nothing was touched. */
  | 'provider-mismatch'
  /** Destroyed, and the record deleted. */
  | 'destroyed'
  /** The destroy failed (the record was deleted anyway; with a ledger, the sandbox is in it). */
  | 'destroy-failed'
  /** A store call (or the logger) failed; see the record's `error`. */
  | 'error'
  /** Not started (or its destroy never started): the budget ran out or the pass was stopped. */
  | 'deferred'
  /** Another record with the same `sandboxKey` was reclaimed instead. */
  | 'duplicate';

/** One record's line in a `FleetReclaimReport`. */
export interface RecordReport {
  runId: string;
  sandboxKey?: string;
  outcome: RecordOutcome;
  /** The destroy's error message (`destroy-failed`) or the store's (`error`). */
  error?: string;
  /** From the record's start to its end, on the driver's clock. */
  durationMs: number;
}

/** Records per outcome (every outcome present). */
export interface OutcomeCounts {
  'no-sandbox-key': number;
  'not-found': number;
  'provider-mismatch': number;
  destroyed: number;
  'destroy-failed': number;
  error: number;
  deferred: number;
  duplicate: number;
}

/** What `reclaimAll` resolves with: counts, and one line per record in the order given. */
export interface FleetReclaimReport {
  /** Records given. */
  total: number;
  counts: OutcomeCounts;
  /** One line per record, in the order given. */
  records: RecordReport[];
  /** From the pass's start to its end. */
  elapsedMs: number;
}

/** Why a pass destroys (or would destroy) a sandbox. */
export type ActionReason =
  /** A ledger entry of a failed destroy (a reclaim's or an orphan's). */
  | 'leak-retry'
  /** A listed sandbox no record, ledger entry or recent destroy references, past its grace. */
  | 'orphan'
  /** An expired idle record (its ledger entry, or the record in a dry run). */
  | 'idle';

/** What became of an action. */
export type ActionResult =
  /** Dry run: would be destroyed. */
  | 'planned'
  /** Destroyed (a leak's entry resolved). */
  | 'destroyed'
  /** The destroy failed (or timed out); the sandbox is in the ledger. */
  | 'failed'
  /** Not started (budget, stop, a lapsed lease, a failed store): still in the ledger, or still listed for the next pass. */
  | 'deferred'
  /** Idle expiry skipped a record updated since it was read. */
  | 'touched';

/** One sandbox a pass acted on (or would, in a dry run). */
export interface Action {
  reason: ActionReason;
  provider: string;
  providerSandboxId: string;
  key?: string;
  result: ActionResult;
  error?: string;
}

/** How a provider's orphan sweep went. */
export type SweepStatus =
  /** Listed and swept (or planned, in a dry run). */
  | 'swept'
  /** Destroyed nothing: no `list`, a listing or store read failed, or a sandbox of unknown creation time or owner (fail closed). See `error`. */
  | 'unavailable'
  /** Another host holds this provider's sweep. */
  | 'held-elsewhere'
  /** Not started: the budget ran out, the pass was stopped or a store failed. */
  | 'skipped';

/** The leak side of a provider's pass. */
export interface LeakCounts {
  /** Due entries claimed (or listed, in a dry run). */
  due: number;
  destroyed: number;
  failed: number;
  deferred: number;
  /** Outcomes the store refused to write because another pass had taken the entry's claim meanwhile (also counted in `destroyed` or `failed`). */
  leaseLost: number;
}

/** The orphan side of a provider's pass. */
export interface OrphanCounts {
  status: SweepStatus;
  error?: string;
  /** Sandboxes the provider listed. */
  listed: number;
  /** Listed under another owner: never touched. */
  foreign: number;
  /** Referenced by a record or a ledger entry, acted on earlier in this pass (a leak retry, an idle expiry), or destroyed by a pass on any host within the orphan grace (the audit log): never swept. */
  referenced: number;
  /** Unreferenced but inside the grace period. */
  young: number;
  /** Already being deleted by the vendor (Daytona `destroying`): never destroyed again. */
  deleting: number;
  /** Orphans found (destroyed, failed, deferred or planned). */
  found: number;
  destroyed: number;
  failed: number;
  deferred: number;
}

/** One provider's part of a `ReconcileReport`. */
export interface ProviderReport {
  /** The provider's `name`. */
  name: string;
  leaks: LeakCounts;
  orphans: OrphanCounts;
}

/** The idle-expiry part of a `ReconcileReport`. */
export interface IdleCounts {
  /** The pass had a `maxIdle`. */
  enabled: boolean;
  /** Stale records read. */
  stale: number;
  /** Expired into the ledger (or planned, in a dry run). */
  expired: number;
  /** Updated since they were read, or expired meanwhile by another pass: left alone. */
  touched: number;
  /** Of a provider this pass does not know: left alone. */
  skipped: number;
}

/** Actions per result. */
export interface ActionCounts {
  planned: number;
  destroyed: number;
  failed: number;
  deferred: number;
  touched: number;
}

/** What `reconcile` resolves with. */
export interface ReconcileReport {
  /** A plan only: nothing was changed. */
  dryRun: boolean;
  /** Who ran the pass (the audit rows' `host`). */
  host: string;
  /** Epoch milliseconds. */
  startedAt: number;
  /** From the pass's start to its end. */
  elapsedMs: number;
  /** The budget ran out or the pass was stopped before it was done. */
  cutShort: boolean;
  idle: IdleCounts;
  /** One per provider, in the order given. */
  providers: ProviderReport[];
  counts: ActionCounts;
  /** Every sandbox acted on (or planned), in the order decided. */
  actions: Action[];
  /** Whether anything may still be billing after the pass, as the core decided (`ReconcileReport::still_leaking`): a failed or deferred destroy, a destroy a dry run planned, a pass cut short, or a sweep that failed closed (a provider that cannot list at all does not count). */
  stillLeaking: boolean;
}

/** What one leak retry (`retry_leaks`, `retryLeaks`) did. */
export interface RetrySummary {
  /** Entries claimed and retried. */
  retried: number;
  /** Entries whose destroy now succeeded (and were removed). */
  destroyed: number;
  /** Entries whose destroy failed again (attempts bumped, error kept), or was cut when the claim's lease ran out (entry left to its new holder). */
  stillFailing: number;
  /** Entries whose outcome the store refused to write because another retrier had taken their claim meanwhile (the lease ran out): the entry is that holder's now. Counted in `destroyed` or `still_failing` too, by what the destroy did. */
  leaseLost: number;
}
// ---- end of generated declarations ----

/**
 * Reclaims many runs side by side, each exactly as {@link reclaimSandbox}
 * would (same calls, log lines and outcome per record): at most
 * `concurrency` at once, each routed to the provider its instance names,
 * records sharing a `sandboxKey` reclaimed once. Never rejects because one
 * record failed: a store failure is the record's `error`. Rejects with a
 * `TypeError` naming the argument for bad input, before any call.
 */
export declare function reclaimAll(records: readonly ReclaimableRun[], options: FleetReclaimOptions): Promise<FleetReclaimReport>;

/**
 * One reconcile pass: expires idle records into the ledger (with
 * `maxIdleMs`), retries due leaks (backing off exponentially), and sweeps
 * orphans (listed under the owner, referenced by no record or leak, older
 * than `orphanGraceMs`) under a per-provider sweep lease, failing closed.
 * Every destroy attempt is audited. Rejects with the very error of the first
 * failing store write (after what runs has settled), or a `TypeError` naming
 * the option for bad input, before any call.
 */
export declare function reconcile(options: ReconcileOptions): Promise<ReconcileReport>;
