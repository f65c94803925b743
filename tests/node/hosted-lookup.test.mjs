// Registered sandboxes found by id through the Node binding (the fakes are
// proven by the vendors' SDKs in vendor-sdks.test.mjs and *-fake.test.mjs):
// with the default options, reconcile looks up what the store's registry
// names and the listing did not show, and destroys the unlabelled one a
// deleted record named; a stranger, another owner's and a gone one are never
// touched. `lookup` is absent when the listing takes every sandbox.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { SpritesProvider, DaytonaProvider, InMemorySandboxInstanceStore, reconcile } from '../../bindings-node/index.mjs';
import { startFakeSprites } from '../fakes/sprites.mjs';
import { startFakeDaytona } from '../fakes/daytona.mjs';

const OWNER = 'io.sandbox-reclaim.owner';
const CREATED = Date.UTC(2026, 0, 1);

const VENDORS = [
  {
    name: 'sprites',
    start: () => startFakeSprites(),
    make: (fake, options = {}) => new SpritesProvider({ apiKey: fake.key, apiUrl: fake.url, ...options }),
    sandbox: (id, owner) => ({ name: id, labels: owner ? [`${OWNER}=${owner}`] : [], status: 'warm', createdAt: CREATED }),
  },
  {
    name: 'daytona',
    start: () => startFakeDaytona(),
    make: (fake, options = {}) => new DaytonaProvider({ apiKey: fake.key, apiUrl: fake.url, ...options }),
    sandbox: (id, owner) => ({ id, labels: owner ? { [OWNER]: owner } : {}, state: 'started', createdAt: new Date(CREATED).toISOString() }),
  },
];

async function registered(store, provider, key, id) {
  await store.upsert({ key, provider, providerSandboxId: id, threadId: 't', updatedAt: 1 });
  await store.delete(key);
}

for (const vendor of VENDORS) {
  test(`${vendor.name}: a registered unlabelled sandbox whose record is gone is looked up by id and destroyed`, async () => {
    const fake = await vendor.start();
    try {
      fake.seed([vendor.sandbox('reg-1'), vendor.sandbox('stranger-1'), vendor.sandbox('theirs-1', 'another-team')]);
      const provider = vendor.make(fake);
      assert.equal(typeof provider.lookup, 'function');
      assert.equal(vendor.make(fake, { sweepUnlabelled: true }).lookup, undefined, 'the listing takes every sandbox');
      const store = new InMemorySandboxInstanceStore({ ledger: true });
      await registered(store, vendor.name, 'k-reg', 'reg-1');
      await registered(store, vendor.name, 'k-theirs', 'theirs-1');
      await registered(store, vendor.name, 'k-gone', 'gone-1');
      const report = await reconcile({ providers: [provider], instances: store });
      const { orphans } = report.providers[0];
      assert.equal(orphans.status, 'swept', JSON.stringify(orphans));
      assert.deepEqual([orphans.found, orphans.destroyed, orphans.foreign], [1, 1, 1]);
      assert.deepEqual(fake.state().alive.sort(), ['stranger-1', 'theirs-1']);
      const found = await provider.lookup({ ids: ['stranger-1', 'gone-1'] });
      assert.deepEqual(found.map((sandbox) => sandbox.id), ['stranger-1'], 'what exists, as listed');
      await assert.rejects(provider.lookup({ ids: 'reg-1' }), { name: 'TypeError', message: /input\.ids/ });
    } finally {
      await fake.close();
    }
  });
}
