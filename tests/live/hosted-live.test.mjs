// Live tests against the real E2B, Daytona and Vercel APIs: each creates one
// labelled sandbox through the vendor's official SDK, finds it with our
// provider's listing, reclaims it through our provider and checks the vendor
// calls it gone. They bill a few seconds of sandbox time, so they run only
// by hand (`make test-live`) with the vendor's credentials set, never in
// `make test` or CI; a vendor without credentials is reported as skipped,
// never as a pass.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

import * as binding from '../../bindings-node/index.mjs';

const require = createRequire(new URL('../../bindings-node/package.json', import.meta.url));
const { E2bProvider, DaytonaProvider, VercelProvider, InMemorySandboxInstanceStore, reclaimSandbox, ownerLabels } = binding;
const owner = `sandbox-reclaim-live-${Date.now().toString(36)}`;
const key = `live:${process.pid}`;
const run = { runId: `live-${process.pid}`, threadId: 'live', status: 'completed', startedAt: Date.now(), sandboxKey: key };

async function reclaimThroughOurs(provider, id) {
  const listed = await provider.list();
  assert.ok(listed.some((sandbox) => sandbox.id === id && sandbox.owner === owner && sandbox.key === key), 'our listing finds it by its labels');
  const instances = new InMemorySandboxInstanceStore({ ledger: true });
  await instances.upsert({ key, provider: provider.name, providerSandboxId: id, threadId: 'live', updatedAt: Date.now() });
  assert.equal(await reclaimSandbox(run, { provider, instances, destroyTimeoutMs: 60_000 }), 'destroyed');
}

test('E2B live: create with ownerLabels, list, reclaim, gone', { skip: !process.env.E2B_API_KEY && 'E2B_API_KEY is not set', timeout: 180_000 }, async () => {
  const { Sandbox } = require('e2b');
  const sandbox = await Sandbox.create({ metadata: ownerLabels(owner, key) });
  try {
    await reclaimThroughOurs(new E2bProvider({ owner }), sandbox.sandboxId);
    await assert.rejects(Sandbox.getInfo(sandbox.sandboxId), /not found/i);
  } finally {
    await Sandbox.kill(sandbox.sandboxId).catch(() => {});
  }
});

test('Daytona live: create with ownerLabels, list, reclaim, destroying or gone', { skip: !process.env.DAYTONA_API_KEY && 'DAYTONA_API_KEY is not set', timeout: 300_000 }, async () => {
  const { Daytona } = require('@daytonaio/sdk');
  const daytona = new Daytona();
  const sandbox = await daytona.create({ labels: ownerLabels(owner, key) });
  try {
    await reclaimThroughOurs(new DaytonaProvider({ owner }), sandbox.id);
    const after = await daytona.get(sandbox.id).catch(() => null);
    assert.ok(after === null || after.state === 'destroying' || after.state === 'destroyed', `state ${after?.state}`);
  } finally {
    await daytona.delete(sandbox).catch(() => {});
  }
});

const vercelSet = process.env.VERCEL_TOKEN && process.env.VERCEL_TEAM_ID && process.env.VERCEL_PROJECT_ID;
test('Vercel live: create with ownerLabels as tags, list, reclaim (delete, not stop), gone', { skip: !vercelSet && 'VERCEL_TOKEN, VERCEL_TEAM_ID and VERCEL_PROJECT_ID are not all set', timeout: 300_000 }, async () => {
  const { Sandbox } = require('@vercel/sandbox');
  const credentials = { token: process.env.VERCEL_TOKEN, teamId: process.env.VERCEL_TEAM_ID, projectId: process.env.VERCEL_PROJECT_ID };
  const sandbox = await Sandbox.create({ ...credentials, tags: ownerLabels(owner, key) });
  try {
    await reclaimThroughOurs(new VercelProvider({ owner }), sandbox.name);
    await assert.rejects(Sandbox.get({ ...credentials, name: sandbox.name }), /404|not found/i);
  } finally {
    await sandbox.delete?.().catch(() => {});
  }
});
