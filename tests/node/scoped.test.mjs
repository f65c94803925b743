// A sweep's scoped reads through the Node binding (issue #38): a store with
// all five of `sweepMark`, `referencedAmong`, `registeredAmong`,
// `lookupCandidates` and `lookupChecked` is swept by asking about what it
// listed (mark, list, then the listed ids), so a pass's store work follows
// what it lists; a store with none keeps the older calls (the registry and
// prune suites); one with only some is refused before anything is called.
// The native stores (in memory, SQLite, PostgreSQL) answer all five, their
// arguments checked like their siblings'.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';

import * as binding from '../../bindings-node/index.mjs';
import { service, tempDir, uniqueSchema } from './services.mjs';
import { userStore, SCOPED } from './user-store.mjs';

const { reconcile, InMemorySandboxInstanceStore, SqliteSandboxInstanceStore, PostgresSandboxInstanceStore } = binding;

const scratch = tempDir('scoped');
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));
const pg = service('SANDBOX_RECLAIM_PG_URL', 'the scoped reads in PostgreSQL');

const DAY_MS = 86_400_000;
const GRACE_MS = 600_000; // orphanGraceMs' default
const record = (key, provider, providerSandboxId, updatedAt) => ({ key, provider, providerSandboxId, threadId: 'thread-1', updatedAt });
const old = () => Date.now() - 3_600_000;

let files = 0;
const STORES = [
  ['in-memory', false, async () => new InMemorySandboxInstanceStore({ ledger: true })],
  ['SQLite', false, () => SqliteSandboxInstanceStore.open(join(scratch, `scoped-${(files += 1)}.db`))],
  ['PostgreSQL', pg.skip, () => PostgresSandboxInstanceStore.connect(pg.value, { schema: uniqueSchema('node_scoped'), maxConnections: 2 })],
];

// ------------------------------------------------------------ native stores

for (const [kind, skip, open] of STORES) {
  test(`the scoped reads on the native ${kind} store: what references and registers listed ids, the mark, the lookup queue`, { skip }, async () => {
    const store = await open();
    try {
      const t0 = old();
      await store.upsert(record('k1', 'docker', 'live', t0));
      await store.upsert(record('k2', 'docker', 'gone', t0));
      await store.upsert(record('k3', 'local', 'theirs', t0));
      const before = await store.sweepMark('docker');
      assert.ok(Number.isInteger(before) && before >= 0, `a mark is a whole number: ${before}`);
      await store.delete('k2');
      const mark = await store.sweepMark('docker');
      assert.ok(mark > before, `a deletion moves the mark (${before} → ${mark})`);

      const now = Date.now();
      const ids = ['gone', 'live', 'never', 'theirs'];
      assert.deepStrictEqual(await store.referencedAmong('docker', ids, now, before), ['gone', 'live'], 'deleted after the mark counts');
      assert.deepStrictEqual(await store.referencedAmong('docker', ids, now, mark), ['live'], 'a live record, by provider');
      assert.deepStrictEqual(await store.referencedAmong('docker', [], now, mark), []);
      await store.appendAudit([{ at: now - 1000, host: 'host-b', provider: 'docker', providerSandboxId: 'audited', reason: 'orphan', result: 'destroyed' }]);
      assert.deepStrictEqual(await store.referencedAmong('docker', ['audited'], now - GRACE_MS, mark), ['audited'], 'destroyed within the grace');
      assert.deepStrictEqual(await store.referencedAmong('docker', ['audited'], now, mark), [], 'destroyed before destroyedSince');

      assert.deepStrictEqual(await store.registeredAmong('docker', ids, 0), ['gone', 'live'], 'the registry names the deleted record\'s sandbox');
      assert.deepStrictEqual(await store.registeredAmong('local', ids, 0), ['theirs']);
      assert.deepStrictEqual(await store.registeredAmong('docker', ids, now + 60_000), ['live'], 'a live record always counts');

      assert.deepStrictEqual(await store.lookupCandidates('docker', 0, 10), ['gone'], 'the deleted record\'s sandbox waits for a lookup');
      assert.deepStrictEqual(await store.lookupCandidates('docker', 0, 0), [], 'at most limit');
      assert.deepStrictEqual(await store.lookupCandidates('local', 0, 10), []);
      assert.equal(await store.lookupChecked('docker', [], ['gone'], now), undefined);
      assert.deepStrictEqual(await store.lookupCandidates('docker', 0, 10), ['gone'], 'checked: still a candidate, at the back');
      await store.lookupChecked('docker', ['gone'], [], now);
      assert.deepStrictEqual(await store.lookupCandidates('docker', 0, 10), [], 'gone: no candidate again');
    } finally {
      await store.close?.();
    }
  });

  test(`the native ${kind} store's scoped reads refuse bad arguments with a TypeError naming the field, before anything runs`, { skip }, async () => {
    const store = await open();
    try {
      const refusals = [
        [() => store.sweepMark(5), /^provider must be a string/],
        [() => store.sweepMark('p\uD800'), /^provider must not contain a lone UTF-16 surrogate/],
        [() => store.referencedAmong(5, [], 0, 0), /^provider must be a string/],
        [() => store.referencedAmong('docker', 'a', 0, 0), /^ids must be an array of strings/],
        [() => store.referencedAmong('docker', ['a', 5], 0, 0), /^ids\[1\] must be a string/],
        [() => store.referencedAmong('docker', ['a\uDC00'], 0, 0), /^ids\[0\] must not contain a lone UTF-16 surrogate/],
        [() => store.registeredAmong('docker', null, 0), /^ids must be an array of strings/],
        [() => store.registeredAmong('docker', ['\uD800'], 0), /^ids\[0\] must not contain a lone UTF-16 surrogate/],
        [() => store.registeredAmong('p\uD800', [], 0), /^provider must not contain a lone UTF-16 surrogate/],
        [() => store.lookupCandidates(null, 0, 1), /^provider must be a string/],
        [() => store.lookupChecked('docker', 'gone', [], 0), /^gone must be an array of strings/],
        [() => store.lookupChecked('docker', [], [7], 0), /^checked\[0\] must be a string/],
        [() => store.lookupChecked('docker', [], ['\uD800x'], 0), /^checked\[0\] must not contain a lone UTF-16 surrogate/],
      ];
      for (const bad of [-1, 1.5, 2 ** 53, 'x', null]) {
        refusals.push(
          [() => store.referencedAmong('docker', [], bad, 0), /^destroyedSince must be a whole number between 0 and/],
          [() => store.referencedAmong('docker', [], 0, bad), /^mark must be a whole number between 0 and/],
          [() => store.registeredAmong('docker', [], bad), /^since must be a whole number between 0 and/],
          [() => store.lookupCandidates('docker', bad, 1), /^since must be a whole number between 0 and/],
          [() => store.lookupChecked('docker', [], [], bad), /^now must be a whole number between 0 and/],
        );
      }
      for (const bad of [-1, 1.5, 2 ** 32, 'x']) refusals.push([() => store.lookupCandidates('docker', 0, bad), /^limit must be a whole number between 0 and/]);
      for (const [call, message] of refusals) {
        await assert.rejects(call(), (error) => {
          assert.ok(error instanceof TypeError, `${message}: got ${error}`);
          assert.match(error.message, message);
          return true;
        });
      }
      // Nothing was written: no record, no queue.
      assert.deepStrictEqual(await store.lookupCandidates('docker', 0, 10), []);
    } finally {
      await store.close?.();
    }
  });
}

test('the in-memory store has the scoped reads only with a ledger, like its other fleet methods', () => {
  const plain = new InMemorySandboxInstanceStore();
  const ledger = new InMemorySandboxInstanceStore({ ledger: true });
  for (const method of SCOPED) {
    assert.equal(typeof plain[method], 'undefined', `${method} without a ledger`);
    assert.equal(typeof ledger[method], 'function', `${method} with a ledger`);
  }
});

// ------------------------------------------------------------ a pass

/**
 * A world for one provider `js` over a native in-memory store: `live` has a
 * record, `found-reg` and `gone-reg` had one (deleted: registered and queued
 * for a lookup), `orphan1` is a labelled orphan, `unl` an unlabelled sandbox
 * nobody registered. The lookup finds `found-reg` (unlabelled) and not
 * `gone-reg`. Store and provider calls go to one `order`.
 */
async function scopedWorld(optional) {
  const native = new InMemorySandboxInstanceStore({ ledger: true });
  await native.upsert(record('k-live', 'js', 'live', Date.now()));
  for (const id of ['found-reg', 'gone-reg']) {
    await native.upsert(record(`k-${id}`, 'js', id, old()));
    await native.delete(`k-${id}`);
  }
  const { store, calls } = userStore(native, optional);
  const marks = [];
  if (typeof store.sweepMark === 'function') {
    const sweepMark = store.sweepMark;
    store.sweepMark = async (...args) => {
      const mark = await sweepMark(...args);
      marks.push(mark);
      return mark;
    };
  }
  const destroyed = [];
  const provider = {
    name: 'js',
    async list() {
      calls.push({ method: 'provider.list', args: [] });
      return [
        { id: 'live', createdAt: old(), owner: 'sandbox-reclaim' },
        { id: 'orphan1', createdAt: old(), owner: 'sandbox-reclaim' },
        { id: 'unl', createdAt: old(), owner: '' },
      ];
    },
    async lookup({ ids }) {
      calls.push({ method: 'provider.lookup', args: [[...ids]] });
      return ids.includes('found-reg') ? [{ id: 'found-reg', createdAt: old(), owner: '' }] : [];
    },
    async destroy({ id }) {
      destroyed.push(id);
    },
  };
  return { native, store, calls, marks, destroyed, provider };
}

const SWEEP_CALLS = new Set([
  'sandboxReferences',
  'registeredSandboxes',
  'sweepMark',
  'provider.list',
  'prune',
  'lookupCandidates',
  'provider.lookup',
  'lookupChecked',
  'referencedAmong',
  'registeredAmong',
]);

test('a user store with all five scoped reads is swept the new way: mark, list, lookup candidates, then what it listed', async () => {
  const world = await scopedWorld([...SCOPED, 'registeredSandboxes', 'prune']);
  const before = Date.now();
  const report = await reconcile({ provider: world.provider, instances: world.store });
  const after = Date.now();
  const within = (value, offset, what) => assert.ok(value >= before - offset && value <= after - offset, `${what}: ${value}`);

  assert.deepStrictEqual(world.destroyed.sort(), ['found-reg', 'orphan1'], 'the labelled orphan and the registered leftover the lookup found');
  const orphans = report.providers[0].orphans;
  assert.deepStrictEqual([orphans.status, orphans.found, orphans.destroyed, orphans.referenced, orphans.foreign], ['swept', 2, 2, 1, 1]);

  const sweep = world.calls.filter((call) => SWEEP_CALLS.has(call.method));
  assert.deepStrictEqual(
    sweep.map((call) => call.method),
    ['sweepMark', 'provider.list', 'prune', 'lookupCandidates', 'provider.lookup', 'lookupChecked', 'referencedAmong', 'registeredAmong'],
    'never sandboxReferences or registeredSandboxes: the store is asked about what was listed',
  );
  const args = Object.fromEntries(sweep.map((call) => [call.method, call.args]));
  assert.deepStrictEqual(args.sweepMark, ['js']);
  const [candidatesOf, candidatesSince, limit] = args.lookupCandidates;
  assert.deepStrictEqual([candidatesOf, limit], ['js', 1000]);
  within(candidatesSince, 30 * DAY_MS, 'lookupCandidates since = the sweep\'s start − registryRetentionMs');
  assert.deepStrictEqual(args['provider.lookup'], [['found-reg', 'gone-reg']], 'the candidates the listing did not show, sorted');
  const [checkedOf, gone, checked, checkedAt] = args.lookupChecked;
  assert.deepStrictEqual([checkedOf, gone, checked], ['js', ['gone-reg'], ['found-reg']], 'what the lookup left out is gone');
  within(checkedAt, 0, 'lookupChecked now');
  const listed = ['found-reg', 'live', 'orphan1', 'unl'];
  const [referencedOf, referencedIds, destroyedSince, mark] = args.referencedAmong;
  assert.deepStrictEqual([referencedOf, referencedIds], ['js', listed], 'every listed or found id, sorted');
  within(destroyedSince, GRACE_MS, 'destroyedSince = the sweep\'s start − orphanGraceMs');
  assert.deepStrictEqual(world.marks, [mark], 'referencedAmong gets the mark sweepMark answered');
  const [registeredOf, registeredIds, since] = args.registeredAmong;
  assert.deepStrictEqual([registeredOf, registeredIds], ['js', listed]);
  within(since, 30 * DAY_MS, 'registeredAmong since');
  assert.equal(candidatesSince, since, 'one retention for both');

  // No candidate is left: `gone-reg` by the write-back, `found-reg` by its audited destroy.
  assert.deepStrictEqual(await world.native.lookupCandidates('js', 0, 10), []);
});

test('a scoped dry run never prunes nor writes back what its lookup learned', async () => {
  const world = await scopedWorld([...SCOPED, 'prune']);
  const report = await reconcile({ provider: world.provider, instances: world.store, dryRun: true });
  assert.deepStrictEqual(world.destroyed, []);
  assert.deepStrictEqual([report.dryRun, report.providers[0].orphans.found], [true, 2], 'the same two planned');
  const methods = world.calls.map((call) => call.method).filter((method) => SWEEP_CALLS.has(method));
  assert.deepStrictEqual(methods, ['sweepMark', 'provider.list', 'lookupCandidates', 'provider.lookup', 'referencedAmong', 'registeredAmong']);
});

test('a synchronous scoped store works; a broken mark or a failing read leaves that sweep unavailable and destroys nothing', async () => {
  const sync = await scopedWorld(SCOPED);
  sync.store.sweepMark = () => 7;
  sync.store.referencedAmong = (provider, ids) => ids.filter((id) => id === 'live');
  sync.store.registeredAmong = (provider, ids) => ids.filter((id) => id === 'live' || id === 'found-reg');
  sync.store.lookupCandidates = () => ['found-reg', 'gone-reg'];
  sync.store.lookupChecked = () => undefined;
  await reconcile({ provider: sync.provider, instances: sync.store });
  assert.deepStrictEqual(sync.destroyed.sort(), ['found-reg', 'orphan1']);

  const broken = [
    ['sweepMark', () => true, false],
    ['sweepMark', () => -1, false],
    ['sweepMark', () => 1.5, false],
    ['sweepMark', () => '3', false],
    ['sweepMark', () => Promise.reject(new Error('mark down')), false],
    ['lookupCandidates', () => Promise.reject(new Error('queue down')), true],
    ['referencedAmong', () => Promise.reject(new Error('references down')), true],
    ['referencedAmong', () => 'not an array', true],
    ['registeredAmong', () => [5], true],
  ];
  for (const [method, answer, lists] of broken) {
    const world = await scopedWorld(SCOPED);
    world.store[method] = answer;
    const report = await reconcile({ provider: world.provider, instances: world.store });
    const what = `${method}: ${answer}`;
    assert.equal(report.providers[0].orphans.status, 'unavailable', what);
    assert.deepStrictEqual(world.destroyed, [], `${what}: fails closed`);
    const malformed = method === 'sweepMark' && !String(answer).includes('reject');
    if (malformed) assert.match(report.providers[0].orphans.error, /expected a whole number of at least 0/, what);
    assert.equal(world.calls.some((call) => call.method === 'provider.list'), lists, `${what}: listed`);
  }
  // A failing lookupChecked is ignored.
  const ignored = await scopedWorld(SCOPED);
  ignored.store.lookupChecked = () => Promise.reject(new Error('write-back down'));
  const report = await reconcile({ provider: ignored.provider, instances: ignored.store });
  assert.equal(report.providers[0].orphans.status, 'swept');
  assert.deepStrictEqual(ignored.destroyed.sort(), ['found-reg', 'orphan1']);
});

test('a store with some but not all of the scoped reads is a TypeError naming the first missing one, before any call', async () => {
  const cases = [
    [['sweepMark'], /^options\.instances\.referencedAmong must be a function/],
    [['sweepMark', 'referencedAmong', 'registeredAmong', 'lookupCandidates'], /^options\.instances\.lookupChecked must be a function/],
    [['referencedAmong', 'registeredAmong', 'lookupCandidates', 'lookupChecked'], /^options\.instances\.sweepMark must be a function/],
    [['lookupChecked'], /^options\.instances\.sweepMark must be a function/],
  ];
  for (const [present, message] of cases) {
    const world = await scopedWorld(present);
    await assert.rejects(reconcile({ provider: world.provider, instances: world.store }), (error) => {
      assert.ok(error instanceof TypeError, `${present}: got ${error}`);
      assert.match(error.message, message);
      return true;
    });
    assert.deepStrictEqual([world.calls, world.destroyed], [[], []], `${present}: nothing was called`);
  }
  // A member that is there but not a function is named as the siblings' are.
  for (const method of SCOPED) {
    const world = await scopedWorld(SCOPED);
    world.store[method] = 5;
    await assert.rejects(reconcile({ provider: world.provider, instances: world.store }), {
      name: 'TypeError',
      message: new RegExp(`^options\\.instances\\.${method} must be a function when present`),
    });
    assert.deepStrictEqual(world.calls, [], `${method}: nothing was called`);
  }
  // null and undefined are "absent": with all five absent, the older sweep.
  const world = await scopedWorld([]);
  for (const method of SCOPED) world.store[method] = method.length % 2 ? null : undefined;
  await reconcile({ provider: world.provider, instances: world.store });
  const methods = world.calls.map((call) => call.method).filter((method) => SWEEP_CALLS.has(method));
  assert.deepStrictEqual(methods, ['sandboxReferences', 'provider.list'], 'the older order, without registry or lookup candidates');
});
