// KubernetesProvider through the Node binding, against the Kubernetes API
// fake (tests/fakes/kubernetes.mjs, proven by `@kubernetes/client-node` in
// tests/node/kubernetes-fake.test.mjs): kubeconfigs with a token and a
// client certificate, the options checked before any request, and the fault
// set every hosted vendor meets: a failed delete reaches the ledger without
// the token, throttling waits, a hanging call is cut by its deadline, an
// expired continue restarts once, repeated and deleting objects are handled
// once, a malformed page makes the sweep unavailable, unlabelled strangers
// are never touched and registered ones are found by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import * as binding from '../../bindings-node/index.mjs';
import { startFakeKubernetes } from '../fakes/kubernetes.mjs';

const { KubernetesProvider, InMemorySandboxInstanceStore, reclaimSandbox, reconcile, listLeaks } = binding;

const OWNER_LABEL = 'io.sandbox-reclaim.owner';
const claim = (name, owner, more = {}) => ({ kind: 'SandboxClaim', namespace: 'default', name, labels: owner ? { [OWNER_LABEL]: owner } : {}, ...more });
const make = (fake, options = {}) => new KubernetesProvider({ kubeconfig: fake.kubeconfigToken, requestTimeoutMs: 10_000, ...options });
const run = (key) => ({ runId: `run-${key}`, threadId: 'thread-1', status: 'completed', startedAt: 1, sandboxKey: key });
/** Claims alive and not deleting, by id. */
const liveClaims = (fake) => {
  const { alive, deleting } = fake.state();
  return alive.filter((label) => label.startsWith('SandboxClaim/') && !deleting.includes(label)).map((label) => label.slice('SandboxClaim/'.length).replace('/', '_'));
};
const deletesOf = (fake, name) => fake.state().requests.filter((request) => request.method === 'DELETE' && request.path.endsWith(`/${name}`)).length;

async function storeWith(records) {
  const store = new InMemorySandboxInstanceStore({ ledger: true });
  for (const [key, id] of records) {
    await store.upsert({ key, provider: 'kubernetes', providerSandboxId: id, threadId: 'thread-1', updatedAt: 1 });
  }
  return store;
}

async function withFake(body) {
  const fake = await startFakeKubernetes();
  try {
    await body(fake);
  } finally {
    await fake.close();
  }
}

test('kubernetes: bad options are TypeErrors naming the field, before any request', async () => {
  await withFake(async (fake) => {
    assert.throws(() => make(fake, { kind: 'Deployment' }), { name: 'TypeError', message: /kind/ });
    assert.throws(() => make(fake, { namespace: 'Team A' }), { name: 'TypeError', message: /namespace/ });
    assert.throws(() => make(fake, { owner: 'team/a' }), { name: 'TypeError', message: /owner/ });
    assert.throws(() => make(fake, { context: 'nowhere' }), { name: 'TypeError', message: /context/ });
    assert.throws(() => make(fake, { kubeconfig: '/nonexistent/kubeconfig' }), { name: 'TypeError', message: /kubeconfig/ });
    assert.throws(() => make(fake, { pageSize: 501 }), { name: 'TypeError', message: /pageSize/ });
    assert.deepEqual(fake.state().requests, []);
    const provider = make(fake);
    assert.equal(provider.name, 'kubernetes');
  });
});

test('kubernetes: token and certificate kubeconfigs list our claims, every page, in one namespace or all', async () => {
  await withFake(async (fake) => {
    fake.seed([...Array.from({ length: 5 }, (_, i) => claim(`claim-${i}`, 'sandbox-reclaim')), claim('theirs', 'other'), claim('bare')]);
    fake.seed([{ ...claim('far', 'sandbox-reclaim'), namespace: 'agents' }]);
    for (const kubeconfig of [fake.kubeconfigToken, fake.kubeconfigCert]) {
      const listed = await make(fake, { kubeconfig, pageSize: 2 }).list();
      assert.deepEqual(listed.map((sandbox) => sandbox.id), ['default_claim-0', 'default_claim-1', 'default_claim-2', 'default_claim-3', 'default_claim-4']);
      assert.ok(listed.every((sandbox) => sandbox.owner === 'sandbox-reclaim' && !sandbox.deleting));
    }
    const every = await make(fake, { namespace: '*' }).list();
    assert.ok(every.some((sandbox) => sandbox.id === 'agents_far'));
    const pages = fake.state().requests.filter((request) => request.method === 'GET' && request.path.endsWith('/sandboxclaims'));
    assert.ok(pages.every((page) => page.query.includes('labelSelector=io.sandbox-reclaim.owner%3Dsandbox-reclaim')));
  });
});

test('kubernetes: a wrong token rejects as unauthorized, never printing it', async () => {
  await withFake(async (fake) => {
    const wrong = join(fake.dir, 'wrong.yaml');
    writeFileSync(wrong, readFileSync(fake.kubeconfigToken, 'utf8').replace(fake.token, 'wrong-node-token-value'));
    const provider = make(fake, { kubeconfig: wrong });
    for (const call of [() => provider.checkAccess(), () => provider.list(), () => provider.destroy({ id: 'default_x' })]) {
      await assert.rejects(call(), (error) => /401/.test(error.message) && !error.message.includes('wrong-node-token-value') && !error.message.includes(fake.token));
    }
  });
});

test('kubernetes: a reclaim deletes the claim in the foreground; a failed delete is destroy-failed and reaches the ledger without the token', async () => {
  await withFake(async (fake) => {
    fake.seed([claim('claim-0', 'sandbox-reclaim'), claim('claim-1', 'sandbox-reclaim')]);
    const provider = make(fake);
    const store = await storeWith([['k0', 'default_claim-0'], ['k1', 'default_claim-1']]);
    assert.equal(await reclaimSandbox(run('k0'), { provider, instances: store }), 'destroyed');
    assert.ok(fake.state().deleting.includes('SandboxClaim/default/claim-0'), 'foreground: it waits for its Sandbox and Pod');
    fake.setFaults({ failDeleteEvery: 1 });
    assert.equal(await reclaimSandbox(run('k1'), { provider, instances: store }), 'destroy-failed');
    const leaks = await listLeaks(store);
    assert.deepEqual(leaks.map((leak) => leak.providerSandboxId), ['default_claim-1']);
    assert.match(leaks[0].lastError, /500/);
    assert.ok(!JSON.stringify(leaks).includes(fake.token));
    await assert.rejects(provider.destroy({ id: 'default/claim-1' }), /namespace/);
  });
});

test('kubernetes: a throttled delete waits its Retry-After; a hanging one is cut by the deadline', async () => {
  await withFake(async (fake) => {
    fake.seed([claim('claim-0', 'sandbox-reclaim'), claim('claim-1', 'sandbox-reclaim')]);
    fake.setFaults({ rateLimitDeletes: 1, retryAfterSeconds: 1 });
    const started = Date.now();
    await make(fake).destroy({ id: 'default_claim-0' });
    assert.ok(Date.now() - started >= 1000);
    fake.setFaults({ hangDeletes: true });
    const store = await storeWith([['k1', 'default_claim-1']]);
    assert.equal(await reclaimSandbox(run('k1'), { provider: make(fake), instances: store, destroyTimeoutMs: 200 }), 'destroy-failed');
    for (let tries = 0; fake.state().abandoned === 0 && tries < 100; tries += 1) await new Promise((r) => setTimeout(r, 10));
    assert.equal(fake.state().abandoned, 1);
  });
});

test('kubernetes: reconcile sweeps repeated pages once, never a deleting claim, restarts an expired continue once', async () => {
  await withFake(async (fake) => {
    fake.seed([...Array.from({ length: 6 }, (_, i) => claim(`claim-${i}`, 'sandbox-reclaim')), claim('bare'), claim('stuck', 'sandbox-reclaim', { deleting: true })]);
    fake.setFaults({ repeatAcrossPages: true, expireContinue: 1 });
    const provider = make(fake, { pageSize: 3 });
    const report = await reconcile({ providers: [provider], instances: await storeWith([]), orphanGraceMs: 60_000 });
    const orphans = report.providers[0].orphans;
    assert.equal(orphans.status, 'swept');
    assert.equal(orphans.destroyed, 6);
    for (let i = 0; i < 6; i += 1) assert.equal(deletesOf(fake, `claim-${i}`), 1);
    assert.equal(deletesOf(fake, 'stuck'), 0);
    assert.deepEqual(liveClaims(fake), ['default_bare']);
  });
});

test('kubernetes: a malformed page or continues that keep expiring make the sweep unavailable', async () => {
  for (const faults of [{ malformedPage: 2 }, { expireContinue: 2 }]) {
    await withFake(async (fake) => {
      fake.seed(Array.from({ length: 5 }, (_, i) => claim(`claim-${i}`, 'sandbox-reclaim')));
      fake.setFaults(faults);
      const report = await reconcile({ providers: [make(fake, { pageSize: 2 })], instances: await storeWith([]), orphanGraceMs: 60_000 });
      const orphans = report.providers[0].orphans;
      assert.equal(orphans.status, 'unavailable', JSON.stringify(faults));
      assert.equal(orphans.destroyed, 0);
      assert.equal(liveClaims(fake).length, 5);
    });
  }
});

test('kubernetes: a registered unlabelled claim whose record is gone is found by name; an unregistered one is never touched', async () => {
  await withFake(async (fake) => {
    fake.seed([claim('registered'), claim('stranger')]);
    const store = await storeWith([['k-reg', 'default_registered']]);
    await store.delete('k-reg');
    const report = await reconcile({ providers: [make(fake)], instances: store, orphanGraceMs: 60_000 });
    const orphans = report.providers[0].orphans;
    assert.equal(orphans.status, 'swept');
    assert.equal(orphans.destroyed, 1);
    assert.deepEqual(liveClaims(fake), ['default_stranger']);
    const gets = fake.state().requests.filter((request) => request.method === 'GET' && /sandboxclaims\/./.test(request.path));
    assert.ok(gets.some((request) => request.path.endsWith('/registered')) && !gets.some((request) => request.path.endsWith('/stranger')));
  });
});
