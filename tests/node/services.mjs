// Test services from the environment (scripts/test.sh starts PostgreSQL and
// podman and exports their addresses), and the one rule for any test that
// needs a service, tool or privilege: `needs`. Missing under CI (CI set to any
// non-empty string, as in Python and Rust) is a FAILURE; otherwise the
// dependent tests are skipped with the reason (scripts/test-node.sh counts
// the skips, and fails CI on any).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** CI is on when `CI` is any non-empty string (`true`, `1`, even `false`). */
export function inCI(env = process.env) {
  return env.CI !== undefined && env.CI !== '';
}

/**
 * `false` (run the test) when `available`; otherwise a skip reason naming
 * `what` is missing, for a test's `skip` option, or, under CI, a thrown
 * Error naming it (so the suite fails loudly). Every skip in tests/node goes
 * through here.
 */
export function needs(what, available, purpose, env = process.env) {
  if (available) return false;
  const reason = `missing ${what}: ${purpose}`;
  if (inCI(env)) throw new Error(`${reason} (CI=${JSON.stringify(env.CI)}: a missing service fails in CI)`);
  return reason;
}

/**
 * `{ value, skip: false }` when env `name` is set; `{ skip: reason }`
 * otherwise, or a thrown error under CI (`needs`).
 */
export function service(name, purpose, env = process.env) {
  const value = env[name];
  const available = value !== undefined && value !== '';
  const skip = needs(`${name} (not set)`, available, purpose, env);
  return { value: available ? value : undefined, skip };
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
