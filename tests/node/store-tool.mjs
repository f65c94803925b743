#!/usr/bin/env node
// A small CLI over the Node binding's durable stores, for cross-language
// tests (the Python suite spawns it against files/databases it also opens).
//
//   node tests/node/store-tool.mjs <sqlite|postgres> <path-or-url> <schema|-> <command> [args...]
//
// <schema> is the PostgreSQL schema ("-": the default, `public`); SQLite ignores it (pass "-").
// Commands (each prints one JSON document on stdout, exit code 0; on failure
// `{"ok": false, "error": "..."}` and exit code 1):
//
//   dump [json-keys]   {"instances": [...], "leaks": [...]}. The stores have no
//                      "list every instance" method, so `instances` holds the
//                      records of the keys given as a JSON array (sorted by key,
//                      missing keys left out); without it, `instances` is [].
//                      `leaks` is every pending leak, oldest first.
//   write <json>       json = {"instances": [record...], "leaks": [{"key", "leak"}...]}:
//                      upserts every instance, then calls
//                      deleteRecordingLeak(key, leak) for each leak.
//                      Prints {"ok": true, "instances": n, "leaks": m}.
//   ops <seed> <count> <prefix>
//                      `count` pseudo-random (seeded) upsert/get/delete operations on
//                      keys `<prefix>0`..`<prefix>7`, checking every read against
//                      what this process wrote (keys with a distinct prefix are
//                      private to it), then reads every key once more.
//                      Prints {"ok": true, "finalKeys": [...sorted keys present]}.
//   retry <provider> <leaseMs> <limit> <destroyMs> <log>
//                      Calls retryLeaks until the provider has no pending leak,
//                      with a provider whose destroy takes <destroyMs> and stops
//                      at its abort signal. Each destroy that completes appends
//                      "<sandbox id> <pid>\n" to <log> (an O_APPEND write: lines
//                      of concurrent processes never mix).
//                      Prints {"ok": true, "rounds": n, "destroyed": m}.
import { SqliteSandboxInstanceStore, PostgresSandboxInstanceStore, retryLeaks } from '../../bindings-node/index.mjs';
import { appendFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';

const USAGE = 'usage: store-tool.mjs <sqlite|postgres> <path-or-url> <schema|-> <dump [keys-json]|write <json>|ops <seed> <count> <prefix>>';

function fail(message) {
  process.stdout.write(`${JSON.stringify({ ok: false, error: message })}\n`);
  process.exit(1);
}

async function open(kind, location, schema) {
  if (kind === 'sqlite') return SqliteSandboxInstanceStore.open(location);
  if (kind === 'postgres') return PostgresSandboxInstanceStore.connect(location, schema === '-' ? {} : { schema });
  throw new Error(`unknown store kind ${JSON.stringify(kind)} (sqlite or postgres)`);
}

/** mulberry32: a tiny seeded PRNG, so a run can be replayed from its seed. */
function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function dump(store, keysJson) {
  const keys = keysJson === undefined ? [] : JSON.parse(keysJson);
  if (!Array.isArray(keys) || !keys.every((key) => typeof key === 'string')) throw new TypeError('dump: keys must be a JSON array of strings');
  const instances = [];
  for (const key of [...new Set(keys)].sort()) {
    const record = await store.get(key);
    if (record !== null) instances.push(record);
  }
  return { instances, leaks: await store.listLeaks() };
}

async function write(store, json) {
  if (json === undefined) throw new TypeError('write: a JSON argument is required');
  const { instances = [], leaks = [] } = JSON.parse(json);
  for (const record of instances) await store.upsert(record);
  for (const { key, leak } of leaks) await store.deleteRecordingLeak(key, leak);
  return { ok: true, instances: instances.length, leaks: leaks.length };
}

async function ops(store, seedText, countText, prefix) {
  const seed = Number(seedText);
  const count = Number(countText);
  if (!Number.isInteger(seed) || !Number.isInteger(count) || count < 0 || typeof prefix !== 'string' || prefix === '') {
    throw new TypeError('ops: <seed> and <count> must be whole numbers and <prefix> a non-empty string');
  }
  const next = random(seed);
  const model = new Map();
  const keys = Array.from({ length: 8 }, (_, i) => `${prefix}${i}`);
  const check = async (key) => {
    const actual = await store.get(key);
    const expected = model.get(key) ?? null;
    if (!isDeepStrictEqual(actual, expected)) {
      throw new Error(`read of ${key} gave ${JSON.stringify(actual)}, expected ${JSON.stringify(expected)}`);
    }
  };
  for (let i = 0; i < count; i++) {
    const key = keys[Math.floor(next() * keys.length)];
    const roll = next();
    if (roll < 0.45) {
      const record = { key, provider: 'docker', providerSandboxId: `ctr-${seed}-${i}`, threadId: `thread-${prefix}`, updatedAt: i };
      if (next() < 0.5) record.latestRunId = `run-${i}`;
      await store.upsert(record);
      model.set(key, record);
    } else if (roll < 0.75) {
      await check(key);
    } else {
      await store.delete(key);
      model.delete(key);
    }
  }
  for (const key of keys) await check(key);
  return { ok: true, finalKeys: [...model.keys()].sort() };
}

/** A provider whose destroy takes `destroyMs`, honours its abort signal, and logs completions. */
function slowProvider(name, destroyMs, log) {
  let destroyed = 0;
  return {
    name,
    get destroyed() {
      return destroyed;
    },
    destroy({ id, signal }) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          appendFileSync(log, `${id} ${process.pid}\n`);
          destroyed += 1;
          resolve();
        }, destroyMs);
        signal?.addEventListener('abort', () => {
          clearTimeout(timer);
          reject(new Error(`destroy of ${id} aborted`));
        });
      });
    },
  };
}

async function retry(store, name, leaseMs, limit, destroyMs, log) {
  const provider = slowProvider(name, Number(destroyMs), log);
  let rounds = 0;
  while ((await store.countLeaks(name)) > 0) {
    rounds += 1;
    await retryLeaks({ provider, instances: store, leaseMs: Number(leaseMs), limit: Number(limit) });
    // Leaks held by another retrier: wait a moment before claiming again.
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { ok: true, rounds, destroyed: provider.destroyed };
}

const [kind, location, schema, command, ...args] = process.argv.slice(2);
if (command === undefined) fail(USAGE);
let store;
try {
  store = await open(kind, location, schema);
  let result;
  if (command === 'dump') result = await dump(store, args[0]);
  else if (command === 'write') result = await write(store, args[0]);
  else if (command === 'ops') result = await ops(store, args[0], args[1], args[2]);
  else if (command === 'retry') result = await retry(store, ...args);
  else throw new Error(`unknown command ${JSON.stringify(command)}; ${USAGE}`);
  process.stdout.write(`${JSON.stringify(result)}\n`);
} catch (error) {
  await store?.close().catch(() => {});
  fail(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
}
await store.close();
