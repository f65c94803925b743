"""A sweep's scoped reads (issue #38): a store with all of
:data:`sandbox_reclaim.SCOPED_READS` (``sweep_mark``, ``referenced_among``,
``registered_among``, ``lookup_candidates``, ``lookup_checked``) is swept by
asking about what it listed (mark, list, then the listed ids), so a pass's
store work follows what it lists; a store with none keeps the older calls
(test_registry.py, test_prune.py); one with only some is refused before
anything is called. The native stores (in memory, SQLite, PostgreSQL) answer
all five, their arguments checked like their siblings'. On the real clock
(the vectors in tests/vectors/reconcile.json pin the calls and their times)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from test_stores import BACKENDS, fresh_store

import sandbox_reclaim as sr

DAY_MS = 86_400_000
GRACE_MS = 600_000  # orphan_grace's default
OURS = "sandbox-reclaim"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def old() -> int:
    return now_ms() - 3_600_000


def record(key: str, sandbox_id: str, provider: str = "py", updated_at: int = 1) -> sr.SandboxInstanceRecord:
    return sr.SandboxInstanceRecord(key, provider, sandbox_id, "thread-1", updated_at)


def test_the_scoped_reads_are_the_contracts_five() -> None:
    assert sr.SCOPED_READS == ("sweep_mark", "referenced_among", "registered_among", "lookup_candidates", "lookup_checked")
    for name in sr.SCOPED_READS:
        assert callable(getattr(sr.InMemoryLeakLedgerStore, name)), name
        assert not hasattr(sr.InMemorySandboxInstanceStore, name), f"{name}: a store without a ledger has no fleet side"
        assert callable(getattr(sr.SqliteSandboxInstanceStore, name)), name
        assert callable(getattr(sr.PostgresSandboxInstanceStore, name)), name


# ---------------------------------------------------------------- the native stores


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_native_stores_answer_about_listed_ids(backend: str, tmp_path: Path) -> None:
    async with fresh_store(backend, tmp_path) as store:
        t0 = old()
        await store.upsert(record("k1", "live", "docker", t0))
        await store.upsert(record("k2", "gone", "docker", t0))
        await store.upsert(record("k3", "theirs", "local", t0))
        before = await store.sweep_mark("docker")
        assert type(before) is int and before >= 0
        await store.delete("k2")
        mark = await store.sweep_mark("docker")
        assert mark > before, "a deletion moves the mark"

        now = now_ms()
        ids = ["gone", "live", "never", "theirs"]
        assert await store.referenced_among("docker", ids, now, before) == ["gone", "live"], "deleted after the mark"
        assert await store.referenced_among("docker", ids, now, mark) == ["live"], "a live record, by provider"
        assert await store.referenced_among("docker", (), now, mark) == []
        destroyed = sr.AuditEntry(now - 1000, "host-b", "docker", "audited", "orphan", "destroyed")
        await store.append_audit([destroyed])
        assert await store.referenced_among("docker", ["audited"], now - GRACE_MS, mark) == ["audited"]
        assert await store.referenced_among("docker", ["audited"], now, mark) == [], "destroyed before destroyed_since"

        assert await store.registered_among("docker", ids, 0) == ["gone", "live"]
        assert await store.registered_among("local", ids, 0) == ["theirs"]
        assert await store.registered_among("docker", ids, now + 60_000) == ["live"], "a live record always counts"

        assert await store.lookup_candidates("docker", 0, 10) == ["gone"]
        assert await store.lookup_candidates("docker", 0, 0) == []
        assert await store.lookup_candidates("local", 0, 10) == []
        assert await store.lookup_checked("docker", [], ["gone"], now) is None
        assert await store.lookup_candidates("docker", 0, 10) == ["gone"], "checked: still a candidate"
        await store.lookup_checked("docker", ["gone"], [], now)
        assert await store.lookup_candidates("docker", 0, 10) == [], "gone: no candidate again"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_native_stores_scoped_reads_refuse_bad_arguments_naming_the_field(backend: str, tmp_path: Path) -> None:
    async with fresh_store(backend, tmp_path) as store:
        refusals: list[tuple[Any, type[Exception], str]] = [
            (lambda: store.sweep_mark(5), TypeError, "`provider` must be a str"),
            (lambda: store.sweep_mark("p\ud800"), TypeError, "`provider` must not contain a lone surrogate"),
            (lambda: store.referenced_among(5, [], 0, 0), TypeError, "`provider` must be a str"),
            (lambda: store.referenced_among("docker", "a", 0, 0), TypeError, "`ids` must be a list of str, got str"),
            (lambda: store.referenced_among("docker", ["a", 5], 0, 0), TypeError, r"`ids\[1\]` must be a str, got int"),
            (lambda: store.referenced_among("docker", ["a\udc00"], 0, 0), TypeError, r"`ids\[0\]` must not contain a lone surrogate"),
            (lambda: store.registered_among("docker", None, 0), TypeError, "`ids` must be a list of str, got NoneType"),
            (lambda: store.registered_among("docker", ["\ud800"], 0), TypeError, r"`ids\[0\]` must not contain"),
            (lambda: store.lookup_candidates(None, 0, 1), TypeError, "`provider` must be a str"),
            (lambda: store.lookup_checked("docker", "gone", [], 0), TypeError, "`gone` must be a list of str"),
            (lambda: store.lookup_checked("docker", [], [7], 0), TypeError, r"`checked\[0\]` must be a str"),
            (lambda: store.lookup_checked("docker", [], ["\ud800x"], 0), TypeError, r"`checked\[0\]` must not contain"),
            (lambda: store.referenced_among("docker", [], -1, 0), ValueError, "`destroyed_since`"),
            (lambda: store.referenced_among("docker", [], "0", 0), TypeError, "`destroyed_since`"),
            (lambda: store.referenced_among("docker", [], 0, -1), ValueError, "`mark`"),
            (lambda: store.referenced_among("docker", [], 0, True), TypeError, "`mark`"),
            (lambda: store.registered_among("docker", [], 2**53), ValueError, "`since`"),
            (lambda: store.lookup_candidates("docker", 1.5, 1), TypeError, "`since`"),
            (lambda: store.lookup_candidates("docker", 0, 2**32), ValueError, "`limit`"),
            (lambda: store.lookup_checked("docker", [], [], None), TypeError, "`now`"),
        ]
        for call, kind, message in refusals:
            with pytest.raises(kind, match=message):
                await call()
        assert await store.lookup_candidates("docker", 0, 10) == [], "nothing was written"


# ---------------------------------------------------------------- a pass


class ScopedWorld:
    """One provider ``py`` over a native in-memory store: ``live`` has a
    record, ``found-reg`` and ``gone-reg`` had one (deleted: registered and
    queued for a lookup), ``orphan1`` is a labelled orphan, ``unl`` an
    unlabelled sandbox nobody registered; the lookup finds ``found-reg``
    (unlabelled) and not ``gone-reg``. ``store`` has the required methods
    plus ``optional``; store and provider calls go to one ``calls``."""

    name = "py"

    def __init__(self, native: sr.InMemoryLeakLedgerStore, optional: tuple[str, ...]) -> None:
        self.native = native
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.marks: list[int] = []
        self.destroyed: list[str] = []
        self.store: Any = type("UserStore", (), {})()
        for name in (*sr.FLEET_STORE_METHODS, *optional):
            setattr(self.store, name, self._recorded(name, getattr(native, name)))

    @classmethod
    async def make(cls, optional: tuple[str, ...]) -> ScopedWorld:
        native = sr.InMemorySandboxInstanceStore.with_ledger()
        await native.upsert(record("k-live", "live", updated_at=now_ms()))
        for sandbox_id in ("found-reg", "gone-reg"):
            await native.upsert(record(f"k-{sandbox_id}", sandbox_id, updated_at=old()))
            await native.delete(f"k-{sandbox_id}")
        return cls(native, optional)

    def _recorded(self, name: str, method: Any) -> Any:
        async def call(*args: Any) -> Any:
            self.calls.append((name, args))
            answer = await method(*args)
            if name == "sweep_mark":
                self.marks.append(answer)
            return answer

        return call

    def methods(self) -> list[str]:
        return [name for name, _ in self.calls if name in SWEEP_CALLS]

    async def destroy(self, sandbox_id: str) -> None:
        self.destroyed.append(sandbox_id)

    async def list_sandboxes(self) -> list[sr.ListedSandbox]:
        self.calls.append(("provider.list", ()))
        return [
            sr.ListedSandbox("live", old(), OURS),
            sr.ListedSandbox("orphan1", old(), OURS),
            sr.ListedSandbox("unl", old(), ""),
        ]

    async def lookup(self, ids: list[str]) -> list[sr.ListedSandbox]:
        assert isinstance(ids, list)
        self.calls.append(("provider.lookup", (list(ids),)))
        return [sr.ListedSandbox("found-reg", old(), "")] if "found-reg" in ids else []


SWEEP_CALLS = {
    "sandbox_references",
    "registered_sandboxes",
    "sweep_mark",
    "provider.list",
    "prune",
    "lookup_candidates",
    "provider.lookup",
    "lookup_checked",
    "referenced_among",
    "registered_among",
}


async def test_a_user_store_with_all_five_is_swept_the_new_way() -> None:
    world = await ScopedWorld.make((*sr.SCOPED_READS, "registered_sandboxes", "prune"))
    before = now_ms()
    report = await sr.reconcile(provider=world, instances=world.store)
    after = now_ms()

    def within(value: int, offset: int) -> bool:
        return before - offset <= value <= after - offset

    assert sorted(world.destroyed) == ["found-reg", "orphan1"], "the labelled orphan and the registered leftover found"
    orphans = report.providers[0].orphans
    assert (orphans.status, orphans.found, orphans.destroyed, orphans.referenced, orphans.foreign) == (
        sr.SweepStatus.SWEPT, 2, 2, 1, 1
    )
    assert world.methods() == [
        "sweep_mark",
        "provider.list",
        "prune",
        "lookup_candidates",
        "provider.lookup",
        "lookup_checked",
        "referenced_among",
        "registered_among",
    ], "never sandbox_references or registered_sandboxes: the store is asked about what was listed"
    args = {name: call for name, call in world.calls if name in SWEEP_CALLS}
    assert args["sweep_mark"] == ("py",)
    candidates_of, candidates_since, limit = args["lookup_candidates"]
    assert (candidates_of, limit) == ("py", 1000) and within(candidates_since, 30 * DAY_MS)
    assert args["provider.lookup"] == (["found-reg", "gone-reg"],), "the candidates the listing did not show, sorted"
    checked_of, gone, checked, checked_at = args["lookup_checked"]
    assert (checked_of, gone, checked) == ("py", ["gone-reg"], ["found-reg"]) and within(checked_at, 0)
    listed = ["found-reg", "live", "orphan1", "unl"]
    referenced_of, referenced_ids, destroyed_since, mark = args["referenced_among"]
    assert (referenced_of, referenced_ids) == ("py", listed) and within(destroyed_since, GRACE_MS)
    assert world.marks == [mark], "referenced_among gets the mark sweep_mark answered"
    registered_of, registered_ids, since = args["registered_among"]
    assert (registered_of, registered_ids, since) == ("py", listed, candidates_since)
    # No candidate is left: gone-reg by the write-back, found-reg by its audited destroy.
    assert await world.native.lookup_candidates("py", 0, 10) == []


async def test_a_scoped_dry_run_never_prunes_nor_writes_back() -> None:
    world = await ScopedWorld.make((*sr.SCOPED_READS, "prune"))
    report = await sr.reconcile(provider=world, instances=world.store, dry_run=True)
    assert world.destroyed == [] and report.providers[0].orphans.found == 2
    assert world.methods() == [
        "sweep_mark", "provider.list", "lookup_candidates", "provider.lookup", "referenced_among", "registered_among"
    ]


async def test_a_synchronous_scoped_store_works_and_a_broken_answer_fails_that_sweep_closed() -> None:
    sync = await ScopedWorld.make(sr.SCOPED_READS)
    sync.store.sweep_mark = lambda provider: 7
    sync.store.referenced_among = lambda provider, ids, since, mark: [one for one in ids if one == "live"]
    sync.store.registered_among = lambda provider, ids, since: [one for one in ids if one in ("live", "found-reg")]
    sync.store.lookup_candidates = lambda provider, since, limit: ("found-reg", "gone-reg")
    sync.store.lookup_checked = lambda provider, gone, checked, now: None
    await sr.reconcile(provider=sync, instances=sync.store)
    assert sorted(sync.destroyed) == ["found-reg", "orphan1"]

    async def down(*args: Any) -> Any:
        raise RuntimeError("store down")

    broken: list[tuple[str, Any, bool]] = [
        ("sweep_mark", lambda provider: True, False),
        ("sweep_mark", lambda provider: -1, False),
        ("sweep_mark", lambda provider: 1.0, False),
        ("sweep_mark", lambda provider: "3", False),
        ("sweep_mark", down, False),
        ("lookup_candidates", down, True),
        ("referenced_among", down, True),
        ("referenced_among", lambda *args: "not a list", True),
        ("registered_among", lambda *args: [5], True),
    ]
    for method, answer, lists in broken:
        world = await ScopedWorld.make(sr.SCOPED_READS)
        setattr(world.store, method, answer)
        report = await sr.reconcile(provider=world, instances=world.store)
        assert report.providers[0].orphans.status is sr.SweepStatus.UNAVAILABLE, (method, answer)
        assert world.destroyed == [], f"{method}: fails closed"
        if method == "sweep_mark" and answer is not down:
            assert "instances.sweep_mark() must return" in (report.providers[0].orphans.error or ""), answer
        assert ("provider.list", ()) in world.calls if lists else ("provider.list", ()) not in world.calls

    ignored = await ScopedWorld.make(sr.SCOPED_READS)
    ignored.store.lookup_checked = down
    report = await sr.reconcile(provider=ignored, instances=ignored.store)
    assert report.providers[0].orphans.status is sr.SweepStatus.SWEPT, "a failing lookup_checked is ignored"
    assert sorted(ignored.destroyed) == ["found-reg", "orphan1"]


@pytest.mark.parametrize(
    ("present", "missing"),
    [
        (("sweep_mark",), "referenced_among"),
        (("sweep_mark", "referenced_among", "registered_among", "lookup_candidates"), "lookup_checked"),
        (("referenced_among", "registered_among", "lookup_candidates", "lookup_checked"), "sweep_mark"),
        (("lookup_checked",), "sweep_mark"),
    ],
)
async def test_a_store_with_only_some_is_refused_naming_the_first_missing_before_any_call(
    present: tuple[str, ...], missing: str
) -> None:
    world = await ScopedWorld.make(present)
    # The core's text, the same as Node's but for the prefix and spelling.
    with pytest.raises(TypeError, match=rf"^instances\.{missing} must be a function when instances\.{present[0]} is"):
        await sr.reconcile(provider=world, instances=world.store)
    assert (world.calls, world.destroyed) == ([], [])


@pytest.mark.parametrize("method", ["sweep_mark", "referenced_among", "registered_among", "lookup_candidates", "lookup_checked"])
async def test_a_scoped_read_that_is_not_callable_is_refused_before_any_call(method: str) -> None:
    world = await ScopedWorld.make(sr.SCOPED_READS)
    setattr(world.store, method, 5)
    with pytest.raises(TypeError, match=rf"^instances\.{method} must be a method \(sync or async\) when present"):
        await sr.reconcile(provider=world, instances=world.store)
    assert world.calls == []


async def test_none_for_all_five_is_the_older_sweep() -> None:
    world = await ScopedWorld.make(())
    for name in sr.SCOPED_READS:
        setattr(world.store, name, None)
    await sr.reconcile(provider=world, instances=world.store)
    assert world.methods() == ["sandbox_references", "provider.list"], "the older order, without registry or lookup"
