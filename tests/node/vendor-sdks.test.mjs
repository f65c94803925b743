// The Sprites, Runloop and Blaxel fakes (tests/fakes/sprites.mjs, runloop.mjs,
// blaxel.mjs) are only as good as their proof: each vendor's official Node
// SDK (npm `@fly/sprites`, `@runloop/api-client`, `@blaxel/core`, pinned in
// bindings-node's devDependencies) must accept it. Every call a provider makes
// is made here by the SDK itself, pointed at the fake by its own base-URL
// option: refused with a wrong key, every page listed once, one got, one
// destroyed (and what follows), not found, and the faults read as the
// vendor's. tests/python/test_vendor_sdks.py does the same with the PyPI SDKs.

import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { startFakeSprites, STATUSES as SPRITE_STATUSES } from '../fakes/sprites.mjs';
import { startFakeRunloop } from '../fakes/runloop.mjs';
import { startFakeBlaxel } from '../fakes/blaxel.mjs';

const require = createRequire(new URL('../../bindings-node/package.json', import.meta.url));
// @fly/sprites is ESM only.
const { SpritesClient, APIError } = await import(pathToFileURL(require.resolve('@fly/sprites')).href);
const { Runloop } = require('@runloop/api-client');

// @blaxel/core reads ./.env and ./blaxel.toml from the working directory when
// loaded, and ~/.blaxel/config.yaml on first use: load it from an empty
// directory, with HOME there too, tracking off and no H2 pre-warming.
const blaxelHome = mkdtempSync(join(tmpdir(), 'blaxel-home-'));
process.on('exit', () => rmSync(blaxelHome, { recursive: true, force: true }));
Object.assign(process.env, { HOME: blaxelHome, DO_NOT_TRACK: '1', BL_DISABLE_H2: 'true' });
for (const name of ['BL_API_URL', 'BL_API_KEY', 'BL_WORKSPACE', 'BL_CLIENT_CREDENTIALS', 'BL_ENV', 'BL_REGION', 'BL_API_VERSION']) delete process.env[name];
const cwd = process.cwd();
process.chdir(blaxelHome);
const { SandboxInstance, initialize } = require('@blaxel/core');
process.chdir(cwd);

const t0 = Date.UTC(2026, 0, 1);
const hosted = (fake) => fake.state().requests.filter((r) => !r.path.startsWith('/_fake'));

// The fake sees the hanging request's connection close soon after the client gives up.
async function abandonedOnce(fake) {
  for (let waited = 0; fake.state().abandoned === 0 && waited < 2_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(fake.state().abandoned, 1);
}

async function withFake(start, options, body) {
  const fake = await start(options);
  try {
    await body(fake);
  } finally {
    await fake.close();
  }
}

// ---------------------------------------------------------------- Sprites

const spriteName = (i) => `sb-${String(i).padStart(3, '0')}`;
const sprites = (fake, key = fake.key) => new SpritesClient(key, { baseURL: fake.url, timeout: 5_000 });
const spritesError = (status, message) => (error) =>
  error instanceof APIError && error.statusCode === status && (message === undefined || error.message === message);

function seedSprites(fake, count, prefix = 'sb') {
  fake.seed(
    Array.from({ length: count }, (_, i) => ({
      name: prefix === 'sb' ? spriteName(i) : `${prefix}-${i}`,
      labels: i % 2 ? ['sandbox-reclaim', `key-${i}`] : [],
      status: SPRITE_STATUSES[i % 3],
      createdAt: i % 4 ? t0 + i * 1000 : new Date(t0 + i * 1000).toISOString(),
    })),
  );
}

test('Sprites: the SDK is refused with a wrong token', async () => {
  await withFake(startFakeSprites, { key: 'spr_right' }, async (fake) => {
    seedSprites(fake, 2);
    await assert.rejects(sprites(fake, 'spr_wrong').listSprites(), spritesError(401, 'unauthorized'));
    await assert.rejects(sprites(fake, 'spr_wrong').getSprite(spriteName(0)), spritesError(401, 'unauthorized'));
    assert.equal(hosted(fake).length, 2, 'the SDK never retries');
  });
});

test('Sprites: listAllSprites yields every sprite once, page after page, with what the SDK parses', async () => {
  await withFake(startFakeSprites, {}, async (fake) => {
    seedSprites(fake, 123);
    seedSprites(fake, 4, 'other');
    const all = await sprites(fake).listAllSprites('sb-');
    assert.deepEqual(all.map((s) => s.name), Array.from({ length: 123 }, (_, i) => spriteName(i)));
    const lists = hosted(fake);
    assert.equal(lists.length, 3, 'pages of 50');
    assert.ok(lists.every((r) => new URLSearchParams(r.query).get('max_results') === '50'));
    const s7 = all[7];
    assert.equal(s7.status, SPRITE_STATUSES[7 % 3]);
    assert.deepEqual(s7.labels, ['sandbox-reclaim', 'key-7']);
    assert.equal(s7.createdAt.getTime(), t0 + 7000);
    assert.equal(all[8].createdAt.getTime(), t0 + 8000, 'an ISO seed reads the same');
    assert.match(s7.id, /^sprite-[0-9a-f-]{36}$/);
    assert.equal(s7.organizationName, 'fake-org');

    // By hand, with a small page: the token is there exactly while has_more.
    const client = sprites(fake);
    const seen = [];
    let token;
    let pages = 0;
    do {
      const page = await client.listSprites({ maxResults: 7, continuationToken: token, prefix: 'sb-' });
      pages += 1;
      assert.ok(page.sprites.length <= 7);
      assert.equal(typeof page.nextContinuationToken === 'string', page.hasMore);
      if (!page.hasMore) assert.equal(page.nextContinuationToken, null);
      seen.push(...page.sprites.map((s) => s.name));
      token = page.hasMore ? page.nextContinuationToken : undefined;
    } while (token);
    assert.equal(pages, Math.ceil(123 / 7));
    assert.deepEqual(seen, all.map((s) => s.name));
    // 100 (what the Python and Go SDKs send) is accepted, clamped to 50.
    assert.equal((await client.listSprites({ maxResults: 100 })).sprites.length, 50);
    assert.equal((await client.listSprites({ prefix: 'other-' })).sprites.length, 4);
  });
});

test('Sprites: the SDK gets a sprite, deletes it (204: it is gone), and reads what follows as not found', async () => {
  await withFake(startFakeSprites, {}, async (fake) => {
    seedSprites(fake, 3);
    const client = sprites(fake);
    const sprite = await client.getSprite(spriteName(1));
    assert.equal(sprite.name, spriteName(1));
    assert.equal(sprite.status, 'warm');
    assert.deepEqual(sprite.labels, ['sandbox-reclaim', 'key-1']);
    assert.equal(await client.deleteSprite(spriteName(1)), undefined);
    assert.deepEqual(fake.state().alive, [spriteName(0), spriteName(2)]);
    assert.deepEqual(fake.state().deleted, [spriteName(1)]);
    assert.equal(fake.state().statuses[spriteName(1)], undefined);
    await assert.rejects(client.getSprite(spriteName(1)), spritesError(404, 'sprite not found'));
    await assert.rejects(client.deleteSprite(spriteName(1)), (error) => spritesError(404, 'sprite not found')(error) && error.errorCode === 'sprite not found');
    await assert.rejects(client.getSprite('never-was'), spritesError(404));
    assert.deepEqual((await client.listAllSprites()).map((s) => s.name), [spriteName(0), spriteName(2)]);
    assert.throws(() => fake.seed([{ name: 'x', status: 'stopped' }]), /status "stopped" is none of cold, warm, running/);
    assert.throws(() => fake.seed([{ name: 'x', labels: { k: 'v' } }]), /labels must be an array of strings/);
  });
});

test('Sprites: the faults reach the SDK as the vendor\'s would', async () => {
  await withFake(startFakeSprites, {}, async (fake) => {
    seedSprites(fake, 8);
    const client = sprites(fake);
    fake.setFaults({ failDeleteEvery: 1 });
    await assert.rejects(client.deleteSprite(spriteName(0)), spritesError(500, 'internal server error'));
    fake.setFaults({ failDeleteEvery: 0, rateLimitDeletes: 1, retryAfterSeconds: 7 });
    await assert.rejects(client.deleteSprite(spriteName(0)), (error) =>
      spritesError(429)(error) && error.isRateLimitError() && error.retryAfterHeader === 7 && error.retryAfterSeconds === 7 &&
      error.message === 'Rate limit exceeded (retry after: 7s)');
    assert.deepEqual(fake.state().alive.length, 8);

    fake.setFaults({ deletedStayListedMs: 60_000 });
    await client.deleteSprite(spriteName(0));
    const lagging = (await client.listAllSprites()).find((s) => s.name === spriteName(0));
    assert.equal(lagging?.status, 'cold', 'listed a while after, in its last status');
    await assert.rejects(client.getSprite(spriteName(0)), spritesError(404));
    fake.setFaults({ deletedStayListedMs: 0 });

    fake.setFaults({ repeatAcrossPages: true });
    const first = await client.listSprites({ maxResults: 3 });
    const second = await client.listSprites({ maxResults: 3, continuationToken: first.nextContinuationToken });
    assert.equal(second.sprites[0].name, first.sprites.at(-1).name);
    fake.setFaults({ repeatAcrossPages: false, cycleCursor: true });
    const again = await client.listSprites({ maxResults: 3, continuationToken: first.nextContinuationToken });
    assert.equal(again.hasMore, true);
    assert.equal(again.nextContinuationToken, first.nextContinuationToken, 'page 2 leads back to page 2');
    fake.setFaults({ cycleCursor: false, malformedPage: 2 });
    await assert.rejects(client.listSprites({ maxResults: 3, continuationToken: first.nextContinuationToken }), TypeError);
    fake.setFaults({ malformedPage: 0, hangLists: true });
    await assert.rejects(new SpritesClient(fake.key, { baseURL: fake.url, timeout: 300 }).listSprites(), /aborted|timeout/i);
    await abandonedOnce(fake);
  });
});

// ---------------------------------------------------------------- Runloop

const devboxId = (i) => `dbx_${String(i).padStart(3, '0')}`;
const runloop = (fake, options = {}) =>
  new Runloop({ bearerToken: fake.key, baseURL: fake.url, http2: false, maxRetries: 0, timeout: 5_000, ...options });

function seedDevboxes(fake, count) {
  fake.seed(
    Array.from({ length: count }, (_, i) => ({
      id: devboxId(i),
      metadata: i % 2 ? { 'io.sandbox-reclaim.owner': 'me', key: `k${i}` } : {},
      status: i % 5 === 4 ? 'suspended' : 'running',
      createTimeMs: t0 + i * 1000,
    })),
  );
}

test('Runloop: the SDK is refused with a wrong key', async () => {
  await withFake(startFakeRunloop, { key: 'rl_right' }, async (fake) => {
    await assert.rejects(runloop(fake, { bearerToken: 'rl_wrong', maxRetries: 2 }).devboxes.list(), (error) =>
      error instanceof Runloop.AuthenticationError && error.status === 401 && /Unauthorized/.test(error.message));
    assert.equal(hosted(fake).length, 1, 'a 401 is final to the SDK');
  });
});

test('Runloop: the SDK\'s auto-pagination yields every devbox once, by starting_after', async () => {
  await withFake(startFakeRunloop, {}, async (fake) => {
    seedDevboxes(fake, 23);
    const seen = [];
    for await (const devbox of runloop(fake).devboxes.list({ limit: 5 })) seen.push(devbox);
    assert.deepEqual(seen.map((d) => d.id), Array.from({ length: 23 }, (_, i) => devboxId(i)));
    const lists = hosted(fake);
    assert.equal(lists.length, 5);
    assert.deepEqual(lists.map((r) => new URLSearchParams(r.query).get('starting_after')), [null, 'dbx_004', 'dbx_009', 'dbx_014', 'dbx_019']);
    assert.deepEqual(seen[3].metadata, { 'io.sandbox-reclaim.owner': 'me', key: 'k3' });
    assert.equal(seen[3].create_time_ms, t0 + 3000);
    assert.equal(seen[4].status, 'suspended');

    const page = await runloop(fake).devboxes.list({ limit: 10, status: 'suspended' });
    assert.deepEqual(page.devboxes.map((d) => d.id), ['dbx_004', 'dbx_009', 'dbx_014', 'dbx_019']);
    assert.equal(page.has_more, false);
    assert.equal(page.total_count, 4);
    assert.equal(page.hasNextPage(), false);
    await assert.rejects(runloop(fake).devboxes.list({ limit: 5001 }), (error) => error instanceof Runloop.BadRequestError);
  });
});

test('Runloop: the SDK retrieves a devbox, shuts it down (it stays, shutdown), and reads not found', async () => {
  await withFake(startFakeRunloop, {}, async (fake) => {
    seedDevboxes(fake, 3);
    const client = runloop(fake);
    const devbox = await client.devboxes.retrieve(devboxId(1));
    assert.equal(devbox.status, 'running');
    assert.equal(devbox.end_time_ms, null);
    const shut = await client.devboxes.shutdown(devboxId(1));
    assert.equal(shut.status, 'shutdown');
    assert.equal(shut.shutdown_reason, 'api_shutdown');
    assert.equal(typeof shut.end_time_ms, 'number');
    assert.equal((await client.devboxes.retrieve(devboxId(1))).status, 'shutdown');
    const listed = (await client.devboxes.list()).devboxes.find((d) => d.id === devboxId(1));
    assert.equal(listed.status, 'shutdown', 'a shut-down devbox stays listed');
    assert.deepEqual((await client.devboxes.shutdown(devboxId(1), { force: 'true' })), shut, 'shutting down again answers it unchanged');
    assert.deepEqual(fake.state().alive, [devboxId(0), devboxId(2)]);
    assert.deepEqual(fake.state().deleted, [devboxId(1)]);
    assert.equal(fake.state().statuses[devboxId(1)], 'shutdown');
    const shutdowns = hosted(fake).filter((r) => r.method === 'POST');
    assert.deepEqual(shutdowns.map((r) => `${r.path}${r.query}`), [`/v1/devboxes/${devboxId(1)}/shutdown`, `/v1/devboxes/${devboxId(1)}/shutdown?force=true`]);

    const notFound = (error) => error instanceof Runloop.NotFoundError && error.status === 404 && error.error?.message === 'Devbox dbx_nope not found';
    await assert.rejects(client.devboxes.retrieve('dbx_nope'), notFound);
    await assert.rejects(client.devboxes.shutdown('dbx_nope'), notFound);
    assert.throws(() => fake.seed([{ id: 'x', status: 'stopped' }]), /status "stopped" is none of/);
  });
});

test('Runloop: the faults reach the SDK as the vendor\'s would', async () => {
  await withFake(startFakeRunloop, {}, async (fake) => {
    seedDevboxes(fake, 6);
    fake.setFaults({ failDeleteEvery: 1 });
    await assert.rejects(runloop(fake).devboxes.shutdown(devboxId(0)), (error) => error instanceof Runloop.InternalServerError && error.status === 500);
    fake.setFaults({ failDeleteEvery: 0, rateLimitDeletes: 1, retryAfterSeconds: 9 });
    await assert.rejects(runloop(fake).devboxes.shutdown(devboxId(0)), (error) =>
      error instanceof Runloop.RateLimitError && error.status === 429 && error.headers['retry-after'] === '9');
    // The SDK retries a 429 after its Retry-After (here 0 s: at once).
    fake.setFaults({ rateLimitDeletes: 1, retryAfterSeconds: 0 });
    assert.equal((await runloop(fake, { maxRetries: 1 }).devboxes.shutdown(devboxId(0))).status, 'shutdown');
    const shutdowns = hosted(fake).filter((r) => r.method === 'POST');
    assert.equal(shutdowns.length, 4);

    fake.setFaults({ cycleCursor: true });
    const seen = [];
    for await (const devbox of runloop(fake).devboxes.list({ limit: 2 })) {
      seen.push(devbox.id);
      if (seen.length === 9) break;
    }
    assert.deepEqual(seen, ['dbx_000', 'dbx_001', 'dbx_002', 'dbx_001', 'dbx_002', 'dbx_001', 'dbx_002', 'dbx_001', 'dbx_002'], 'a naive client loops');
    fake.setFaults({ cycleCursor: false, repeatAcrossPages: true });
    const repeated = [];
    for await (const devbox of runloop(fake).devboxes.list({ limit: 2 })) repeated.push(devbox.id);
    assert.deepEqual(repeated, ['dbx_000', 'dbx_001', 'dbx_001', 'dbx_002', 'dbx_003', 'dbx_003', 'dbx_004', 'dbx_005']);
    fake.setFaults({ repeatAcrossPages: false, hangDeletes: true });
    await assert.rejects(runloop(fake, { timeout: 300 }).devboxes.shutdown(devboxId(1)), (error) => error instanceof Runloop.APIConnectionTimeoutError);
    await abandonedOnce(fake);
  });
});

// ---------------------------------------------------------------- Blaxel

const sandboxName = (i) => `sbx-${String(i).padStart(3, '0')}`;

function useBlaxel(fake, { key = fake.key, workspace = fake.workspace } = {}) {
  process.env.BL_API_URL = `${fake.url}/v0`;
  initialize({ apiKey: key, workspace });
}

function seedSandboxes(fake, count) {
  fake.seed(
    Array.from({ length: count }, (_, i) => ({
      name: sandboxName(i),
      labels: i % 2 ? { 'io.sandbox-reclaim.owner': 'me' } : {},
      status: i % 5 === 4 ? 'DEACTIVATED' : 'DEPLOYED',
      createdAt: new Date(t0 + i * 1000).toISOString(),
    })),
  );
}

const blaxelError = (code) => (error) => error?.code === code && typeof error.error === 'string' && !(error instanceof Error);

test('Blaxel: the SDK is refused with a wrong key or workspace', async () => {
  await withFake(startFakeBlaxel, { key: 'bl_right', workspace: 'ws-right' }, async (fake) => {
    useBlaxel(fake, { key: 'bl_wrong' });
    await assert.rejects(SandboxInstance.list(), (error) =>
      blaxelError(401)(error) && error.error === 'Unauthorized' && /docs\.blaxel\.ai/.test(error.documentation));
    useBlaxel(fake, { workspace: 'ws-other' });
    await assert.rejects(SandboxInstance.get(sandboxName(0)), blaxelError(403));
    useBlaxel(fake);
    assert.deepEqual((await SandboxInstance.list()).data, []);
    assert.equal(hosted(fake).length, 3);
  });
});

test('Blaxel: the SDK pages every sandbox once, newest first, by cursor', async () => {
  await withFake(startFakeBlaxel, {}, async (fake) => {
    useBlaxel(fake);
    seedSandboxes(fake, 23);
    const first = await SandboxInstance.list({ limit: 5 });
    assert.equal(first.data.length, 5);
    assert.equal(first.meta.total, 23);
    const seen = [];
    for await (const sandbox of first) seen.push(sandbox);
    assert.deepEqual(seen.map((s) => s.metadata.name), Array.from({ length: 23 }, (_, i) => sandboxName(22 - i)));
    const lists = hosted(fake);
    assert.equal(lists.length, 5);
    assert.equal(new URLSearchParams(lists[0].query).get('cursor'), null);
    assert.ok(lists.slice(1).every((r) => new URLSearchParams(r.query).get('cursor')));
    const s3 = seen.find((s) => s.metadata.name === sandboxName(3));
    assert.deepEqual(s3.metadata.labels, { 'io.sandbox-reclaim.owner': 'me' });
    assert.equal(s3.metadata.createdAt, '2026-01-01T00:00:03Z');
    assert.equal(s3.status, 'DEPLOYED');
    assert.equal(seen.find((s) => s.metadata.name === sandboxName(4)).status, 'DEACTIVATED');

    const oldest = await SandboxInstance.list({ limit: 500, sort: 'createdAt:asc' });
    assert.deepEqual(oldest.data.map((s) => s.metadata.name), Array.from({ length: 23 }, (_, i) => sandboxName(i)), 'limit clamps to 200');
    assert.equal(oldest.hasMore, false);
    assert.equal(oldest.meta.nextCursor, '');
    // Without Blaxel-Version: the legacy bare array of them all.
    const legacy = await fetch(`${fake.url}/v0/sandboxes?limit=2`, { headers: { authorization: `Bearer ${fake.key}`, 'x-blaxel-workspace': fake.workspace } });
    assert.equal((await legacy.json()).length, 23);
  });
});

test('Blaxel: the SDK gets a sandbox, deletes it (DELETING, then TERMINATED, unlisted), and reads not found', async () => {
  await withFake(startFakeBlaxel, {}, async (fake) => {
    useBlaxel(fake);
    seedSandboxes(fake, 3);
    const sandbox = await SandboxInstance.get(sandboxName(1));
    assert.equal(sandbox.metadata.name, sandboxName(1));
    assert.equal(sandbox.status, 'DEPLOYED');
    assert.equal(sandbox.metadata.workspace, fake.workspace);
    const deleted = await SandboxInstance.delete(sandboxName(1));
    assert.equal(deleted.status, 'DELETING');
    assert.equal(deleted.metadata.name, sandboxName(1));
    assert.equal((await SandboxInstance.get(sandboxName(1))).status, 'TERMINATED');
    assert.deepEqual((await SandboxInstance.list()).data.map((s) => s.metadata.name), [sandboxName(2), sandboxName(0)]);
    const all = await SandboxInstance.list({ showTerminated: true });
    assert.equal(all.data.find((s) => s.metadata.name === sandboxName(1))?.status, 'TERMINATED');
    assert.equal((await SandboxInstance.delete(sandboxName(1))).status, 'TERMINATED', 'deleting a tombstone answers it unchanged');
    assert.deepEqual(fake.state().alive, [sandboxName(0), sandboxName(2)]);
    assert.deepEqual(fake.state().deleted, [sandboxName(1)]);
    assert.equal(fake.state().statuses[sandboxName(1)], 'TERMINATED');

    await assert.rejects(SandboxInstance.get('nope'), (error) => blaxelError(404)(error) && error.error === 'Sandbox not found');
    await assert.rejects(SandboxInstance.delete('nope'), blaxelError(404));
    fake.setFaults({ terminatedRetentionMs: 0 });
    await assert.rejects(SandboxInstance.get(sandboxName(1)), blaxelError(404), 'gone once its retention is over');
    assert.throws(() => fake.seed([{ name: 'x', status: 'TERMINATING' }]), /status "TERMINATING" is none of/);
  });
});

test('Blaxel: the faults reach the SDK as the vendor\'s would', async () => {
  await withFake(startFakeBlaxel, {}, async (fake) => {
    useBlaxel(fake);
    seedSandboxes(fake, 6);
    fake.setFaults({ failDeleteEvery: 1 });
    await assert.rejects(SandboxInstance.delete(sandboxName(0)), blaxelError(500));
    fake.setFaults({ failDeleteEvery: 0, rateLimitDeletes: 1, retryAfterSeconds: 4 });
    await assert.rejects(SandboxInstance.delete(sandboxName(0)), blaxelError(429));
    assert.equal(hosted(fake).filter((r) => r.method === 'DELETE').length, 2, 'the SDK never retries');

    fake.setFaults({ deletedStayListedMs: 60_000 });
    await SandboxInstance.delete(sandboxName(0));
    assert.equal((await SandboxInstance.list()).data.find((s) => s.metadata.name === sandboxName(0))?.status, 'DELETING');
    assert.equal((await SandboxInstance.get(sandboxName(0))).status, 'DELETING');
    fake.setFaults({ deletedStayListedMs: 0 });

    fake.setFaults({ cycleCursor: true });
    await assert.rejects(async () => {
      for await (const _ of await SandboxInstance.list({ limit: 2 })) void _;
    }, /Pagination returned a repeated cursor/);
    fake.setFaults({ cycleCursor: false, repeatAcrossPages: true });
    const repeated = [];
    for await (const sandbox of await SandboxInstance.list({ limit: 2 })) repeated.push(sandbox.metadata.name);
    assert.deepEqual(repeated, ['sbx-005', 'sbx-004', 'sbx-004', 'sbx-003', 'sbx-002', 'sbx-002', 'sbx-001']);
    fake.setFaults({ repeatAcrossPages: false, malformedPage: 2 });
    await assert.rejects(async () => {
      for await (const _ of await SandboxInstance.list({ limit: 2 })) void _;
    }, TypeError);
  });
});
