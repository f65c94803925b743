"""The effect runtime's contracts in Python, beyond the vectors: awaitable
in-memory stores, strings that cannot cross exactly, hostile exceptions,
real-time deadlines, the native calls a reclaim makes, cancellation, and
option checks. Each is a regression test for a defect of the old runtime."""

from __future__ import annotations

import asyncio
import inspect
import pickle
from typing import Any

import pytest
import sandbox_reclaim as sr
from hosts import CollectingLogger, SyncStore, instance, run_record

from sandbox_reclaim import _native

KEY = "thread-1:sandbox"


class Provider:
    def __init__(self, destroy: Any = None) -> None:
        self.name = "docker"
        self.destroyed: list[str] = []
        self._destroy = destroy

    async def destroy(self, sandbox_id: str) -> None:
        self.destroyed.append(sandbox_id)
        if self._destroy is not None:
            await self._destroy(sandbox_id)


# ------------------------------------------------- every store method is awaitable


async def test_every_in_memory_store_method_is_awaitable() -> None:
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    for name in ("get", "upsert", "delete", "delete_recording_leak", "list_leaks", "count_leaks", "claim_leaks", "resolve_leak", "record_retry_failure"):
        assert inspect.iscoroutinefunction(getattr(store, name)), name
    await store.upsert(instance())
    assert (await store.get(KEY)) == instance()
    await store.delete_recording_leak(KEY, sr.NewLeak(KEY, "docker", "ctr-1", "run-1", "down", 5))
    assert await store.get(KEY) is None
    assert await store.count_leaks() == 1
    [entry] = await store.claim_leaks("docker", 10, 60.0)
    await store.record_retry_failure(entry, "still down", 6)
    [entry] = await store.list_leaks()
    assert (entry.attempts, entry.last_error) == (2, "still down")
    await store.resolve_leak(entry)
    assert await store.list_leaks() == []


@pytest.mark.parametrize("value", [-1, 2**70])
async def test_in_memory_ledger_numbers_out_of_range_are_value_errors(value: int) -> None:
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    with pytest.raises(ValueError, match="limit"):
        await store.claim_leaks("docker", value, 1.0)
    entry = sr.LeakEntry(KEY, "docker", "ctr-1", "run-1", "down", 1, 1)
    with pytest.raises(ValueError, match="failed_at"):
        await store.record_retry_failure(entry, "m", value)


# ------------------------------------------------- exact strings


@pytest.mark.parametrize("key", ["victim\ud800", "x\udbff", "\udc00lead"])
async def test_a_key_with_a_lone_surrogate_is_refused_before_any_call(key: str) -> None:
    store = sr.InMemorySandboxInstanceStore()
    await store.upsert(instance("victim\ufffd"))
    provider = Provider()
    with pytest.raises(TypeError, match="sandbox_key"):
        await sr.reclaim_sandbox({"runId": "r", "threadId": "t", "status": "completed", "startedAt": 1, "sandboxKey": key}, provider=provider, instances=store)
    with pytest.raises(TypeError, match="key"):
        await store.get(key)
    with pytest.raises(TypeError, match="key"):
        await store.delete(key)
    assert provider.destroyed == []
    assert await store.get("victim\ufffd") is not None


async def test_a_store_answer_with_a_lone_surrogate_is_refused_by_name() -> None:
    class Strange(SyncStore):
        def get(self, key: str) -> Any:
            return {"provider": "docker", "providerSandboxId": "ctr\udc00"}

    provider = Provider()
    with pytest.raises(TypeError, match="providerSandboxId"):
        await sr.reclaim_sandbox(run_record(), provider=provider, instances=Strange(instance()))
    assert provider.destroyed == []


# ------------------------------------------------- hostile exceptions


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no string for you")


async def test_a_destroy_exception_that_cannot_be_printed_still_takes_the_destroy_failed_path() -> None:
    store = SyncStore(instance())
    failure = Unprintable()
    logger = CollectingLogger()

    async def fail(_: str) -> None:
        raise failure

    outcome = await sr.reclaim_sandbox(run_record(), provider=Provider(fail), instances=store, logger=logger)
    assert outcome is sr.ReclaimOutcome.DESTROY_FAILED
    assert store.calls == [("get", KEY), ("delete", KEY)]
    [(level, _, meta)] = logger.lines
    assert level == "warn" and meta["error"] is failure


async def test_with_a_ledger_the_unprintable_failure_is_recorded_with_a_fallback_message() -> None:
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    await store.upsert(instance())

    async def fail(_: str) -> None:
        raise Unprintable()

    assert await sr.reclaim_sandbox(run_record(), provider=Provider(fail), instances=store) is sr.ReclaimOutcome.DESTROY_FAILED
    [leak] = await store.list_leaks()
    assert leak.last_error == "Unprintable"


# ------------------------------------------------- deadlines on the real clock


async def test_destroy_timeout_cancels_a_hanging_destroy() -> None:
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    await store.upsert(instance())
    cancelled: list[str] = []

    async def hang(sandbox_id: str) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(sandbox_id)
            raise

    logger = CollectingLogger()
    loop = asyncio.get_running_loop()
    started = loop.time()
    outcome = await sr.reclaim_sandbox(run_record(), provider=Provider(hang), instances=store, logger=logger, destroy_timeout=0.05)
    assert outcome is sr.ReclaimOutcome.DESTROY_FAILED
    assert loop.time() - started >= 0.045
    await asyncio.sleep(0)
    assert cancelled == ["ctr-1"], "the destroy task was cancelled"
    error = logger.lines[0][2]["error"]
    assert isinstance(error, sr.SandboxDestroyTimeoutError)
    assert isinstance(error, sr.SandboxReclaimError) and isinstance(error, TimeoutError)
    assert (error.provider_sandbox_id, error.timeout_ms, error.timeout) == ("ctr-1", 50, 0.05)
    assert str(error) == 'destroying sandbox "ctr-1" did not settle within 50 ms; it was cancelled'
    [leak] = await store.list_leaks()
    assert leak.last_error == str(error)
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), copy.timeout_ms) == (sr.SandboxDestroyTimeoutError, str(error), 50)


async def test_cancelling_the_caller_stops_the_reclaim_before_any_further_host_call() -> None:
    store = SyncStore(instance())
    entered = asyncio.Event()

    async def hang(_: str) -> None:
        entered.set()
        await asyncio.Event().wait()

    task = asyncio.ensure_future(sr.reclaim_sandbox(run_record(), provider=Provider(hang), instances=store, destroy_timeout=30))
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert store.calls == [("get", KEY)], "no delete after the cancellation"


@pytest.mark.parametrize("bad", [0, -1, 0.0004, float("nan"), float("inf"), "1"])
async def test_bad_deadlines_are_refused_naming_the_option_before_any_call(bad: Any) -> None:
    store = SyncStore(instance())
    provider = Provider()
    with pytest.raises((TypeError, ValueError), match="destroy_timeout"):
        await sr.reclaim_sandbox(run_record(), provider=provider, instances=store, destroy_timeout=bad)
    with pytest.raises((TypeError, ValueError), match="destroy_timeout"):
        sr.sandbox_reclaimer(provider=provider, instances=store, destroy_timeout=bad)
    ledger = sr.InMemorySandboxInstanceStore.with_ledger()
    with pytest.raises((TypeError, ValueError), match="destroy_timeout"):
        await sr.retry_leaks(provider=provider, instances=ledger, destroy_timeout=bad)
    assert store.calls == [] and provider.destroyed == []


@pytest.mark.parametrize("limit", [-1, 2**32, 2**70])
async def test_retry_limits_out_of_range_are_value_errors(limit: int) -> None:
    with pytest.raises(ValueError, match="limit"):
        await sr.retry_leaks(provider=Provider(), instances=sr.InMemorySandboxInstanceStore.with_ledger(), limit=limit)


async def test_sandbox_reclaimer_checks_its_options_when_made() -> None:
    with pytest.raises(TypeError):
        sr.sandbox_reclaimer(provider=None, instances=SyncStore())  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        sr.sandbox_reclaimer(provider=Provider(), instances=object())  # type: ignore[arg-type]


# ------------------------------------------------- native calls per reclaim


@pytest.mark.parametrize("path", ["destroyed", "destroy-failed", "reclaimer destroy-failed"])
async def test_a_reclaim_makes_at_most_4_native_calls(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    # InlineSteps: the native steps a reclaim's lone host calls take (one call runs them all when they never suspend).
    for name in ("start_reclaim", "InlineSteps", "complete", "complete_leaks", "timeout", "abandon", "reclaim_failed_message", "destroy_timeout_message"):
        original = getattr(_native, name)

        def counting(*args: Any, _original: Any = original) -> Any:
            nonlocal calls
            calls += 1
            return _original(*args)

        monkeypatch.setattr(_native, name, counting)

    async def fail(_: str) -> None:
        raise OSError("down")

    provider = Provider(None if path == "destroyed" else fail)
    store = SyncStore(instance())
    logger = CollectingLogger()
    if path.startswith("reclaimer"):
        with pytest.raises(sr.SandboxReclaimFailedError):
            await sr.sandbox_reclaimer(provider=provider, instances=store, logger=logger)(run_record())
    else:
        await sr.reclaim_sandbox(run_record(), provider=provider, instances=store, logger=logger)
    assert 2 <= calls <= 4, f"{path}: {calls} native calls (at most: start, then one per store or provider answer)"


async def test_provider_name_is_read_once_per_reclaim_and_the_checked_value_is_used() -> None:
    reads: list[str] = []

    class Shifty:
        @property
        def name(self) -> str:
            reads.append("name")
            return "docker" if len(reads) == 1 else "stranger"

        async def destroy(self, sandbox_id: str) -> None:
            reads.append(f"destroy {sandbox_id}")

    store = SyncStore(instance())
    assert await sr.reclaim_sandbox(run_record(), provider=Shifty(), instances=store) is sr.ReclaimOutcome.DESTROYED
    assert reads == ["name", "destroy ctr-1"]


# ------------------------------------------- host coroutines in a fleet pass


class _NeverSuspends:
    """``async def`` methods that answer without ever suspending."""

    def __init__(self, records: list[sr.SandboxInstanceRecord]) -> None:
        self.records = {record.key: record for record in records}

    async def get(self, key: str) -> sr.SandboxInstanceRecord | None:
        return self.records.get(key)

    async def upsert(self, record: sr.SandboxInstanceRecord) -> None:
        self.records[record.key] = record

    async def delete(self, key: str) -> None:
        self.records.pop(key, None)


class _SuspendingProvider:
    name = "docker"

    def __init__(self) -> None:
        self.destroyed: list[str] = []

    async def destroy(self, sandbox_id: str) -> None:
        await asyncio.sleep(0.001)
        if sandbox_id == "ctr-2":
            raise RuntimeError("engine down")
        self.destroyed.append(sandbox_id)


async def test_a_fleet_pass_runs_only_the_host_coroutines_that_suspend_as_tasks() -> None:
    keys = [f"k{n}" for n in range(4)]
    store = _NeverSuspends([instance(key, sandbox_id=f"ctr-{n}") for n, key in enumerate(keys)])
    provider = _SuspendingProvider()
    loop = asyncio.get_running_loop()
    tasks: list[str] = []

    def counting(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        tasks.append(type(coro).__name__)
        return asyncio.Task(coro, loop=loop, **kwargs)

    previous = loop.get_task_factory()
    loop.set_task_factory(counting)
    try:
        report = await sr.reclaim_all([run_record(key, f"run-{key}") for key in keys], provider=provider, instances=store)
    finally:
        loop.set_task_factory(previous)
    # get and delete answered at their first step; each destroy suspended and ran on.
    assert len([name for name in tasks if name == "Suspended"]) == 4, tasks
    assert sorted(provider.destroyed) == ["ctr-0", "ctr-1", "ctr-3"]
    assert store.records == {}
    outcomes = sorted((line.sandbox_key, line.outcome.value) for line in report.records)
    assert outcomes == [("k0", "destroyed"), ("k1", "destroyed"), ("k2", "destroy-failed"), ("k3", "destroyed")]


class _RaisesStopIteration:
    """A plain ``def`` destroy that lets a StopIteration escape (``next()`` on an empty iterator)."""

    name = "docker"

    def destroy(self, sandbox_id: str) -> None:
        next(iter([]))


class _CoroutineRaisesStopIteration:
    name = "docker"

    async def destroy(self, sandbox_id: str) -> None:
        next(iter([]))  # Python turns it into a RuntimeError inside a coroutine


@pytest.mark.parametrize("provider", [_RaisesStopIteration(), _CoroutineRaisesStopIteration()], ids=["def", "async def"])
async def test_a_destroy_raising_stop_iteration_is_a_failed_destroy_in_a_fleet_pass(provider: Any) -> None:
    store = _NeverSuspends([instance("k")])
    report = await sr.reclaim_all([run_record("k")], provider=provider, instances=store)
    assert [line.outcome.value for line in report.records] == ["destroy-failed"]
    assert store.records == {}, "the record is deleted even when destroy failed"
