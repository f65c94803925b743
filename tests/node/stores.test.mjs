// The shared store conformance cases (tests/conformance/*.json, format in its
// README) through the Node binding, against the native in-memory store with a
// ledger, SQLite and PostgreSQL; then reclaims with the durable stores and a
// failing JS provider (leak recorded, listLeaks, retryLeaks).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import * as binding from '../../bindings-node/index.mjs';
import { service, tempDir, uniqueSchema } from './services.mjs';

const {
  InMemorySandboxInstanceStore,
  SqliteSandboxInstanceStore,
  PostgresSandboxInstanceStore,
  reclaimSandbox,
  sandboxReclaimer,
  SandboxReclaimFailedError,
  listLeaks,
  retryLeaks,
  SandboxStoreError,
  SandboxStoreOpenError,
  SchemaTooNewError,
} = binding;

const here = dirname(fileURLToPath(import.meta.url));
const conformanceDir = resolve(here, '..', 'conformance');
const pg = service('SANDBOX_RECLAIM_PG_URL', 'PostgreSQL store tests');
const scratch = tempDir('stores');
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));

/** Replaces every `{"$repeat": text, "times": n}` with the repeated text. */
function expand(value) {
  if (Array.isArray(value)) return value.map(expand);
  if (value !== null && typeof value === 'object') {
    if ('$repeat' in value) return value.$repeat.repeat(value.times);
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, expand(inner)]));
  }
  return value;
}

function loadCases() {
  const files = readdirSync(conformanceDir).filter((file) => file.endsWith('.json')).sort();
  return files.flatMap((file) => JSON.parse(readFileSync(join(conformanceDir, file), 'utf8')).cases.map(expand));
}

let files = 0;
/** Fresh, empty stores by kind; each returns [store, cleanup]. */
const stores = {
  memory: { skip: false, open: async () => [new InMemorySandboxInstanceStore({ ledger: true }), async () => {}] },
  sqlite: {
    skip: false,
    open: async () => {
      const store = await SqliteSandboxInstanceStore.open(join(scratch, `conformance-${(files += 1)}.db`));
      return [store, () => store.close()];
    },
  },
  postgres: {
    skip: pg.skip,
    open: async () => {
      const store = await PostgresSandboxInstanceStore.connect(pg.value, { schema: uniqueSchema('node_conf'), maxConnections: 2 });
      return [store, () => store.close()];
    },
  },
};

/** A leak entry as a step names it: `(provider, providerSandboxId)` identify it. */
const namedEntry = (entry) => ({ key: '', runId: '', lastError: '', failedAt: 0, attempts: 0, ...entry });

async function runStep(store, step) {
  switch (step.op) {
    case 'together':
      // Issued in order, none awaited before the next is issued.
      await Promise.all(step.steps.map((inner) => runStep(store, inner)));
      return;
    case 'get':
      assert.deepStrictEqual(await store.get(step.key), step.expect);
      return;
    case 'upsert':
      if (step.expectError === undefined) {
        await store.upsert(step.record);
        return;
      }
      await assert.rejects(store.upsert(step.record), (error) => {
        assert.ok(error instanceof TypeError || error instanceof RangeError, `a TypeError, got ${error}`);
        assert.match(error.message, new RegExp(step.expectError.field), 'the message names the field');
        return true;
      });
      return;
    case 'delete':
      await store.delete(step.key);
      return;
    case 'deleteRecordingLeak':
      await store.deleteRecordingLeak(step.key, step.leak);
      return;
    case 'listLeaks':
      assert.deepStrictEqual(await store.listLeaks(step.provider), step.expect);
      return;
    case 'countLeaks':
      assert.equal(await store.countLeaks(step.provider), step.expect);
      return;
    case 'claimLeaks': {
      // Each claim's generation is the store's own: present, and otherwise as expected.
      const claimed = await store.claimLeaks(step.provider, step.limit, step.leaseMs);
      assert.ok(claimed.every((entry) => Number.isSafeInteger(entry.claim)), JSON.stringify(claimed));
      assert.deepStrictEqual(claimed.map(({ claim, ...entry }) => entry), step.expect);
      return;
    }
    case 'resolveLeak':
      await store.resolveLeak(namedEntry(step.entry));
      return;
    case 'recordRetryFailure':
      await store.recordRetryFailure(namedEntry(step.entry), step.message, step.failedAt);
      return;
    default:
      throw new Error(`unknown conformance op ${step.op}`);
  }
}

const cases = loadCases();
test('the conformance cases are all there', () => assert.ok(cases.length >= 30, `${cases.length} cases`));

for (const [kind, { skip, open }] of Object.entries(stores)) {
  for (const testCase of cases) {
    test(`conformance (${kind}): ${testCase.name}`, { skip }, async () => {
      const [store, close] = await open();
      try {
        for (const [index, step] of testCase.steps.entries()) {
          try {
            await runStep(store, step);
          } catch (error) {
            error.message = `step ${index} (${step.op}): ${error.message}`;
            throw error;
          }
        }
      } finally {
        await close();
      }
    });
  }
}

// ------------------------------------------------ reclaims with durable stores

const record = (key, id) => ({ key, provider: 'docker', providerSandboxId: id, threadId: 'thread-1', updatedAt: 1_700_000_000_000 });
const run = (key) => ({ runId: `run-${key}`, threadId: 'thread-1', status: 'failed', startedAt: 1, sandboxKey: key });

for (const kind of ['sqlite', 'postgres']) {
  const { skip, open } = stores[kind];

  test(`reclaim with ${kind}: a failed destroy is recorded in the ledger and retried`, { skip }, async () => {
    const [store, close] = await open();
    try {
      for (const key of ['a', 'b', 'c']) await store.upsert(record(key, `ctr-${key}`));
      const broken = { name: 'docker', calls: [], async destroy({ id }) { this.calls.push(id); throw new Error(`engine down for ${id}`); } };
      const before = Date.now();
      assert.equal(await reclaimSandbox(run('a'), { provider: broken, instances: store }), 'destroy-failed');
      await assert.rejects(sandboxReclaimer({ provider: broken, instances: store })(run('b')), SandboxReclaimFailedError);
      const healthy = { name: 'docker', calls: [], async destroy({ id }) { this.calls.push(id); } };
      assert.equal(await reclaimSandbox(run('c'), { provider: healthy, instances: store }), 'destroyed');
      assert.deepStrictEqual(broken.calls, ['ctr-a', 'ctr-b']);
      for (const key of ['a', 'b', 'c']) assert.equal(await store.get(key), null, `record ${key} deleted`);

      const leaks = await listLeaks(store);
      assert.deepStrictEqual(
        leaks.map(({ failedAt, ...rest }) => {
          assert.ok(failedAt >= before && failedAt <= Date.now(), 'failedAt is the failure time');
          return rest;
        }),
        ['a', 'b'].map((key) => ({
          key,
          provider: 'docker',
          providerSandboxId: `ctr-${key}`,
          runId: `run-${key}`,
          lastError: `engine down for ctr-${key}`,
          attempts: 1,
        })),
      );
      assert.deepStrictEqual(await store.listLeaks('other'), []);
      assert.equal(await store.countLeaks('docker'), 2);

      // A retry that fails again bumps attempts and keeps the new error.
      assert.deepStrictEqual(await retryLeaks({ provider: broken, instances: store }), { retried: 2, destroyed: 0, stillFailing: 2, leaseLost: 0 });
      assert.deepStrictEqual((await store.listLeaks()).map((leak) => leak.attempts), [2, 2]);
      // Another provider's name claims nothing.
      assert.deepStrictEqual(await retryLeaks({ provider: { name: 'local', destroy() {} }, instances: store }), { retried: 0, destroyed: 0, stillFailing: 0, leaseLost: 0 });
      // Limit 1, then the rest: a healthy provider empties the ledger.
      assert.deepStrictEqual(await retryLeaks({ provider: healthy, instances: store, limit: 1 }), { retried: 1, destroyed: 1, stillFailing: 0, leaseLost: 0 });
      assert.deepStrictEqual(await retryLeaks({ provider: healthy, instances: store }), { retried: 1, destroyed: 1, stillFailing: 0, leaseLost: 0 });
      assert.deepStrictEqual(healthy.calls, ['ctr-c', 'ctr-a', 'ctr-b']);
      assert.equal(await store.countLeaks(), 0);
    } finally {
      await close();
    }
  });
}

test('retryLeaks over the native in-memory ledger with a JS provider', async () => {
  const store = new InMemorySandboxInstanceStore({ ledger: true });
  await store.upsert(record('k', 'ctr-k'));
  const broken = { name: 'docker', destroy() { throw 'plain string thrown'; } };
  assert.equal(await reclaimSandbox(run('k'), { provider: broken, instances: store }), 'destroy-failed');
  assert.equal((await store.listLeaks())[0].lastError, 'plain string thrown');
  assert.deepStrictEqual(await retryLeaks({ provider: broken, instances: store }), { retried: 1, destroyed: 0, stillFailing: 1, leaseLost: 0 });
  assert.deepStrictEqual(await retryLeaks({ provider: { name: 'docker', async destroy() {} }, instances: store }), { retried: 1, destroyed: 1, stillFailing: 0, leaseLost: 0 });
  assert.deepStrictEqual(await listLeaks(store), []);
});

test('store and retryLeaks input errors are TypeErrors naming the field, before any effect', async () => {
  await assert.rejects(SqliteSandboxInstanceStore.open(42), { name: 'TypeError', message: /path/ });
  await assert.rejects(SqliteSandboxInstanceStore.open(''), { name: 'TypeError', message: /path/ });
  await assert.rejects(SqliteSandboxInstanceStore.open(join(scratch, 'x.db'), { maxConnections: 0 }), { name: 'TypeError', message: /maxConnections/ });
  await assert.rejects(SqliteSandboxInstanceStore.open(join(scratch, 'x.db'), { busyTimeoutMs: -1 }), { name: 'TypeError', message: /busyTimeoutMs/ });
  await assert.rejects(PostgresSandboxInstanceStore.connect('postgres://nobody@127.0.0.1:1/x', { schema: 'bad-name' }), {
    name: 'TypeError',
    message: /schema/,
  });
  await assert.rejects(PostgresSandboxInstanceStore.connect('postgres://nobody@127.0.0.1:1/x', { leaksTable: 'same', instancesTable: 'same' }), {
    name: 'TypeError',
    message: /instancesTable/,
  });
  assert.throws(() => new SqliteSandboxInstanceStore(), TypeError);
  const store = await SqliteSandboxInstanceStore.open(join(scratch, 'input.db'));
  try {
    await assert.rejects(store.get(1), { name: 'TypeError', message: /key/ });
    await assert.rejects(store.upsert({ ...record('k', 'i'), threadId: 3 }), { name: 'TypeError', message: /threadId/ });
    await assert.rejects(store.deleteRecordingLeak('k', { key: 'k' }), { name: 'TypeError', message: /leak\.provider/ });
    await assert.rejects(store.claimLeaks('docker', -1, 0), { name: 'TypeError', message: /limit/ });
    await assert.rejects(retryLeaks({ provider: { name: 'docker', destroy() {} }, instances: { get() {}, delete() {} } }), {
      name: 'TypeError',
      message: /options\.instances\.claimLeaks/,
    });
    await assert.rejects(retryLeaks({ provider: { name: 'docker' }, instances: store }), { name: 'TypeError', message: /options\.provider\.destroy/ });
    await assert.rejects(retryLeaks({ provider: { name: 'docker', destroy() {} }, instances: store, limit: 1.5 }), {
      name: 'TypeError',
      message: /options\.limit/,
    });
    await assert.rejects(listLeaks({}), TypeError);
    assert.equal(await store.countLeaks(), 0);
  } finally {
    await store.close();
  }
  await assert.rejects(store.get('k'), SandboxStoreError, 'a closed store rejects');
});

test('two handles on one SQLite file see each other\'s writes', async () => {
  const path = join(scratch, 'shared.db');
  const [one, two] = [await SqliteSandboxInstanceStore.open(path), await SqliteSandboxInstanceStore.open(path, { busyTimeoutMs: 5000, maxConnections: 1 })];
  try {
    await one.upsert(record('shared', 'ctr-shared'));
    assert.deepStrictEqual(await two.get('shared'), record('shared', 'ctr-shared'));
    await two.delete('shared');
    assert.equal(await one.get('shared'), null);
  } finally {
    await Promise.all([one.close(), two.close()]);
  }
});

// ------------------------------------------------ store errors

test('a closed SQL store rejects with SandboxStoreError carrying the backend message and a code', async () => {
  const store = await SqliteSandboxInstanceStore.open(join(scratch, 'closed.db'));
  await store.close();
  for (const call of [() => store.get('k'), () => store.upsert(record('k', 'i')), () => store.countLeaks()]) {
    await assert.rejects(call(), (error) => {
      assert.ok(error instanceof SandboxStoreError && error instanceof Error, `a SandboxStoreError, got ${error}`);
      assert.ok(!(error instanceof SandboxStoreOpenError), 'a failed call is not an open failure');
      assert.equal(error.name, 'SandboxStoreError');
      assert.equal(error.code, 'SANDBOX_STORE_FAILED');
      assert.match(error.message, /closed/, 'the backend message');
      return true;
    });
  }
});

test('a SQLite file that cannot be opened rejects with SandboxStoreOpenError', async () => {
  const path = join(scratch, 'no-such-directory', 'store.db');
  await assert.rejects(SqliteSandboxInstanceStore.open(path), (error) => {
    assert.ok(error instanceof SandboxStoreOpenError && error instanceof SandboxStoreError, `got ${error}`);
    assert.equal(error.name, 'SandboxStoreOpenError');
    assert.equal(error.code, 'SANDBOX_STORE_OPEN_FAILED');
    return true;
  });
});

test('an unreachable PostgreSQL database rejects with SandboxStoreOpenError', { skip: pg.skip }, async () => {
  const missing = `${pg.value.slice(0, pg.value.lastIndexOf('/'))}/${uniqueSchema('no_such_db')}`;
  await assert.rejects(PostgresSandboxInstanceStore.connect(missing), { name: 'SandboxStoreOpenError', code: 'SANDBOX_STORE_OPEN_FAILED' });
});

/**
 * Small SQLite files (512-byte pages, rollback journal) as another program
 * leaves them, gzipped and base64-encoded. Made with Python's sqlite3 after
 * `PRAGMA page_size = 512`:
 *   foreign:   CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada');
 *   misshapen: CREATE TABLE sandbox_instances (id INTEGER PRIMARY KEY, blob BLOB);
 *   tooNew:    CREATE TABLE sandbox_reclaim_schema_version (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT;
 *              INSERT INTO sandbox_reclaim_schema_version VALUES (1, 0), (99, 0);
 */
const SQLITE_FILES = {
  foreign:
    'H4sIAAAAAAACAwsO9MksSVVIyy/KTSxRMGZgYmBkZHBQUGBgADIhGAYYgZgFjU8IMDHoJTPyghQzbmIAolFAMfBhZBMXF2esLElMykktLU4tKgYTTM5Bro4hrgohjk4+rgpgIQWNzBQFT78QV3fXIIWAIE9fx6BIBW/XSB2FvMTcVIUQ14gQTUjc/GAAolEwggAbIzODcGJKIgCj6F5CAAQAAA==',
  misshapen:
    'H4sIAAAAAAACAwsO9MksSVVIyy/KTSxRMGZgYmBkZHBQUGBgYGAEYiYGBADxWdD4hAAjg14yIy+IwdjLAESjAB8oZGQX19dnbBQsSUzKSS1OzEtJyq+Iz8wrLknMS04txhBgcg5ydQxxVQhxdPJxVcCQVtDITFHw9AtxdXcNUggI8vR1DIpU8HaN1FFIyslPUnDy8XfSBMUNSiyPghEFAG4bnMIABAAA',
  tooNew:
    'H4sIAAAAAAACAwsO9MksSVVIyy/KTSxRMGZgYmBkZHBQUGBgADIhGAYYgZgFjU8IMDHoJTPyghQzujMA0XAFjWaM7OKenoyN6SWJSTmpxYl5KUn5FfFFqck5iZm58cXJGam5ifFlqUXFmfl5+GWZnINcHUNcFUIcnXxcFfCrVdCAMTz9QlzdXYMUAoI8fR2DIhW8XSN1FBILCnIyU1PigTELk/fzD1HwC/Xx0VQIDgnydA4BxQ0T4zcGxt9AYhSMEMCczMzAwcwIJACWqhtrAAQAAA==',
};

/**
 * Writes SQLITE_FILES[name] to a new file, opens it expecting a rejection,
 * and checks that not a byte changed: no WAL switch (header bytes 18-19 stay
 * 1, rollback journal), no table added, no side file. Returns the error.
 */
async function refusedUnchanged(name) {
  const path = join(scratch, `${name}-${(files += 1)}.db`);
  writeFileSync(path, gunzipSync(Buffer.from(SQLITE_FILES[name], 'base64')));
  const before = readFileSync(path);
  assert.deepStrictEqual([...before.subarray(18, 20)], [1, 1], 'the file starts in rollback-journal mode');
  let refusal;
  await assert.rejects(SqliteSandboxInstanceStore.open(path), (error) => {
    refusal = error;
    return true;
  });
  assert.ok(readFileSync(path).equals(before), 'not a byte of the file changed');
  for (const side of ['-wal', '-shm', '-journal']) assert.ok(!existsSync(`${path}${side}`), `no ${side} file`);
  return { error: refusal, path };
}

test('another application\'s SQLite file is refused unchanged with SandboxStoreOpenError', async () => {
  const { error, path } = await refusedUnchanged('foreign');
  assert.ok(error instanceof SandboxStoreOpenError && error instanceof SandboxStoreError, `got ${error}`);
  assert.ok(!(error instanceof SchemaTooNewError));
  assert.equal(error.name, 'SandboxStoreOpenError');
  assert.equal(error.code, 'SANDBOX_STORE_FOREIGN_DATABASE');
  assert.ok(error.message.includes(path) && error.message.includes('users'), error.message);
});

test('a sandbox_instances table of the wrong shape is refused unchanged with SandboxStoreOpenError', async () => {
  const { error, path } = await refusedUnchanged('misshapen');
  assert.ok(error instanceof SandboxStoreOpenError, `got ${error}`);
  assert.equal(error.code, 'SANDBOX_STORE_INCOMPATIBLE_SCHEMA');
  assert.ok(error.message.includes(path) && error.message.includes('`sandbox_instances`'), error.message);
});

test('a schema newer than this library rejects with SchemaTooNewError (found, supported), file unchanged', async () => {
  const { error } = await refusedUnchanged('tooNew');
  assert.ok(error instanceof SchemaTooNewError && error instanceof SandboxStoreOpenError && error instanceof SandboxStoreError);
  assert.equal(error.name, 'SchemaTooNewError');
  assert.equal(error.code, 'SANDBOX_STORE_SCHEMA_TOO_NEW');
  assert.deepStrictEqual([error.found, error.supported], [99, 5], 'schema 5 added the scoped reads\' indexes and lookup queue');
  assert.match(error.message, /version 99/);
});

test('the store error classes can be built and told apart', () => {
  const tooNew = new SchemaTooNewError('too new', 3, 2);
  assert.deepStrictEqual([tooNew.name, tooNew.code, tooNew.found, tooNew.supported], ['SchemaTooNewError', 'SANDBOX_STORE_SCHEMA_TOO_NEW', 3, 2]);
  assert.equal(new SandboxStoreError('x').code, 'SANDBOX_STORE_FAILED');
  assert.equal(new SandboxStoreOpenError('x').code, 'SANDBOX_STORE_OPEN_FAILED');
  assert.ok(!(new SandboxStoreError('x') instanceof SandboxStoreOpenError));
});

// ------------------------------------------------ numbers out of range

const U32_RANGE = /must be a whole number between 1 and 4294967295/;

for (const maxConnections of [0, -1, 1.5, 2 ** 32, 2 ** 40, 2 ** 70, Number.NaN]) {
  test(`maxConnections ${maxConnections} is a TypeError stating the range, before any effect`, async () => {
    const path = join(scratch, `never-${(files += 1)}.db`);
    await assert.rejects(SqliteSandboxInstanceStore.open(path, { maxConnections }), { name: 'TypeError', message: /options\.maxConnections/ });
    await assert.rejects(SqliteSandboxInstanceStore.open(path, { maxConnections }), { message: U32_RANGE });
    await assert.rejects(PostgresSandboxInstanceStore.connect('postgres://nobody@127.0.0.1:1/x', { maxConnections }), {
      name: 'TypeError',
      message: U32_RANGE,
    });
    assert.ok(!existsSync(path), 'the file was not created');
  });
}

test('out-of-range numbers of store methods are TypeErrors naming the argument, before any effect', async () => {
  const store = await SqliteSandboxInstanceStore.open(join(scratch, 'ranges.db'));
  try {
    await store.deleteRecordingLeak('k', { key: 'k', provider: 'docker', providerSandboxId: 'c', runId: 'r', errorMessage: 'e', failedAt: 5 });
    const [entry] = await store.listLeaks();
    for (const limit of [-1, 1.5, 2 ** 32, 2 ** 70]) {
      await assert.rejects(store.claimLeaks('docker', limit, 0), { name: 'TypeError', message: /^limit must be a whole number between 0 and 4294967295$/ });
    }
    for (const leaseMs of [-1, 2 ** 70]) {
      await assert.rejects(store.claimLeaks('docker', 1, leaseMs), { name: 'TypeError', message: /leaseMs/ });
    }
    for (const failedAt of [-1, 1.5, 2 ** 70]) {
      await assert.rejects(store.recordRetryFailure(entry, 'm', failedAt), { name: 'TypeError', message: /^failedAt must be a whole number between 0 and/ });
    }
    await assert.rejects(store.recordRetryFailure({ ...entry, attempts: 2 ** 40 }, 'm', 6), { name: 'TypeError', message: /entry\.attempts/ });
    for (const busyTimeoutMs of [-1, 2 ** 31, 2 ** 70]) {
      // SQLite takes an `int` of milliseconds: sqlx used to panic on a longer timeout.
      await assert.rejects(SqliteSandboxInstanceStore.open(join(scratch, 'x.db'), { busyTimeoutMs }), {
        name: 'TypeError',
        message: /^options\.busyTimeoutMs must be a whole number between 0 and 2147483647$/,
      });
    }
    assert.ok(!existsSync(join(scratch, 'x.db')), 'a refused option creates no file');
    assert.deepStrictEqual(await store.listLeaks(), [entry], 'nothing was claimed or bumped');
  } finally {
    await store.close();
  }
});

// The core checks every number a store method takes (proto/src/options/arguments.rs):
// any JS value crosses as it is, and a non-number is refused with the same
// text as a number out of range, by the in-memory and the SQLite store alike.
for (const [kind, open] of [
  ['memory', async () => new InMemorySandboxInstanceStore({ ledger: true })],
  ['sqlite', async () => SqliteSandboxInstanceStore.open(join(scratch, `core-ranges-${(files += 1)}.db`))],
]) {
  test(`${kind}: the core refuses a bad limit, lease or time with the field's name and range, before any effect`, async () => {
    const store = await open();
    try {
      const leak = { key: 'k', provider: 'docker', providerSandboxId: 'c', runId: 'r', errorMessage: 'e', failedAt: 5 };
      await store.deleteRecordingLeak('k', leak);
      const [entry] = await store.listLeaks();
      const LIMIT = /^limit must be a whole number between 0 and 4294967295$/;
      const LEASE = /^leaseMs must be a whole number between 0 and 9007199254740991$/;
      for (const limit of [-1, 1.5, 2 ** 32, Number.NaN, Infinity, '1', null, undefined, 1n]) {
        await assert.rejects(store.claimLeaks('docker', limit, 0), { name: 'TypeError', message: LIMIT }, `limit ${String(limit)}`);
        await assert.rejects(store.listStale(0, limit), { name: 'TypeError', message: LIMIT }, `limit ${String(limit)}`);
        await assert.rejects(store.dueLeaks('docker', limit, 0, 0), { name: 'TypeError', message: LIMIT }, `limit ${String(limit)}`);
      }
      for (const leaseMs of [-1, 0.5, 2 ** 53, '5', undefined]) {
        await assert.rejects(store.claimLeaks('docker', 1, leaseMs), { name: 'TypeError', message: LEASE }, `lease ${String(leaseMs)}`);
        await assert.rejects(store.claimSweep('docker', 'h', leaseMs, 0), { name: 'TypeError', message: LEASE }, `lease ${String(leaseMs)}`);
      }
      // dueLeaks without a lease (undefined or null) only lists; listAudit's since may be null, its limit not.
      assert.equal((await store.dueLeaks('docker', 0, null, 0)).length, 0);
      assert.deepStrictEqual(await store.listAudit({ since: null }), []);
      await assert.rejects(store.listAudit({ limit: null }), { name: 'TypeError', message: /^options\.limit must be a whole number between 0 and 4294967295$/ });
      await assert.rejects(store.listAudit({ since: 'now' }), { name: 'TypeError', message: /^options\.since must be a whole number between 0 and 9007199254740991$/ });
      await assert.rejects(store.sandboxReferences('docker', null), { name: 'TypeError', message: /^destroyedSince must be a whole number between 0 and/ });
      await assert.rejects(store.deferLeak(entry, 'm', 6, -1), { name: 'TypeError', message: /^nextAttemptAt must be a whole number between 0 and/ });
      await assert.rejects(store.recordRetryFailure({ ...entry, attempts: '1' }, 'm', 6), { name: 'TypeError', message: /^entry\.attempts must be a whole number between 0 and 4294967295$/ });
      await assert.rejects(store.appendAudit([{ at: -1, host: 'h', provider: 'docker', providerSandboxId: 'c', reason: 'orphan', result: 'destroyed' }]), {
        name: 'TypeError',
        message: /^entries\[0\]\.at must be a whole number between 0 and 9007199254740991$/,
      });
      // The edges of each range are taken.
      assert.deepStrictEqual(await store.listStale(Number.MAX_SAFE_INTEGER, 2 ** 32 - 1), []);
      assert.deepStrictEqual(await store.listLeaks(), [entry], 'nothing was claimed or bumped');
      assert.deepStrictEqual(await store.listAudit(), [], 'no audit row was written');
    } finally {
      await store.close?.();
    }
  });
}

test('store options: maxConnections and busyTimeoutMs of another type are refused by the core, null too', async () => {
  const path = join(scratch, `never-${(files += 1)}.db`);
  for (const maxConnections of ['4', null, true]) {
    await assert.rejects(SqliteSandboxInstanceStore.open(path, { maxConnections }), { name: 'TypeError', message: /^options\.maxConnections must be a whole number between 1 and 4294967295$/ });
    await assert.rejects(PostgresSandboxInstanceStore.connect('postgres://nobody@127.0.0.1:1/x', { maxConnections }), { name: 'TypeError', message: U32_RANGE });
  }
  await assert.rejects(SqliteSandboxInstanceStore.open(path, { busyTimeoutMs: null }), { name: 'TypeError', message: /^options\.busyTimeoutMs must be a whole number between 0 and 2147483647$/ });
  assert.ok(!existsSync(path), 'a refused option creates no file');
  const store = await SqliteSandboxInstanceStore.open(path, { busyTimeoutMs: 2 ** 31 - 1, maxConnections: 1 });
  await store.close();
});
