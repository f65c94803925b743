"""The ``sandbox-reclaim`` console script as a real process: the native
command (``run_cli``) and, with ``--providers module:attribute``, passes on
the asyncio driver with Python providers, printed by ``host_emit``. Both are
compared with the Rust binary's JSON (scripts/test-python.sh builds it)."""

from __future__ import annotations

import asyncio
import json
import os
import selectors
import signal
import sqlite3
import subprocess
import textwrap
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from services import docker_image
from cli_world import (
    HOUR_MS,
    LISTING_OUTCOMES,
    Ran,
    World,
    comparable,
    console_script,
    drop_world,
    listing_counts,
    make_world,
    run,
    rust_binary,
    stop_process,
)

import sandbox_reclaim as sr

EMPTY_MODULE = "cli_no_providers"


def script() -> list[str]:
    return [str(console_script())]


def python_cli(args: list[str], cwd: Path | None = None, timeout: float = 120) -> Ran:
    return run(script(), args, cwd=cwd, timeout=timeout)


def write_module(directory: Path, name: str, source: str) -> None:
    (directory / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    seeded = make_world(tmp_path, f"py{time.time_ns() % 1_000_000_000}")
    write_module(tmp_path, EMPTY_MODULE, "PROVIDERS: list[object] = []\n")
    try:
        yield seeded
    finally:
        drop_world(seeded)


# ---- the native command ----


def test_help_exits_0_and_matches_the_binary() -> None:
    ran = python_cli(["--help"])
    assert ran.code == 0, ran
    assert "Usage: sandbox-reclaim [OPTIONS] <COMMAND>" in ran.stdout and ran.stderr == ""
    for args in (["--help"], ["reconcile", "--help"], ["--version"]):
        ours, theirs = python_cli(args), run([str(rust_binary())], args)
        assert (ours.code, ours.stdout, ours.stderr) == (theirs.code, theirs.stdout, theirs.stderr), args


@pytest.mark.parametrize(
    "args",
    [["reconcile", "--concurrency", "0"], ["frobnicate"], ["reconcile", "--every", "soon"], ["status", "--store", "mysql://x"]],
)
def test_usage_errors_exit_2_like_the_binary(args: list[str], tmp_path: Path) -> None:
    ours, theirs = python_cli(args, cwd=tmp_path), run([str(rust_binary())], args, cwd=tmp_path)
    assert ours.code == 2, ours
    assert (ours.code, ours.stdout, ours.stderr) == (theirs.code, theirs.stdout, theirs.stderr)


def test_migrate_matches_the_binary(tmp_path: Path) -> None:
    args = ["migrate", "--json", "--store", f"sqlite:{tmp_path / 'store.db'}"]
    ours = python_cli(args)
    assert ours.code == 0, ours
    assert ours.json() == {"version": 1, "command": "migrate", "store": f"sqlite:{tmp_path / 'store.db'}", "schemaVersion": 5}
    theirs = run([str(rust_binary())], args)
    assert theirs.code == 0, theirs
    assert ours.json() == theirs.json()


def test_reconcile_dry_run_matches_the_binary(world: World) -> None:
    """The native command, the pass on the Python driver (``--providers``
    with no providers of its own: the native LocalProvider runs on the asyncio
    driver) and the Rust binary print the same document; nothing changes."""
    args = world.pass_args("--dry-run")
    native = python_cli(args)
    hosted = python_cli([*args, "--providers", f"{EMPTY_MODULE}:PROVIDERS"], cwd=world.dir)
    binary = run([str(rust_binary())], args)
    for ran in (native, hosted, binary):
        # Planned destroys still bill: exit 1, so an audit-only cron job alerts.
        assert ran.code == 1, ran
    expected = comparable(binary.json())
    assert expected["stillLeaking"] is True and expected["report"]["stillLeaking"] is True
    assert comparable(native.json()) == expected
    assert comparable(hosted.json()) == expected
    report = expected["report"]
    assert report["dryRun"] is True and report["idle"] == {
        "enabled": True,
        "stale": 2,
        "expired": 1,
        "touched": 0,
        "skipped": 1,
    }
    planned = {(action["reason"], action["providerSandboxId"]) for action in report["actions"]}
    assert planned == {
        ("idle", world.sandboxes["idle"]),
        ("orphan", world.sandboxes["orphan-1"]),
        ("orphan", world.sandboxes["orphan-2"]),
        ("leak-retry", f"{world.owner}-gone-sandbox"),
    }
    assert len(world.listed()) == 4, "a dry run destroys nothing"


def test_reconcile_matches_the_binary_on_identical_worlds(tmp_path: Path) -> None:
    """Three identical set-ups, one pass each (binary, native script, Python
    driver): the same destroys, the same document, the same sandboxes left.
    The listing counts alone depend on timing (``listing_counts``): each is
    one of the two outcomes the world allows."""
    tag = f"same{time.time_ns() % 1_000_000_000}"
    worlds = [make_world(tmp_path / name, tag) for name in ("binary", "native", "hosted")]
    try:
        write_module(worlds[2].dir, EMPTY_MODULE, "PROVIDERS = []\n")
        runs = [
            run([str(rust_binary())], worlds[0].pass_args()),
            python_cli(worlds[1].pass_args()),
            python_cli([*worlds[2].pass_args(), "--providers", f"{EMPTY_MODULE}:PROVIDERS"], cwd=worlds[2].dir),
        ]
        documents = []
        for ran, world in zip(runs, worlds):
            assert ran.code == 0, ran.stdout + ran.stderr
            document = comparable(ran.json())
            assert document.pop("store") == f"sqlite:{world.store_path}"
            assert listing_counts(document) in LISTING_OUTCOMES, ran.stdout
            documents.append(document)
            assert world.listed() == [world.sandboxes["referenced"]], "orphans and the idle sandbox are destroyed"
        assert documents[1] == documents[0]
        assert documents[2] == documents[0]
        results = {(action["reason"], action["result"]) for action in documents[0]["report"]["actions"]}
        assert results == {("idle", "destroyed"), ("orphan", "destroyed"), ("leak-retry", "destroyed")}
    finally:
        for world in worlds:
            drop_world(world)


# ---- --providers: passes on the Python driver ----

FLEET_MODULE = """
import json
import os


class FleetProvider:
    name = "fleet"

    def __init__(self, state):
        self.state = state

    async def list(self):
        return self.state["sandboxes"]

    async def destroy(self, sandbox_id):
        with open(self.state["log"], "a", encoding="utf-8") as log:
            log.write(sandbox_id + "\\n")


def providers():
    with open(os.environ["FLEET_STATE"], encoding="utf-8") as file:
        return [FleetProvider(json.load(file))]
"""


async def seed_fleet(world: World) -> dict[str, Any]:
    """The host provider's sandboxes: a referenced one, two orphans, a young
    one, another owner's; one of its leaks is due."""
    now = int(time.time() * 1000)
    old = now - HOUR_MS
    sandboxes = [
        {"id": "h-ref", "createdAt": old, "owner": world.owner, "key": "k-ref"},
        {"id": "h-orphan-1", "createdAt": old, "owner": world.owner, "key": "k-orphan-1"},
        {"id": "h-orphan-2", "createdAt": old, "owner": world.owner, "key": None},
        {"id": "h-young", "createdAt": now, "owner": world.owner, "key": "k-young"},
        {"id": "h-foreign", "createdAt": old, "owner": "someone-else", "key": "k-foreign"},
    ]
    async with await world.store() as store:
        await store.upsert(sr.SandboxInstanceRecord("k-ref", "fleet", "h-ref", "thread-h", now))
        leak = sr.NewLeak("k-leak", "fleet", "h-leak", "run-h", "timed out", old)
        await store.record_leak(leak, sr.LeakReason.DESTROY_FAILED, old)
    return {"sandboxes": sandboxes, "log": str(world.dir / "destroyed.log")}


def run_fleet(
    world: World, args: list[str], monkeypatch: pytest.MonkeyPatch, extra: Sequence[dict[str, Any]] = ()
) -> tuple[Ran, list[str]]:
    state = asyncio.run(seed_fleet(world))
    state["sandboxes"].extend(extra)
    (world.dir / "fleet.json").write_text(json.dumps(state), encoding="utf-8")
    write_module(world.dir, "fleet_providers", FLEET_MODULE)
    monkeypatch.setenv("FLEET_STATE", str(world.dir / "fleet.json"))
    ran = python_cli([*args, "--providers", "fleet_providers:providers"], cwd=world.dir)
    log = world.dir / "destroyed.log"
    destroyed = sorted(log.read_text(encoding="utf-8").split()) if log.exists() else []
    return ran, destroyed


def test_host_provider_orphans_and_leaks_are_destroyed_and_audited(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran, destroyed = run_fleet(world, world.args("reconcile", "--orphan-grace", "5m"), monkeypatch)
    assert ran.code == 0, ran
    assert destroyed == ["h-leak", "h-orphan-1", "h-orphan-2"]
    document = ran.json()
    assert document["command"] == "reconcile" and document["stillLeaking"] is False and document["exitCode"] == 0
    report = document["report"]
    assert [provider["name"] for provider in report["providers"]] == ["local", "fleet"]
    fleet = report["providers"][1]
    assert fleet["leaks"] == {"due": 1, "destroyed": 1, "failed": 0, "deferred": 0, "leaseLost": 0}
    assert fleet["orphans"] == {
        "status": "swept",
        "listed": 5,
        "foreign": 1,
        "referenced": 1,
        "young": 1,
        "deleting": 0,
        "found": 2,
        "destroyed": 2,
        "failed": 0,
        "deferred": 0,
    }
    # The local sandboxes were created a moment ago: inside the 5m grace.
    assert report["providers"][0]["orphans"]["young"] == 2

    async def audit() -> list[sr.AuditEntry]:
        async with await world.store() as store:
            assert [entry.provider_sandbox_id for entry in await store.list_leaks("fleet")] == []
            return await store.list_audit()

    rows = {(entry.provider, entry.provider_sandbox_id, entry.reason, entry.result, entry.host) for entry in asyncio.run(audit())}
    assert {row for row in rows if row[0] == "fleet"} == {
        ("fleet", "h-leak", "leak-retry", "destroyed", world.host),
        ("fleet", "h-orphan-1", "orphan", "destroyed", world.host),
        ("fleet", "h-orphan-2", "orphan", "destroyed", world.host),
    }


def test_host_passes_sweep_the_docker_flag_provider_built_natively(tmp_path: Path) -> None:
    """``--docker`` beside ``--providers``: the command crate configures the
    Docker provider (engine, ``--owner``) as the binary does; an orphan of
    that owner on the engine is destroyed and audited under ``docker``."""
    image, owner = docker_image(), f"py-cli-{uuid.uuid4().hex[:12]}"
    engine = os.environ["DOCKER_HOST"]

    async def orphan() -> tuple[str, list[str]]:
        provider = sr.DockerProvider(image=image, owner=owner, docker_host=engine)
        created = await provider.create("cli-docker-orphan")
        return created.id, [sandbox.id for sandbox in await provider.list()]

    made, listed = asyncio.run(orphan())
    assert listed == [made]
    write_module(tmp_path, EMPTY_MODULE, "PROVIDERS: list[object] = []\n")
    store = f"sqlite:{tmp_path / 'store.db'}"
    args = ["--store", store, "--docker", engine, "--owner", owner, "--providers", f"{EMPTY_MODULE}:PROVIDERS"]
    ran = python_cli([*args, "reconcile", "--orphan-grace", "0s", "--json"], cwd=tmp_path)
    assert ran.code == 0, ran
    (docker,) = ran.json()["report"]["providers"]
    assert (docker["name"], docker["orphans"]["found"], docker["orphans"]["destroyed"]) == ("docker", 1, 1), docker

    async def left() -> list[str]:
        return [sandbox.id for sandbox in await sr.DockerProvider(image=image, owner=owner, docker_host=engine).list()]

    assert asyncio.run(left()) == []


@pytest.mark.parametrize(("retention", "spared"), [([], False), (["--registry-retention", "0s"], True)], ids=["default", "0s"])
def test_host_provider_passes_take_the_registry_retention(
    world: World, monkeypatch: pytest.MonkeyPatch, retention: list[str], spared: bool
) -> None:
    """An unlabelled sandbox (owner "") whose record was written, then
    deleted, is ours while the registry retention counts it."""

    async def registered() -> None:
        async with await world.store() as store:
            await store.upsert(sr.SandboxInstanceRecord("k-unlabelled", "fleet", "h-unlabelled", "thread-h", 1))
            await store.delete("k-unlabelled")

    asyncio.run(registered())
    time.sleep(0.05)  # the pass starts after the deletion
    unlabelled = {"id": "h-unlabelled", "createdAt": int(time.time() * 1000) - HOUR_MS, "owner": ""}
    args = world.args("reconcile", "--orphan-grace", "5m", *retention)
    ran, destroyed = run_fleet(world, args, monkeypatch, [unlabelled])
    assert ran.code == 0, ran
    orphans = ran.json()["report"]["providers"][1]["orphans"]
    if spared:
        assert destroyed == ["h-leak", "h-orphan-1", "h-orphan-2"]
        assert (orphans["foreign"], orphans["destroyed"]) == (2, 2)
    else:
        assert destroyed == ["h-leak", "h-orphan-1", "h-orphan-2", "h-unlabelled"]
        assert (orphans["foreign"], orphans["destroyed"]) == (1, 3)


def test_orphans_command_with_host_providers_leaves_leaks(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    ran, destroyed = run_fleet(world, world.args("orphans", "--orphan-grace", "5m"), monkeypatch)
    assert ran.code == 0, ran
    assert destroyed == ["h-orphan-1", "h-orphan-2"], "orphans only: the due leak is not retried"
    document = ran.json()
    assert document["command"] == "orphans"
    assert "idle" not in document["report"]
    assert all("leaks" not in provider for provider in document["report"]["providers"])
    assert {action["reason"] for action in document["report"]["actions"]} == {"orphan"}

    async def leaks() -> list[str]:
        async with await world.store() as store:
            return [entry.provider_sandbox_id for entry in await store.list_leaks("fleet")]

    assert asyncio.run(leaks()) == ["h-leak"]


BAD_MODULES = """
class Good:
    def __init__(self, name):
        self.name = name

    async def destroy(self, sandbox_id):
        pass


class NoDestroy:
    name = "lazy"


class Nameless:
    async def destroy(self, sandbox_id):
        pass


not_a_list = {"fleet": Good("fleet")}
no_destroy = [Good("a"), NoDestroy()]
nameless = [Good("a"), Nameless()]
twins = [Good("a"), Good("a")]
clashes_with_local = [Good("local")]
bad_owner = [Good("a"), Good("b")]
bad_owner[1].owner = 5
bad_list = [Good("a")]
bad_list[0].list = "every sandbox"


def failing_factory():
    raise RuntimeError("no credentials")


def returns_a_str():
    return "fleet"
"""


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("nowhere:providers", "--providers: no module named 'nowhere'"),
        ("bad_import:providers", "--providers: importing 'bad_import' failed: RuntimeError: boom at import"),
        ("bad_providers:missing", "--providers: module 'bad_providers' has no attribute 'missing'"),
        ("bad_providers:not_a_list", "must be a list of providers (or a zero-arg callable returning one), got dict"),
        ("bad_providers:no_destroy", "bad_providers:no_destroy[1] (provider 'lazy') has no `destroy` method"),
        ("bad_providers:nameless", "bad_providers:nameless[1] has no `name`"),
        ("bad_providers:twins", "bad_providers:twins[1]: provider 'a' is already bad_providers:twins[0]'s name"),
        ("bad_providers:clashes_with_local", "provider 'local' is already the name of --local"),
        ("bad_providers:bad_owner", "bad_providers:bad_owner[1] (provider 'b'): `owner` must be a str"),
        ("bad_providers:bad_list", "bad_providers:bad_list[0] (provider 'a'): `list` must be a method"),
        ("bad_providers:failing_factory", "bad_providers:failing_factory() raised RuntimeError: no credentials"),
        ("bad_providers:returns_a_str", "returns_a_str() must return a list of providers, got str"),
        ("bad_providers", "is not `package.module:attribute`"),
    ],
)
def test_bad_provider_modules_exit_2_naming_the_problem(tmp_path: Path, spec: str, expected: str) -> None:
    write_module(tmp_path, "bad_providers", BAD_MODULES)
    write_module(tmp_path, "bad_import", "raise RuntimeError('boom at import')\n")
    store = tmp_path / "store.db"
    args = ["reconcile", "--store", f"sqlite:{store}", "--local", str(tmp_path / "local"), "--json"]
    ran = python_cli([*args, "--providers", spec], cwd=tmp_path)
    assert ran.code == 2, ran
    assert ran.stderr.startswith("sandbox-reclaim: error: --providers: "), ran
    assert expected in ran.stderr, ran
    assert "Traceback" not in ran.stderr
    error = ran.json()
    assert error["exitCode"] == 2 and error["error"]["kind"] == "usage" and error["error"]["flag"] == "--providers"
    # The command crate checks the module's providers against its own (a
    # name --local takes) before anything opens.
    assert not store.exists(), "a bad module is refused before the store is opened"


def test_a_pass_option_the_core_refuses_names_its_flag_not_providers(tmp_path: Path) -> None:
    # The binary's parser takes a duration this long; the core refuses it. The
    # refusal names the flag through the option's id, before any pass.
    write_module(tmp_path, EMPTY_MODULE, "PROVIDERS = []\n")
    args = ["reconcile", "--store", f"sqlite:{tmp_path / 'store.db'}", "--local", str(tmp_path / "local"), "--json"]
    ran = python_cli([*args, "--registry-retention", "9999999999d", "--providers", f"{EMPTY_MODULE}:PROVIDERS"], cwd=tmp_path)
    assert ran.code == 2, ran
    error = ran.json()["error"]
    assert (error["kind"], error["flag"]) == ("usage", "--registry-retention"), ran
    assert "`registry_retention` must be" in error["message"], ran


def test_unreachable_postgres_exits_3(tmp_path: Path) -> None:
    write_module(tmp_path, EMPTY_MODULE, "PROVIDERS = []\n")
    args = ["reconcile", "--store", "postgres://127.0.0.1:1/x", "--local", str(tmp_path), "--connect-timeout", "5s", "--json"]
    native = python_cli(args, cwd=tmp_path)
    binary = run([str(rust_binary())], args, cwd=tmp_path)
    assert native.code == 3, native
    assert (native.code, native.stdout, native.stderr) == (binary.code, binary.stdout, binary.stderr)
    hosted = python_cli([*args, "--providers", f"{EMPTY_MODULE}:PROVIDERS"], cwd=tmp_path)
    assert hosted.code == 3, hosted
    assert hosted.stderr.startswith("sandbox-reclaim: error: store unavailable: "), hosted
    assert "127.0.0.1:1" in hosted.stderr and "Traceback" not in hosted.stderr
    error = hosted.json()["error"]
    assert (error["kind"], error["what"]) == ("unavailable", "store")


# ---- --every and signals ----


def read_lines(process: subprocess.Popen[str], count: int, timeout: float = 60) -> list[str]:
    """The first ``count`` lines the process prints on stdout."""
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while len(lines) < count:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                process.kill()
                raise AssertionError(f"only {len(lines)} of {count} lines in time: {lines}")
            line = process.stdout.readline()
            if not line:
                raise AssertionError(f"the command exited early ({process.wait()}): {lines}")
            lines.append(line)
    return lines


def start(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*script(), *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1
    )


@pytest.mark.parametrize("mode", ["native", "hosted"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_every_runs_passes_until_a_signal_then_exits_0(world: World, mode: str, sig: signal.Signals) -> None:
    args = world.pass_args("--dry-run", "--every", "300ms")
    if mode == "hosted":
        args += ["--providers", f"{EMPTY_MODULE}:PROVIDERS"]
    process = start(args, world.dir)
    lines = read_lines(process, 2)
    stdout, stderr = stop_process(process, sig)
    assert process.returncode == 0, (stdout, stderr)
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    documents = [json.loads(line) for line in [*lines, *stdout.splitlines()] if line.strip()]
    assert [document["pass"] for document in documents] == list(range(1, len(documents) + 1))
    # Each pass plans destroys that did not happen: still leaking, so each pass's own exit code is 1.
    assert all(document["report"]["dryRun"] and document["stillLeaking"] for document in documents)
    assert all(document["exitCode"] == 1 for document in documents)
    assert len(world.listed()) == 4


SLOW_MODULE = """
import asyncio
import os
import time

LOG = os.environ["SLOW_LOG"]
SECONDS = float(os.environ["SLOW_SECONDS"])


def note(line):
    with open(LOG, "a", encoding="utf-8") as log:
        log.write(line + "\\n")


class Slow:
    name = "slow"
    owner = "slow-owner"

    async def list(self):
        old = int(time.time() * 1000) - 3_600_000
        return [{"id": f"s-{index}", "createdAt": old, "owner": "slow-owner", "key": None} for index in range(3)]

    async def destroy(self, sandbox_id):
        note("start " + sandbox_id)
        await asyncio.sleep(SECONDS)
        note("done " + sandbox_id)


PROVIDERS = [Slow()]
"""


def start_slow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seconds: float) -> tuple[subprocess.Popen[str], Path]:
    write_module(tmp_path, "slow_providers", SLOW_MODULE)
    log = tmp_path / "slow.log"
    monkeypatch.setenv("SLOW_LOG", str(log))
    monkeypatch.setenv("SLOW_SECONDS", str(seconds))
    args = ["reconcile", "--store", f"sqlite:{tmp_path / 'store.db'}", "--json", "--orphan-grace", "0s"]
    process = start([*args, "--concurrency", "1", "--providers", "slow_providers:PROVIDERS"], tmp_path)
    deadline = time.monotonic() + 60
    while not (log.exists() and "start" in log.read_text(encoding="utf-8")):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    return process, log


def test_sigterm_mid_pass_lets_the_destroy_in_flight_finish(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    process, log = start_slow(tmp_path, monkeypatch, 1.5)
    stdout, stderr = stop_process(process, signal.SIGTERM)
    assert process.returncode == 1, (stdout, stderr)
    assert log.read_text(encoding="utf-8").split("\n")[:2] == ["start s-0", "done s-0"], "the destroy in flight finished"
    document = json.loads(stdout)
    assert document["stillLeaking"] is True and document["report"]["cutShort"] is True
    results = sorted((action["providerSandboxId"], action["result"]) for action in document["report"]["actions"])
    assert results == [("s-0", "destroyed"), ("s-1", "deferred"), ("s-2", "deferred")]


def test_a_second_signal_exits_130_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    process, log = start_slow(tmp_path, monkeypatch, 60)
    process.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    started = time.monotonic()
    stdout, stderr = stop_process(process, signal.SIGINT, timeout=20)
    assert process.returncode == 130, (stdout, stderr)
    assert time.monotonic() - started < 10
    assert "sandbox-reclaim: SIGINT again: exiting now (unfinished work stays in the ledger)" in stderr
    assert "done" not in log.read_text(encoding="utf-8")


@pytest.mark.parametrize("every", [False, True])
def test_a_store_failing_mid_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, every: bool) -> None:
    """The audit table vanishes while a destroy runs: one pass exits 3 with
    the store's error (as the binary does); with --every the failed pass is
    reported and the command carries on until stopped. The next pass cannot
    read what the audit log says was just destroyed, so its sweep fails
    closed (unavailable: nothing destroyed, still leaking)."""
    write_module(tmp_path, "slow_providers", SLOW_MODULE)
    log = tmp_path / "slow.log"
    monkeypatch.setenv("SLOW_LOG", str(log))
    monkeypatch.setenv("SLOW_SECONDS", "0.5")
    store = tmp_path / "store.db"
    args = ["reconcile", "--store", f"sqlite:{store}", "--json", "--orphan-grace", "0s", "--concurrency", "3"]
    if every:
        args += ["--every", "200ms"]
    process = start([*args, "--providers", "slow_providers:PROVIDERS"], tmp_path)
    deadline = time.monotonic() + 60
    while not (log.exists() and "start" in log.read_text(encoding="utf-8")):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.02)
    connection = sqlite3.connect(store)
    try:
        connection.execute("DROP TABLE sandbox_audit")
        connection.commit()
    finally:
        connection.close()
    if every:
        lines = read_lines(process, 2)
        stdout, stderr = stop_process(process, signal.SIGTERM)
        assert process.returncode == 0, (stdout, stderr)
        failed, after = [json.loads(line) for line in lines]
        assert [failed["pass"], after["pass"]] == [1, 2]
        assert failed["error"]["kind"] == "unavailable", failed
        orphans = after["report"]["providers"][0]["orphans"]
        assert orphans["status"] == "unavailable" and "sandbox_audit" in orphans["error"], after
        assert after["stillLeaking"] is True and after["exitCode"] == 1 and after["report"]["counts"]["destroyed"] == 0
        assert "sandbox-reclaim: error: pass 1 failed; retrying at the next interval: store unavailable: " in stderr
    else:
        stdout, stderr = process.communicate(timeout=60)
        assert process.returncode == 3, (stdout, stderr)
        assert stderr.startswith("sandbox-reclaim: error: store unavailable: "), stderr
        assert "sandbox_audit" in stderr, stderr
        error = json.loads(stdout)
        assert (error["exitCode"], error["error"]["kind"], error["error"]["what"]) == (3, "unavailable", "store")
