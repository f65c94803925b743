// Test services from the environment (scripts/test.sh starts PostgreSQL and
// podman and exports their addresses). Missing with CI=true is a FAILURE;
// otherwise the dependent tests are skipped with the reason.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CI = process.env.CI === 'true';

/**
 * `{ value }` when env `name` is set; `{ skip: reason }` otherwise, or a
 * thrown error under CI=true (so the suite fails loudly).
 */
export function service(name, purpose) {
  const value = process.env[name];
  if (value !== undefined && value !== '') return { value, skip: false };
  const reason = `${name} is not set (${purpose})`;
  if (CI) throw new Error(`${reason}: required when CI=true`);
  return { value: undefined, skip: reason };
}

/** A fresh private temporary directory. */
export function tempDir(prefix) {
  return mkdtempSync(join(tmpdir(), `sandbox-reclaim-node-${prefix}-`));
}

let counter = 0;
/** A PostgreSQL schema name unique to this process and call. */
export function uniqueSchema(prefix = 'node') {
  counter += 1;
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${counter}`;
}
