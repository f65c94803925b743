#!/usr/bin/env bash
# make test-python: builds the Python binding into .venv and the Rust
# `sandbox-reclaim` binary, runs its tests and mypy --strict, then builds the
# abi3 manylinux2014 wheel and runs the same tests against it in a fresh
# virtualenv (so the shipped wheel, its console script, py.typed and stubs
# are tested).
#
# Prints "python: N skipped" (and "python (wheel): N skipped"); under CI (CI
# set to anything non-empty) a missing service already fails its test
# (tests/python/services.py), and any skip fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/test-skips.sh
root=$PWD
venv=$root/.venv

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
# The vendors' official SDKs the fakes are proven with, and the OpenAI Agents
# SDK (with docker-py) that sandbox_reclaim.openai_agents is driven by.
py_test_packages=(sprites-py==0.7.2 runloop-api-client==3.0.0 blaxel==0.4.24 openai-agents==0.24.0 docker==7.1.0 modal==1.6.4 e2b==2.31.0 e2b-code-interpreter==2.8.1 daytona==0.226.1 vercel==0.12.1 kubernetes==37.0.3 upstash-box==0.4.0 boxd==0.2.19)
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "maturin>=1.16,<1.17" pytest mypy "${py_test_packages[@]}"

# The build regenerates the native module's stub from the Rust signatures
# (scripts/gen_native_stub.sh) and fails while the checked-in _native.pyi is stale.
echo "== build and install sandbox_reclaim into .venv (maturin develop --release --generate-stubs)"
bash scripts/gen_native_stub.sh --check

# The Rust binary the `sandbox-reclaim` console script is compared with
# (tests/python/test_cli.py, tests/cross/test_cli_parity.py): release, in the
# workspace's target dir (built once, reused).
echo "== build the sandbox-reclaim binary (cargo build -p sandbox-reclaim-cli --release)"
cargo build --quiet -p sandbox-reclaim-cli --release

# Caches go under .venv (gitignored), not into the source tree.
export MYPY_CACHE_DIR=$venv/.mypy_cache
# The store and provider suites need SANDBOX_RECLAIM_PG_URL and DOCKER_HOST
# (scripts/test.sh starts both); tests/cross also needs the Node binding
# built (make test runs test-node first) and its `sandbox-reclaim` bin. With
# CI (any non-empty CI), anything missing fails.
# Prints "python: N skipped"; under CI any skip fails (scripts/test-skips.sh).
echo "== pytest tests/python tests/cross"
pytest_tests python "$venv/bin/python" tests/python tests/cross -q -p no:cacheprovider

echo "== mypy --strict (package, examples, tests, bench)"
(cd bindings-python/python && "$venv/bin/mypy" --strict -p sandbox_reclaim)
"$venv/bin/mypy" --strict examples/python tests/python tests/packaging bench/python bench/sim
MYPYPATH=tests/python "$venv/bin/mypy" --strict tests/cross

echo "== wheel: the manylinux2014 wheel PyPI gets, checked, installed into a fresh venv"
# maturin links it with zig (ziglang from PyPI) against glibc 2.17;
# check_wheel.py proves tags, GLIBC <= 2.17 (objdump), stripped, auditwheel.
"$venv/bin/python" -m pip install --quiet "ziglang==0.17.1" auditwheel
if ! command -v objdump >/dev/null || ! command -v readelf >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq binutils >/dev/null
fi
work=$(mktemp -d /tmp/sandbox-reclaim-wheel.XXXXXX)
trap 'rm -rf "$work"' EXIT
(cd bindings-python && PATH=$venv/bin:$PATH "$venv/bin/maturin" build --release --quiet --zig \
  --compatibility manylinux2014 --auditwheel check --out "$work/dist")
wheel=$(ls "$work"/dist/sandbox_reclaim-*-abi3-manylinux*.whl)
echo "built $(basename "$wheel"): $(wc -c <"$wheel") bytes"
"$venv/bin/python" tests/packaging/check_wheel.py "$wheel"
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet "$wheel" pytest mypy "${py_test_packages[@]}"
# Run from outside the repo so only the installed wheel can be imported.
installed=$(cd "$work" && "$work/venv/bin/python" -c 'import sandbox_reclaim; print(sandbox_reclaim.__file__)')
case $installed in
  "$work/venv/"*) echo "testing the wheel installed at ${installed%/__init__.py}" ;;
  *) echo "expected sandbox_reclaim from the fresh venv, got $installed" >&2; exit 1 ;;
esac
# The wheel's console script runs the command (the suites below use it too).
(cd "$work" && "$work/venv/bin/sandbox-reclaim" --help >/dev/null) || { echo "the wheel's sandbox-reclaim --help failed" >&2; exit 1; }
# The suites that prove a fake with a vendor's own client never import
# sandbox_reclaim (test_vendor_sdks.py, test_*_fake.py): they ran above, once.
(cd "$work" && pytest_tests "python (wheel)" "$work/venv/bin/python" "$root/tests/python" "$root/tests/cross" -q -p no:cacheprovider \
  --ignore="$root/tests/python/test_vendor_sdks.py" --ignore-glob="$root/tests/python/test_*_fake.py")
(cd "$work" && MYPY_CACHE_DIR="$work/mypy-cache" "$work/venv/bin/mypy" --strict "$root/examples/python" "$root/tests/python")
(cd "$work" && MYPYPATH="$root/tests/python" MYPY_CACHE_DIR="$work/mypy-cache" "$work/venv/bin/mypy" --strict "$root/tests/cross")
echo "test-python: every check passed"
