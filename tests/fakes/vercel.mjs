// A local fake of the Vercel Sandbox REST API calls sandbox-reclaim makes,
// written from the official SDK (npm `@vercel/sandbox` 3.5: `Sandbox.list`,
// `Sandbox.get`, `sandbox.delete`, `sandbox.stop`), Vercel's REST reference
// and Vercel's own in-memory mock (`@vercel/sandbox-mock`).
// tests/node/vercel-fake.test.mjs proves it faithful by driving the official
// SDK against it; the provider suites then test against it, faults included.
//
// Wire (the SDK's base URL is `https://vercel.com/api`; the same routes are
// served without the `/api` prefix, as `https://api.vercel.com` does):
// `Authorization: Bearer <token>` on every call, `teamId=` on every query
// (403 `{error: {code: "forbidden", message, invalidToken}}` otherwise);
// `GET /v2/sandboxes?project=&limit=&cursor=&tags=key:value&sortBy=&sortOrder=&namePrefix=`
// answering `{sandboxes, pagination: {count, next}}` (`next: null` on the
// last page); `GET /v2/sandboxes/{name}?projectId=` answering
// `{sandbox, session, routes}`; `DELETE /v2/sandboxes/{name}?projectId=`
// answering 200 `{sandbox}` (the sandbox is gone for good); and, for
// contrast, `POST /v2/sandboxes/sessions/{sessionId}/stop` answering
// `{session, sandbox}` (the sandbox stays, `stopped`). For the Python SDK
// (`vercel` 0.12: `SandboxClient.create_sandbox`, `update_sandbox`, as the
// OpenAI Agents SDK's Vercel client and ours call them): `POST
// /v3/sandboxes` (the body's `projectId`) answering `{sandbox, session, routes}` for a new
// sandbox, already `running`, with the body's `name` and `tags` (nothing
// inside it runs; 409 for a name that exists); `PATCH
// /v2/sandboxes/{name}?projectId=` replacing its `tags` when the body has
// them, answering `{sandbox, session, routes}`. Errors are
// `{error: {code, message}}`: 404 `not_found`, 429 with `Retry-After`, 500.
// Control routes under `/_fake/` seed sandboxes, set faults and read what
// happened; they need no token.
//
// Run as a program (`node tests/fakes/vercel.mjs [--token T] [--team T]
// [--project P]`) it prints one JSON line `{"url": ...}` and serves until
// stdin closes or it is killed.

import http from 'node:http';
import { createHash } from 'node:crypto';
import { pathToFileURL } from 'node:url';

export const DEFAULT_TOKEN = 'vercel_test_token';
export const DEFAULT_TEAM_ID = 'team_fake';
export const DEFAULT_PROJECT_ID = 'prj_fake';
export const STATUSES = ['pending', 'running', 'stopping', 'stopped', 'failed', 'aborted', 'snapshotting'];
const MAX_LIMIT = 50;
const DEFAULT_LIMIT = 20;
const NAME = /^[a-zA-Z0-9_-]{1,128}$/;

const NO_FAULTS = {
  failDeleteEvery: 0, // every Nth DELETE answers 500
  rateLimitDeletes: 0, // the next N DELETEs answer 429 with Retry-After
  retryAfterSeconds: 1,
  hangDeletes: false, // DELETEs never answer
  hangLists: false, // listings never answer
  malformedPage: 0, // page N (1-based) of every listing is not a sandbox array
  repeatAcrossPages: false, // each page after the first repeats the previous page's last item
  deletedStayListedMs: 0, // a deleted sandbox stays in listings this long, `stopped`
  latencyMs: 0, // every API answer waits this long (the benchmark's 20 ms per request)
};

function json(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body));
}

function vercelError(res, status, code, message, extra = {}, headers = {}) {
  json(res, status, { error: { code, message, ...extra } }, headers);
}

const notFound = (res, name) => vercelError(res, 404, 'not_found', `Sandbox not found: ${name}`);

function sessionId(name) {
  return `sbx_${createHash('sha256').update(name).digest('hex').slice(0, 24)}`;
}

function sandboxView(box) {
  const { name, persistent, region, vcpus, memory, runtime, timeout, createdAt, updatedAt, currentSessionId, status, statusUpdatedAt, cwd, tags } = box;
  return { name, persistent, region, vcpus, memory, runtime, timeout, createdAt, updatedAt, currentSessionId, status, statusUpdatedAt, cwd, tags };
}

function sessionView(box) {
  const stopped = box.status === 'stopped' || box.status === 'failed' || box.status === 'aborted';
  return {
    id: box.currentSessionId,
    memory: box.memory,
    vcpus: box.vcpus,
    region: box.region,
    runtime: box.runtime,
    timeout: box.timeout,
    status: box.status,
    requestedAt: box.createdAt,
    startedAt: box.createdAt,
    ...(stopped ? { requestedStopAt: box.statusUpdatedAt, stoppedAt: box.statusUpdatedAt, duration: box.statusUpdatedAt - box.createdAt } : {}),
    createdAt: box.createdAt,
    cwd: box.cwd,
    updatedAt: box.updatedAt,
  };
}

/** Starts a fake on 127.0.0.1 (a free port); resolves to its handle. */
export async function startFakeVercel({ token = DEFAULT_TOKEN, teamId = DEFAULT_TEAM_ID, projectId = DEFAULT_PROJECT_ID } = {}) {
  const sandboxes = new Map(); // name -> sandbox (exists: running or stopped alike)
  const deleted = new Map(); // name -> { sandbox, at }
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
    for (const item of list) {
      if (!NAME.test(item.name ?? '')) throw new Error(`sandbox name ${JSON.stringify(item.name)} is not ^[a-zA-Z0-9_-]{1,128}$`);
      const status = item.status ?? 'running';
      if (!STATUSES.includes(status)) throw new Error(`status ${status} is none of ${STATUSES.join(', ')}`);
      const createdAt = item.createdAt ?? Date.now() - 3_600_000; // Unix milliseconds, as Vercel sends them
      sandboxes.set(item.name, {
        name: item.name,
        persistent: item.persistent ?? true,
        region: item.region ?? 'iad1',
        vcpus: 2,
        memory: 4096,
        runtime: 'node24',
        timeout: 300_000,
        createdAt,
        updatedAt: createdAt,
        currentSessionId: sessionId(item.name),
        status,
        statusUpdatedAt: createdAt,
        cwd: '/vercel/sandbox',
        tags: item.tags ?? {},
      });
      deleted.delete(item.name);
    }
  }

  function listable(now) {
    const lagging = [...deleted.values()]
      .filter(({ at }) => now - at < faults.deletedStayListedMs)
      .map(({ sandbox }) => sandbox);
    return [...sandboxes.values(), ...lagging];
  }

  // The query must name the project the token may see (`project` on listings,
  // `projectId` on one sandbox), as a token, unlike an OIDC token, carries none.
  function wrongProject(res, given) {
    if (given === projectId) return false;
    if (!given) vercelError(res, 400, 'bad_request', 'projectId is required when not using an OIDC token');
    else vercelError(res, 404, 'not_found', `Project not found: ${given}`);
    return true;
  }

  function list(url, res) {
    const query = url.searchParams;
    if (wrongProject(res, query.get('project'))) return undefined;
    const limit = query.has('limit') ? Number(query.get('limit')) : DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) return vercelError(res, 400, 'bad_request', `limit must be an integer from 1 to ${MAX_LIMIT}`);
    const sortBy = query.get('sortBy') ?? 'createdAt';
    if (!['createdAt', 'name', 'statusUpdatedAt'].includes(sortBy)) return vercelError(res, 400, 'bad_request', `invalid sortBy: ${sortBy}`);
    const sortOrder = query.get('sortOrder') ?? 'desc';
    if (!['asc', 'desc'].includes(sortOrder)) return vercelError(res, 400, 'bad_request', `invalid sortOrder: ${sortOrder}`);
    const namePrefix = query.get('namePrefix');
    if (namePrefix !== null && sortBy !== 'name') return vercelError(res, 400, 'bad_request', 'namePrefix is only valid when sortBy=name');
    const tagFilters = query.getAll('tags');
    if (tagFilters.length > 1) return vercelError(res, 400, 'bad_request', 'Only one tag filter is supported');
    let tag = null;
    if (tagFilters.length === 1) {
      const at = tagFilters[0].indexOf(':');
      if (at < 1) return vercelError(res, 400, 'bad_request', 'tags must be "key:value"');
      tag = [tagFilters[0].slice(0, at), tagFilters[0].slice(at + 1)];
    }
    const cursor = query.get('cursor');
    const start = cursor === null ? 0 : Number(Buffer.from(cursor, 'base64url').toString());
    if (!Number.isInteger(start) || start < 0) return vercelError(res, 400, 'bad_request', 'invalid cursor');

    const direction = sortOrder === 'asc' ? 1 : -1;
    const matching = listable(Date.now())
      .filter((box) => (namePrefix === null || box.name.startsWith(namePrefix)) && (!tag || box.tags[tag[0]] === tag[1]))
      .sort((a, b) => {
        const primary = sortBy === 'name' ? a.name.localeCompare(b.name) : a[sortBy] - b[sortBy];
        return direction * (primary || a.name.localeCompare(b.name));
      });
    const page = Math.floor(start / limit) + 1;
    const next = start + limit < matching.length ? Buffer.from(String(start + limit)).toString('base64url') : null;
    if (faults.malformedPage === page) return json(res, 200, { sandboxes: 'not a list', pagination: { count: 0, next } });
    const from = faults.repeatAcrossPages && start > 0 ? start - 1 : start;
    const items = matching.slice(from, start + limit).map(sandboxView);
    return json(res, 200, { sandboxes: items, pagination: { count: items.length, next } });
  }

  function get(name, url, res) {
    if (wrongProject(res, url.searchParams.get('projectId'))) return undefined;
    const box = sandboxes.get(name);
    if (!box) return notFound(res, name);
    return json(res, 200, { sandbox: sandboxView(box), session: sessionView(box), routes: [] });
  }

  function destroy(name, url, res) {
    if (wrongProject(res, url.searchParams.get('projectId'))) return undefined;
    deletes += 1;
    if (faults.hangDeletes) return hang(res);
    if (faults.rateLimitDeletes > 0) {
      faults.rateLimitDeletes -= 1;
      return vercelError(res, 429, 'rate_limited', 'Rate limit exceeded', {}, { 'retry-after': String(faults.retryAfterSeconds) });
    }
    if (faults.failDeleteEvery > 0 && deletes % faults.failDeleteEvery === 0) {
      return vercelError(res, 500, 'internal_server_error', 'An unexpected internal error occurred');
    }
    const box = sandboxes.get(name);
    if (!box) return notFound(res, name);
    // Vercel stops a running sandbox, then deletes it and all its sessions.
    const now = Date.now();
    const gone = { ...box, status: 'stopped', statusUpdatedAt: now, updatedAt: now };
    sandboxes.delete(name);
    deleted.set(name, { sandbox: gone, at: now });
    return json(res, 200, { sandbox: sandboxView(gone) });
  }

  async function readJson(req) {
    let body = '';
    for await (const chunk of req) body += chunk;
    return body ? JSON.parse(body) : {};
  }

  async function create(req, url, res) {
    const input = await readJson(req);
    if (wrongProject(res, input.projectId ?? url.searchParams.get('projectId'))) return undefined;
    const name = input.name ?? `sbx-${Math.random().toString(36).slice(2, 12)}`;
    if (sandboxes.has(name)) return vercelError(res, 409, 'conflict', `Sandbox already exists: ${name}`);
    seed([{ name, tags: input.tags ?? {}, persistent: input.persistent ?? true, createdAt: Date.now() }]);
    const box = sandboxes.get(name);
    return json(res, 200, { sandbox: sandboxView(box), session: sessionView(box), routes: [] });
  }

  async function update(req, name, url, res) {
    const input = await readJson(req);
    if (wrongProject(res, url.searchParams.get('projectId'))) return undefined;
    const box = sandboxes.get(name);
    if (!box) return notFound(res, name);
    if (input.tags) Object.assign(box, { tags: { ...input.tags }, updatedAt: Date.now() });
    return json(res, 200, { sandbox: sandboxView(box), session: sessionView(box), routes: [] });
  }

  function stop(id, res) {
    const box = [...sandboxes.values()].find((candidate) => candidate.currentSessionId === id);
    if (!box) return vercelError(res, 404, 'not_found', `Session not found: ${id}`);
    if (box.status === 'running' || box.status === 'pending') {
      const now = Date.now();
      Object.assign(box, { status: 'stopped', statusUpdatedAt: now, updatedAt: now });
    }
    return json(res, 200, { session: sessionView(box), sandbox: sandboxView(box) });
  }

  async function control(req, url, res) {
    let body = '';
    for await (const chunk of req) body += chunk;
    const input = body ? JSON.parse(body) : undefined;
    switch (`${req.method} ${url.pathname}`) {
      case 'POST /_fake/sandboxes':
        seed(input);
        return json(res, 200, { alive: sandboxes.size });
      case 'POST /_fake/faults':
        faults = { ...faults, ...input };
        return json(res, 200, faults);
      case 'POST /_fake/reset':
        sandboxes.clear();
        deleted.clear();
        requests.length = 0;
        faults = { ...NO_FAULTS };
        deletes = 0;
        for (const stuck of [...hanging]) {
          hanging.delete(stuck);
          stuck.destroy();
        }
        abandoned = 0;
        return json(res, 200, {});
      case 'GET /_fake/state':
        return json(res, 200, state());
      default:
        return vercelError(res, 404, 'not_found', 'no such control route');
    }
  }

  function state() {
    const statuses = Object.fromEntries([...sandboxes.values()].map((box) => [box.name, box.status]));
    return { alive: [...sandboxes.keys()].sort(), deleted: [...deleted.keys()].sort(), statuses, requests: [...requests], abandoned };
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://fake');
    if (url.pathname.startsWith('/_fake/')) {
      control(req, url, res).catch((error) => vercelError(res, 400, 'bad_request', String(error)));
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
    const auth = req.headers.authorization;
    if (!auth) return vercelError(res, 403, 'forbidden', 'Not authorized', { missingToken: true });
    if (auth !== `Bearer ${token}`) return vercelError(res, 403, 'forbidden', 'Not authorized', { invalidToken: true });
    if (url.searchParams.get('teamId') !== teamId) return vercelError(res, 403, 'forbidden', 'Not authorized');

    const path = url.pathname.replace(/^\/api(?=\/)/, '');
    const stopping = path.match(/^\/v2\/sandboxes\/sessions\/([^/]+)\/stop$/);
    const byName = path.match(/^\/v2\/sandboxes\/([^/]+)$/);
    if (req.method === 'GET' && path === '/v2/sandboxes') {
      if (faults.hangLists) return hang(res);
      return list(url, res);
    }
    if (stopping && req.method === 'POST') return stop(decodeURIComponent(stopping[1]), res);
    if (req.method === 'POST' && path === '/v3/sandboxes') {
      create(req, url, res).catch((error) => vercelError(res, 400, 'bad_request', String(error)));
      return undefined;
    }
    if (byName && req.method === 'PATCH' && byName[1] !== 'sessions' && byName[1] !== 'snapshots') {
      update(req, decodeURIComponent(byName[1]), url, res).catch((error) => vercelError(res, 400, 'bad_request', String(error)));
      return undefined;
    }
    if (byName && byName[1] !== 'sessions' && byName[1] !== 'snapshots') {
      const name = decodeURIComponent(byName[1]);
      if (req.method === 'GET') return get(name, url, res);
      if (req.method === 'DELETE') return destroy(name, url, res);
    }
    return vercelError(res, 404, 'not_found', `no route ${req.method} ${url.pathname}`);
  }
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    token,
    teamId,
    projectId,
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
  const fake = await startFakeVercel({
    token: flag('--token', DEFAULT_TOKEN),
    teamId: flag('--team', DEFAULT_TEAM_ID),
    projectId: flag('--project', DEFAULT_PROJECT_ID),
  });
  process.stdout.write(`${JSON.stringify({ url: fake.url })}\n`);
  // Serve until whoever started us closes our stdin (or exits).
  process.stdin.resume();
  process.stdin.on('end', () => fake.close().then(() => process.exit(0)));
}
