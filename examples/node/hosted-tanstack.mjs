// A TanStack AI app on Daytona: TanStack's Daytona provider keeps creating
// and running sandboxes (its records say `provider: 'daytona'`), and ours,
// under the same name, is what `sandboxReclaimer` destroys with, so a failed
// delete is reported (`destroy-failed`, the leak ledger) instead of
// swallowed. A `reconcile` then sweeps what was left: labelled sandboxes
// nobody references, the ledger's entries, and (with `sweepUnlabelled`) the
// unlabelled sandboxes TanStack's provider created whose records the store's
// registry still remembers.
//
//   DAYTONA_API_KEY=... node examples/node/hosted-tanstack.mjs SANDBOX_ID [LEFTOVER_ID]
//
// SANDBOX_ID is the Daytona sandbox a finished run used (TanStack's instance
// store holds it; here it is passed in). LEFTOVER_ID, when given, is one an
// earlier run used whose record TanStack's reclaim deleted although its
// destroy failed silently. `make test` runs this against the local Daytona
// fake (tests/node/hosted-providers.test.mjs).
import { DaytonaProvider, SqliteSandboxInstanceStore, sandboxReclaimer, reconcile, ownerLabels } from '../../bindings-node/index.mjs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [sandboxId, leftoverId] = process.argv.slice(2);
if (!sandboxId) {
  console.error('usage: node examples/node/hosted-tanstack.mjs SANDBOX_ID [LEFTOVER_ID]');
  process.exit(2);
}

// Where the app creates sandboxes through Daytona's SDK, it labels them, so
// the sweep knows them as ours: `daytona.create({ labels: ownerLabels(owner, key, 'daytona') })`.
console.log('labels to pass at create:', ownerLabels('sandbox-reclaim', 'thread-1:sandbox', 'daytona'));

const work = mkdtempSync(join(tmpdir(), 'sandbox-reclaim-hosted-'));
const instances = await SqliteSandboxInstanceStore.open(join(work, 'instances.db'));
try {
  // What TanStack's store holds for the finished run.
  await instances.upsert({ key: 'thread-1:sandbox', provider: 'daytona', providerSandboxId: sandboxId, threadId: 'thread-1', updatedAt: Date.now() });
  if (leftoverId) {
    // An earlier run's record, deleted by TanStack's reclaim after a swallowed
    // destroy error: the record is gone, the store's registry remembers it.
    await instances.upsert({ key: 'thread-0:sandbox', provider: 'daytona', providerSandboxId: leftoverId, threadId: 'thread-0', updatedAt: Date.now() });
    await instances.delete('thread-0:sandbox');
  }

  const daytona = new DaytonaProvider(); // DAYTONA_API_KEY, DAYTONA_API_URL; name 'daytona'
  await daytona.checkAccess(); // a wrong key fails here, naming DAYTONA_API_KEY
  const reclaim = sandboxReclaimer({ provider: daytona, instances, destroyTimeoutMs: 30_000 });
  await reclaim({ runId: 'run-1', sandboxKey: 'thread-1:sandbox' }); // throws SandboxReclaimFailedError if the delete failed
  console.log(`reclaimed ${sandboxId}: deleted for good`);

  // Later (a cron, or `sandbox-reclaim reconcile --daytona --sweep-unlabelled --every 5m`):
  // sweep the rest. `sweepUnlabelled` lists every sandbox, so the unlabelled
  // ones TanStack created are found; only those the registry names are
  // destroyed, never a stranger's.
  const sweeper = new DaytonaProvider({ sweepUnlabelled: true });
  const report = await reconcile({ providers: [sweeper], instances });
  const { orphans } = report.providers[0];
  console.log(`reconcile: listed ${orphans.listed}, destroyed ${orphans.destroyed} orphans, ${orphans.deleting} already being deleted; still leaking: ${report.stillLeaking}`);
  if (report.stillLeaking) process.exitCode = 1;
} finally {
  await instances.close();
  rmSync(work, { recursive: true, force: true });
}
