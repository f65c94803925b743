// A local fake of the Upstash Box REST API calls sandbox-reclaim makes,
// written from the official SDKs (npm `@upstash/box` 0.5.5, `dist/client.js`;
// PyPI `upstash-box` 0.4.0, `upstash_box/_sync/client.py`) and TanStack's
// measurements (docs/research/upstash-box.md). tests/node/upstash-box-fake.test.mjs
// and tests/python/test_upstash_box_fake.py prove it faithful by driving both
// SDKs against it.
//
// Wire (the handle's `url` is the bare origin, as
// `https://us-east-1.box.upstash.com`; HTTP/1.1, no paging anywhere):
// `X-Box-Api-Key: <key>` on every call (no `Authorization`), else 401
// `{"error":"unauthorized"}`. Every error answer is `{"error": <message>}`,
// which both SDKs raise as `BoxError(message, status)`.
// - `GET /v2/box[?label=<label>]` answers a BARE JSON ARRAY of BoxData, every
//   box not deleted, oldest first (the real order is unverified): `id`
//   (`box_<hex>` when minted here), `name`, `status` (creating, idle, running,
//   paused, error; `deleted` is never listed, but see deletedStayListedMs),
//   `created_at` and `updated_at` (integers, epoch SECONDS: a seed's value is
//   served as given, so a test can also serve milliseconds), `labels` (plain
//   strings), and harmless extras the SDKs accept (`size`, `keep_alive`,
//   `runtime`, `customer_id`, `network_policy`, `enabled_skills`,
//   `last_activity_at`). `label` is percent-encoded by the SDKs
//   (`encodeURIComponent` / `quote(safe="")`); the listing keeps the boxes
//   carrying exactly that label. One label per call; an empty `label=` filters
//   nothing; other query parameters are ignored.
// - `GET /v2/box/{idOrName}` answers the box: by id first, then by name (a live
//   box before a deleted one, then the oldest). A deleted box still answers
//   200, `status: "deleted"` (TanStack measured that; only `/status` reports
//   the tombstone). Unknown: 404 `{"error":"Box not found"}`.
// - `GET /v2/box/{id}/status` answers `{"status": ...}`; a deleted box 404
//   `{"error":"Box has been deleted"}`; unknown 404 `{"error":"Box not found"}`.
// - `DELETE /v2/box/{id}` answers 200 `{}` and the box is gone from the
//   listing for good (a tombstone, `deleted`, for `GET /v2/box/{id}`); a
//   deleted one answers 404 `{"error":"Box has been deleted"}`, an unknown one
//   404 `{"error":"Box not found"}` (TanStack's measurement: a delete of a gone
//   box is a 404, never a 2xx). `/status` and DELETE take the id only (the
//   SDKs always send the id from an answer; whether the server also takes a
//   name there is unverified).
// - `DELETE /v2/box` with `{"ids": [...]}` (the SDKs' bulk `Box.delete` /
//   `delete_boxes`) deletes them all and answers 200 `{}`, or deletes none and
//   answers the single delete's 404 for the first id that is unknown or
//   already deleted (the real bulk answer is unverified). A body without ids,
//   or with an empty list, DELETES EVERY LIVE BOX: the Python SDK refuses to
//   send one because the bulk endpoints "delete whatever they are scoped to,
//   so an empty or blank scope ... would read as 'everything'"; the fake
//   assumes that worst case (unverified) so a client that sends it is caught.
// - `POST /v2/box` (`Box.create`): body `name`, `labels`, `runtime`, `size`,
//   `keep_alive`, ... (other fields are ignored). Answers 200 with the new box,
//   already `idle`: the SDKs poll `GET /v2/box/{id}` every 2 s while the status
//   is `creating`, and fail on `error`. Labels are letters, digits, `.`, `_`,
//   `-`, `:`, at most 20 characters each, at most 5 (the SDK's documented
//   rules, `types.d.ts` BoxConfig.labels); the fake answers 400 `{"error"}`
//   otherwise. THAT THE SERVER ENFORCES THESE LIMITS, AND ITS ERROR, IS
//   UNVERIFIED. A name already held by a live box answers 409 (unverified;
//   `Box.getByName` needs names to be unique).
// - `POST /v2/box/{id}/config/labels` `{"label"}` and
//   `DELETE /v2/box/{id}/config/labels/{label}` (`box.labels.add/remove`)
//   answer the box (the SDKs read its `labels`); same label rules.
// Anything else answers 404 `{"error":"Not found"}`.
//
// Control routes under `/_fake/` need no key: `POST /_fake/boxes` seeds
// `[{id?, name?, status?, labels?, created_at?, updated_at?}]` (ids minted as
// `box_<hex>` when absent; answers the ids), `POST /_fake/faults` (NO_FAULTS'
// names only), `POST /_fake/reset`, `GET /_fake/state` (`boxes` as BoxData
// including tombstones, `alive`, `deleted`, `deletes`: ids in the order they
// were deleted, `requests`: method, path, query and headers of every API
// call, the key's value replaced by `<redacted>`, plus `authorized`).
//
// Run as a program (`node tests/fakes/upstash-box.mjs [--key K]`) it prints one
// JSON line `{"url": ...}` and serves until stdin closes or it is killed.

import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';

export const DEFAULT_KEY = 'box_test_key';
/** Every box status both SDKs declare (`BoxStatus`, JS types.d.ts). */
export const STATUSES = ['creating', 'idle', 'running', 'paused', 'error', 'deleted'];
/** The SDK's documented label rules (the server's enforcement is unverified). */
export const LABEL = /^[A-Za-z0-9._:-]{1,20}$/;
export const MAX_LABELS = 5;
const ID = /^[^/\s]{1,128}$/;

export const NO_FAULTS = Object.freeze({
  failDeleteEvery: 0, // every Nth delete (single or bulk) answers 500
  rateLimitDeletes: 0, // the next N deletes answer 429 with Retry-After
  retryAfterSeconds: 1,
  hangDeletes: false, // deletes never answer
  hangLists: false, // listings never answer
  malformedPage: false, // the listing answer is not an array: {"boxes":"x"}
  repeatItems: false, // the listing has its first box twice (again at the end)
  deletedStayListedMs: 0, // a deleted box stays listed, with its old status, this long (a lagging list)
  latencyMs: 0, // every API answer waits this long
});

function json(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

const boxError = (res, status, error, headers = {}) => json(res, status, { error }, headers);
const NOT_FOUND = 'Box not found';
const GONE = 'Box has been deleted';
const nowSeconds = () => Math.floor(Date.now() / 1000);
const mintId = () => `box_${randomBytes(8).toString('hex')}`;

function boxData(box, status = box.status) {
  return {
    id: box.id,
    name: box.name,
    status,
    labels: [...box.labels],
    size: box.size,
    keep_alive: box.keepAlive,
    runtime: box.runtime,
    customer_id: 'fake-customer',
    network_policy: { mode: 'allow-all' },
    enabled_skills: [],
    last_activity_at: box.updatedAt,
    created_at: box.createdAt,
    updated_at: box.updatedAt,
  };
}

/** The label rules, as a message (or null when they hold). */
function labelProblem(labels) {
  if (!Array.isArray(labels) || labels.some((label) => typeof label !== 'string')) return 'labels must be an array of strings';
  const bad = labels.find((label) => !LABEL.test(label));
  if (bad !== undefined) return `invalid label ${JSON.stringify(bad)}: letters, digits, '.', '_', '-', ':' only, at most 20 characters`;
  if (labels.length > MAX_LABELS) return `at most ${MAX_LABELS} labels`;
  return null;
}

const compare = (a, b) => a.createdAt - b.createdAt || a.seq - b.seq;

/** Starts a fake on 127.0.0.1 (a free port); resolves to its handle. */
export async function startFakeUpstashBox({ key = DEFAULT_KEY } = {}) {
  const boxes = new Map(); // id -> box (a deleted one stays, as a tombstone)
  const deletes = []; // ids, in the order they were deleted
  const requests = [];
  let faults = { ...NO_FAULTS };
  let deleteCalls = 0;
  let seq = 0;
  const hanging = new Set();
  let abandoned = 0; // hanging requests the client gave up on (closed the connection)

  function hang(res) {
    hanging.add(res);
    res.on('close', () => {
      if (hanging.delete(res)) abandoned += 1;
    });
  }

  function seed(list) {
    if (!Array.isArray(list)) throw new Error('seed takes an array of boxes');
    const ready = list.map((item) => {
      const id = item?.id ?? mintId();
      if (typeof id !== 'string' || !ID.test(id)) throw new Error(`box id ${JSON.stringify(id)} is not ${ID}`);
      const status = item.status ?? 'idle';
      if (!STATUSES.includes(status)) throw new Error(`box ${id}: status ${JSON.stringify(status)} is none of ${STATUSES.join(', ')}`);
      const labels = item.labels ?? [];
      if (!Array.isArray(labels) || labels.some((label) => typeof label !== 'string')) {
        throw new Error(`box ${id}: labels must be an array of strings, got ${JSON.stringify(labels)}`);
      }
      const createdAt = item.created_at ?? nowSeconds() - 3600;
      const updatedAt = item.updated_at ?? createdAt;
      if (!Number.isInteger(createdAt) || !Number.isInteger(updatedAt)) {
        throw new Error(`box ${id}: created_at and updated_at must be integers (epoch seconds), got ${JSON.stringify([createdAt, updatedAt])}`);
      }
      if (item.name !== undefined && item.name !== null && typeof item.name !== 'string') throw new Error(`box ${id}: name must be a string`);
      return {
        id,
        name: item.name ?? undefined,
        status,
        labels: [...labels],
        createdAt,
        updatedAt,
        size: 'small',
        keepAlive: false,
        runtime: 'node',
        deletedAtMs: status === 'deleted' ? 0 : null,
        listedStatus: status, // what a lagging listing still shows after a delete
        seq: 0,
      };
    });
    for (const box of ready) {
      seq += 1;
      box.seq = seq;
      boxes.set(box.id, box);
    }
    return ready.map((box) => box.id);
  }

  const live = (box) => box.status !== 'deleted';

  function byName(name) {
    const named = [...boxes.values()].filter((box) => box.name === name).sort(compare);
    return named.find(live) ?? named[0];
  }

  const resolve = (idOrName) => boxes.get(idOrName) ?? byName(idOrName);

  function listed() {
    const now = Date.now();
    return [...boxes.values()]
      .filter((box) => live(box) || (faults.deletedStayListedMs > 0 && now - box.deletedAtMs < faults.deletedStayListedMs))
      .sort(compare)
      .map((box) => (live(box) ? boxData(box) : boxData(box, box.listedStatus)));
  }

  function list(url, res) {
    if (faults.hangLists) return hang(res);
    if (faults.malformedPage) return json(res, 200, { boxes: 'x' });
    const label = url.searchParams.get('label');
    const items = listed().filter((box) => !label || box.labels.includes(label));
    if (faults.repeatItems && items.length > 0) items.push(items[0]);
    return json(res, 200, items);
  }

  function markDeleted(box) {
    box.listedStatus = box.status;
    box.status = 'deleted';
    box.deletedAtMs = Date.now();
    box.updatedAt = nowSeconds();
    deletes.push(box.id);
  }

  /** The delete faults, in the order a real server would meet them; true when one answered. */
  function deleteFault(res) {
    deleteCalls += 1;
    if (faults.hangDeletes) {
      hang(res);
      return true;
    }
    if (faults.rateLimitDeletes > 0) {
      faults.rateLimitDeletes -= 1;
      boxError(res, 429, 'Too many requests', { 'retry-after': String(faults.retryAfterSeconds) });
      return true;
    }
    if (faults.failDeleteEvery > 0 && deleteCalls % faults.failDeleteEvery === 0) {
      boxError(res, 500, 'Internal server error');
      return true;
    }
    return false;
  }

  function deleteOne(id, res) {
    if (deleteFault(res)) return undefined;
    const box = boxes.get(id);
    if (!box) return boxError(res, 404, NOT_FOUND);
    if (!live(box)) return boxError(res, 404, GONE);
    markDeleted(box);
    return json(res, 200, {});
  }

  function deleteMany(input, res) {
    if (deleteFault(res)) return undefined;
    const ids = input?.ids;
    if (ids !== undefined && (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string'))) {
      return boxError(res, 400, 'ids must be an array of strings');
    }
    if (!ids || ids.length === 0) {
      // The worst case the Python SDK warns of: no scope reads as everything.
      for (const box of [...boxes.values()].filter(live).sort(compare)) markDeleted(box);
      return json(res, 200, {});
    }
    for (const id of ids) {
      const box = boxes.get(id);
      if (!box) return boxError(res, 404, NOT_FOUND);
      if (!live(box)) return boxError(res, 404, GONE);
    }
    for (const id of new Set(ids)) markDeleted(boxes.get(id));
    return json(res, 200, {});
  }

  function create(input, res) {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) return boxError(res, 400, 'body must be a JSON object');
    const { name, labels = [] } = input;
    if (name !== undefined && (typeof name !== 'string' || name === '')) return boxError(res, 400, 'name must be a non-empty string');
    const problem = labelProblem(labels);
    if (problem) return boxError(res, 400, problem);
    if (name !== undefined && [...boxes.values()].some((box) => live(box) && box.name === name)) {
      return boxError(res, 409, `Box with name ${name} already exists`);
    }
    const now = nowSeconds();
    const [id] = seed([{ name, labels: [...new Set(labels)], status: 'idle', created_at: now, updated_at: now }]);
    const box = boxes.get(id);
    if (typeof input.runtime === 'string') box.runtime = input.runtime;
    if (typeof input.size === 'string') box.size = input.size;
    box.keepAlive = input.keep_alive === true;
    return json(res, 200, boxData(box));
  }

  function addLabel(box, input, res) {
    const label = input?.label;
    if (typeof label !== 'string') return boxError(res, 400, 'label must be a string');
    const labels = box.labels.includes(label) ? box.labels : [...box.labels, label];
    const problem = labelProblem(labels);
    if (problem) return boxError(res, 400, problem);
    box.labels = labels;
    box.updatedAt = nowSeconds();
    return json(res, 200, boxData(box));
  }

  function state() {
    const all = [...boxes.values()].sort(compare);
    return {
      boxes: all.map((box) => boxData(box)),
      alive: all.filter(live).map((box) => box.id),
      deleted: all.filter((box) => !live(box)).map((box) => box.id),
      deletes: [...deletes],
      requests: requests.map((r) => ({ ...r, headers: { ...r.headers } })),
      abandoned,
    };
  }

  function reset() {
    boxes.clear();
    deletes.length = 0;
    requests.length = 0;
    faults = { ...NO_FAULTS };
    deleteCalls = 0;
    for (const stuck of [...hanging]) {
      hanging.delete(stuck);
      stuck.destroy();
    }
    abandoned = 0;
  }

  function setFaults(more) {
    const unknown = Object.keys(more ?? {}).filter((name) => !(name in NO_FAULTS));
    if (unknown.length) throw new Error(`unknown fault ${unknown.join(', ')}; the faults are ${Object.keys(NO_FAULTS).join(', ')}`);
    faults = { ...faults, ...more };
    return { ...faults };
  }

  async function readJson(req) {
    let body = '';
    for await (const chunk of req) body += chunk;
    return body ? JSON.parse(body) : undefined;
  }

  async function control(req, url, res) {
    const input = await readJson(req);
    switch (`${req.method} ${url.pathname}`) {
      case 'POST /_fake/boxes':
        return json(res, 200, { ids: seed(input) });
      case 'POST /_fake/faults':
        return json(res, 200, setFaults(input));
      case 'POST /_fake/reset':
        reset();
        return json(res, 200, {});
      case 'GET /_fake/state':
        return json(res, 200, state());
      default:
        return boxError(res, 404, 'no such control route');
    }
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://fake');
    if (url.pathname.startsWith('/_fake/')) {
      control(req, url, res).catch((error) => boxError(res, 400, String(error.message ?? error)));
      return;
    }
    const authorized = req.headers['x-box-api-key'] === key;
    const headers = { ...req.headers };
    if ('x-box-api-key' in headers) headers['x-box-api-key'] = '<redacted>';
    requests.push({ method: req.method, path: url.pathname, query: url.search, headers, authorized });
    const go = () => serve(req, url, res, authorized).catch((error) => boxError(res, 400, String(error.message ?? error)));
    if (faults.latencyMs > 0) setTimeout(go, faults.latencyMs);
    else go();
  });

  async function serve(req, url, res, authorized) {
    const input = await readJson(req).catch(() => Symbol.for('bad json'));
    if (!authorized) return boxError(res, 401, 'unauthorized');
    if (input === Symbol.for('bad json')) return boxError(res, 400, 'invalid JSON body');
    const path = url.pathname;
    if (path === '/v2/box') {
      if (req.method === 'GET') return list(url, res);
      if (req.method === 'POST') return create(input ?? {}, res);
      if (req.method === 'DELETE') return deleteMany(input, res);
    }
    const one = path.match(/^\/v2\/box\/([^/]+)(\/status)?$/);
    if (one) {
      const id = decodeURIComponent(one[1]);
      if (req.method === 'GET' && !one[2]) {
        const box = resolve(id);
        return box ? json(res, 200, boxData(box)) : boxError(res, 404, NOT_FOUND);
      }
      if (req.method === 'GET') {
        const box = boxes.get(id);
        if (!box) return boxError(res, 404, NOT_FOUND);
        return live(box) ? json(res, 200, { status: box.status }) : boxError(res, 404, GONE);
      }
      if (req.method === 'DELETE' && !one[2]) return deleteOne(id, res);
    }
    const labels = path.match(/^\/v2\/box\/([^/]+)\/config\/labels(?:\/([^/]+))?$/);
    if (labels) {
      const box = boxes.get(decodeURIComponent(labels[1]));
      if (!box) return boxError(res, 404, NOT_FOUND);
      if (!live(box)) return boxError(res, 404, GONE);
      if (req.method === 'POST' && !labels[2]) return addLabel(box, input, res);
      if (req.method === 'DELETE' && labels[2]) {
        const label = decodeURIComponent(labels[2]);
        box.labels = box.labels.filter((l) => l !== label);
        box.updatedAt = nowSeconds();
        return json(res, 200, boxData(box));
      }
    }
    return boxError(res, 404, 'Not found');
  }

  await new Promise((ready) => server.listen(0, '127.0.0.1', ready));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    key,
    seed,
    setFaults,
    reset,
    state,
    close: () => new Promise((closed) => {
      for (const stuck of [...hanging]) {
        hanging.delete(stuck);
        stuck.destroy();
      }
      server.closeAllConnections();
      server.close(closed);
    }),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const at = process.argv.indexOf('--key');
  const fake = await startFakeUpstashBox({ key: at > 0 ? process.argv[at + 1] : DEFAULT_KEY });
  process.stdout.write(`${JSON.stringify({ url: fake.url })}\n`);
  // Serve until whoever started us closes our stdin (or exits).
  process.stdin.resume();
  process.stdin.on('end', () => fake.close().then(() => process.exit(0)));
}
