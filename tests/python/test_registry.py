"""The registry: every native store keeps (provider, provider_sandbox_id) of
each instance record written, after the record is deleted too, and
:func:`reconcile` takes a sandbox listed *unlabelled* (owner ``""``) for ours
only when the registry names it. A sandbox labelled for another owner is
never ours; a store without ``registered_sandboxes`` names nothing. Run on the
in-memory, SQLite and PostgreSQL stores on the real clock (the vectors in
tests/vectors/reconcile.json pin the calls and their times)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from test_stores import BACKENDS, fresh_store

import sandbox_reclaim as sr

OURS = "sandbox-reclaim"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def record(key: str, sandbox_id: str, provider: str = "py", updated_at: int = 1) -> sr.SandboxInstanceRecord:
    return sr.SandboxInstanceRecord(key, provider, sandbox_id, "thread-1", updated_at)


async def written_then_deleted(store: Any, key: str, sandbox_id: str, provider: str = "py") -> None:
    """A record naming ``sandbox_id`` is written, then deleted: only the registry remembers it."""
    await store.upsert(record(key, sandbox_id, provider))
    await store.delete(key)
    assert await store.get(key) is None


class Listing:
    """A Python provider listing ``listed`` (``list_sandboxes``) and recording its destroys."""

    name = "py"

    def __init__(self, listed: list[sr.ListedSandbox]) -> None:
        self.listed = listed
        self.destroyed: list[str] = []

    async def destroy(self, sandbox_id: str) -> None:
        self.destroyed.append(sandbox_id)

    def list_sandboxes(self) -> list[sr.ListedSandbox]:
        return self.listed


def fleet() -> Listing:
    """u1: unlabelled, registered; u2: unlabelled, never recorded; x1: another
    owner's, registered; o1: labelled ours, unreferenced (the control)."""
    old = now_ms() - 3_600_000
    return Listing(
        [
            sr.ListedSandbox("u1", old, ""),
            sr.ListedSandbox("u2", old, ""),
            sr.ListedSandbox("x1", old, "someone-else"),
            sr.ListedSandbox("o1", old, OURS),
        ]
    )


class WithoutRegistry:
    """A user's fleet store with every required method and no ``registered_sandboxes``."""

    def __init__(self, inner: sr.InMemoryLeakLedgerStore) -> None:
        for name in sr.FLEET_STORE_METHODS:
            setattr(self, name, getattr(inner, name))


# ---------------------------------------------------------------- the stores' registered_sandboxes


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_registry_names_what_records_named_after_they_are_gone(backend: str, tmp_path: Path) -> None:
    async with fresh_store(backend, tmp_path) as store:
        await store.upsert(record("k1", "c1", "docker", 100))
        await store.upsert(record("k2", "c2", "docker", 200))
        await store.upsert(record("k3", "z3", "e2b", 300))
        assert await store.registered_sandboxes("docker", 0) == ["c1", "c2"]
        assert await store.registered_sandboxes("e2b", 0) == ["z3"]
        assert await store.registered_sandboxes("nobody", 0) == []

        before = now_ms() - 1000
        await store.delete("k1")
        assert await store.sandbox_references("docker") == ["c2"], "no record names c1 any more"
        assert await store.registered_sandboxes("docker", 0) == ["c1", "c2"], "the registry keeps it"
        assert await store.registered_sandboxes("docker", before) == ["c1", "c2"], "stamped at its deletion"
        later = now_ms() + 3_600_000
        assert await store.registered_sandboxes("docker", later) == ["c2"], "a live record always counts"

        # A record pointed at another sandbox: both stay registered.
        await store.upsert(record("k2", "c2b", "docker", 400))
        assert await store.registered_sandboxes("docker", 0) == ["c1", "c2", "c2b"]
        assert await store.registered_sandboxes("docker", later) == ["c2b"]

        # An idle expiry deletes the record too: its sandbox stays registered.
        assert await store.expire_idle("k3", 300, sr.NewLeak("k3", "e2b", "z3", "", "idle", 500))
        await store.resolve_leak((await store.due_leaks("e2b", 10, None, now_ms()))[0])
        assert await store.sandbox_references("e2b") == []
        assert await store.registered_sandboxes("e2b", before) == ["z3"]

        with pytest.raises(TypeError, match="`provider`"):
            await store.registered_sandboxes(5, 0)
        with pytest.raises(ValueError, match="`since`"):
            await store.registered_sandboxes("docker", -1)
        with pytest.raises(TypeError, match="`since`"):
            await store.registered_sandboxes("docker", "0")


# ---------------------------------------------------------------- reconcile with the registry


@pytest.mark.parametrize("backend", BACKENDS)
async def test_reconcile_destroys_an_unlabelled_sandbox_only_when_the_registry_names_it(
    backend: str, tmp_path: Path
) -> None:
    async with fresh_store(backend, tmp_path) as store:
        await written_then_deleted(store, "k-u1", "u1")
        await written_then_deleted(store, "k-x1", "x1")
        assert await store.registered_sandboxes("py", 0) == ["u1", "x1"]
        provider = fleet()
        report = await sr.reconcile(provider=provider, instances=store, host="host-under-test")
        orphans = report.providers[0].orphans
        assert orphans.status is sr.SweepStatus.SWEPT
        assert sorted(provider.destroyed) == ["o1", "u1"], "u2 (never recorded) and x1 (another owner's) are spared"
        assert (orphans.listed, orphans.foreign, orphans.found, orphans.destroyed) == (4, 2, 2, 2)
        assert sorted((action.provider_sandbox_id, action.reason, action.result) for action in report.actions) == [
            ("o1", sr.ActionReason.ORPHAN, sr.ActionResult.DESTROYED),
            ("u1", sr.ActionReason.ORPHAN, sr.ActionResult.DESTROYED),
        ]
        audit = await store.list_audit()
        assert sorted((row.provider_sandbox_id, row.reason, row.result) for row in audit) == [
            ("o1", "orphan", "destroyed"),
            ("u1", "orphan", "destroyed"),
        ]
        assert not report.still_leaking


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_registry_retention_of_zero_forgets_a_deleted_records_sandbox(backend: str, tmp_path: Path) -> None:
    async with fresh_store(backend, tmp_path) as store:
        await written_then_deleted(store, "k-u1", "u1")
        await asyncio.sleep(0.05)  # the pass starts after the deletion
        provider = fleet()
        report = await sr.reconcile(provider=provider, instances=store, registry_retention=0)
        assert provider.destroyed == ["o1"], "u1 is no longer registered"
        assert report.providers[0].orphans.foreign == 3
        # That pass held the sweep, so it pruned the registry rows past the retention too.
        assert await store.registered_sandboxes("py", 0) == [], "pruned: past a retention of 0"
        await written_then_deleted(store, "k-u1", "u1")
        # The default retention (30 days) still names it.
        provider = fleet()
        report = await sr.reconcile(provider=provider, instances=store)
        assert provider.destroyed == ["u1"], "o1 is gone already"
        assert report.providers[0].orphans.foreign == 2


async def test_a_store_without_registered_sandboxes_never_destroys_an_unlabelled_sandbox() -> None:
    inner = sr.InMemorySandboxInstanceStore.with_ledger()
    await written_then_deleted(inner, "k-u1", "u1")
    assert await inner.registered_sandboxes("py", 0) == ["u1"], "the registry would name it"
    store: Any = WithoutRegistry(inner)
    assert not hasattr(store, "registered_sandboxes")
    provider = fleet()
    report = await sr.reconcile(provider=provider, instances=store)
    orphans = report.providers[0].orphans
    assert orphans.status is sr.SweepStatus.SWEPT
    assert provider.destroyed == ["o1"], "only the labelled orphan"
    assert (orphans.listed, orphans.foreign, orphans.destroyed) == (4, 3, 1)


async def test_registered_sandboxes_must_be_a_method_when_present() -> None:
    inner = sr.InMemorySandboxInstanceStore.with_ledger()
    store: Any = WithoutRegistry(inner)
    store.registered_sandboxes = ["u1"]
    provider = fleet()
    with pytest.raises(TypeError, match="registered_sandboxes"):
        await sr.reconcile(provider=provider, instances=store)
    assert provider.destroyed == []


async def test_a_failing_registry_read_sweeps_nothing_of_that_provider() -> None:
    inner = sr.InMemorySandboxInstanceStore.with_ledger()
    store: Any = WithoutRegistry(inner)
    called: list[tuple[str, int]] = []

    async def registered_sandboxes(provider: str, since: int) -> list[str]:
        called.append((provider, since))
        raise ConnectionError("registry down")

    store.registered_sandboxes = registered_sandboxes
    provider = fleet()
    started = now_ms()
    report = await sr.reconcile(provider=provider, instances=store, registry_retention=60)
    orphans = report.providers[0].orphans
    assert provider.destroyed == [], "the sweep fails closed"
    assert orphans.status is sr.SweepStatus.UNAVAILABLE
    assert orphans.error is not None and "registry down" in orphans.error
    assert [name for name, _ in called] == ["py"]
    assert started - 60_000 <= called[0][1] <= now_ms() - 60_000, "since: the pass's start less the retention"


async def test_a_registry_answer_out_of_contract_sweeps_nothing() -> None:
    inner = sr.InMemorySandboxInstanceStore.with_ledger()
    await written_then_deleted(inner, "k-u1", "u1")
    store: Any = WithoutRegistry(inner)
    store.registered_sandboxes = lambda provider, since: ["u1", 7]
    provider = fleet()
    report = await sr.reconcile(provider=provider, instances=store)
    assert provider.destroyed == []
    orphans = report.providers[0].orphans
    assert orphans.status is sr.SweepStatus.UNAVAILABLE
    assert orphans.error == "an id instances.registered_sandboxes() returned must be a str, got int"
