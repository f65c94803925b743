"""Bounded growth: the :func:`reconcile` pass that takes a provider's sweep
calls the store's ``prune(provider, registry_before, audit_before)`` once,
with the pass's time less ``registry_retention`` and less
``audit_retention``; never a dry run, never a pass whose sweep another host
holds. The native stores (in memory, SQLite, PostgreSQL) have it; on a
user's store it is optional, and a failing one fails nothing. (The vectors in
tests/vectors/reconcile.json pin the call and its bounds on the virtual clock.)"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from test_stores import BACKENDS, fresh_store

import sandbox_reclaim as sr

DAY_MS = 86_400_000
OURS = "sandbox-reclaim"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def row(at: int, provider: str, sandbox_id: str) -> sr.AuditEntry:
    return sr.AuditEntry(at, "host-b", provider, sandbox_id, "orphan", "destroyed")


class Listing:
    """A Python provider listing ``listed`` and recording its destroys."""

    name = "py"

    def __init__(self, listed: list[sr.ListedSandbox] | None = None) -> None:
        self.listed = listed or []
        self.destroyed: list[str] = []

    async def destroy(self, sandbox_id: str) -> None:
        self.destroyed.append(sandbox_id)

    def list_sandboxes(self) -> list[sr.ListedSandbox]:
        return self.listed


class UserStore:
    """A user's fleet store over the native in-memory one, every call recorded; no ``prune`` unless set."""

    def __init__(self, inner: Any) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        for name in sr.FLEET_STORE_METHODS:
            setattr(self, name, self._recorded(name, getattr(inner, name)))

    def _recorded(self, name: str, method: Any) -> Any:
        def call(*args: Any) -> Any:
            self.calls.append((name, args))
            return method(*args)

        return call

    def methods(self) -> list[str]:
        return [name for name, _ in self.calls]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_prune_deletes_one_providers_audit_rows_before_the_bound(backend: str, tmp_path: Path) -> None:
    async with fresh_store(backend, tmp_path) as store:
        await store.append_audit([row(100, "py", "a"), row(200, "py", "b"), row(100, "other", "c")])
        await store.prune("py", 0, 200)
        kept = [(entry.provider, entry.at) for entry in await store.list_audit(0, 10)]
        assert kept == [("py", 200), ("other", 100)], "the row at the bound and another provider's stay"
        with pytest.raises(TypeError, match="provider"):
            await store.prune(5, 0, 0)
        with pytest.raises((TypeError, ValueError), match="registry_before"):
            await store.prune("py", -1, 0)
        with pytest.raises((TypeError, ValueError), match="audit_before"):
            await store.prune("py", 0, "0")


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_sweeps_holder_prunes_audit_rows_past_the_audit_retention(backend: str, tmp_path: Path) -> None:
    async with fresh_store(backend, tmp_path) as store:
        now = now_ms()
        await store.append_audit([row(now - 2 * DAY_MS, "py", "old"), row(now - 60_000, "py", "recent"), row(now - 2 * DAY_MS, "other", "theirs")])
        await sr.reconcile(provider=Listing(), instances=store, audit_retention=86_400, dry_run=True)
        assert len(await store.list_audit(0, 10)) == 3, "a dry run prunes nothing"
        await sr.reconcile(provider=Listing(), instances=store, audit_retention=86_400)
        assert sorted(entry.provider_sandbox_id for entry in await store.list_audit(0, 10)) == ["recent", "theirs"]


async def test_a_store_without_prune_is_never_asked() -> None:
    store: Any = UserStore(sr.InMemorySandboxInstanceStore.with_ledger())
    assert not hasattr(store, "prune")
    report = await sr.reconcile(provider=Listing(), instances=store)
    assert report.providers[0].orphans.status is sr.SweepStatus.SWEPT
    assert "prune" not in store.methods()


async def test_prune_is_asked_once_after_the_sweeps_reads_with_the_default_bounds() -> None:
    store: Any = UserStore(sr.InMemorySandboxInstanceStore.with_ledger())
    asked: list[tuple[str, int, int]] = []

    async def prune(provider: str, registry_before: int, audit_before: int) -> None:
        store.calls.append(("prune", (provider, registry_before, audit_before)))
        asked.append((provider, registry_before, audit_before))

    store.prune = prune
    before = now_ms()
    await sr.reconcile(provider=Listing(), instances=store)
    after = now_ms()
    [(provider, registry_before, audit_before)] = asked
    assert provider == "py"
    assert before - 30 * DAY_MS <= registry_before <= after - 30 * DAY_MS
    assert before - 90 * DAY_MS <= audit_before <= after - 90 * DAY_MS
    methods = store.methods()
    assert methods.index("claim_sweep") < methods.index("sandbox_references") < methods.index("prune")

    asked.clear()
    start = now_ms()
    await sr.reconcile(provider=Listing(), instances=store, registry_retention=1, audit_retention=0)
    [(_, short_registry, short_audit)] = asked
    assert start - 1000 <= short_registry <= now_ms() - 1000
    # Never past the orphan grace (600 s by default), whatever audit_retention says: the sweep still
    # counts an audit row of a destroy within it.
    assert start - 600_000 <= short_audit <= now_ms() - 600_000


async def test_a_dry_run_and_a_sweep_held_elsewhere_never_prune() -> None:
    inner = sr.InMemorySandboxInstanceStore.with_ledger()
    store: Any = UserStore(inner)
    asked: list[str] = []
    store.prune = lambda provider, registry_before, audit_before: asked.append(provider)
    await sr.reconcile(provider=Listing(), instances=store, dry_run=True)
    assert asked == [], "dry run"
    assert await inner.claim_sweep("py", "host-b/1", 600_000, now_ms())
    report = await sr.reconcile(provider=Listing(), instances=store)
    assert report.providers[0].orphans.status is sr.SweepStatus.HELD_ELSEWHERE
    assert asked == [], "held elsewhere"


async def test_a_failing_prune_fails_nothing() -> None:
    async def rejecting(provider: str, registry_before: int, audit_before: int) -> None:
        raise ConnectionError("disk full")

    def raising(provider: str, registry_before: int, audit_before: int) -> None:
        raise RuntimeError("sync failure")

    for prune in (rejecting, raising):
        store: Any = UserStore(sr.InMemorySandboxInstanceStore.with_ledger())
        store.prune = prune
        provider = Listing([sr.ListedSandbox("o1", now_ms() - 3_600_000, OURS)])
        report = await sr.reconcile(provider=provider, instances=store)
        assert provider.destroyed == ["o1"], prune.__name__
        assert report.counts.destroyed == 1


async def test_prune_must_be_a_method_when_present() -> None:
    store: Any = UserStore(sr.InMemorySandboxInstanceStore.with_ledger())
    store.prune = "yes"
    with pytest.raises(TypeError, match="prune"):
        await sr.reconcile(provider=Listing(), instances=store)
    assert store.calls == []
