// Side-by-side benchmark: the reference reclaimSandbox vs this binding, in one
// process, with identical in-memory JS store and provider; then the binding
// with its native in-memory store. Prints µs per call and ratios.
//
//   node bench/node/bench.mjs [calls]        (after `npm run build` in bindings-node/)
//
// Each run reclaims `calls` distinct records (outcome `destroyed`: get,
// destroy, delete), filled in before the clock starts. Rounds alternate the
// implementations so warm-up and GC drift hit both alike; the median round
// counts.
import { resolve, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import assert from 'node:assert/strict';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..');
const referencePath = process.env.RECLAIM_REFERENCE ?? resolve(root, '..', 'shared', 'reference', 'reclaim.mjs');
const reference = await import(pathToFileURL(referencePath).href);
const binding = await import(pathToFileURL(resolve(root, 'bindings-node', 'index.mjs')).href);

const calls = Number(process.argv[2] ?? process.env.BENCH_CALLS ?? 100_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 7);
const PROVIDER = 'docker';

/** The same plain JS store for both: async methods over a Map, copying records. */
class JsStore {
  map = new Map();
  async get(key) {
    const record = this.map.get(key);
    return record === undefined ? null : { ...record };
  }
  async upsert(record) {
    this.map.set(record.key, { ...record });
  }
  async delete(key) {
    this.map.delete(key);
  }
}

const provider = {
  name: PROVIDER,
  destroyed: 0,
  async destroy({ id }) {
    if (id.length === 0) throw new Error('no id');
    this.destroyed += 1;
  },
};

const runs = Array.from({ length: calls }, (_, i) => ({
  runId: `run-${i}`,
  threadId: `thread-${i}`,
  status: 'completed',
  startedAt: 1_700_000_000_000,
  sandboxKey: `thread-${i}:sandbox`,
}));
const instances = runs.map((run, i) => ({
  key: run.sandboxKey,
  provider: PROVIDER,
  providerSandboxId: `ctr-${i}`,
  threadId: run.threadId,
  updatedAt: 1_700_000_000_000,
}));

async function fill(store) {
  for (const record of instances) await store.upsert(record);
}

/** Times `calls` reclaims; returns [wall µs, CPU µs] per call. CPU time is
 * the steadier figure on a shared machine; both are printed. */
async function timeRound(impl, store) {
  await fill(store);
  const options = { provider, instances: store };
  const cpuStart = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) {
    const outcome = await impl.reclaimSandbox(runs[i], options);
    if (outcome !== 'destroyed') throw new Error(`unexpected outcome ${outcome}`);
  }
  const wall = Number(process.hrtime.bigint() - start) / 1000;
  const cpu = process.cpuUsage(cpuStart);
  return [wall / calls, (cpu.user + cpu.system) / calls];
}

const contenders = {
  reference: () => timeRound(reference, new JsStore()),
  binding: () => timeRound(binding, new JsStore()),
  'binding + native store': () => timeRound(binding, new binding.InMemorySandboxInstanceStore()),
};

// Sanity: every contender really destroys and deletes.
for (const [name, run] of Object.entries(contenders)) {
  const before = provider.destroyed;
  await run();
  assert.equal(provider.destroyed - before, calls, `${name} destroyed every sandbox`);
}

const samples = Object.fromEntries(Object.keys(contenders).map((name) => [name, []]));
for (let round = 0; round < rounds; round++) {
  for (const [name, run] of Object.entries(contenders)) samples[name].push(await run());
}
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const wall = Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, median(values.map(([w]) => w))]));
const cpu = Object.fromEntries(Object.entries(samples).map(([name, values]) => [name, median(values.map(([, c]) => c))]));

console.log(`reclaimSandbox, ${calls} calls x ${rounds} rounds (median), node ${process.version}`);
for (const name of Object.keys(contenders)) {
  console.log(`  ${name.padEnd(24)} ${wall[name].toFixed(3)} µs/call wall   ${cpu[name].toFixed(3)} µs/call CPU`);
}
const ratio = (table, name) => table[name] / table.reference;
const GUARD = 3;
for (const [label, name] of [['JS store', 'binding'], ['native store', 'binding + native store']]) {
  const wallRatio = ratio(wall, name);
  const verdict = wallRatio <= GUARD ? 'within' : 'MISSED';
  console.log(`  ratio binding/reference (${label}): ${wallRatio.toFixed(2)} wall  ${ratio(cpu, name).toFixed(2)} CPU  (guard <= ${GUARD}: ${verdict})`);
  if (process.env.BENCH_ENFORCE === '1') assert.ok(wallRatio <= GUARD, `${label}: binding/reference ratio ${wallRatio.toFixed(2)} exceeds ${GUARD}`);
}

// The boundary's floor: a plain reclaim makes 4 native calls (start, then one
// per store or provider answer). Here, 4 calls that cross with one number and
// do nothing (`abandon` of no run), timed alone: what no driver design with 4
// native calls can go below, in units of the reference's whole reclaim.
const { createRequire } = await import('node:module');
const native = createRequire(import.meta.url)(resolve(root, 'bindings-node', 'lib', 'native.cjs'));
const NO_RUN = 0xffff_ffff;
const floorRounds = [];
for (let round = 0; round < rounds; round++) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) {
    native.abandon(NO_RUN);
    native.abandon(NO_RUN);
    native.abandon(NO_RUN);
    native.abandon(NO_RUN);
  }
  floorRounds.push(Number(process.hrtime.bigint() - start) / 1000 / calls);
}
const floor = median(floorRounds);
console.log(`  the boundary alone: 4 empty native calls ${floor.toFixed(3)} µs = ${(floor / wall.reference).toFixed(2)}x the reference's whole reclaim`);
