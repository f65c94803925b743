'use strict';
// Loads the native addon for this platform: `module.exports` is the addon.
//
// Published, each platform's addon is its own npm package (the napi-rs
// layout): `sandbox-reclaim-<platform>`, listed in the main package's
// optionalDependencies with `os`/`cpu`/`libc` fields, so npm installs just the
// one that fits. In a checkout, `napi build` leaves the addon next to this
// package instead: `sandbox-reclaim.node` (`npm run build`, what make test
// builds) or `sandbox-reclaim.<platform>.node` (`napi build --platform`);
// those are tried first, in that order, and one that fails to load (built for
// another machine) is passed over. When nothing loads, the error names the
// platform and everything tried.

const { existsSync, readFileSync } = require('node:fs');
const { join } = require('node:path');

// One literal require per package, so bundlers and file tracers (Vite SSR,
// Nitro, @vercel/nft) can see which packages the addon may come from.
const PACKAGES = {
  'linux-x64-gnu': ['sandbox-reclaim-linux-x64-gnu', () => require('sandbox-reclaim-linux-x64-gnu')],
  'linux-x64-musl': ['sandbox-reclaim-linux-x64-musl', () => require('sandbox-reclaim-linux-x64-musl')],
  'linux-arm64-gnu': ['sandbox-reclaim-linux-arm64-gnu', () => require('sandbox-reclaim-linux-arm64-gnu')],
  'darwin-x64': ['sandbox-reclaim-darwin-x64', () => require('sandbox-reclaim-darwin-x64')],
  'darwin-arm64': ['sandbox-reclaim-darwin-arm64', () => require('sandbox-reclaim-darwin-arm64')],
  'win32-x64-msvc': ['sandbox-reclaim-win32-x64-msvc', () => require('sandbox-reclaim-win32-x64-msvc')],
};

/** Whether this Linux runs on musl libc (Alpine) rather than glibc. */
function isMusl() {
  try {
    return readFileSync('/usr/bin/ldd', 'latin1').includes('musl');
  } catch {
    // No ldd (a distroless image): Node's report names the glibc it runs on, if any.
    if (!process.report || typeof process.report.getReport !== 'function') return false;
    process.report.excludeNetwork = true;
    return !process.report.getReport().header.glibcVersionRuntime;
  }
}

/** napi-rs' name for this platform: `linux-x64-gnu`, `darwin-arm64`, `win32-x64-msvc`, ... */
function platformName() {
  const { platform, arch } = process;
  if (platform === 'linux') return `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`;
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

function load() {
  const platform = platformName();
  const packageRoot = join(__dirname, '..');
  const tried = [];
  let lastError;
  for (const file of ['sandbox-reclaim.node', `sandbox-reclaim.${platform}.node`]) {
    const path = join(packageRoot, file);
    if (!existsSync(path)) {
      tried.push(`${path}: not found`);
      continue;
    }
    try {
      return require(path);
    } catch (error) {
      tried.push(`${path}: ${error.message}`);
      lastError = error;
    }
  }
  const entry = PACKAGES[platform];
  if (entry) {
    const [name, requirePackage] = entry;
    try {
      return requirePackage();
    } catch (error) {
      const missing = error.code === 'MODULE_NOT_FOUND' && error.message.includes(`'${name}'`);
      tried.push(`package ${name}: ${missing ? 'not installed' : error.message}`);
      lastError = error;
    }
  }
  const supported = Object.entries(PACKAGES).map(([key, [name]]) => `${key} (${name})`);
  const lines = [
    `sandbox-reclaim: no native addon loaded for platform ${platform} ` +
      `(process.platform ${process.platform}, process.arch ${process.arch}).`,
    'Tried:',
    ...tried.map((line) => `  - ${line}`),
    entry
      ? `Install ${entry[0]}: npm installs it as an optional dependency of sandbox-reclaim, ` +
        'unless optional dependencies were omitted (--omit=optional) or the lockfile was made on ' +
        'another platform (then remove node_modules and package-lock.json and install again).'
      : `sandbox-reclaim publishes no addon for ${platform}. Published: ${supported.join(', ')}. ` +
        'Elsewhere, build it from source (bindings-node: npm run build).',
  ];
  const error = new Error(lines.join('\n'), lastError ? { cause: lastError } : undefined);
  error.code = 'SANDBOX_RECLAIM_NO_ADDON';
  throw error;
}

module.exports = load();
