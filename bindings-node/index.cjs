'use strict';
// CommonJS entry point. The ESM entry (index.mjs) re-exports these very
// objects, so `instanceof` works across `import` and `require`.
const binding = require('./lib/reclaim.cjs');
const stores = require('./lib/stores.cjs');
const providers = require('./lib/providers.cjs');
const { SandboxNotOwnedError, SandboxStoreError, SandboxStoreOpenError, SchemaTooNewError } = require('./lib/errors.cjs');

const retryLeaks = stores.makeRetryLeaks({ nativeProviderOf: providers.nativeProviderOf, memoryNativeOf: binding.memoryNativeOf });

module.exports = {
  reclaimSandbox: binding.reclaimSandbox,
  sandboxReclaimer: binding.sandboxReclaimer,
  SandboxReclaimFailedError: binding.SandboxReclaimFailedError,
  InMemorySandboxInstanceStore: binding.InMemorySandboxInstanceStore,
  defineSandboxInstanceStore: binding.defineSandboxInstanceStore,
  SqliteSandboxInstanceStore: stores.SqliteSandboxInstanceStore,
  PostgresSandboxInstanceStore: stores.PostgresSandboxInstanceStore,
  listLeaks: stores.listLeaks,
  retryLeaks,
  DockerProvider: providers.DockerProvider,
  LocalProvider: providers.LocalProvider,
  SandboxNotOwnedError,
  SandboxStoreError,
  SandboxStoreOpenError,
  SchemaTooNewError,
};
