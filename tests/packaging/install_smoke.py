"""Smoke test of an installed sandbox_reclaim (a wheel, or the sdist pip
built from source): it imports from the venv it was installed into, reclaims
through the in-memory store, raises SandboxReclaimFailedError from a
reclaimer, and a failed destroy on the SQLite store (bundled SQLite, compiled
in) lands in the leak ledger that retry_leaks then clears.

    python tests/packaging/install_smoke.py <venv the package must come from>
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

import sandbox_reclaim as sr


class Provider:
    name = "docker"

    def __init__(self, failing: set[str]) -> None:
        self.failing = failing
        self.destroyed: list[str] = []

    async def destroy(self, sandbox_id: str) -> None:
        if sandbox_id in self.failing:
            raise ConnectionError("engine unreachable")
        self.destroyed.append(sandbox_id)


def record(key: str, container: str) -> sr.SandboxInstanceRecord:
    return sr.SandboxInstanceRecord(key, "docker", container, "thread-1", 1_700_000_000_000)


def run(key: str) -> sr.RunRecord:
    return sr.RunRecord("run-1", "thread-1", sr.RunStatus.COMPLETED, 1_700_000_000_000, sandbox_key=key)


async def main(prefix: Path) -> None:
    location = Path(sr.__file__).resolve()
    assert location.is_relative_to(prefix), f"sandbox_reclaim imported from {location}, not from {prefix}"

    memory = sr.InMemorySandboxInstanceStore()
    await memory.upsert(record("k1", "ctr-1"))
    provider = Provider(failing={"ctr-2"})
    outcome = await sr.reclaim_sandbox(run("k1"), provider=provider, instances=memory)
    assert outcome is sr.ReclaimOutcome.DESTROYED and provider.destroyed == ["ctr-1"], (outcome, provider.destroyed)

    await memory.upsert(record("k2", "ctr-2"))
    try:
        await sr.sandbox_reclaimer(provider=provider, instances=memory)(run("k2"))
        raise AssertionError("sandbox_reclaimer did not raise on destroy-failed")
    except sr.SandboxReclaimFailedError as error:
        assert (error.run_id, error.sandbox_key) == ("run-1", "k2"), error

    with tempfile.TemporaryDirectory() as tmp:
        async with await sr.SqliteSandboxInstanceStore.open(str(Path(tmp) / "store.db")) as sqlite:
            await sqlite.upsert(record("k3", "ctr-2"))
            outcome = await sr.reclaim_sandbox(run("k3"), provider=provider, instances=sqlite)
            assert outcome is sr.ReclaimOutcome.DESTROY_FAILED, outcome
            assert [leak.provider_sandbox_id for leak in await sr.list_leaks(sqlite)] == ["ctr-2"]
            provider.failing.clear()
            summary = await sr.retry_leaks(provider=provider, instances=sqlite)
            assert await sr.list_leaks(sqlite) == [], summary
    print(f"install smoke: sandbox_reclaim from {location.parent} reclaims (memory, SQLite, leak ledger)")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]).resolve()))
