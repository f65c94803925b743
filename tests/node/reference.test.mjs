// Proves every parity vector against the behavioural reference,
// ../shared/reference/reclaim.mjs (@tanstack/ai-sandbox's reclaim module).
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { resolve, dirname } from 'node:path';
import { loadVectors, runVector } from './harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const referencePath = process.env.RECLAIM_REFERENCE ?? resolve(here, '..', '..', '..', 'shared', 'reference', 'reclaim.mjs');
const reference = await import(pathToFileURL(referencePath).href);

for (const vector of loadVectors()) {
  test(`reference: ${vector.name}`, () => runVector(vector, reference, { supportsLedger: false }));
}
