// A local fake of the Runloop devbox REST API calls sandbox-reclaim makes,
// written from the official SDKs (npm `@runloop/api-client` 1.32.0:
// `devboxes.list`, `retrieve`, `shutdown`; PyPI `runloop-api-client` 3.0.0,
// both Stainless-generated) and Runloop's API reference
// (docs/research/runloop.md). tests/node/vendor-sdks.test.mjs and
// tests/python/test_vendor_sdks.py prove it faithful by driving both SDKs
// against it (the Python one with strict response validation).
//
// Wire (the handle's `url` is the bare origin, as `https://api.runloop.ai`;
// HTTP/1.1 only, so the Node SDK needs `http2: false`):
// `Authorization: Bearer <key>` on every call (401 `{message}` otherwise);
// `GET /v1/devboxes?limit=&starting_after=&status=&include_total_count=`
// answering `{devboxes, has_more, total_count}` (`has_more` always sent; limit
// 1..5000, default 20; the cursor is the last item's id; oldest first, then by
// id); `GET /v1/devboxes/{id}` answering the DevboxView;
// `POST /v1/devboxes/{id}/shutdown[?force=]` answering 200 with the
// DevboxView, now `shutdown` (there is no delete: a shut-down devbox stays
// listed and gettable, `shutdown`, forever; shutting it down again answers 200
// unchanged). For the Python SDK's `devbox.create` and a session's suspend (as
// the OpenAI Agents SDK's Runloop client calls them): `POST /v1/devboxes`
// and `POST /v1/devboxes/create_and_await_running` (SDK 3.0's create) answering the new DevboxView, already `running`, with the body's `name` and
// `metadata` (nothing inside it runs); `POST /v1/devboxes/{id}/suspend`
// (`suspended`: still listed, still billed); `POST /v1/devboxes/{id}/resume`
// (as the Agents SDK's `resume` reattaches a suspended devbox: `running`
// again; a shut-down one answers 400 and stays); `POST
// /v1/devboxes/{id}/wait_for_status` answering the DevboxView as it is now.
// Errors are `{message}`: 404 for an unknown id, 429 with
// `Retry-After`, 500, 400 for a bad query. Control routes under `/_fake/` seed
// devboxes, set faults and read what happened; they need no key.
//
// Run as a program (`node tests/fakes/runloop.mjs [--key K]`) it prints one
// JSON line `{"url": ...}` and serves until stdin closes or it is killed.

import http from 'node:http';
import { pathToFileURL } from 'node:url';

export const DEFAULT_KEY = 'runloop_test_key';
/** Every devbox status both SDKs declare. */
export const STATUSES = ['scheduled', 'queued', 'provisioning', 'initializing', 'running', 'suspending', 'suspended', 'resuming', 'failure', 'shutdown'];
const TERMINAL = ['shutdown', 'failure'];
const DEFAULT_LIMIT = 20;
const MAX_LIMIT = 5000;
const ID = /^[^/\s]{1,128}$/;

const NO_FAULTS = {
  failDeleteEvery: 0, // every Nth shutdown answers 500
  rateLimitDeletes: 0, // the next N shutdowns answer 429 with Retry-After
  retryAfterSeconds: 1,
  hangDeletes: false, // shutdowns never answer
  hangLists: false, // listings never answer
  malformedPage: 0, // page N (1-based) of every listing has `devboxes` that is not an array
  repeatAcrossPages: false, // each page after the first repeats the previous page's last item
  // (no deletedStayListedMs: a shut-down devbox stays listed forever anyway)
  cycleCursor: false, // page 2 ends with page 1's last item again and has_more: the cursor never moves on
  latencyMs: 0, // every API answer waits this long (the benchmark's 20 ms per request)
};

function json(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

const runloopError = (res, status, message, headers = {}) => json(res, status, { message }, headers);
const notFound = (res, id) => runloopError(res, 404, `Devbox ${id} not found`);

function devboxView(devbox) {
  return {
    id: devbox.id,
    name: devbox.name,
    status: devbox.status,
    create_time_ms: devbox.createTimeMs,
    end_time_ms: devbox.endTimeMs,
    metadata: { ...devbox.metadata },
    capabilities: [],
    launch_parameters: { resource_size_request: 'SMALL', keep_alive_time_seconds: 3600 },
    state_transitions: devbox.transitions.map((t) => ({ ...t })),
    blueprint_id: null,
    snapshot_id: null,
    failure_reason: devbox.status === 'failure' ? 'execution_failed' : null,
    shutdown_reason: devbox.shutdownReason,
    initiator_type: 'api',
    initiator_id: null,
  };
}

const compare = (a, b) => a.createTimeMs - b.createTimeMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** Starts a fake on 127.0.0.1 (a free port); resolves to its handle. */
export async function startFakeRunloop({ key = DEFAULT_KEY } = {}) {
  const devboxes = new Map(); // id -> devbox (a shut-down one stays)
  const shutDown = new Set(); // ids shut down through the API
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
    if (!Array.isArray(list)) throw new Error('seed takes an array of devboxes');
    const ready = list.map((item) => {
      if (!ID.test(item?.id ?? '')) throw new Error(`devbox id ${JSON.stringify(item?.id)} is not ${ID}`);
      const status = item.status ?? 'running';
      if (!STATUSES.includes(status)) throw new Error(`devbox ${item.id}: status ${JSON.stringify(status)} is none of ${STATUSES.join(', ')}`);
      const metadata = item.metadata ?? {};
      if (typeof metadata !== 'object' || Array.isArray(metadata) || Object.values(metadata).some((v) => typeof v !== 'string')) {
        throw new Error(`devbox ${item.id}: metadata must map strings to strings, got ${JSON.stringify(metadata)}`);
      }
      const createTimeMs = item.createTimeMs ?? Date.now() - 3_600_000;
      if (!Number.isInteger(createTimeMs)) throw new Error(`devbox ${item.id}: createTimeMs must be epoch milliseconds, got ${JSON.stringify(createTimeMs)}`);
      const transitions = [{ status: 'provisioning', transition_time_ms: createTimeMs, failure_reason: null }];
      if (status !== 'provisioning') transitions.push({ status, transition_time_ms: createTimeMs + 1000, failure_reason: null });
      return {
        id: item.id,
        name: item.name ?? null,
        status,
        createTimeMs,
        endTimeMs: TERMINAL.includes(status) ? createTimeMs + 1000 : null,
        metadata,
        transitions,
        shutdownReason: status === 'shutdown' ? 'api_shutdown' : null,
      };
    });
    for (const devbox of ready) {
      devboxes.set(devbox.id, devbox);
      shutDown.delete(devbox.id);
    }
  }

  function list(url, res) {
    const query = url.searchParams;
    let limit = DEFAULT_LIMIT;
    if (query.has('limit')) {
      limit = Number(query.get('limit'));
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) return runloopError(res, 400, `limit must be an integer from 1 to ${MAX_LIMIT}`);
    }
    const status = query.get('status');
    if (status !== null && !STATUSES.includes(status)) return runloopError(res, 400, `invalid status: ${status}`);
    const startingAfter = query.get('starting_after');
    let after = null;
    if (startingAfter) {
      after = devboxes.get(startingAfter);
      if (!after) return runloopError(res, 400, `invalid starting_after: ${startingAfter}`);
    }
    const matching = [...devboxes.values()].filter((devbox) => status === null || devbox.status === status).sort(compare);
    const rest = after ? matching.filter((devbox) => compare(devbox, after) > 0) : matching;
    const page = Math.floor((matching.length - rest.length) / limit) + 1;
    let items = rest.slice(0, limit);
    let hasMore = rest.length > limit;
    if (faults.cycleCursor && page === 2) {
      // The page ends where page 1 did, so the next cursor is this one again.
      items = [...rest.slice(0, limit - 1), after];
      hasMore = true;
    }
    const totalCount = query.get('include_total_count') === 'false' ? null : matching.length;
    if (faults.malformedPage === page) return json(res, 200, { devboxes: 'not a list', has_more: hasMore, total_count: totalCount });
    const repeated = faults.repeatAcrossPages && after && !faults.cycleCursor ? matching.filter((devbox) => devbox.id === after.id) : [];
    return json(res, 200, { devboxes: [...repeated, ...items].map(devboxView), has_more: hasMore, total_count: totalCount });
  }

  function shutdown(id, res) {
    deletes += 1;
    if (faults.hangDeletes) return hang(res);
    if (faults.rateLimitDeletes > 0) {
      faults.rateLimitDeletes -= 1;
      return runloopError(res, 429, 'Too many requests', { 'retry-after': String(faults.retryAfterSeconds) });
    }
    if (faults.failDeleteEvery > 0 && deletes % faults.failDeleteEvery === 0) return runloopError(res, 500, 'Internal server error');
    const devbox = devboxes.get(id);
    if (!devbox) return notFound(res, id);
    if (devbox.status !== 'shutdown') {
      const now = Date.now();
      Object.assign(devbox, { status: 'shutdown', endTimeMs: now, shutdownReason: 'api_shutdown' });
      devbox.transitions.push({ status: 'shutdown', transition_time_ms: now, failure_reason: null });
      shutDown.add(id);
    }
    return json(res, 200, devboxView(devbox));
  }

  let created = 0;

  async function readBody(req) {
    let body = '';
    for await (const chunk of req) body += chunk;
    return body ? JSON.parse(body) : {};
  }

  async function create(req, res) {
    const input = await readBody(req);
    created += 1;
    const id = `dbx_${String(created).padStart(6, '0')}${Math.random().toString(36).slice(2, 8)}`;
    seed([{ id, name: input.name ?? null, metadata: input.metadata ?? {}, createTimeMs: Date.now() }]);
    return json(res, 200, devboxView(devboxes.get(id)));
  }

  function suspend(id, res) {
    const devbox = devboxes.get(id);
    if (!devbox) return notFound(res, id);
    if (devbox.status !== 'suspended') {
      devbox.status = 'suspended';
      devbox.transitions.push({ status: 'suspended', transition_time_ms: Date.now(), failure_reason: null });
    }
    return json(res, 200, devboxView(devbox));
  }

  function resume(id, res) {
    const devbox = devboxes.get(id);
    if (!devbox) return notFound(res, id);
    if (TERMINAL.includes(devbox.status)) return runloopError(res, 400, `Devbox ${id} is ${devbox.status} and cannot be resumed`);
    if (devbox.status !== 'running') {
      devbox.status = 'running';
      devbox.transitions.push({ status: 'running', transition_time_ms: Date.now(), failure_reason: null });
    }
    return json(res, 200, devboxView(devbox));
  }

  function state() {
    const statuses = Object.fromEntries([...devboxes.values()].map((devbox) => [devbox.id, devbox.status]));
    const alive = [...devboxes.keys()].filter((id) => !shutDown.has(id));
    return { alive: alive.sort(), deleted: [...shutDown].sort(), statuses, requests: [...requests], abandoned };
  }

  function reset() {
    devboxes.clear();
    shutDown.clear();
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
        return runloopError(res, 404, 'no such control route');
    }
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://fake');
    if (url.pathname.startsWith('/_fake/')) {
      control(req, url, res).catch((error) => runloopError(res, 400, String(error)));
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
    if (req.headers.authorization !== `Bearer ${key}`) return runloopError(res, 401, 'Unauthorized: invalid API key');
    if (req.method === 'GET' && url.pathname === '/v1/devboxes') {
      if (faults.hangLists) return hang(res);
      return list(url, res);
    }
    const byId = url.pathname.match(/^\/v1\/devboxes\/([^/]+)$/);
    if (byId && req.method === 'GET') {
      const id = decodeURIComponent(byId[1]);
      const devbox = devboxes.get(id);
      return devbox ? json(res, 200, devboxView(devbox)) : notFound(res, id);
    }
    const stopping = url.pathname.match(/^\/v1\/devboxes\/([^/]+)\/shutdown$/);
    if (stopping && req.method === 'POST') {
      // No body is read: the SDKs send none (`force` rides the query).
      req.resume();
      return shutdown(decodeURIComponent(stopping[1]), res);
    }
    if (req.method === 'POST' && (url.pathname === '/v1/devboxes' || url.pathname === '/v1/devboxes/create_and_await_running')) {
      create(req, res).catch((error) => runloopError(res, 400, String(error)));
      return undefined;
    }
    const action = url.pathname.match(/^\/v1\/devboxes\/([^/]+)\/(suspend|resume|wait_for_status)$/);
    if (action && req.method === 'POST') {
      req.resume();
      const id = decodeURIComponent(action[1]);
      if (action[2] === 'suspend') return suspend(id, res);
      if (action[2] === 'resume') return resume(id, res);
      const devbox = devboxes.get(id);
      return devbox ? json(res, 200, devboxView(devbox)) : notFound(res, id);
    }
    return runloopError(res, 404, `no route ${req.method} ${url.pathname}`);
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
  const fake = await startFakeRunloop({ key: at > 0 ? process.argv[at + 1] : DEFAULT_KEY });
  process.stdout.write(`${JSON.stringify({ url: fake.url })}\n`);
  // Serve until whoever started us closes our stdin (or exits).
  process.stdin.resume();
  process.stdin.on('end', () => fake.close().then(() => process.exit(0)));
}
