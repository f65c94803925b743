// A local fake of the E2B REST API calls sandbox-reclaim makes, written from
// the official SDK (npm `e2b` 2.51: `Sandbox.list`, `getInfo`, `kill`) and
// E2B's OpenAPI spec. tests/node/e2b-fake.test.mjs proves it faithful by
// driving the official SDK against it; the Rust, Node, Python and command
// suites then test our E2bProvider against it, faults included.
//
// Wire: `X-API-KEY` auth (401 `{code, message}` otherwise);
// `GET /v2/sandboxes?metadata=&state=&limit=&nextToken=` (the next token in
// the `X-Next-Token` header); `GET /sandboxes/{id}`; `DELETE /sandboxes/{id}`
// (204, or 404 `{code, message}`); `POST /sandboxes` (the Python SDK's
// `AsyncSandbox.create`, as the OpenAI Agents SDK's E2B client calls it: 201
// with the new sandbox's id, running, keeping the body's `templateID` and
// `metadata`; nothing inside it runs); `POST /sandboxes/{id}/pause` (204: the
// sandbox is `paused`, still listed; 404 when gone); `POST
// /sandboxes/{id}/connect` (the SDK's `connect`, as the Agents SDK's `resume`
// reattaches: 200 with the sandbox for a running one, 201 for a paused one,
// now `running` again; 404 when gone). Control routes under `/_fake/` seed
// sandboxes, set faults and read what happened; they need no key.
//
// Run as a program (`node tests/fakes/e2b.mjs [--key KEY]`) it prints one
// JSON line `{"url": ...}` and serves until stdin closes or it is killed.

import http from 'node:http';
import { pathToFileURL } from 'node:url';

export const DEFAULT_KEY = 'e2b_test_key';
const MAX_LIMIT = 100;

const NO_FAULTS = {
  failDeleteEvery: 0, // every Nth DELETE answers 500
  failAliveOnly: false, // ...only when that sandbox is still alive
  rateLimitDeletes: 0, // the next N DELETEs answer 429 with Retry-After
  retryAfterSeconds: 1,
  hangDeletes: false, // DELETEs never answer
  hangLists: false, // listings never answer
  malformedPage: 0, // page N (1-based) of every listing is not a sandbox array
  repeatAcrossPages: false, // each page after the first repeats the previous page's last item
  deletedStayListedMs: 0, // a killed sandbox stays in listings this long
  latencyMs: 0, // every API answer waits this long (the benchmark's 20 ms per request)
};

function e2bError(res, status, message) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ code: status, message }));
}

function json(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

// The SDK encodes each side of `k=v` twice, then the pair as the value;
// E2B's server decodes all three (as URLSearchParams + decodeURIComponent do).
function metadataFilter(raw) {
  if (raw === null) return null;
  const filter = {};
  for (const [key, value] of new URLSearchParams(raw)) filter[decodeURIComponent(key)] = decodeURIComponent(value);
  return filter;
}

function listedView(sandbox) {
  const { sandboxID, templateID, alias, clientID, startedAt, endAt, cpuCount, memoryMB, diskSizeMB, envdVersion, metadata, state } = sandbox;
  return { sandboxID, templateID, alias, clientID, startedAt, endAt, cpuCount, memoryMB, diskSizeMB, envdVersion, metadata, state };
}

/**
 * Starts a fake on 127.0.0.1 (a free port); resolves to its handle.
 *
 * `acceptKey(apiKey)` decides which `X-API-KEY` values are let in (default:
 * exactly `key`), so a caller can give each client a key of its own and tell
 * their requests apart. `onDestroy(event)` is called for every DELETE as it
 * is served, with `{ at, id, apiKey, alive, status }`: epoch ms on this
 * process's clock, the sandbox id, the caller's key, whether the sandbox was
 * alive then, and the HTTP status answered (`null` for a hanging DELETE).
 * Both exist for the soak (tests/soak); the defaults change nothing.
 */
export async function startFakeE2b({ key = DEFAULT_KEY, acceptKey = (apiKey) => apiKey === key, onDestroy = null } = {}) {
  const sandboxes = new Map(); // id -> sandbox (alive)
  const deleted = new Map(); // id -> { sandbox, at }
  const requests = [];
  let faults = { ...NO_FAULTS };
  let deletes = 0;
  let created = 0;
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
      const startedAt = item.startedAt ?? new Date(Date.now() - 3_600_000).toISOString();
      sandboxes.set(item.sandboxID, {
        sandboxID: item.sandboxID,
        templateID: item.templateID ?? 'base',
        clientID: 'deprecated',
        startedAt,
        endAt: new Date(Date.parse(startedAt) + 86_400_000).toISOString(),
        cpuCount: 2,
        memoryMB: 512,
        diskSizeMB: 1024,
        envdVersion: '0.2.0',
        metadata: item.metadata ?? {},
        state: item.state ?? 'running',
        ...(item.alias ? { alias: item.alias } : {}),
      });
    }
  }

  function listable(now) {
    const lagging = [...deleted.values()]
      .filter(({ at }) => now - at < faults.deletedStayListedMs)
      .map(({ sandbox }) => sandbox);
    return [...sandboxes.values(), ...lagging].sort(
      (a, b) => a.startedAt.localeCompare(b.startedAt) || a.sandboxID.localeCompare(b.sandboxID),
    );
  }

  function list(url, res) {
    const limit = url.searchParams.has('limit') ? Number(url.searchParams.get('limit')) : MAX_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) return e2bError(res, 400, `limit must be between 1 and ${MAX_LIMIT}`);
    const filter = metadataFilter(url.searchParams.get('metadata'));
    const states = url.searchParams.get('state')?.split(',') ?? ['running', 'paused'];
    const token = url.searchParams.get('nextToken');
    const start = token === null ? 0 : Number(Buffer.from(token, 'base64url').toString());
    if (!Number.isInteger(start) || start < 0) return e2bError(res, 400, 'invalid next token');
    const matching = listable(Date.now()).filter(
      (sandbox) => states.includes(sandbox.state) && (!filter || Object.entries(filter).every(([k, v]) => sandbox.metadata[k] === v)),
    );
    const page = Math.floor(start / limit) + 1;
    if (faults.malformedPage === page) return json(res, 200, { sandboxes: 'not a list' });
    const from = faults.repeatAcrossPages && start > 0 ? start - 1 : start;
    const items = matching.slice(from, start + limit).map(listedView);
    const headers = start + limit < matching.length ? { 'x-next-token': Buffer.from(String(start + limit)).toString('base64url') } : {};
    json(res, 200, items, headers);
  }

  function destroy(id, apiKey, res) {
    deletes += 1;
    const report = (status) => onDestroy?.({ at: Date.now(), id, apiKey, alive: sandboxes.has(id), status });
    if (faults.hangDeletes) {
      report(null);
      return hang(res);
    }
    if (faults.rateLimitDeletes > 0) {
      faults.rateLimitDeletes -= 1;
      report(429);
      res.setHeader('retry-after', String(faults.retryAfterSeconds));
      return e2bError(res, 429, 'Rate limit exceeded');
    }
    const failing = faults.failDeleteEvery > 0 && deletes % faults.failDeleteEvery === 0;
    // `failAliveOnly`: a fault only where a real vendor could fail; a gone
    // sandbox answers 404, as E2B does, so a retried destroy cannot leave a
    // ledger entry behind for a sandbox already destroyed.
    if (failing && (!faults.failAliveOnly || sandboxes.has(id))) {
      report(500);
      return e2bError(res, 500, 'internal server error');
    }
    const sandbox = sandboxes.get(id);
    report(sandbox ? 204 : 404);
    if (!sandbox) return e2bError(res, 404, `sandbox "${id}" doesn't exist or you don't have access to it`);
    sandboxes.delete(id);
    deleted.set(id, { sandbox, at: Date.now() });
    res.writeHead(204);
    res.end();
  }

  async function create(req, res) {
    let body = '';
    for await (const chunk of req) body += chunk;
    const input = body ? JSON.parse(body) : {};
    created += 1;
    const sandboxID = `isb${String(created).padStart(6, '0')}${Math.random().toString(36).slice(2, 8)}`;
    const templateID = input.templateID ?? 'base';
    seed([{ sandboxID, templateID, metadata: input.metadata ?? {}, startedAt: new Date().toISOString() }]);
    json(res, 201, { sandboxID, templateID, clientID: 'deprecated', envdVersion: '0.2.0', envdAccessToken: 'fake-envd-token', domain: 'e2b.app' });
  }

  function snapshot() {
    return { alive: [...sandboxes.keys()].sort(), deleted: [...deleted.keys()].sort(), requests: [...requests], abandoned };
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
        created = 0;
        for (const stuck of [...hanging]) {
          hanging.delete(stuck);
          stuck.destroy();
        }
        abandoned = 0;
        return json(res, 200, {});
      case 'GET /_fake/state':
        return json(res, 200, snapshot());
      default:
        return e2bError(res, 404, 'no such control route');
    }
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://fake');
    if (url.pathname.startsWith('/_fake/')) {
      control(req, url, res).catch((error) => e2bError(res, 400, String(error)));
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
    if (!acceptKey(req.headers['x-api-key'])) return e2bError(res, 401, 'Invalid API key, please visit https://e2b.dev/docs/api-key');
    const byId = url.pathname.match(/^\/sandboxes\/([^/]+)$/);
    if (req.method === 'GET' && url.pathname === '/v2/sandboxes') {
      if (faults.hangLists) return hang(res);
      return list(url, res);
    }
    if (byId && req.method === 'GET') {
      const sandbox = sandboxes.get(decodeURIComponent(byId[1]));
      if (!sandbox) return e2bError(res, 404, `sandbox "${byId[1]}" doesn't exist or you don't have access to it`);
      return json(res, 200, { ...listedView(sandbox), domain: 'e2b.app' });
    }
    if (req.method === 'POST' && url.pathname === '/sandboxes') {
      create(req, res).catch((error) => e2bError(res, 400, String(error)));
      return undefined;
    }
    const pause = url.pathname.match(/^\/sandboxes\/([^/]+)\/pause$/);
    if (pause && req.method === 'POST') {
      const sandbox = sandboxes.get(decodeURIComponent(pause[1]));
      if (!sandbox) return e2bError(res, 404, `sandbox "${pause[1]}" doesn't exist or you don't have access to it`);
      sandbox.state = 'paused';
      res.writeHead(204);
      return res.end();
    }
    const connect = url.pathname.match(/^\/sandboxes\/([^/]+)\/connect$/);
    if (connect && req.method === 'POST') {
      req.resume();
      const sandbox = sandboxes.get(decodeURIComponent(connect[1]));
      if (!sandbox) return e2bError(res, 404, `sandbox "${connect[1]}" doesn't exist or you don't have access to it`);
      const resumed = sandbox.state === 'paused';
      sandbox.state = 'running';
      const { sandboxID, templateID, clientID, envdVersion } = sandbox;
      return json(res, resumed ? 201 : 200, { sandboxID, templateID, clientID, envdVersion, envdAccessToken: 'fake-envd-token', domain: 'e2b.app' });
    }
    if (byId && req.method === 'DELETE') return destroy(decodeURIComponent(byId[1]), req.headers['x-api-key'], res);
    return e2bError(res, 404, `no route ${req.method} ${url.pathname}`);
  }
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    key,
    seed,
    setFaults: (more) => { faults = { ...faults, ...more }; },
    state: snapshot,
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
  const fake = await startFakeE2b({ key: at > 0 ? process.argv[at + 1] : DEFAULT_KEY });
  process.stdout.write(`${JSON.stringify({ url: fake.url })}\n`);
  // Serve until whoever started us closes our stdin (or exits).
  process.stdin.resume();
  process.stdin.on('end', () => fake.close().then(() => process.exit(0)));
}
