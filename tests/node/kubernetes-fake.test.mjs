// The Kubernetes fake (tests/fakes/kubernetes.mjs) is only as good as its
// proof: the official Node client (npm `@kubernetes/client-node`, pinned in
// bindings-node's devDependencies) must accept it, loaded from the
// kubeconfigs the fake writes (bearer token, client certificate, exec
// plugin): discovery, every page of a labelled listing (limit + continue),
// across namespaces, a get, a foreground delete and what follows, not found,
// an expired continue, refusals and the faults, each read as the client reads
// a real cluster's. tests/python/test_kubernetes_fake.py does the same with
// the PyPI `kubernetes` package.

import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

import { needs } from './services.mjs';
import { startFakeKubernetes, CLAIM_UID_LABEL } from '../fakes/kubernetes.mjs';

const require = createRequire(new URL('../../bindings-node/package.json', import.meta.url));
// @kubernetes/client-node 1.x is ESM only.
const k8s = await import(pathToFileURL(require.resolve('@kubernetes/client-node')).href);
const { KubeConfig, CoreV1Api, CustomObjectsApi, ApisApi, CoreApi, KubernetesObjectApi, ApiException } = k8s;

let opensslFound = true;
try {
  execFileSync('openssl', ['version'], { stdio: 'ignore' });
} catch {
  opensslFound = false;
}
const skip = needs('openssl', opensslFound, 'the Kubernetes fake makes its CA and certificates with it');

const OWNER = 'sandbox-reclaim.dev/owner';
const SANDBOX = { group: 'agents.x-k8s.io', version: 'v1beta1', plural: 'sandboxes' };
const CLAIM = { group: 'extensions.agents.x-k8s.io', version: 'v1beta1', plural: 'sandboxclaims' };
const t0 = Date.UTC(2026, 0, 1);
const name = (prefix, i) => `${prefix}-${String(i).padStart(3, '0')}`;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const api = (fake) => fake.state().requests;

function config(file) {
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  return kc;
}
const fromText = (text) => {
  const kc = new KubeConfig();
  kc.loadFromString(text);
  return kc;
};

const apiError = (code, reason) => (error) => {
  assert.ok(error instanceof ApiException, `an ApiException, got ${error}`);
  assert.equal(error.code, code);
  if (code === 401) {
    assert.equal(error.body, undefined, 'the client throws a 401 without its body');
    return true;
  }
  const body = typeof error.body === 'string' ? JSON.parse(error.body) : error.body;
  assert.equal(body.kind, 'Status');
  assert.equal(body.reason, reason);
  assert.equal(body.code, code);
  return true;
};

async function withFake(body, options) {
  const fake = await startFakeKubernetes(options);
  try {
    await body(fake);
  } finally {
    await fake.close();
  }
}

/** Seeds `count` claims in `namespace`, the odd ones ours; each claim brings its Sandbox and Pod. */
function seedClaims(fake, count, namespace = 'default', prefix = 'claim') {
  fake.seed(Array.from({ length: count }, (_, i) => ({
    kind: 'SandboxClaim',
    namespace,
    name: name(prefix, i),
    labels: i % 2 ? { [OWNER]: 'ci', run: `r${i}` } : { [OWNER]: 'someone-else' },
    creationTimestamp: t0 + i * 1000,
  })));
}

/** Every item of a listing, page by page, as a sweep reads it: `list(continueToken)` answers `{metadata, items}`. */
async function everyPage(list) {
  const seen = [];
  let token;
  let pages = 0;
  do {
    const page = await list(token);
    pages += 1;
    seen.push(...page.items);
    token = page.metadata?._continue ?? page.metadata?.continue;
  } while (token);
  return { seen, pages };
}

test('the three kubeconfigs (token, client certificate, exec plugin) each authenticate the client', { skip }, async () => {
  await withFake(async (fake) => {
    fake.seed([{ kind: 'Pod', name: 'solo', labels: { [OWNER]: 'ci' } }]);
    for (const [file, auth] of [[fake.kubeconfigToken, 'token'], [fake.kubeconfigCert, 'cert'], [fake.kubeconfigExec, 'token']]) {
      const kc = config(file);
      assert.equal(kc.getCurrentContext(), 'fake');
      assert.equal(kc.getContextObject('fake').namespace, 'default');
      const pods = await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: 'default' });
      assert.deepEqual(pods.items.map((p) => p.metadata.name), ['solo']);
      assert.equal(api(fake).at(-1).auth, auth, file);
    }
  });
});

test('a wrong token, a certificate from another CA and no credentials are refused with 401 Unauthorized', { skip }, async () => {
  await withFake(async (fake) => {
    const wrong = fromText(readFileSync(fake.kubeconfigToken, 'utf8').replace(fake.token, 'not-the-token'));
    await assert.rejects(wrong.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: 'default' }), apiError(401, 'Unauthorized'));
    await assert.rejects(config(fake.kubeconfigForeign).makeApiClient(CoreV1Api).listNamespacedPod({ namespace: 'default' }), apiError(401, 'Unauthorized'));
    const anonymous = fromText(readFileSync(fake.kubeconfigToken, 'utf8').replace(/^ {4}token: .*$/m, '    username: "nobody"'));
    await assert.rejects(anonymous.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({ ...CLAIM, namespace: 'default' }), apiError(401, 'Unauthorized'));
    assert.deepEqual(api(fake).map((r) => r.auth), [null, null, null]);
    // The client drops a 401's body (its generated code throws `Unauthorized` bare); the fake sends a cluster's.
    const raw = await new Promise((resolve, reject) => {
      https.get(`${fake.url}/api/v1/namespaces/default/pods`, { ca: fake.ca, headers: { authorization: 'Bearer nope' } }, (res) => {
        let body = '';
        res.on('data', (chunk) => { body += chunk; });
        res.on('end', () => resolve({ status: res.statusCode, body: JSON.parse(body) }));
      }).on('error', reject);
    });
    assert.deepEqual(raw, { status: 401, body: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'Unauthorized', reason: 'Unauthorized', code: 401 } });
  });
});

test('discovery: /api, /api/v1, /apis and each group version, and KubernetesObjectApi resolves the kinds through it', { skip }, async () => {
  await withFake(async (fake) => {
    const kc = config(fake.kubeconfigCert);
    assert.deepEqual((await kc.makeApiClient(CoreApi).getAPIVersions()).versions, ['v1']);
    const core = await kc.makeApiClient(CoreV1Api).getAPIResources();
    assert.equal(core.groupVersion, 'v1');
    assert.deepEqual(core.resources.find((r) => r.name === 'pods').kind, 'Pod');
    const groups = await kc.makeApiClient(ApisApi).getAPIVersions();
    assert.deepEqual(groups.groups.map((g) => [g.name, g.preferredVersion.groupVersion]), [
      ['agents.x-k8s.io', 'agents.x-k8s.io/v1beta1'],
      ['extensions.agents.x-k8s.io', 'extensions.agents.x-k8s.io/v1beta1'],
    ]);
    const extensions = await kc.makeApiClient(CustomObjectsApi).getAPIResources({ group: CLAIM.group, version: CLAIM.version });
    const claims = extensions.resources.find((r) => r.name === 'sandboxclaims');
    assert.equal(claims.kind, 'SandboxClaim');
    assert.equal(claims.namespaced, true);
    assert.ok(claims.verbs.includes('list') && claims.verbs.includes('delete'));

    seedClaims(fake, 3);
    const objects = KubernetesObjectApi.makeApiClient(kc);
    const listed = await objects.list('extensions.agents.x-k8s.io/v1beta1', 'SandboxClaim', 'default', undefined, undefined, undefined, undefined, `${OWNER}=ci`);
    assert.deepEqual(listed.items.map((o) => o.metadata.name), ['claim-001']);
    const sandboxes = await objects.list('agents.x-k8s.io/v1beta1', 'Sandbox', 'default');
    assert.deepEqual(sandboxes.items.map((o) => o.metadata.name), ['claim-000', 'claim-001', 'claim-002']);
    assert.ok(api(fake).some((r) => r.path === '/apis/extensions.agents.x-k8s.io/v1beta1'), 'resolved through discovery');
  });
});

test('CustomObjectsApi lists every labelled claim once, page after page, in a namespace and across namespaces', { skip }, async () => {
  await withFake(async (fake) => {
    seedClaims(fake, 57, 'team-a');
    seedClaims(fake, 9, 'team-b');
    const objects = config(fake.kubeconfigToken).makeApiClient(CustomObjectsApi);
    const selector = `${OWNER}=ci`;
    const { seen, pages } = await everyPage((token) => objects.listNamespacedCustomObject({ ...CLAIM, namespace: 'team-a', labelSelector: selector, limit: 10, _continue: token }));
    assert.equal(pages, 3);
    assert.deepEqual(seen.map((o) => o.metadata.name), Array.from({ length: 28 }, (_, i) => name('claim', 2 * i + 1)));
    const first = seen[0];
    assert.equal(first.apiVersion, 'extensions.agents.x-k8s.io/v1beta1');
    assert.equal(first.kind, 'SandboxClaim');
    assert.equal(first.metadata.creationTimestamp, '2026-01-01T00:00:01Z');
    assert.equal(first.metadata.labels.run, 'r1');
    assert.equal(first.status.sandbox.name, 'claim-001');
    const lists = api(fake);
    assert.deepEqual(lists.map((r) => new URLSearchParams(r.query).get('limit')), ['10', '10', '10']);
    assert.ok(lists.every((r) => new URLSearchParams(r.query).get('labelSelector') === selector));
    assert.equal(new URLSearchParams(lists[0].query).get('continue'), null);

    // Across namespaces (`/apis/<g>/<v>/<plural>`), with set-based and negated selectors too.
    const across = await everyPage((token) => objects.listClusterCustomObject({ ...CLAIM, labelSelector: `${OWNER} in (ci),run!=r3`, limit: 7, _continue: token }));
    assert.equal(across.seen.length, 28 + 4 - 2);
    assert.deepEqual([...new Set(across.seen.map((o) => o.metadata.namespace))], ['team-a', 'team-b']);
    assert.ok(!across.seen.some((o) => o.metadata.labels.run === 'r3'));
    assert.equal(api(fake).at(-1).path, '/apis/extensions.agents.x-k8s.io/v1beta1/sandboxclaims');

    // Without a selector a page says how many remain.
    const page = await objects.listNamespacedCustomObject({ ...CLAIM, namespace: 'team-b', limit: 4 });
    assert.equal(page.metadata.remainingItemCount, 5);
    assert.equal(typeof page.metadata.resourceVersion, 'string');

    // Each claim's Sandbox is owned by it and carries its uid.
    const sandbox = await objects.getNamespacedCustomObject({ ...SANDBOX, namespace: 'team-a', name: 'claim-001' });
    assert.equal(sandbox.metadata.ownerReferences[0].kind, 'SandboxClaim');
    assert.equal(sandbox.metadata.ownerReferences[0].uid, first.metadata.uid);
    assert.equal(sandbox.metadata.labels[CLAIM_UID_LABEL], first.metadata.uid);
  });
});

test('CoreV1Api lists labelled pods page by page, in a namespace and in all of them, typed', { skip }, async () => {
  await withFake(async (fake) => {
    fake.seed(Array.from({ length: 25 }, (_, i) => ({
      kind: 'Pod', namespace: i < 20 ? 'default' : 'other', name: name('pod', i), labels: i % 5 ? { [OWNER]: 'ci' } : {}, creationTimestamp: t0 + i * 1000,
    })));
    const core = config(fake.kubeconfigCert).makeApiClient(CoreV1Api);
    const { seen, pages } = await everyPage((token) => core.listNamespacedPod({ namespace: 'default', labelSelector: OWNER, limit: 5, _continue: token }));
    assert.equal(pages, 4);
    assert.equal(seen.length, 16);
    assert.ok(seen[0].metadata.creationTimestamp instanceof Date, 'the typed client parses the time');
    assert.equal(seen[0].metadata.creationTimestamp.getTime(), t0 + 1000);
    assert.equal(seen[0].spec.containers[0].name, 'sandbox');
    const all = await everyPage((token) => core.listPodForAllNamespaces({ labelSelector: `!${OWNER}`, limit: 2, _continue: token }));
    assert.deepEqual(all.seen.map((p) => `${p.metadata.namespace}/${p.metadata.name}`), ['default/pod-000', 'default/pod-005', 'default/pod-010', 'default/pod-015', 'other/pod-020']);
    assert.equal(api(fake).at(-1).path, '/api/v1/pods');
  });
});

test('a continued listing reads the first page\'s snapshot; an expired continue answers 410 Expired with a fresh token', { skip }, async () => {
  await withFake(async (fake) => {
    seedClaims(fake, 12);
    const objects = config(fake.kubeconfigToken).makeApiClient(CustomObjectsApi);
    const first = await objects.listNamespacedCustomObject({ ...CLAIM, namespace: 'default', limit: 5 });
    const token = first.metadata.continue;
    assert.ok(token);
    // Gone after the first page, still in the snapshot the continue reads.
    await objects.deleteNamespacedCustomObject({ ...CLAIM, namespace: 'default', name: 'claim-007', propagationPolicy: 'Background' });
    const second = await objects.listNamespacedCustomObject({ ...CLAIM, namespace: 'default', limit: 5, _continue: token });
    assert.deepEqual(second.items.map((o) => o.metadata.name), ['claim-005', 'claim-006', 'claim-007', 'claim-008', 'claim-009']);
    assert.equal(second.metadata.resourceVersion, first.metadata.resourceVersion);

    fake.setFaults({ expireContinue: 1 });
    let fresh;
    await assert.rejects(objects.listNamespacedCustomObject({ ...CLAIM, namespace: 'default', limit: 5, _continue: token }), (error) => {
      apiError(410, 'Expired')(error);
      const body = typeof error.body === 'string' ? JSON.parse(error.body) : error.body;
      assert.match(body.message, /^The provided continue parameter is too old to display a consistent list result/);
      fresh = body.metadata.continue;
      return true;
    });
    assert.ok(fresh && fresh !== token);
    // The fresh token goes on from the same place, over what is there now.
    const inconsistent = await objects.listNamespacedCustomObject({ ...CLAIM, namespace: 'default', limit: 5, _continue: fresh });
    assert.deepEqual(inconsistent.items.map((o) => o.metadata.name), ['claim-005', 'claim-006', 'claim-008', 'claim-009', 'claim-010']);
    // Restarting without continue lists everything there is now.
    const again = await everyPage((t) => objects.listNamespacedCustomObject({ ...CLAIM, namespace: 'default', limit: 5, _continue: t }));
    assert.equal(again.seen.length, 11);
    await assert.rejects(objects.listNamespacedCustomObject({ ...CLAIM, namespace: 'default', _continue: 'garbage' }), apiError(400, 'BadRequest'));
  });
});

test('get by name, and 404 NotFound for a missing name', { skip }, async () => {
  await withFake(async (fake) => {
    seedClaims(fake, 2);
    const kc = config(fake.kubeconfigToken);
    const objects = kc.makeApiClient(CustomObjectsApi);
    const claim = await objects.getNamespacedCustomObject({ ...CLAIM, namespace: 'default', name: 'claim-001' });
    assert.equal(claim.metadata.name, 'claim-001');
    assert.equal(claim.spec.warmPoolRef.name, 'default');
    await assert.rejects(objects.getNamespacedCustomObject({ ...CLAIM, namespace: 'default', name: 'nope' }), (error) => {
      apiError(404, 'NotFound')(error);
      const body = typeof error.body === 'string' ? JSON.parse(error.body) : error.body;
      assert.equal(body.message, 'sandboxclaims.extensions.agents.x-k8s.io "nope" not found');
      assert.deepEqual(body.details, { name: 'nope', group: 'extensions.agents.x-k8s.io', kind: 'sandboxclaims' });
      return true;
    });
    await assert.rejects(objects.getNamespacedCustomObject({ ...CLAIM, namespace: 'elsewhere', name: 'claim-001' }), apiError(404, 'NotFound'));
    const core = kc.makeApiClient(CoreV1Api);
    assert.equal((await core.readNamespacedPod({ namespace: 'default', name: 'claim-000' })).metadata.ownerReferences[0].kind, 'Sandbox');
    await assert.rejects(core.readNamespacedPod({ namespace: 'default', name: 'nope' }), apiError(404, 'NotFound'));
  });
});

test('a foreground delete: deletionTimestamp and foregroundDeletion first (the Sandbox and Pod too), then gone; again is 200, then 404', { skip }, async () => {
  await withFake(async (fake) => {
    fake.setFaults({ deletingMs: 800 });
    seedClaims(fake, 2);
    const kc = config(fake.kubeconfigCert);
    const objects = kc.makeApiClient(CustomObjectsApi);
    const answer = await objects.deleteNamespacedCustomObject({ ...CLAIM, namespace: 'default', name: 'claim-001', propagationPolicy: 'Foreground' });
    assert.equal(answer.kind, 'SandboxClaim');
    assert.match(answer.metadata.deletionTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.deepEqual(answer.metadata.finalizers, ['foregroundDeletion']);
    const sent = api(fake).at(-1);
    assert.equal(sent.method, 'DELETE');
    assert.equal(sent.propagationPolicy, 'Foreground');

    // Still there, still listed, deleting; so are its Sandbox and Pod.
    const listed = await objects.listNamespacedCustomObject({ ...CLAIM, namespace: 'default' });
    assert.equal(listed.items.find((o) => o.metadata.name === 'claim-001').metadata.deletionTimestamp, answer.metadata.deletionTimestamp);
    assert.deepEqual(fake.state().deleting, ['Pod/default/claim-001', 'SandboxClaim/default/claim-001', 'Sandbox/default/claim-001']);
    const sandbox = await objects.getNamespacedCustomObject({ ...SANDBOX, namespace: 'default', name: 'claim-001' });
    assert.ok(sandbox.metadata.deletionTimestamp);
    // Deleting it again changes nothing.
    const again = await objects.deleteNamespacedCustomObject({ ...CLAIM, namespace: 'default', name: 'claim-001', propagationPolicy: 'Foreground' });
    assert.equal(again.metadata.deletionTimestamp, answer.metadata.deletionTimestamp);

    await sleep(900);
    await assert.rejects(objects.getNamespacedCustomObject({ ...CLAIM, namespace: 'default', name: 'claim-001' }), apiError(404, 'NotFound'));
    await assert.rejects(objects.getNamespacedCustomObject({ ...SANDBOX, namespace: 'default', name: 'claim-001' }), apiError(404, 'NotFound'));
    await assert.rejects(objects.deleteNamespacedCustomObject({ ...CLAIM, namespace: 'default', name: 'claim-001', propagationPolicy: 'Foreground' }), apiError(404, 'NotFound'));
    assert.deepEqual(fake.state().alive, ['Pod/default/claim-000', 'SandboxClaim/default/claim-000', 'Sandbox/default/claim-000']);

    // The same through the body's DeleteOptions, and for a Pod through CoreV1Api.
    fake.seed([{ kind: 'Pod', name: 'lone', labels: { [OWNER]: 'ci' } }]);
    const core = kc.makeApiClient(CoreV1Api);
    const pod = await core.deleteNamespacedPod({ namespace: 'default', name: 'lone', body: { propagationPolicy: 'Foreground' } });
    assert.ok(pod.metadata.deletionTimestamp instanceof Date);
    assert.deepEqual(pod.metadata.finalizers, ['foregroundDeletion']);
    assert.deepEqual(api(fake).at(-1).body, { propagationPolicy: 'Foreground' });
    await sleep(900);
    await assert.rejects(core.readNamespacedPod({ namespace: 'default', name: 'lone' }), apiError(404, 'NotFound'));

    // A background delete of a claim: gone at once (a Status Success), its Sandbox after.
    const status = await objects.deleteNamespacedCustomObject({ ...CLAIM, namespace: 'default', name: 'claim-000' });
    assert.equal(status.kind, 'Status');
    assert.equal(status.status, 'Success');
    assert.equal(status.details.kind, 'sandboxclaims');
    assert.deepEqual(fake.state().deleting, ['Pod/default/claim-000', 'Sandbox/default/claim-000']);
  });
});

test('an object seeded as deleting stays, deletionTimestamp set, and a delete answers it unchanged', { skip }, async () => {
  await withFake(async (fake) => {
    fake.seed([{ kind: 'Sandbox', name: 'stuck', labels: { [OWNER]: 'ci' }, deleting: true, withPod: false }]);
    const objects = config(fake.kubeconfigToken).makeApiClient(CustomObjectsApi);
    const before = await objects.getNamespacedCustomObject({ ...SANDBOX, namespace: 'default', name: 'stuck' });
    assert.ok(before.metadata.deletionTimestamp);
    const answer = await objects.deleteNamespacedCustomObject({ ...SANDBOX, namespace: 'default', name: 'stuck', propagationPolicy: 'Foreground' });
    assert.deepEqual(answer.metadata, before.metadata);
    assert.deepEqual(fake.state().alive, ['Sandbox/default/stuck']);
  });
});

test('the faults read as a cluster\'s: 429 with Retry-After, 500 InternalError, a malformed page', { skip }, async () => {
  await withFake(async (fake) => {
    seedClaims(fake, 6);
    const objects = config(fake.kubeconfigToken).makeApiClient(CustomObjectsApi);
    fake.setFaults({ rateLimitDeletes: 1, retryAfterSeconds: 2 });
    await assert.rejects(objects.deleteNamespacedCustomObject({ ...CLAIM, namespace: 'default', name: 'claim-000', propagationPolicy: 'Foreground' }), (error) => {
      apiError(429, 'TooManyRequests')(error);
      assert.equal(error.headers['retry-after'], '2');
      return true;
    });
    fake.setFaults({ failDeleteEvery: 2 });
    await assert.rejects(objects.deleteNamespacedCustomObject({ ...CLAIM, namespace: 'default', name: 'claim-000', propagationPolicy: 'Foreground' }), apiError(500, 'InternalError'));
    fake.setFaults({ failDeleteEvery: 0, malformedPage: 2 });
    const page = await objects.listNamespacedCustomObject({ ...CLAIM, namespace: 'default', limit: 3 });
    const next = await objects.listNamespacedCustomObject({ ...CLAIM, namespace: 'default', limit: 3, _continue: page.metadata.continue });
    assert.equal(next.items, 'not a list', 'CustomObjectsApi hands the page over as it came');
    fake.setFaults({ malformedPage: 0, repeatAcrossPages: true });
    const repeated = await everyPage((t) => objects.listNamespacedCustomObject({ ...CLAIM, namespace: 'default', limit: 4, _continue: t }));
    assert.deepEqual(repeated.seen.map((o) => o.metadata.name), ['claim-000', 'claim-001', 'claim-002', 'claim-003', 'claim-003', 'claim-004', 'claim-005']);
  });
});
