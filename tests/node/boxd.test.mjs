// BoxdProvider through the Node binding, against boxd's gRPC fake
// (tests/fakes/boxd_fake.py, proven by the official `boxd` client in
// tests/python/test_boxd_fake.py), run under the Python that
// SANDBOX_RECLAIM_FAKE_PYTHON names (a venv with `boxd==0.2.19`): without it
// these tests FAIL, never pass. The options checked before any request, the
// API key's exchange and a token sent as is, and the fault set every hosted
// vendor meets: a failed destroy reaches the ledger without the credential,
// throttling waits, a hanging call is cut by its deadline, repeated items and
// a lagging listing are harmless, a malformed listing makes the sweep
// unavailable, unlabelled strangers are never touched and registered ones are
// found by id.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import * as binding from '../../bindings-node/index.mjs';

const { BoxdProvider, InMemorySandboxInstanceStore, reclaimSandbox, reconcile, listLeaks } = binding;

const FAKE = fileURLToPath(new URL('../fakes/boxd_fake.py', import.meta.url));
const API_KEY = 'bxd_node_secret_key';
const TOKEN = 'boxd-node-session-token';
const ORG = 'acme';
const OWNER = 'sandbox-reclaim';
const OWNER_LABEL = 'io.sandbox-reclaim.owner';
const OLD = 1_767_225_600; // 2026-01-01, epoch seconds
/** The variables the core reads for boxd: cleared while a test runs, so only the options count. */
const VARIABLES = ['BOXD_TOKEN', 'BOXD_API_KEY', 'BOXD_ORG', 'BOXD_BASE_URL', 'BOXD_API_URL'];

/** Starts the fake; `close()` ends it. */
async function startFake() {
  const python = process.env.SANDBOX_RECLAIM_FAKE_PYTHON;
  assert.ok(python, 'SANDBOX_RECLAIM_FAKE_PYTHON must name a Python with boxd==0.2.19 to run the boxd fake');
  const child = spawn(python, [FAKE, '--api-key', API_KEY, '--token', TOKEN, '--orgs', ORG], { stdio: ['pipe', 'pipe', 'inherit'] });
  const failed = new Promise((_, reject) => child.once('error', reject));
  const line = await Promise.race([new Promise((resolve) => createInterface({ input: child.stdout }).once('line', resolve)), failed]);
  const { url, control } = JSON.parse(line);
  const call = async (method, route, body) => {
    const response = await fetch(`${control}/_fake/${route}`, { method, body: body === undefined ? undefined : JSON.stringify(body) });
    const answer = await response.json();
    assert.ok(response.ok, `${route}: ${JSON.stringify(answer)}`);
    return answer;
  };
  return {
    url,
    seed: (machines) => call('POST', 'vms', machines),
    faults: (faults) => call('POST', 'faults', faults),
    state: () => call('GET', 'state'),
    close: () => new Promise((resolve) => {
      child.once('exit', resolve);
      child.kill();
    }),
  };
}

/** A machine id (a UUID, as the fake mints them). */
const vmId = (index) => `0c0ffee0-0000-4000-8000-${String(index).padStart(12, '0')}`;
/** A seed machine in `org`: created `index` seconds after OLD, labelled for `owner` (or unlabelled). */
const machine = (index, owner, org = ORG) => ({ id: vmId(index), org, labels: owner ? { [OWNER_LABEL]: owner } : {}, created_at: OLD + index });
const make = (fake, options = {}) => new BoxdProvider({ apiKey: API_KEY, apiUrl: fake.url, org: ORG, requestTimeoutMs: 10_000, ...options });
const run = (key) => ({ runId: `run-${key}`, threadId: 'thread-1', status: 'completed', startedAt: 1, sandboxKey: key });
/** The calls the fake saw of `method` (`POST` for the key exchange). */
const calls = async (fake, method) => (await fake.state()).requests.filter((request) => request.method === method);
const destroysOf = async (fake, id) => (await calls(fake, 'DestroyVm')).filter((request) => request.id === id).length;
const sorted = (ids) => [...ids].sort();

async function storeWith(records) {
  const store = new InMemorySandboxInstanceStore({ ledger: true });
  for (const [key, id] of records) {
    await store.upsert({ key, provider: 'boxd', providerSandboxId: id, threadId: 'thread-1', updatedAt: 1 });
  }
  return store;
}

async function withFake(body) {
  const saved = Object.fromEntries(VARIABLES.map((name) => [name, process.env[name]]));
  for (const name of VARIABLES) delete process.env[name];
  const fake = await startFake();
  try {
    await body(fake);
  } finally {
    await fake.close();
    for (const [name, value] of Object.entries(saved)) if (value !== undefined) process.env[name] = value;
  }
}

test('boxd: bad options are TypeErrors naming the field, before any request', async () => {
  await withFake(async (fake) => {
    assert.throws(() => make(fake, { apiKey: 5 }), { name: 'TypeError', message: /options\.apiKey/ });
    assert.throws(() => make(fake, { apiKey: '' }), (error) =>
      error.name === 'TypeError' && /apiKey/.test(error.message) && error.message.includes('BOXD_TOKEN') && error.message.includes('BOXD_API_KEY'));
    assert.throws(() => make(fake, { org: 5 }), { name: 'TypeError', message: /options\.org/ });
    assert.throws(() => make(fake, { apiUrl: 'ftp://boxd.example' }), { name: 'TypeError', message: /apiUrl/ });
    assert.throws(() => make(fake, { requestTimeoutMs: 0 }), { name: 'TypeError', message: /requestTimeoutMs/ });
    for (const owner of ['', 'x'.repeat(129), 'team\u0000a']) assert.throws(() => make(fake, { owner }), { name: 'TypeError', message: /owner/ });
    assert.deepEqual((await fake.state()).requests, [], 'nothing was sent');
    const provider = make(fake);
    assert.equal(provider.name, 'boxd');
    assert.equal(provider.apiUrl, fake.url);
    assert.ok(!JSON.stringify(provider).includes(API_KEY));
    await provider.checkAccess();
    const exchanges = await calls(fake, 'POST');
    assert.deepEqual(exchanges.map((request) => [request.path, request.status]), [['/api/v1/auth/token', 200]]);
  });
});

test('boxd: a reclaim destroys the machine; a failed destroy is destroy-failed and reaches the ledger without the credential', async () => {
  await withFake(async (fake) => {
    await fake.seed([machine(0, OWNER), machine(1, OWNER)]);
    const provider = make(fake);
    const store = await storeWith([['k0', vmId(0)], ['k1', vmId(1)]]);
    assert.equal(await reclaimSandbox(run('k0'), { provider, instances: store }), 'destroyed');
    assert.deepEqual((await fake.state()).destroyed, [vmId(0)]);
    await fake.faults({ failDeleteEvery: 1 });
    assert.equal(await reclaimSandbox(run('k1'), { provider, instances: store }), 'destroy-failed');
    assert.deepEqual((await fake.state()).alive, [vmId(1)]);
    const leaks = await listLeaks(store);
    assert.deepEqual(leaks.map((leak) => leak.providerSandboxId), [vmId(1)]);
    assert.match(leaks[0].lastError, /INTERNAL/);
    const ledger = JSON.stringify(leaks);
    assert.ok(!ledger.includes(API_KEY) && !ledger.includes('Bearer'), ledger);
  });
});

test('boxd: a throttled destroy waits (boxd gives no hint: a second), and so does a throttled key exchange', async () => {
  await withFake(async (fake) => {
    await fake.seed([machine(0, OWNER)]);
    await fake.faults({ rateLimitDeletes: 1 });
    let started = Date.now();
    await make(fake).destroy({ id: vmId(0) });
    assert.ok(Date.now() - started >= 1_000, `${Date.now() - started} ms`);
    assert.deepEqual((await fake.state()).alive, []);
    assert.equal(await destroysOf(fake, vmId(0)), 2, 'the throttled one, then the one that went');
    await fake.faults({ rateLimitExchanges: 1, retryAfterSeconds: 0.3 });
    started = Date.now();
    await make(fake).checkAccess();
    assert.ok(Date.now() - started >= 300, `${Date.now() - started} ms`);
    assert.deepEqual((await calls(fake, 'POST')).map((request) => request.status), [200, 429, 200]);
  });
});

test('boxd: the destroy deadline cuts the call itself, and the machine reaches the ledger', async () => {
  await withFake(async (fake) => {
    await fake.seed([machine(0, OWNER)]);
    await fake.faults({ hangDeletes: true });
    const store = await storeWith([['k0', vmId(0)]]);
    const started = Date.now();
    assert.equal(await reclaimSandbox(run('k0'), { provider: make(fake), instances: store, destroyTimeoutMs: 300 }), 'destroy-failed');
    assert.ok(Date.now() - started < 5_000);
    for (let tries = 0; (await fake.state()).abandoned === 0 && tries < 100; tries += 1) await new Promise((r) => setTimeout(r, 20));
    assert.equal((await fake.state()).abandoned, 1);
    assert.deepEqual((await listLeaks(store)).map((leak) => leak.providerSandboxId), [vmId(0)]);
    assert.deepEqual((await fake.state()).alive, [vmId(0)]);
  });
});

test('boxd: a wrong key or token rejects naming BOXD_TOKEN and BOXD_API_KEY, never the credential', async () => {
  await withFake(async (fake) => {
    await fake.seed([machine(0, OWNER)]);
    for (const credential of ['bxd_wrong_key_value', 'wrong-session-token-value']) {
      const provider = make(fake, { apiKey: credential });
      for (const call of [() => provider.checkAccess(), () => provider.list(), () => provider.destroy({ id: vmId(0) })]) {
        await assert.rejects(call(), (error) =>
          error.message.includes('BOXD_TOKEN') && error.message.includes('BOXD_API_KEY') && !error.message.includes(credential)
          && !error.message.includes(API_KEY) && !error.message.includes(TOKEN));
      }
    }
    assert.deepEqual((await fake.state()).alive, [vmId(0)]);
    // The key was refused by the exchange (no gRPC call carried it); the token by every call.
    assert.ok((await calls(fake, 'POST')).every((request) => request.status === 401));
    assert.ok((await fake.state()).requests.filter((r) => r.method !== 'POST').every((r) => r.status === 'UNAUTHENTICATED'));
  });
});

test('boxd: reconcile sweeps our labelled machines in the org once, repeated or lagging, and spares the rest', async () => {
  await withFake(async (fake) => {
    const ours = Array.from({ length: 6 }, (_, i) => vmId(i));
    await fake.seed([...ours.map((_, i) => machine(i, OWNER)), machine(20, 'another-team'), machine(21), machine(22, OWNER, '')]);
    // A destroyed machine stays listed a minute as running (a server slow to flip it), and the listing repeats one.
    await fake.faults({ repeatAcrossPages: true, deletedStayListedMs: 60_000, destroyingStatus: 'running' });
    const provider = make(fake);
    const store = await storeWith([]);
    const report = await reconcile({ providers: [provider], instances: store, orphanGraceMs: 60_000 });
    const orphans = report.providers[0].orphans;
    assert.equal(orphans.status, 'swept');
    assert.deepEqual([orphans.listed, orphans.destroyed], [6, 6]);
    assert.deepEqual((await fake.state()).alive, sorted([vmId(20), vmId(21), vmId(22)]), 'another owner, unlabelled, personal: untouched');
    for (const id of ours) assert.equal(await destroysOf(fake, id), 1, `${id}: the repeated one too, once`);
    const lists = await calls(fake, 'ListVms');
    assert.ok(lists.every((list) => list.org === ORG && !list.allContexts && list.labelSelector.join() === `${OWNER_LABEL}=${OWNER}`));
    // Still listed as running: a second pass's destroy is success, nothing fails.
    const again = await reconcile({ providers: [provider], instances: store, orphanGraceMs: 60_000 });
    assert.equal(again.providers[0].orphans.failed, 0);
    assert.equal(again.providers[0].orphans.status, 'swept');
    assert.deepEqual(sorted((await fake.state()).destroyed), sorted(ours), 'each machine destroyed once');
  });
});

test('boxd: a malformed listing makes the sweep unavailable and destroys nothing', async () => {
  await withFake(async (fake) => {
    await fake.seed(Array.from({ length: 4 }, (_, i) => machine(i, OWNER)));
    await fake.faults({ malformedPage: 1 });
    const report = await reconcile({ providers: [make(fake)], instances: await storeWith([]), orphanGraceMs: 60_000 });
    const orphans = report.providers[0].orphans;
    assert.equal(orphans.status, 'unavailable');
    assert.equal(orphans.destroyed, 0);
    assert.match(orphans.error, /ListVms/);
    assert.equal((await fake.state()).alive.length, 4);
    assert.deepEqual(await calls(fake, 'DestroyVm'), []);
  });
});

test('boxd: a registered unlabelled machine whose record is gone is found by GetVm; an unregistered one is never touched', async () => {
  await withFake(async (fake) => {
    await fake.seed([machine(1), machine(2)]);
    const store = await storeWith([['k-reg', vmId(1)]]);
    await store.delete('k-reg');
    const report = await reconcile({ providers: [make(fake)], instances: store, orphanGraceMs: 60_000 });
    const orphans = report.providers[0].orphans;
    assert.equal(orphans.status, 'swept');
    assert.equal(orphans.destroyed, 1);
    assert.deepEqual((await fake.state()).alive, [vmId(2)]);
    const gets = await calls(fake, 'GetVm');
    assert.ok(gets.some((request) => request.id === vmId(1)), 'looked up by id');
    assert.ok(!gets.some((request) => request.id === vmId(2)), 'never the stranger');
    assert.equal(await destroysOf(fake, vmId(2)), 0);
  });
});
