// A local fake of the Railway sandbox GraphQL calls sandbox-reclaim makes,
// written from the official SDK (npm `railway` 3.11.0: `Sandbox.list`,
// `Sandbox.connect`, `sandbox.destroy`, `Sandbox.create`), Railway's schema
// as its CLI ships it (railwayapp/cli `src/gql/schema.json`) and
// docs/research/railway.md. tests/node/railway-fake.test.mjs proves it
// faithful by driving the official SDK against it.
//
// Wire (the handle's `url` is the bare origin, where `/_fake/` lives; the
// SDK's endpoint is `endpoint` = `${url}/graphql/v2`, as
// `https://backboard.railway.com/graphql/v2`): every call is
// `POST /graphql/v2` with JSON `{query, variables, operationName?}` (the SDK
// sends no operationName). Auth: an account/workspace token as
// `Authorization: Bearer <token>` sees every environment the fake knows; a
// project token as `project-access-token: <token>` sees its one environment.
// Refusals are HTTP 200 with GraphQL errors, as Railway answers them: a
// wrong `project-access-token`, or the project token sent as a bearer token,
// answers "Project Token not found" (a `project-access-token` header decides
// alone when both are sent); a wrong or missing bearer token, or an
// environment the token cannot see (an unknown one included), answers
// "Not Authorized".
// Errors look like `{"errors":[{"message","locations","path","extensions":
// {"code"},"traceId"}],"data":…}`: `data` is null for the non-null root
// fields (`sandboxes`, `sandboxCreate`) and `{field: null}` for the nullable
// ones (`sandbox`, `sandboxDestroy`), so a client must read `errors` first.
//
// Dispatch: the GraphQL is not fully parsed. The fake finds the operation
// (by `operationName`, else the document's only operation), takes its root
// field (an alias is honoured; one root field per operation) and binds that
// field's arguments from `variables` (`$name`) or from a scalar literal. It
// knows four root fields, as the SDK's documents select them:
//   query    RailwaySandboxes       sandboxes(environmentId!, first, after, before, last)
//            → {edges: [{node}], pageInfo: {hasNextPage, endCursor}}
//   query    RailwaySandbox         sandbox(environmentId!, id!) → Sandbox | null
//   mutation RailwaySandboxDestroy  sandboxDestroy(id!, environmentId!) → Sandbox | null
//   mutation RailwaySandboxCreate   sandboxCreate(input: SandboxCreateInput!) → Sandbox
// Anything else answers 200 `{"errors":[{"message":"Cannot query field …"}]}`
// (a validation error: no `data`), as a GraphQL server does; a body that is
// not JSON or has no query answers 400. A Sandbox is always its seven schema
// fields `{id, status, networkIsolation, environmentId, region,
// idleTimeoutMinutes, createdAt}`; `createdAt` is ISO-8601 UTC with
// milliseconds (`2026-01-01T00:00:00.000Z`); ids are UUIDs; status is
// CREATING | RUNNING | DESTROYING | DESTROYED | FAILED.
//
// Paging is Pothos' relay offset connection (Railway's connection types are
// Pothos-named `QuerySandboxesConnection`): cursors are
// base64("OffsetConnection:<n>"), `first` defaults to 20 and is clamped to
// 100 (no error), a negative one is an error; oldest first, then by id. An
// offset cursor shifts when sandboxes vanish: list every page, then destroy.
// `edges[].cursor`, `pageInfo.startCursor` and `hasPreviousPage` are sent
// when the query names them.
//
// Lifecycle: a destroy answers the sandbox as DESTROYING; it becomes DESTROYED
// `destroyingMs` later (default 0: at once), and a DESTROYED sandbox is gone:
// unlisted, `sandbox: null`, and destroying it again answers the GraphQL error
// "Sandbox not found" (`destroyMissing: 'null'` answers `sandboxDestroy: null`
// instead; `tombstones: true` keeps DESTROYED sandboxes listed and gettable).
// A create answers RUNNING at once. Faults: see NO_FAULTS. 429s carry
// `Retry-After` (seconds). Control routes under `/_fake/` seed sandboxes, set
// faults and read what happened; they need no token, and the state never
// holds a token.
//
// Run as a program (`node tests/fakes/railway.mjs [--token T]
// [--project-token P] [--environment E]`) it prints one JSON line
// `{"url": ..., "endpoint": ...}` and serves until stdin closes or it is killed.

import http from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';

export const DEFAULT_TOKEN = 'railway_test_token';
export const DEFAULT_PROJECT_TOKEN = 'railway_project_token';
export const DEFAULT_ENVIRONMENT_ID = '6f9c1b2a-0000-4000-8000-00000000e001';
export const DEFAULT_REGION = 'us-west2';
export const GRAPHQL_PATH = '/graphql/v2';
/** Every sandbox status Railway's schema declares. */
export const STATUSES = ['CREATING', 'RUNNING', 'DESTROYING', 'DESTROYED', 'FAILED'];
export const NETWORK_ISOLATIONS = ['ISOLATED', 'PRIVATE'];
export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;
const OFFSET_PREFIX = 'OffsetConnection:';
const ID = /^[^\s]{1,128}$/;
const SEED_KEYS = ['id', 'environmentId', 'status', 'createdAt', 'region', 'networkIsolation', 'idleTimeoutMinutes', 'name', 'variables'];

export const NO_FAULTS = {
  failDestroyEvery: 0, // every Nth destroy answers the GraphQL error "Problem processing request"
  failDestroyStatus: 200, // ...under this HTTP status (500 makes it an HTTP failure too)
  rateLimitDestroys: 0, // the next N destroys answer 429 with Retry-After
  retryAfterSeconds: 1,
  hangDestroys: false, // destroys never answer
  hangLists: false, // listings never answer
  malformedPage: 0, // page N (1-based) of every listing has `edges` that is not an array
  repeatAcrossPages: false, // each page after the first starts with the previous page's last node
  cycleCursor: false, // page 2's endCursor is page 1's last cursor again, hasNextPage true: the cursor never moves on
  destroyingMs: 0, // a destroyed sandbox stays listed and gettable, DESTROYING, this long (a lagging list)
  destroyMissing: 'error', // destroying an unknown or DESTROYED sandbox: 'error' ("Sandbox not found") or 'null'
  tombstones: false, // DESTROYED sandboxes stay listed and gettable (TanStack: `connect` returns tombstones)
  latencyMs: 0, // every API answer waits this long
};

// Root fields: the operation type they live on and whether they are nullable.
const FIELDS = {
  sandboxes: { type: 'query', nullable: false },
  sandbox: { type: 'query', nullable: true },
  sandboxDestroy: { type: 'mutation', nullable: true },
  sandboxCreate: { type: 'mutation', nullable: false },
};

const json = (res, status, body, headers = {}) => {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body));
};

const encodeCursor = (offset) => Buffer.from(`${OFFSET_PREFIX}${offset}`).toString('base64');

/** A GraphQL failure the resolver (or validation) raises. */
class GraphQLFailure extends Error {
  constructor(message, code = 'INTERNAL_SERVER_ERROR', { validation = false } = {}) {
    super(message);
    this.code = code;
    this.validation = validation;
  }
}
const invalid = (message) => new GraphQLFailure(message, 'GRAPHQL_VALIDATION_FAILED', { validation: true });

// ------------------------------------------------------------ the document

/** Positions of `text` as GraphQL reports them (1-based line and column). */
function locate(text, at) {
  const before = text.slice(0, at).split(/\r\n|\r|\n/);
  return { line: before.length, column: before[before.length - 1].length + 1 };
}

/**
 * A small scanner: enough of GraphQL to find the operations, each one's root
 * fields (alias, name, arguments as raw values) and nothing more.
 */
function scan(query) {
  // Comments become spaces so positions stay those of the original text.
  const src = query.replace(/"""[\s\S]*?"""|"(?:[^"\\\n]|\\.)*"|#[^\n\r]*/g, (m) => (m.startsWith('#') ? ' '.repeat(m.length) : m));
  let i = 0;
  const skip = () => {
    while (i < src.length && /[\s,\ufeff]/.test(src[i])) i += 1;
  };
  const name = () => {
    skip();
    const m = /^[_A-Za-z][_0-9A-Za-z]*/.exec(src.slice(i));
    if (!m) return null;
    i += m[0].length;
    return m[0];
  };
  const fail = (what) => invalid(`Syntax Error: ${what} at ${JSON.stringify(src.slice(i, i + 20))}.`);
  // Skips a balanced (...), {...} or [...] group starting at src[i].
  const group = () => {
    const open = src[i];
    const close = { '(': ')', '{': '}', '[': ']' }[open];
    let depth = 0;
    while (i < src.length) {
      const c = src[i];
      if (c === '"') {
        const m = /^"""[\s\S]*?"""|^"(?:[^"\\\n]|\\.)*"/.exec(src.slice(i));
        if (!m) throw fail('Unterminated string');
        i += m[0].length;
        continue;
      }
      if (c === open) depth += 1;
      else if (c === close) {
        depth -= 1;
        if (depth === 0) {
          i += 1;
          return;
        }
      }
      i += 1;
    }
    throw fail(`Expected "${close}"`);
  };
  // A value: $var, "string", number, true/false/null, ENUM; lists/objects are kept raw.
  const value = () => {
    skip();
    if (src[i] === '$') {
      i += 1;
      return { variable: name() };
    }
    if (src[i] === '"') {
      const m = /^"(?:[^"\\\n]|\\.)*"/.exec(src.slice(i));
      if (!m) throw fail('Unterminated string');
      i += m[0].length;
      return { literal: JSON.parse(m[0]) };
    }
    const num = /^-?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(src.slice(i));
    if (num) {
      i += num[0].length;
      return { literal: Number(num[0]) };
    }
    if (src[i] === '[' || src[i] === '{') {
      const start = i;
      group();
      return { raw: src.slice(start, i) };
    }
    const word = name();
    if (word === null) throw fail('Expected a value');
    return { literal: word === 'true' ? true : word === 'false' ? false : word === 'null' ? null : word };
  };
  const directives = () => {
    skip();
    while (src[i] === '@') {
      i += 1;
      name();
      skip();
      if (src[i] === '(') group();
      skip();
    }
  };
  // The fields of a selection set starting at src[i] === '{'.
  const selections = () => {
    const fields = [];
    i += 1;
    for (;;) {
      skip();
      if (i >= src.length) throw fail('Expected "}"');
      if (src[i] === '}') {
        i += 1;
        return fields;
      }
      if (src.startsWith('...', i)) throw invalid('The fake serves no fragment spread or inline fragment on a root type.');
      const at = i;
      const first = name();
      if (first === null) throw fail('Expected a field');
      skip();
      let alias = null;
      let field = first;
      if (src[i] === ':') {
        i += 1;
        alias = first;
        field = name();
        if (field === null) throw fail('Expected a field name');
      }
      const args = {};
      skip();
      if (src[i] === '(') {
        i += 1;
        for (;;) {
          skip();
          if (src[i] === ')') {
            i += 1;
            break;
          }
          const arg = name();
          if (arg === null) throw fail('Expected an argument');
          skip();
          if (src[i] !== ':') throw fail('Expected ":"');
          i += 1;
          args[arg] = value();
        }
      }
      directives();
      skip();
      if (src[i] === '{') group();
      fields.push({ alias, field, args, at });
    }
  };
  const operations = [];
  for (;;) {
    skip();
    if (i >= src.length) break;
    const at = i;
    if (src[i] === '{') {
      operations.push({ type: 'query', name: null, fields: selections(), at });
      continue;
    }
    const keyword = name();
    if (keyword === 'fragment') {
      while (i < src.length && src[i] !== '{') i += 1;
      if (i >= src.length) throw fail('Expected "{"');
      group();
      continue;
    }
    if (!['query', 'mutation', 'subscription'].includes(keyword)) throw fail(`Unexpected ${JSON.stringify(keyword)}`);
    skip();
    const opName = src[i] === '(' || src[i] === '{' || src[i] === '@' ? null : name();
    skip();
    if (src[i] === '(') group();
    directives();
    skip();
    if (src[i] !== '{') throw fail('Expected "{"');
    operations.push({ type: keyword, name: opName, fields: selections(), at });
  }
  return { operations, text: src };
}

// ------------------------------------------------------------------ the fake

/** Starts a fake on 127.0.0.1 (a free port); resolves to its handle. */
export async function startFakeRailway({
  token = DEFAULT_TOKEN,
  projectToken = DEFAULT_PROJECT_TOKEN,
  environmentId = DEFAULT_ENVIRONMENT_ID,
  projectEnvironmentId = environmentId,
  environmentIds = [],
} = {}) {
  const initialEnvironments = [environmentId, projectEnvironmentId, ...environmentIds];
  const environments = new Set(initialEnvironments);
  const sandboxes = new Map(); // id -> sandbox (a destroyed one stays, DESTROYED)
  const destroyed = new Set(); // ids destroyed through the API, in order
  const destroys = []; // every accepted destroy, in order
  const requests = [];
  let faults = { ...NO_FAULTS };
  let destroyCalls = 0;
  const hanging = new Set();
  let abandoned = 0; // hanging requests the client gave up on (closed the connection)

  function hang(res) {
    hanging.add(res);
    res.on('close', () => {
      if (hanging.delete(res)) abandoned += 1;
    });
  }

  // A sandbox as it is now: DESTROYING turns DESTROYED once its time is up.
  function current(sandbox) {
    if (sandbox.status === 'DESTROYING' && sandbox.goneAt !== null && Date.now() >= sandbox.goneAt) {
      sandbox.status = 'DESTROYED';
    }
    return sandbox;
  }
  const visible = (sandbox) => current(sandbox).status !== 'DESTROYED' || faults.tombstones;

  function view(sandbox) {
    current(sandbox);
    return {
      id: sandbox.id,
      status: sandbox.status,
      networkIsolation: sandbox.networkIsolation,
      environmentId: sandbox.environmentId,
      region: sandbox.region,
      idleTimeoutMinutes: sandbox.idleTimeoutMinutes,
      createdAt: new Date(sandbox.createdAtMs).toISOString(),
    };
  }

  function seed(list) {
    if (!Array.isArray(list)) throw new Error('seed takes an array of sandboxes');
    const ready = list.map((item, index) => {
      if (item === null || typeof item !== 'object' || Array.isArray(item)) throw new Error(`sandbox ${index}: not an object`);
      const unknown = Object.keys(item).filter((key) => !SEED_KEYS.includes(key));
      if (unknown.length) throw new Error(`sandbox ${index}: unknown field(s) ${unknown.join(', ')} (known: ${SEED_KEYS.join(', ')})`);
      const id = item.id ?? randomUUID();
      if (typeof id !== 'string' || !ID.test(id)) throw new Error(`sandbox id ${JSON.stringify(id)} is not ${ID}`);
      const status = item.status ?? 'RUNNING';
      if (!STATUSES.includes(status)) throw new Error(`sandbox ${id}: status ${JSON.stringify(status)} is none of ${STATUSES.join(', ')}`);
      const networkIsolation = item.networkIsolation ?? 'ISOLATED';
      if (!NETWORK_ISOLATIONS.includes(networkIsolation)) throw new Error(`sandbox ${id}: networkIsolation ${JSON.stringify(networkIsolation)} is none of ${NETWORK_ISOLATIONS.join(', ')}`);
      const createdAtMs = item.createdAt === undefined ? Date.now() - 3_600_000 : typeof item.createdAt === 'number' ? item.createdAt : Date.parse(item.createdAt);
      if (!Number.isInteger(createdAtMs)) throw new Error(`sandbox ${id}: createdAt must be epoch milliseconds or an ISO-8601 string, got ${JSON.stringify(item.createdAt)}`);
      const idle = item.idleTimeoutMinutes ?? null;
      if (idle !== null && !Number.isInteger(idle)) throw new Error(`sandbox ${id}: idleTimeoutMinutes must be an integer or null`);
      const env = item.environmentId ?? environmentId;
      if (typeof env !== 'string' || !env) throw new Error(`sandbox ${id}: environmentId must be a non-empty string`);
      return {
        id,
        environmentId: env,
        status,
        goneAt: null, // a seeded DESTROYING one stays so
        createdAtMs,
        region: item.region ?? DEFAULT_REGION,
        networkIsolation,
        idleTimeoutMinutes: idle,
        name: item.name ?? null, // Railway sandboxes have no name: kept for the test's bookkeeping, never served
        variables: item.variables ?? {},
      };
    });
    for (const sandbox of ready) {
      sandboxes.set(sandbox.id, sandbox);
      environments.add(sandbox.environmentId);
      destroyed.delete(sandbox.id);
    }
    return ready.map((sandbox) => sandbox.id);
  }

  function state() {
    const all = [...sandboxes.values()].map(current).sort(compare);
    return {
      sandboxes: all.map((sandbox) => ({ ...view(sandbox), name: sandbox.name, variables: { ...sandbox.variables } })),
      alive: all.filter((sandbox) => !['DESTROYING', 'DESTROYED'].includes(sandbox.status)).map((sandbox) => sandbox.id).sort(),
      destroyed: [...destroyed],
      destroys: [...destroys],
      statuses: Object.fromEntries(all.map((sandbox) => [sandbox.id, sandbox.status])),
      requests: requests.map((r) => ({ ...r, variables: structuredClone(r.variables) })),
      abandoned,
    };
  }

  function reset() {
    sandboxes.clear();
    destroyed.clear();
    destroys.length = 0;
    requests.length = 0;
    environments.clear();
    for (const env of initialEnvironments) environments.add(env);
    faults = { ...NO_FAULTS };
    destroyCalls = 0;
    for (const stuck of [...hanging]) {
      hanging.delete(stuck);
      stuck.destroy();
    }
    abandoned = 0;
  }

  function setFaults(more) {
    if (more === null || typeof more !== 'object' || Array.isArray(more)) throw new Error('faults must be an object');
    const unknown = Object.keys(more).filter((key) => !(key in NO_FAULTS));
    if (unknown.length) throw new Error(`unknown fault(s) ${unknown.join(', ')} (known: ${Object.keys(NO_FAULTS).join(', ')})`);
    if (more.destroyMissing !== undefined && !['error', 'null'].includes(more.destroyMissing)) throw new Error('destroyMissing is "error" or "null"');
    faults = { ...faults, ...more };
    return { ...faults };
  }

  // ------------------------------------------------------------- auth

  /** Who is calling: `{kind, environments}` or a refusal message. */
  function caller(req) {
    const projectHeader = req.headers['project-access-token'];
    if (projectHeader !== undefined) {
      if (projectHeader === projectToken) return { kind: 'project-token', sees: (env) => env === projectEnvironmentId };
      return { refused: 'Project Token not found' };
    }
    const m = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
    if (m && m[1] === token) return { kind: 'bearer', sees: (env) => environments.has(env) };
    if (m && m[1] === projectToken) return { refused: 'Project Token not found' };
    return { refused: 'Not Authorized' };
  }
  const authKind = (req) => (req.headers['project-access-token'] !== undefined ? 'project-token' : req.headers.authorization ? 'bearer' : 'none');

  // ---------------------------------------------------------- resolvers

  const compare = (a, b) => a.createdAtMs - b.createdAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

  function needString(field, args, arg, type = 'String!') {
    const v = args[arg];
    if (v === undefined || v === null) throw invalid(`Field "${field}" argument "${arg}" of type "${type}" is required, but it was not provided.`);
    if (typeof v !== 'string') throw invalid(`${type.replace('!', '')} cannot represent a non string value: ${JSON.stringify(v)}`);
    return v;
  }
  function optionalInt(arg, v) {
    if (v === undefined || v === null) return null;
    if (!Number.isInteger(v) || Math.abs(v) > 2 ** 31 - 1) throw invalid(`Int cannot represent non-integer value: ${JSON.stringify(v)} (argument "${arg}")`);
    return v;
  }
  function optionalString(arg, v) {
    if (v === undefined || v === null) return null;
    if (typeof v !== 'string') throw invalid(`String cannot represent a non string value: ${JSON.stringify(v)} (argument "${arg}")`);
    return v;
  }
  function cursorToOffset(cursor) {
    const decoded = Buffer.from(cursor, 'base64').toString('utf8');
    const offset = Number.parseInt(decoded.slice(OFFSET_PREFIX.length), 10);
    if (!decoded.startsWith(OFFSET_PREFIX) || !Number.isInteger(offset)) throw new GraphQLFailure(`Invalid offset cursor ${OFFSET_PREFIX}`);
    return offset;
  }
  function mayUse(who, env) {
    if (!who.sees(env)) throw new GraphQLFailure('Not Authorized');
  }

  // Pothos' offsetForArgs and resolveArrayConnection, with the faults.
  function listSandboxes(who, args, text) {
    const env = needString('sandboxes', args, 'environmentId');
    const first = optionalInt('first', args.first);
    const last = optionalInt('last', args.last);
    const after = optionalString('after', args.after);
    const before = optionalString('before', args.before);
    mayUse(who, env);
    if (first !== null && first < 0) throw new GraphQLFailure('Argument "first" must be a non-negative integer', 'BAD_USER_INPUT');
    if (last !== null && last < 0) throw new GraphQLFailure('Argument "last" must be a non-negative integer', 'BAD_USER_INPUT');
    const beforeOffset = before ? cursorToOffset(before) : Number.POSITIVE_INFINITY;
    const afterOffset = after ? cursorToOffset(after) : 0;
    let start = after ? afterOffset + 1 : 0;
    let end = before ? Math.max(beforeOffset, start) : Number.POSITIVE_INFINITY;
    if (first !== null) end = Math.min(end, start + first);
    if (last !== null) {
      if (end === Number.POSITIVE_INFINITY) throw new GraphQLFailure('Argument "last" can only be used in combination with "before" or "first"', 'BAD_USER_INPUT');
      start = Math.max(start, end - last);
    }
    const size = first === null && last === null ? DEFAULT_PAGE_SIZE : end - start;
    end = Math.min(end, start + Math.min(size, MAX_PAGE_SIZE));
    const expected = end - start;
    const matching = [...sandboxes.values()].filter((sandbox) => sandbox.environmentId === env && visible(sandbox)).sort(compare);
    const nodes = matching.slice(start, start + expected + 1);
    let items = nodes.slice(0, expected);
    let hasNextPage = nodes.length > expected;
    let endCursor = encodeCursor(start + items.length - 1);
    const page = expected > 0 ? Math.floor(start / expected) + 1 : 1;
    if (faults.cycleCursor && page === 2) {
      endCursor = encodeCursor(start - 1); // page 1's last cursor: the next page is this one again
      hasNextPage = true;
    }
    let edges = items.map((sandbox, index) => ({ offset: start + index, sandbox }));
    if (faults.repeatAcrossPages && start > 0 && matching[start - 1]) edges = [{ offset: start - 1, sandbox: matching[start - 1] }, ...edges];
    const withCursor = /\bcursor\b/.test(text);
    const pageInfo = { hasNextPage, endCursor };
    if (/\bhasPreviousPage\b/.test(text)) pageInfo.hasPreviousPage = start > 0;
    if (/\bstartCursor\b/.test(text)) pageInfo.startCursor = encodeCursor(start);
    if (faults.malformedPage === page) return { edges: 'not a list', pageInfo };
    return {
      edges: edges.map(({ offset, sandbox }) => (withCursor ? { cursor: encodeCursor(offset), node: view(sandbox) } : { node: view(sandbox) })),
      pageInfo,
    };
  }

  function getSandbox(who, args) {
    const env = needString('sandbox', args, 'environmentId');
    const id = needString('sandbox', args, 'id');
    mayUse(who, env);
    const sandbox = sandboxes.get(id);
    return sandbox && sandbox.environmentId === env && visible(sandbox) ? view(sandbox) : null;
  }

  function destroySandbox(who, args) {
    const env = needString('sandboxDestroy', args, 'environmentId');
    const id = needString('sandboxDestroy', args, 'id');
    mayUse(who, env);
    const sandbox = sandboxes.get(id);
    if (!sandbox || sandbox.environmentId !== env || !visible(sandbox)) {
      if (faults.destroyMissing === 'null') return null;
      throw new GraphQLFailure('Sandbox not found');
    }
    destroys.push(id);
    if (!['CREATING', 'RUNNING', 'FAILED'].includes(sandbox.status)) return view(sandbox); // DESTROYING (or a tombstone): unchanged
    sandbox.status = 'DESTROYING';
    sandbox.goneAt = null;
    const answer = view(sandbox); // DESTROYING, even when it is gone an instant later
    sandbox.goneAt = Date.now() + faults.destroyingMs;
    destroyed.add(id);
    return answer;
  }

  function createSandbox(who, args) {
    const input = args.input;
    if (input === undefined || input === null) throw invalid('Field "sandboxCreate" argument "input" of type "SandboxCreateInput!" is required, but it was not provided.');
    if (typeof input !== 'object' || Array.isArray(input)) throw invalid('Expected type "SandboxCreateInput" to be an object.');
    const known = ['environmentId', 'idleTimeoutMinutes', 'networkIsolation', 'region', 'sourceSandboxId', 'template', 'variables'];
    const unknown = Object.keys(input).filter((key) => !known.includes(key));
    if (unknown.length) throw invalid(`Field "${unknown[0]}" is not defined by type "SandboxCreateInput".`);
    if (typeof input.environmentId !== 'string') throw invalid('Field "SandboxCreateInput.environmentId" of required type "String!" was not provided.');
    if (input.networkIsolation != null && !NETWORK_ISOLATIONS.includes(input.networkIsolation)) {
      throw invalid(`Value ${JSON.stringify(input.networkIsolation)} does not exist in "SandboxNetworkIsolation" enum.`);
    }
    if (input.idleTimeoutMinutes != null && !Number.isInteger(input.idleTimeoutMinutes)) throw invalid(`Int cannot represent non-integer value: ${JSON.stringify(input.idleTimeoutMinutes)}`);
    mayUse(who, input.environmentId);
    if (input.sourceSandboxId != null) {
      const source = sandboxes.get(input.sourceSandboxId);
      if (!source || source.environmentId !== input.environmentId || current(source).status !== 'RUNNING') throw new GraphQLFailure('Sandbox not found');
    }
    const [id] = seed([{
      environmentId: input.environmentId,
      createdAt: Date.now(),
      region: input.region ?? DEFAULT_REGION,
      networkIsolation: input.networkIsolation ?? 'ISOLATED',
      idleTimeoutMinutes: input.idleTimeoutMinutes ?? null,
      variables: input.variables ?? {},
    }]);
    return view(sandboxes.get(id));
  }

  // ------------------------------------------------------------- serving

  function graphqlError(error, text, field) {
    const entry = { message: error.message };
    if (field) {
      entry.locations = [locate(text, field.at)];
      if (!error.validation) entry.path = [field.alias ?? field.field];
    }
    entry.extensions = { code: error.code };
    if (!error.validation) entry.traceId = randomBytes(8).toString('hex');
    return entry;
  }

  async function graphql(req, res) {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    let body;
    try {
      body = JSON.parse(raw);
    } catch {
      return json(res, 400, { errors: [{ message: 'POST body sent invalid JSON.' }] });
    }
    if (body === null || typeof body !== 'object' || typeof body.query !== 'string' || !body.query.trim()) {
      return json(res, 400, { errors: [{ message: 'Must provide query string.' }] });
    }
    const variables = body.variables ?? {};
    if (typeof variables !== 'object' || Array.isArray(variables)) return json(res, 400, { errors: [{ message: 'Variables are invalid JSON.' }] });

    let doc;
    let operation;
    let field;
    try {
      doc = scan(body.query);
      const named = body.operationName ?? null;
      if (named !== null) {
        operation = doc.operations.find((op) => op.name === named);
        if (!operation) throw invalid(`Unknown operation named "${named}".`);
      } else if (doc.operations.length === 1) {
        [operation] = doc.operations;
      } else {
        throw invalid(doc.operations.length ? 'Must provide operation name if query contains multiple operations.' : 'Must provide an operation.');
      }
      const fields = operation.fields.filter((f) => f.field !== '__typename');
      if (fields.length !== 1) throw invalid(`The fake serves one root field per operation, got ${fields.length}.`);
      [field] = fields;
      const known = FIELDS[field.field];
      if (!known || known.type !== operation.type) {
        const on = operation.type === 'mutation' ? 'Mutation' : operation.type === 'subscription' ? 'Subscription' : 'Query';
        throw invalid(`Cannot query field "${field.field}" on type "${on}".`);
      }
    } catch (error) {
      if (!(error instanceof GraphQLFailure)) throw error;
      requests.push({ operation: operation?.name ?? null, field: field?.field ?? null, variables: structuredClone(variables), auth: authKind(req) });
      return json(res, 200, { errors: [graphqlError(error, doc?.text ?? body.query, field)] });
    }

    const args = {};
    for (const [arg, v] of Object.entries(field.args)) {
      if ('variable' in v) args[arg] = variables[v.variable];
      else if ('literal' in v) args[arg] = v.literal;
      else return json(res, 200, { errors: [graphqlError(invalid(`The fake binds no list or object literal (argument "${arg}"): pass it as a variable.`), doc.text, field)] });
    }
    requests.push({ operation: operation.name, field: field.field, variables: structuredClone(variables), auth: authKind(req) });

    const key = field.alias ?? field.field;
    const fail = (error, status = 200, headers = {}) =>
      json(res, status, { errors: [graphqlError(error, doc.text, field)], ...(error.validation ? {} : { data: FIELDS[field.field].nullable ? { [key]: null } : null }) }, headers);

    if (field.field === 'sandboxes' && faults.hangLists) return hang(res);
    if (field.field === 'sandboxDestroy') {
      destroyCalls += 1;
      if (faults.hangDestroys) return hang(res);
      if (faults.rateLimitDestroys > 0) {
        faults.rateLimitDestroys -= 1;
        return json(res, 429, { errors: [{ message: 'Too Many Requests' }] }, { 'retry-after': String(faults.retryAfterSeconds) });
      }
    }
    const who = caller(req);
    try {
      if (who.refused) throw new GraphQLFailure(who.refused);
      if (field.field === 'sandboxDestroy' && faults.failDestroyEvery > 0 && destroyCalls % faults.failDestroyEvery === 0) {
        return fail(new GraphQLFailure('Problem processing request'), faults.failDestroyStatus);
      }
      const resolvers = { sandboxes: () => listSandboxes(who, args, doc.text), sandbox: () => getSandbox(who, args), sandboxDestroy: () => destroySandbox(who, args), sandboxCreate: () => createSandbox(who, args) };
      return json(res, 200, { data: { [key]: resolvers[field.field]() } });
    } catch (error) {
      if (!(error instanceof GraphQLFailure)) throw error;
      return fail(error);
    }
  }

  async function control(req, url, res) {
    let body = '';
    for await (const chunk of req) body += chunk;
    const input = body ? JSON.parse(body) : undefined;
    switch (`${req.method} ${url.pathname}`) {
      case 'POST /_fake/sandboxes': {
        const ids = seed(input);
        return json(res, 200, { ids, alive: state().alive.length });
      }
      case 'POST /_fake/faults':
        return json(res, 200, setFaults(input ?? {}));
      case 'POST /_fake/reset':
        reset();
        return json(res, 200, {});
      case 'GET /_fake/state':
        return json(res, 200, state());
      default:
        return json(res, 404, { errors: [{ message: 'no such control route' }] });
    }
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://fake');
    if (url.pathname.startsWith('/_fake/')) {
      control(req, url, res).catch((error) => json(res, 400, { errors: [{ message: String(error.message ?? error) }] }));
      return;
    }
    const serve = () => {
      if (url.pathname !== GRAPHQL_PATH) return json(res, 404, { errors: [{ message: `no route ${req.method} ${url.pathname}` }] });
      if (req.method !== 'POST') return json(res, 405, { errors: [{ message: 'GraphQL only supports POST requests here.' }] }, { allow: 'POST' });
      graphql(req, res).catch((error) => json(res, 500, { errors: [{ message: `fake failure: ${error.message}` }] }));
      return undefined;
    };
    if (faults.latencyMs > 0) {
      setTimeout(serve, faults.latencyMs);
      return;
    }
    serve();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    endpoint: `${url}${GRAPHQL_PATH}`,
    token,
    projectToken,
    environmentId,
    projectEnvironmentId,
    seed,
    setFaults,
    state,
    reset,
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
  const option = (flag, fallback) => {
    const at = process.argv.indexOf(flag);
    return at > 0 ? process.argv[at + 1] : fallback;
  };
  const fake = await startFakeRailway({
    token: option('--token', DEFAULT_TOKEN),
    projectToken: option('--project-token', DEFAULT_PROJECT_TOKEN),
    environmentId: option('--environment', DEFAULT_ENVIRONMENT_ID),
  });
  process.stdout.write(`${JSON.stringify({ url: fake.url, endpoint: fake.endpoint })}\n`);
  // Serve until whoever started us closes our stdin (or exits).
  process.stdin.resume();
  process.stdin.on('end', () => fake.close().then(() => process.exit(0)));
}
