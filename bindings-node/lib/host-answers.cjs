'use strict';
// What the driver reads of the host's own answers before the core sees them:
// the two answers that cross as fields rather than JSON (an instance record,
// claimed leak entries), each field read once and checked to cross exactly.
// A broken answer is a TypeError naming the method; the run rejects with it.

const { checkString: exactString } = require('./errors.cjs');

/** `(provider, providerSandboxId)` of what `get` answered, each read once. */
function instanceFields(instance) {
  if (typeof instance !== 'object') {
    throw new TypeError(`options.instances.get must resolve to a SandboxInstanceRecord or null, got ${instance === undefined ? 'undefined' : typeof instance}`);
  }
  const provider = instance.provider;
  if (typeof provider !== 'string') throw new TypeError('the instance record from options.instances.get has no string `provider`');
  const providerSandboxId = instance.providerSandboxId;
  if (typeof providerSandboxId !== 'string') throw new TypeError('the instance record from options.instances.get has no string `providerSandboxId`');
  exactString(provider, 'the instance record\'s `provider`');
  exactString(providerSandboxId, 'the instance record\'s `providerSandboxId`');
  return [provider, providerSandboxId];
}

/** The provider sandbox id of each entry `claimLeaks` answered, each read once. */
function claimedSandboxIds(entries) {
  if (!Array.isArray(entries)) throw new TypeError('options.instances.claimLeaks must resolve to an array of leak entries');
  return entries.map((entry, index) => {
    if (entry === null || typeof entry !== 'object') throw new TypeError(`leak entry ${index} from claimLeaks must be an object`);
    return exactString(entry.providerSandboxId, `leak entry ${index}'s providerSandboxId`);
  });
}

module.exports = { instanceFields, claimedSandboxIds };
