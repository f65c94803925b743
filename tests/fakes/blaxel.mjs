// A local fake of the Blaxel control-plane sandbox API calls sandbox-reclaim
// makes, written from the official SDKs (npm `@blaxel/core` 0.3.21:
// `SandboxInstance.list`, `get`, `delete`; PyPI `blaxel` 0.4.24:
// `SyncSandboxInstance.*` and the generated `list_sandboxes`) and Blaxel's
// OpenAPI reference (docs/research/blaxel.md). tests/node/vendor-sdks.test.mjs
// and tests/python/test_vendor_sdks.py prove it faithful by driving both SDKs
// against it.
//
// Wire, all under `/v0` (the handle's `url` is the bare origin; clients use
// `${url}/v0`, as `https://api.blaxel.ai/v0`): `X-Blaxel-Authorization:
// Bearer <key>` or `Authorization: Bearer <key>` (401
// `{code: 401, error: "Unauthorized", message}` otherwise) and
// `X-Blaxel-Workspace: <workspace>` or `?workspace=` (403 `{code: 403, ..}`
// otherwise); `GET /v0/sandboxes?limit=&cursor=&showTerminated=&status=&sort=`
// answering `{data, meta: {hasMore, nextCursor, total}}` with any
// `Blaxel-Version` header (`nextCursor: ""` on the last page; limit clamped to
// 1..200, default 50; sort `createdAt:desc` (the default), `createdAt:asc`,
// `name:asc`, `name:desc`, ties by name; TERMINATED ones only with
// `showTerminated=true`; `status=A,B` filters and wins over showTerminated)
// and, without the header, the documented legacy bare array of them all;
// `GET /v0/sandboxes/{name}` answering the Sandbox; `DELETE
// /v0/sandboxes/{name}` answering 200 with the Sandbox, now `DELETING`
// (then it is `TERMINATED`: gettable, listed only with showTerminated, for
// `terminatedRetentionMs`, 5 minutes unless set, and gone after; deleting it
// again answers 200 with it unchanged). A sandbox is keyed by
// `metadata.name`. For the Python SDK's `SandboxInstance.create_if_not_exists`
// (as the OpenAI Agents SDK's Blaxel client calls it): `POST
// /v0/sandboxes[?createIfNotExist=true]` with a Sandbox body answering 200
// with the new sandbox, `DEPLOYED`, keeping the body's `metadata.name` (one is
// made up when absent) and `metadata.labels` (nothing inside it runs); a name
// already alive answers that sandbox with `createIfNotExist=true`, else 409.
// Errors are `{code, error, message?}`: 404
// `{code: 404, error: "Sandbox not found"}`, 429 with `Retry-After`, 500, 400.
// Control routes under `/_fake/` seed sandboxes, set faults and read what
// happened; they need no key.
//
// Run as a program (`node tests/fakes/blaxel.mjs [--key K] [--workspace W]
// [--terminated-retention-ms MS]`) it prints one JSON line `{"url": ...}` and
// serves until stdin closes or it is killed.

import http from 'node:http';
import { pathToFileURL } from 'node:url';

export const DEFAULT_KEY = 'bl_test_key';
export const DEFAULT_WORKSPACE = 'fake-ws';
/** Every sandbox status both SDKs declare (the Python SDK refuses any other). */
export const STATUSES = [
  'DELETING', 'TERMINATED', 'FAILED', 'DEACTIVATED', 'DEACTIVATING', 'UPLOADING', 'BUILDING',
  'DEPLOYING', 'DEPLOYED', 'BUILT', 'ARCHIVING', 'ARCHIVED', 'UNARCHIVING',
];
const SORTS = ['createdAt:desc', 'createdAt:asc', 'name:asc', 'name:desc'];
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;
const NAME = /^[a-z0-9]([a-z0-9-]{0,47}[a-z0-9])?$/;
const PREFIX = '/v0';

const NO_FAULTS = {
  failDeleteEvery: 0, // every Nth DELETE answers 500
  rateLimitDeletes: 0, // the next N DELETEs answer 429 with Retry-After
  retryAfterSeconds: 1,
  hangDeletes: false, // DELETEs never answer
  hangLists: false, // listings never answer
  malformedPage: 0, // page N (1-based) of every listing has `data` that is not an array
  repeatAcrossPages: false, // each page after the first repeats the previous page's last item
  deletedStayListedMs: 0, // a deleted sandbox stays DELETING (listed, gettable) this long, then TERMINATED
  cycleCursor: false, // page 2's nextCursor is the cursor that led to page 2: the cursors cycle forever
  latencyMs: 0, // every API answer waits this long (the benchmark's 20 ms per request)
};

function json(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

// The control plane's `Error` schema: `code` is the HTTP status.
function blaxelError(res, status, error, message, headers = {}) {
  json(res, status, { code: status, error, ...(message === undefined ? {} : { message }) }, headers);
}

const notFound = (res) => blaxelError(res, 404, 'Sandbox not found');
const badRequest = (res, message) => blaxelError(res, 400, 'Bad Request', message);

function toMillis(value, what) {
  const ms = typeof value === 'number' ? value : Date.parse(value);
  if (!Number.isFinite(ms)) throw new Error(`${what} ${JSON.stringify(value)} is neither epoch milliseconds nor an ISO date`);
  return ms;
}

const rfc3339 = (ms) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

function byName(a, b) {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function comparator(sort) {
  const [field, order] = sort.split(':');
  const sign = order === 'asc' ? 1 : -1;
  return (a, b) => sign * (field === 'name' ? byName(a, b) : a.createdAt - b.createdAt || byName(a, b));
}

/** Starts a fake on 127.0.0.1 (a free port); resolves to its handle. */
export async function startFakeBlaxel({ key = DEFAULT_KEY, workspace = DEFAULT_WORKSPACE, terminatedRetentionMs = 300_000 } = {}) {
  const sandboxes = new Map(); // name -> sandbox; a deleted one keeps `deletedAt` until its retention ends
  const requests = [];
  const initialFaults = { ...NO_FAULTS, terminatedRetentionMs };
  let faults = { ...initialFaults };
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
    if (!Array.isArray(list)) throw new Error('seed takes an array of sandboxes');
    const ready = list.map((item) => {
      if (!NAME.test(item?.name ?? '')) throw new Error(`sandbox name ${JSON.stringify(item?.name)} is not ${NAME}`);
      const status = item.status ?? 'DEPLOYED';
      if (!STATUSES.includes(status)) throw new Error(`sandbox ${item.name}: status ${JSON.stringify(status)} is none of ${STATUSES.join(', ')}`);
      const labels = item.labels ?? {};
      if (typeof labels !== 'object' || Array.isArray(labels) || Object.values(labels).some((v) => typeof v !== 'string')) {
        throw new Error(`sandbox ${item.name}: labels must map strings to strings, got ${JSON.stringify(labels)}`);
      }
      const createdAt = toMillis(item.createdAt ?? Date.now() - 3_600_000, `sandbox ${item.name}: createdAt`);
      return { name: item.name, labels, status, createdAt, updatedAt: createdAt };
    });
    for (const sandbox of ready) sandboxes.set(sandbox.name, sandbox);
  }

  // What the vendor shows now: undefined once a deleted sandbox's retention is over.
  function current(sandbox, now) {
    if (sandbox.deletedAt === undefined) return sandbox;
    const since = now - sandbox.deletedAt;
    if (since < faults.deletedStayListedMs) return { ...sandbox, status: 'DELETING' };
    if (since < faults.deletedStayListedMs + faults.terminatedRetentionMs) return { ...sandbox, status: 'TERMINATED' };
    return undefined;
  }

  function find(name, now) {
    const sandbox = sandboxes.get(name);
    return sandbox && current(sandbox, now);
  }

  function view(sandbox) {
    return {
      metadata: {
        name: sandbox.name,
        displayName: sandbox.name,
        labels: { ...sandbox.labels },
        createdAt: rfc3339(sandbox.createdAt),
        updatedAt: rfc3339(sandbox.updatedAt),
        createdBy: 'fake-user',
        updatedBy: 'fake-user',
        url: `https://sbx-${sandbox.name}-${workspace}.bl.run`,
        workspace,
      },
      spec: {
        enabled: true,
        runtime: { image: 'blaxel/base-image:latest', memory: 4096 },
        lifecycle: { terminatedRetention: `${Math.round(faults.terminatedRetentionMs / 1000)}s` },
      },
      status: sandbox.status,
      state: 'RUNNING',
    };
  }

  function list(req, url, res) {
    const query = url.searchParams;
    let statuses = null;
    if (query.get('status')) {
      statuses = query.get('status').split(',');
      const unknown = statuses.filter((status) => !STATUSES.includes(status));
      if (unknown.length) return badRequest(res, `invalid status: ${unknown.join(',')}`);
    }
    const showTerminated = query.get('showTerminated') === 'true';
    const sort = query.get('sort') ?? 'createdAt:desc';
    if (!SORTS.includes(sort)) return badRequest(res, `sort must be one of ${SORTS.join(', ')}`);
    const now = Date.now();
    const shown = [...sandboxes.values()].map((sandbox) => current(sandbox, now)).filter(Boolean);
    const total = shown.filter((sandbox) => sandbox.status !== 'TERMINATED').length;
    const order = comparator(sort);
    const matching = shown
      .filter((sandbox) => (statuses ? statuses.includes(sandbox.status) : showTerminated || sandbox.status !== 'TERMINATED'))
      .sort(order);
    if (!req.headers['blaxel-version']) return json(res, 200, matching.map(view)); // the legacy, unpaged answer

    let limit = DEFAULT_LIMIT;
    if (query.has('limit')) {
      limit = Number(query.get('limit'));
      if (!Number.isInteger(limit)) return badRequest(res, 'limit must be an integer');
      limit = Math.min(Math.max(limit, 1), MAX_LIMIT);
    }
    // The cursor is opaque: base64url JSON of the last item's sort key, the
    // page it ended and the sort it belongs to.
    let after = null;
    const cursor = query.get('cursor');
    if (cursor) {
      try {
        after = JSON.parse(Buffer.from(cursor, 'base64url').toString());
        if (typeof after?.name !== 'string' || !Number.isFinite(after.createdAt) || !Number.isInteger(after.page)) throw new Error();
      } catch {
        return badRequest(res, 'invalid cursor');
      }
      if (after.sort !== sort) return badRequest(res, 'cursor does not match the query');
    }
    const rest = after ? matching.filter((sandbox) => order(sandbox, after) > 0) : matching;
    const page = after ? after.page + 1 : 1;
    const items = rest.slice(0, limit);
    let hasMore = rest.length > limit;
    let nextCursor = hasMore
      ? Buffer.from(JSON.stringify({ name: items.at(-1).name, createdAt: items.at(-1).createdAt, page, sort })).toString('base64url')
      : '';
    if (faults.cycleCursor && page === 2) {
      hasMore = true;
      nextCursor = cursor;
    }
    const meta = { hasMore, nextCursor, total };
    if (faults.malformedPage === page) return json(res, 200, { data: 'not a list', meta });
    const repeated = faults.repeatAcrossPages && after ? matching.filter((sandbox) => sandbox.name === after.name) : [];
    return json(res, 200, { data: [...repeated, ...items].map(view), meta });
  }

  function destroy(name, res) {
    deletes += 1;
    if (faults.hangDeletes) return hang(res);
    if (faults.rateLimitDeletes > 0) {
      faults.rateLimitDeletes -= 1;
      return blaxelError(res, 429, 'Too Many Requests', 'Rate limit exceeded', { 'retry-after': String(faults.retryAfterSeconds) });
    }
    if (faults.failDeleteEvery > 0 && deletes % faults.failDeleteEvery === 0) return blaxelError(res, 500, 'Internal Server Error');
    const now = Date.now();
    const shown = find(name, now);
    if (!shown) return notFound(res);
    if (shown.deletedAt !== undefined || shown.status === 'TERMINATED') return json(res, 200, view(shown));
    const sandbox = sandboxes.get(name);
    Object.assign(sandbox, { deletedAt: now, updatedAt: now });
    return json(res, 200, view({ ...sandbox, status: 'DELETING' }));
  }

  let created = 0;

  async function create(req, url, res) {
    let body = '';
    for await (const chunk of req) body += chunk;
    const input = body ? JSON.parse(body) : {};
    created += 1;
    const name = input.metadata?.name ?? `sbx-made-${created}`;
    const existing = find(name, Date.now());
    if (existing && existing.deletedAt === undefined && existing.status !== 'TERMINATED') {
      if (url.searchParams.get('createIfNotExist') === 'true') return json(res, 200, view(existing));
      return blaxelError(res, 409, 'Conflict', `sandbox ${name} already exists`);
    }
    seed([{ name, labels: input.metadata?.labels ?? {}, createdAt: Date.now() }]);
    return json(res, 200, view(sandboxes.get(name)));
  }

  function state() {
    const now = Date.now();
    const all = [...sandboxes.values()];
    const statuses = Object.fromEntries(all.map((sandbox) => [sandbox.name, current(sandbox, now)?.status]).filter(([, status]) => status));
    return {
      alive: all.filter((s) => s.deletedAt === undefined).map((s) => s.name).sort(),
      deleted: all.filter((s) => s.deletedAt !== undefined).map((s) => s.name).sort(),
      statuses,
      requests: [...requests],
      abandoned,
    };
  }

  function reset() {
    sandboxes.clear();
    requests.length = 0;
    faults = { ...initialFaults };
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
        return json(res, 200, { alive: state().alive.length });
      case 'POST /_fake/faults':
        faults = { ...faults, ...input };
        return json(res, 200, faults);
      case 'POST /_fake/reset':
        reset();
        return json(res, 200, {});
      case 'GET /_fake/state':
        return json(res, 200, state());
      default:
        return blaxelError(res, 404, 'Not Found', 'no such control route');
    }
  }

  function authorized(req, url, res) {
    const bearer = req.headers['x-blaxel-authorization'] ?? req.headers.authorization;
    if (bearer !== `Bearer ${key}`) {
      blaxelError(res, 401, 'Unauthorized', bearer ? 'Invalid API key' : 'Missing authorization');
      return false;
    }
    const asked = req.headers['x-blaxel-workspace'] ?? url.searchParams.get('workspace');
    if (asked !== workspace) {
      blaxelError(res, 403, 'Forbidden', asked ? `No access to workspace ${asked}` : 'workspace is required');
      return false;
    }
    return true;
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
    if (!authorized(req, url, res)) return undefined;
    const path = url.pathname.startsWith(`${PREFIX}/`) ? url.pathname.slice(PREFIX.length) : null;
    if (req.method === 'GET' && path === '/sandboxes') {
      if (faults.hangLists) return hang(res);
      return list(req, url, res);
    }
    if (req.method === 'POST' && path === '/sandboxes') {
      create(req, url, res).catch((error) => badRequest(res, String(error)));
      return undefined;
    }
    const named = path?.match(/^\/sandboxes\/([^/]+)$/);
    if (named) {
      const name = decodeURIComponent(named[1]);
      if (req.method === 'GET') {
        const sandbox = find(name, Date.now());
        return sandbox ? json(res, 200, view(sandbox)) : notFound(res);
      }
      if (req.method === 'DELETE') return destroy(name, res);
    }
    return blaxelError(res, 404, 'Not Found', `no route ${req.method} ${url.pathname}`);
  }
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    key,
    workspace,
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
  const flag = (name, fallback) => {
    const at = process.argv.indexOf(name);
    return at > 0 ? process.argv[at + 1] : fallback;
  };
  const fake = await startFakeBlaxel({
    key: flag('--key', DEFAULT_KEY),
    workspace: flag('--workspace', DEFAULT_WORKSPACE),
    terminatedRetentionMs: Number(flag('--terminated-retention-ms', '300000')),
  });
  process.stdout.write(`${JSON.stringify({ url: fake.url })}\n`);
  // Serve until whoever started us closes our stdin (or exits).
  process.stdin.resume();
  process.stdin.on('end', () => fake.close().then(() => process.exit(0)));
}
