// Type declarations of `sandbox-reclaim`, a drop-in for the reclaim module of
// `@tanstack/ai-sandbox`. TanStack's own types (`RunRecord` from
// `@tanstack/ai`, `InternalLogger`, `SandboxProvider`, `SandboxStore`) are
// assignable to these: see tests/types/tanstack.ts.

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

/** What the provider's `destroy` receives: a fresh object per call. */
export interface ReclaimDestroyInput {
  id: string;
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
 * rejects with {@link SandboxReclaimFailedError} on `'destroy-failed'`.
 */
export declare function sandboxReclaimer(options: ReclaimSandboxOptions): (record: ReclaimableRun) => Promise<void>;

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
 * A native (Rust) in-memory store. It copies records in and out. Given to a
 * reclaim, its `get`/`delete` are answered natively within the same call.
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
  listLeaks?: (provider?: string) => Promise<SandboxLeakEntry[]>;
}

/** Checks a JS store's shape (TypeError naming the missing method) and returns it unchanged. */
export declare function defineSandboxInstanceStore<T extends SandboxInstanceStore>(store: T): T;
