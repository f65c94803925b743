// A TanStack AI app on Fly Sprites. TanStack's Sprites provider names each
// sprite after the run's sandbox key (16 hex characters), records
// `{ provider: 'sprites', providerSandboxId: <that name> }` and sets no
// labels. Its records reclaim through our `SpritesProvider` as they are (same
// name, `sprites`), with a delete that is reported when it fails instead of
// swallowed; and a `reconcile` with `sweepUnlabelled` finds the unlabelled
// sprites whose records TanStack's reclaim already deleted, destroying only
// those the store's registry names.
//
//   SPRITES_API_KEY=... node examples/node/sprites-tanstack.mjs SPRITE_NAME [LEFTOVER_NAME]
//
// SPRITE_NAME is the sprite a finished run used (TanStack's instance store
// holds it; here it is passed in). LEFTOVER_NAME, when given, is one an
// earlier run used whose record was deleted although its delete failed.
// `make test` runs this against the local Sprites fake
// (tests/node/sprites-tanstack.test.mjs).
import { SpritesProvider, SqliteSandboxInstanceStore, sandboxReclaimer, reconcile } from '../../bindings-node/index.mjs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [name, leftover] = process.argv.slice(2);
if (!/^[0-9a-f]{16}$/.test(name ?? '')) {
  console.error('usage: node examples/node/sprites-tanstack.mjs SPRITE_NAME [LEFTOVER_NAME]  (names: 16 hex, as TanStack makes them)');
  process.exit(2);
}

const work = mkdtempSync(join(tmpdir(), 'sandbox-reclaim-sprites-'));
const instances = await SqliteSandboxInstanceStore.open(join(work, 'instances.db'));
try {
  // What TanStack's store holds: the key is the sprite's name.
  await instances.upsert({ key: name, provider: 'sprites', providerSandboxId: name, threadId: 'thread-1', updatedAt: Date.now() });
  if (leftover) {
    // An earlier run's record, deleted after a swallowed delete error: the
    // record is gone, the store's registry remembers the sprite.
    await instances.upsert({ key: leftover, provider: 'sprites', providerSandboxId: leftover, threadId: 'thread-0', updatedAt: Date.now() });
    await instances.delete(leftover);
  }

  const sprites = new SpritesProvider(); // SPRITES_API_KEY (else SPRITE_TOKEN), SPRITES_API_URL; name 'sprites'
  await sprites.checkAccess(); // a wrong key fails here, naming SPRITES_API_KEY
  const reclaim = sandboxReclaimer({ provider: sprites, instances, destroyTimeoutMs: 30_000 });
  await reclaim({ runId: 'run-1', sandboxKey: name }); // throws SandboxReclaimFailedError if the delete failed
  console.log(`reclaimed sprite ${name}: deleted for good`);

  // Later (a cron, or `sandbox-reclaim reconcile --sprites --sweep-unlabelled --every 5m`).
  // Sprites cannot filter by label, and TanStack's sprites carry none:
  // `sweepUnlabelled` lists every sprite, and only those the registry names
  // are destroyed, never a stranger's.
  const sweeper = new SpritesProvider({ sweepUnlabelled: true });
  const report = await reconcile({ providers: [sweeper], instances });
  const { orphans } = report.providers[0];
  console.log(`reconcile: listed ${orphans.listed}, destroyed ${orphans.destroyed} orphans; still leaking: ${report.stillLeaking}`);
  if (report.stillLeaking) process.exitCode = 1;
} finally {
  await instances.close();
  rmSync(work, { recursive: true, force: true });
}
