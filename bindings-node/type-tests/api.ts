// Negative type tests: misuse that must not compile.
import { reclaimSandbox, SandboxReclaimFailedError, InMemorySandboxInstanceStore, type SandboxInstanceStore } from 'sandbox-reclaim';

const instances: SandboxInstanceStore = new InMemorySandboxInstanceStore({ ledger: true });
const provider = { name: 'docker', destroy: (_input: { id: string }) => undefined };

// @ts-expect-error runId is required
void reclaimSandbox({ sandboxKey: 'k' }, { provider, instances });
// @ts-expect-error sandboxKey must be a string
void reclaimSandbox({ runId: 'r', sandboxKey: 1 }, { provider, instances });
// @ts-expect-error a provider needs a name
void reclaimSandbox({ runId: 'r' }, { provider: { destroy: provider.destroy }, instances });
// @ts-expect-error a store needs get
void reclaimSandbox({ runId: 'r' }, { provider, instances: { upsert: () => undefined, delete: () => undefined } });
// @ts-expect-error the outcome is a closed union
const outcome: Promise<'gone'> = reclaimSandbox({ runId: 'r' }, { provider, instances });
void outcome;
// @ts-expect-error runId is a string
void new SandboxReclaimFailedError(1, 'k');

// Deadlines: a number of milliseconds, and the error that reports them.
import { SandboxDestroyTimeoutError, retryLeaks, sandboxReclaimer } from 'sandbox-reclaim';
void reclaimSandbox({ runId: 'r' }, { provider, instances, destroyTimeoutMs: 250 });
void sandboxReclaimer({ provider, instances, destroyTimeoutMs: 250 });
// @ts-expect-error destroyTimeoutMs is milliseconds, a number
void reclaimSandbox({ runId: 'r' }, { provider, instances, destroyTimeoutMs: '250ms' });
const timeout = new SandboxDestroyTimeoutError('ctr-1', 250);
const timeoutFields: [string, number, 'SandboxDestroyTimeoutError'] = [timeout.providerSandboxId, timeout.timeoutMs, timeout.name];
void timeoutFields;
// A destroy may take the abort signal a deadline gives it.
const cancellable = { name: 'docker', destroy: ({ id, signal }: { id: string; signal?: AbortSignal }) => signal?.aborted ?? id };
void reclaimSandbox({ runId: 'r' }, { provider: cancellable, instances });
declare const ledger: Parameters<typeof retryLeaks>[0]['instances'];
void retryLeaks({ provider, instances: ledger, leaseMs: 1000, destroyTimeoutMs: 100 });
