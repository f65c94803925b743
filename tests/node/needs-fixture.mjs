// Run by services.test.mjs as its own `node --test` process: one test that
// needs an environment variable nobody sets.
import { test } from 'node:test';
import { service } from './services.mjs';

const missing = service('SANDBOX_RECLAIM_TEST_NEVER_SET', 'the helper\'s own test');
test('needs a variable nobody sets', { skip: missing.skip }, () => {});
