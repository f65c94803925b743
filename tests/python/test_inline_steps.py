"""The driver's native inline steps (bindings-python/src/inline.rs): a
reclaim's lone host calls are called and awaited natively, as ``await``
would. Each test pins one way a host's answer can arrive (a coroutine that
suspends, a future, a plain value), a way it can fail, or cancellation."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import sandbox_reclaim as sr
from hosts import CollectingLogger, instance, run_record

KEY = "thread-1:sandbox"


class Store:
    """A store whose ``get`` answer and ``delete`` are given per test (a
    reclaim calls nothing else)."""

    def __init__(self, get: Any, delete: Any = None) -> None:
        self._get, self._delete = get, delete
        self.deleted: list[str] = []

    def get(self, key: str) -> Any:
        return self._get(key)

    def delete(self, key: str) -> Any:
        self.deleted.append(key)
        return None if self._delete is None else self._delete(key)

    async def upsert(self, record: sr.SandboxInstanceRecord) -> None:
        raise AssertionError("a reclaim never upserts")


class Provider:
    name = "docker"

    def __init__(self, destroy: Any = None) -> None:
        self._destroy = destroy
        self.destroyed: list[str] = []

    def destroy(self, sandbox_id: str) -> Any:
        self.destroyed.append(sandbox_id)
        return None if self._destroy is None else self._destroy(sandbox_id)


async def suspending(value: Any) -> Any:
    await asyncio.sleep(0)
    await asyncio.sleep(0.001)
    return value


def future_of(value: Any) -> asyncio.Future[Any]:
    future = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().call_soon(future.set_result, value)
    return future


class Awaitable:
    """Not a coroutine, nor a future: an object whose ``__await__`` is a generator."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Any:
        yield from asyncio.sleep(0).__await__()
        return self.value


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(lambda value: value, id="plain value"),
        pytest.param(suspending, id="suspending coroutine"),
        pytest.param(future_of, id="future"),
        pytest.param(Awaitable, id="custom awaitable"),
    ],
)
async def test_every_kind_of_answer_reclaims(answer: Any) -> None:
    store = Store(lambda key: answer(instance()), lambda key: answer(None))
    provider = Provider(lambda sandbox_id: answer(None))
    outcome = await sr.reclaim_sandbox(run_record(), provider=provider, instances=store)
    assert outcome == sr.ReclaimOutcome.DESTROYED
    assert (provider.destroyed, store.deleted) == (["ctr-1"], [KEY])


async def test_a_wire_form_mapping_is_read_by_the_drivers_reader() -> None:
    wire = {"key": KEY, "provider": "docker", "providerSandboxId": "ctr-9", "threadId": "t", "updatedAt": 1}
    store = Store(lambda key: suspending(wire))
    provider = Provider()
    assert await sr.reclaim_sandbox(run_record(), provider=provider, instances=store) == sr.ReclaimOutcome.DESTROYED
    assert provider.destroyed == ["ctr-9"]


@pytest.mark.parametrize("found", [object(), {"provider": "docker"}, {"provider": "docker", "providerSandboxId": "\udc80"}])
async def test_an_answer_out_of_contract_is_a_type_error_and_nothing_is_destroyed(found: object) -> None:
    provider = Provider()
    with pytest.raises(TypeError):
        await sr.reclaim_sandbox(run_record(), provider=provider, instances=Store(lambda key: suspending(found)))
    assert provider.destroyed == []
    # The run was abandoned, not leaked into the next one.
    store = Store(lambda key: instance())
    assert await sr.reclaim_sandbox(run_record(), provider=provider, instances=store) == sr.ReclaimOutcome.DESTROYED


@pytest.mark.parametrize("when", ["at once", "after suspending"])
async def test_a_failing_destroy_still_deletes_and_reports_destroy_failed(when: str) -> None:
    async def later(_: str) -> None:
        await asyncio.sleep(0)
        raise OSError("down")

    def at_once(_: str) -> None:
        raise OSError("down")

    store = Store(lambda key: instance())
    provider = Provider(at_once if when == "at once" else later)
    outcome = await sr.reclaim_sandbox(run_record(), provider=provider, instances=store)
    assert outcome == sr.ReclaimOutcome.DESTROY_FAILED
    assert store.deleted == [KEY]


async def test_a_failing_get_propagates_unchanged() -> None:
    failure = LookupError("store down")

    async def broken(_: str) -> None:
        await asyncio.sleep(0)
        raise failure

    provider = Provider()
    with pytest.raises(LookupError) as raised:
        await sr.reclaim_sandbox(run_record(), provider=provider, instances=Store(broken))
    assert raised.value is failure
    assert provider.destroyed == []


async def test_cancelling_the_caller_reaches_the_suspended_host_call() -> None:
    started, seen = asyncio.Event(), []

    async def slow_destroy(_: str) -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    store = Store(lambda key: instance())
    task = asyncio.ensure_future(sr.reclaim_sandbox(run_record(), provider=Provider(slow_destroy), instances=store))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen == ["cancelled"]
    assert store.deleted == [], "a cancelled reclaim starts nothing more"
    # The run was abandoned: the next reclaim starts afresh.
    assert await sr.reclaim_sandbox(run_record(), provider=Provider(), instances=store) == sr.ReclaimOutcome.DESTROYED


async def test_a_host_call_that_swallows_the_cancellation_answers_it() -> None:
    """As with ``await``: a host coroutine that catches CancelledError and
    returns has answered; the reclaim goes on with that answer."""
    started = asyncio.Event()

    async def stubborn_destroy(_: str) -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            return None

    store = Store(lambda key: instance())
    task = asyncio.ensure_future(sr.reclaim_sandbox(run_record(), provider=Provider(stubborn_destroy), instances=store))
    await started.wait()
    task.cancel()
    assert await task == sr.ReclaimOutcome.DESTROYED
    assert store.deleted == [KEY]


class Interrupt(BaseException):
    """Not an ``Exception``: never a host answer, always propagated."""


async def test_a_base_exception_from_a_host_propagates_and_abandons_the_run() -> None:
    def interrupting(_: str) -> None:
        raise Interrupt

    store = Store(lambda key: instance())
    with pytest.raises(Interrupt):
        await sr.reclaim_sandbox(run_record(), provider=Provider(interrupting), instances=store)
    assert store.deleted == []
    assert await sr.reclaim_sandbox(run_record(), provider=Provider(), instances=store) == sr.ReclaimOutcome.DESTROYED


async def test_a_deadline_takes_the_drivers_path() -> None:
    """A destroy with a deadline is not a lone call without one: the driver
    runs it as a task and cancels it at the deadline."""
    store = Store(lambda key: instance())
    outcome = await sr.reclaim_sandbox(
        run_record(), provider=Provider(lambda _: asyncio.sleep(5)), instances=store, destroy_timeout=0.05
    )
    assert outcome == sr.ReclaimOutcome.DESTROY_FAILED
    assert store.deleted == [KEY]


@pytest.mark.parametrize("logger", [None, "collecting"])
async def test_a_reclaimer_without_a_logger_skips_its_log_lines_and_still_fails_on_destroy_failed(logger: str | None) -> None:
    def down(_: str) -> None:
        raise OSError("down")

    collecting = CollectingLogger() if logger else None
    reclaim = sr.sandbox_reclaimer(provider=Provider(), instances=Store(lambda key: instance()), logger=collecting)
    await reclaim(run_record())  # resolves with nothing
    failing = sr.sandbox_reclaimer(provider=Provider(down), instances=Store(lambda key: instance()), logger=collecting)
    with pytest.raises(sr.SandboxReclaimFailedError):
        await failing(run_record())
    if collecting is not None:
        assert len(collecting.lines) >= 2, "with a logger, the outcome lines reach it"


class BrokenAwait:
    """Its ``__await__`` raises, as ``await`` of it would."""

    def __await__(self) -> Any:
        raise OSError("cannot await")


class NotAnIterator:
    """Its ``__await__`` answers what ``await`` refuses (a TypeError)."""

    def __await__(self) -> Any:
        return 42


@pytest.mark.parametrize("broken", [BrokenAwait, NotAnIterator])
async def test_a_destroy_whose_awaitable_cannot_be_awaited_failed_and_the_record_is_deleted(broken: Any) -> None:
    store = Store(lambda key: instance())
    outcome = await sr.reclaim_sandbox(run_record(), provider=Provider(lambda _: broken()), instances=store)
    assert outcome == sr.ReclaimOutcome.DESTROY_FAILED
    assert store.deleted == [KEY]


async def test_a_get_whose_awaitable_cannot_be_awaited_propagates_as_the_reference_does() -> None:
    provider = Provider()
    with pytest.raises(OSError, match="cannot await"):
        await sr.reclaim_sandbox(run_record(), provider=provider, instances=Store(lambda key: BrokenAwait()))
    assert provider.destroyed == []
