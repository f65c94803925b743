// A local fake of the Kubernetes API calls a Kubernetes sweep makes, for the
// kinds it sweeps: core `v1` Pods and kubernetes-sigs/agent-sandbox v0.5's
// `Sandbox` (`agents.x-k8s.io/v1beta1`, plural `sandboxes`) and
// `SandboxClaim` (`extensions.agents.x-k8s.io/v1beta1`, plural
// `sandboxclaims`), with `SandboxTemplate` / `SandboxWarmPool` listed too.
// Written from kube-apiserver's behaviour (docs/research/kubernetes.md);
// tests/node/kubernetes-fake.test.mjs (`@kubernetes/client-node`) and
// tests/python/test_kubernetes_fake.py (PyPI `kubernetes`) prove it faithful
// by driving the official clients through the kubeconfigs it writes.
//
// Wire: HTTPS only (a CA, a server certificate for 127.0.0.1 / localhost and
// client certificates are made with the `openssl` command at start), HTTP/1.1.
// A request is authenticated by `Authorization: Bearer <token>` or by a
// client certificate the fake's CA signed (TLS asks for one, never demands
// it); anything else answers 401 `Status` `Unauthorized`. Discovery: `GET
// /version`, `/api`, `/api/v1`, `/apis`, `/apis/<group>`,
// `/apis/<group>/<version>`. Collections: `GET /api/v1[/namespaces/<ns>]/pods`,
// `GET /apis/<group>/<version>[/namespaces/<ns>]/<plural>` with
// `labelSelector` (`k=v`, `k==v`, `k!=v`, `k`, `!k`, `k in (a,b)`,
// `k notin (a,b)`, comma-joined), `limit` and `continue` (opaque tokens; a
// continued listing reads the snapshot its first page was served from, as
// etcd does; an expired token answers 410 `Expired` with a fresh, inconsistent
// token in the Status's `metadata.continue`); objects in etcd key order
// (namespace, then name); `metadata.remainingItemCount` only without a
// selector. Objects: `GET` and `DELETE .../<plural>/<name>` in a namespace.
// `DELETE` reads `DeleteOptions` from the body (JSON, `kind` optional) or the
// query (`propagationPolicy`, `gracePeriodSeconds`): `Foreground` leaves the
// object (and its dependents, by `ownerReferences`) with `deletionTimestamp`
// and the `foregroundDeletion` finalizer for `deletingMs`, answering 200 with
// it; a custom object deleted otherwise goes at once (200 `Status` `Success`,
// `details.kind` the plural) and its dependents after `deletingMs`
// (`Background`, the default) or keep living without the owner reference
// (`Orphan`); a Pod is always deleted gracefully (`deletionTimestamp`,
// `deletionGracePeriodSeconds`, gone after `deletingMs`; 200 with the pod).
// Deleting an object that is already deleting answers 200 with it unchanged.
// A seeded SandboxClaim gets its Sandbox (same name, controller owner
// reference, label `agents.x-k8s.io/claim-uid`) and that Sandbox's Pod, as the
// agent-sandbox controllers make them. Errors are `Status` bodies: 404
// `NotFound`, 400 `BadRequest`, 405 `MethodNotAllowed`, 410 `Expired`, 429
// `TooManyRequests` with `Retry-After`, 500 `InternalError`.
//
// Control routes under `/_fake/` need no credentials: `POST /_fake/sandboxes`
// (or `/_fake/objects`) seeds `[{kind, namespace, name, labels,
// creationTimestamp, ...}]`, `POST /_fake/faults`, `POST /_fake/reset`,
// `GET /_fake/state`.
//
// Run as a program (`node tests/fakes/kubernetes.mjs [--token T]`) it prints
// one JSON line `{"url", "token", "caFile", "kubeconfigToken",
// "kubeconfigCert", "kubeconfigExec", "kubeconfigForeign", "dir"}` and serves
// until stdin closes or it is killed; the files live in `dir`, removed on
// close.

import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export const DEFAULT_TOKEN = 'fake-kubernetes-token';
export const DEFAULT_NAMESPACE = 'default';
/** The label the claim controller puts on the Sandbox it makes (the claim's uid). */
export const CLAIM_UID_LABEL = 'agents.x-k8s.io/claim-uid';
/** The label the Sandbox controller puts on its Pod. */
export const SANDBOX_NAME_HASH_LABEL = 'agents.x-k8s.io/sandbox-name-hash';
/** The annotation the claim controller puts on the claim naming its Sandbox. */
export const SANDBOX_NAME_ANNOTATION = 'agents.x-k8s.io/sandbox-name';
const FOREGROUND = 'foregroundDeletion';
const POLICIES = ['Orphan', 'Background', 'Foreground'];
const SNAPSHOTS_KEPT = 64; // older listings' snapshots are "compacted": their continue expires
const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** Every resource the fake serves, by plural. All are namespaced. */
export const RESOURCES = {
  pods: { group: '', version: 'v1', plural: 'pods', singular: 'pod', kind: 'Pod', shortNames: ['po'] },
  sandboxes: { group: 'agents.x-k8s.io', version: 'v1beta1', plural: 'sandboxes', singular: 'sandbox', kind: 'Sandbox', shortNames: ['sandbox'] },
  sandboxclaims: { group: 'extensions.agents.x-k8s.io', version: 'v1beta1', plural: 'sandboxclaims', singular: 'sandboxclaim', kind: 'SandboxClaim', shortNames: ['sandboxclaim'] },
  sandboxtemplates: { group: 'extensions.agents.x-k8s.io', version: 'v1beta1', plural: 'sandboxtemplates', singular: 'sandboxtemplate', kind: 'SandboxTemplate', shortNames: ['sandboxtemplate'] },
  sandboxwarmpools: { group: 'extensions.agents.x-k8s.io', version: 'v1beta1', plural: 'sandboxwarmpools', singular: 'sandboxwarmpool', kind: 'SandboxWarmPool', shortNames: ['swp'] },
};
const BY_KIND = Object.fromEntries(Object.values(RESOURCES).map((r) => [r.kind, r]));
const apiVersionOf = (r) => (r.group ? `${r.group}/${r.version}` : r.version);
const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

const NO_FAULTS = {
  failDeleteEvery: 0, // every Nth delete answers 500 InternalError
  rateLimitDeletes: 0, // the next N deletes answer 429 TooManyRequests with Retry-After
  retryAfterSeconds: 1,
  hangDeletes: false, // deletes never answer
  hangLists: false, // listings never answer
  malformedPage: 0, // page N (1-based) of every listing has `items` that is not an array
  repeatAcrossPages: false, // each page after the first starts with the previous page's last item again
  expireContinue: 0, // the next N requests with a continue token answer 410 Expired
  latencyMs: 0, // every API answer waits this long
};

function json(res, status, body, headers = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
  return true;
}

/** kube-apiserver's `metav1.Status` for a failure. */
function status(res, code, reason, message, details, extra = {}, headers = {}) {
  const body = { kind: 'Status', apiVersion: 'v1', metadata: extra.metadata ?? {}, status: 'Failure', message, reason };
  if (details) body.details = details;
  body.code = code;
  return json(res, code, body, headers);
}

const qualified = (r) => (r.group ? `${r.plural}.${r.group}` : r.plural);
const detailsOf = (r, name) => (r.group ? { name, group: r.group, kind: r.plural } : { name, kind: r.plural });
const notFound = (res, r, name) => status(res, 404, 'NotFound', `${qualified(r)} "${name}" not found`, detailsOf(r, name));
const noRoute = (res) => status(res, 404, 'NotFound', 'the server could not find the requested resource', {});
const badRequest = (res, message) => status(res, 400, 'BadRequest', message);
/** RFC 3339 in whole seconds, as `metav1.Time` serializes. */
// The last second formatted is kept: a pass deletes thousands a second, and
// formatting each anew was a tenth of the fake's CPU per delete.
let formatted = { second: NaN, text: '' };
const rfc3339 = (ms) => {
  const second = Math.floor(ms / 1000);
  if (second !== formatted.second) formatted = { second, text: new Date(second * 1000).toISOString().replace('.000Z', 'Z') };
  return formatted.text;
};

// ------------------------------------------------------------ label selectors

/**
 * Parses a label selector as `labels.Parse` does (equality- and set-based);
 * returns a predicate over a labels map, or throws with the apiserver's text.
 */
export function parseSelector(text) {
  const requirements = [];
  const source = text.trim();
  let i = 0;
  const fail = (why) => { throw new Error(`unable to parse requirement: ${why}`); };
  const skipSpaces = () => { while (source[i] === ' ') i += 1; };
  const key = () => {
    skipSpaces();
    const start = i;
    while (i < source.length && !' ,=!()'.includes(source[i])) i += 1;
    const k = source.slice(start, i);
    if (!/^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/.test(k)) {
      fail(`invalid label key "${k}"`);
    }
    return k;
  };
  const value = () => {
    skipSpaces();
    const start = i;
    while (i < source.length && !' ,()=!'.includes(source[i])) i += 1;
    const v = source.slice(start, i);
    if (v !== '' && !/^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/.test(v)) fail(`invalid label value: "${v}"`);
    return v;
  };
  while (source !== '' && i < source.length) {
    skipSpaces();
    if (source[i] === '!') {
      i += 1;
      const k = key();
      requirements.push((labels) => !(k in labels));
    } else {
      const k = key();
      skipSpaces();
      if (source.startsWith('!=', i)) {
        i += 2;
        const v = value();
        requirements.push((labels) => labels[k] !== v);
      } else if (source.startsWith('==', i) || source[i] === '=') {
        i += source.startsWith('==', i) ? 2 : 1;
        const v = value();
        requirements.push((labels) => labels[k] === v);
      } else if (/^(in|notin)\s*\(/.test(source.slice(i))) {
        const negate = source.startsWith('notin', i);
        i = source.indexOf('(', i) + 1;
        const values = [];
        for (;;) {
          values.push(value());
          skipSpaces();
          if (source[i] === ',') { i += 1; continue; }
          if (source[i] === ')') { i += 1; break; }
          fail(`found '${source[i] ?? ''}', expected: ',', ')'`);
        }
        requirements.push(negate ? (labels) => !values.includes(labels[k]) : (labels) => k in labels && values.includes(labels[k]));
      } else {
        requirements.push((labels) => k in labels);
      }
    }
    skipSpaces();
    if (i < source.length) {
      if (source[i] !== ',') fail(`found '${source[i]}', expected: ',' or 'end of string'`);
      i += 1;
      if (i >= source.length) fail("found '', expected: identifier");
    }
  }
  return (labels) => requirements.every((matches) => matches(labels ?? {}));
}

// ------------------------------------------------------------ certificates

function openssl(args, cwd) {
  return execFileSync('openssl', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** A CA, a server certificate for 127.0.0.1 / localhost, a client certificate it signs and one it does not. */
function makeCertificates(dir) {
  writeFileSync(join(dir, 'req.cnf'), '[req]\ndistinguished_name = dn\n[dn]\n');
  const ext = (name, lines) => writeFileSync(join(dir, name), `${lines.join('\n')}\n`);
  ext('ca.ext', ['basicConstraints = critical, CA:TRUE', 'keyUsage = critical, keyCertSign, cRLSign', 'subjectKeyIdentifier = hash']);
  ext('server.ext', [
    'basicConstraints = critical, CA:FALSE', 'keyUsage = critical, digitalSignature', 'extendedKeyUsage = serverAuth',
    'subjectAltName = IP:127.0.0.1, DNS:localhost', 'subjectKeyIdentifier = hash', 'authorityKeyIdentifier = keyid',
  ]);
  ext('client.ext', [
    'basicConstraints = critical, CA:FALSE', 'keyUsage = critical, digitalSignature', 'extendedKeyUsage = clientAuth',
    'subjectKeyIdentifier = hash', 'authorityKeyIdentifier = keyid',
  ]);
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const serial = () => ['-set_serial', `0x${randomBytes(8).toString('hex')}`];
  const selfSigned = (name, subject, extfile) => {
    openssl(['req', '-config', 'req.cnf', '-new', ...key, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject], dir);
    openssl(['x509', '-req', '-in', `${name}.csr`, '-key', `${name}.key`, '-days', '7', ...serial(), '-extfile', extfile, '-out', `${name}.crt`], dir);
  };
  const signed = (name, subject, extfile) => {
    openssl(['req', '-config', 'req.cnf', '-new', ...key, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject], dir);
    openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-days', '7', ...serial(), '-extfile', extfile, '-out', `${name}.crt`], dir);
  };
  selfSigned('ca', '/CN=fake-kubernetes-ca', 'ca.ext');
  signed('server', '/CN=kube-apiserver', 'server.ext');
  signed('client', '/O=system:masters/CN=sandbox-reclaim', 'client.ext');
  selfSigned('foreign-ca', '/CN=someone-else-ca', 'ca.ext');
  openssl(['req', '-config', 'req.cnf', '-new', ...key, '-keyout', 'foreign.key', '-out', 'foreign.csr', '-subj', '/CN=intruder'], dir);
  openssl(['x509', '-req', '-in', 'foreign.csr', '-CA', 'foreign-ca.crt', '-CAkey', 'foreign-ca.key', '-days', '7', ...serial(), '-extfile', 'client.ext', '-out', 'foreign.crt'], dir);
  const read = (name) => readFileSync(join(dir, name));
  return {
    ca: read('ca.crt'), serverKey: read('server.key'), serverCert: read('server.crt'),
    clientCert: read('client.crt'), clientKey: read('client.key'), foreignCert: read('foreign.crt'), foreignKey: read('foreign.key'),
  };
}

/** A kubeconfig (YAML; every scalar JSON-quoted) with one cluster, one user and one current context. */
function kubeconfig(url, ca, user, namespace) {
  const q = JSON.stringify;
  const b64 = (data) => q(Buffer.from(data).toString('base64'));
  const userLines = [];
  if (user.token) userLines.push(`    token: ${q(user.token)}`);
  if (user.cert) userLines.push(`    client-certificate-data: ${b64(user.cert)}`, `    client-key-data: ${b64(user.key)}`);
  if (user.exec) {
    userLines.push(
      '    exec:',
      `      apiVersion: ${q('client.authentication.k8s.io/v1')}`,
      `      command: ${q(user.exec.command)}`,
      '      args:',
      ...user.exec.args.map((arg) => `      - ${q(arg)}`),
      `      interactiveMode: ${q('Never')}`,
      '      provideClusterInfo: false',
    );
  }
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${q('fake')}`,
    '  cluster:',
    `    server: ${q(url)}`,
    `    certificate-authority-data: ${b64(ca)}`,
    'users:',
    `- name: ${q(user.name)}`,
    '  user:',
    ...userLines,
    'contexts:',
    `- name: ${q('fake')}`,
    '  context:',
    `    cluster: ${q('fake')}`,
    `    user: ${q(user.name)}`,
    `    namespace: ${q(namespace)}`,
    `current-context: ${q('fake')}`,
    'preferences: {}',
    '',
  ].join('\n');
}

// ------------------------------------------------------------ the fake

/** Starts a fake on 127.0.0.1 (a free port); resolves to its handle. */
export async function startFakeKubernetes({ token = DEFAULT_TOKEN, namespace = DEFAULT_NAMESPACE, deletingMs = 200 } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'fake-kubernetes-'));
  let certs;
  try {
    certs = makeCertificates(dir);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`the Kubernetes fake needs the openssl command to make its certificates: ${error.message}`);
  }

  const objects = new Map(); // key (etcd order: plural/namespace/name) -> {object, resource, goneAt}
  const deleted = new Set(); // keys removed after a delete through the API
  const snapshots = new Map(); // snapshot id -> {all: [key, object] pairs as the first page saw them, revision}
  let snapshotCount = 0;
  let revision = 1;
  const requests = [];
  let faults = { ...NO_FAULTS };
  let deletes = 0;
  let settings = { deletingMs };
  const hanging = new Set();
  let abandoned = 0;

  const keyOf = (r, ns, name) => `${r.plural}/${ns}/${name}`;
  const label = (key) => {
    const [plural, ns, name] = key.split('/');
    return `${RESOURCES[plural].kind}/${ns}/${name}`;
  };

  function hang(res) {
    hanging.add(res);
    res.on('close', () => {
      if (hanging.delete(res)) abandoned += 1;
    });
  }

  // Indexes, for speed alone (a delete once scanned every object once per
  // level of owners and again to settle: ~35 ms a delete at 30,000 objects);
  // every answer is what a scan of `objects` gives.
  const settling = []; // a min-heap of [goneAt, key, entry] as each `goneAt` was set (settle reads its top)
  const byOwner = new Map(); // owner uid -> keys of objects whose ownerReferences named it when put
  const position = new Map(); // key -> its rank in `objects`' order (a Map's: first insertion)
  let positions = 0;

  function pushSettling(item) {
    settling.push(item);
    for (let at = settling.length - 1; at > 0;) {
      const parent = (at - 1) >> 1;
      if (settling[parent][0] <= settling[at][0]) break;
      [settling[parent], settling[at]] = [settling[at], settling[parent]];
      at = parent;
    }
  }

  function popSettling() {
    const top = settling[0];
    const last = settling.pop();
    if (settling.length > 0) {
      settling[0] = last;
      for (let at = 0; ;) {
        const left = 2 * at + 1;
        const right = left + 1;
        let least = at;
        if (left < settling.length && settling[left][0] < settling[least][0]) least = left;
        if (right < settling.length && settling[right][0] < settling[least][0]) least = right;
        if (least === at) break;
        [settling[least], settling[at]] = [settling[at], settling[least]];
        at = least;
      }
    }
    return top;
  }

  /** Removes what finished deleting (lazily, on every access). */
  function settle(now = Date.now()) {
    // An entry's `goneAt` is set once (or dropped, when another finalizer holds it).
    while (settling.length > 0 && settling[0][0] <= now) {
      const [, key, entry] = popSettling();
      if (objects.get(key) === entry && entry.goneAt !== undefined) {
        objects.delete(key);
        deleted.add(key);
        revision += 1;
      }
    }
  }

  /** `[key, entry]` of every object an owner reference of names `uid`, in `objects`' order. */
  const dependentsOf = (uid) => [...(byOwner.get(uid) ?? [])]
    .filter((key) => objects.has(key))
    .sort((a, b) => position.get(a) - position.get(b))
    .map((key) => [key, objects.get(key)])
    .filter(([, e]) => (e.object.metadata.ownerReferences ?? []).some((o) => o.uid === uid));

  /**
   * Copy on write: a paged listing's snapshot holds the objects as its first
   * page saw them, so a change replaces an object (and its metadata, the only
   * part that changes after seeding) instead of editing it. Cloning every
   * object for each snapshot instead cost a listing of 10,000 a tenth of a second.
   */
  function writable(entry) {
    entry.object = { ...entry.object, metadata: { ...entry.object.metadata } };
    return entry.object;
  }

  function bump(object) {
    revision += 1;
    object.metadata.resourceVersion = String(revision);
  }

  function put(r, object) {
    revision += 1;
    object.metadata.resourceVersion = String(revision);
    const key = keyOf(r, object.metadata.namespace, object.metadata.name);
    if (!objects.has(key)) position.set(key, (positions += 1));
    objects.set(key, { object, resource: r });
    for (const owner of object.metadata.ownerReferences ?? []) {
      if (!byOwner.has(owner.uid)) byOwner.set(owner.uid, new Set());
      byOwner.get(owner.uid).add(key);
    }
    deleted.delete(key);
    return object;
  }

  function baseObject(r, item, ns, name, createdMs, labels, annotations) {
    return {
      apiVersion: apiVersionOf(r),
      kind: r.kind,
      metadata: {
        name,
        namespace: ns,
        uid: item.uid ?? randomUUID(),
        resourceVersion: '0',
        generation: 1,
        creationTimestamp: rfc3339(createdMs),
        labels: { ...labels },
        annotations: { ...annotations },
      },
    };
  }

  const ownerRef = (owner) => ({
    apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name, uid: owner.metadata.uid, controller: true, blockOwnerDeletion: true,
  });

  function podFor(ns, name, createdMs, labels, owner) {
    const pod = baseObject(RESOURCES.pods, {}, ns, name, createdMs, labels, {});
    pod.metadata.ownerReferences = owner ? [ownerRef(owner)] : undefined;
    if (!owner) delete pod.metadata.ownerReferences;
    pod.spec = { containers: [{ name: 'sandbox', image: 'registry.example/sandbox:latest' }], restartPolicy: 'Never' };
    pod.status = { phase: 'Running', podIP: '10.0.0.7', startTime: rfc3339(createdMs) };
    return pod;
  }

  function sandboxFor(ns, name, createdMs, labels, owner) {
    const sandbox = baseObject(RESOURCES.sandboxes, {}, ns, name, createdMs, labels, {});
    if (owner) sandbox.metadata.ownerReferences = [ownerRef(owner)];
    sandbox.spec = { podTemplate: { metadata: {}, spec: { containers: [{ name: 'sandbox', image: 'registry.example/sandbox:latest' }] } } };
    const hash = randomBytes(4).toString('hex');
    sandbox.status = {
      conditions: [{ type: 'Ready', status: 'True', reason: 'DependenciesReady', message: '', lastTransitionTime: rfc3339(createdMs), observedGeneration: 1 }],
      selector: `${SANDBOX_NAME_HASH_LABEL}=${hash}`,
    };
    return { sandbox, hash };
  }

  function seedOne(item) {
    const r = BY_KIND[item?.kind ?? 'Pod'];
    if (!r) throw new Error(`kind ${JSON.stringify(item?.kind)} is none of ${Object.keys(BY_KIND).join(', ')}`);
    const ns = item.namespace ?? namespace;
    const name = item.name;
    for (const [what, v] of [['name', name], ['namespace', ns]]) {
      if (typeof v !== 'string' || !NAME.test(v)) throw new Error(`${r.kind} ${what} ${JSON.stringify(v)} is not a DNS subdomain name`);
    }
    const labels = item.labels ?? {};
    if (typeof labels !== 'object' || Array.isArray(labels) || Object.values(labels).some((v) => typeof v !== 'string')) {
      throw new Error(`${r.kind} ${name}: labels must map strings to strings, got ${JSON.stringify(labels)}`);
    }
    const created = item.creationTimestamp ?? Date.now() - 3_600_000;
    const createdMs = typeof created === 'string' ? Date.parse(created) : created;
    if (!Number.isFinite(createdMs)) throw new Error(`${r.kind} ${name}: creationTimestamp must be epoch ms or RFC 3339, got ${JSON.stringify(created)}`);
    const annotations = item.annotations ?? {};
    const stuck = (object) => {
      // Seeded as already deleting: someone else's finalizer holds it forever.
      if (!item.deleting) return;
      object.metadata.deletionTimestamp = rfc3339(createdMs + 60_000);
      object.metadata.deletionGracePeriodSeconds = 0;
      object.metadata.finalizers = [...(object.metadata.finalizers ?? []), 'example.com/still-cleaning-up'];
    };
    if (r.kind === 'Pod') {
      const pod = podFor(ns, name, createdMs, labels);
      stuck(pod);
      return put(r, pod);
    }
    if (r.kind === 'Sandbox') {
      const { sandbox, hash } = sandboxFor(ns, name, createdMs, labels);
      stuck(sandbox);
      put(r, sandbox);
      if (item.withPod !== false) put(RESOURCES.pods, podFor(ns, name, createdMs, { [SANDBOX_NAME_HASH_LABEL]: hash }, sandbox));
      return sandbox;
    }
    const object = baseObject(r, item, ns, name, createdMs, labels, annotations);
    if (r.kind === 'SandboxClaim') {
      const sandboxName = item.sandboxName ?? name;
      object.metadata.annotations[SANDBOX_NAME_ANNOTATION] = sandboxName;
      object.spec = { warmPoolRef: { name: item.warmPool ?? 'default' }, lifecycle: { shutdownPolicy: 'Retain' } };
      object.status = {
        conditions: [{ type: 'Ready', status: 'True', reason: 'SandboxReady', message: '', lastTransitionTime: rfc3339(createdMs), observedGeneration: 1 }],
        sandbox: { name: sandboxName, podIPs: ['10.0.0.7'] },
      };
      stuck(object);
      put(r, object);
      if (item.withSandbox !== false) {
        const { sandbox, hash } = sandboxFor(ns, sandboxName, createdMs, { [CLAIM_UID_LABEL]: object.metadata.uid }, object);
        put(RESOURCES.sandboxes, sandbox);
        put(RESOURCES.pods, podFor(ns, sandboxName, createdMs, { [CLAIM_UID_LABEL]: object.metadata.uid, [SANDBOX_NAME_HASH_LABEL]: hash }, sandbox));
      }
      return object;
    }
    object.spec = item.spec ?? {};
    stuck(object);
    return put(r, object);
  }

  function seed(list) {
    if (!Array.isArray(list)) throw new Error('seed takes an array of objects');
    settle();
    return list.map((item) => seedOne(item));
  }

  // ---------------------------------------------------------- continue tokens

  const encodeToken = (token) => Buffer.from(JSON.stringify({ v: 'fake.k8s.io/v1', ...token })).toString('base64url');
  function decodeToken(text) {
    try {
      const token = JSON.parse(Buffer.from(text, 'base64url').toString());
      if (token.v !== 'fake.k8s.io/v1' || typeof token.start !== 'string') throw new Error('unknown version');
      return token;
    } catch {
      return null;
    }
  }

  function list(r, ns, url, res) {
    const query = url.searchParams;
    let matches;
    try {
      matches = parseSelector(query.get('labelSelector') ?? '');
    } catch (error) {
      return badRequest(res, error.message);
    }
    let limit = 0;
    if (query.has('limit')) {
      limit = Number(query.get('limit'));
      if (!Number.isInteger(limit)) return badRequest(res, `limit: Invalid value: ${JSON.stringify(query.get('limit'))}`);
      if (limit < 0) limit = 0;
    }
    const prefix = ns === null ? `${r.plural}/` : `${r.plural}/${ns}/`;
    const continueText = query.get('continue') ?? '';
    let token = null;
    if (continueText !== '') {
      token = decodeToken(continueText);
      if (!token || !token.start.startsWith(prefix)) return badRequest(res, 'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
      if (faults.expireContinue > 0 || (token.snapshot !== null && !snapshots.has(token.snapshot))) {
        if (faults.expireContinue > 0) faults.expireContinue -= 1;
        const fresh = encodeToken({ start: token.start, snapshot: null, page: token.page, last: token.last });
        return status(
          res, 410, 'Expired',
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
          undefined, { metadata: { continue: fresh } },
        );
      }
    }
    let all;
    let snapshot = token?.snapshot ?? null;
    let listedAt = revision;
    if (snapshot !== null) {
      ({ all, revision: listedAt } = snapshots.get(snapshot));
    } else {
      settle();
      all = [...objects.entries()].filter(([key]) => key.startsWith(prefix)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([key, entry]) => [key, entry.object]);
    }
    // `all` is in key order: the page starts after the token's key (found by
    // bisection), and unless `remainingItemCount` needs every match counted,
    // reading stops one match past the page (`rest` is then its head).
    let from = 0;
    if (token !== null) {
      for (let to = all.length; from < to;) {
        const mid = (from + to) >> 1;
        if (all[mid][0] > token.start) to = mid;
        else from = mid + 1;
      }
    }
    const wanted = limit > 0 && (query.get('labelSelector') ?? '') !== '' ? limit + 1 : Number.POSITIVE_INFINITY;
    const rest = [];
    for (let at = from; at < all.length && rest.length < wanted; at += 1) {
      if (matches(all[at][1].metadata.labels)) rest.push(all[at]);
    }
    const items = limit > 0 ? rest.slice(0, limit) : rest;
    const page = (token?.page ?? 0) + 1;
    const metadata = { resourceVersion: String(listedAt) };
    if (items.length < rest.length) {
      if (snapshot === null) {
        // The first page of a paged listing: later pages read what it saw.
        snapshotCount += 1;
        snapshot = revision * 1000 + snapshotCount;
        snapshots.set(snapshot, { all, revision: listedAt });
        while (snapshots.size > SNAPSHOTS_KEPT) snapshots.delete(snapshots.keys().next().value);
      }
      metadata.continue = encodeToken({ start: items[items.length - 1][0], snapshot, page, last: items[items.length - 1][0] });
      if ((query.get('labelSelector') ?? '') === '') metadata.remainingItemCount = rest.length - items.length;
    }
    let shown = items.map(([, object]) => object);
    if (faults.repeatAcrossPages && token?.last) {
      const previous = all.find(([key]) => key === token.last);
      if (previous) shown = [previous[1], ...shown];
    }
    if (r.kind === 'Pod') {
      // A typed list's items carry no apiVersion / kind.
      shown = shown.map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
    }
    const body = { kind: `${r.kind}List`, apiVersion: apiVersionOf(r), metadata, items: faults.malformedPage === page ? 'not a list' : shown };
    return json(res, 200, body);
  }

  function get(r, ns, name, res) {
    settle();
    const entry = objects.get(keyOf(r, ns, name));
    return entry ? json(res, 200, entry.object) : notFound(res, r, name);
  }

  /** Marks an object and everything it owns (transitively) deleting, gone at `goneAt`. */
  function markDeleting(entry, goneAt, foreground, now) {
    const { metadata } = writable(entry);
    if (metadata.deletionTimestamp === undefined) {
      metadata.deletionTimestamp = rfc3339(now);
      if (entry.resource.kind === 'Pod') metadata.deletionGracePeriodSeconds = 30;
      else metadata.deletionGracePeriodSeconds = 0;
      entry.goneAt = goneAt;
      pushSettling([goneAt, keyOf(entry.resource, metadata.namespace, metadata.name), entry]);
    }
    if (foreground && !(metadata.finalizers ?? []).includes(FOREGROUND)) metadata.finalizers = [...(metadata.finalizers ?? []), FOREGROUND];
    if ((metadata.finalizers ?? []).some((f) => f !== FOREGROUND)) delete entry.goneAt; // someone else's finalizer holds it
    bump(entry.object);
    for (const [, dependent] of dependentsOf(metadata.uid)) markDeleting(dependent, goneAt, false, now);
  }

  async function readBody(req) {
    let body = '';
    for await (const chunk of req) body += chunk;
    return body;
  }

  async function remove(r, ns, name, req, url, res, log) {
    const text = await readBody(req);
    let options = {};
    if (text.trim() !== '') {
      try {
        options = JSON.parse(text);
      } catch (error) {
        return badRequest(res, `error decoding DeleteOptions: ${error.message}`);
      }
      log.body = options;
    }
    const propagationPolicy = options.propagationPolicy ?? url.searchParams.get('propagationPolicy') ?? undefined;
    const graceText = options.gracePeriodSeconds ?? url.searchParams.get('gracePeriodSeconds') ?? undefined;
    if (propagationPolicy !== undefined && propagationPolicy !== null && !POLICIES.includes(propagationPolicy)) {
      return status(res, 422, 'Invalid', `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "${propagationPolicy}": supported values: "Foreground", "Background", "Orphan", "nil"`);
    }
    log.propagationPolicy = propagationPolicy ?? null;
    deletes += 1;
    if (faults.hangDeletes) return hang(res);
    if (faults.rateLimitDeletes > 0) {
      faults.rateLimitDeletes -= 1;
      return status(res, 429, 'TooManyRequests', 'Too many requests, please try again later.', { retryAfterSeconds: faults.retryAfterSeconds }, {}, { 'retry-after': String(faults.retryAfterSeconds) });
    }
    if (faults.failDeleteEvery > 0 && deletes % faults.failDeleteEvery === 0) {
      return status(res, 500, 'InternalError', 'Internal error occurred: fake failure', { causes: [{ message: 'fake failure' }] });
    }
    settle();
    const key = keyOf(r, ns, name);
    const entry = objects.get(key);
    if (!entry) return notFound(res, r, name);
    const now = Date.now();
    const { metadata } = entry.object;
    if (metadata.deletionTimestamp !== undefined) return json(res, 200, entry.object);
    const policy = propagationPolicy ?? 'Background';
    const grace = graceText === undefined || graceText === null ? undefined : Number(graceText);
    const immediate = r.kind === 'Pod' ? grace === 0 && policy !== 'Foreground' : policy !== 'Foreground';
    if (!immediate) {
      markDeleting(entry, now + settings.deletingMs, policy === 'Foreground', now);
      if (r.kind === 'Pod' && grace !== undefined) entry.object.metadata.deletionGracePeriodSeconds = grace;
      return json(res, 200, entry.object);
    }
    // Gone at once; its dependents go after (Background) or stay, unowned (Orphan).
    const last = structuredClone(entry.object);
    objects.delete(key);
    deleted.add(key);
    revision += 1;
    for (const [, dependent] of dependentsOf(metadata.uid)) {
      if (policy === 'Orphan') {
        const unowned = writable(dependent);
        unowned.metadata.ownerReferences = unowned.metadata.ownerReferences.filter((o) => o.uid !== metadata.uid);
        bump(unowned);
      } else {
        markDeleting(dependent, now + settings.deletingMs, false, now);
      }
    }
    if (r.kind === 'Pod') {
      last.metadata.deletionTimestamp = rfc3339(now);
      last.metadata.deletionGracePeriodSeconds = 0;
      return json(res, 200, last);
    }
    return json(res, 200, {
      kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: { ...detailsOf(r, name), uid: metadata.uid },
    });
  }

  // ---------------------------------------------------------- discovery

  const groups = () => {
    const byGroup = new Map();
    for (const r of Object.values(RESOURCES)) {
      if (!r.group) continue;
      if (!byGroup.has(r.group)) byGroup.set(r.group, new Set());
      byGroup.get(r.group).add(r.version);
    }
    return [...byGroup.entries()].map(([name, versions]) => {
      const list = [...versions].map((version) => ({ groupVersion: `${name}/${version}`, version }));
      return { name, versions: list, preferredVersion: list[0] };
    });
  };

  function resourceList(group, version) {
    const resources = Object.values(RESOURCES).filter((r) => r.group === group && r.version === version);
    if (resources.length === 0) return null;
    return {
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: group ? `${group}/${version}` : version,
      resources: resources.flatMap((r) => [
        { name: r.plural, singularName: r.singular, namespaced: true, kind: r.kind, verbs: VERBS, ...(r.shortNames.length ? { shortNames: r.shortNames } : {}), storageVersionHash: Buffer.from(r.kind).toString('base64').slice(0, 11) },
        { name: `${r.plural}/status`, singularName: '', namespaced: true, kind: r.kind, verbs: ['get', 'patch', 'update'] },
      ]),
    };
  }

  function discovery(path, res, port) {
    if (path === '/version') {
      return json(res, 200, { major: '1', minor: '34', gitVersion: 'v1.34.0-fake', gitCommit: '0000000000000000000000000000000000000000', gitTreeState: 'clean', buildDate: '2026-01-01T00:00:00Z', goVersion: 'go1.24.0', compiler: 'gc', platform: 'linux/amd64' });
    }
    if (path === '/api') return json(res, 200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: `127.0.0.1:${port}` }] });
    if (path === '/api/v1') return json(res, 200, resourceList('', 'v1'));
    if (path === '/apis') return json(res, 200, { kind: 'APIGroupList', apiVersion: 'v1', groups: groups() });
    const group = path.match(/^\/apis\/([^/]+)$/);
    if (group) {
      const found = groups().find((g) => g.name === group[1]);
      return found ? json(res, 200, { kind: 'APIGroup', apiVersion: 'v1', ...found }) : noRoute(res);
    }
    const groupVersion = path.match(/^\/apis\/([^/]+)\/([^/]+)$/);
    if (groupVersion) {
      const found = resourceList(groupVersion[1], groupVersion[2]);
      return found ? json(res, 200, found) : noRoute(res);
    }
    return undefined;
  }

  // ---------------------------------------------------------- routing

  /** `{r, ns, name}` for a resource path, or null. */
  function route(path) {
    const m = path.match(/^\/(?:api\/(v1)|apis\/([^/]+)\/([^/]+))(?:\/namespaces\/([^/]+))?\/([^/]+)(?:\/([^/]+))?$/);
    if (!m) return null;
    const [, coreVersion, group = '', groupVersion, ns = null, plural, name = null] = m;
    const version = coreVersion ?? groupVersion;
    const r = RESOURCES[plural];
    if (!r || r.group !== group || r.version !== version) return null;
    return { r, ns: ns === null ? null : decodeURIComponent(ns), name: name === null ? null : decodeURIComponent(name) };
  }

  function authenticate(req) {
    const socket = req.socket;
    if (socket.authorized && socket.getPeerCertificate()?.subject) return 'cert';
    const header = req.headers.authorization ?? '';
    if (header === `Bearer ${token}`) return 'token';
    return null;
  }

  function serve(req, url, res, log) {
    if (log.auth === null) return status(res, 401, 'Unauthorized', 'Unauthorized');
    const path = url.pathname.replace(/\/$/, '') || '/';
    if (req.method === 'GET') {
      const answered = discovery(path, res, server.address().port);
      if (answered !== undefined) return answered;
    }
    const target = route(path);
    if (!target) return noRoute(res);
    const { r, ns, name } = target;
    if (name === null) {
      if (req.method !== 'GET') return status(res, 405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`, {});
      if (faults.hangLists) return hang(res);
      return list(r, ns, url, res);
    }
    if (ns === null) return noRoute(res); // every served kind is namespaced
    if (req.method === 'GET') return get(r, ns, name, res);
    if (req.method === 'DELETE') {
      remove(r, ns, name, req, url, res, log).catch((error) => badRequest(res, String(error)));
      return undefined;
    }
    return status(res, 405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {});
  }

  function state() {
    settle();
    const alive = [...objects.keys()].sort();
    return {
      alive: alive.map(label),
      deleting: alive.filter((key) => objects.get(key).object.metadata.deletionTimestamp !== undefined).map(label),
      deleted: [...deleted].sort().map(label),
      requests: requests.map((r) => ({ ...r })),
      deletes,
      abandoned,
      revision,
    };
  }

  function reset() {
    objects.clear();
    settling.length = 0;
    byOwner.clear();
    position.clear();
    deleted.clear();
    snapshots.clear();
    requests.length = 0;
    faults = { ...NO_FAULTS };
    settings = { deletingMs };
    deletes = 0;
    for (const stuck of [...hanging]) {
      hanging.delete(stuck);
      stuck.destroy();
    }
    abandoned = 0;
  }

  function setFaults(more) {
    const { deletingMs: ms, ...rest } = more ?? {};
    if (ms !== undefined) {
      if (!Number.isInteger(ms) || ms < 0) throw new Error(`deletingMs must be a whole number of ms, got ${JSON.stringify(ms)}`);
      settings = { ...settings, deletingMs: ms };
    }
    for (const name of Object.keys(rest)) {
      if (!(name in NO_FAULTS)) throw new Error(`unknown fault ${JSON.stringify(name)}: one of ${Object.keys(NO_FAULTS).join(', ')}, deletingMs`);
    }
    faults = { ...faults, ...rest };
    return { ...faults, deletingMs: settings.deletingMs };
  }

  async function control(req, url, res) {
    const body = await readBody(req);
    const input = body ? JSON.parse(body) : undefined;
    switch (`${req.method} ${url.pathname}`) {
      case 'POST /_fake/sandboxes':
      case 'POST /_fake/objects': {
        const made = seed(input);
        return json(res, 200, { seeded: made.map((o) => `${o.kind}/${o.metadata.namespace}/${o.metadata.name}`), alive: state().alive.length });
      }
      case 'POST /_fake/faults':
        return json(res, 200, setFaults(input));
      case 'POST /_fake/reset':
        reset();
        return json(res, 200, {});
      case 'GET /_fake/state':
        return json(res, 200, state());
      default:
        return status(res, 404, 'NotFound', 'no such control route');
    }
  }

  const server = https.createServer(
    { key: certs.serverKey, cert: certs.serverCert, ca: certs.ca, requestCert: true, rejectUnauthorized: false },
    (req, res) => {
      const url = new URL(req.url, 'https://fake');
      if (url.pathname.startsWith('/_fake/')) {
        control(req, url, res).catch((error) => badRequest(res, String(error.message ?? error)));
        return;
      }
      const log = { method: req.method, path: url.pathname, query: url.search, auth: authenticate(req) };
      requests.push(log);
      if (faults.latencyMs > 0) {
        setTimeout(() => serve(req, url, res, log), faults.latencyMs);
        return;
      }
      serve(req, url, res, log);
    },
  );
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `https://127.0.0.1:${server.address().port}`;

  const files = {
    caFile: join(dir, 'ca.crt'),
    kubeconfigToken: join(dir, 'kubeconfig-token.yaml'),
    kubeconfigCert: join(dir, 'kubeconfig-cert.yaml'),
    kubeconfigExec: join(dir, 'kubeconfig-exec.yaml'),
    kubeconfigForeign: join(dir, 'kubeconfig-foreign.yaml'),
  };
  const credential = JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token } });
  writeFileSync(files.kubeconfigToken, kubeconfig(url, certs.ca, { name: 'token-user', token }, namespace));
  writeFileSync(files.kubeconfigCert, kubeconfig(url, certs.ca, { name: 'cert-user', cert: certs.clientCert, key: certs.clientKey }, namespace));
  writeFileSync(files.kubeconfigExec, kubeconfig(url, certs.ca, { name: 'exec-user', exec: { command: process.execPath, args: ['-e', `process.stdout.write(${JSON.stringify(credential)})`] } }, namespace));
  writeFileSync(files.kubeconfigForeign, kubeconfig(url, certs.ca, { name: 'foreign-user', cert: certs.foreignCert, key: certs.foreignKey }, namespace));

  return {
    url,
    token,
    namespace,
    dir,
    ...files,
    ca: certs.ca,
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
      server.close(() => {
        rmSync(dir, { recursive: true, force: true });
        resolve();
      });
    }),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const at = process.argv.indexOf('--token');
  const fake = await startFakeKubernetes({ token: at > 0 ? process.argv[at + 1] : DEFAULT_TOKEN });
  const { url, token, caFile, kubeconfigToken, kubeconfigCert, kubeconfigExec, kubeconfigForeign, dir, namespace } = fake;
  process.stdout.write(`${JSON.stringify({ url, token, namespace, caFile, kubeconfigToken, kubeconfigCert, kubeconfigExec, kubeconfigForeign, dir })}\n`);
  // Serve until whoever started us closes our stdin (or exits).
  process.stdin.resume();
  process.stdin.on('end', () => fake.close().then(() => process.exit(0)));
}
