"""The fleet passes (``reclaim_all``, ``reconcile``) on the real clock: option
checks before any host call, the stop event and task cancellation, host
answers in every accepted shape, the fleet stores' methods, and a reconcile
pass against a real LocalProvider and the native SQLite store. Time and
ordering are specified by the vectors (test_vectors.py)."""

from __future__ import annotations

import asyncio
import datetime
import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hosts import instance, run_record

import sandbox_reclaim as sr

NOW = 1_700_000_000_000


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Untouchable:
    """A provider and store whose every method fails the test: options are
    refused before any host call."""

    name = "docker"
    owner = None  # no owner of its own (any other non-str owner is refused)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def called(*args: Any) -> None:
            raise AssertionError(f"{name} was called")

        return called


class SlowProvider:
    """Destroys take ``delay`` seconds; records what started and what finished."""

    def __init__(self, name: str = "docker", delay: float = 0.05) -> None:
        self.name = name
        self.delay = delay
        self.started: list[str] = []
        self.finished: list[str] = []
        self.cancelled: list[str] = []
        self.on_start: Callable[[str], None] | None = None

    async def destroy(self, sandbox_id: str) -> None:
        self.started.append(sandbox_id)
        if self.on_start is not None:
            self.on_start(sandbox_id)
        try:
            await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled.append(sandbox_id)
            raise
        self.finished.append(sandbox_id)


async def seeded_store(count: int, provider: str = "docker") -> sr.InMemoryLeakLedgerStore:
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    for index in range(count):
        await store.upsert(instance(f"k{index}", provider, f"c{index}"))
    return store


def records(count: int) -> list[sr.RunRecord]:
    return [run_record(f"k{index}", f"r{index}") for index in range(count)]


# ---------------------------------------------------------------- option checks

RECLAIM_ALL_BAD: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"concurrency": 0}, ValueError, "`concurrency`"),
    ({"concurrency": "4"}, TypeError, "`concurrency`"),
    ({"concurrency": True}, TypeError, "`concurrency`"),
    ({"concurrency": 2**32}, ValueError, "`concurrency`"),
    ({"per_provider_concurrency": 0}, ValueError, "`per_provider_concurrency`"),
    ({"per_provider_concurrency": 1.5}, TypeError, "`per_provider_concurrency`"),
    ({"destroy_timeout": 0}, ValueError, "`destroy_timeout`"),
    ({"destroy_timeout": -1}, ValueError, "`destroy_timeout`"),
    ({"destroy_timeout": float("nan")}, ValueError, "`destroy_timeout`"),
    ({"destroy_timeout": "1"}, TypeError, "`destroy_timeout`"),
    ({"budget": 0.0}, ValueError, "`budget`"),
    ({"budget": "soon"}, TypeError, "`budget`"),
    ({"on_progress": 5}, TypeError, "`on_progress`"),
    ({"stop": object()}, TypeError, "`stop`"),
]


@pytest.mark.parametrize(("options", "error", "named"), RECLAIM_ALL_BAD, ids=[repr(o) for o, _, _ in RECLAIM_ALL_BAD])
async def test_reclaim_all_refuses_bad_options_before_any_host_call(
    options: dict[str, Any], error: type[Exception], named: str
) -> None:
    host: Any = Untouchable()
    with pytest.raises(error, match=named):
        await sr.reclaim_all(records(2), provider=host, instances=host, **options)


RECONCILE_BAD: list[tuple[dict[str, Any], type[Exception], str]] = [
    *RECLAIM_ALL_BAD,
    ({"dry_run": "yes"}, TypeError, "`dry_run`"),
    ({"orphan_grace": -1}, ValueError, "`orphan_grace`"),
    ({"orphan_grace": None}, TypeError, "`orphan_grace`"),
    ({"max_idle": 0}, ValueError, "`max_idle`"),
    ({"limit": 0}, ValueError, "`limit`"),
    ({"limit": 10.0}, TypeError, "`limit`"),
    ({"lease": 0}, ValueError, "`lease`"),
    ({"backoff": -0.5}, ValueError, "`backoff`"),
    ({"max_backoff": "1h"}, TypeError, "`max_backoff`"),
    ({"registry_retention": -1}, ValueError, "`registry_retention`"),
    ({"registry_retention": "x"}, TypeError, "`registry_retention`"),
    ({"registry_retention": float("inf")}, ValueError, "`registry_retention`"),
    ({"audit_retention": -1}, ValueError, "`audit_retention`"),
    ({"audit_retention": "x"}, TypeError, "`audit_retention`"),
    ({"audit_retention": float("inf")}, ValueError, "`audit_retention`"),
    ({"owner": 7}, TypeError, "`owner`"),
    ({"owner": "team-\udc80"}, TypeError, "`owner`"),
    ({"host": b"host"}, TypeError, "`host`"),
]


@pytest.mark.parametrize(("options", "error", "named"), RECONCILE_BAD, ids=[repr(o) for o, _, _ in RECONCILE_BAD])
async def test_reconcile_refuses_bad_options_before_any_host_call(
    options: dict[str, Any], error: type[Exception], named: str
) -> None:
    host: Any = Untouchable()
    with pytest.raises(error, match=named):
        await sr.reconcile(provider=host, instances=host, **options)


async def test_providers_are_given_once_distinct_and_not_empty() -> None:
    host: Any = Untouchable()
    with pytest.raises(TypeError, match="not both"):
        await sr.reclaim_all([], provider=host, providers=[host], instances=host)
    with pytest.raises(TypeError, match="`providers`"):
        await sr.reclaim_all([], instances=host)
    with pytest.raises(ValueError, match="at least one provider"):
        await sr.reconcile(providers=[], instances=host)
    with pytest.raises(ValueError, match="share a name"):
        await sr.reconcile(providers=[host, Untouchable()], instances=host)
    with pytest.raises(TypeError, match="`records`"):
        await sr.reclaim_all(run_record(), provider=host, instances=host)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="lone surrogate"):
        await sr.reclaim_all([run_record("k-\ud800")], provider=host, instances=host)


async def test_reconcile_needs_every_fleet_store_method_and_names_the_missing_one() -> None:
    store = sr.InMemorySandboxInstanceStore()  # no ledger, no fleet methods
    with pytest.raises(TypeError, match="list_stale"):
        await sr.reconcile(provider=SlowProvider(), instances=store)  # type: ignore[arg-type]

    class Partial:
        def __getattr__(self, name: str) -> Any:
            if name == "claim_sweep":
                raise AttributeError(name)
            return lambda *args: None

    with pytest.raises(TypeError, match="claim_sweep"):
        await sr.reconcile(provider=SlowProvider(), instances=Partial())
    assert set(sr.FLEET_STORE_METHODS) >= {"due_leaks", "resolve_leak", "append_audit"}


async def test_a_provider_without_destroy_is_refused() -> None:
    class NoDestroy:
        name = "docker"

    store = await seeded_store(1)
    with pytest.raises(TypeError, match="destroy"):
        await sr.reclaim_all(records(1), provider=NoDestroy(), instances=store)  # type: ignore[arg-type]


# ---------------------------------------------------------------- reclaim_all on the real clock


async def test_reclaim_all_reclaims_every_record_and_reports_in_order() -> None:
    store = await seeded_store(5)
    provider = SlowProvider(delay=0.01)
    events: list[dict[str, Any]] = []
    report = await sr.reclaim_all(
        [*records(5), run_record(None, "no-key"), run_record("k0", "again")],
        provider=provider,
        instances=store,
        concurrency=3,
        on_progress=events.append,
    )
    assert isinstance(report, sr.FleetReclaimReport)
    assert report.total == 7
    assert [line.run_id for line in report.records] == ["r0", "r1", "r2", "r3", "r4", "no-key", "again"]
    assert [line.outcome for line in report.records] == [sr.RecordOutcome.DESTROYED] * 5 + [
        sr.RecordOutcome.NO_SANDBOX_KEY,
        sr.RecordOutcome.DUPLICATE,
    ]
    assert report.counts.destroyed == 5 and report.counts[sr.RecordOutcome.DUPLICATE] == 1
    assert report.counts["no-sandbox-key"] == 1
    assert sorted(provider.finished) == [f"c{index}" for index in range(5)]
    assert len(store) == 0
    assert [event["done"] for event in events] == list(range(1, 8))
    assert {event["kind"] for event in events} == {"record"} and events[-1]["total"] == 7
    wire = report.to_dict()
    assert wire["counts"]["destroyed"] == 5 and wire["records"][5] == {
        "runId": "no-key",
        "outcome": "no-sandbox-key",
        "durationMs": 0,
    }
    assert json.loads(json.dumps(wire)) == wire


async def test_a_progress_callback_that_raises_changes_nothing_and_an_async_one_runs() -> None:
    store = await seeded_store(2)
    seen: list[str] = []

    def broken(event: dict[str, Any]) -> None:
        raise RuntimeError("progress is best effort")

    report = await sr.reclaim_all(records(2), provider=SlowProvider(delay=0), instances=store, on_progress=broken)
    assert report.counts.destroyed == 2

    async def later(event: dict[str, Any]) -> None:
        await asyncio.sleep(0)
        seen.append(event["runId"])

    store = await seeded_store(2)
    report = await sr.reclaim_all(records(2), provider=SlowProvider(delay=0), instances=store, on_progress=later)
    await asyncio.sleep(0.01)
    assert report.counts.destroyed == 2 and sorted(seen) == ["r0", "r1"]


async def test_the_stop_event_defers_what_has_not_started_and_returns_the_report() -> None:
    store = await seeded_store(3)
    provider = SlowProvider(delay=0.05)
    stop = asyncio.Event()
    provider.on_start = lambda sandbox_id: stop.set()
    report = await sr.reclaim_all(records(3), provider=provider, instances=store, concurrency=1, stop=stop)
    assert [line.outcome for line in report.records] == [
        sr.RecordOutcome.DESTROYED,
        sr.RecordOutcome.DEFERRED,
        sr.RecordOutcome.DEFERRED,
    ]
    assert provider.finished == ["c0"], "the destroy in flight settled"
    assert [record.key for record in store.records()] == ["k1", "k2"], "deferred records are untouched"


async def test_a_stop_event_already_set_starts_nothing() -> None:
    store = await seeded_store(4)
    stop = asyncio.Event()
    stop.set()
    host: Any = Untouchable()
    report = await sr.reclaim_all(records(4), provider=host, instances=host, concurrency=2, stop=stop)
    assert report.counts.deferred == 4
    report_ = await sr.reconcile(provider=host, instances=host, stop=stop)
    assert report_.actions == [] and len(store) == 4


async def test_cancelling_the_task_lets_in_flight_work_settle_then_raises_cancelled_error() -> None:
    store = await seeded_store(3)
    provider = SlowProvider(delay=0.05)
    started = asyncio.Event()
    provider.on_start = lambda sandbox_id: started.set()
    task = asyncio.ensure_future(sr.reclaim_all(records(3), provider=provider, instances=store, concurrency=1))
    await started.wait()
    task.cancel()
    await asyncio.sleep(0.01)
    task.cancel()  # a second cancel during the drain changes nothing
    with pytest.raises(asyncio.CancelledError):
        await task
    assert provider.cancelled == [], "a destroy in flight is never abandoned"
    assert provider.finished == ["c0"]
    assert [record.key for record in store.records()] == ["k1", "k2"], "the destroyed one's record is deleted"


async def test_cancelling_the_task_waits_for_a_hanging_destroy_only_until_its_deadline() -> None:
    store = await seeded_store(2)
    provider = SlowProvider(delay=3600)
    started = asyncio.Event()
    provider.on_start = lambda sandbox_id: started.set()
    task = asyncio.ensure_future(
        sr.reclaim_all(records(2), provider=provider, instances=store, concurrency=1, destroy_timeout=0.1)
    )
    await started.wait()
    began = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert 0.05 <= time.monotonic() - began < 2
    assert provider.cancelled == ["c0"], "cancelled at its deadline"
    leaks = await store.list_leaks()
    assert [(leak.key, leak.provider_sandbox_id) for leak in leaks] == [("k0", "c0")]
    assert "did not settle within 100 ms" in leaks[0].last_error
    assert [record.key for record in store.records()] == ["k1"]


async def test_a_store_failure_is_reported_on_its_record_with_its_message() -> None:
    class FailingStore:
        def __init__(self) -> None:
            self.records = {"k0": instance("k0", "docker", "c0"), "k1": instance("k1", "docker", "c1")}

        async def get(self, key: str) -> sr.SandboxInstanceRecord | None:
            if key == "k1":
                raise ConnectionError("db down")
            return self.records.get(key)

        async def upsert(self, record: sr.SandboxInstanceRecord) -> None:
            self.records[record.key] = record

        async def delete(self, key: str) -> None:
            self.records.pop(key, None)

    report = await sr.reclaim_all(records(2), provider=SlowProvider(delay=0), instances=FailingStore())
    assert [(line.outcome, line.error) for line in report.records] == [
        (sr.RecordOutcome.DESTROYED, None),
        (sr.RecordOutcome.ERROR, "db down"),
    ]


async def test_records_route_to_the_provider_their_instance_names() -> None:
    store = sr.InMemorySandboxInstanceStore()
    await store.upsert(instance("k0", "docker", "c0"))
    await store.upsert(instance("k1", "local", "l1"))
    await store.upsert(instance("k2", "e2b", "x2"))
    docker, local = SlowProvider("docker", 0), SlowProvider("local", 0)
    report = await sr.reclaim_all(records(3), providers=[docker, local], instances=store)
    assert [line.outcome.value for line in report.records] == ["destroyed", "destroyed", "provider-mismatch"]
    assert (docker.finished, local.finished) == (["c0"], ["l1"])


# ---------------------------------------------------------------- reconcile


class ListingProvider(SlowProvider):
    """A Python provider whose ``list()`` drives the orphan sweep."""

    def __init__(self, listed: Any, owner: str | None = None) -> None:
        super().__init__("py", 0)
        self.listed = listed
        if owner is not None:
            self.owner = owner

    def list(self) -> Any:
        if isinstance(self.listed, BaseException):
            raise self.listed
        return self.listed


async def test_a_python_list_drives_the_orphan_sweep() -> None:
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    await store.upsert(instance("k-ref", "py", "ref"))
    old = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
    listed = [
        {"id": "ref", "createdAt": 0, "owner": "sandbox-reclaim"},  # referenced by a record
        sr.ListedSandbox("young", now_ms(), "sandbox-reclaim", "k-young"),  # inside the grace period
        {"id": "foreign", "createdAt": 0, "owner": "someone-else"},
        sr.ListedSandbox("orphan-1", 0, "sandbox-reclaim"),
        type("Listed", (), {"id": "orphan-2", "created_at": old, "owner": "sandbox-reclaim", "key": "k2"})(),
    ]
    provider = ListingProvider(listed)
    events: list[dict[str, Any]] = []
    report = await sr.reconcile(provider=provider, instances=store, host="host-a", on_progress=events.append)
    orphans = report.providers[0].orphans
    assert orphans.status is sr.SweepStatus.SWEPT and orphans.error is None
    assert (orphans.listed, orphans.referenced, orphans.young, orphans.foreign, orphans.found) == (5, 1, 1, 1, 2)
    assert sorted(provider.finished) == ["orphan-1", "orphan-2"]
    assert [(action.reason, action.provider_sandbox_id, action.key, action.result) for action in report.actions] == [
        (sr.ActionReason.ORPHAN, "orphan-1", None, sr.ActionResult.DESTROYED),
        (sr.ActionReason.ORPHAN, "orphan-2", "k2", sr.ActionResult.DESTROYED),
    ]
    assert not report.still_leaking and not report.cut_short and report.host == "host-a"
    audit = await store.list_audit()
    assert [(row.provider_sandbox_id, row.reason, row.result, row.host) for row in audit] == [
        ("orphan-1", "orphan", "destroyed", "host-a"),
        ("orphan-2", "orphan", "destroyed", "host-a"),
    ]
    assert [event["providerSandboxId"] for event in events] == ["orphan-1", "orphan-2"]
    assert report.to_dict()["providers"][0]["orphans"]["status"] == "swept"


async def test_each_sandbox_is_destroyed_once_however_the_listing_repeats_or_lags() -> None:
    """A lagging listing (what was destroyed stays listed) that repeats o1:
    one destroy each, a due leak never swept as well, and a pass right after
    on another host spares what the first destroyed (the audit log)."""
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    old = now_ms() - 3_600_000
    await store.record_leak(sr.NewLeak("k1", "py", "l1", "r1", "boom", old), "destroy-failed", 0)
    listed = [{"id": sandbox, "createdAt": old, "owner": "sandbox-reclaim"} for sandbox in ("o1", "o1", "o2", "l1")]
    provider = ListingProvider(listed)
    first = await sr.reconcile(provider=provider, instances=store, host="host-a")
    assert sorted(provider.finished) == ["l1", "o1", "o2"]
    assert (first.counts.destroyed, first.providers[0].orphans.listed, first.still_leaking) == (3, 3, False)
    second = await sr.reconcile(provider=provider, instances=store, host="host-b")
    assert len(provider.finished) == 3, "nothing destroyed twice"
    orphans = second.providers[0].orphans
    assert (orphans.referenced, orphans.found, second.still_leaking) == (3, 0, False)


async def test_a_dry_run_that_plans_a_destroy_is_still_leaking_and_retry_leaks_false_sweeps_only() -> None:
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    old = now_ms() - 3_600_000
    await store.record_leak(sr.NewLeak("k1", "py", "l1", "r1", "boom", old), "destroy-failed", 0)
    provider = ListingProvider([{"id": "o1", "createdAt": old, "owner": "sandbox-reclaim"}])
    planned = await sr.reconcile(provider=provider, instances=store, dry_run=True)
    assert (planned.counts.planned, planned.still_leaking, provider.finished) == (2, True, [])
    swept = await sr.reconcile(provider=provider, instances=store, retry_leaks=False)
    assert provider.finished == ["o1"] and swept.providers[0].leaks.due == 0
    assert len(await store.list_leaks()) == 1, "the due leak waits for a full pass"
    with pytest.raises(TypeError, match="`retry_leaks` must be a bool"):
        await sr.reconcile(provider=provider, instances=store, retry_leaks="no")  # type: ignore[arg-type]


async def test_a_store_whose_sandbox_references_takes_one_argument_still_sweeps() -> None:
    """A fleet store written before ``destroyed_since`` keeps working (without the audit log's protection)."""
    native = sr.InMemorySandboxInstanceStore.with_ledger()
    asked: list[str] = []

    class OldStore:
        def __getattr__(self, name: str) -> Any:
            if name in sr.SCOPED_READS:  # written before the scoped reads too: swept the older way
                raise AttributeError(name)
            return getattr(native, name)

        async def sandbox_references(self, provider: str) -> list[str]:
            asked.append(provider)
            return await native.sandbox_references(provider)

    provider = ListingProvider([{"id": "o1", "createdAt": now_ms() - 3_600_000, "owner": "sandbox-reclaim"}])
    report = await sr.reconcile(provider=provider, instances=OldStore(), host="h")  # type: ignore[arg-type]
    assert asked == ["py"] and provider.finished == ["o1"] and report.providers[0].orphans.status is sr.SweepStatus.SWEPT


async def test_a_providers_own_owner_wins() -> None:
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    provider = ListingProvider([{"id": "mine", "createdAt": 0, "owner": "team-a"}], owner="team-a")
    report = await sr.reconcile(provider=provider, instances=store, owner="team-b")
    assert provider.finished == ["mine"] and report.providers[0].orphans.foreign == 0


@pytest.mark.parametrize("owner", [7, b"team-a", ["team-a"], object()], ids=["int", "bytes", "list", "object"])
async def test_a_providers_owner_that_is_not_a_str_is_a_type_error_before_any_call(owner: object) -> None:
    """Regression: a non-str ``owner`` was ignored and the sweep ran under the
    pass's owner namespace (failing open). Node raises the same TypeError."""
    provider = ListingProvider([{"id": "theirs", "createdAt": 0, "owner": "sandbox-reclaim"}])
    provider.owner = owner  # type: ignore[assignment]
    store: Any = Untouchable()
    with pytest.raises(TypeError, match=r"^provider\.owner must be a string when present$"):
        await sr.reconcile(provider=provider, instances=store)
    good = ListingProvider([])
    good.name = "good"
    with pytest.raises(TypeError, match=r"^providers\[1\]\.owner must be a string when present$"):
        await sr.reconcile(providers=[good, provider], instances=store)
    with pytest.raises(TypeError, match=r"providers\[1\]\.owner.*lone surrogate"):
        provider.owner = "team-\udc80"
        await sr.reconcile(providers=[good, provider], instances=store)
    assert provider.started == [] and good.started == []


async def test_a_list_that_raises_fails_closed() -> None:
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    provider = ListingProvider(RuntimeError("the API is down"))
    report = await sr.reconcile(provider=provider, instances=store)
    orphans = report.providers[0].orphans
    assert orphans.status is sr.SweepStatus.UNAVAILABLE
    assert orphans.error == "the API is down"
    assert provider.started == [] and report.still_leaking


@pytest.mark.parametrize(
    ("listed", "message"),
    [
        ([{"id": "a", "createdAt": None, "owner": "sandbox-reclaim"}], 'listed sandbox "a" has no known creation time'),
        ([{"id": "a", "createdAt": 0}], 'listed sandbox "a" has no known owner'),
        ([{"createdAt": 0, "owner": "sandbox-reclaim"}], "`id` must be a str"),
        ([{"id": "a", "createdAt": "yesterday", "owner": "x"}], "`created_at` must be an int"),
        ([{"id": "a", "createdAt": datetime.datetime(2020, 1, 1), "owner": "x"}], "timezone-aware"),
        ({"id": "a"}, "must return a list"),
    ],
)
async def test_listings_out_of_contract_destroy_nothing(listed: Any, message: str) -> None:
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    provider = ListingProvider([*listed, {"id": "orphan", "createdAt": 0, "owner": "sandbox-reclaim"}] if isinstance(listed, list) else listed)
    report = await sr.reconcile(provider=provider, instances=store)
    orphans = report.providers[0].orphans
    assert orphans.status is sr.SweepStatus.UNAVAILABLE
    assert orphans.error is not None and message in orphans.error
    assert provider.started == []


async def test_an_async_list_past_the_deadline_is_cancelled_and_fails_closed() -> None:
    cancelled: list[str] = []

    class Hanging(SlowProvider):
        async def list(self) -> list[Any]:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.append("list")
                raise
            return []

    store = sr.InMemorySandboxInstanceStore.with_ledger()
    report = await sr.reconcile(provider=Hanging("py", 0), instances=store, destroy_timeout=0.05)
    assert cancelled == ["list"]
    assert report.providers[0].orphans.error == (
        'listing the sandboxes of provider "py" did not settle within 50 ms; it was cancelled'
    )


async def test_a_provider_without_list_gets_no_sweep() -> None:
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    report = await sr.reconcile(provider=SlowProvider(), instances=store)
    assert report.providers[0].orphans.status is sr.SweepStatus.UNAVAILABLE
    assert report.providers[0].orphans.error is not None and "no list()" in report.providers[0].orphans.error
    assert not report.still_leaking, "a provider that cannot list is not a sweep that failed"


async def test_reconcile_retries_due_leaks_and_a_store_answer_out_of_contract_is_its_error() -> None:
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    await store.record_leak(sr.NewLeak("k1", "docker", "c1", "r1", "boom", NOW), sr.LeakReason.DESTROY_FAILED, NOW)
    provider = SlowProvider(delay=0)
    report = await sr.reconcile(provider=provider, instances=store)
    assert provider.finished == ["c1"] and await store.list_leaks() == []
    assert report.providers[0].leaks == sr.LeakCounts(due=1, destroyed=1, failed=0, deferred=0, lease_lost=0)

    class BadDue:
        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        def due_leaks(self, *args: Any) -> Any:
            return [{"key": "k"}]  # no providerSandboxId

    with pytest.raises(TypeError, match="provider_sandbox_id"):
        await sr.reconcile(provider=SlowProvider(delay=0), instances=BadDue())


async def test_cancelling_a_reconcile_writes_down_the_destroy_in_flight() -> None:
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    for index in range(3):
        leak = sr.NewLeak(f"k{index}", "docker", f"c{index}", f"r{index}", "boom", NOW)
        await store.record_leak(leak, "destroy-failed", NOW)
    provider = SlowProvider(delay=0.05)
    started = asyncio.Event()
    provider.on_start = lambda sandbox_id: started.set()
    task = asyncio.ensure_future(sr.reconcile(provider=provider, instances=store, concurrency=1, host="h"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert provider.finished == ["c0"] and provider.cancelled == []
    assert [leak.provider_sandbox_id for leak in await store.list_leaks()] == ["c1", "c2"]
    assert [(row.provider_sandbox_id, row.result) for row in await store.list_audit()] == [("c0", "destroyed")]
    assert await store.claim_sweep("docker", "another", 1000, now_ms()), "no sweep lease is left behind"


async def test_a_dry_run_plans_and_changes_nothing() -> None:
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    await store.upsert(sr.SandboxInstanceRecord("idle", "py", "c-idle", "t", 1))
    await store.record_leak(sr.NewLeak("k1", "py", "c1", "r1", "boom", NOW), "destroy-failed", NOW)
    provider = ListingProvider([{"id": "orphan", "createdAt": 0, "owner": "sandbox-reclaim"}])
    report = await sr.reconcile(provider=provider, instances=store, dry_run=True, max_idle=60)
    assert report.dry_run and report.counts.planned == 3
    assert {action.result for action in report.actions} == {sr.ActionResult.PLANNED}
    assert provider.started == [] and len(store) == 1 and len(await store.list_leaks()) == 1
    assert await store.list_audit() == []


# ---------------------------------------------------------------- records and reports


def test_fleet_records_round_trip_in_camel_case() -> None:
    due = sr.DueLeak("k", "docker", "c", "r", "boom", 5, 2, sr.LeakReason.ORPHAN, 9)
    assert isinstance(due, sr.LeakEntry)
    assert due.to_dict() == {
        "key": "k",
        "provider": "docker",
        "providerSandboxId": "c",
        "runId": "r",
        "lastError": "boom",
        "failedAt": 5,
        "attempts": 2,
        "reason": "orphan",
        "nextAttemptAt": 9,
    }
    assert sr.DueLeak.from_dict(due.to_dict()) == due
    assert sr.DueLeak("k", "p", "c", "r", "e", 1, 1, "from-the-future", 1).reason is sr.LeakReason.DESTROY_FAILED  # type: ignore[arg-type]
    row = sr.AuditEntry(7, "host-a", "docker", "c", "orphan", "failed", key=None, error="busy")
    assert row.to_dict() == {
        "at": 7,
        "host": "host-a",
        "provider": "docker",
        "providerSandboxId": "c",
        "reason": "orphan",
        "result": "failed",
        "error": "busy",
    }
    assert sr.AuditEntry.from_dict(row.to_dict()) == row
    with pytest.raises(ValueError, match="AuditEntry.at"):
        sr.AuditEntry(-1, "h", "p", "c", "orphan", "failed")
    listed = sr.ListedSandbox("c", None, "o")
    assert listed.to_dict() == {"id": "c", "createdAt": None, "owner": "o"}


def test_a_reconcile_report_reads_the_core_json_and_writes_it_back() -> None:
    wire: dict[str, Any] = {
        "dryRun": False,
        "host": "h",
        "startedAt": NOW,
        "elapsedMs": 12,
        "cutShort": False,
        "idle": {"enabled": True, "stale": 1, "expired": 1, "touched": 0, "skipped": 0},
        "providers": [
            {
                "name": "docker",
                "leaks": {"due": 1, "destroyed": 0, "failed": 1, "deferred": 0, "leaseLost": 0},
                "orphans": {
                    "status": "held-elsewhere",
                    "listed": 0,
                    "foreign": 0,
                    "referenced": 0,
                    "young": 0,
                    "deleting": 0,
                    "found": 0,
                    "destroyed": 0,
                    "failed": 0,
                    "deferred": 0,
                },
            }
        ],
        "counts": {"planned": 0, "destroyed": 0, "failed": 1, "deferred": 0, "touched": 0},
        "actions": [
            {"reason": "idle", "provider": "docker", "providerSandboxId": "c", "key": "k", "result": "failed", "error": "x"}
        ],
        "stillLeaking": True,
    }
    report = sr.ReconcileReport.from_dict(wire)
    assert report.to_dict() == wire
    assert report.providers[0].orphans.status is sr.SweepStatus.HELD_ELSEWHERE
    assert report.actions[0].reason is sr.ActionReason.IDLE and report.still_leaking
    assert json.dumps(report.to_dict(), sort_keys=True) == json.dumps(wire, sort_keys=True)


# ---------------------------------------------------------------- stores


async def test_the_in_memory_fleet_methods_take_epoch_milliseconds() -> None:
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    await store.upsert(sr.SandboxInstanceRecord("old", "docker", "c-old", "t", 100))
    await store.upsert(sr.SandboxInstanceRecord("new", "docker", "c-new", "t", 900))
    assert [record.key for record in await store.list_stale(500, 10)] == ["old"]
    leak = sr.NewLeak("old", "docker", "c-old", "", "idle", 1000)
    assert not await store.expire_idle("old", 99, leak), "touched since it was read"
    assert await store.expire_idle("old", 100, leak)
    assert await store.sandbox_references("docker") == ["c-new", "c-old"]
    due = await store.due_leaks("docker", 10, 5000, 1000)
    assert [(entry.provider_sandbox_id, entry.reason, entry.next_attempt_at) for entry in due] == [
        ("c-old", sr.LeakReason.IDLE, 1000)
    ]
    assert await store.due_leaks("docker", 10, None, 2000) == [], "claimed until 6000"
    await store.defer_leak(due[0], "still busy", 2000, 9000)
    assert await store.due_leaks("docker", 10, None, 8999) == []
    assert (await store.due_leaks("docker", 10, None, 9000))[0].attempts == 2
    assert await store.claim_sweep("docker", "a", 1000, 0)
    assert not await store.claim_sweep("docker", "b", 1000, 500)
    await store.release_sweep("docker", "a")
    assert await store.claim_sweep("docker", "b", 1000, 500)
    rows = [sr.AuditEntry(at, "h", "docker", f"c{at}", "orphan", "destroyed") for at in (1, 2, 3)]
    await store.append_audit(rows)
    assert await store.list_audit() == rows
    assert await store.list_audit(since=2, limit=1) == rows[1:2]
    # Without a limit, the core's default (1000 rows) bounds the answer.
    await store.append_audit([sr.AuditEntry(10 + n, "h", "docker", f"m{n}", "orphan", "destroyed") for n in range(1000)])
    assert len(await store.list_audit()) == 1000
    assert len(await store.list_audit(limit=1003)) == 1003
    with pytest.raises(ValueError, match="`reason`"):
        await store.record_leak(leak, "bogus", 0)
    with pytest.raises(ValueError, match="`now`"):
        await store.due_leaks("docker", 1, None, -1)
    with pytest.raises(TypeError, match="`provider`"):
        await store.sandbox_references(5)  # type: ignore[arg-type]


async def fleet_store_round_trip(store: sr.SqliteSandboxInstanceStore | sr.PostgresSandboxInstanceStore) -> None:
    await store.upsert(sr.SandboxInstanceRecord("k", "docker", "c", "t", 100))
    assert [record.key for record in await store.list_stale(101, 10)] == ["k"]
    assert await store.expire_idle("k", 100, sr.NewLeak("k", "docker", "c", "", "idle", 200))
    await store.record_leak(sr.NewLeak("o", "docker", "o1", "", "busy", 200), sr.LeakReason.ORPHAN, 300)
    assert await store.sandbox_references("docker") == ["c", "o1"]
    due = await store.due_leaks("docker", 10, 1000, 300)
    assert [(entry.provider_sandbox_id, entry.reason) for entry in due] == [
        ("c", sr.LeakReason.IDLE),
        ("o1", sr.LeakReason.ORPHAN),
    ]
    assert all(isinstance(entry, sr.DueLeak) for entry in due)
    await store.resolve_leak(due[0])
    await store.defer_leak(due[1], "still busy", 400, 5000)
    assert [(leak.provider_sandbox_id, leak.attempts) for leak in await store.list_leaks()] == [("o1", 2)]
    assert await store.claim_sweep("docker", "a", 1000, 0)
    assert not await store.claim_sweep("docker", "b", 1000, 10)
    await store.release_sweep("docker", "a")
    rows = [sr.AuditEntry(5, "h", "docker", "c", "idle", "destroyed", key="k"), sr.AuditEntry(6, "h", "docker", "o1", "orphan", "failed", error="busy")]
    await store.append_audit(rows)
    assert await store.list_audit() == rows
    assert await store.list_audit(since=6) == rows[1:]


async def test_the_sqlite_store_has_the_fleet_methods(tmp_path: Path) -> None:
    async with await sr.SqliteSandboxInstanceStore.open(tmp_path / "fleet.db") as store:
        await fleet_store_round_trip(store)


async def test_the_postgres_store_has_the_fleet_methods() -> None:
    from services import drop_schema, fresh_schema, pg_url

    url = pg_url()
    schema = fresh_schema("py_fleet")
    store = await sr.PostgresSandboxInstanceStore.connect(url, schema=schema, max_connections=2)
    try:
        await fleet_store_round_trip(store)
    finally:
        await store.close()
        drop_schema(url, schema)


# ---------------------------------------------------------------- a real provider and store


async def test_reconcile_with_a_local_provider_and_sqlite_destroys_only_the_unreferenced_old_sandbox(
    tmp_path: Path,
) -> None:
    owner = f"py-fleet-{uuid.uuid4().hex[:8]}"
    provider = sr.LocalProvider(base_dir=tmp_path / "sandboxes", owner=owner)
    assert provider.owner == owner
    referenced = await provider.create("thread-ref:sandbox")
    orphan = await provider.create("thread-orphan:sandbox")
    await asyncio.sleep(1.2)
    young = await provider.create("thread-young:sandbox")
    listed = await provider.list_sandboxes()
    assert sorted(sandbox.id for sandbox in listed) == sorted([referenced.id, orphan.id, young.id])
    assert all(sandbox.owner == owner and sandbox.created_at is not None for sandbox in listed)

    async with await sr.SqliteSandboxInstanceStore.open(tmp_path / "fleet.db") as store:
        record = sr.SandboxInstanceRecord(referenced.key, provider.name, referenced.id, "thread-ref", now_ms())
        await store.upsert(record)
        before = now_ms()
        report = await sr.reconcile(provider=provider, instances=store, orphan_grace=1.0, host="host-under-test")
        orphans = report.providers[0].orphans
        assert orphans.status is sr.SweepStatus.SWEPT
        assert (orphans.listed, orphans.referenced, orphans.young, orphans.found, orphans.destroyed) == (3, 1, 1, 1, 1)
        assert [(action.provider_sandbox_id, action.result) for action in report.actions] == [
            (orphan.id, sr.ActionResult.DESTROYED)
        ]
        remaining = sorted(sandbox.id for sandbox in await provider.list_sandboxes())
        assert remaining == sorted([referenced.id, young.id])
        audit = await store.list_audit(since=before)
        assert [(row.host, row.provider, row.provider_sandbox_id, row.reason, row.result) for row in audit] == [
            ("host-under-test", "local", orphan.id, "orphan", "destroyed")
        ]
        assert await store.list_leaks() == []
    for handle in (referenced, young):
        await provider.destroy(handle.id)
    assert await provider.list_sandboxes() == []


async def test_list_answers_stay_what_they_were_for_existing_callers(tmp_path: Path) -> None:
    provider = sr.LocalProvider(base_dir=tmp_path / "sandboxes", owner=f"py-{uuid.uuid4().hex[:8]}")
    handle = await provider.create("thread-1:sandbox")
    try:
        assert await provider.list() == [handle]
        assert isinstance((await provider.list())[0], sr.SandboxHandle)
    finally:
        await provider.destroy(handle.id)



async def test_reconcile_sweeps_docker_orphans_under_the_providers_owner() -> None:
    from services import docker_image

    image = docker_image()
    owner = f"py-fleet-{uuid.uuid4().hex[:12]}"
    provider = sr.DockerProvider(image=image, owner=owner)
    assert provider.owner == owner
    kept = await provider.create("thread-kept:sandbox")
    orphan = await provider.create("thread-orphan:sandbox")
    try:
        listed = await provider.list_sandboxes()
        assert sorted(sandbox.id for sandbox in listed) == sorted([kept.id, orphan.id])
        assert {sandbox.owner for sandbox in listed} == {owner}
        assert {sandbox.key for sandbox in listed} == {kept.key, orphan.key}
        store = sr.InMemorySandboxInstanceStore.with_ledger()
        await store.upsert(sr.SandboxInstanceRecord(kept.key, provider.name, kept.id, "thread-kept", now_ms()))
        # The pass's owner is another namespace: the provider's own wins.
        report = await sr.reconcile(provider=provider, instances=store, orphan_grace=0, owner="someone-else")
        assert [(action.provider_sandbox_id, action.key, action.result) for action in report.actions] == [
            (orphan.id, orphan.key, sr.ActionResult.DESTROYED)
        ]
        assert [sandbox.id for sandbox in await provider.list_sandboxes()] == [kept.id]
    finally:
        for handle in (kept, orphan):
            await provider.destroy(handle.id)
