'use strict';
// CommonJS entry point. The ESM entry (index.mjs) re-exports these very
// objects, so `instanceof` works across `import` and `require`.
const binding = require('./lib/reclaim.cjs');

module.exports = {
  reclaimSandbox: binding.reclaimSandbox,
  sandboxReclaimer: binding.sandboxReclaimer,
  SandboxReclaimFailedError: binding.SandboxReclaimFailedError,
  InMemorySandboxInstanceStore: binding.InMemorySandboxInstanceStore,
  defineSandboxInstanceStore: binding.defineSandboxInstanceStore,
};
