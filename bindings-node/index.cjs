'use strict';
// CommonJS entry point. The ESM entry (index.mjs) re-exports these very
// objects, so `instanceof` works across `import` and `require`.
const flows = require('./lib/flows.cjs');
const memory = require('./lib/memory.cjs');
const stores = require('./lib/stores.cjs');
const providers = require('./lib/providers.cjs');
const { SandboxReclaimFailedError, SandboxDestroyTimeoutError } = require('./lib/flow-errors.cjs');
const { SandboxNotOwnedError, SandboxStoreError, SandboxStoreOpenError, SchemaTooNewError } = require('./lib/errors.cjs');

module.exports = {
  reclaimSandbox: flows.reclaimSandbox,
  sandboxReclaimer: flows.sandboxReclaimer,
  retryLeaks: flows.retryLeaks,
  reclaimAll: flows.reclaimAll,
  reconcile: flows.reconcile,
  SandboxReclaimFailedError,
  SandboxDestroyTimeoutError,
  InMemorySandboxInstanceStore: memory.InMemorySandboxInstanceStore,
  defineSandboxInstanceStore: memory.defineSandboxInstanceStore,
  SqliteSandboxInstanceStore: stores.SqliteSandboxInstanceStore,
  PostgresSandboxInstanceStore: stores.PostgresSandboxInstanceStore,
  listLeaks: stores.listLeaks,
  DockerProvider: providers.DockerProvider,
  LocalProvider: providers.LocalProvider,
  // E2bProvider, SpritesProvider, ...: one per row of the core's vendor table.
  ...providers.hostedClasses,
  ownerLabels: providers.ownerLabels,
  SandboxNotOwnedError,
  SandboxStoreError,
  SandboxStoreOpenError,
  SchemaTooNewError,
};
