// The packed npm tarball installs into an empty project and works there,
// through both `import` and `require`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bindings-node');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const run = (command, args, cwd) => execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

const usage = (load) => `
${load}
const store = new InMemorySandboxInstanceStore();
const destroyed = [];
const provider = { name: 'docker', async destroy({ id }) { destroyed.push(id); } };
(async () => {
  await store.upsert({ key: 'k', provider: 'docker', providerSandboxId: 'ctr-1', threadId: 't', updatedAt: 1 });
  const outcome = await reclaimSandbox({ runId: 'r', sandboxKey: 'k' }, { provider, instances: store });
  const failing = { name: 'docker', destroy() { throw new Error('gone'); } };
  await store.upsert({ key: 'k', provider: 'docker', providerSandboxId: 'ctr-2', threadId: 't', updatedAt: 1 });
  const error = await sandboxReclaimer({ provider: failing, instances: store })({ runId: 'r', sandboxKey: 'k' }).catch((e) => e);
  console.log(JSON.stringify({ outcome, destroyed, failed: error instanceof SandboxReclaimFailedError && error instanceof Error }));
})();
`;

test('npm pack → npm install of the tarball in an empty project → import and require work', { timeout: 180_000 }, () => {
  const work = mkdtempSync(join(tmpdir(), 'sandbox-reclaim-pack-'));
  try {
    const packed = JSON.parse(run(npm, ['pack', '--json', '--pack-destination', work], packageDir));
    const files = packed[0].files.map((file) => file.path).sort();
    const expectedFiles = ['index.cjs', 'index.d.ts', 'index.mjs', 'package.json', 'sandbox-reclaim.node'];
    for (const expected of [...expectedFiles, 'lib/reclaim.cjs', 'lib/stores.cjs', 'lib/providers.cjs', 'lib/errors.cjs']) {
      assert.ok(files.includes(expected), `tarball has ${expected}: ${files.join(', ')}`);
    }
    assert.ok(!files.some((file) => file.startsWith('src/') || file.startsWith('node_modules/')), 'no sources or deps in the tarball');
    const tarball = readdirSync(work).find((file) => file.endsWith('.tgz'));
    const project = join(work, 'app');
    run('mkdir', ['-p', project], work);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }));
    run(npm, ['install', '--no-audit', '--no-fund', '--prefer-offline', join(work, tarball)], project);
    writeFileSync(
      join(project, 'esm.mjs'),
      usage("import { reclaimSandbox, sandboxReclaimer, SandboxReclaimFailedError, InMemorySandboxInstanceStore } from 'sandbox-reclaim';"),
    );
    writeFileSync(
      join(project, 'cjs.cjs'),
      usage("const { reclaimSandbox, sandboxReclaimer, SandboxReclaimFailedError, InMemorySandboxInstanceStore } = require('sandbox-reclaim');"),
    );
    for (const script of ['esm.mjs', 'cjs.cjs']) {
      const result = JSON.parse(run(process.execPath, [script], project));
      assert.deepStrictEqual(result, { outcome: 'destroyed', destroyed: ['ctr-1'], failed: true }, script);
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
