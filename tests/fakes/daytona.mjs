// A local fake of the Daytona REST API calls sandbox-reclaim makes, written
// from the official SDK (npm `@daytonaio/sdk` 0.218: `Daytona.list`, `get`,
// `delete`; its generated `@daytona/api-client`) and Daytona's API server
// (apps/api, NestJS). tests/node/daytona-fake.test.mjs proves it faithful by
// driving the official SDK against it.
//
// Wire, all under the `/api` prefix (the handle's `url` already ends in it,
// as DAYTONA_API_URL does): `Authorization: Bearer <key>` (401 otherwise);
// `GET /sandbox?labels=<JSON>&limit=&cursor=&states=…` answering
// `{items, nextCursor}` (keyset pages, `nextCursor: null` on the last);
// `GET /sandbox/{idOrName}`; `DELETE /sandbox/{idOrName}` (200 with the
// sandbox, now `desiredState: destroyed`). For the Python SDK's
// `AsyncDaytona.create` and `AsyncSandbox.stop` (as the OpenAI Agents SDK's
// Daytona client calls them): `POST /sandbox` answering the new sandbox,
// already `started`, with the body's `name` and `labels` (nothing inside it
// runs); `POST /sandbox/{idOrName}/stop` (now `stopped`: still listed, still
// billed for its disk); `POST /sandbox/{idOrName}/start` (as the Agents SDK's
// `resume` restarts a stopped sandbox: `started` again, at once). Every error
// is Nest's `{path, timestamp, statusCode, error, message}`. Control routes under
// `/_fake/` (or `/api/_fake/`) seed sandboxes, set faults and read what
// happened; they need no key.
//
// Run as a program (`node tests/fakes/daytona.mjs [--key KEY]`) it prints one
// JSON line `{"url": ...}` and serves until stdin closes or it is killed.

import http from 'node:http';
import { STATUS_CODES } from 'node:http';
import { pathToFileURL } from 'node:url';

export const DEFAULT_KEY = 'dtn_test_key';
const PREFIX = '/api';
const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 200;

/** Every SandboxState the API client declares. */
export const STATES = [
  'creating', 'restoring', 'destroyed', 'destroying', 'started', 'stopped', 'starting', 'stopping',
  'error', 'build_failed', 'pending_build', 'building_snapshot', 'unknown', 'pulling_snapshot',
  'archived', 'archiving', 'resizing', 'snapshotting', 'forking', 'pausing', 'paused', 'resuming',
];
const LISTABLE_STATES = STATES.filter((state) => state !== 'destroyed');
const ERROR_STATES = ['error', 'build_failed'];
const SORT_FIELDS = { name: 'name', cpu: 'cpu', memoryGib: 'memory', diskGib: 'disk', lastActivityAt: 'lastActivityAt', createdAt: 'createdAt' };

const NO_FAULTS = {
  failDeleteEvery: 0, // every Nth DELETE answers 500
  rateLimitDeletes: 0, // the next N DELETEs answer 429 with a Retry-After header
  retryAfterSeconds: 1,
  // Daytona's throttlers are named, so @nestjs/throttler suffixes the header:
  // a throttled DELETE carries `Retry-After-sandbox-lifecycle`, not `Retry-After`.
  retryAfterHeader: 'retry-after-sandbox-lifecycle',
  hangDeletes: false, // DELETEs never answer
  hangLists: false, // listings never answer
  malformedPage: 0, // page N (1-based) of every listing has `items` that is not an array
  repeatAcrossPages: false, // each page after the first repeats the previous page's last item
  deletedStayListedMs: 0, // a deleted sandbox stays listed (and gettable) as `destroying` this long
  latencyMs: 0, // every API answer waits this long (the benchmark's 20 ms per request)
};

// Daytona's AllExceptionsFilter body.
function daytonaError(req, res, status, message, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ path: req.url, timestamp: new Date().toISOString(), statusCode: status, error: STATUS_CODES[status], message }));
}

function json(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

// The API's own mapping of (state, desiredState) to the state it reports.
function reportedState({ state, desiredState }) {
  if (state === 'started' && desiredState === 'stopped') return 'stopping';
  if ((state === 'started' || state === 'stopped') && desiredState === 'destroyed') return 'destroying';
  if (state === 'stopped' && desiredState === 'started') return 'starting';
  if (state === 'stopped' && desiredState === 'archived') return 'archiving';
  if (state === 'unknown' && desiredState === 'started') return 'creating';
  return state;
}

function listedView(sandbox) {
  const { id, organizationId, name, target, runnerId, snapshot, user, public: isPublic, networkBlockAll, cpu, gpu, memory, disk, labels, desiredState, errorReason, backupState, autoStopInterval, autoArchiveInterval, autoDeleteInterval, createdAt, updatedAt, lastActivityAt, daemonVersion, toolboxProxyUrl } = sandbox;
  return {
    id, organizationId, name, target, runnerId, sandboxClass: 'small', state: reportedState(sandbox), desiredState, snapshot, user,
    ...(errorReason ? { errorReason, recoverable: false } : {}),
    public: isPublic, networkBlockAll, cpu, gpu, memory, disk, labels, backupState,
    autoStopInterval, autoArchiveInterval, autoDeleteInterval, createdAt, updatedAt, lastActivityAt, daemonVersion, toolboxProxyUrl,
  };
}

function fullView(sandbox) {
  return { ...listedView(sandbox), env: {}, volumes: [], kvm: false };
}

const DESIRED_FOR = { started: 'started', stopped: 'stopped', archived: 'archived', paused: 'paused', destroyed: 'destroyed' };

/** Starts a fake on 127.0.0.1 (a free port); resolves to its handle. */
export async function startFakeDaytona({ key = DEFAULT_KEY } = {}) {
  const sandboxes = new Map(); // id -> sandbox; a deleted one keeps `deletedAt`
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
      const createdAt = item.createdAt ?? new Date(Date.now() - 3_600_000).toISOString();
      const state = item.state ?? 'started';
      sandboxes.set(item.id, {
        id: item.id,
        organizationId: 'org-fake',
        name: item.name ?? item.id,
        target: 'us',
        runnerId: 'runner-fake',
        snapshot: 'daytonaio/sandbox:0.4.3',
        user: 'daytona',
        public: false,
        networkBlockAll: false,
        cpu: 1,
        gpu: 0,
        memory: 1,
        disk: 3,
        labels: item.labels ?? {},
        state,
        desiredState: item.desiredState ?? DESIRED_FOR[state] ?? 'started',
        pending: item.pending ?? false,
        ...(ERROR_STATES.includes(state) ? { errorReason: item.errorReason ?? 'fake failure' } : {}),
        backupState: 'None',
        autoStopInterval: 15,
        autoArchiveInterval: 10080,
        autoDeleteInterval: -1,
        createdAt,
        updatedAt: createdAt,
        lastActivityAt: item.lastActivityAt ?? createdAt,
        daemonVersion: '0.4.3',
        toolboxProxyUrl: 'https://proxy.app.daytona.io/toolbox',
      });
    }
  }

  // What the API still finds: never `destroyed`, never an errored sandbox
  // already marked for destruction; a deleted one only while it lags.
  function visible(sandbox, now) {
    if (sandbox.deletedAt !== undefined) return !ERROR_STATES.includes(sandbox.state) && now - sandbox.deletedAt < faults.deletedStayListedMs;
    return sandbox.state !== 'destroyed' && !(ERROR_STATES.includes(sandbox.state) && sandbox.desiredState === 'destroyed');
  }

  function find(idOrName, now) {
    const byId = sandboxes.get(idOrName);
    if (byId && visible(byId, now)) return byId;
    return [...sandboxes.values()].find((sandbox) => sandbox.name === idOrName && visible(sandbox, now));
  }

  function list(req, url, res) {
    const params = url.searchParams;
    let limit = DEFAULT_LIMIT;
    if (params.has('limit')) {
      limit = Number(params.get('limit'));
      const problems = [];
      if (!Number.isInteger(limit)) problems.push('limit must be an integer number');
      if (!(limit >= 1)) problems.push('limit must not be less than 1');
      if (!(limit <= MAX_LIMIT)) problems.push(`limit must not be greater than ${MAX_LIMIT}`);
      if (problems.length) return daytonaError(req, res, 400, problems.join(', '));
    }
    let labels = null;
    if (params.has('labels')) {
      try {
        labels = JSON.parse(params.get('labels'));
      } catch {
        return daytonaError(req, res, 400, 'Invalid labels JSON format');
      }
    }
    const asked = [...params.getAll('states'), ...params.getAll('states[]')];
    if (asked.some((state) => !LISTABLE_STATES.includes(state))) {
      return daytonaError(req, res, 400, `each value must be one of the following values: ${LISTABLE_STATES.join(', ')}`);
    }
    const states = asked.length ? asked : LISTABLE_STATES;
    const includeErroredDeleted = params.get('includeErroredDeleted') === 'true';
    const sort = params.get('sort') ?? 'lastActivityAt';
    if (!(sort in SORT_FIELDS)) return daytonaError(req, res, 400, `sort must be one of the following values: ${Object.keys(SORT_FIELDS).join(', ')}`);
    const order = params.get('order') ?? 'desc';
    if (order !== 'asc' && order !== 'desc') return daytonaError(req, res, 400, 'order must be one of the following values: asc, desc');

    // The cursor is opaque to clients; this one is base64 JSON of the last
    // item's sort key (as Daytona's is), plus the page it ended.
    let after = null;
    const cursor = params.get('cursor');
    if (cursor) {
      try {
        after = JSON.parse(Buffer.from(cursor, 'base64').toString());
        if (typeof after?.id !== 'string' || !Number.isInteger(after.page)) throw new Error();
      } catch {
        return daytonaError(req, res, 400, `Invalid cursor provided: ${cursor}`);
      }
    }

    const now = Date.now();
    const field = SORT_FIELDS[sort];
    const sign = order === 'asc' ? 1 : -1;
    const compare = (a, b) => {
      const [x, y] = [a.sortValue, b.sortValue];
      const byValue = typeof x === 'number' ? x - y : String(x).localeCompare(String(y));
      return sign * (byValue || a.id.localeCompare(b.id));
    };
    const keyOf = (sandbox) => ({ sortValue: sandbox[field], id: sandbox.id });
    const matching = [...sandboxes.values()]
      .filter((sandbox) => visible(sandbox, now))
      .filter((sandbox) => {
        const state = reportedState(sandbox);
        if (!states.includes(state)) return false;
        if (ERROR_STATES.includes(state) && sandbox.desiredState === 'destroyed' && !includeErroredDeleted) return false;
        if (labels === null) return true;
        if (typeof labels !== 'object' || Array.isArray(labels)) return false;
        return Object.entries(labels).every(([k, v]) => sandbox.labels[k] === v);
      })
      .sort((a, b) => compare(keyOf(a), keyOf(b)));

    const page = after ? after.page + 1 : 1;
    if (faults.malformedPage === page) return json(res, 200, { items: 'not a list', nextCursor: null });
    const rest = after ? matching.filter((sandbox) => compare(keyOf(sandbox), after) > 0) : matching;
    const items = rest.slice(0, limit);
    const repeated = faults.repeatAcrossPages && after ? matching.filter((sandbox) => sandbox.id === after.id) : [];
    const last = items.at(-1);
    const nextCursor = rest.length > limit ? Buffer.from(JSON.stringify({ ...keyOf(last), page })).toString('base64') : null;
    json(res, 200, { items: [...repeated, ...items].map(listedView), nextCursor });
  }

  function destroy(req, idOrName, res) {
    deletes += 1;
    if (faults.hangDeletes) return hang(res);
    if (faults.rateLimitDeletes > 0) {
      faults.rateLimitDeletes -= 1;
      return daytonaError(req, res, 429, 'ThrottlerException: Too Many Requests', { [faults.retryAfterHeader]: String(faults.retryAfterSeconds) });
    }
    if (faults.failDeleteEvery > 0 && deletes % faults.failDeleteEvery === 0) return daytonaError(req, res, 500, 'An unexpected error occurred.');
    const now = Date.now();
    const sandbox = find(idOrName, now);
    if (!sandbox) return daytonaError(req, res, 404, `Sandbox with ID or name ${idOrName} not found`);
    if (sandbox.pending && sandbox.state !== 'pending_build') return daytonaError(req, res, 409, 'Sandbox state change in progress');
    // A soft delete: marked for destruction and renamed, then `destroying`
    // until the runner is done (here: deletedStayListedMs later).
    const shown = fullView({ ...sandbox, desiredState: 'destroyed' });
    Object.assign(sandbox, {
      deletedAt: now,
      pending: true,
      desiredState: 'destroyed',
      name: `DESTROYED_${sandbox.name}_${now}`,
      state: ERROR_STATES.includes(sandbox.state) ? sandbox.state : 'destroying',
      updatedAt: new Date(now).toISOString(),
    });
    json(res, 200, { ...shown, name: sandbox.name });
  }

  let created = 0;

  async function create(req, res) {
    let body = '';
    for await (const chunk of req) body += chunk;
    const input = body ? JSON.parse(body) : {};
    created += 1;
    const id = `fake-${String(created).padStart(6, '0')}-${Math.random().toString(36).slice(2, 10)}`;
    const now = new Date().toISOString();
    seed([{ id, name: input.name ?? id, labels: input.labels ?? {}, createdAt: now }]);
    return json(res, 200, fullView(sandboxes.get(id)));
  }

  function stopOrStart(req, idOrName, res, state) {
    const sandbox = find(idOrName, Date.now());
    if (!sandbox) return daytonaError(req, res, 404, `Sandbox with ID or name ${idOrName} not found`);
    Object.assign(sandbox, { state, desiredState: state, updatedAt: new Date().toISOString() });
    return json(res, 200, fullView(sandbox));
  }

  function snapshot() {
    const all = [...sandboxes.values()];
    return {
      alive: all.filter((s) => s.deletedAt === undefined).map((s) => s.id).sort(),
      deleted: all.filter((s) => s.deletedAt !== undefined).map((s) => s.id).sort(),
      abandoned,
    };
  }

  async function control(req, path, res) {
    let body = '';
    for await (const chunk of req) body += chunk;
    const input = body ? JSON.parse(body) : undefined;
    switch (`${req.method} ${path}`) {
      case 'POST /_fake/sandboxes':
        seed(input);
        return json(res, 200, { alive: snapshot().alive.length });
      case 'POST /_fake/faults':
        faults = { ...faults, ...input };
        return json(res, 200, faults);
      case 'POST /_fake/reset':
        sandboxes.clear();
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
        return json(res, 200, { ...snapshot(), requests });
      default:
        return daytonaError(req, res, 404, 'no such control route');
    }
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://fake');
    const controlPath = url.pathname.match(/^(?:\/api)?(\/_fake\/.*)$/);
    if (controlPath) {
      control(req, controlPath[1], res).catch((error) => daytonaError(req, res, 400, String(error)));
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
    if (!url.pathname.startsWith(`${PREFIX}/`)) return daytonaError(req, res, 404, `Cannot ${req.method} ${url.pathname}`);
    if (req.headers.authorization !== `Bearer ${key}`) return daytonaError(req, res, 401, 'Invalid credentials');
    const path = url.pathname.slice(PREFIX.length);
    const byId = path.match(/^\/sandbox\/([^/]+)$/);
    if (req.method === 'GET' && path === '/sandbox') {
      if (faults.hangLists) return hang(res);
      return list(req, url, res);
    }
    if (byId && req.method === 'GET') {
      const idOrName = decodeURIComponent(byId[1]);
      const sandbox = find(idOrName, Date.now());
      if (!sandbox) return daytonaError(req, res, 404, `Sandbox with ID or name ${idOrName} not found`);
      return json(res, 200, fullView(sandbox));
    }
    if (byId && req.method === 'DELETE') return destroy(req, decodeURIComponent(byId[1]), res);
    if (req.method === 'POST' && path === '/sandbox') {
      create(req, res).catch((error) => daytonaError(req, res, 400, String(error)));
      return undefined;
    }
    const power = path.match(/^\/sandbox\/([^/]+)\/(stop|start)$/);
    if (power && req.method === 'POST') {
      req.resume();
      return stopOrStart(req, decodeURIComponent(power[1]), res, power[2] === 'start' ? 'started' : 'stopped');
    }
    return daytonaError(req, res, 404, `Cannot ${req.method} ${url.pathname}`);
  }
  // The SDK's event socket (socket.io at `/api/socket.io/`) is not served.
  server.on('upgrade', (req, socket) => socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n'));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}${PREFIX}`;
  return {
    url,
    key,
    seed,
    setFaults: (more) => { faults = { ...faults, ...more }; },
    state: () => ({ ...snapshot(), requests: [...requests] }),
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
  const fake = await startFakeDaytona({ key: at > 0 ? process.argv[at + 1] : DEFAULT_KEY });
  process.stdout.write(`${JSON.stringify({ url: fake.url })}\n`);
  // Serve until whoever started us closes our stdin (or exits).
  process.stdin.resume();
  process.stdin.on('end', () => fake.close().then(() => process.exit(0)));
}
