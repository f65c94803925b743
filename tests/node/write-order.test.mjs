// Native stores keep the order of writes as JS made the calls: a delete
// called before an upsert of the same key commits first, even when neither
// is awaited before the other is made (tokio may run their tasks in any
// order; the binding polls each call once as it is made).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { rmSync } from 'node:fs';
import { SqliteSandboxInstanceStore, PostgresSandboxInstanceStore } from '../../bindings-node/index.mjs';
import { service, tempDir, uniqueSchema } from './services.mjs';

const pg = service('SANDBOX_RECLAIM_PG_URL', 'the PostgreSQL write-order test');

const record = (key, updatedAt) => ({
  key,
  provider: 'docker',
  providerSandboxId: `c-${key}-${updatedAt}`,
  threadId: `thread-${key}`,
  updatedAt,
});

async function deleteThenUpsertKeepsTheUpsert(store) {
  for (let trial = 0; trial < 30; trial += 1) {
    const live = `live-${trial}`;
    await store.upsert(record(live, 1));
    const others = Array.from({ length: 15 }, (_, n) => `o-${trial}-${n}`);
    for (const key of others) await store.upsert(record(key, 1));
    const busy = others.map((key) => store.delete(key));
    const deleted = store.delete(live);
    const upserted = store.upsert(record(live, 2));
    await Promise.all([...busy, deleted, upserted]);
    assert.deepStrictEqual(await store.get(live), record(live, 2), `trial ${trial}: the delete landed after the upsert`);
  }
}

test('SQLite: writes to one key commit in the order JS called them', async () => {
  const dir = tempDir('order');
  const store = await SqliteSandboxInstanceStore.open(join(dir, 'order.db'));
  try {
    await deleteThenUpsertKeepsTheUpsert(store);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('PostgreSQL: writes to one key commit in the order JS called them', { skip: pg.skip }, async () => {
  const store = await PostgresSandboxInstanceStore.connect(pg.value, { schema: uniqueSchema('node_order'), maxConnections: 4 });
  try {
    await deleteThenUpsertKeepsTheUpsert(store);
  } finally {
    await store.close();
  }
});
