// The hosted providers (Daytona, Vercel, Sprites, Runloop, Blaxel) through the Node binding, against their
// fakes (proven by the vendors' official SDKs in daytona-fake.test.mjs and
// vercel-fake.test.mjs), one table of vendors: a reclaim destroys for good, a
// failed destroy is `destroy-failed` and reaches the ledger, the deadline
// aborts the request, a wrong key names the variable, and reconcile sweeps
// every page once (never what the vendor is already deleting).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import * as binding from '../../bindings-node/index.mjs';
import { startFakeDaytona } from '../fakes/daytona.mjs';
import { startFakeVercel } from '../fakes/vercel.mjs';
import { startFakeSprites } from '../fakes/sprites.mjs';
import { startFakeRunloop } from '../fakes/runloop.mjs';
import { startFakeBlaxel } from '../fakes/blaxel.mjs';

const { DaytonaProvider, VercelProvider, SpritesProvider, RunloopProvider, BlaxelProvider, InMemorySandboxInstanceStore, reclaimSandbox, reconcile, listLeaks } = binding;

const OWNER_LABEL = 'io.sandbox-reclaim.owner';
const CREATED = Date.UTC(2026, 0, 1);

const isDelete = (request) => request.method === 'DELETE';

// Each row: `Provider` (its class), `mostPerPage` (the largest page the core
// accepts), `required` (options a bare construction needs), `isDelete` (which
// recorded request is a destroy) and `goneSandbox` (a listed sandbox the
// vendor already counts gone: never destroyed again), besides the fake.
const VENDORS = [
  {
    name: 'daytona',
    Provider: DaytonaProvider,
    mostPerPage: 200,
    required: {},
    isDelete,
    goneSandbox: null,
    variable: 'DAYTONA_API_KEY',
    start: () => startFakeDaytona(),
    make: (fake, options) => new DaytonaProvider({ apiKey: fake.key, apiUrl: fake.url, ...options }),
    sandbox: (id, labels, extra = {}) => ({ id, labels, state: 'stopped', createdAt: new Date(CREATED).toISOString(), ...extra }),
    deletingSandbox: (id, labels) => ({ id, labels, state: 'started', desiredState: 'destroyed', createdAt: new Date(CREATED).toISOString() }),
  },
  {
    name: 'vercel',
    Provider: VercelProvider,
    mostPerPage: 50,
    required: { projectId: 'p' },
    isDelete,
    goneSandbox: null,
    variable: 'VERCEL_TOKEN',
    start: () => startFakeVercel(),
    make: (fake, options) => new VercelProvider({ apiKey: fake.token, teamId: fake.teamId, projectId: fake.projectId, apiUrl: fake.url, ...options }),
    sandbox: (name, tags) => ({ name, tags, status: 'stopped', createdAt: CREATED }),
    deletingSandbox: null, // Vercel has no deleting state: a lagging listing shows `stopped`
  },
  {
    name: 'sprites',
    Provider: SpritesProvider,
    mostPerPage: 50,
    required: {},
    isDelete,
    goneSandbox: null,
    variable: 'SPRITES_API_KEY',
    start: () => startFakeSprites(),
    make: (fake, options) => new SpritesProvider({ apiKey: fake.key, apiUrl: fake.url, ...options }),
    // Sprites labels are free strings: `key=value`.
    sandbox: (name, labels) => ({ name, labels: Object.entries(labels).map(([k, v]) => `${k}=${v}`), status: 'cold', createdAt: CREATED }),
    deletingSandbox: null, // Sprites has no deleting status
  },
  {
    name: 'runloop',
    Provider: RunloopProvider,
    mostPerPage: 5000,
    required: {},
    // Runloop never deletes: a destroy is POST /v1/devboxes/{id}/shutdown.
    isDelete: (request) => request.method === 'POST' && request.path.endsWith('/shutdown'),
    // A shut-down devbox stays listed, `shutdown`, forever: gone, never destroyed again.
    goneSandbox: (id, metadata) => ({ id, metadata, status: 'shutdown', createTimeMs: CREATED }),
    variable: 'RUNLOOP_API_KEY',
    start: () => startFakeRunloop(),
    make: (fake, options) => new RunloopProvider({ apiKey: fake.key, apiUrl: fake.url, ...options }),
    sandbox: (id, metadata) => ({ id, metadata, status: 'suspended', createTimeMs: CREATED }),
    deletingSandbox: null,
  },
  {
    name: 'blaxel',
    Provider: BlaxelProvider,
    mostPerPage: 200,
    required: { workspace: 'w' },
    isDelete,
    goneSandbox: null,
    variable: 'BL_API_KEY',
    start: () => startFakeBlaxel(),
    make: (fake, options) => new BlaxelProvider({ apiKey: fake.key, apiUrl: `${fake.url}/v0`, workspace: fake.workspace, ...options }),
    sandbox: (name, labels) => ({ name, labels, status: 'DEPLOYED', createdAt: CREATED }),
    deletingSandbox: (name, labels) => ({ name, labels, status: 'DELETING', createdAt: CREATED }),
  },
];

const run = (key) => ({ runId: `run-${key}`, threadId: 'thread-1', status: 'completed', startedAt: 1, sandboxKey: key });

async function storeWith(vendor, records) {
  const store = new InMemorySandboxInstanceStore({ ledger: true });
  for (const [key, id] of records) {
    await store.upsert({ key, provider: vendor, providerSandboxId: id, threadId: 'thread-1', updatedAt: 1 });
  }
  return store;
}

for (const vendor of VENDORS) {
  const withFake = async (body) => {
    const fake = await vendor.start();
    try {
      await body(fake, (options = {}) => vendor.make(fake, options));
    } finally {
      await fake.close();
    }
  };

  test(`${vendor.name}: bad options are TypeErrors naming the field`, () => {
    const { Provider, required } = vendor;
    assert.throws(() => new Provider({ ...required, apiKey: 5 }), { name: 'TypeError', message: /options\.apiKey/ });
    assert.throws(() => new Provider({ ...required, apiKey: 'k', apiUrl: 'nope' }), { name: 'TypeError', message: /apiUrl/ });
    assert.throws(() => new Provider({ ...required, apiKey: 'k', pageSize: 10_000 }), { name: 'TypeError', message: /pageSize/ });
    // Each vendor's largest page is the core's: Daytona 200, Vercel 50, Sprites 50, Runloop 5000, Blaxel 200.
    const most = vendor.mostPerPage;
    assert.doesNotThrow(() => new Provider({ ...required, apiKey: 'k', pageSize: most }));
    assert.throws(() => new Provider({ ...required, apiKey: 'k', pageSize: most + 1 }), {
      name: 'TypeError',
      message: `options.pageSize must be a whole number between 1 and ${most}`,
    });
    const provider = new Provider({ ...required, apiKey: 'secret_value_123', apiUrl: 'http://127.0.0.1:9' });
    assert.equal(provider.name, vendor.name);
    assert.ok(!JSON.stringify(provider).includes('secret_value_123'));
  });

  test(`${vendor.name}: a reclaim destroys for good; a failed destroy is destroy-failed and reaches the ledger`, async () => {
    await withFake(async (fake, make) => {
      fake.seed([vendor.sandbox('a0', {}), vendor.sandbox('a1', {})]);
      const provider = make();
      const store = await storeWith(vendor.name, [['k0', 'a0'], ['k1', 'a1']]);
      assert.equal(await reclaimSandbox(run('k0'), { provider, instances: store }), 'destroyed');
      assert.deepEqual(fake.state().alive, ['a1']);
      fake.setFaults({ failDeleteEvery: 1 });
      assert.equal(await reclaimSandbox(run('k1'), { provider, instances: store }), 'destroy-failed');
      assert.deepEqual(fake.state().alive, ['a1']);
      const leaks = await listLeaks(store);
      assert.deepEqual(leaks.map((leak) => leak.providerSandboxId), ['a1']);
      assert.match(leaks[0].lastError, /HTTP 500/);
    });
  });

  test(`${vendor.name}: the destroy deadline aborts the request itself`, async () => {
    await withFake(async (fake, make) => {
      fake.seed([vendor.sandbox('a0', {})]);
      fake.setFaults({ hangDeletes: true });
      const store = await storeWith(vendor.name, [['k0', 'a0']]);
      assert.equal(await reclaimSandbox(run('k0'), { provider: make(), instances: store, destroyTimeoutMs: 200 }), 'destroy-failed');
      for (let tries = 0; fake.state().abandoned === 0 && tries < 100; tries += 1) await new Promise((r) => setTimeout(r, 10));
      assert.equal(fake.state().abandoned, 1);
    });
  });

  test(`${vendor.name}: a wrong key rejects naming ${vendor.variable}, never the key`, async () => {
    await withFake(async (fake, make) => {
      const provider = make({ apiKey: 'wrong_secret_value' });
      for (const call of [() => provider.checkAccess(), () => provider.list(), () => provider.destroy({ id: 'a0' })]) {
        await assert.rejects(call(), (error) => error.message.includes(vendor.variable) && !error.message.includes('wrong_secret_value'));
      }
    });
  });

  test(`${vendor.name}: reconcile sweeps every page of the owner once and spares the rest`, async () => {
    await withFake(async (fake, make) => {
      const ours = Array.from({ length: 7 }, (_, i) => vendor.sandbox(`ours${i}`, { [OWNER_LABEL]: 'sandbox-reclaim' }));
      fake.seed([...ours, vendor.sandbox('theirs', { [OWNER_LABEL]: 'other' }), vendor.sandbox('bare', {})]);
      if (vendor.deletingSandbox) fake.seed([vendor.deletingSandbox('going', { [OWNER_LABEL]: 'sandbox-reclaim' })]);
      if (vendor.goneSandbox) fake.seed([vendor.goneSandbox('gone', { [OWNER_LABEL]: 'sandbox-reclaim' })]);
      fake.setFaults({ repeatAcrossPages: true });
      const provider = make({ pageSize: 3 });
      const report = await reconcile({ providers: [provider], instances: await storeWith(vendor.name, []), orphanGraceMs: 60_000 });
      const orphans = report.providers[0].orphans;
      assert.equal(orphans.status, 'swept');
      assert.equal(orphans.destroyed, 7);
      assert.equal(orphans.deleting, vendor.deletingSandbox ? 1 : 0);
      const alive = fake.state().alive;
      const spared = ['bare', 'theirs', ...(vendor.deletingSandbox ? ['going'] : []), ...(vendor.goneSandbox ? ['gone'] : [])].sort();
      assert.deepEqual(alive, spared);
      const deletes = fake.state().requests.filter(vendor.isDelete);
      assert.equal(deletes.length, 7, 'each destroyed once');
      assert.ok(deletes.every((r) => !/\/(going|gone)(\/|$)/.test(r.path)), 'never what is already deleting or gone');
    });
  });
}

test('examples/node/hosted-tanstack.mjs reclaims the run\'s Daytona sandbox and sweeps the labelled orphan and the registered leftover', { timeout: 60_000 }, async () => {
  const { execFile } = await import('node:child_process');
  const fake = await startFakeDaytona();
  try {
    const labelled = { 'io.sandbox-reclaim.owner': 'sandbox-reclaim' };
    fake.seed([
      { id: 'run-box', labels: {}, state: 'started', createdAt: new Date(CREATED).toISOString() }, // TanStack's: no labels
      { id: 'orphan', labels: labelled, state: 'stopped', createdAt: new Date(CREATED).toISOString() },
      { id: 'stranger', labels: {}, state: 'started', createdAt: new Date(CREATED).toISOString() },
      { id: 'leftover', labels: {}, state: 'started', createdAt: new Date(CREATED).toISOString() }, // TanStack's, destroy swallowed
    ]);
    const example = new URL('../../examples/node/hosted-tanstack.mjs', import.meta.url);
    const env = { ...process.env, DAYTONA_API_KEY: fake.key, DAYTONA_API_URL: fake.url };
    const stdout = await new Promise((resolveRun, reject) => {
      execFile(process.execPath, [example.pathname, 'run-box', 'leftover'], { env, timeout: 50_000 }, (error, out, err) => (error ? reject(new Error(`${error.message}\n${err}`)) : resolveRun(out)));
    });
    assert.match(stdout, /reclaimed run-box: deleted for good/);
    assert.match(stdout, /destroyed 2 orphans/);
    assert.deepEqual(fake.state().alive, ['stranger'], 'the unlabelled sandbox no record ever named is never touched');
  } finally {
    await fake.close();
  }
});
