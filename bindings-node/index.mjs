// ESM entry point: the same objects as the CommonJS entry (one native addon,
// one SandboxReclaimFailedError class).
import binding from './index.cjs';

export const {
  reclaimSandbox,
  sandboxReclaimer,
  SandboxReclaimFailedError,
  SandboxDestroyTimeoutError,
  InMemorySandboxInstanceStore,
  defineSandboxInstanceStore,
  SqliteSandboxInstanceStore,
  PostgresSandboxInstanceStore,
  listLeaks,
  retryLeaks,
  reclaimAll,
  reconcile,
  DockerProvider,
  LocalProvider,
  E2bProvider,
  DaytonaProvider,
  VercelProvider,
  ownerLabels,
  SandboxNotOwnedError,
  SandboxStoreError,
  SandboxStoreOpenError,
  SchemaTooNewError,
} = binding;
