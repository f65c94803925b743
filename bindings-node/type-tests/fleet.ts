// Types of the fleet passes (checked by `npm run typecheck`, never run).
import {
  reclaimAll,
  reconcile,
  InMemorySandboxInstanceStore,
  SqliteSandboxInstanceStore,
  LocalProvider,
  type FleetReclaimReport,
  type FleetReclaimOptions,
  type RecordReport,
  type RecordOutcome,
  type ReconcileOptions,
  type ReconcileReport,
  type ProviderReport,
  type Action,
  type SweepStatus,
  type AuditEntry,
  type ListedSandbox,
  type FleetStore,
  type FleetProvider,
  type ProgressEvent,
} from 'sandbox-reclaim';

export async function fleet(): Promise<void> {
  const sqlite = await SqliteSandboxInstanceStore.open('/tmp/x.db');
  const local = new LocalProvider({ baseDir: '/tmp/s', owner: 'team-a' });
  const js: FleetProvider = {
    name: 'js',
    destroy: async ({ id, signal }) => void [id, signal],
    list: (): ListedSandbox[] => [{ id: 'a', createdAt: 1, owner: 'sandbox-reclaim', key: null }],
  };
  const controller = new AbortController();
  const onProgress = (event: ProgressEvent): void => {
    if (event.kind === 'record') void event.outcome;
    else void event.result;
  };
  const options: FleetReclaimOptions = { providers: [local, js], instances: sqlite, concurrency: 4, budgetMs: 1000, signal: controller.signal, onProgress };
  const report: FleetReclaimReport = await reclaimAll([{ runId: 'r', sandboxKey: 'k' }], options);
  const line: RecordReport = report.records[0]!;
  const outcome: RecordOutcome = line.outcome;
  const deferred: number = report.counts.deferred;

  const store: FleetStore = sqlite;
  const memory = new InMemorySandboxInstanceStore({ ledger: true });
  const reconcileOptions: ReconcileOptions = { provider: local, instances: store, dryRun: true, orphanGraceMs: 0, maxIdleMs: 60_000, owner: 'x', host: 'h' };
  const pass: ReconcileReport = await reconcile(reconcileOptions);
  const provider: ProviderReport = pass.providers[0]!;
  const status: SweepStatus = provider.orphans.status;
  const action: Action | undefined = pass.actions[0];
  const audit: AuditEntry[] = await sqlite.listAudit({ since: 0, limit: 10 });
  const memoryAudit: AuditEntry[] | undefined = await memory.listAudit?.();
  void [outcome, deferred, status, action, audit, memoryAudit];

  // The registry: on the native stores; optional on a user's fleet store.
  const registered: string[] = await sqlite.registeredSandboxes('local', Date.now() - 86_400_000);
  const memoryRegistered: string[] | undefined = await memory.registeredSandboxes?.('local', 0);
  const withRegistry: FleetStore = { ...store, registeredSandboxes: (provider: string, since: number) => [provider, String(since)] };
  const registry = store.registeredSandboxes;
  void [registered, memoryRegistered, withRegistry, registry];
  await reconcile({ ...reconcileOptions, registryRetentionMs: 0 });

  // Pruning (bounded growth): on the native stores; optional on a user's fleet store.
  await sqlite.prune('local', Date.now() - 86_400_000, Date.now() - 7 * 86_400_000);
  await memory.prune?.('local', 0, 0);
  const withPrune: FleetStore = { ...store, prune: (provider: string, registryBefore: number, auditBefore: number) => void [provider, registryBefore, auditBefore] };
  void withPrune;
  await reconcile({ ...reconcileOptions, auditRetentionMs: 0 });
  const unlabelled: ListedSandbox = { id: 'u1', createdAt: 1, owner: '' };
  void unlabelled;

  // The scoped reads (a sweep asks about what it listed): on the native stores; all or none on a user's.
  const mark: number = await sqlite.sweepMark('local');
  const referenced: string[] = await sqlite.referencedAmong('local', ['a', 'b'], Date.now() - 600_000, mark);
  const registeredAmong: string[] = await sqlite.registeredAmong('local', ['a'], 0);
  const candidates: string[] = await sqlite.lookupCandidates('local', 0, 100);
  await sqlite.lookupChecked('local', ['gone'], ['checked'], Date.now());
  const memoryMark: number | undefined = await memory.sweepMark?.('local');
  const memoryCandidates: string[] | undefined = await memory.lookupCandidates?.('local', 0, 1);
  await memory.lookupChecked?.('local', [], [], 0);
  const scoped: FleetStore = {
    ...store,
    sweepMark: () => 1,
    referencedAmong: (provider: string, ids: string[]) => ids.filter((id) => id !== provider),
    registeredAmong: async (provider: string, ids: string[], since: number) => ids.slice(since),
    lookupCandidates: () => [],
    lookupChecked: () => undefined,
  };
  void [referenced, registeredAmong, candidates, memoryMark, memoryCandidates, scoped];

  // @ts-expect-error records is an array
  void reclaimAll({ runId: 'r' }, options);
  // @ts-expect-error concurrency is a number
  void reclaimAll([], { ...options, concurrency: '4' });
  // @ts-expect-error reconcile needs a fleet store
  void reconcile({ provider: local, instances: { get: () => null, upsert: () => undefined, delete: () => undefined } });
  // @ts-expect-error dryRun is a boolean
  void reconcile({ ...reconcileOptions, dryRun: 'yes' });
  // @ts-expect-error registryRetentionMs is a number
  void reconcile({ ...reconcileOptions, registryRetentionMs: '30d' });
  // @ts-expect-error auditRetentionMs is a number
  void reconcile({ ...reconcileOptions, auditRetentionMs: '90d' });
  // @ts-expect-error prune's bounds are numbers
  const badPrune: FleetStore = { ...store, prune: (provider: string, registryBefore: string) => void [provider, registryBefore] };
  void badPrune;
  // @ts-expect-error the registry answers ids
  const badRegistry: FleetStore = { ...store, registeredSandboxes: () => [1] };
  void badRegistry;
  // @ts-expect-error a sweep's mark is a number
  const badMark: FleetStore = { ...store, sweepMark: () => 'm' };
  void badMark;
  // @ts-expect-error referencedAmong takes the ids as an array
  const badAmong: FleetStore = { ...store, referencedAmong: (provider: string, ids: string) => [provider, ids] };
  void badAmong;
  // @ts-expect-error a sweep status is a closed union
  const wrong: SweepStatus = 'maybe';
  void wrong;
}
