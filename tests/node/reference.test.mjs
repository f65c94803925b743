// Proves every parity vector the reference can express (its two APIs, without
// our options) against ../shared/reference/reclaim.mjs (@tanstack/ai-sandbox's
// reclaim module), on the same virtual clock as the binding.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { resolve, dirname } from 'node:path';
import { loadVectors, runVector, referenceCanRun } from './harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const referencePath = process.env.RECLAIM_REFERENCE ?? resolve(here, '..', '..', '..', 'shared', 'reference', 'reclaim.mjs');
const reference = await import(pathToFileURL(referencePath).href);

const vectors = loadVectors().filter(referenceCanRun);
test('the reference proves the vectors it can express', () => assert.ok(vectors.length >= 190, `${vectors.length} vectors`));
for (const vector of vectors) {
  test(`reference: ${vector.name}`, () => runVector(vector, reference, { supportsLedger: false, usesDriver: false }));
}
