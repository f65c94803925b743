// Fleet wall time, side by side in one process: reclaimAll of N records
// (default 2,000) at concurrency 64 against a provider whose destroy takes
// 20 ms, with the native in-memory store, SQLite and PostgreSQL, against the
// ideal (⌈N / 64⌉ waves of 20 ms; N × 20 ms / 64 when destroys take 15–25 ms)
// and against the reference's sequential loop over the same records
// (reclaimSandbox one by one, as a sweep does today). Each reclaimAll pass
// runs FLEET_PASSES times (default 5): the median and the range are printed.
//
//   node bench/node/fleet.mjs [records]      (after `npm run build` in bindings-node/)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import assert from 'node:assert/strict';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..');
const referencePath = process.env.RECLAIM_REFERENCE ?? resolve(root, '..', 'shared', 'reference', 'reclaim.mjs');
const reference = await import(pathToFileURL(referencePath).href);
const binding = await import(pathToFileURL(resolve(root, 'bindings-node', 'index.mjs')).href);

const count = Number(process.argv[2] ?? process.env.BENCH_RECORDS ?? 2000);
const LATENCY = 20;
const CONCURRENCY = 64;
const PASSES = Math.max(1, Number(process.env.FLEET_PASSES ?? 5) || 5);
/** The best a perfect scheduler does: whole waves of LATENCY, or the work bound when destroys vary. */
const ideal = Math.ceil(count / CONCURRENCY) * LATENCY;
const variedIdeal = (count * LATENCY) / CONCURRENCY;

/** 15–25 ms for `sbx-N`, spread evenly over N (mean 20 ms): a real provider's destroys never end in lockstep. */
const variedLatency = (id) => 15 + ((Number(id.split('-').pop()) * 7919) % 11);

const provider = {
  name: 'bench',
  destroyed: 0,
  varied: false,
  destroy({ id }) {
    return new Promise((done) => setTimeout(() => {
      this.destroyed += 1;
      done();
    }, this.varied ? variedLatency(id) : LATENCY));
  },
};

const runs = Array.from({ length: count }, (_, i) => ({
  runId: `run-${i}`, threadId: `thread-${i}`, status: 'completed', startedAt: 1_700_000_000_000, sandboxKey: `thread-${i}:sandbox`,
}));
const instance = (i) => ({ key: `thread-${i}:sandbox`, provider: 'bench', providerSandboxId: `sbx-${i}`, threadId: `thread-${i}`, updatedAt: 1_700_000_000_000 });

async function fill(store) {
  for (let i = 0; i < count; i++) await store.upsert(instance(i));
}

/** The reference's sweep: one reclaimSandbox after another, with a plain JS store. */
class JsStore {
  map = new Map();
  async get(key) { return this.map.get(key) ?? null; }
  async upsert(record) { this.map.set(record.key, { ...record }); }
  async delete(key) { this.map.delete(key); }
}

async function timed(label, run) {
  const before = provider.destroyed;
  const start = performance.now();
  await run();
  const ms = performance.now() - start;
  assert.equal(provider.destroyed - before, count, `${label}: every sandbox destroyed`);
  return ms;
}

const dir = mkdtempSync(join(tmpdir(), 'sandbox-reclaim-fleet-bench-'));
/** `store` reclaimed PASSES times (refilled before each): the sorted wall times. */
async function passes(label, store) {
  const times = [];
  for (let pass = 0; pass < PASSES; pass++) {
    await fill(store);
    times.push(await timed(`reclaimAll ${label}`, async () => {
      const report = await binding.reclaimAll(runs, { provider, instances: store, concurrency: CONCURRENCY });
      assert.equal(report.counts.destroyed, count);
    }));
  }
  return times.sort((a, b) => a - b);
}

try {
  const results = [];
  results.push(['in-memory', await passes('in-memory', new binding.InMemorySandboxInstanceStore()), ideal]);
  const sqlite = await binding.SqliteSandboxInstanceStore.open(join(dir, 'fleet.sqlite'));
  results.push(['SQLite', await passes('SQLite', sqlite), ideal]);
  await sqlite.close?.();
  // PostgreSQL, in a schema of its own (make bench starts a server).
  if (process.env.SANDBOX_RECLAIM_PG_URL) {
    const schema = `fleet_bench_node_${process.pid}`;
    const postgres = await binding.PostgresSandboxInstanceStore.connect(process.env.SANDBOX_RECLAIM_PG_URL, { schema, maxConnections: 16 });
    results.push(['PostgreSQL', await passes('PostgreSQL', postgres), ideal]);
    // The same passes with destroys that do not end in lockstep (same mean).
    provider.varied = true;
    for (const [label, store] of [['in-memory', new binding.InMemorySandboxInstanceStore()], ['PostgreSQL', postgres]]) {
      results.push([`${label}, destroy 15–25 ms`, await passes(`${label}, varied`, store), variedIdeal]);
    }
    provider.varied = false;
    await postgres.close?.();
  }
  const js = new JsStore();
  await fill(js);
  const sequentialMs = await timed('reference loop', async () => {
    for (const run of runs) assert.equal(await reference.reclaimSandbox(run, { provider, instances: js }), 'destroyed');
  });
  console.log(`reclaimAll of ${count} records, destroy ${LATENCY} ms, concurrency ${CONCURRENCY}; ideal ${ideal.toFixed(1)} ms (15–25 ms destroys: ${variedIdeal.toFixed(1)} ms); median of ${PASSES} passes; node ${process.version}`);
  for (const [label, times, best] of results) {
    const ms = times[Math.floor(times.length / 2)];
    const range = `${(times[0] / best).toFixed(3)}–${(times[times.length - 1] / best).toFixed(3)}×`;
    console.log(`  reclaimAll ${label.padEnd(10)} ${ms.toFixed(1).padStart(8)} ms   ${(ms / best).toFixed(3)}× ideal (${range})   ${(sequentialMs / ms).toFixed(1)}× faster than the reference loop`);
  }
  console.log(`  reference sequential loop ${sequentialMs.toFixed(1).padStart(8)} ms   ${(sequentialMs / ideal).toFixed(1)}× ideal`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
