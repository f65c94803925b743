// `npx sandbox-reclaim`: bindings-node/bin/sandbox-reclaim.cjs run as a real
// process. Without --providers it is the Rust command itself (the native
// runCli): its output, JSON and exit codes equal the binary's (built here with
// `cargo build -p sandbox-reclaim-cli --release`, or SANDBOX_RECLAIM_CLI_BIN).
// With --providers ./module.mjs the pass runs on the JS driver with the
// module's providers mixed with --local: orphans they list are destroyed
// through them and audited, the JSON matches the binary's, bad modules exit 2
// naming the problem, an unreachable store exits 3, and SIGTERM mid-pass lets
// the running destroy finish and exits 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as binding from '../../bindings-node/index.mjs';
import { service, tempDir, uniqueSchema } from './services.mjs';

const { DockerProvider, LocalProvider, SqliteSandboxInstanceStore } = binding;

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = join(root, 'bindings-node', 'bin', 'sandbox-reclaim.cjs');
const scratch = tempDir('cli');
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));

const sleep = (ms) => new Promise((wake) => setTimeout(wake, ms));
const HOUR = 3_600_000;
let counter = 0;
const fresh = (name) => join(scratch, `${name}-${(counter += 1)}`);

/** Runs `command args` to its end; `{ status, stdout, stderr }`. */
function run(command, args, options = {}) {
  const env = { ...process.env, RUST_LOG: 'warn', SANDBOX_RECLAIM_STORE: '', SANDBOX_RECLAIM_CONFIG: '', ...options.env };
  for (const [name, value] of Object.entries(env)) if (value === '') delete env[name];
  const result = spawnSync(command, args, { cwd: options.cwd ?? scratch, env, encoding: 'utf8', timeout: 120_000 });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}
const npx = (args, options) => run(process.execPath, [bin, ...args], options);

let rustBinary;
/** The Rust binary to compare with: SANDBOX_RECLAIM_CLI_BIN, else built (a no-op when up to date). */
function rust(args, options) {
  if (rustBinary === undefined) {
    rustBinary = process.env.SANDBOX_RECLAIM_CLI_BIN;
    if (!rustBinary) {
      execFileSync('cargo', ['build', '-p', 'sandbox-reclaim-cli', '--release', '--quiet'], { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] });
      const target = process.env.CARGO_TARGET_DIR ? resolve(root, process.env.CARGO_TARGET_DIR) : join(root, 'target');
      rustBinary = join(target, 'release', 'sandbox-reclaim');
    }
    assert.ok(existsSync(rustBinary), `${rustBinary} is missing`);
  }
  return run(rustBinary, args, options);
}

/** A JSON document without what differs from run to run. */
function stable(text) {
  const document = JSON.parse(text);
  if (document.report) {
    delete document.report.elapsedMs;
    delete document.report.startedAt;
  }
  return document;
}

/**
 * A SQLite store and a LocalProvider base directory with real sandboxes:
 * one referenced by a record, two unreferenced (orphans once --orphan-grace
 * has passed).
 */
async function world(owner) {
  const db = fresh('store') + '.db';
  const baseDir = fresh('local');
  const provider = new LocalProvider({ baseDir, ...(owner ? { owner } : {}) });
  const store = await SqliteSandboxInstanceStore.open(db);
  const referenced = await provider.create('thread-ref:sandbox');
  const orphans = [await provider.create('thread-a:sandbox'), await provider.create('thread-b:sandbox')];
  await store.upsert({ key: referenced.key, provider: 'local', providerSandboxId: referenced.id, threadId: 'thread-ref', updatedAt: Date.now() });
  await store.close();
  return {
    db,
    baseDir,
    provider,
    referenced,
    orphans,
    flags: ['--store', `sqlite:${db}`, '--local', baseDir],
    async cleanup() {
      for (const sandbox of await provider.list()) await provider.destroy({ id: sandbox.id });
    },
  };
}

/** A providers module in the scratch directory; answers its path. */
function module(name, text) {
  const path = join(scratch, name);
  writeFileSync(path, text);
  return path;
}

/**
 * A module with one JS provider `host` that lists `HOST_LISTED` (JSON) and
 * destroys by appending `start ID` / `done ID` to `HOST_LOG`, each destroy
 * taking `HOST_DESTROY_MS`.
 */
const hostModule = module(
  'host-providers.mjs',
  `import { appendFileSync } from 'node:fs';
const sleep = (ms) => new Promise((wake) => setTimeout(wake, ms));
export default [
  {
    name: 'host',
    async list() {
      return JSON.parse(process.env.HOST_LISTED || '[]');
    },
    async destroy({ id }) {
      appendFileSync(process.env.HOST_LOG, 'start ' + id + '\\n');
      await sleep(Number(process.env.HOST_DESTROY_MS || 0));
      appendFileSync(process.env.HOST_LOG, 'done ' + id + '\\n');
    },
  },
];
`,
);

function hostEnv(ids, { destroyMs = 0, owner = 'sandbox-reclaim' } = {}) {
  const log = fresh('host-log');
  writeFileSync(log, '');
  const listed = ids.map((id) => ({ id, createdAt: Date.now() - HOUR, owner, key: `key-${id}` }));
  return { log, env: { HOST_LISTED: JSON.stringify(listed), HOST_LOG: log, HOST_DESTROY_MS: String(destroyMs) } };
}
const logLines = (log) => readFileSync(log, 'utf8').split('\n').filter(Boolean);

// ------------------------------------------------------------ the Rust command through npm

test('--help, --version and a bad flag: exactly what the binary prints, with its exit codes', { timeout: 1_200_000 }, () => {
  for (const args of [['--help'], ['reconcile', '--help'], ['--version'], ['reconcile', '--bogus'], ['--concurrency', '0', 'reconcile']]) {
    const [ours, theirs] = [npx(args), rust(args)];
    assert.deepStrictEqual(ours, theirs, args.join(' '));
  }
  const help = npx(['--help']);
  assert.equal(help.status, 0);
  assert.match(help.stdout, /Usage: sandbox-reclaim/);
  assert.equal(npx(['reconcile', '--bogus']).status, 2);
});

test('migrate and reconcile --dry-run --json against SQLite with --local: the JSON equals the binary\'s', { timeout: 600_000 }, async () => {
  const w = await world();
  try {
    const migrate = [npx([...w.flags, 'migrate', '--json']), rust([...w.flags, 'migrate', '--json'])];
    assert.deepStrictEqual(migrate[0], migrate[1]);
    assert.equal(migrate[0].status, 0);
    assert.deepStrictEqual(JSON.parse(migrate[0].stdout), { version: 1, command: 'migrate', store: `sqlite:${w.db}`, schemaVersion: 5 });

    const args = [...w.flags, 'reconcile', '--dry-run', '--json', '--orphan-grace', '0s'];
    const ours = npx(args);
    const theirs = rust(args);
    // Planned destroys are sandboxes still billing: exit 1, so an audit-only cron job alerts.
    assert.equal(ours.status, 1, ours.stderr);
    assert.equal(theirs.status, 1, theirs.stderr);
    assert.deepStrictEqual(stable(ours.stdout), stable(theirs.stdout));
    const document = stable(ours.stdout);
    assert.equal(document.report.dryRun, true);
    assert.deepStrictEqual([document.stillLeaking, document.report.stillLeaking, document.exitCode], [true, true, 1]);
    assert.deepStrictEqual(
      document.report.actions.map((action) => [action.reason, action.provider, action.providerSandboxId, action.result]).sort(),
      w.orphans.map((orphan) => ['orphan', 'local', orphan.id, 'planned']).sort(),
    );

    // The same pass on the JS driver (--providers with a module adding no provider): the same JSON.
    const none = module('no-providers.mjs', 'export default [];\n');
    const hosted = npx([...args, '--providers', none]);
    assert.equal(hosted.status, 1, hosted.stderr);
    assert.deepStrictEqual(stable(hosted.stdout), stable(theirs.stdout));

    // Plain lines when piped, as the binary prints them (but elapsed_ms).
    const plain = (text) => text.replace(/elapsed_ms=\d+/, 'elapsed_ms=N');
    const lines = [npx(args.filter((arg) => arg !== '--json')), rust(args.filter((arg) => arg !== '--json'))];
    assert.equal(plain(lines[0].stdout), plain(lines[1].stdout));
    assert.match(lines[0].stdout, /^reconcile host=.* planned=2 .* still_leaking=true$/m);
    assert.deepStrictEqual(lines.map((line) => line.status), [1, 1]);
    assert.deepStrictEqual((await w.provider.list()).length, 3, 'a dry run destroys nothing');
  } finally {
    await w.cleanup();
  }
});

test('an unreachable PostgreSQL store exits 3 saying so, natively and with --providers', { timeout: 60_000 }, () => {
  const store = ['--store', 'postgres://sandbox:secret@127.0.0.1:1/x', '--connect-timeout', '5s', '--local', fresh('local')];
  for (const extra of [[], ['--providers', hostModule]]) {
    const result = npx([...store, 'reconcile', '--json', ...extra]);
    assert.equal(result.status, 3, `${extra.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, /^sandbox-reclaim: error: store unavailable: could not connect to PostgreSQL at postgres:\/\/sandbox:\*\*\*@127\.0\.0\.1:1\/x/);
    assert.ok(!result.stderr.includes('secret'), 'no password printed');
    const document = JSON.parse(result.stdout);
    assert.deepStrictEqual({ ...document, error: { ...document.error, message: undefined } }, {
      version: 1,
      command: 'reconcile',
      exitCode: 3,
      error: { kind: 'unavailable', what: 'store', message: undefined },
    });
  }
  assert.equal(npx([...store, 'status']).status, 3);
});

// ------------------------------------------------------------ --providers

test('--providers: orphans the module\'s provider lists are destroyed through it and audited, beside --local', { timeout: 120_000 }, async () => {
  const w = await world();
  try {
    const { log, env } = hostEnv(['h-1', 'h-2']);
    const result = npx([...w.flags, '--providers', hostModule, 'reconcile', '--orphan-grace', '0s', '--json', '--host', 'node-cli-test'], { env });
    assert.equal(result.status, 0, result.stderr);
    const document = JSON.parse(result.stdout);
    assert.deepStrictEqual([document.command, document.stillLeaking, document.exitCode], ['reconcile', false, 0]);
    assert.deepStrictEqual(document.report.providers.map((provider) => provider.name), ['local', 'host']);
    const host = document.report.providers[1];
    assert.deepStrictEqual([host.orphans.status, host.orphans.listed, host.orphans.found, host.orphans.destroyed], ['swept', 2, 2, 2]);
    const destroyed = document.report.actions.filter((action) => action.result === 'destroyed').map((action) => `${action.provider}/${action.providerSandboxId}`);
    assert.deepStrictEqual(destroyed.sort(), ['host/h-1', 'host/h-2', ...w.orphans.map((orphan) => `local/${orphan.id}`)].sort());
    assert.deepStrictEqual(logLines(log).filter((line) => line.startsWith('done')).sort(), ['done h-1', 'done h-2']);
    assert.deepStrictEqual((await w.provider.list()).map((sandbox) => sandbox.id), [w.referenced.id], 'the referenced local sandbox survives');

    // The audit log, read back through the native command.
    const audit = npx(['--store', `sqlite:${w.db}`, 'audit', '--json']);
    assert.equal(audit.status, 0, audit.stderr);
    const entries = JSON.parse(audit.stdout).entries.map((entry) => [entry.host, entry.provider, entry.providerSandboxId, entry.reason, entry.result]);
    assert.deepStrictEqual(
      entries.sort(),
      [['h-1', 'host'], ['h-2', 'host'], ...w.orphans.map((orphan) => [orphan.id, 'local'])]
        .map(([id, provider]) => ['node-cli-test', provider, id, 'orphan', 'destroyed'])
        .sort(),
    );
  } finally {
    await w.cleanup();
  }
});

const docker = service('DOCKER_HOST', '--providers beside --docker against podman');
test('--providers beside --docker: the command crate configures the Docker provider as the binary does, and its orphan is destroyed', { skip: docker.skip, timeout: 120_000 }, async () => {
  const owner = `node-cli-${process.pid}-${Date.now().toString(36)}`;
  const image = process.env.SANDBOX_RECLAIM_TEST_IMAGE ?? 'sandbox-reclaim/busybox:latest';
  const provider = new DockerProvider({ image, owner, dockerHost: docker.value });
  const made = await provider.create('cli-docker-orphan');
  assert.deepStrictEqual((await provider.list()).map((sandbox) => sandbox.id), [made.id]);
  const empty = module('no-providers.mjs', 'export default [];\n');
  const flags = ['--store', `sqlite:${fresh('store')}.db`, '--docker', docker.value, '--owner', owner, '--providers', empty];
  const result = npx([...flags, 'reconcile', '--orphan-grace', '0s', '--json']);
  assert.equal(result.status, 0, result.stderr);
  const [report] = JSON.parse(result.stdout).report.providers;
  assert.deepStrictEqual([report.name, report.orphans.found, report.orphans.destroyed], ['docker', 1, 1]);
  assert.deepStrictEqual(await provider.list(), [], 'the orphan is gone from the engine');
});

test('--providers: --registry-retention reaches the pass: an unlabelled sandbox a deleted record named is swept only within it', { timeout: 120_000 }, async () => {
  const db = fresh('store') + '.db';
  const store = await SqliteSandboxInstanceStore.open(db);
  // TanStack's reclaim deleted the record after a swallowed destroy error: the registry remembers.
  await store.upsert({ key: 'thread-u:sandbox', provider: 'host', providerSandboxId: 'u-1', threadId: 'thread-u', updatedAt: Date.now() - HOUR });
  await store.delete('thread-u:sandbox');
  await store.close();
  const { log, env } = hostEnv(['u-1', 'u-2'], { owner: '' });
  const flags = ['--store', `sqlite:${db}`, '--providers', hostModule, 'reconcile', '--orphan-grace', '0s', '--json'];
  const outside = npx([...flags, '--registry-retention', '0s', '--dry-run'], { env });
  assert.equal(outside.status, 0, outside.stderr);
  const planned = JSON.parse(outside.stdout).report.providers[0].orphans;
  assert.deepStrictEqual([planned.listed, planned.foreign, planned.found], [2, 2, 0], 'deleted before the retention: not ours');
  const within = npx([...flags, '--registry-retention', '1h'], { env });
  assert.equal(within.status, 0, within.stderr);
  const swept = JSON.parse(within.stdout).report.providers[0].orphans;
  assert.deepStrictEqual([swept.listed, swept.foreign, swept.found, swept.destroyed], [2, 1, 1, 1]);
  assert.deepStrictEqual(logLines(log).filter((line) => line.startsWith('done')), ['done u-1'], 'the unregistered one is never touched');
});

test('--providers: a CommonJS module, `orphans` (no leak retry), plain output, and a failing destroy exits 1', { timeout: 120_000 }, async () => {
  const db = fresh('store') + '.db';
  const cjs = module(
    'failing.cjs',
    `// A handle left open (a keep-alive agent, a timer): the command exits all the same.
setInterval(() => {}, 1 << 30);
module.exports = [{
  name: 'flaky',
  list: () => [{ id: 'f-1', createdAt: Date.now() - ${HOUR}, owner: 'sandbox-reclaim', key: null }],
  destroy: async () => { throw new Error('flaky says no'); },
}];
`,
  );
  // A due leak of provider flaky: `orphans` leaves it alone.
  const store = await SqliteSandboxInstanceStore.open(db);
  await store.recordLeak({ key: 'k-leak', provider: 'flaky', providerSandboxId: 'leak-1', runId: 'r', errorMessage: 'earlier', failedAt: 1 }, 'destroy-failed', 1);
  await store.close();
  const leaks = () => {
    const listed = JSON.parse(npx(['--store', `sqlite:${db}`, 'leaks', 'list', '--json']).stdout).leaks;
    return Object.fromEntries(listed.map(({ ageMs, ...leak }) => [leak.providerSandboxId, leak]));
  };
  const before = leaks();

  const result = npx(['--store', `sqlite:${db}`, '--providers', cjs, 'orphans', '--json']);
  assert.equal(result.status, 1, result.stderr);
  const document = JSON.parse(result.stdout);
  assert.deepStrictEqual([document.command, document.stillLeaking, document.exitCode], ['orphans', true, 1]);
  assert.equal(document.report.idle, undefined, 'orphans shows the sweep only');
  assert.deepStrictEqual(document.report.actions, [
    { reason: 'orphan', provider: 'flaky', providerSandboxId: 'f-1', result: 'failed', error: 'flaky says no' },
  ]);
  const after = leaks();
  assert.deepStrictEqual(Object.keys(after).sort(), ['f-1', 'leak-1']);
  assert.deepStrictEqual(after['leak-1'], before['leak-1'], 'the due leak was not retried');
  assert.deepStrictEqual([after['f-1'].reason, after['f-1'].lastError], ['orphan', 'flaky says no'], 'the failed orphan is in the ledger');

  // Plain lines; the failed orphan is now referenced by its ledger entry.
  const plain = npx(['--store', `sqlite:${db}`, '--providers', cjs, 'orphans', '--dry-run']);
  assert.equal(plain.status, 0, plain.stderr);
  assert.match(plain.stdout, /^provider name=flaky sweep=swept listed=1 foreign=0 referenced=1 young=0 deleting=0 orphans_found=0 /m);
  assert.match(plain.stdout, /^orphans host=\S+ dry_run=true planned=0 .* still_leaking=false$/m);
});

test('--providers: bad modules exit 2 naming the file, the export or the provider', { timeout: 120_000 }, () => {
  const db = `sqlite:${fresh('store')}.db`;
  const cases = [
    ['./nowhere.mjs', /--providers: \.\/nowhere\.mjs \(.*nowhere\.mjs\): no such file/],
    [module('object.mjs', 'export default { name: "x", destroy() {} };\n'), /object\.mjs: the default export must be an array of providers .*a default export of type object/],
    [module('named.mjs', 'export const providers = [];\n'), /named\.mjs: the default export must be an array .*no default export/],
    [module('no-destroy.mjs', 'export default [{ name: "a", destroy() {} }, { name: "b" }];\n'), /no-destroy\.mjs: provider \[1\] \("b"\) has no destroy function/],
    [module('no-name.mjs', 'export default [{ destroy() {} }];\n'), /no-name\.mjs: provider \[0\] has no name/],
    [module('twice.mjs', 'export default [{ name: "a", destroy() {} }, { name: "a", destroy() {} }];\n'), /twice\.mjs: provider \[1\] \("a"\): two providers are named "a"/],
    [module('clash.mjs', 'export default [{ name: "local", destroy() {} }];\n'), /clash\.mjs: provider \[0\] is named "local", as the --local provider/],
    [module('owner.mjs', 'export default [{ name: "a", destroy() {}, owner: 5 }];\n'), /owner\.mjs: provider \[0\] \("a"\): owner must be a string/],
    [module('list.mjs', 'export default [{ name: "a", destroy() {}, list: "all" }];\n'), /list\.mjs: provider \[0\] \("a"\): list must be a function/],
    [module('broken.mjs', 'export default [;\n'), /broken\.mjs: cannot be imported: /],
    [module('throws.cjs', 'throw new Error("no credentials");\n'), /throws\.cjs: cannot be imported: no credentials/],
    [scratch, /: not a file/],
  ];
  for (const [spec, pattern] of cases) {
    const result = npx(['--store', db, '--local', fresh('local'), '--providers', spec, 'reconcile']);
    assert.equal(result.status, 2, `${spec}: ${result.stderr}`);
    assert.match(result.stderr, /^sandbox-reclaim: error: --providers: /);
    assert.match(result.stderr, pattern);
    assert.equal(result.stdout, '');
  }
  // With --json, the error document too.
  const json = npx(['--store', db, '--providers', './nowhere.mjs', 'reconcile', '--json']);
  assert.equal(json.status, 2);
  assert.deepStrictEqual({ ...JSON.parse(json.stdout), error: { ...JSON.parse(json.stdout).error, message: undefined } }, {
    version: 1,
    command: 'reconcile',
    exitCode: 2,
    error: { kind: 'usage', flag: '--providers', message: undefined },
  });
  // --providers itself, and what only the native command serves.
  assert.match(npx(['reconcile', '--providers']).stderr, /^sandbox-reclaim: error: --providers needs a value/);
  const metrics = npx(['--store', db, '--providers', hostModule, 'reconcile', '--every', '1m', '--metrics-addr', '127.0.0.1:0']);
  assert.equal(metrics.status, 2);
  assert.match(metrics.stderr, /--metrics-addr: metrics are served by the native command/);
  const bogus = npx(['--providers', hostModule, 'reconcile', '--bogus']);
  assert.deepStrictEqual(bogus, rust(['reconcile', '--bogus']), 'clap refuses a bad flag exactly as the binary does');
});

/** Starts the command; resolves lines of stdout as they come. */
function start(args, env) {
  const child = spawn(process.execPath, [bin, ...args], { cwd: scratch, env: { ...process.env, RUST_LOG: 'warn', ...env } });
  const output = { stdout: '', stderr: '' };
  child.stdout.on('data', (chunk) => (output.stdout += chunk));
  child.stderr.on('data', (chunk) => (output.stderr += chunk));
  const exited = new Promise((done) => child.on('exit', (code, signal) => done({ code, signal, ...output })));
  return { child, output, exited };
}

async function until(what, check, ms = 30_000) {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

test('--providers --every: SIGTERM mid-pass lets the running destroy finish, writes it down, and exits 0', { timeout: 120_000 }, async () => {
  const db = fresh('store') + '.db';
  const { log, env } = hostEnv(['s-1', 's-2'], { destroyMs: 1500 });
  const command = start(['--store', `sqlite:${db}`, '--providers', hostModule, 'reconcile', '--every', '1h', '--concurrency', '1', '--json'], env);
  await until('the first destroy', () => logLines(log).length > 0);
  command.child.kill('SIGTERM');
  const exit = await command.exited;
  assert.deepStrictEqual([exit.code, exit.signal], [0, null], exit.stderr);
  assert.deepStrictEqual(logLines(log), ['start s-1', 'done s-1'], 'the running destroy finished; nothing new started');
  const lines = exit.stdout.trim().split('\n').map((line) => JSON.parse(line));
  assert.equal(lines.length, 1);
  assert.deepStrictEqual([lines[0].pass, lines[0].report.cutShort, lines[0].exitCode], [1, true, 1]);
  assert.deepStrictEqual(lines[0].report.actions.map((action) => [action.providerSandboxId, action.result]), [['s-1', 'destroyed'], ['s-2', 'deferred']]);
  const audit = JSON.parse(npx(['--store', `sqlite:${db}`, 'audit', '--json']).stdout).entries;
  assert.deepStrictEqual(audit.map((entry) => [entry.providerSandboxId, entry.result]), [['s-1', 'destroyed']]);

  // A second signal exits at once with 130.
  const slow = hostEnv(['t-1'], { destroyMs: 60_000 });
  const again = start(['--store', `sqlite:${db}`, '--providers', hostModule, 'reconcile', '--every', '1h'], slow.env);
  await until('the slow destroy', () => logLines(slow.log).length > 0);
  again.child.kill('SIGTERM');
  await sleep(200);
  again.child.kill('SIGTERM');
  const second = await again.exited;
  assert.equal(second.code, 130, second.stderr);
  assert.match(second.stderr, /SIGTERM again: exiting now/);
});

test('--every without --providers (the native command): a pass per interval as JSON lines, SIGTERM exits 0', { timeout: 120_000 }, async () => {
  const db = fresh('store') + '.db';
  const command = start(['--store', `sqlite:${db}`, '--local', fresh('local'), 'reconcile', '--every', '300ms', '--json']);
  await until('two passes', () => command.output.stdout.split('\n').filter(Boolean).length >= 2);
  command.child.kill('SIGTERM');
  const exit = await command.exited;
  assert.deepStrictEqual([exit.code, exit.signal], [0, null], exit.stderr);
  const passes = exit.stdout.trim().split('\n').map((line) => JSON.parse(line).pass);
  assert.deepStrictEqual(passes.slice(0, 2), [1, 2]);
});

/**
 * A Docker Engine API that answers the ping, lists one old container of ours
 * (`c-1`) and its inspection, and never answers its removal: a destroy that
 * runs until its deadline, or forever.
 */
async function hangingEngine() {
  const { createServer } = await import('node:http');
  const labels = { 'io.sandbox-reclaim.owner': 'sandbox-reclaim', 'io.sandbox-reclaim.key': 'k-1', 'io.sandbox-reclaim.created-at': '1' };
  const removals = [];
  const server = createServer((request, response) => {
    const path = new URL(request.url, 'http://engine').pathname;
    const json = (value) => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify(value));
    };
    if (path.endsWith('/_ping')) return response.end('OK');
    if (path.endsWith('/containers/json')) return json([{ Id: 'c-1', Labels: labels }]);
    if (request.method === 'GET' && path.endsWith('/containers/c-1/json')) return json({ Id: 'c-1', Config: { Labels: labels }, State: { Running: true } });
    if (request.method === 'DELETE') return removals.push(path); // never answered
    response.statusCode = 404;
    return json({ message: `no ${request.method} ${path} here` });
  });
  await new Promise((listening) => server.listen(0, '127.0.0.1', listening));
  return {
    url: `tcp://127.0.0.1:${server.address().port}`,
    removals,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

test('the native command under Node: SIGTERM mid-destroy waits for its deadline and exits 0; a second signal exits 130', { timeout: 120_000 }, async () => {
  const engine = await hangingEngine();
  try {
    const db = fresh('store') + '.db';
    const command = start(['--store', `sqlite:${db}`, '--docker', engine.url, 'reconcile', '--every', '1h', '--destroy-timeout', '3s', '--json']);
    await until('the removal', () => engine.removals.length > 0);
    const signalled = Date.now();
    command.child.kill('SIGTERM');
    const exit = await command.exited;
    assert.deepStrictEqual([exit.code, exit.signal], [0, null], exit.stderr);
    assert.ok(Date.now() - signalled >= 1000, 'the running destroy ran to its deadline');
    const [line] = exit.stdout.trim().split('\n').map((text) => JSON.parse(text));
    assert.deepStrictEqual([line.pass, line.report.actions.map((action) => [action.providerSandboxId, action.result])], [1, [['c-1', 'failed']]]);
    const leaks = JSON.parse(npx(['--store', `sqlite:${db}`, 'leaks', 'list', '--json']).stdout).leaks;
    assert.deepStrictEqual(leaks.map((leak) => [leak.provider, leak.providerSandboxId]), [['docker', 'c-1']], 'the timed-out destroy is in the ledger');

    const again = start(['--store', `sqlite:${fresh('store')}.db`, '--docker', engine.url, 'reconcile', '--json']);
    await until('the second removal', () => engine.removals.length > 1);
    again.child.kill('SIGTERM');
    await sleep(300);
    again.child.kill('SIGTERM');
    const second = await again.exited;
    assert.deepStrictEqual([second.code, second.signal], [130, null], second.stderr);
    assert.match(second.stderr, /SIGTERM again: exiting now/);
  } finally {
    engine.close();
  }
});

test('--providers --every: a pass per interval, numbered, as JSON lines', { timeout: 60_000 }, async () => {
  const db = fresh('store') + '.db';
  const { env } = hostEnv([]);
  const command = start(['--store', `sqlite:${db}`, '--providers', hostModule, 'reconcile', '--every', '200ms', '--json'], env);
  await until('three passes', () => command.output.stdout.split('\n').filter(Boolean).length >= 3);
  command.child.kill('SIGINT');
  const exit = await command.exited;
  assert.equal(exit.code, 0, exit.stderr);
  const lines = exit.stdout.trim().split('\n').map((line) => JSON.parse(line));
  assert.deepStrictEqual(lines.slice(0, 3).map((line) => [line.pass, line.command, line.stillLeaking]), [[1, 'reconcile', false], [2, 'reconcile', false], [3, 'reconcile', false]]);
});

const pg = service('SANDBOX_RECLAIM_PG_URL', '--providers against PostgreSQL');

test('--providers against PostgreSQL (--pg-schema): the host provider\'s orphans destroyed and audited', { skip: pg.skip, timeout: 120_000 }, () => {
  const schema = uniqueSchema('node_cli');
  const store = ['--store', pg.value, '--pg-schema', schema];
  const { log, env } = hostEnv(['p-1']);
  const result = npx([...store, '--providers', hostModule, 'reconcile', '--json'], { env });
  assert.equal(result.status, 0, result.stderr);
  const document = JSON.parse(result.stdout);
  assert.match(document.store, new RegExp(`\\(schema ${schema}\\)$`));
  assert.deepStrictEqual(document.report.actions.map((action) => [action.provider, action.providerSandboxId, action.result]), [['host', 'p-1', 'destroyed']]);
  assert.deepStrictEqual(logLines(log), ['start p-1', 'done p-1']);
  const audit = JSON.parse(npx([...store, 'audit', '--json']).stdout).entries;
  assert.deepStrictEqual(audit.map((entry) => [entry.provider, entry.providerSandboxId, entry.result]), [['host', 'p-1', 'destroyed']]);
});

// ------------------------------------------------------------ hosted providers

/** A vendor fake in a process of its own (spawnSync blocks this one); `{ url, control, stop }`. */
async function fakeProcess(script, args) {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [join(root, 'tests', 'fakes', script), ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const line = await new Promise((resolveLine, reject) => {
    let text = '';
    child.stdout.on('data', (chunk) => {
      text += chunk;
      if (text.includes('\n')) resolveLine(text.split('\n')[0]);
    });
    child.on('error', reject);
  });
  const { url } = JSON.parse(line);
  const control = async (method, route, body) => {
    const response = await fetch(`${url}/_fake/${route}`, { method, body: body === undefined ? undefined : JSON.stringify(body) });
    return response.json();
  };
  return { url, control, stop: () => child.kill() };
}

test('--providers with --e2b: E2B sandboxes are swept natively beside the module\'s, and the key never crosses', { timeout: 120_000 }, async () => {
  const fake = await fakeProcess('e2b.mjs', ['--key', 'e2b_npx_secret']);
  try {
    await fake.control('POST', 'sandboxes', [
      { sandboxID: 'old', startedAt: '2026-01-01T00:00:00Z', metadata: { 'io.sandbox-reclaim.owner': 'sandbox-reclaim' } },
    ]);
    const none = module('none-for-e2b.mjs', 'export default [];\n');
    const db = fresh('store') + '.db';
    const env = { E2B_API_URL: fake.url, E2B_API_KEY: 'e2b_npx_secret' };
    const refused = npx(['--store', `sqlite:${db}`, '--providers', none, '--e2b', 'reconcile', '--json'], { env: { ...env, E2B_API_KEY: 'e2b_wrong' } });
    assert.equal(refused.status, 3, refused.stderr);
    assert.match(refused.stdout, /E2B_API_KEY/);
    assert.ok(!`${refused.stdout}${refused.stderr}`.includes('e2b_wrong'));

    const result = npx(['--store', `sqlite:${db}`, '--providers', none, '--e2b', 'reconcile', '--json'], { env });
    assert.equal(result.status, 0, result.stderr);
    const document = JSON.parse(result.stdout);
    assert.deepStrictEqual(document.report.providers.map((provider) => provider.name), ['e2b']);
    assert.equal(document.report.providers[0].orphans.destroyed, 1);
    assert.deepStrictEqual((await fake.control('GET', 'state')).alive, []);
    assert.ok(!result.stdout.includes('e2b_npx_secret'));

    const clash = module('named-e2b.mjs', "export default [{ name: 'e2b', destroy() {} }];\n");
    const clashed = npx(['--store', `sqlite:${db}`, '--providers', clash, '--e2b', 'reconcile'], { env });
    assert.equal(clashed.status, 2, clashed.stderr);
    assert.match(clashed.stderr, /--e2b/);
  } finally {
    fake.stop();
  }
});
