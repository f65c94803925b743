// Types of the durable stores, the leak ledger functions and the managed
// providers (checked by `npm run typecheck`, never run).
import {
  SqliteSandboxInstanceStore,
  PostgresSandboxInstanceStore,
  InMemorySandboxInstanceStore,
  DockerProvider,
  LocalProvider,
  E2bProvider,
  DaytonaProvider,
  VercelProvider,
  ownerLabels,
  reconcile,
  SandboxNotOwnedError,
  reclaimSandbox,
  sandboxReclaimer,
  retryLeaks,
  listLeaks,
  type RetrySummary,
  type SandboxLeakEntry,
  type SandboxHandle,
  type ListedSandbox,
  type ExecResult,
  type LocalIsolation,
  type LeakLedgerStore,
} from 'sandbox-reclaim';

export async function usage(): Promise<void> {
  const sqlite: SqliteSandboxInstanceStore = await SqliteSandboxInstanceStore.open('/tmp/x.db', { busyTimeoutMs: 1000, maxConnections: 2 });
  const postgres: PostgresSandboxInstanceStore = await PostgresSandboxInstanceStore.connect('postgres://x', { schema: 's' });
  const ledger: LeakLedgerStore = sqlite;
  const docker = new DockerProvider({ image: 'busybox', cpus: 0.5, memoryBytes: 64 << 20 });
  const local = new LocalProvider({ baseDir: '/tmp/s', isolation: 'process-group' });
  const isolation: LocalIsolation = local.isolation();
  const handle: SandboxHandle = await docker.create('key', { team: 'a' });
  const handles: ListedSandbox[] = await local.list();
  const owner: string = local.owner;
  const output: ExecResult = await docker.exec(handle.id, ['echo', 'hi']);
  const exitCode: number = output.exitCode;
  await reclaimSandbox({ runId: 'r', sandboxKey: 'k' }, { provider: docker, instances: postgres });
  await sandboxReclaimer({ provider: local, instances: sqlite })({ runId: 'r' });
  const summary: RetrySummary = await retryLeaks({ provider: docker, instances: sqlite, limit: 10, leaseMs: 1000 });
  await retryLeaks({ provider: { name: 'docker', destroy: () => undefined }, instances: ledger });
  const leaks: SandboxLeakEntry[] = await listLeaks(postgres, 'docker');
  const count: number = await sqlite.countLeaks(null);
  const memory = new InMemorySandboxInstanceStore({ ledger: true });
  await memory.claimLeaks?.('docker', 1, 0);
  const error = new SandboxNotOwnedError('nope');
  const code: 'SANDBOX_NOT_OWNED' = error.code;
  const e2b = new E2bProvider({ owner: 'team-a', pageSize: 50, requestTimeoutMs: 10_000 });
  await e2b.checkAccess();
  const swept: ListedSandbox[] = await e2b.list();
  await reclaimSandbox({ runId: 'r', sandboxKey: 'k' }, { provider: e2b, instances: sqlite });
  const daytona = new DaytonaProvider({ apiUrl: 'http://127.0.0.1:1/api', sweepUnlabelled: false });
  const vercel = new VercelProvider({ teamId: 't', projectId: 'p', sweepUnlabelled: true });
  void new E2bProvider({ sweepUnlabelled: true });
  await reconcile({ providers: [e2b, daytona, vercel, docker], instances: sqlite });
  const metadata: Record<string, string> = ownerLabels('team-a', 'thread-1:sandbox');
  // Each vendor's shape, typed by its overload.
  const e2bMetadata: Record<string, string> = ownerLabels('team-a', 'thread-1:sandbox', 'e2b');
  const boxLabels: string[] = ownerLabels(undefined, 'thread-1:sandbox', 'upstash-box');
  const { labels, annotations } = ownerLabels('team-a', 'thread-1:sandbox', 'kubernetes');
  // @ts-expect-error Railway sandboxes carry no labels
  ownerLabels('team-a', 'thread-1:sandbox', 'railway');
  // @ts-expect-error Sprites labels are strings, not a map
  const spritesMap: Record<string, string> = ownerLabels('team-a', 'k', 'sprites');
  void [swept, metadata, e2b.apiUrl, e2bMetadata, boxLabels, labels, annotations, spritesMap];
  await sqlite.close();
  void [isolation, handles, exitCode, summary, leaks, count, code, owner];
  // @ts-expect-error stores are opened, not constructed
  new SqliteSandboxInstanceStore();
  // @ts-expect-error image is required
  new DockerProvider({});
  // @ts-expect-error teamId is Vercel's alone
  new DaytonaProvider({ teamId: 't' });
  // @ts-expect-error pageSize is a number
  new E2bProvider({ pageSize: '10' });
  // @ts-expect-error sweepUnlabelled is a boolean
  new DaytonaProvider({ sweepUnlabelled: 'yes' });
  // @ts-expect-error unknown isolation
  new LocalProvider({ baseDir: '/tmp', isolation: 'vm' });
}
