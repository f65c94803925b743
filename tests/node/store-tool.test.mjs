// tests/node/store-tool.mjs, the CLI the Python cross-language tests spawn:
// write → dump round trip, and several `ops` processes at once on one store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rmSync } from 'node:fs';
import { service, tempDir, uniqueSchema } from './services.mjs';

const tool = resolve(dirname(fileURLToPath(import.meta.url)), 'store-tool.mjs');
const run = promisify(execFile);
const pg = service('SANDBOX_RECLAIM_PG_URL', 'store-tool against PostgreSQL');
const scratch = tempDir('store-tool');
process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));

async function storeTool(...args) {
  const { stdout } = await run(process.execPath, [tool, ...args], { encoding: 'utf8' });
  return JSON.parse(stdout);
}

const targets = {
  sqlite: { skip: false, where: () => [join(scratch, `tool-${Math.random().toString(36).slice(2)}.db`), '-'] },
  postgres: { skip: pg.skip, where: () => [pg.value, uniqueSchema('node_tool')] },
};

for (const [kind, { skip, where }] of Object.entries(targets)) {
  test(`store-tool (${kind}): write then dump`, { skip }, async () => {
    const [location, schema] = where();
    const instances = [
      { key: 'b', provider: 'docker', providerSandboxId: 'ctr-b', threadId: 't', latestRunId: 'r', updatedAt: 2 },
      { key: 'a', provider: 'docker', providerSandboxId: 'ctr-a', threadId: 't', updatedAt: 1 },
      { key: 'gone', provider: 'docker', providerSandboxId: 'ctr-gone', threadId: 't', updatedAt: 3 },
    ];
    const leak = { key: 'gone', provider: 'docker', providerSandboxId: 'ctr-gone', runId: 'run-9', errorMessage: 'engine down', failedAt: 42 };
    assert.deepStrictEqual(await storeTool(kind, location, schema, 'write', JSON.stringify({ instances, leaks: [{ key: 'gone', leak }] })), {
      ok: true,
      instances: 3,
      leaks: 1,
    });
    const dumped = await storeTool(kind, location, schema, 'dump', JSON.stringify(['gone', 'b', 'a', 'never']));
    assert.deepStrictEqual(dumped, {
      instances: [instances[1], instances[0]],
      leaks: [{ key: 'gone', provider: 'docker', providerSandboxId: 'ctr-gone', runId: 'run-9', lastError: 'engine down', failedAt: 42, attempts: 1 }],
    });
    assert.deepStrictEqual((await storeTool(kind, location, schema, 'dump')).instances, []);
    await assert.rejects(storeTool(kind, location, schema, 'write', JSON.stringify({ instances: [{ key: '' }] })), (error) => {
      assert.equal(error.code, 1);
      assert.equal(JSON.parse(error.stdout).ok, false);
      return true;
    });
  });

  test(`store-tool (${kind}): four processes of concurrent ops on one store`, { skip, timeout: 120_000 }, async () => {
    const [location, schema] = where();
    await storeTool(kind, location, schema, 'dump'); // creates and migrates once
    const results = await Promise.all([1, 2, 3, 4].map((seed) => storeTool(kind, location, schema, 'ops', String(seed), '150', `p${seed}-`)));
    const keys = [];
    for (const [index, result] of results.entries()) {
      assert.equal(result.ok, true);
      assert.ok(result.finalKeys.every((key) => key.startsWith(`p${index + 1}-`)));
      keys.push(...result.finalKeys);
    }
    const dumped = await storeTool(kind, location, schema, 'dump', JSON.stringify(Array.from({ length: 4 * 8 }, (_, i) => `p${Math.floor(i / 8) + 1}-${i % 8}`)));
    assert.deepStrictEqual(dumped.instances.map((record) => record.key), keys.sort());
  });
}
