// TanStack's own published types must be assignable to ours, so an app swaps
// `@tanstack/ai-sandbox`'s reclaim for `sandbox-reclaim` by changing its import.
import type { RunRecord as TanStackRunRecord } from '@tanstack/ai';
import type { InternalLogger } from '@tanstack/ai/adapter-internals';
import type { SandboxProvider, SandboxStore, SandboxRecord } from '@tanstack/ai-sandbox';
import {
  reclaimSandbox,
  sandboxReclaimer,
  SandboxReclaimFailedError,
  InMemorySandboxInstanceStore,
  defineSandboxInstanceStore,
  type RunRecord,
  type RunStatus,
  type ReclaimOutcome,
  type ReclaimProvider,
  type ReclaimLogger,
  type SandboxInstanceRecord,
  type SandboxInstanceStore,
  type ReclaimSandboxOptions,
} from 'sandbox-reclaim';

/** The store as the reference documents it: `get` → record or `null`, `upsert`, `delete`. */
interface DocumentedSandboxInstanceStore {
  get(key: string): Promise<SandboxRecord | null>;
  upsert(record: SandboxRecord): Promise<void>;
  delete(key: string): Promise<void>;
}

declare const run: TanStackRunRecord;
declare const logger: InternalLogger;
declare const provider: SandboxProvider;
declare const documentedStore: DocumentedSandboxInstanceStore;
declare const tanstackStore: SandboxStore;

// Assignability, one type at a time.
export const asRun: RunRecord = run;
export const asStatus: RunStatus = run.status;
export const asLogger: ReclaimLogger = logger;
export const asProvider: ReclaimProvider = provider;
export const asStore: SandboxInstanceStore = documentedStore;
export const asTanStackStore: SandboxInstanceStore = tanstackStore;
export const asRecord: SandboxInstanceRecord = {} as SandboxRecord;
// And ours back into TanStack's: the native store is a SandboxStore.
export const nativeAsTanStack: SandboxStore = new InMemorySandboxInstanceStore();

export const options: ReclaimSandboxOptions = { provider, instances: documentedStore, logger };

export async function swapImport(): Promise<ReclaimOutcome> {
  const reclaim: (record: TanStackRunRecord) => Promise<void> = sandboxReclaimer({ provider, instances: tanstackStore, logger });
  await reclaim(run);
  return reclaimSandbox(run, { provider, instances: documentedStore, logger });
}

export function failure(error: unknown): string | undefined {
  if (error instanceof SandboxReclaimFailedError) {
    const name: 'SandboxReclaimFailedError' = error.name;
    const runId: string = error.runId;
    return `${name} ${runId} ${error.sandboxKey ?? ''}`;
  }
  return undefined;
}

export const defined = defineSandboxInstanceStore(documentedStore);
