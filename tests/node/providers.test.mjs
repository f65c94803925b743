// DockerProvider (against podman's Docker API) and LocalProvider through the
// Node binding: create, list, exec, reclaim through reclaimSandbox, idempotent
// destroy, the ownership guard, bad config, and nothing left behind.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import * as binding from '../../bindings-node/index.mjs';
import { service, tempDir } from './services.mjs';

const { DockerProvider, LocalProvider, InMemorySandboxInstanceStore, SqliteSandboxInstanceStore, reclaimSandbox, SandboxNotOwnedError } = binding;

const docker = service('DOCKER_HOST', 'DockerProvider tests against podman');
const image = process.env.SANDBOX_RECLAIM_TEST_IMAGE ?? 'sandbox-reclaim/busybox:latest';
const owner = `node-test-${process.pid}-${Date.now().toString(36)}`;
const scratch = tempDir('providers');
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));

const run = (key) => ({ runId: `run-${key}`, threadId: 'thread-1', status: 'completed', startedAt: 1, sandboxKey: key });
const recordFor = (provider, handle) => ({
  key: handle.key,
  provider: provider.name,
  providerSandboxId: handle.id,
  threadId: 'thread-1',
  updatedAt: handle.createdAt,
});

/** The podman CLI on the same engine as DOCKER_HOST (CONTAINERS_CONF from the environment). */
const podman = (...args) => execFileSync('podman', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

test('DockerProvider and LocalProvider refuse bad config with a TypeError naming the field', () => {
  assert.throws(() => new DockerProvider(), { name: 'TypeError', message: /options/ });
  assert.throws(() => new DockerProvider({}), { name: 'TypeError', message: /options\.image/ });
  assert.throws(() => new DockerProvider({ image: '' }), { name: 'TypeError', message: /image/ });
  assert.throws(() => new DockerProvider({ image, cpus: -1 }), { name: 'TypeError', message: /cpus/ });
  assert.throws(() => new DockerProvider({ image, cpus: '1' }), { name: 'TypeError', message: /cpus/ });
  assert.throws(() => new DockerProvider({ image, memoryBytes: 10 }), { name: 'TypeError', message: /memoryBytes/ });
  assert.throws(() => new DockerProvider({ image, memoryBytes: 8e6 + 0.5 }), {
    name: 'TypeError',
    message: 'options.memoryBytes must be a whole number between 0 and 9007199254740991',
  });
  assert.throws(() => new DockerProvider({ image, keepAlive: [] }), { name: 'TypeError', message: /keepAlive/ });
  assert.throws(() => new DockerProvider({ image, owner: '' }), { name: 'TypeError', message: /owner/ });
  assert.throws(() => new DockerProvider({ image, networkMode: 5 }), { name: 'TypeError', message: /networkMode/ });
  assert.throws(() => new LocalProvider({}), { name: 'TypeError', message: /baseDir/ });
  assert.throws(() => new LocalProvider({ baseDir: '' }), { name: 'TypeError', message: /baseDir/ });
  assert.throws(() => new LocalProvider({ baseDir: scratch, isolation: 'vm' }), {
    name: 'TypeError',
    message: `options.isolation must be 'auto', 'namespaces' or 'process-group', got "vm"`,
  });
  assert.throws(() => new LocalProvider({ baseDir: scratch, isolation: 7 }), { name: 'TypeError', message: /options\.isolation/ });
  assert.throws(() => new LocalProvider({ baseDir: scratch, name: '' }), { name: 'TypeError', message: /name/ });
  assert.deepStrictEqual(readdirSync(scratch), [], 'refused config touched nothing');
});

test('LocalProvider: create, list, exec, reclaim, idempotent destroy, ownership guard, nothing left', async () => {
  const baseDir = join(scratch, 'local');
  const provider = new LocalProvider({ baseDir, owner });
  const stranger = new LocalProvider({ baseDir, owner: `${owner}-other`, name: 'local' });
  assert.equal(provider.name, 'local');
  assert.ok(['namespaces', 'process-group'].includes(provider.isolation()));

  const handles = [];
  for (const key of ['thread-a:sandbox', 'thread-b:sandbox']) handles.push(await provider.create(key, { team: 'node' }));
  assert.deepStrictEqual(handles.map((h) => h.key), ['thread-a:sandbox', 'thread-b:sandbox']);
  assert.deepStrictEqual(await provider.create('thread-a:sandbox'), handles[0], 'create is idempotent per key');
  assert.deepStrictEqual((await provider.list()).map((h) => h.id).sort(), handles.map((h) => h.id).sort());

  const echo = await provider.exec(handles[0].id, ['sh', '-c', 'echo out; echo err >&2; exit 7']);
  assert.deepStrictEqual(echo, { stdout: 'out\n', stderr: 'err\n', exitCode: 7 });
  await assert.rejects(provider.exec(handles[0].id, []), { name: 'TypeError', message: /argv/ });
  await assert.rejects(provider.destroy({ id: '../etc' }), { name: 'TypeError', message: /id/ });
  await assert.rejects(provider.create('', {}), { name: 'TypeError', message: /key/ });
  await assert.rejects(provider.create('k', { 'io.sandbox-reclaim.owner': 'me' }), { name: 'TypeError', message: /labels/ });

  // Another owner's sandbox in the same directory is refused, and survives.
  const foreign = await stranger.create('thread-x:sandbox');
  await assert.rejects(provider.destroy({ id: foreign.id }), (error) => {
    assert.ok(error instanceof SandboxNotOwnedError && error instanceof Error);
    assert.equal(error.code, 'SANDBOX_NOT_OWNED');
    return true;
  });
  assert.equal((await stranger.exec(foreign.id, ['echo', 'alive'])).stdout, 'alive\n');

  const store = new InMemorySandboxInstanceStore({ ledger: true });
  for (const handle of handles) await store.upsert(recordFor(provider, handle));
  await store.upsert(recordFor(provider, foreign));
  for (const handle of handles) assert.equal(await reclaimSandbox(run(handle.key), { provider, instances: store }), 'destroyed');
  assert.equal(await reclaimSandbox(run(foreign.key), { provider, instances: store }), 'destroy-failed');
  assert.match((await store.listLeaks())[0].lastError, /refusing to touch sandbox/);
  assert.deepStrictEqual(store.records(), []);
  assert.deepStrictEqual(await provider.list(), []);
  for (const handle of handles) await provider.destroy({ id: handle.id }); // idempotent

  // retryLeaks, native provider + native store (one call into the core): still not ours.
  assert.deepStrictEqual(await binding.retryLeaks({ provider, instances: store }), { retried: 1, destroyed: 0, stillFailing: 1, leaseLost: 0 });
  assert.equal((await store.listLeaks())[0].attempts, 2);
  await stranger.destroy({ id: foreign.id });
  assert.deepStrictEqual(await stranger.list(), []);
  // Now gone: destroy succeeds (idempotent), so the retry resolves the leak.
  assert.deepStrictEqual(await binding.retryLeaks({ provider, instances: store }), { retried: 1, destroyed: 1, stillFailing: 0, leaseLost: 0 });
  assert.equal(await store.countLeaks(), 0);
  assert.deepStrictEqual(readdirSync(baseDir), [], 'no sandbox directory left');
});

test('only the ownership guard is a SandboxNotOwnedError: a cancelled or other failure is not', async () => {
  // The facade maps by code; napi's own `Cancelled` once doubled as "not owned".
  const { nativeCall } = createRequire(import.meta.url)('../../bindings-node/lib/errors.cjs');
  for (const code of ['Cancelled', 'GenericFailure', 'PendingException']) {
    const failure = Object.assign(new Error(`napi said ${code}`), { code });
    await assert.rejects(nativeCall(() => Promise.reject(failure)), (error) => {
      assert.equal(error, failure, `a ${code} failure passes through unchanged`);
      assert.ok(!(error instanceof SandboxNotOwnedError));
      return true;
    });
  }

  const baseDir = join(scratch, 'guard');
  const provider = new LocalProvider({ baseDir, owner, isolation: 'process-group' });
  // A directory without our owner file: the native guard refuses it.
  mkdirSync(join(baseDir, 'stray'));
  await assert.rejects(provider.destroy({ id: 'stray' }), (error) => {
    assert.ok(error instanceof SandboxNotOwnedError && error instanceof Error, `got ${error}`);
    assert.equal(error.name, 'SandboxNotOwnedError');
    assert.equal(error.code, 'SANDBOX_NOT_OWNED');
    assert.match(error.message, /refusing to touch sandbox `stray`/);
    return true;
  });
  // A provider failure that is not the guard stays a plain Error with the backend's message.
  await assert.rejects(provider.exec('missing', ['true']), (error) => {
    assert.ok(error instanceof Error && !(error instanceof SandboxNotOwnedError) && !(error instanceof TypeError), `got ${error}`);
    assert.notEqual(error.code, 'SANDBOX_NOT_OWNED');
    assert.match(error.message, /no such sandbox/);
    return true;
  });
  assert.deepStrictEqual(readdirSync(baseDir), ['stray'], 'the stray directory was left alone');
});

test('DockerProvider (podman): three sandboxes, list, exec, reclaim, idempotent destroy, foreign container refused, nothing left', { skip: docker.skip, timeout: 300_000 }, async () => {
  const provider = new DockerProvider({ image, owner });
  assert.equal(provider.name, 'docker');
  const keys = ['thread-1:sandbox', 'thread-2:sandbox', 'thread-3:sandbox'];
  const foreignName = `${owner}-foreign`;
  const store = await SqliteSandboxInstanceStore.open(join(scratch, 'docker.db'));
  try {
    const handles = [];
    for (const key of keys) handles.push(await provider.create(key, { suite: 'node' }));
    assert.deepStrictEqual((await provider.list()).map((h) => h.key).sort(), keys);
    assert.equal(provider.owner, owner, 'a native provider exposes its owner');
    for (const listed of await provider.list()) {
      // The orphan sweep's form: every field present, read from the labels.
      assert.deepStrictEqual(Object.keys(listed).sort(), ['createdAt', 'id', 'key', 'owner']);
      assert.equal(listed.owner, owner);
      assert.equal(listed.createdAt, handles.find((h) => h.id === listed.id).createdAt);
    }
    const hello = await provider.exec(handles[1].id, ['sh', '-c', 'echo hello; echo oops >&2; exit 3']);
    assert.deepStrictEqual(hello, { stdout: 'hello\n', stderr: 'oops\n', exitCode: 3 });

    for (const handle of handles) await store.upsert(recordFor(provider, handle));
    for (const key of keys) assert.equal(await reclaimSandbox(run(key), { provider, instances: store }), 'destroyed');
    assert.deepStrictEqual(await provider.list(), []);
    for (const handle of handles) await provider.destroy({ id: handle.id }); // already gone: success
    assert.equal(await store.countLeaks(), 0);

    // A container created without our owner label: refused, left running.
    podman('run', '-d', '--name', foreignName, image, 'sleep', '3600');
    await assert.rejects(provider.destroy({ id: foreignName }), { name: 'SandboxNotOwnedError', code: 'SANDBOX_NOT_OWNED' });
    await store.upsert({ key: 'foreign', provider: 'docker', providerSandboxId: foreignName, threadId: 't', updatedAt: 1 });
    assert.equal(await reclaimSandbox(run('foreign'), { provider, instances: store }), 'destroy-failed');
    assert.equal(podman('inspect', '-f', '{{.State.Running}}', foreignName), 'true', 'the foreign container still runs');
    const [leak] = await store.listLeaks('docker');
    assert.equal(leak.providerSandboxId, foreignName);
    assert.match(leak.lastError, /refusing to touch sandbox/);
    // The native retry (DockerProvider + SQLite, in Rust) still refuses it.
    assert.deepStrictEqual(await binding.retryLeaks({ provider, instances: store }), { retried: 1, destroyed: 0, stillFailing: 1, leaseLost: 0 });
    assert.equal(podman('inspect', '-f', '{{.State.Running}}', foreignName), 'true', 'still running after the retry');
  } finally {
    try {
      podman('rm', '-f', '-t', '0', foreignName);
    } catch {
      // not created: nothing to remove
    }
    await store.close();
  }
  assert.equal(podman('ps', '-a', '-q', '--filter', `label=io.sandbox-reclaim.owner=${owner}`), '', 'no container of ours left');
  assert.equal(podman('ps', '-a', '-q', '--filter', `name=${foreignName}`), '', 'foreign container removed');
  assert.deepStrictEqual(await provider.list(), []);
});
