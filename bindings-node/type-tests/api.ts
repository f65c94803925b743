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
