# Two commands do all set-up on a fresh machine:
#   make demo   run the main job on embedded defaults
#   make test   build everything and run every suite (Rust, Node, Python, parity,
#               cross-language, packaging)
# Each suite's script installs what it needs (npm packages locally, a Python
# venv in .venv, Debian packages via apt-get) and starts/stops its services.

.PHONY: test demo bench soak fleet-sim lint test-rust test-node test-python test-reference test-packaging test-live

test:
	bash scripts/test.sh

demo:
	bash scripts/demo.sh

bench:
	bash scripts/bench.sh

# By hand only (never in make test or CI): issue #26's proof harness. Node,
# Python and command processes share one PostgreSQL (clocks offset up to
# ±30 s) and then one SQLite file, paused and killed at random, against a
# fake cloud that logs every destroy. SOAK_SECONDS (default 600),
# SOAK_PAUSES=0, SOAK_KILLS=0; see tests/soak/README.md. The last line is
# `soak: live_destroyed=N orphans_left=N repeat_destroys=N pauses=N kills=N`.
soak:
	bash scripts/soak.sh

# By hand (issue #38): 8 reconcile processes of the three languages on one
# PostgreSQL of 1,000,000 records, 100,000 listed on four vendors' fakes;
# SIM_PROCS, SIM_RECORDS, SIM_LISTED change the sizes (bench/sim/fleet_sim.py).
fleet-sim:
	bash scripts/fleet-sim.sh

# By hand only (never in make test or CI): the hosted providers against the
# real E2B, Daytona and Vercel APIs, each vendor with its credentials set
# (E2B_API_KEY; DAYTONA_API_KEY; VERCEL_TOKEN + VERCEL_TEAM_ID + VERCEL_PROJECT_ID).
# It creates and reclaims one sandbox per vendor; a vendor without credentials is skipped.
test-live:
	cd bindings-node && npm ci --no-audit --no-fund --silent && npm run build --silent
	node --test tests/live/hosted-live.test.mjs

# The pieces scripts/test.sh runs (inside the services it starts).
CORE_FEATURES := --features sandbox-reclaim/sqlite,sandbox-reclaim/postgres,sandbox-reclaim/docker,sandbox-reclaim/local,sandbox-reclaim/e2b,sandbox-reclaim/daytona,sandbox-reclaim/vercel,sandbox-reclaim/modal,sandbox-reclaim/kubernetes,sandbox-reclaim/boxd

# The module graph of every crate's src/ has no cycle, and each crate's layers
# (folders) import only downwards (proto: model, report, options, contract,
# machine, wire; runtime crate: runtime, stores, providers); the sans-IO crate
# depends on no runtime.
lint:
	python3 scripts/check_module_graph.py --self-test
	python3 scripts/check_module_graph.py
	bash scripts/check_proto_deps.sh
	python3 scripts/gen_declarations.py --check
	RUSTDOCFLAGS="-D warnings" cargo doc --quiet -p sandbox-reclaim-proto --no-deps
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo clippy --workspace --all-targets $(CORE_FEATURES) -- -D warnings

# Needs SANDBOX_RECLAIM_PG_URL and DOCKER_HOST (scripts/test.sh provides both).
# Prints "rust: N skipped" (as test-node and test-python print theirs).
test-rust:
	bash scripts/test-rust.sh $(CORE_FEATURES)

test-reference:
	bash -c 'source scripts/test-skips.sh && node_tests reference tests/node/reference.test.mjs'

test-node:
	bash scripts/test-node.sh

test-python:
	bash scripts/test-python.sh

# npm tarballs installed offline, the addon loader, the sdist built from
# source, actionlint. Reuses the addon test-node built.
test-packaging:
	bash scripts/test-packaging.sh
