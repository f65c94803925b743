// The option readers on arbitrary values: every option of every flow, fed
// strings (lone surrogates, non-ASCII, digits), numbers (NaN, ±Infinity,
// negative, fractional, past 2^53), booleans, null, objects and arrays.
// Each call either runs or rejects with a TypeError naming the option;
// nothing else (no other error class, no crash, no hang).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as binding from '../../bindings-node/index.mjs';

const { InMemorySandboxInstanceStore, reclaimAll, reconcile, retryLeaks } = binding;

/** A small seeded generator, so a failure reproduces. */
function generator(seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
  const pick = (items) => items[Math.floor(next() * items.length)];
  const text = () => {
    const pieces = ['', 'a', '5', '-1', '1e3', '\uD800', 'é', '∞', ' ', '0x10', '10ms', '\u0000', 'NaN'];
    return Array.from({ length: Math.floor(next() * 4) }, () => pick(pieces)).join('');
  };
  const number = () =>
    pick([0, 1, -1, 0.5, 2 ** 53, 2 ** 53 + 2, -(2 ** 53), NaN, Infinity, -Infinity, Number.MIN_VALUE, 1e300, Math.floor(next() * 1e6)]);
  const value = () => pick([text, number, () => next() < 0.5, () => null, () => ({}), () => [number()], () => ({ valueOf: () => 5 }), () => 5n])();
  return { value };
}

const provider = { name: 'docker', destroy: async () => {} };

const flows = {
  reclaimAll: (options) => reclaimAll([], { provider, instances: new InMemorySandboxInstanceStore(), ...options }),
  reconcile: (options) => reconcile({ provider, instances: new InMemorySandboxInstanceStore({ ledger: true }), ...options }),
  retryLeaks: (options) => retryLeaks({ provider, instances: new InMemorySandboxInstanceStore({ ledger: true }), ...options }),
};

for (const [flow, run] of Object.entries(flows)) {
  test(`${flow}: any option value runs or is a TypeError naming the option`, async () => {
    const { value } = generator(0x5eed + flow.length);
    const names = binding.optionNames?.(flow) ?? (await import('../../bindings-node/lib/native.cjs')).default.optionNames(flow);
    assert.ok(names.length > 0, 'the core names the options');
    for (const name of names) {
      for (let trial = 0; trial < 60; trial += 1) {
        const given = value();
        const shown = `${flow} ${name}=${typeof given === 'bigint' ? `${given}n` : JSON.stringify(given) ?? String(given)}`;
        try {
          await run({ [name]: given });
        } catch (error) {
          assert.ok(error instanceof TypeError, `${shown}: ${error?.constructor?.name}: ${error?.message}`);
          assert.ok(String(error.message).includes(name), `${shown}: the message names the option: ${error.message}`);
        }
      }
    }
  });
}
