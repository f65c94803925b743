// Every parity vector against the built Node binding AND the reference, in
// the same run; plus the vectors without store faults against the binding's
// native in-memory store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { resolve, dirname } from 'node:path';
import { loadVectors, runVector, buildFixture } from './harness.mjs';
import * as binding from '../../bindings-node/index.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const referencePath = process.env.RECLAIM_REFERENCE ?? resolve(here, '..', '..', '..', 'shared', 'reference', 'reclaim.mjs');
const reference = await import(pathToFileURL(referencePath).href);

const vectors = loadVectors();

test('there are vectors to run', () => assert.ok(vectors.length >= 40, `${vectors.length} vectors`));

for (const vector of vectors) {
  test(`parity: ${vector.name}`, async () => {
    await runVector(vector, reference, { supportsLedger: false });
    await runVector(vector, binding, { supportsLedger: true });
    // The binding must also match when its store has no ledger, as the reference's has not.
    await runVector(vector, binding, { supportsLedger: false });
  });
}

/** The vector run against the native store: same outcome, provider calls, logs and contents. */
async function runWithNativeStore(vector) {
  const fixture = buildFixture(vector, { offerLedger: false });
  const store = new binding.InMemorySandboxInstanceStore({ ledger: vector.store.ledger === true });
  for (const record of vector.store.instances) await store.upsert(record);
  const options = { ...fixture.options, instances: store };
  const call =
    vector.api === 'reclaimSandbox'
      ? () => binding.reclaimSandbox(vector.record, options)
      : () => binding.sandboxReclaimer(options)(vector.record);
  let result;
  let error;
  try {
    result = await call();
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
  assert.deepStrictEqual(fixture.calls, providerCalls, 'provider calls');
  assert.equal(fixture.logs.length, expected.logs.length, 'number of log lines');
  expected.logs.forEach((line, index) => {
    const actual = fixture.logs[index];
    assert.equal(actual.level, line.level);
    assert.equal(actual.message, line.message);
    assert.deepStrictEqual(Object.keys(actual.meta), Object.keys(line.meta));
    for (const [key, value] of Object.entries(line.meta)) {
      if (value !== null && typeof value === 'object') assert.equal(actual.meta[key], fixture.thrown[value.$hostError]);
      else assert.equal(actual.meta[key], value);
    }
  });
  assert.deepStrictEqual(store.records(), expected.instancesAfter, 'store contents afterwards');
  if (expected.leaksAfter !== undefined && vector.store.ledger) {
    const leaks = (await store.listLeaks()).map(({ failedAt, ...rest }) => {
      assert.equal(typeof failedAt, 'number');
      return rest;
    });
    assert.deepStrictEqual(leaks, expected.leaksAfter, 'leak ledger afterwards');
  }
}

for (const vector of vectors.filter((v) => v.store.get === undefined && v.store.delete === undefined)) {
  test(`native store: ${vector.name}`, () => runWithNativeStore(vector));
}
