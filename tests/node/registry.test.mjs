// The store's registry through the Node binding: every sandbox an instance
// record named stays registered after the record is deleted, and reconcile's
// orphan sweep takes a sandbox listed *unlabelled* (owner '') for ours only
// when the registry names it (never one labelled for another owner). Native
// stores (in memory, SQLite, PostgreSQL) answer `registeredSandboxes`; a user
// store without it names nothing; `registryRetentionMs` bounds it; and the
// hosted providers with `sweepUnlabelled` list every sandbox of the account.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';

import * as binding from '../../bindings-node/index.mjs';
import { service, tempDir, uniqueSchema } from './services.mjs';
import { userStore } from './user-store.mjs';
import { startFakeE2b } from '../fakes/e2b.mjs';
import { startFakeDaytona } from '../fakes/daytona.mjs';
import { startFakeVercel } from '../fakes/vercel.mjs';

const { reconcile, InMemorySandboxInstanceStore, SqliteSandboxInstanceStore, PostgresSandboxInstanceStore, E2bProvider, DaytonaProvider, VercelProvider } = binding;

const scratch = tempDir('registry');
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));
const pg = service('SANDBOX_RECLAIM_PG_URL', 'the registry in PostgreSQL');

const OWNER_LABEL = 'io.sandbox-reclaim.owner';
const DAY_MS = 86_400_000;
const DEFAULT_RETENTION_MS = 30 * DAY_MS;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const record = (key, provider, providerSandboxId, updatedAt) => ({ key, provider, providerSandboxId, threadId: 'thread-1', updatedAt });

let files = 0;
const STORES = [
  ['in-memory', false, async () => new InMemorySandboxInstanceStore({ ledger: true })],
  ['SQLite', false, () => SqliteSandboxInstanceStore.open(join(scratch, `registry-${(files += 1)}.db`))],
  ['PostgreSQL', pg.skip, () => PostgresSandboxInstanceStore.connect(pg.value, { schema: uniqueSchema('node_registry'), maxConnections: 2 })],
];

/** Writes a record naming each sandbox, then deletes it: registered, with no record left. */
async function registerGone(store, provider, ids, updatedAt = Date.now() - 3_600_000) {
  for (const id of ids) {
    await store.upsert(record(`gone-${id}`, provider, id, updatedAt));
    await store.delete(`gone-${id}`);
  }
}

/** A JS provider listing `sandboxes`; its destroys are recorded. */
function listing(name, sandboxes) {
  const destroyed = [];
  const listed = [];
  return {
    destroyed,
    listed,
    provider: {
      name,
      async list() {
        listed.push(1);
        return sandboxes;
      },
      async destroy({ id }) {
        destroyed.push(id);
      },
    },
  };
}

const old = () => Date.now() - 3_600_000;
/** u1: unlabelled and registered; u2: unlabelled, never recorded; x1: another owner's, registered. */
const world = () => [
  { id: 'u1', createdAt: old(), owner: '' },
  { id: 'u2', createdAt: old(), owner: '' },
  { id: 'x1', createdAt: old(), owner: 'someone-else' },
];

// ------------------------------------------------------------ native stores

for (const [kind, skip, open] of STORES) {
  test(`registeredSandboxes on the native ${kind} store: deleted records stay registered, by provider, within since`, { skip }, async () => {
    const store = await open();
    try {
      const t0 = 1_700_000_000_000;
      assert.deepStrictEqual(await store.registeredSandboxes('docker', 0), [], 'an empty store registers nothing');
      await store.upsert(record('k1', 'docker', 'c1', t0));
      await store.upsert(record('k2', 'docker', 'c2', t0));
      await store.upsert(record('k3', 'local', 'l3', t0));
      await store.delete('k2');
      assert.equal(await store.get('k2'), null);
      assert.deepStrictEqual((await store.registeredSandboxes('docker', 0)).sort(), ['c1', 'c2'], 'the deleted record\'s sandbox is still registered');
      assert.deepStrictEqual(await store.registeredSandboxes('local', 0), ['l3'], 'by provider');
      assert.deepStrictEqual(await store.registeredSandboxes('nobody', 0), []);
      // Reads nothing but the registry: the deleted record's sandbox is no reference.
      assert.deepStrictEqual(await store.sandboxReferences('docker'), ['c1']);

      // A live record always counts; a deleted one counts from its deletion.
      const afterDelete = Date.now() + 60_000;
      assert.deepStrictEqual(await store.registeredSandboxes('docker', afterDelete), ['c1'], 'deleted before since: no longer named');

      // A record moved to another sandbox keeps the first registered as last seen at its last write.
      await store.upsert(record('k1', 'docker', 'c1b', t0 + 10));
      assert.deepStrictEqual((await store.registeredSandboxes('docker', t0)).sort(), ['c1', 'c1b', 'c2']);
      assert.deepStrictEqual((await store.registeredSandboxes('docker', t0 + 5)).sort(), ['c1b', 'c2'], 'c1 was last seen at t0');

      // A failed destroy's ledger write deletes the record too: still registered.
      await store.upsert(record('k4', 'docker', 'c4', t0));
      await store.deleteRecordingLeak('k4', { key: 'k4', provider: 'docker', providerSandboxId: 'c4', runId: 'r4', errorMessage: 'boom', failedAt: t0 });
      assert.ok((await store.registeredSandboxes('docker', Date.now() - 60_000)).includes('c4'), 'deleteRecordingLeak registers as a delete');

      // Arguments are checked before the native store sees anything, naming the field.
      await assert.rejects(store.registeredSandboxes(5, 0), { name: 'TypeError', message: /^provider must be a string/ });
      await assert.rejects(store.registeredSandboxes('p\uD800', 0), { name: 'TypeError', message: /^provider must not contain a lone UTF-16 surrogate/ });
      for (const since of [undefined, -1, 1.5, '0', 2 ** 53, Number.NaN]) {
        await assert.rejects(store.registeredSandboxes('docker', since), { name: 'TypeError', message: /^since must be a whole number between 0 and/ }, `since ${String(since)}`);
      }
    } finally {
      await store.close?.();
    }
  });

  test(`reconcile with the native ${kind} store: an unlabelled sandbox is ours only when the registry names it`, { skip }, async () => {
    const store = await open();
    try {
      await registerGone(store, 'js', ['u1', 'x1']);
      const { provider, destroyed } = listing('js', world());
      const report = await reconcile({ provider, instances: store, host: 'registry-test' });
      assert.deepStrictEqual(destroyed, ['u1'], 'only the registered unlabelled sandbox is destroyed');
      const orphans = report.providers[0].orphans;
      assert.equal(orphans.status, 'swept');
      assert.deepStrictEqual(
        [orphans.listed, orphans.foreign, orphans.referenced, orphans.found, orphans.destroyed],
        [3, 2, 0, 1, 1],
        'u2 (never recorded) and x1 (another owner\'s, registered or not) count as foreign',
      );
      assert.deepStrictEqual(report.actions.map(({ reason, providerSandboxId, result }) => [reason, providerSandboxId, result]), [['orphan', 'u1', 'destroyed']]);
      const audit = await store.listAudit();
      assert.deepStrictEqual(audit.map((row) => [row.providerSandboxId, row.reason, row.result]), [['u1', 'orphan', 'destroyed']]);
    } finally {
      await store.close?.();
    }
  });

  test(`reconcile with the native ${kind} store: registryRetentionMs bounds how long a deleted record's sandbox stays ours`, { skip }, async () => {
    const store = await open();
    try {
      await registerGone(store, 'js', ['u1']);
      await sleep(20); // the deletion is strictly before the pass's clock
      const zero = listing('js', world());
      const none = await reconcile({ provider: zero.provider, instances: store, registryRetentionMs: 0 });
      assert.deepStrictEqual(zero.destroyed, [], 'retention 0: the deleted record\'s sandbox is no longer registered');
      assert.deepStrictEqual([none.providers[0].orphans.foreign, none.providers[0].orphans.found], [3, 0]);
      // That pass held the sweep, so it pruned the registry rows past the retention too.
      assert.deepStrictEqual(await store.registeredSandboxes('js', 0), [], 'pruned: past a retention of 0');
      await registerGone(store, 'js', ['u1']);

      const minute = listing('js', world());
      const some = await reconcile({ provider: minute.provider, instances: store, registryRetentionMs: 60_000 });
      assert.deepStrictEqual(minute.destroyed, ['u1'], 'deleted within the retention: still ours');
      assert.equal(some.providers[0].orphans.destroyed, 1);
    } finally {
      await store.close?.();
    }
  });
}

// ------------------------------------------------------------ user stores


test('a user store without registeredSandboxes still reconciles, never asks for it, and never destroys an unlabelled sandbox', async () => {
  const native = new InMemorySandboxInstanceStore({ ledger: true });
  await registerGone(native, 'js', ['u1', 'x1']);
  const { store, calls } = userStore(native, []);
  const { provider, destroyed } = listing('js', world());
  const report = await reconcile({ provider, instances: store });
  assert.deepStrictEqual(destroyed, [], 'u1 is registered in the native store, but this store offers no registry');
  const orphans = report.providers[0].orphans;
  assert.deepStrictEqual([orphans.status, orphans.listed, orphans.foreign, orphans.found], ['swept', 3, 3, 0]);
  assert.ok(!calls.some((call) => call.method === 'registeredSandboxes'), 'no registeredSandboxes call');
  assert.ok(calls.some((call) => call.method === 'sandboxReferences'), 'the sweep did read its references');
});

test('a user store with registeredSandboxes is asked once per sweep, between sandboxReferences and list, since now − 30 days by default', async () => {
  const native = new InMemorySandboxInstanceStore({ ledger: true });
  await registerGone(native, 'js', ['u1']);
  const { store, calls } = userStore(native, ['registeredSandboxes']);
  const { provider, destroyed, listed } = listing('js', world());
  const order = [];
  const list = provider.list;
  provider.list = function () {
    order.push(calls.length);
    return list.call(this);
  };
  const before = Date.now();
  await reconcile({ provider, instances: store });
  const after = Date.now();
  assert.deepStrictEqual(destroyed, ['u1']);
  assert.equal(listed.length, 1);
  const asked = calls.filter((call) => call.method === 'registeredSandboxes');
  assert.equal(asked.length, 1, 'asked once');
  const [providerName, since] = asked[0].args;
  assert.equal(providerName, 'js');
  assert.ok(since >= before - DEFAULT_RETENTION_MS && since <= after - DEFAULT_RETENTION_MS, `since ${since} is the pass's now − 30 days`);
  const methods = calls.map((call) => call.method);
  const at = methods.indexOf('registeredSandboxes');
  assert.equal(methods[at - 1], 'sandboxReferences', 'right after sandboxReferences');
  assert.equal(order[0], at + 1, 'and right before the listing');

  // registryRetentionMs reaches the store as since = now − retention.
  calls.length = 0;
  const start = Date.now();
  await reconcile({ provider: listing('js', []).provider, instances: store, registryRetentionMs: 1000 });
  const [, shortSince] = calls.find((call) => call.method === 'registeredSandboxes').args;
  assert.ok(shortSince >= start - 1000 && shortSince <= Date.now() - 1000, `since ${shortSince}`);
});

test('a synchronous registeredSandboxes works; a failing one leaves that sweep unavailable and destroys nothing', async () => {
  const native = new InMemorySandboxInstanceStore({ ledger: true });
  const sync = userStore(native, []);
  sync.store.registeredSandboxes = () => ['u1'];
  const ok = listing('js', world());
  await reconcile({ provider: ok.provider, instances: sync.store });
  assert.deepStrictEqual(ok.destroyed, ['u1']);

  for (const registeredSandboxes of [() => Promise.reject(new Error('registry down')), () => 'not an array', () => [5]]) {
    const broken = userStore(native, []);
    broken.store.registeredSandboxes = registeredSandboxes;
    const labelled = [...world(), { id: 'o1', createdAt: old(), owner: 'sandbox-reclaim' }];
    const failing = listing('js', labelled);
    const report = await reconcile({ provider: failing.provider, instances: broken.store });
    assert.equal(report.providers[0].orphans.status, 'unavailable', String(registeredSandboxes));
    assert.deepStrictEqual(failing.destroyed, [], 'fails closed: not even the labelled orphan');
    assert.deepStrictEqual(failing.listed, [], 'the listing is never read');
  }
  const report = await reconcile({ provider: listing('js', []).provider, instances: Object.assign(userStore(native, []).store, { registeredSandboxes: () => Promise.reject(new Error('registry down')) }) });
  assert.equal(report.providers[0].orphans.error, 'registry down', 'the store\'s own message');
});

test('registeredSandboxes that is not a function, and a bad registryRetentionMs, are TypeErrors naming them, before any call', async () => {
  const native = new InMemorySandboxInstanceStore({ ledger: true });
  const cases = [
    [{ registeredSandboxes: 5 }, {}, /options\.instances\.registeredSandboxes/],
    [{ registeredSandboxes: 'yes' }, {}, /options\.instances\.registeredSandboxes/],
  ];
  for (const value of [-1, 'x', 1.5, Number.NaN, 2 ** 53, null]) cases.push([{}, { registryRetentionMs: value }, /options\.registryRetentionMs/]);
  for (const [extra, options, message] of cases) {
    const { store, calls } = userStore(native, []);
    Object.assign(store, extra);
    const { provider, listed, destroyed } = listing('js', world());
    await assert.rejects(reconcile({ provider, instances: store, ...options }), (error) => {
      assert.ok(error instanceof TypeError, `${message}: got ${error}`);
      assert.match(error.message, message);
      return true;
    });
    assert.deepStrictEqual([calls, listed, destroyed], [[], [], []], `${message}: nothing was called`);
  }
  // null and undefined are "no registry", like a missing method.
  for (const registeredSandboxes of [null, undefined]) {
    const { store } = userStore(native, []);
    store.registeredSandboxes = registeredSandboxes;
    assert.equal((await reconcile({ provider: listing('js', []).provider, instances: store })).providers[0].orphans.status, 'swept');
  }
});

// ------------------------------------------------------------ hosted providers

const CREATED = Date.UTC(2026, 0, 1);
const VENDORS = [
  {
    name: 'e2b',
    start: () => startFakeE2b(),
    make: (fake, options) => new E2bProvider({ apiKey: fake.key, apiUrl: fake.url, ...options }),
    sandbox: (id, labels) => ({ sandboxID: id, metadata: labels, startedAt: new Date(CREATED).toISOString() }),
    filter: 'metadata=',
  },
  {
    name: 'daytona',
    start: () => startFakeDaytona(),
    make: (fake, options) => new DaytonaProvider({ apiKey: fake.key, apiUrl: fake.url, ...options }),
    sandbox: (id, labels) => ({ id, labels, state: 'stopped', createdAt: new Date(CREATED).toISOString() }),
    filter: 'labels=',
  },
  {
    name: 'vercel',
    start: () => startFakeVercel(),
    make: (fake, options) => new VercelProvider({ apiKey: fake.token, teamId: fake.teamId, projectId: fake.projectId, apiUrl: fake.url, ...options }),
    sandbox: (name, tags) => ({ name, tags, status: 'stopped', createdAt: CREATED }),
    filter: 'tags=',
  },
];
const PROVIDER_CLASSES = { e2b: E2bProvider, daytona: DaytonaProvider, vercel: VercelProvider };

for (const vendor of VENDORS) {
  const withFake = async (body) => {
    const fake = await vendor.start();
    try {
      await body(fake, (options = {}) => vendor.make(fake, options));
    } finally {
      await fake.close();
    }
  };
  const listings = (fake) => fake.state().requests.filter((request) => request.method === 'GET' && /\/(v2\/sandboxes|sandbox)$/.test(request.path));

  test(`${vendor.name}: sweepUnlabelled must be a boolean (TypeError naming options.sweepUnlabelled)`, () => {
    const Provider = PROVIDER_CLASSES[vendor.name];
    for (const sweepUnlabelled of ['yes', 1, null, {}]) {
      assert.throws(() => new Provider({ apiKey: 'k', projectId: 'p', apiUrl: 'http://127.0.0.1:9', sweepUnlabelled }), {
        name: 'TypeError',
        message: /^options\.sweepUnlabelled must be a boolean$/,
      });
    }
    for (const sweepUnlabelled of [true, false, undefined]) {
      assert.equal(new Provider({ apiKey: 'k', projectId: 'p', apiUrl: 'http://127.0.0.1:9', sweepUnlabelled }).name, vendor.name);
    }
  });

  test(`${vendor.name}: with sweepUnlabelled, reconcile destroys the unlabelled sandbox the registry names and spares the rest`, async () => {
    await withFake(async (fake, make) => {
      fake.seed([
        vendor.sandbox('ours', { [OWNER_LABEL]: 'sandbox-reclaim' }),
        vendor.sandbox('reg', {}),
        vendor.sandbox('bare', {}),
        vendor.sandbox('theirs', { [OWNER_LABEL]: 'other' }),
      ]);
      const store = new InMemorySandboxInstanceStore({ ledger: true });
      await registerGone(store, vendor.name, ['reg', 'theirs']);
      const provider = make({ sweepUnlabelled: true });

      // The listing is unfiltered: an unlabelled sandbox reads owner '', another owner's keeps its label.
      const owners = Object.fromEntries((await provider.list()).map((sandbox) => [sandbox.id, sandbox.owner]));
      assert.deepStrictEqual(owners, { ours: 'sandbox-reclaim', reg: '', bare: '', theirs: 'other' });
      assert.ok(listings(fake).length > 0 && listings(fake).every((request) => !request.query.includes(vendor.filter)), `no owner filter sent: ${JSON.stringify(listings(fake))}`);

      const report = await reconcile({ providers: [provider], instances: store, orphanGraceMs: 60_000 });
      const orphans = report.providers[0].orphans;
      assert.equal(orphans.status, 'swept', orphans.error);
      assert.deepStrictEqual([orphans.listed, orphans.foreign, orphans.found, orphans.destroyed], [4, 2, 2, 2]);
      assert.deepStrictEqual(fake.state().alive, ['bare', 'theirs'], 'the unregistered and the foreign-labelled survive');
      assert.deepStrictEqual(report.actions.map((action) => action.providerSandboxId).sort(), ['ours', 'reg']);
    });
  });

  test(`${vendor.name}: without sweepUnlabelled the listing is still filtered by owner; the registered unlabelled sandbox is looked up by id, a stranger never touched`, async () => {
    await withFake(async (fake, make) => {
      fake.seed([
        vendor.sandbox('ours', { [OWNER_LABEL]: 'sandbox-reclaim' }),
        vendor.sandbox('reg', {}),
        vendor.sandbox('bare', {}),
        vendor.sandbox('theirs', { [OWNER_LABEL]: 'other' }),
      ]);
      const store = new InMemorySandboxInstanceStore({ ledger: true });
      await registerGone(store, vendor.name, ['reg', 'theirs']);
      const provider = make();
      assert.deepStrictEqual((await provider.list()).map((sandbox) => sandbox.id), ['ours']);
      assert.ok(listings(fake).length > 0 && listings(fake).every((request) => request.query.includes(vendor.filter)), `the owner filter is sent: ${JSON.stringify(listings(fake))}`);

      // What the registry names and the listing did not show is read by id:
      // `reg` (unlabelled, so the registry's) is destroyed, `theirs` stays
      // another owner's; `bare`, which no record named, is never looked at.
      const report = await reconcile({ providers: [provider], instances: store, orphanGraceMs: 60_000 });
      const orphans = report.providers[0].orphans;
      assert.deepStrictEqual([orphans.status, orphans.listed, orphans.foreign, orphans.destroyed], ['swept', 3, 1, 2]);
      assert.deepStrictEqual(fake.state().alive, ['bare', 'theirs']);
      assert.ok(!fake.state().requests.some((request) => request.path.endsWith('/bare')), 'a stranger is never looked up');
    });
  });
}
