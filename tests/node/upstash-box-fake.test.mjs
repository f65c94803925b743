// The Upstash Box fake (tests/fakes/upstash-box.mjs) is only as good as its
// proof: the vendor's official Node SDK (npm `@upstash/box` 0.5.5, pinned in
// bindings-node's devDependencies) must accept it. Every call a provider
// makes is made here by the SDK itself, pointed at the fake by its `baseUrl`
// option: refused with a wrong key, listed (with and without a label), got by
// id and by name, deleted (and what follows: the tombstone, the 404s), created
// with labels, and the faults read as the vendor's.
// tests/python/test_upstash_box_fake.py does the same with the PyPI SDK.

import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { startFakeUpstashBox, NO_FAULTS } from '../fakes/upstash-box.mjs';

// @upstash/box is ESM only and its export map has only an "import" entry, so
// require.resolve cannot find it: its entry is looked up by hand, from
// bindings-node (whose devDependencies hold it).
const require = createRequire(new URL('../../bindings-node/package.json', import.meta.url));
const boxPackage = require.resolve.paths('@upstash/box')
  .map((dir) => join(dir, '@upstash', 'box'))
  .find((dir) => existsSync(join(dir, 'package.json')));
assert.ok(boxPackage, '@upstash/box is installed in bindings-node/node_modules (npm ci there)');
const boxManifest = JSON.parse(readFileSync(join(boxPackage, 'package.json'), 'utf8'));
const { Box, BoxError } = await import(pathToFileURL(join(boxPackage, boxManifest.exports['.'].import)).href);

// The SDK reads this at call time; the telemetry headers are part of the wire checked below.
delete process.env.UPSTASH_DISABLE_TELEMETRY;

const T0 = Math.floor(Date.UTC(2026, 0, 1) / 1000); // epoch seconds, as the API serves them
const hosted = (fake) => fake.state().requests;
const boxId = (i) => `box_${String(i).padStart(4, '0')}`;
const options = (fake, more = {}) => ({ apiKey: fake.key, baseUrl: fake.url, ...more });
const boxError = (status, message) => (error) =>
  error instanceof BoxError && error.statusCode === status && (message === undefined || error.message === message);

async function withFake(body, start = {}) {
  const fake = await startFakeUpstashBox(start);
  try {
    await body(fake);
  } finally {
    await fake.close();
  }
}

function seedBoxes(fake, count) {
  return fake.seed(
    Array.from({ length: count }, (_, i) => ({
      id: boxId(i),
      name: `sb-${i}`,
      status: ['idle', 'running', 'paused', 'error'][i % 4],
      labels: i % 2 ? ['io.sr:owner-a', `key-${i}`] : ['io.sr:owner-ab'],
      created_at: T0 + i,
    })),
  );
}

// The fake sees the hanging request's connection close soon after the client gives up.
async function abandonedOnce(fake) {
  for (let waited = 0; fake.state().abandoned === 0 && waited < 2_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(fake.state().abandoned, 1);
}

test('the SDK under test is @upstash/box 0.5.5', () => {
  assert.equal(boxManifest.version, '0.5.5');
});

test('a wrong key is refused with 401 {"error":"unauthorized"} on every call, and the SDK never retries', async () => {
  await withFake(async (fake) => {
    seedBoxes(fake, 2);
    const wrong = { apiKey: 'box_wrong', baseUrl: fake.url };
    await assert.rejects(Box.list(wrong), boxError(401, 'unauthorized'));
    await assert.rejects(Box.get(boxId(0), wrong), boxError(401, 'unauthorized'));
    await assert.rejects(Box.delete({ ...wrong, boxIds: [boxId(0)] }), boxError(401, 'unauthorized'));
    const requests = hosted(fake);
    assert.deepEqual(requests.map((r) => `${r.method} ${r.path}`), ['GET /v2/box', `GET /v2/box/${boxId(0)}`, 'DELETE /v2/box']);
    assert.ok(requests.every((r) => r.authorized === false && r.headers['x-box-api-key'] === '<redacted>'), 'the key reaches the fake as X-Box-Api-Key and is never logged');
    assert.ok(requests.every((r) => !('authorization' in r.headers)), 'no Authorization header');
    assert.equal(requests[0].headers['upstash-telemetry-sdk'], '@upstash/box@0.5.5');
    assert.deepEqual(fake.state().alive, [boxId(0), boxId(1)], 'nothing was deleted');
  });
});

test('Box.list answers a bare array of every box, and ?label= keeps the boxes carrying exactly that label', async () => {
  await withFake(async (fake) => {
    seedBoxes(fake, 7);
    fake.seed([{ id: 'box_gone', name: 'gone', status: 'deleted', labels: ['io.sr:owner-a'] }]);
    const all = await Box.list(options(fake));
    assert.ok(Array.isArray(all));
    assert.deepEqual(all.map((b) => b.id), Array.from({ length: 7 }, (_, i) => boxId(i)), 'a deleted box is never listed');
    const b3 = all[3];
    assert.deepEqual(
      { id: b3.id, name: b3.name, status: b3.status, labels: b3.labels, created_at: b3.created_at, updated_at: b3.updated_at },
      { id: boxId(3), name: 'sb-3', status: 'error', labels: ['io.sr:owner-a', 'key-3'], created_at: T0 + 3, updated_at: T0 + 3 },
    );
    assert.ok(all.every((b) => Number.isInteger(b.created_at) && b.created_at < 1e12), 'created_at is epoch seconds');

    const owned = await Box.list(options(fake, { label: 'io.sr:owner-a' }));
    assert.deepEqual(owned.map((b) => b.id), [boxId(1), boxId(3), boxId(5)], 'exact label, not a prefix of io.sr:owner-ab');
    assert.deepEqual((await Box.list(options(fake, { label: 'key-5' }))).map((b) => b.id), [boxId(5)]);
    assert.deepEqual(await Box.list(options(fake, { label: 'nobody' })), []);
    const lists = hosted(fake).filter((r) => r.method === 'GET');
    assert.deepEqual(lists.map((r) => r.query), ['', '?label=io.sr%3Aowner-a', '?label=key-5', '?label=nobody'], 'the SDK percent-encodes the label');
  });
});

test('Box.get resolves an id or a name; labels.list reads the box; an unknown one is 404 "Box not found"', async () => {
  await withFake(async (fake) => {
    seedBoxes(fake, 3);
    const byId = await Box.get(boxId(1), options(fake));
    assert.equal(byId.id, boxId(1));
    assert.deepEqual(await byId.labels.list(), ['io.sr:owner-a', 'key-1']);
    assert.deepEqual(await byId.getStatus(), { status: 'running' });
    const byName = await Box.getByName('sb-2', options(fake));
    assert.equal(byName.id, boxId(2), 'later calls use the answer\'s id');
    assert.deepEqual(await byName.getStatus(), { status: 'paused' });
    assert.equal(hosted(fake).at(-1).path, `/v2/box/${boxId(2)}/status`);
    await assert.rejects(Box.get('box_nope', options(fake)), boxError(404, 'Box not found'));
    await assert.rejects(Box.getByName('no-such-name', options(fake)), boxError(404, 'Box not found'));
  });
});

test('box.delete answers 200 and the box leaves the listing; Box.get still answers the tombstone, getStatus and delete 404', async () => {
  await withFake(async (fake) => {
    seedBoxes(fake, 3);
    const box = await Box.get(boxId(1), options(fake));
    assert.equal(await box.delete(), undefined);
    assert.deepEqual(fake.state().deletes, [boxId(1)]);
    assert.deepEqual(fake.state().alive, [boxId(0), boxId(2)]);
    assert.deepEqual((await Box.list(options(fake))).map((b) => b.id), [boxId(0), boxId(2)]);
    assert.deepEqual((await Box.list(options(fake, { label: 'key-1' }))), [], 'not under its label either');

    const tombstone = await Box.get(boxId(1), options(fake));
    assert.equal(tombstone.id, boxId(1), 'a deleted box still answers GET /v2/box/{id} (200)');
    await assert.rejects(tombstone.getStatus(), boxError(404, 'Box has been deleted'));
    await assert.rejects(box.delete(), boxError(404, 'Box has been deleted'));
    await assert.rejects(Box.delete(options(fake, { boxIds: ['box_nope'] })), boxError(404, 'Box not found'));
    assert.deepEqual(fake.state().deletes, [boxId(1)], 'a 404 deletes nothing');
    const raw = await fetch(`${fake.url}/v2/box/${boxId(1)}`, { headers: { 'X-Box-Api-Key': fake.key } }).then((r) => r.json());
    assert.equal(raw.status, 'deleted');
  });
});

test('Box.delete({boxIds}) deletes them all, or none when one is gone', async () => {
  await withFake(async (fake) => {
    seedBoxes(fake, 4);
    await Box.delete(options(fake, { boxIds: [boxId(0), boxId(2)] }));
    assert.deepEqual(fake.state().deletes, [boxId(0), boxId(2)]);
    await assert.rejects(Box.delete(options(fake, { boxIds: [boxId(1), boxId(2)] })), boxError(404, 'Box has been deleted'));
    assert.deepEqual(fake.state().alive, [boxId(1), boxId(3)]);
    const bulk = hosted(fake).filter((r) => r.method === 'DELETE');
    assert.ok(bulk.every((r) => r.path === '/v2/box' && r.headers['content-type'] === 'application/json'));
  });
});

test('Box.create sends name and labels, answers an idle box at once, and Box.list({label}) finds it', async () => {
  await withFake(async (fake) => {
    seedBoxes(fake, 2);
    const box = await Box.create(options(fake, { name: '0123456789abcdef', labels: ['io.sr:o-1a2b3c4d', 'k:9f8e'], runtime: 'node' }));
    assert.match(box.id, /^box_[0-9a-f]{16}$/);
    assert.equal(hosted(fake).filter((r) => r.method === 'GET').length, 0, 'not creating: the SDK does not poll');
    assert.deepEqual(await box.getStatus(), { status: 'idle' });
    const found = await Box.list(options(fake, { label: 'io.sr:o-1a2b3c4d' }));
    assert.deepEqual(found.map((b) => [b.id, b.name, b.status, b.runtime]), [[box.id, '0123456789abcdef', 'idle', 'node']]);
    assert.ok(Math.abs(found[0].created_at - Date.now() / 1000) < 60, 'created_at is now, in seconds');
    assert.equal((await Box.getByName('0123456789abcdef', options(fake))).id, box.id);

    assert.deepEqual(await box.labels.add('extra'), ['io.sr:o-1a2b3c4d', 'k:9f8e', 'extra']);
    assert.deepEqual(await box.labels.remove('k:9f8e'), ['io.sr:o-1a2b3c4d', 'extra']);
    assert.deepEqual(await Box.list(options(fake, { label: 'k:9f8e' })), []);

    // The SDK's documented label rules (the server's enforcement is unverified).
    await assert.rejects(Box.create(options(fake, { labels: ['io.sandbox-reclaim.owner=me'] })), (e) => boxError(400)(e) && /invalid label/.test(e.message));
    await assert.rejects(Box.create(options(fake, { labels: ['a'.repeat(21)] })), boxError(400));
    await assert.rejects(Box.create(options(fake, { labels: ['a', 'b', 'c', 'd', 'e', 'f'] })), (e) => boxError(400)(e) && /at most 5 labels/.test(e.message));
    assert.equal((await Box.create(options(fake, { labels: ['a'.repeat(20), 'b', 'c', 'd', 'e'] }))).id.startsWith('box_'), true, '20 characters and 5 labels are fine');
    await assert.rejects(box.labels.add('too many?'), boxError(400));
    await assert.rejects(Box.create(options(fake, { name: '0123456789abcdef' })), boxError(409));
    await box.delete();
    const again = await Box.create(options(fake, { name: '0123456789abcdef' }));
    assert.notEqual(again.id, box.id, 'a deleted box\'s name is free again');
    assert.equal((await Box.getByName('0123456789abcdef', options(fake))).id, again.id, 'a name resolves to the live box first');
  });
});

test('the faults reach the SDK as the vendor\'s would', async () => {
  await withFake(async (fake) => {
    seedBoxes(fake, 6);
    const box0 = await Box.get(boxId(0), options(fake));
    fake.setFaults({ failDeleteEvery: 1 });
    await assert.rejects(box0.delete(), boxError(500, 'Internal server error'));
    fake.setFaults({ failDeleteEvery: 0, rateLimitDeletes: 1, retryAfterSeconds: 7 });
    await assert.rejects(box0.delete(), boxError(429, 'Too many requests'));
    assert.deepEqual(fake.state().deletes, [], 'neither deleted anything');
    assert.equal(hosted(fake).filter((r) => r.method === 'DELETE').length, 2, 'the SDK does not retry a 429');
    fake.setFaults({ rateLimitDeletes: 1 });
    const limited = await fetch(`${fake.url}/v2/box/${boxId(0)}`, { method: 'DELETE', headers: { 'X-Box-Api-Key': fake.key } });
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('retry-after'), '7', 'sent, though the SDK never reads it');
    await box0.delete();

    fake.setFaults({ malformedPage: true });
    const malformed = await Box.list(options(fake));
    assert.equal(Array.isArray(malformed), false, 'the SDK hands the non-array through unchecked');
    assert.deepEqual(malformed, { boxes: 'x' });
    fake.setFaults({ malformedPage: false, repeatItems: true });
    const repeated = (await Box.list(options(fake))).map((b) => b.id);
    assert.deepEqual(repeated, [boxId(1), boxId(2), boxId(3), boxId(4), boxId(5), boxId(1)]);
    fake.setFaults({ repeatItems: false, deletedStayListedMs: 60_000 });
    await (await Box.get(boxId(1), options(fake))).delete();
    const lagging = await Box.list(options(fake));
    assert.equal(lagging.find((b) => b.id === boxId(1))?.status, 'running', 'a lagging list still shows the old status');
    await assert.rejects((await Box.get(boxId(1), options(fake))).getStatus(), boxError(404, 'Box has been deleted'));
    fake.setFaults({ deletedStayListedMs: 0 });
    assert.equal((await Box.list(options(fake))).some((b) => b.id === boxId(1)), false);

    fake.setFaults({ latencyMs: 150 });
    const started = Date.now();
    await Box.list(options(fake));
    assert.ok(Date.now() - started >= 140, 'every answer waits latencyMs');
    fake.setFaults({ latencyMs: 0, hangDeletes: true });
    const box2 = await Box.get(boxId(2), options(fake, { timeout: 300 }));
    await assert.rejects(box2.delete(), (e) => e instanceof BoxError && e.message === 'Request timeout' && e.statusCode === undefined);
    await abandonedOnce(fake);
    fake.setFaults({ hangDeletes: false, hangLists: true });
    // Box.list has no timeout of its own: a caller's abort is what ends a hung listing.
    await assert.rejects(fetch(`${fake.url}/v2/box`, { headers: { 'X-Box-Api-Key': fake.key }, signal: AbortSignal.timeout(300) }), { name: 'TimeoutError' });
    assert.equal(fake.state().alive.includes(boxId(2)), true, 'a hung delete deleted nothing');
  });
});

test('the control routes need no key, refuse unknown faults and bad seeds, and reset', async () => {
  await withFake(async (fake) => {
    const post = (route, body) => fetch(`${fake.url}/_fake/${route}`, { method: 'POST', body: JSON.stringify(body) });
    const seeded = await post('boxes', [{ name: 'a' }, { id: 'box_given', labels: ['x'] }]).then((r) => r.json());
    assert.match(seeded.ids[0], /^box_[0-9a-f]{16}$/);
    assert.equal(seeded.ids[1], 'box_given');
    assert.equal((await post('faults', { failDeletesEvery: 1 })).status, 400, 'a misspelt fault is refused');
    assert.equal((await post('boxes', [{ status: 'stopped' }])).status, 400);
    assert.equal((await post('boxes', [{ created_at: '2026-01-01' }])).status, 400);
    assert.deepEqual(await post('faults', { hangLists: true }).then((r) => r.json()), { ...NO_FAULTS, hangLists: true });
    const state = await fetch(`${fake.url}/_fake/state`).then((r) => r.json());
    assert.deepEqual(state.alive.sort(), [...seeded.ids].sort());
    assert.deepEqual(state.requests, [], 'control calls are not API requests');
    await post('reset');
    assert.deepEqual(fake.state().alive, []);
    assert.deepEqual(await Box.list(options(fake)), [], 'reset cleared the faults too (no hang)');
  }, { key: 'box_other_key' });
});
