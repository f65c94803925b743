#!/usr/bin/env node
// Packs the npm packages of a release, leaving the source tree as it is:
//
//   node npm/pack.mjs <out-dir> [<platform>=<addon.node> ...]
//
// - <out-dir>/sandbox-reclaim-<version>.tgz: the main package (JS, types,
//   the loader lib/native.cjs), whose package.json gains `optionalDependencies`
//   on every platform package, pinned to this very version. They are added
//   here, at pack time, as `napi pre-publish` does: listed in the source
//   package.json they would make `npm ci` of a checkout fetch packages that
//   are not published yet.
// - <out-dir>/platforms/sandbox-reclaim-<platform>-<version>.tgz: one per
//   platform directory in npm/, with its addon `sandbox-reclaim.<platform>.node`
//   taken from the <platform>=<file> pairs given, else from npm/<platform>/
//   (where `napi artifacts` puts the release builds). Without pairs, every
//   platform's addon must be there; with pairs, only those platforms are packed.
//
// Prints {"main": <tarball>, "platforms": {<platform>: <tarball>}} as JSON.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const npmDir = dirname(fileURLToPath(import.meta.url));
const packageDir = dirname(npmDir);
// npm is a .cmd script on Windows, which only a shell runs.
const shell = process.platform === 'win32';
const npm = shell ? 'npm.cmd' : 'npm';

function fail(message) {
  console.error(`npm/pack.mjs: ${message}`);
  process.exit(1);
}

/** `npm pack <dir>` into `dest`; returns the tarball's path. */
function pack(dir, dest) {
  const out = execFileSync(npm, ['pack', '--json', '--pack-destination', dest, dir], {
    cwd: dir,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    shell,
  });
  return join(dest, JSON.parse(out)[0].filename);
}

const [outArg, ...pairs] = process.argv.slice(2);
if (!outArg) fail('usage: node npm/pack.mjs <out-dir> [<platform>=<addon.node> ...]');
const outDir = resolve(outArg);
const main = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
const binary = main.napi.binaryName;

const platforms = readdirSync(npmDir, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(npmDir, entry.name, 'package.json')))
  .map((entry) => entry.name)
  .sort();
if (platforms.length !== main.napi.targets.length) {
  fail(`npm/ has ${platforms.length} platform packages for ${main.napi.targets.length} napi.targets: run napi create-npm-dirs`);
}
const manifests = Object.fromEntries(
  platforms.map((platform) => [platform, JSON.parse(readFileSync(join(npmDir, platform, 'package.json'), 'utf8'))]),
);
for (const [platform, manifest] of Object.entries(manifests)) {
  if (manifest.name !== `${main.name}-${platform}`) fail(`npm/${platform} is named ${manifest.name}`);
  if (manifest.version !== main.version) {
    fail(`${manifest.name} is at ${manifest.version}, sandbox-reclaim at ${main.version}: run npm run version`);
  }
}

const addons = {};
for (const pair of pairs) {
  const [platform, file] = pair.split('=');
  if (!manifests[platform] || !file) fail(`not <platform>=<addon.node> with a platform of npm/: ${pair}`);
  addons[platform] = resolve(file);
}
if (pairs.length === 0) {
  for (const platform of platforms) addons[platform] = join(npmDir, platform, `${binary}.${platform}.node`);
}
for (const [platform, file] of Object.entries(addons)) {
  if (!existsSync(file)) fail(`no addon for ${platform}: ${file} is missing`);
}

const work = mkdtempSync(join(tmpdir(), 'sandbox-reclaim-npm-pack-'));
try {
  mkdirSync(join(outDir, 'platforms'), { recursive: true });
  const result = { main: '', platforms: {} };
  for (const [platform, file] of Object.entries(addons)) {
    const stage = join(work, platform);
    mkdirSync(stage);
    for (const name of ['package.json', 'README.md']) copyFileSync(join(npmDir, platform, name), join(stage, name));
    copyFileSync(file, join(stage, `${binary}.${platform}.node`));
    result.platforms[platform] = pack(stage, join(outDir, 'platforms'));
  }
  // The main package as npm packs it from the checkout (its `files`), then
  // re-packed with the optional dependencies added to its package.json.
  const first = pack(packageDir, work);
  // A relative name: a Windows drive letter reads as a remote host to GNU tar.
  execFileSync('tar', ['-xzf', basename(first)], { cwd: work });
  const staged = join(work, 'package');
  const manifest = JSON.parse(readFileSync(join(staged, 'package.json'), 'utf8'));
  manifest.optionalDependencies = Object.fromEntries(platforms.map((platform) => [manifests[platform].name, main.version]));
  writeFileSync(join(staged, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  result.main = pack(staged, outDir);
  console.log(JSON.stringify(result));
} finally {
  rmSync(work, { recursive: true, force: true });
}
