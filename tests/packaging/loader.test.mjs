// The addon loader (bindings-node/lib/native.cjs) on every platform we
// publish for, and on some we don't: each case runs the loader in a child
// process whose process.platform / process.arch / libc are faked by the
// preload fake-platform.cjs, inside a throwaway node_modules where each
// platform package is a stand-in that reports its own name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const packageDir = resolve(here, '..', '..', 'bindings-node');
const preload = join(here, 'fake-platform.cjs');
const addon = join(packageDir, 'sandbox-reclaim.node');

const platforms = readdirSync(join(packageDir, 'npm'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => ({ platform: entry.name, manifest: JSON.parse(readFileSync(join(packageDir, 'npm', entry.name, 'package.json'), 'utf8')) }));
const published = platforms.map(({ manifest }) => manifest.name);

/** A project with sandbox-reclaim's loader and a stand-in for each platform package but `without`. */
function project(without = []) {
  const root = mkdtempSync(join(tmpdir(), 'sandbox-reclaim-loader-'));
  const lib = join(root, 'node_modules', 'sandbox-reclaim', 'lib');
  mkdirSync(lib, { recursive: true });
  copyFileSync(join(packageDir, 'lib', 'native.cjs'), join(lib, 'native.cjs'));
  for (const { manifest } of platforms) {
    if (without.includes(manifest.name)) continue;
    const dir = join(root, 'node_modules', manifest.name);
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: manifest.name, version: manifest.version, main: 'index.js' }));
    writeFileSync(join(dir, 'index.js'), `module.exports = { standIn: ${JSON.stringify(manifest.name)} };`);
  }
  return root;
}

/** Loads the loader as `fake` (`platform,arch[,libc]`, or null for the real one); returns {loaded} or {error}. */
function runLoader(root, fake) {
  const script = `
    try {
      const native = require(${JSON.stringify(join(root, 'node_modules', 'sandbox-reclaim', 'lib', 'native.cjs'))});
      const addon = typeof native.protocol === 'function' && Object.keys(require.cache).find((path) => path.endsWith('.node'));
      console.log(JSON.stringify({ loaded: native.standIn ?? (addon ? require('node:path').basename(addon) : 'something else') }));
    } catch (error) {
      console.log(JSON.stringify({ error: error.message, code: error.code, cause: error.cause?.message }));
    }`;
  const env = { ...process.env };
  delete env.SANDBOX_RECLAIM_FAKE_PLATFORM;
  if (fake) env.SANDBOX_RECLAIM_FAKE_PLATFORM = fake;
  const result = spawnSync(process.execPath, ['--require', preload, '-e', script], { cwd: root, env, encoding: 'utf8' });
  assert.equal(result.status, 0, result.stderr);
  return JSON.parse(result.stdout);
}

test('the preload really fakes the platform', () => {
  const result = spawnSync(process.execPath, ['--require', preload, '-p', 'process.platform + "/" + process.arch'], {
    env: { ...process.env, SANDBOX_RECLAIM_FAKE_PLATFORM: 'freebsd,riscv64' },
    encoding: 'utf8',
  });
  assert.equal(result.stdout.trim(), 'freebsd/riscv64');
});

test('each platform package is what the loader picks on the platform its os/cpu/libc fields name', () => {
  assert.equal(platforms.length, 6, 'six platform packages');
  const root = project();
  try {
    for (const { platform, manifest } of platforms) {
      const fake = [manifest.os[0], manifest.cpu[0], ...(manifest.libc ?? [])].join(',');
      assert.deepStrictEqual(runLoader(root, fake), { loaded: manifest.name }, `${platform} (${fake})`);
      assert.equal(manifest.name, `sandbox-reclaim-${platform}`);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('on an unsupported platform the error names the platform and the packages there are', () => {
  const root = project();
  try {
    for (const [fake, platform] of [
      ['freebsd,x64', 'freebsd-x64'],
      ['linux,arm64,musl', 'linux-arm64-musl'],
      ['linux,riscv64,glibc', 'linux-riscv64-gnu'],
      ['win32,arm64', 'win32-arm64-msvc'],
    ]) {
      const { error, code } = runLoader(root, fake);
      assert.equal(code, 'SANDBOX_RECLAIM_NO_ADDON', fake);
      const [processPlatform, processArch] = fake.split(',');
      assert.match(error, new RegExp(`no native addon loaded for platform ${platform} \\(process.platform ${processPlatform}, process.arch ${processArch}\\)`));
      // What was tried: the files a checkout's build leaves next to the package.
      const pkg = join(root, 'node_modules', 'sandbox-reclaim');
      assert.ok(error.includes(`${join(pkg, `sandbox-reclaim.${platform}.node`)}: not found`), error);
      assert.ok(error.includes(`${join(pkg, 'sandbox-reclaim.node')}: not found`), error);
      assert.ok(error.includes(`publishes no addon for ${platform}`), error);
      for (const name of published) assert.ok(error.includes(name), `${fake}: names ${name}: ${error}`);
      // No platform package of another platform was loaded instead.
      assert.ok(!error.includes('package sandbox-reclaim-'), error);
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('on a supported platform without its package the error names the package tried', () => {
  const root = project(['sandbox-reclaim-darwin-arm64', 'sandbox-reclaim-linux-x64-musl']);
  try {
    for (const [fake, platform] of [['darwin,arm64', 'darwin-arm64'], ['linux,x64,musl', 'linux-x64-musl']]) {
      const { error, code } = runLoader(root, fake);
      assert.equal(code, 'SANDBOX_RECLAIM_NO_ADDON');
      assert.match(error, new RegExp(`for platform ${platform} `));
      assert.ok(error.includes(`package sandbox-reclaim-${platform}: not installed`), error);
      assert.ok(error.includes(`Install sandbox-reclaim-${platform}`), error);
    }
    // Its neighbours still load.
    assert.deepStrictEqual(runLoader(root, 'darwin,x64'), { loaded: 'sandbox-reclaim-darwin-x64' });
    assert.deepStrictEqual(runLoader(root, 'linux,x64,glibc'), { loaded: 'sandbox-reclaim-linux-x64-gnu' });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('an installed package whose addon does not load: the error carries why', () => {
  const root = project();
  try {
    const dir = join(root, 'node_modules', 'sandbox-reclaim-linux-arm64-gnu');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'sandbox-reclaim-linux-arm64-gnu', version: '0.1.0', main: 'sandbox-reclaim.linux-arm64-gnu.node' }));
    writeFileSync(join(dir, 'sandbox-reclaim.linux-arm64-gnu.node'), 'not an ELF file');
    const { error, cause } = runLoader(root, 'linux,arm64,glibc');
    assert.ok(error.includes('package sandbox-reclaim-linux-arm64-gnu: '), error);
    assert.ok(!error.includes('not installed'), error);
    assert.ok(cause && error.includes(cause.split('\n')[0]), `${cause} in ${error}`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test("a checkout's own build next to the package comes first: sandbox-reclaim.node, then sandbox-reclaim.<platform>.node", () => {
  assert.ok(existsSync(addon), `${addon} is missing: build it first (cd bindings-node && npm run build)`);
  assert.ok(process.platform === 'linux' && process.arch === 'x64', 'this test runs on linux x64 (glibc)');
  const root = project();
  try {
    const pkg = join(root, 'node_modules', 'sandbox-reclaim');
    const own = 'sandbox-reclaim.linux-x64-gnu.node';
    // This machine's platform, whose stand-in package answers when no file is there.
    assert.deepStrictEqual(runLoader(root, null), { loaded: 'sandbox-reclaim-linux-x64-gnu' });
    copyFileSync(addon, join(pkg, own));
    assert.deepStrictEqual(runLoader(root, null), { loaded: own });
    copyFileSync(addon, join(pkg, 'sandbox-reclaim.node'));
    assert.deepStrictEqual(runLoader(root, null), { loaded: 'sandbox-reclaim.node' });
    // A file built for another machine is passed over, and the next one loads.
    writeFileSync(join(pkg, 'sandbox-reclaim.node'), 'built for another machine');
    assert.deepStrictEqual(runLoader(root, null), { loaded: own });
    rmSync(join(pkg, own));
    assert.deepStrictEqual(runLoader(root, null), { loaded: 'sandbox-reclaim-linux-x64-gnu' });
    // A platform-named file of this machine is not picked up on another platform.
    copyFileSync(addon, join(pkg, own));
    assert.deepStrictEqual(runLoader(root, 'darwin,arm64'), { loaded: 'sandbox-reclaim-darwin-arm64' });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
