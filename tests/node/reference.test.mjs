// Proves every parity vector the reference can express (its two APIs, without
// our options) against ../shared/reference/reclaim.mjs (@tanstack/ai-sandbox's
// reclaim module), on the same virtual clock as the binding; and every
// single-provider reclaimAll case without fleet-only options record by
// record: a fleet reclaim is the reference's reclaimSandbox per record.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { resolve, dirname } from 'node:path';
import { loadVectors, runVector, referenceCanRun, referenceCanCheckFleet, runFleetRecordsOnReference } from './harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const referencePath = process.env.RECLAIM_REFERENCE ?? resolve(here, '..', '..', '..', 'shared', 'reference', 'reclaim.mjs');
const reference = await import(pathToFileURL(referencePath).href);

const every = loadVectors();
const vectors = every.filter(referenceCanRun);
test('the reference proves the vectors it can express', () => assert.ok(vectors.length >= 190, `${vectors.length} vectors`));
for (const vector of vectors) {
  test(`reference: ${vector.name}`, () => runVector(vector, reference, { supportsLedger: false, usesDriver: false }));
}

const fleet = every.filter(referenceCanCheckFleet);
test('the reference checks the reclaimAll cases it can express', () => assert.ok(fleet.length >= 5, `${fleet.length} reclaimAll vectors`));
for (const vector of fleet) {
  test(`reference, record by record: ${vector.name}`, async () => {
    const checked = await runFleetRecordsOnReference(vector, reference);
    assert.ok(checked > 0 || vector.records.length === 0, 'records were checked');
  });
}
