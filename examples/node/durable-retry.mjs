// A durable reclaim with real sandboxes: LocalProvider sandboxes, records in
// a SQLite store, one destroy that fails (caught by the leak ledger instead of
// being forgotten), then retryLeaks destroys it. Nothing is left behind.
//
//   (cd bindings-node && npm install && npm run build)
//   node examples/node/durable-retry.mjs
import { mkdtempSync, rmSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalProvider, SqliteSandboxInstanceStore, sandboxReclaimer, retryLeaks, listLeaks, SandboxReclaimFailedError } from '../../bindings-node/index.mjs';

const work = mkdtempSync(join(tmpdir(), 'sandbox-reclaim-example-'));
const provider = new LocalProvider({ baseDir: join(work, 'sandboxes'), owner: 'example' });
const instances = await SqliteSandboxInstanceStore.open(join(work, 'instances.db'));
try {
  // Agent runs get sandboxes; the app records them.
  for (const thread of ['thread-1', 'thread-2']) {
    const handle = await provider.create(`${thread}:sandbox`);
    await instances.upsert({ key: handle.key, provider: provider.name, providerSandboxId: handle.id, threadId: thread, updatedAt: handle.createdAt });
  }
  console.log(`sandboxes running (${provider.isolation()}):`, (await provider.list()).map((h) => h.key));

  // The reaper reclaims finished runs; the engine is down for the second one.
  let engineDown = false;
  const flaky = { name: provider.name, destroy: (input) => (engineDown ? Promise.reject(new Error('engine unreachable')) : provider.destroy(input)) };
  const reclaim = sandboxReclaimer({ provider: flaky, instances });
  await reclaim({ runId: 'run-1', sandboxKey: 'thread-1:sandbox' });
  engineDown = true;
  const failure = await reclaim({ runId: 'run-2', sandboxKey: 'thread-2:sandbox' }).catch((error) => error);
  console.log('second reclaim failed:', failure instanceof SandboxReclaimFailedError);
  console.log('leak ledger:', (await listLeaks(instances)).map(({ key, lastError, attempts }) => ({ key, lastError, attempts })));

  // Later, a retry with the real provider destroys what leaked.
  console.log('retry:', await retryLeaks({ provider, instances }));
  const left = await provider.list();
  console.log('sandboxes left:', left.length, '| leaks left:', await instances.countLeaks());
  if (left.length !== 0 || (await instances.countLeaks()) !== 0 || readdirSync(join(work, 'sandboxes')).length !== 0) {
    throw new Error('something was left behind');
  }
} finally {
  await instances.close();
  rmSync(work, { recursive: true, force: true });
}
