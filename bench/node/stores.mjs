// Store throughput through the Node binding: sequential upsert / get / delete
// per second for the native in-memory, SQLite and PostgreSQL stores, measured
// in one run (the Rust figures come from core/examples/store_bench.rs).
//
//   SANDBOX_RECLAIM_PG_URL=postgres://... node bench/node/stores.mjs [ops]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { InMemorySandboxInstanceStore, SqliteSandboxInstanceStore, PostgresSandboxInstanceStore } = await import(
  pathToFileURL(join(root, 'bindings-node', 'index.mjs')).href
);

const ops = Number(process.argv[2] ?? 2000);
const url = process.env.SANDBOX_RECLAIM_PG_URL;
if (!url) {
  console.error('stores bench: SANDBOX_RECLAIM_PG_URL is not set (scripts/postgres.sh start DIR prints one)');
  process.exit(2);
}

const records = Array.from({ length: ops }, (_, i) => ({
  key: `bench-key-${i}`,
  provider: 'docker',
  providerSandboxId: `ctr-${String(i).padStart(8, '0')}`,
  latestSnapshotId: `snap-${i}`,
  threadId: 'thread-bench',
  latestRunId: `run-${i}`,
  updatedAt: 1_700_000_000_000 + i,
}));

async function timed(name, op, body) {
  const start = process.hrtime.bigint();
  for (const record of records) await body(record);
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  console.log(`node     ${name.padEnd(8)} ${op.padEnd(7)} ${String(ops).padStart(7)} ${(ops / seconds).toFixed(0).padStart(12)} ops/s`);
}

async function bench(name, store) {
  await timed(name, 'upsert', (record) => store.upsert(record));
  await timed(name, 'get', async (record) => {
    const read = await store.get(record.key);
    if (read?.providerSandboxId !== record.providerSandboxId) throw new Error(`${name}: read back ${JSON.stringify(read)}`);
  });
  await timed(name, 'delete', (record) => store.delete(record.key));
}

const dir = mkdtempSync(join(tmpdir(), 'sandbox-reclaim-bench-'));
const schema = `bench_node_${process.pid}`;
try {
  await bench('memory', new InMemorySandboxInstanceStore());
  const sqlite = await SqliteSandboxInstanceStore.open(join(dir, 'bench.sqlite'));
  await bench('sqlite', sqlite);
  await sqlite.close();
  const postgres = await PostgresSandboxInstanceStore.connect(url, { schema });
  await bench('postgres', postgres);
  await postgres.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
