// The npm packages as a release packs them (bindings-node/npm/pack.mjs): the
// main package `sandbox-reclaim` (JS, types, the loader) and this machine's
// platform package, by default `sandbox-reclaim-linux-x64-gnu` with the addon
// that `npm run build` made (stripped). Both tarballs install into an empty
// project offline, and there `import` and `require` reclaim through the addon
// of the platform package, and `npx sandbox-reclaim` runs the command. The main
// tarball alone installs too, and then fails to load with the loader's error.
//
// The release workflow runs this on each platform with the addon it built:
// SANDBOX_RECLAIM_NPM_ADDON=<platform>=<file>, e.g. darwin-arm64=sandbox-reclaim.darwin-arm64.node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bindings-node');
const [platform, addonArg] = (process.env.SANDBOX_RECLAIM_NPM_ADDON || 'linux-x64-gnu=').split('=');
const addon = resolve(addonArg || join(packageDir, 'sandbox-reclaim.node'));
// npm is a .cmd script on Windows, which only a shell runs.
const shell = process.platform === 'win32';
const npm = shell ? 'npm.cmd' : 'npm';
const run = (command, args, cwd) => execFileSync(command, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], shell: shell && command === npm });
const main = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
const platformPackage = `sandbox-reclaim-${platform}`;
const allPlatforms = ['linux-x64-gnu', 'linux-x64-musl', 'linux-arm64-gnu', 'darwin-x64', 'darwin-arm64', 'win32-x64-msvc'];

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
  const addons = Object.keys(require.cache).filter((path) => path.endsWith('.node'));
  console.log(JSON.stringify({ outcome, destroyed, failed: error instanceof SandboxReclaimFailedError && error instanceof Error, addons }));
})();
`;

/** The files of a tarball, and its package.json. */
function contents(tarball) {
  // Relative names: a Windows drive letter reads as a remote host to GNU tar.
  const [dir, name] = [dirname(tarball), basename(tarball)];
  const files = run('tar', ['-tzf', name], dir).trim().split('\n').map((file) => file.replace(/^package\//, '')).sort();
  const manifest = JSON.parse(run('tar', ['-xzOf', name, 'package/package.json'], dir));
  return { files, manifest };
}

/** Whether an ELF file still has a symbol table (.symtab): a stripped one has none. */
function hasSymbolTable(buffer) {
  assert.equal(buffer.toString('latin1', 1, 4), 'ELF');
  assert.equal(buffer[4], 2, '64-bit ELF');
  const sectionHeaders = Number(buffer.readBigUInt64LE(0x28));
  const entrySize = buffer.readUInt16LE(0x3a);
  const count = buffer.readUInt16LE(0x3c);
  const SHT_SYMTAB = 2;
  for (let i = 0; i < count; i += 1) {
    if (buffer.readUInt32LE(sectionHeaders + i * entrySize + 4) === SHT_SYMTAB) return true;
  }
  return false;
}

function emptyProject(work, name) {
  const project = join(work, name);
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true }));
  return project;
}

test('main + linux-x64-gnu tarballs → offline install in an empty project → import and require reclaim', { timeout: 180_000 }, (t) => {
  assert.ok(existsSync(addon), `${addon} is missing: build it first (cd bindings-node && npm run build)`);
  const work = mkdtempSync(join(tmpdir(), 'sandbox-reclaim-pack-'));
  try {
    const packed = JSON.parse(run(process.execPath, [join(packageDir, 'npm', 'pack.mjs'), join(work, 'dist'), `${platform}=${addon}`], packageDir));
    assert.deepStrictEqual(Object.keys(packed.platforms), [platform]);

    // The main package: JS, types and the loader; no addon, no sources.
    const mainTarball = contents(packed.main);
    for (const file of ['index.cjs', 'index.d.ts', 'index.mjs', 'package.json', 'README.md', 'lib/native.cjs', 'lib/driver.cjs', 'lib/flows.cjs', 'lib/memory.cjs', 'lib/flow-errors.cjs', 'lib/stores.cjs', 'lib/providers.cjs', 'lib/errors.cjs', 'lib/cli.cjs', 'bin/sandbox-reclaim.cjs']) {
      assert.ok(mainTarball.files.includes(file), `main tarball has ${file}: ${mainTarball.files.join(', ')}`);
    }
    assert.ok(!mainTarball.files.some((file) => file.endsWith('.node')), `no addon in the main tarball: ${mainTarball.files.join(', ')}`);
    assert.ok(!mainTarball.files.some((file) => /^(src|npm|node_modules|type-tests)\//.test(file)), 'no sources or deps in the main tarball');
    assert.deepStrictEqual(
      mainTarball.manifest.optionalDependencies,
      Object.fromEntries(allPlatforms.map((name) => [`sandbox-reclaim-${name}`, main.version]).sort()),
      'every platform package, pinned to this version',
    );
    assert.equal(mainTarball.manifest.dependencies, undefined, 'no runtime dependencies');
    assert.deepStrictEqual(mainTarball.manifest.bin, { 'sandbox-reclaim': 'bin/sandbox-reclaim.cjs' }, 'the command, for npx');

    // The platform package: its addon, stripped, and the fields npm selects it by.
    const platformTarball = contents(packed.platforms[platform]);
    assert.deepStrictEqual(platformTarball.files, ['README.md', 'package.json', `sandbox-reclaim.${platform}.node`]);
    const { name, version, os, cpu, libc } = platformTarball.manifest;
    const [expectedOs, expectedCpu, abi] = platform.split('-');
    assert.deepStrictEqual(
      { name, version, os, cpu, libc, main: platformTarball.manifest.main },
      {
        name: platformPackage,
        version: main.version,
        os: [expectedOs],
        cpu: [expectedCpu],
        libc: { gnu: ['glibc'], musl: ['musl'] }[abi],
        main: `sandbox-reclaim.${platform}.node`,
      },
    );
    if (expectedOs === 'linux') {
      assert.ok(!hasSymbolTable(readFileSync(addon)), `${addon} is stripped (Cargo.toml [profile.release] strip = true)`);
    }

    t.diagnostic(`packed: ${basename(packed.main)} ${statSync(packed.main).size} bytes; ` +
      `${basename(packed.platforms[platform])} ${statSync(packed.platforms[platform]).size} bytes (addon ${statSync(addon).size} bytes unpacked)`);

    // Both tarballs into an empty project, offline: the other platforms'
    // optional dependencies cannot be fetched and are skipped.
    const project = emptyProject(work, 'app');
    run(npm, ['install', '--offline', '--no-audit', '--no-fund', packed.main, packed.platforms[platform]], project);
    writeFileSync(
      join(project, 'esm.mjs'),
      `import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\n` +
        usage("import { reclaimSandbox, sandboxReclaimer, SandboxReclaimFailedError, InMemorySandboxInstanceStore } from 'sandbox-reclaim';"),
    );
    writeFileSync(
      join(project, 'cjs.cjs'),
      usage("const { reclaimSandbox, sandboxReclaimer, SandboxReclaimFailedError, InMemorySandboxInstanceStore } = require('sandbox-reclaim');"),
    );
    const installedAddon = join(project, 'node_modules', platformPackage, `sandbox-reclaim.${platform}.node`);
    for (const script of ['esm.mjs', 'cjs.cjs']) {
      const result = JSON.parse(run(process.execPath, [script], project));
      assert.deepStrictEqual(result, { outcome: 'destroyed', destroyed: ['ctr-1'], failed: true, addons: [installedAddon] }, script);
    }

    // The command through npx, offline (the installed bin, nothing fetched):
    // --help, the native command against a SQLite store, and a pass with a
    // --providers module on the JS driver.
    const npx = (args) => {
      // Offline and never asking to install: only the project's own bin can run.
      const env = { ...process.env, npm_config_offline: 'true', npm_config_yes: 'false', SANDBOX_RECLAIM_STORE: `sqlite:${join(project, 'store.db')}` };
      delete env.SANDBOX_RECLAIM_CONFIG;
      const result = spawnSync(shell ? 'npx.cmd' : 'npx', ['sandbox-reclaim', ...args], { cwd: project, encoding: 'utf8', shell, env });
      assert.equal(result.error, undefined);
      return result;
    };
    const help = npx(['--help']);
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /Usage: sandbox-reclaim/);
    assert.match(help.stdout, /reconcile/);
    const migrate = npx(['migrate', '--json']);
    assert.equal(migrate.status, 0, migrate.stderr);
    assert.equal(JSON.parse(migrate.stdout).schemaVersion, 5);
    writeFileSync(
      join(project, 'providers.mjs'),
      "export default [{ name: 'js', destroy() {}, list: () => [{ id: 'x-1', createdAt: 1, owner: 'sandbox-reclaim', key: null }] }];\n",
    );
    // The planned destroy did not happen: still leaking, exit 1.
    const hosted = npx(['--providers', './providers.mjs', 'orphans', '--dry-run', '--json']);
    assert.equal(hosted.status, 1, hosted.stderr);
    assert.deepStrictEqual(JSON.parse(hosted.stdout).report.actions, [{ reason: 'orphan', provider: 'js', providerSandboxId: 'x-1', result: 'planned' }]);
    assert.equal(JSON.parse(hosted.stdout).stillLeaking, true);
    assert.equal(npx(['reconcile', '--bogus']).status, 2);

    // The main tarball alone: installs, and says what is missing when loaded.
    const bare = emptyProject(work, 'bare');
    run(npm, ['install', '--offline', '--no-audit', '--no-fund', packed.main], bare);
    const failed = spawnSync(process.execPath, ['-e', "require('sandbox-reclaim')"], { cwd: bare, encoding: 'utf8' });
    assert.notEqual(failed.status, 0);
    assert.match(failed.stderr, new RegExp(`no native addon loaded for platform ${platform} \\(process.platform ${process.platform}, process.arch ${process.arch}\\)`));
    assert.ok(failed.stderr.includes(`package ${platformPackage}: not installed`), failed.stderr);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
