// ownerLabels(owner, key, vendor): every case of
// tests/vectors/labels/owner-labels.json through the Node binding (Rust and
// Python run the same cases). An error is a TypeError naming its field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

import { ownerLabels } from '../../bindings-node/index.mjs';

const { hostedVendors } = createRequire(import.meta.url)('../../bindings-node/lib/native.cjs');

const vectors = JSON.parse(readFileSync(new URL('../vectors/labels/owner-labels.json', import.meta.url), 'utf8'));

test('ownerLabels: every vector, in the vendor\'s shape', () => {
  assert.ok(vectors.cases.length > 10);
  for (const { name, owner, key, vendor, expect, error } of vectors.cases) {
    const call = () => (vendor === undefined ? ownerLabels(owner, key) : ownerLabels(owner, key, vendor));
    if (error) {
      assert.throws(call, (thrown) => {
        assert.equal(thrown.name, 'TypeError', name);
        assert.ok(thrown.message.includes(`\`${error.field}\``) && thrown.message.includes(error.match), `${name}: ${thrown.message}`);
        return true;
      });
    } else {
      assert.deepStrictEqual(call(), expect, name);
    }
  }
});

test('ownerLabels: every hosted vendor has a case, and a vendor that is no string is refused before the core', () => {
  const covered = new Set(vectors.cases.map((c) => c.vendor));
  assert.deepStrictEqual(hostedVendors().filter((vendor) => !covered.has(vendor.key)), []);
  assert.throws(() => ownerLabels('team-a', 'k', 3), { name: 'TypeError', message: /vendor must be a string/ });
  assert.deepStrictEqual(ownerLabels(undefined, 'k', 'upstash-box'), ['sr:sandbox-reclaim'], 'the default owner');
});
