// A local fake of the Fly.io Sprites REST API calls sandbox-reclaim makes,
// written from the official SDKs (npm `@fly/sprites` 0.1.0: `listSprites`,
// `listAllSprites`, `getSprite`, `deleteSprite`; PyPI `sprites-py` 0.7.2:
// `list_sprites`, `get_sprite`, `delete_sprite`) and the vendor's REST
// reference (docs/research/sprites.md). tests/node/vendor-sdks.test.mjs and
// tests/python/test_vendor_sdks.py prove it faithful by driving both SDKs
// against it.
//
// Wire (the handle's `url` is the bare origin, as `https://api.sprites.dev`):
// `Authorization: Bearer <token>` on every call (401 `{"error":"unauthorized"}`
// otherwise); `GET /v1/sprites?max_results=&continuation_token=&prefix=`
// answering `{sprites, has_more, next_continuation_token}` (max_results
// defaults to 50 and is clamped to 50, so the Python SDK's 100 is accepted; a
// token is always there while `has_more`, `null` on the last page; items
// oldest first, then by name); `GET /v1/sprites/{name}` answering the bare
// sprite; `DELETE /v1/sprites/{name}` answering 204 with no body (the sprite
// is gone for good). A sprite is keyed by its `name`, never its `id`. Errors
// are `{error}` (404 `{"error":"sprite not found"}`; 429 carries
// `Retry-After` and `{error, message, retry_after_seconds}`; 500), a bad
// query `{errors: [..]}` with 400. Control routes under `/_fake/` seed
// sprites, set faults and read what happened; they need no token.
//
// Run as a program (`node tests/fakes/sprites.mjs [--key K]`) it prints one
// JSON line `{"url": ...}` and serves until stdin closes or it is killed.

import http from 'node:http';
import { createHash } from 'node:crypto';
import { pathToFileURL } from 'node:url';

export const DEFAULT_KEY = 'sprites_test_token';
export const STATUSES = ['cold', 'warm', 'running'];
const MAX_RESULTS = 50;
const ORGANIZATION = 'fake-org';
const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

const NO_FAULTS = {
  failDeleteEvery: 0, // every Nth DELETE answers 500
  rateLimitDeletes: 0, // the next N DELETEs answer 429 with Retry-After
  retryAfterSeconds: 1,
  hangDeletes: false, // DELETEs never answer
  hangLists: false, // listings never answer
  malformedPage: 0, // page N (1-based) of every listing has `sprites` that is not an array
  repeatAcrossPages: false, // each page after the first repeats the previous page's last item
  deletedStayListedMs: 0, // a deleted sprite stays listed this long, in its last status (gets answer 404)
  cycleCursor: false, // page 2's next token is the token that led to page 2: the cursors cycle forever
  latencyMs: 0, // every API answer waits this long (the benchmark's 20 ms per request)
};

function json(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

const spritesError = (res, status, error, extra = {}, headers = {}) => json(res, status, { error, ...extra }, headers);
const notFound = (res) => spritesError(res, 404, 'sprite not found');
const badRequest = (res, message) => json(res, 400, { errors: [message] });

function spriteId(name) {
  const hex = createHash('sha256').update(name).digest('hex');
  return `sprite-${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

function toMillis(value, what) {
  const ms = typeof value === 'number' ? value : Date.parse(value);
  if (!Number.isFinite(ms)) throw new Error(`${what} ${JSON.stringify(value)} is neither epoch milliseconds nor an ISO date`);
  return ms;
}

const rfc3339 = (ms) => new Date(ms).toISOString();

function spriteView(sprite) {
  return {
    id: sprite.id,
    name: sprite.name,
    organization: ORGANIZATION,
    status: sprite.status,
    config: { ram_mb: 8192, cpus: 8, region: 'ord', storage_gb: 100 },
    environment: {},
    created_at: rfc3339(sprite.createdAt),
    updated_at: rfc3339(sprite.updatedAt),
    url: `https://${sprite.name}-fake1.sprites.app`,
    url_settings: { auth: 'sprite' },
    labels: [...sprite.labels],
  };
}

const compare = (a, b) => a.createdAt - b.createdAt || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

const encodeToken = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');

function decodeToken(token) {
  const value = JSON.parse(Buffer.from(token, 'base64url').toString());
  if (typeof value?.last !== 'string' || !Number.isFinite(value.at) || !Number.isInteger(value.page)) throw new Error('bad token');
  return value;
}

/** Starts a fake on 127.0.0.1 (a free port); resolves to its handle. */
export async function startFakeSprites({ key = DEFAULT_KEY } = {}) {
  const sprites = new Map(); // name -> sprite
  const deleted = new Map(); // name -> { sprite, at }
  const requests = [];
  let faults = { ...NO_FAULTS };
  let deletes = 0;
  const hanging = new Set();
  let abandoned = 0; // hanging requests the client gave up on (closed the connection)

  function hang(res) {
    hanging.add(res);
    res.on('close', () => {
      if (hanging.delete(res)) abandoned += 1;
    });
  }

  function seed(list) {
    if (!Array.isArray(list)) throw new Error('seed takes an array of sprites');
    const ready = list.map((item) => {
      if (!NAME.test(item?.name ?? '')) throw new Error(`sprite name ${JSON.stringify(item?.name)} is not ${NAME}`);
      const status = item.status ?? 'cold';
      if (!STATUSES.includes(status)) throw new Error(`sprite ${item.name}: status ${JSON.stringify(status)} is none of ${STATUSES.join(', ')}`);
      const labels = item.labels ?? [];
      if (!Array.isArray(labels) || labels.some((label) => typeof label !== 'string')) {
        throw new Error(`sprite ${item.name}: labels must be an array of strings (Sprites labels are free strings), got ${JSON.stringify(labels)}`);
      }
      const createdAt = toMillis(item.createdAt ?? Date.now() - 3_600_000, `sprite ${item.name}: createdAt`);
      return { id: spriteId(item.name), name: item.name, status, labels, createdAt, updatedAt: createdAt };
    });
    for (const sprite of ready) {
      sprites.set(sprite.name, sprite);
      deleted.delete(sprite.name);
    }
  }

  function listable(now) {
    const lagging = [...deleted.entries()]
      .filter(([name, { at }]) => !sprites.has(name) && now - at < faults.deletedStayListedMs)
      .map(([, { sprite }]) => sprite);
    return [...sprites.values(), ...lagging].sort(compare);
  }

  function list(url, res) {
    const query = url.searchParams;
    let limit = MAX_RESULTS;
    if (query.has('max_results')) {
      limit = Number(query.get('max_results'));
      if (!Number.isInteger(limit) || limit < 1) return badRequest(res, 'invalid max_results parameter');
      limit = Math.min(limit, MAX_RESULTS);
    }
    const prefix = query.get('prefix') ?? '';
    let after = null;
    const token = query.get('continuation_token');
    if (token) {
      try {
        after = decodeToken(token);
      } catch {
        return badRequest(res, 'invalid continuation_token parameter');
      }
    }
    const matching = listable(Date.now()).filter((sprite) => sprite.name.startsWith(prefix));
    const rest = after ? matching.filter((sprite) => compare(sprite, { createdAt: after.at, name: after.last }) > 0) : matching;
    const page = after ? after.page + 1 : 1;
    const items = rest.slice(0, limit);
    let hasMore = rest.length > limit;
    let next = hasMore ? encodeToken({ last: items.at(-1).name, at: items.at(-1).createdAt, page }) : null;
    if (faults.cycleCursor && page === 2) {
      hasMore = true;
      next = token;
    }
    if (faults.malformedPage === page) return json(res, 200, { sprites: 'not a list', has_more: hasMore, next_continuation_token: next });
    const repeated = faults.repeatAcrossPages && after ? matching.filter((sprite) => sprite.name === after.last) : [];
    return json(res, 200, { sprites: [...repeated, ...items].map(spriteView), has_more: hasMore, next_continuation_token: next });
  }

  function destroy(name, res) {
    deletes += 1;
    if (faults.hangDeletes) return hang(res);
    if (faults.rateLimitDeletes > 0) {
      faults.rateLimitDeletes -= 1;
      const seconds = faults.retryAfterSeconds;
      return spritesError(res, 429, 'rate_limited', { message: 'Rate limit exceeded', retry_after_seconds: seconds }, { 'retry-after': String(seconds) });
    }
    if (faults.failDeleteEvery > 0 && deletes % faults.failDeleteEvery === 0) return spritesError(res, 500, 'internal server error');
    const sprite = sprites.get(name);
    if (!sprite) return notFound(res);
    sprites.delete(name);
    deleted.set(name, { sprite, at: Date.now() });
    res.writeHead(204);
    return res.end();
  }

  function state() {
    const statuses = Object.fromEntries([...sprites.values()].map((sprite) => [sprite.name, sprite.status]));
    const gone = [...deleted.keys()].filter((name) => !sprites.has(name));
    return { alive: [...sprites.keys()].sort(), deleted: gone.sort(), statuses, requests: [...requests], abandoned };
  }

  function reset() {
    sprites.clear();
    deleted.clear();
    requests.length = 0;
    faults = { ...NO_FAULTS };
    deletes = 0;
    for (const stuck of [...hanging]) {
      hanging.delete(stuck);
      stuck.destroy();
    }
    abandoned = 0;
  }

  async function control(req, url, res) {
    let body = '';
    for await (const chunk of req) body += chunk;
    const input = body ? JSON.parse(body) : undefined;
    switch (`${req.method} ${url.pathname}`) {
      case 'POST /_fake/sandboxes':
        seed(input);
        return json(res, 200, { alive: sprites.size });
      case 'POST /_fake/faults':
        faults = { ...faults, ...input };
        return json(res, 200, faults);
      case 'POST /_fake/reset':
        reset();
        return json(res, 200, {});
      case 'GET /_fake/state':
        return json(res, 200, state());
      default:
        return spritesError(res, 404, 'no such control route');
    }
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://fake');
    if (url.pathname.startsWith('/_fake/')) {
      control(req, url, res).catch((error) => badRequest(res, String(error)));
      return;
    }
    requests.push({ method: req.method, path: url.pathname, query: url.search });
    if (faults.latencyMs > 0) {
      setTimeout(() => serve(req, url, res), faults.latencyMs);
      return undefined;
    }
    return serve(req, url, res);
  });

  function serve(req, url, res) {
    if (req.headers.authorization !== `Bearer ${key}`) return spritesError(res, 401, 'unauthorized');
    const byName = url.pathname.match(/^\/v1\/sprites\/([^/]+)$/);
    if (req.method === 'GET' && url.pathname === '/v1/sprites') {
      if (faults.hangLists) return hang(res);
      return list(url, res);
    }
    if (byName) {
      const name = decodeURIComponent(byName[1]);
      if (req.method === 'GET') {
        const sprite = sprites.get(name);
        return sprite ? json(res, 200, spriteView(sprite)) : notFound(res);
      }
      if (req.method === 'DELETE') return destroy(name, res);
    }
    return spritesError(res, 404, 'not found');
  }
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    key,
    seed,
    setFaults: (more) => { faults = { ...faults, ...more }; },
    state,
    close: () => new Promise((resolve) => {
      for (const stuck of [...hanging]) {
        hanging.delete(stuck);
        stuck.destroy();
      }
      server.closeAllConnections();
      server.close(resolve);
    }),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const at = process.argv.indexOf('--key');
  const fake = await startFakeSprites({ key: at > 0 ? process.argv[at + 1] : DEFAULT_KEY });
  process.stdout.write(`${JSON.stringify({ url: fake.url })}\n`);
  // Serve until whoever started us closes our stdin (or exits).
  process.stdin.resume();
  process.stdin.on('end', () => fake.close().then(() => process.exit(0)));
}
