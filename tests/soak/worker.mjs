// A Node soak process (tests/soak/soak.py starts them): a writer acting like
// an app, or a reconciler running fleet passes in a loop, on the soak's store
// and fake cloud. One argument, a JSON object:
//
//   {role: 'writer'|'reconciler', name, store: 'sqlite:PATH'|'postgres://...',
//    schema?, cloud: URL, seed, log?,                                  (both)
//    sessions, updatedAtOffsetMs, cancelRate, holdScale,              (writer)
//    graceMs, leaseMs, intervalMs}                                     (reconciler)
//
// Its API key is `soak-<role>-<name>`, so the cloud's destroy log names who
// destroyed what. The first stdout line is {"clock": Date.now()} (the soak
// checks the clock offset it was started with); a reconciler then prints one
// JSON line per pass. A writer appends its timeline to `log`, one JSON line
// per step, written synchronously *before* the step's call (a `*-start`) and
// after its answer (a `*-done`), with `t` its Date.now(): writers run without
// a clock offset, so `t` is on the cloud's clock. SIGTERM: a writer exits at
// once (as a crash would); a reconciler stops its pass (the `signal` option:
// claims released) and exits.
import fs from 'node:fs';

import * as sr from '../../bindings-node/index.mjs';

const cfg = JSON.parse(process.argv[2]);
const apiKey = `soak-${cfg.role}-${cfg.name}`;
const provider = new sr.E2bProvider({ apiKey, apiUrl: cfg.cloud, requestTimeoutMs: 10_000 });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Seeded, so a run's mix can be replayed in spirit (the interleaving cannot).
function mulberry32(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = Math.imul(state ^ (state >>> 15), state | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = mulberry32(cfg.seed ?? 1);

async function openStore() {
  if (cfg.store.startsWith('sqlite:')) return sr.SqliteSandboxInstanceStore.open(cfg.store.slice('sqlite:'.length));
  return sr.PostgresSandboxInstanceStore.connect(cfg.store, { maxConnections: 4, ...(cfg.schema ? { schema: cfg.schema } : {}) });
}

const say = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const errorText = (error) => String(error?.message ?? error).slice(0, 300);

// ------------------------------------------------------------------ writer

async function writer() {
  const log = fs.openSync(cfg.log, 'a');
  const event = (ev, fields) => fs.writeSync(log, `${JSON.stringify({ t: Date.now(), ev, w: cfg.name, ...fields })}\n`);
  process.on('SIGTERM', () => process.exit(0));
  const store = await openStore();
  const reclaimer = sr.sandboxReclaimer({ provider, instances: store, destroyTimeoutMs: 10_000 });
  let counter = 0; // sandboxes
  let keys = 0;
  let upserts = 0;

  async function create(key) {
    const sid = `sb-${cfg.name}-${counter++}`;
    event('create-start', { key, sid });
    const answer = await fetch(`${cfg.cloud}/_fake/sandboxes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ sandboxID: sid, startedAt: new Date().toISOString(), metadata: sr.ownerLabels(undefined, key) }]),
    });
    if (!answer.ok) throw new Error(`create ${sid}: HTTP ${answer.status}`);
    event('create', { key, sid });
    return sid;
  }

  async function upsert(key, sid, ev) {
    upserts += 1;
    const record = {
      key,
      provider: provider.name,
      providerSandboxId: sid,
      threadId: `thread-${key}`,
      latestRunId: `run-${key}-${upserts}`,
      // The app's host clock may be off too: its records carry its time.
      updatedAt: Math.max(0, Date.now() + (cfg.updatedAtOffsetMs ?? 0)),
    };
    event(`${ev}-start`, { key, sid });
    await store.upsert(record);
    event(`${ev}-done`, { key, sid });
  }

  // Mostly short runs, some past the orphan grace (the sweep must still
  // spare them: their record references them).
  function holdMs() {
    const r = rand();
    const scale = cfg.holdScale ?? 1;
    if (r < 0.6) return scale * (200 + rand() * 3_000);
    if (r < 0.9) return scale * (3_000 + rand() * 17_000);
    return scale * (20_000 + rand() * 70_000);
  }

  async function reclaim(key, sid) {
    const run = { runId: `run-${key}`, sandboxKey: key };
    const viaReclaimer = rand() < 0.5;
    event('release-start', { key, sid, how: viaReclaimer ? 'reclaimer' : 'reclaim' });
    const call = (viaReclaimer ? reclaimer(run).then(() => 'done') : sr.reclaimSandbox(run, { provider, instances: store, destroyTimeoutMs: 10_000 }))
      .then((outcome) => ({ outcome }), (error) => ({ error: errorText(error) }));
    let abandoned = false;
    void call.then((result) => event('release-done', { key, sid, ...result, late: abandoned }));
    if (rand() < (cfg.cancelRate ?? 0)) {
      // Node has no way to cancel a reclaim: the app stops awaiting it (a
      // request handler that timed out) and the call runs on unobserved.
      const winner = await Promise.race([call, sleep(rand() * 15).then(() => 'abandoned')]);
      if (winner === 'abandoned') {
        abandoned = true;
        event('abandoned', { key, sid });
        return;
      }
    }
    await call;
  }

  async function session() {
    for (;;) {
      const key = `${cfg.name}-k${keys++}`;
      let sid;
      try {
        sid = await create(key);
        if (rand() < 0.04) {
          event('orphan', { key, sid, how: 'no-record' }); // crashed between create and upsert
          continue;
        }
        await upsert(key, sid, 'upsert');
        const until = Date.now() + holdMs();
        while (Date.now() < until) {
          await sleep(Math.min(until - Date.now(), 300 + rand() * 3_000));
          if (Date.now() >= until) break;
          if (rand() < 0.05) {
            // Resumed into a new sandbox; the old one is left behind (an orphan).
            const next = await create(key);
            event('release-start', { key, sid, how: 'replaced' });
            await upsert(key, next, 'upsert');
            event('orphan', { key, sid, how: 'replaced' });
            sid = next;
          } else {
            await upsert(key, sid, 'resume');
          }
        }
        const r = rand();
        if (r < 0.08) {
          // Deleted without a destroy: an orphan for the sweep.
          event('release-start', { key, sid, how: 'delete' });
          await store.delete(key);
          event('release-done', { key, sid, outcome: 'deleted' });
          event('orphan', { key, sid, how: 'deleted' });
        } else if (r < 0.11) {
          event('kept', { key, sid }); // referenced for good
        } else {
          await reclaim(key, sid);
        }
      } catch (error) {
        event('error', { key, sid, error: errorText(error) });
        await sleep(200);
      }
    }
  }

  say({ clock: Date.now() });
  await Promise.all(Array.from({ length: cfg.sessions ?? 3 }, () => session()));
}

// ------------------------------------------------------------------ reconciler

async function reconciler() {
  say({ clock: Date.now() });
  const store = await openStore();
  const controller = new AbortController();
  process.on('SIGTERM', () => controller.abort());
  while (!controller.signal.aborted) {
    const t = Date.now();
    try {
      if (rand() < 0.2) {
        const summary = await sr.retryLeaks({ provider, instances: store, leaseMs: cfg.leaseMs, destroyTimeoutMs: 10_000 });
        say({ t, kind: 'retry', ...summary });
      } else {
        const report = await sr.reconcile({
          provider,
          instances: store,
          orphanGraceMs: cfg.graceMs,
          leaseMs: cfg.leaseMs,
          backoffMs: 1_000,
          maxBackoffMs: 5_000,
          concurrency: 4,
          destroyTimeoutMs: 10_000,
          host: cfg.name,
          signal: controller.signal,
        });
        const [mine] = report.providers;
        say({ t, kind: 'pass', counts: report.counts, sweep: mine.orphans.status, found: mine.orphans.found, leaks: mine.leaks.due });
      }
    } catch (error) {
      say({ t, kind: 'error', error: errorText(error) });
    }
    if (!controller.signal.aborted) await sleep(cfg.intervalMs * (0.5 + rand()));
  }
  await store.close();
  process.exit(0);
}

await (cfg.role === 'writer' ? writer() : reconciler());
