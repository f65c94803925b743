"""What the ``sandbox-reclaim`` command tests share (tests/python/test_cli.py
and tests/cross/test_cli_parity.py): where each build of the command is, and
a *world* to run it against: one SQLite store file seeded with records and
leak entries, and one ``--local`` base directory with real LocalProvider
sandboxes (referenced, orphaned, idle), created through the binding.

Two worlds built with the same ``tag`` hold the same sandbox ids (a
LocalProvider id is derived from its owner and key), so a pass that changes
things can be compared across two identical set-ups.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from services import needs

import sandbox_reclaim as sr

ROOT = Path(__file__).resolve().parents[2]
RUST_BINARY = ROOT / "target" / "release" / "sandbox-reclaim"
"""Built by scripts/test-python.sh (``cargo build -p sandbox-reclaim-cli --release``)."""
NODE_BIN = ROOT / "bindings-node" / "bin" / "sandbox-reclaim.cjs"

HOUR_MS = 3_600_000
TIMING_FIELDS = ("elapsedMs", "startedAt")
"""What differs between two runs of the same pass."""


def missing(message: str) -> None:
    """A skip locally; a failure under CI (:func:`services.needs`)."""
    needs(message, False, "the CLI parity tests compare the three commands")


def console_script() -> Path:
    """The ``sandbox-reclaim`` console script of the venv running the tests."""
    script = Path(sys.executable).parent / "sandbox-reclaim"
    if not script.is_file():
        pytest.fail(f"{script} does not exist: the package did not install its console script", pytrace=False)
    return script


def rust_binary() -> Path:
    """The Rust binary, built in release (scripts/test-python.sh builds it)."""
    if not os.access(RUST_BINARY, os.X_OK):
        missing(f"{RUST_BINARY} is not built (cargo build -p sandbox-reclaim-cli --release)")
    return RUST_BINARY


def listing_counts(document: dict[str, Any]) -> list[tuple[int, int]]:
    """Takes each provider's ``orphans.listed``/``orphans.referenced`` out of
    ``document`` and answers them. They are when, not what: a pass lists a
    provider side by side with its leak destroys (proto/src/machine/reconcile.rs),
    so the idle sandbox it destroys from the ledger is either gone before the
    listing or listed and counted ``referenced`` (acted on by this pass); the
    pass destroys the same either way. In a world of ``make_world``, each is
    one of ``LISTING_OUTCOMES``."""
    counts: list[tuple[int, int]] = []
    for provider in document["report"]["providers"]:
        orphans = provider["orphans"]
        counts.append((orphans.pop("listed"), orphans.pop("referenced")))
    return counts


# The referenced sandbox and both orphans, plus the idle sandbox when its
# destroy had not ended before the listing.
LISTING_OUTCOMES = ([(3, 1)], [(4, 2)])


@dataclass
class Ran:
    argv: list[str]
    code: int
    stdout: str
    stderr: str

    def json(self) -> dict[str, Any]:
        """The one JSON document the command printed."""
        lines = [line for line in self.stdout.splitlines() if line.strip()]
        assert len(lines) == 1, f"expected one JSON document from {self.argv}, got:\n{self.stdout}\nstderr:\n{self.stderr}"
        document: dict[str, Any] = json.loads(lines[0])
        return document

    def __str__(self) -> str:
        return f"{' '.join(self.argv)} exited {self.code}\nstdout:\n{self.stdout}\nstderr:\n{self.stderr}"


def run(command: Sequence[str], args: Sequence[str], cwd: Path | None = None, timeout: float = 120) -> Ran:
    """Runs one build of the command (``command`` + ``args``) to its end."""
    argv = [*command, *args]
    env = {**os.environ, "RUST_LOG": "warn"}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, cwd=cwd, env=env)
    return Ran(argv, done.returncode, done.stdout, done.stderr)


def comparable(document: dict[str, Any], *fields: str) -> dict[str, Any]:
    """The document without its report's ``elapsedMs``/``startedAt`` (and
    ``fields``), its actions sorted: they are listed in the order their
    effects completed, which is the host's timing, not the pass's result."""
    copy: dict[str, Any] = json.loads(json.dumps(document))
    report = copy.get("report")
    if isinstance(report, dict):
        for name in (*TIMING_FIELDS, *fields):
            report.pop(name, None)
        actions = report.get("actions")
        if isinstance(actions, list):
            actions.sort(key=lambda action: (action["reason"], action["provider"], action["providerSandboxId"]))
    return copy


@dataclass
class World:
    """A store file and a LocalProvider base directory under ``dir``."""

    dir: Path
    tag: str
    host: str = "cli-test-host"
    sandboxes: dict[str, str] = field(default_factory=dict)
    """Role → sandbox id."""

    @property
    def owner(self) -> str:
        return f"cli-{self.tag}"

    @property
    def store_path(self) -> Path:
        return self.dir / "store.db"

    @property
    def base_dir(self) -> Path:
        return self.dir / "local"

    def args(self, *args: str) -> list[str]:
        """``args`` and the flags pointing the command at this world."""
        return [
            *args,
            "--store",
            f"sqlite:{self.store_path}",
            "--local",
            str(self.base_dir),
            "--owner",
            self.owner,
            "--host",
            self.host,
            "--json",
        ]

    def provider(self) -> sr.LocalProvider:
        return sr.LocalProvider(base_dir=self.base_dir, owner=self.owner)

    async def store(self) -> sr.SqliteSandboxInstanceStore:
        return await sr.SqliteSandboxInstanceStore.open(self.store_path)

    async def seed(self) -> None:
        """Referenced, orphaned and idle LocalProvider sandboxes; a due leak of
        a sandbox already gone; a leak and an idle record of a provider the
        command is not given (left alone)."""
        provider = self.provider()
        now = int(time.time() * 1000)
        async with await self.store() as store:
            for role in ("referenced", "orphan-1", "orphan-2", "idle"):
                handle = await provider.create(f"{self.tag}-{role}")
                self.sandboxes[role] = handle.id
            fresh = sr.SandboxInstanceRecord(
                f"{self.tag}-referenced", "local", self.sandboxes["referenced"], "thread-1", now, None, "run-1"
            )
            idle = sr.SandboxInstanceRecord(
                f"{self.tag}-idle", "local", self.sandboxes["idle"], "thread-2", now - 2 * HOUR_MS, None, "run-2"
            )
            elsewhere = sr.SandboxInstanceRecord(f"{self.tag}-elsewhere", "docker", "ctr-idle", "thread-3", now - 3 * HOUR_MS)
            for record in (fresh, idle, elsewhere):
                await store.upsert(record)
            # A failed destroy of a sandbox since gone: the next pass retries it (and succeeds).
            gone = sr.NewLeak(f"{self.tag}-gone", "local", f"{self.owner}-gone-sandbox", "run-3", "engine down", now - HOUR_MS)
            await store.record_leak(gone, sr.LeakReason.DESTROY_FAILED, now - HOUR_MS)
            foreign = sr.NewLeak(f"{self.tag}-ctr", "docker", "ctr-leaked", "run-4", "engine down", now - HOUR_MS)
            await store.record_leak(foreign, sr.LeakReason.DESTROY_FAILED, now - HOUR_MS)

    def listed(self) -> list[str]:
        """The sandbox directories left under the base directory."""
        if not self.base_dir.is_dir():
            return []
        return sorted(entry.name for entry in self.base_dir.iterdir() if not entry.name.startswith("."))

    async def cleanup(self) -> None:
        """Destroys every sandbox left (no process outlives the test)."""
        if not self.base_dir.is_dir():
            return
        provider = self.provider()
        for handle in await provider.list():
            await provider.destroy(handle.id)

    def pass_args(self, *extra: str) -> list[str]:
        """A reconcile pass over everything the world seeded."""
        return self.args("reconcile", "--orphan-grace", "0s", "--max-idle", "1h", *extra)


def make_world(tmp: Path, tag: str) -> World:
    tmp.mkdir(parents=True, exist_ok=True)
    world = World(tmp, tag)
    asyncio.run(world.seed())
    return world


def drop_world(world: World) -> None:
    asyncio.run(world.cleanup())


def stop_process(process: subprocess.Popen[str], sig: signal.Signals, timeout: float = 60) -> tuple[str, str]:
    """Sends ``sig`` and waits for the process; its output."""
    process.send_signal(sig)
    try:
        return process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        raise AssertionError(f"the command did not stop on {sig.name}:\n{stdout}\n{stderr}") from None


def node_binary() -> str:
    node = shutil.which("node")
    if node is None:
        missing("node is not installed")
        raise AssertionError("unreachable")
    return node
