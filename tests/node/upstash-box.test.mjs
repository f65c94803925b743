// UpstashBoxProvider through the Node binding, against the Upstash Box fake
// (tests/fakes/upstash-box.mjs, proven by both official SDKs in
// tests/node/upstash-box-fake.test.mjs and tests/python/test_upstash_box_fake.py),
// started in-process: the options checked before any request (an owner that
// cannot be part of the `sr:<owner>` label included), and the fault set every
// hosted vendor meets: a failed delete reaches the ledger without the key,
// throttling waits, a hanging call is cut by its deadline, repeated items and
// a lagging listing are harmless, a malformed listing makes the sweep
// unavailable, unlabelled strangers are never touched and registered ones
// are found by id.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import * as binding from '../../bindings-node/index.mjs';
import { startFakeUpstashBox } from '../fakes/upstash-box.mjs';

const { UpstashBoxProvider, InMemorySandboxInstanceStore, reclaimSandbox, reconcile, listLeaks, ownerLabels } = binding;

const KEY = 'box_node_secret_key';
const OWNER = 'sandbox-reclaim';
const OLD = 1_767_225_600; // 2026-01-01, epoch seconds (the unit the SDKs' tests use)

/** A seed box: labelled `sr:<owner>` (or unlabelled), created long ago. */
const box = (id, owner, more = {}) => ({ id, labels: owner ? [`sr:${owner}`] : [], status: 'idle', created_at: OLD, ...more });
const make = (fake, options = {}) => new UpstashBoxProvider({ apiKey: KEY, apiUrl: fake.url, requestTimeoutMs: 10_000, ...options });
const run = (key) => ({ runId: `run-${key}`, threadId: 'thread-1', status: 'completed', startedAt: 1, sandboxKey: key });
/** The API calls the fake saw with `method` on `path`. */
const calls = (fake, method, path) => fake.state().requests.filter((request) => request.method === method && request.path === path);

async function storeWith(records) {
  const store = new InMemorySandboxInstanceStore({ ledger: true });
  for (const [key, id] of records) {
    await store.upsert({ key, provider: 'upstash-box', providerSandboxId: id, threadId: 'thread-1', updatedAt: 1 });
  }
  return store;
}

async function withFake(body) {
  const fake = await startFakeUpstashBox({ key: KEY });
  try {
    await body(fake);
  } finally {
    await fake.close();
  }
}

test('upstash-box: a box created with ownerLabels(owner, key, \'upstash-box\') is listed as the owner\'s, another owner\'s is not', async () => {
  await withFake(async (fake) => {
    const labels = ownerLabels('team-a', 'thread-1:sandbox', 'upstash-box');
    assert.deepStrictEqual(labels, ['sr:team-a']);
    fake.seed([{ ...box('box_made'), labels }, box('box_theirs', 'team-b')]);
    const listed = await make(fake, { owner: 'team-a' }).list();
    assert.deepStrictEqual(listed.map((sandbox) => [sandbox.id, sandbox.owner]), [['box_made', 'team-a']]);
    assert.throws(() => ownerLabels('a-team-name-too-long', 'k', 'upstash-box'), { name: 'TypeError', message: /`owner`.*at most 20/ });
  });
});

test('upstash-box: bad options are TypeErrors naming the field, before any request', async () => {
  await withFake(async (fake) => {
    const saved = process.env.UPSTASH_BOX_API_KEY;
    delete process.env.UPSTASH_BOX_API_KEY;
    try {
      assert.throws(() => make(fake, { apiKey: 5 }), { name: 'TypeError', message: /options\.apiKey/ });
      assert.throws(() => make(fake, { apiKey: '' }), { name: 'TypeError', message: /apiKey.*UPSTASH_BOX_API_KEY/ });
      assert.throws(() => new UpstashBoxProvider({ apiUrl: fake.url }), { name: 'TypeError', message: /UPSTASH_BOX_API_KEY/ });
    } finally {
      if (saved !== undefined) process.env.UPSTASH_BOX_API_KEY = saved;
    }
    assert.throws(() => make(fake, { apiUrl: 'ftp://box.example' }), { name: 'TypeError', message: /apiUrl/ });
    assert.throws(() => make(fake, { requestTimeoutMs: 0 }), { name: 'TypeError', message: /requestTimeoutMs/ });
    // `sr:<owner>` must be a Box label: at most 20 of letters, digits, `.`, `_`, `-`, `:`.
    for (const owner of ['an-owner-of-18-chr', 'team a', 'team/a']) {
      assert.throws(() => make(fake, { owner }), { name: 'TypeError', message: /owner/ }, owner);
    }
    assert.deepEqual(fake.state().requests, [], 'nothing was sent');
    const provider = make(fake, { owner: 'an-owner-of-17chr' });
    assert.equal(provider.name, 'upstash-box');
    assert.equal(provider.apiUrl, fake.url);
    assert.ok(!JSON.stringify(provider).includes(KEY));
  });
});

test('upstash-box: a reclaim deletes the box for good; a failed delete is destroy-failed and reaches the ledger without the key', async () => {
  await withFake(async (fake) => {
    fake.seed([box('box_0', OWNER), box('box_1', OWNER)]);
    const provider = make(fake);
    const store = await storeWith([['k0', 'box_0'], ['k1', 'box_1']]);
    assert.equal(await reclaimSandbox(run('k0'), { provider, instances: store }), 'destroyed');
    assert.deepEqual(fake.state().deletes, ['box_0']);
    const deletes = calls(fake, 'DELETE', '/v2/box/box_0');
    assert.equal(deletes.length, 1);
    assert.ok(deletes[0].authorized && deletes[0].headers.authorization === undefined, 'the key rides in X-Box-Api-Key');
    assert.deepEqual(calls(fake, 'DELETE', '/v2/box'), [], 'never the bulk delete');
    fake.setFaults({ failDeleteEvery: 1 });
    assert.equal(await reclaimSandbox(run('k1'), { provider, instances: store }), 'destroy-failed');
    assert.deepEqual(fake.state().alive, ['box_1']);
    const leaks = await listLeaks(store);
    assert.deepEqual(leaks.map((leak) => leak.providerSandboxId), ['box_1']);
    assert.match(leaks[0].lastError, /500/);
    assert.ok(!JSON.stringify(leaks).includes(KEY));
  });
});

test('upstash-box: a throttled delete waits its Retry-After', async () => {
  await withFake(async (fake) => {
    fake.seed([box('box_0', OWNER)]);
    fake.setFaults({ rateLimitDeletes: 1, retryAfterSeconds: 0.3 });
    const started = Date.now();
    await make(fake).destroy({ id: 'box_0' });
    assert.ok(Date.now() - started >= 300, `${Date.now() - started} ms`);
    assert.deepEqual(fake.state().alive, []);
    assert.equal(calls(fake, 'DELETE', '/v2/box/box_0').length, 2, 'the throttled one, then the one that went');
  });
});

test('upstash-box: the destroy deadline cuts the call itself, and the box reaches the ledger', async () => {
  await withFake(async (fake) => {
    fake.seed([box('box_0', OWNER)]);
    fake.setFaults({ hangDeletes: true });
    const store = await storeWith([['k0', 'box_0']]);
    const started = Date.now();
    assert.equal(await reclaimSandbox(run('k0'), { provider: make(fake), instances: store, destroyTimeoutMs: 200 }), 'destroy-failed');
    assert.ok(Date.now() - started < 5_000);
    for (let tries = 0; fake.state().abandoned === 0 && tries < 100; tries += 1) await new Promise((r) => setTimeout(r, 10));
    assert.equal(fake.state().abandoned, 1);
    assert.deepEqual((await listLeaks(store)).map((leak) => leak.providerSandboxId), ['box_0']);
    assert.deepEqual(fake.state().alive, ['box_0']);
  });
});

test('upstash-box: a wrong key rejects naming UPSTASH_BOX_API_KEY, never the key', async () => {
  await withFake(async (fake) => {
    fake.seed([box('box_0', OWNER)]);
    const provider = make(fake, { apiKey: 'box_wrong_secret_value' });
    for (const call of [() => provider.checkAccess(), () => provider.list(), () => provider.destroy({ id: 'box_0' })]) {
      await assert.rejects(call(), (error) =>
        error.message.includes('UPSTASH_BOX_API_KEY') && !error.message.includes('box_wrong_secret_value') && !error.message.includes(KEY));
    }
    assert.deepEqual(fake.state().alive, ['box_0']);
    assert.ok(fake.state().requests.every((request) => !request.authorized));
  });
});

test('upstash-box: reconcile sweeps our labelled boxes once, repeated or lagging, and spares the rest', async () => {
  await withFake(async (fake) => {
    const ours = Array.from({ length: 6 }, (_, i) => `ours_${i}`);
    fake.seed([...ours.map((id) => box(id, OWNER)), box('theirs_0', 'another-team'), box('bare_0')]);
    fake.setFaults({ repeatItems: true, deletedStayListedMs: 60_000 });
    const provider = make(fake);
    const store = await storeWith([]);
    const report = await reconcile({ providers: [provider], instances: store, orphanGraceMs: 60_000 });
    const orphans = report.providers[0].orphans;
    assert.equal(orphans.status, 'swept');
    assert.equal(orphans.destroyed, 6);
    assert.deepEqual(fake.state().alive, ['theirs_0', 'bare_0']);
    for (const id of ours) assert.equal(calls(fake, 'DELETE', `/v2/box/${id}`).length, 1, `${id}: the repeated one too, once`);
    assert.ok(calls(fake, 'GET', '/v2/box').every((list) => list.query === '?label=sr%3Asandbox-reclaim'), 'filtered by our label');
    // Deleted, still listed with their old status a minute: a second pass fails nothing and deletes nothing twice.
    const again = await reconcile({ providers: [provider], instances: store, orphanGraceMs: 60_000 });
    assert.equal(again.providers[0].orphans.failed, 0);
    assert.equal(again.providers[0].orphans.listed, 6, 'the lagging listing still shows them');
    assert.deepEqual([...fake.state().deletes].sort(), ours, 'each box deleted once');
    assert.deepEqual(fake.state().alive, ['theirs_0', 'bare_0']);
  });
});

test('upstash-box: a malformed listing makes the sweep unavailable and destroys nothing', async () => {
  await withFake(async (fake) => {
    fake.seed(Array.from({ length: 3 }, (_, i) => box(`box_${i}`, OWNER)));
    fake.setFaults({ malformedPage: true });
    const report = await reconcile({ providers: [make(fake)], instances: await storeWith([]), orphanGraceMs: 60_000 });
    const orphans = report.providers[0].orphans;
    assert.equal(orphans.status, 'unavailable');
    assert.equal(orphans.destroyed, 0);
    assert.match(orphans.error, /GET \/v2\/box/);
    assert.equal(fake.state().alive.length, 3);
    assert.deepEqual(fake.state().deletes, []);
  });
});

test('upstash-box: a registered unlabelled box whose record is gone is found by id; an unregistered one is never touched', async () => {
  await withFake(async (fake) => {
    fake.seed([box('box_reg'), box('box_stranger')]);
    const store = await storeWith([['k-reg', 'box_reg']]);
    await store.delete('k-reg');
    const report = await reconcile({ providers: [make(fake)], instances: store, orphanGraceMs: 60_000 });
    const orphans = report.providers[0].orphans;
    assert.equal(orphans.status, 'swept');
    assert.equal(orphans.destroyed, 1);
    assert.deepEqual(fake.state().alive, ['box_stranger']);
    assert.equal(calls(fake, 'GET', '/v2/box/box_reg').length, 1, 'looked up by id');
    assert.deepEqual(calls(fake, 'GET', '/v2/box/box_stranger'), []);
    assert.deepEqual(calls(fake, 'DELETE', '/v2/box/box_stranger'), []);
  });
});
