// One reconcile process of the fleet simulation (bench/sim/fleet_sim.py), in
// Node: one pass over every provider the simulation runs, on its PostgreSQL
// store. Providers read their vendor's own variables (the simulation sets
// them to its fakes). Prints the pass's report as one JSON line.
import * as sr from '../../bindings-node/index.mjs';

const [store, host] = [process.argv[2], process.argv[3]];
const [concurrency, perProviderConcurrency] = [Number(process.argv[4]), Number(process.argv[5])];
const providers = [new sr.E2bProvider(), new sr.DaytonaProvider(), new sr.RunloopProvider(), new sr.BlaxelProvider()];
const instances = await sr.PostgresSandboxInstanceStore.connect(store, { maxConnections: 8 });
const started = Date.now();
const limit = Number(process.argv[6]);
const report = await sr.reconcile({ providers, instances, host, concurrency, perProviderConcurrency, limit });
const sweeps = report.providers.map(({ name, orphans }) => ({ name, status: orphans.status, error: orphans.error, listed: orphans.listed, found: orphans.found, destroyed: orphans.destroyed, failed: orphans.failed }));
process.stdout.write(`${JSON.stringify({ host, language: 'node', startedAt: started, endedAt: Date.now(), sweeps })}\n`);
await instances.close();
