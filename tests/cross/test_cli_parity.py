"""One ``sandbox-reclaim`` command, three builds: the Rust binary
(target/release/sandbox-reclaim), ``npx sandbox-reclaim``'s entry point
(``node bindings-node/bin/sandbox-reclaim.cjs``) and the venv's console
script. The same ``reconcile --dry-run --json`` over one SQLite store and
one ``--local`` base directory with real LocalProvider sandboxes (referenced,
orphaned, one idle under ``--max-idle``, a due leak, records and leaks of a
provider not given) prints the same document through each of them, natively
and with ``--providers`` (the pass on the Node / Python driver with the same
native LocalProvider); and one pass that destroys, on three identical
set-ups, destroys the same and prints the same.

Compared after removing the report's ``elapsedMs`` and ``startedAt`` (``--host``
is given) and sorting its actions (listed in completion order). A missing
build is a skip locally and a FAILURE under CI (services.needs).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_world import (
    LISTING_OUTCOMES,
    NODE_BIN,
    ROOT,
    Ran,
    World,
    comparable,
    console_script,
    drop_world,
    listing_counts,
    make_world,
    missing,
    node_binary,
    run,
    rust_binary,
)

PYTHON_PROVIDERS = "cli_parity_providers:PROVIDERS"
NODE_PROVIDERS = "./cli-parity-providers.mjs"


def commands() -> dict[str, list[str]]:
    """Each build's command line."""
    node = node_binary()
    if not NODE_BIN.is_file():
        missing(f"{NODE_BIN} does not exist (the npm package's `sandbox-reclaim` bin)")
    probe = subprocess.run([node, str(NODE_BIN), "--version"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    if probe.returncode != 0:
        missing(f"`node {NODE_BIN} --version` failed (is the Node binding built?): {probe.stderr.strip()[-500:]}")
    return {"rust": [str(rust_binary())], "node": [node, str(NODE_BIN)], "python": [str(console_script())]}


def host_modules(directory: Path) -> None:
    """Provider modules with no providers of their own: with them the pass
    runs on the host language's driver (``--local`` still gives one)."""
    (directory / "cli_parity_providers.py").write_text("PROVIDERS: list[object] = []\n", encoding="utf-8")
    (directory / "cli-parity-providers.mjs").write_text("export default [];\n", encoding="utf-8")


def runs(builds: dict[str, list[str]], world: World, args: list[str]) -> dict[str, Ran]:
    """The pass through every build, natively and on each host's driver."""
    ran = {name: run(command, args, cwd=world.dir) for name, command in builds.items()}
    ran["node --providers"] = run(builds["node"], [*args, "--providers", NODE_PROVIDERS], cwd=world.dir)
    ran["python --providers"] = run(builds["python"], [*args, "--providers", PYTHON_PROVIDERS], cwd=world.dir)
    return ran


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    seeded = make_world(tmp_path, f"x{time.time_ns() % 1_000_000_000}")
    host_modules(tmp_path)
    try:
        yield seeded
    finally:
        drop_world(seeded)


def test_reconcile_dry_run_json_is_the_same_through_every_build(world: World) -> None:
    builds = commands()
    results = runs(builds, world, world.pass_args("--dry-run"))
    for name, ran in results.items():
        assert ran.code == 1, f"{name}: a dry run that plans destroys is still leaking: {ran}"
    expected = comparable(results["rust"].json())
    for name, ran in results.items():
        assert comparable(ran.json()) == expected, f"{name} differs from the Rust binary:\n{ran.stdout}\nvs\n{results['rust'].stdout}"
    report = expected["report"]
    assert report["dryRun"] is True and report["counts"]["planned"] == 4 and len(report["actions"]) == 4
    assert expected["store"] == f"sqlite:{world.store_path}" and report["host"] == world.host
    assert len(world.listed()) == 4, "no dry run destroyed anything"


def test_reconcile_destroys_the_same_through_every_build(tmp_path: Path) -> None:
    """Five identical set-ups (same owner and keys, so the same sandbox ids),
    one pass each: the same document, the same sandboxes left. The listing
    counts alone depend on timing (``listing_counts``)."""
    builds = commands()
    tag = f"y{time.time_ns() % 1_000_000_000}"
    names = ["rust", "node", "python", "node --providers", "python --providers"]
    worlds = {name: make_world(tmp_path / name.replace(" --", "-"), tag) for name in names}
    try:
        documents = {}
        for name, world in worlds.items():
            host_modules(world.dir)
            build, _, hosted = name.partition(" ")
            extra = ["--providers", NODE_PROVIDERS if build == "node" else PYTHON_PROVIDERS] if hosted else []
            ran = run(builds[build], [*world.pass_args(), *extra], cwd=world.dir)
            assert ran.code == 0, f"{name}: {ran}"
            document = comparable(ran.json())
            assert document.pop("store") == f"sqlite:{world.store_path}", name
            assert listing_counts(document) in LISTING_OUTCOMES, f"{name}: {ran}"
            documents[name] = document
            assert world.listed() == [world.sandboxes["referenced"]], f"{name}: orphans and the idle sandbox are gone"
        for name, document in documents.items():
            assert document == documents["rust"], f"{name} differs from the Rust binary"
        results = {(action["reason"], action["result"]) for action in documents["rust"]["report"]["actions"]}
        assert results == {("idle", "destroyed"), ("orphan", "destroyed"), ("leak-retry", "destroyed")}
    finally:
        for world in worlds.values():
            drop_world(world)
