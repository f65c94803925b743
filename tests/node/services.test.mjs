// The one rule for a test that needs a service, tool or privilege
// (services.mjs `needs`): CI is on when `CI` is any non-empty string; then a
// missing need FAILS, naming it; locally it is a skip.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inCI, needs, service } from './services.mjs';

const MISSING = 'SANDBOX_RECLAIM_TEST_NEVER_SET';

test('under CI (any non-empty CI) a missing need throws, naming it', () => {
  for (const CI of ['true', '1', 'false', 'yes']) {
    const env = { CI };
    assert.equal(inCI(env), true, CI);
    assert.throws(() => needs('the-tool', false, 'it is needed', env), { message: /^missing the-tool: it is needed \(CI=/ });
    assert.throws(() => service(MISSING, 'the helper\'s own test', env), { message: new RegExp(`^missing ${MISSING} \\(not set\\)`) });
  }
});

test('locally (CI unset or empty) a missing need is a skip reason naming it', () => {
  for (const env of [{}, { CI: '' }]) {
    assert.equal(inCI(env), false);
    assert.equal(needs('the-tool', false, 'it is needed', env), 'missing the-tool: it is needed');
    const missing = service(MISSING, 'the helper\'s own test', env);
    assert.equal(missing.value, undefined);
    assert.match(missing.skip, new RegExp(`^missing ${MISSING} \\(not set\\)`));
  }
});

test('a need that is met neither skips nor throws', () => {
  const env = { CI: 'true', [MISSING]: 'here' };
  assert.equal(needs('the-tool', true, 'it is needed', env), false);
  assert.deepEqual(service(MISSING, 'x', env), { value: 'here', skip: false });
});

test('a whole node --test run fails under CI and counts a skip locally', () => {
  const fixture = fileURLToPath(new URL('./needs-fixture.mjs', import.meta.url));
  const run = (extra) => {
    const env = { ...process.env, ...extra };
    delete env[MISSING];
    if (extra.CI === undefined) delete env.CI;
    // NODE_TEST_CONTEXT would make the child report to this runner instead.
    delete env.NODE_TEST_CONTEXT;
    return spawnSync(process.execPath, ['--test', '--test-reporter=tap', fixture], { env, encoding: 'utf8', timeout: 60_000 });
  };
  const local = run({});
  assert.equal(local.status, 0, local.stdout + local.stderr);
  assert.match(local.stdout, /^# skipped 1$/m);
  assert.match(local.stdout, new RegExp(`# SKIP missing ${MISSING}`));
  const ci = run({ CI: '1' });
  assert.notEqual(ci.status, 0, ci.stdout + ci.stderr);
  assert.match(ci.stdout + ci.stderr, new RegExp(`missing ${MISSING} \\(not set\\)`));
});

test('the scripts\' backstop (scripts/test-skips.sh node_tests): counts skips, and any skip fails under CI', () => {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-reclaim-node-backstop-'));
  try {
    // A skip that bypasses `needs`: only the count can catch it.
    const file = join(dir, 'raw-skip.test.mjs');
    writeFileSync(file, "import { test } from 'node:test';\ntest('raw', { skip: 'bypasses needs' }, () => {});\n");
    const run = (ci) => {
      const env = { ...process.env };
      delete env.CI;
      delete env.NODE_TEST_CONTEXT;
      if (ci !== undefined) env.CI = ci;
      const script = 'set -euo pipefail; source scripts/test-skips.sh; node_tests probe "$1"';
      return spawnSync('bash', ['-c', script, 'bash', file], { cwd: root, env, encoding: 'utf8', timeout: 60_000 });
    };
    const local = run(undefined);
    assert.equal(local.status, 0, local.stdout + local.stderr);
    assert.match(local.stdout, /^ {2}skipped: .*# SKIP bypasses needs$/m);
    assert.match(local.stdout, /^probe: 1 skipped$/m);
    const ci = run('true');
    assert.equal(ci.status, 1, ci.stdout + ci.stderr);
    assert.match(ci.stderr, /^probe: 1 skipped under CI=true: nothing may be skipped in CI$/m);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
