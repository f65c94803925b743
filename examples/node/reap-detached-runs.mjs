// How a TanStack app swaps @tanstack/ai-sandbox's reclaimer for sandbox-reclaim.
//
//   (cd bindings-node && npm install && npm run build)
//   node examples/node/reap-detached-runs.mjs
//
// In an app, the only change is the import:
//
//   - import { sandboxReclaimer, SandboxReclaimFailedError } from '@tanstack/ai-sandbox';
//   + import { sandboxReclaimer, SandboxReclaimFailedError } from 'sandbox-reclaim';
//
// This example imports the package by path so it runs from a checkout.
import { sandboxReclaimer, SandboxReclaimFailedError, InMemorySandboxInstanceStore } from '../../bindings-node/index.mjs';

// A stand-in for a real provider (e.g. @tanstack/ai-sandbox-docker): only
// `name` and `destroy({ id })` are used by the reclaimer.
const running = new Set(['ctr-1', 'ctr-2', 'ctr-3']);
const provider = {
  name: 'docker',
  async destroy({ id }) {
    if (id === 'ctr-3') throw new Error('container engine unreachable');
    running.delete(id);
  },
};

// Where the app keeps sandbox instances. Any object with get/upsert/delete
// works (your database); the native in-memory store is the fastest.
const instances = new InMemorySandboxInstanceStore({ ledger: true });
for (const [key, id] of [['thread-1:sandbox', 'ctr-1'], ['thread-2:sandbox', 'ctr-2'], ['thread-3:sandbox', 'ctr-3']]) {
  await instances.upsert({ key, provider: 'docker', providerSandboxId: id, threadId: key.split(':')[0], updatedAt: Date.now() });
}

// TanStack's InternalLogger has these three methods; console works too.
const logger = {
  warn: (message, meta) => console.log(`warn    ${message}`, meta?.sandboxKey ?? ''),
  errors: (message, meta) => console.log(`errors  ${message}`, meta?.sandboxKey ?? ''),
  sandbox: (message, meta) => console.log(`sandbox ${message}`, meta?.sandboxKey ?? ''),
};

// What `reapDetachedRuns({ reclaim })` would call for each terminal run.
const reclaim = sandboxReclaimer({ provider, instances, logger });
const detachedRuns = [
  { runId: 'run-1', threadId: 'thread-1', status: 'completed', startedAt: 0, sandboxKey: 'thread-1:sandbox' },
  { runId: 'run-2', threadId: 'thread-2', status: 'failed', startedAt: 0, sandboxKey: 'thread-2:sandbox' },
  { runId: 'run-3', threadId: 'thread-3', status: 'aborted', startedAt: 0, sandboxKey: 'thread-3:sandbox' },
  { runId: 'run-4', threadId: 'thread-4', status: 'completed', startedAt: 0 },
];

const outcomes = { finalized: 0, 'reclaim-failed': 0 };
for (const run of detachedRuns) {
  try {
    await reclaim(run);
    outcomes.finalized += 1;
  } catch (error) {
    if (!(error instanceof SandboxReclaimFailedError)) throw error;
    outcomes['reclaim-failed'] += 1;
  }
}

console.log('outcomes', outcomes);
console.log('still running', [...running]);
console.log('leaks to retry', (await instances.listLeaks()).map(({ providerSandboxId, lastError }) => ({ providerSandboxId, lastError })));
