// Every parity vector against the built Node binding (and, where it can
// express it, the reference) in the same run; plus the untimed vectors
// without store faults against every native store: in memory, SQLite and
// PostgreSQL (key identity is proven there, where keys cross into Rust).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { resolve, dirname } from 'node:path';
import { loadVectors, runVector, runFleetVector, isFleet, buildFixture, callOf, assertLogs, referenceCanRun } from './harness.mjs';
import { service, tempDir, uniqueSchema } from './services.mjs';
import * as binding from '../../bindings-node/index.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const referencePath = process.env.RECLAIM_REFERENCE ?? resolve(here, '..', '..', '..', 'shared', 'reference', 'reclaim.mjs');
const reference = await import(pathToFileURL(referencePath).href);

const everyVector = loadVectors();
const vectors = everyVector.filter((vector) => !isFleet(vector));
const fleetVectors = everyVector.filter(isFleet);

test('there are vectors to run', () => assert.ok(vectors.length >= 200, `${vectors.length} vectors`));
test('there are fleet vectors to run', () => {
  const apis = new Set(fleetVectors.map((vector) => vector.api));
  assert.deepStrictEqual([...apis].sort(), ['reclaimAll', 'reconcile'], 'both fleet passes have cases');
  assert.ok(fleetVectors.length >= 20, `${fleetVectors.length} fleet vectors`);
});

// Fleet passes: the Node driver on the virtual clock, the native in-memory
// store behind a recording, scripting proxy, scripted providers.
for (const vector of fleetVectors) {
  test(`fleet parity: ${vector.name}`, () => runFleetVector(vector, binding));
}

for (const vector of vectors) {
  test(`parity: ${vector.name}`, async () => {
    if (referenceCanRun(vector)) await runVector(vector, reference, { supportsLedger: false, usesDriver: false });
    await runVector(vector, binding, { supportsLedger: true, usesDriver: true });
    // The binding must also match when its store has no ledger, as the reference's has not.
    if (vector.api !== 'retryLeaks') await runVector(vector, binding, { supportsLedger: false, usesDriver: true });
  });
}

/** The vector run against a native store: same outcome, provider calls, logs and contents. */
async function runWithNativeStore(vector, store) {
  const fixture = buildFixture(vector, { offerLedger: false });
  for (const record of vector.store.instances) await store.upsert(record);
  let result;
  let error;
  try {
    result = await callOf(vector, binding, { ...fixture.options, instances: store })();
  } catch (caught) {
    error = caught;
  }
  const expected = vector.expect;
  if (expected.error === undefined) {
    assert.equal(error, undefined);
    assert.equal(result, expected.result ?? undefined);
  } else {
    assert.ok(error instanceof binding.SandboxReclaimFailedError);
    assert.equal(error.message, expected.error.message);
  }
  const providerCalls = expected.calls.filter((c) => c.on === 'provider');
  assert.deepStrictEqual(fixture.calls.map(({ at, ...call }) => call), providerCalls, 'provider calls');
  assertLogs(fixture.logs, expected.logs, fixture.thrown, binding);
  // Every record the vector started with is there afterwards exactly when expected.
  for (const record of vector.store.instances) {
    const kept = expected.instancesAfter.find((after) => after.key === record.key);
    assert.deepStrictEqual(await store.get(record.key), kept ?? null, `record ${JSON.stringify(record.key)} afterwards`);
  }
  if (expected.leaksAfter !== undefined && vector.store.ledger) {
    const leaks = (await store.listLeaks()).map(({ failedAt, ...rest }) => {
      assert.equal(typeof failedAt, 'number');
      return rest;
    });
    assert.deepStrictEqual(leaks, expected.leaksAfter, 'leak ledger afterwards');
  }
}

const untimed = (v) => v.api !== 'retryLeaks' && v.options === undefined && !JSON.stringify(v).includes('latencyMs');
const nativeRunnable = vectors.filter((v) => untimed(v) && v.store.get === undefined && v.store.delete === undefined);

for (const vector of nativeRunnable) {
  test(`native in-memory store: ${vector.name}`, () =>
    runWithNativeStore(vector, new binding.InMemorySandboxInstanceStore({ ledger: vector.store.ledger === true })));
}

// Key identity in the durable stores: one store per kind, emptied between cases.
const keyVectors = nativeRunnable.filter((v) => v.nativeStores);
const pg = service('SANDBOX_RECLAIM_PG_URL', 'key identity in PostgreSQL');
const durable = [
  ['SQLite', () => binding.SqliteSandboxInstanceStore.open(join(tempDir('keys'), 'keys.db'))],
  ['PostgreSQL', () => binding.PostgresSandboxInstanceStore.connect(pg.value, { schema: uniqueSchema('node_keys'), maxConnections: 2 })],
];
for (const [kind, open] of durable) {
  test(`key identity in the ${kind} store: ${keyVectors.length} vectors`, { skip: kind === 'PostgreSQL' && pg.skip }, async () => {
    assert.ok(keyVectors.length >= 100, `${keyVectors.length} key-identity vectors`);
    const store = await open();
    try {
      for (const vector of keyVectors) {
        for (const record of vector.store.instances) await store.delete(record.key);
        await runWithNativeStore(vector, store);
        for (const record of vector.store.instances) await store.delete(record.key);
      }
    } finally {
      await store.close();
    }
  });
}
