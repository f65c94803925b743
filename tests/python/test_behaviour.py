"""Behaviour of the binding beyond the vectors: errors, host method forms,
native/Python store mixing, cancellation, input checks."""

from __future__ import annotations

import asyncio
import pickle
from typing import Any

import pytest
from hosts import KEY, AsyncProvider, AsyncStore, CollectingLogger, Ready, SyncProvider, SyncStore, instance, run_record

import sandbox_reclaim as sr

# ---------------------------------------------------------------- errors


class StoreDown(Exception):
    pass


async def test_get_error_propagates_as_the_same_object_with_its_own_chain() -> None:
    cause = OSError("socket closed")
    error = StoreDown("db down")
    error.__cause__ = cause

    class Store(SyncStore):
        def get(self, key: str) -> sr.SandboxInstanceRecord | None:
            raise error

    with pytest.raises(StoreDown) as caught:
        await sr.reclaim_sandbox(run_record(), provider=SyncProvider(), instances=Store(instance()))
    assert caught.value is error
    assert caught.value.__cause__ is cause, "the binding neither wraps nor re-chains"
    assert caught.value.__context__ is None


async def test_delete_error_after_failed_destroy_is_not_chained_to_the_destroy_error() -> None:
    delete_error = StoreDown("write failed")

    class Store(AsyncStore):
        async def delete(self, key: str) -> None:  # type: ignore[override]
            raise delete_error

    provider = AsyncProvider(error=RuntimeError("engine down"))
    with pytest.raises(StoreDown) as caught:
        await sr.sandbox_reclaimer(provider=provider, instances=Store(instance()))(run_record())
    assert caught.value is delete_error
    assert caught.value.__context__ is None, "the destroy error was handled before delete ran"
    assert caught.value.__cause__ is None


async def test_reclaim_failed_error_has_no_cause_or_context() -> None:
    provider = SyncProvider(error=RuntimeError("engine down"))
    with pytest.raises(sr.SandboxReclaimFailedError) as caught:
        await sr.sandbox_reclaimer(provider=provider, instances=SyncStore(instance()))(run_record())
    error = caught.value
    assert error.__cause__ is None
    assert error.__context__ is None
    assert error.__suppress_context__ is False
    assert (error.run_id, error.sandbox_key) == ("run-1", KEY)
    assert isinstance(error, sr.SandboxReclaimError) and isinstance(error, Exception)


def test_reclaim_failed_error_message_is_the_cores() -> None:
    with_key = sr.SandboxReclaimFailedError("r1", "k1")
    assert str(with_key) == (
        'Reclaiming the sandbox for run "r1" failed: the provider\'s destroy rejected and the instance record '
        'for "k1" was deleted anyway, so the sandbox may still be running and is no longer reachable from the '
        "instance store."
    )
    without_key = sr.SandboxReclaimFailedError("r1")
    assert without_key.sandbox_key is None
    assert 'record was deleted anyway' in str(without_key) and " for " not in str(without_key).split("record")[1]


@pytest.mark.parametrize("key", ["k1", None, 'quo"te – ü'])
def test_reclaim_failed_error_pickles(key: str | None) -> None:
    error = sr.SandboxReclaimFailedError("run \"1\"", key)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        copy = pickle.loads(pickle.dumps(error, protocol=protocol))
        assert type(copy) is sr.SandboxReclaimFailedError
        assert (copy.run_id, copy.sandbox_key, str(copy), copy.args) == (error.run_id, key, str(error), error.args)


# ------------------------------------------------- sync and async hosts


@pytest.mark.parametrize("store_kind", [SyncStore, AsyncStore])
@pytest.mark.parametrize("provider_kind", [SyncProvider, AsyncProvider])
async def test_sync_and_async_host_methods(store_kind: type[SyncStore], provider_kind: type[SyncProvider]) -> None:
    store = store_kind(instance(), instance("other", sandbox_id="ctr-9"))
    provider = provider_kind()
    outcome = await sr.reclaim_sandbox(run_record(), provider=provider, instances=store)
    assert outcome is sr.ReclaimOutcome.DESTROYED
    assert store.calls == [("get", KEY), ("delete", KEY)]
    assert provider.destroyed == ["ctr-1"]
    assert list(store.records) == ["other"]


async def test_awaitables_that_are_not_coroutines() -> None:
    class Store(SyncStore):
        def get(self, key: str) -> Any:
            return Ready(super().get(key))

        def delete(self, key: str) -> Any:
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

            def complete() -> None:
                SyncStore.delete(self, key)
                future.set_result(None)

            asyncio.get_running_loop().call_soon(complete)
            return future

    store = Store(instance())
    outcome = await sr.reclaim_sandbox(run_record(), provider=SyncProvider(), instances=store)
    assert outcome == "destroyed"
    assert store.records == {}


async def test_a_get_answering_a_wire_form_dict() -> None:
    class Store(SyncStore):
        def get(self, key: str) -> Any:
            found = super().get(key)
            return None if found is None else found.to_dict()

    provider = SyncProvider()
    assert await sr.reclaim_sandbox(run_record(), provider=provider, instances=Store(instance())) == "destroyed"
    assert provider.destroyed == ["ctr-1"]


async def test_a_get_answering_garbage_is_a_type_error_and_nothing_is_destroyed() -> None:
    class Store(SyncStore):
        def get(self, key: str) -> Any:
            return 42

    provider = SyncProvider()
    with pytest.raises(TypeError, match="provider"):
        await sr.reclaim_sandbox(run_record(), provider=provider, instances=Store(instance()))
    assert provider.destroyed == []


# ------------------------------------------------------- native stores


async def test_native_store_copies_records_and_validates() -> None:
    store = sr.InMemorySandboxInstanceStore()
    record = instance()
    await store.upsert(record)
    first, second = await store.get(KEY), await store.get(KEY)
    assert first == record and first is not record and first is not second
    assert await store.get("missing") is None
    with pytest.raises(ValueError, match="provider_sandbox_id"):
        await store.upsert(sr.SandboxInstanceRecord("k", "docker", "", "t", 1))
    with pytest.raises(ValueError, match="key"):
        await store.upsert(sr.SandboxInstanceRecord("", "docker", "c", "t", 1))
    with pytest.raises(ValueError, match="NUL"):
        await store.upsert(sr.SandboxInstanceRecord("k\0", "docker", "c", "t", 1))
    with pytest.raises(TypeError, match="SandboxInstanceRecord.*key"):
        await store.upsert(object())  # type: ignore[arg-type]
    assert len(store) == 1 and store.records() == [record]
    await store.delete(KEY)
    await store.delete(KEY)
    assert len(store) == 0


async def test_native_and_python_stores_in_one_gather() -> None:
    native = sr.InMemorySandboxInstanceStore()
    await native.upsert(instance("a", sandbox_id="ctr-a"))
    python = AsyncStore(instance("b", sandbox_id="ctr-b"))
    provider = AsyncProvider()
    logger = CollectingLogger()
    outcomes = await asyncio.gather(
        sr.reclaim_sandbox(run_record("a"), provider=provider, instances=native, logger=logger),
        sr.reclaim_sandbox(run_record("b"), provider=provider, instances=python, logger=logger),
        sr.sandbox_reclaimer(provider=provider, instances=native, logger=logger)(run_record("gone")),
    )
    assert list(outcomes) == [sr.ReclaimOutcome.DESTROYED, sr.ReclaimOutcome.DESTROYED, None]
    assert sorted(provider.destroyed) == ["ctr-a", "ctr-b"]
    assert len(native) == 0 and python.records == {}
    assert logger.lines == [("sandbox", "reclaim: not-found", {"runId": "run-1", "sandboxKey": "gone"})]


async def test_python_subclass_of_the_native_store_is_called() -> None:
    seen: list[str] = []

    class Audited(sr.InMemorySandboxInstanceStore):
        async def get(self, key: str) -> sr.SandboxInstanceRecord | None:
            seen.append(f"get {key}")
            return await super().get(key)

        async def delete(self, key: str) -> None:
            seen.append(f"delete {key}")
            await super().delete(key)

    store = Audited()
    await store.upsert(instance())
    assert await sr.reclaim_sandbox(run_record(), provider=SyncProvider(), instances=store) == "destroyed"
    assert seen == [f"get {KEY}", f"delete {KEY}"]
    assert len(store) == 0


async def test_python_store_delegating_to_a_native_store() -> None:
    class Delegating:
        def __init__(self) -> None:
            self.inner = sr.InMemorySandboxInstanceStore()

        async def get(self, key: str) -> sr.SandboxInstanceRecord | None:
            return await self.inner.get(key)

        async def upsert(self, record: sr.SandboxInstanceRecord) -> None:
            await self.inner.upsert(record)

        async def delete(self, key: str) -> None:
            await self.inner.delete(key)

    store = Delegating()
    await store.upsert(instance())
    assert await sr.reclaim_sandbox(run_record(), provider=AsyncProvider(), instances=store) == "destroyed"
    assert len(store.inner) == 0


async def test_native_ledger_store_records_the_leak_with_a_python_provider() -> None:
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    assert isinstance(store, sr.InMemoryLeakLedgerStore) and isinstance(store, sr.InMemorySandboxInstanceStore)
    await store.upsert(instance())
    failure = ConnectionError("engine down")
    logger = CollectingLogger()
    outcome = await sr.reclaim_sandbox(
        run_record(), provider=AsyncProvider(error=failure), instances=store, logger=logger
    )
    assert outcome is sr.ReclaimOutcome.DESTROY_FAILED
    assert len(store) == 0
    [leak] = await store.list_leaks()
    assert (leak.key, leak.provider, leak.provider_sandbox_id, leak.run_id, leak.last_error, leak.attempts) == (
        KEY, "docker", "ctr-1", "run-1", "engine down", 1,
    )
    assert await store.list_leaks("other") == []
    [(level, message, meta)] = logger.lines
    assert level == "warn" and meta["error"] is failure


async def test_python_ledger_store_gets_a_new_leak() -> None:
    leaks: list[tuple[str, sr.NewLeak]] = []

    class Ledger(SyncStore):
        def delete_recording_leak(self, key: str, leak: sr.NewLeak) -> None:
            leaks.append((key, leak))
            self.records.pop(key, None)

    store = Ledger(instance())
    before = __import__("time").time() * 1000
    with pytest.raises(sr.SandboxReclaimFailedError):
        await sr.sandbox_reclaimer(provider=SyncProvider(error=ValueError("nope")), instances=store)(run_record())
    [(key, leak)] = leaks
    assert key == KEY and store.calls == [("get", KEY)], "no plain delete"
    assert (leak.key, leak.provider, leak.provider_sandbox_id, leak.run_id, leak.error_message) == (
        KEY, "docker", "ctr-1", "run-1", "nope",
    )
    assert isinstance(leak.failed_at, int) and before - 1 <= leak.failed_at <= before + 60_000
    assert leak.to_dict()["providerSandboxId"] == "ctr-1"


async def test_a_non_callable_ledger_attribute_means_no_ledger() -> None:
    class Store(SyncStore):
        delete_recording_leak = None

    store = Store(instance())
    outcome = await sr.reclaim_sandbox(run_record(), provider=SyncProvider(error=RuntimeError("x")), instances=store)
    assert outcome == "destroy-failed" and store.calls == [("get", KEY), ("delete", KEY)]


# -------------------------------------------------------- cancellation


@pytest.mark.parametrize("store_kind", ["python", "native"])
async def test_cancelling_during_destroy_stops_the_reclaim(store_kind: str) -> None:
    started = asyncio.Event()
    release = asyncio.Event()
    python_store = SyncStore(instance())
    native_store = sr.InMemorySandboxInstanceStore()
    await native_store.upsert(instance())
    store: Any = python_store if store_kind == "python" else native_store

    class Provider:
        name = "docker"

        async def destroy(self, sandbox_id: str) -> None:
            started.set()
            await release.wait()

    logger = CollectingLogger()
    task = asyncio.ensure_future(sr.sandbox_reclaimer(provider=Provider(), instances=store, logger=logger)(run_record()))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    await asyncio.sleep(0.01)
    assert logger.lines == [], "nothing logged after cancellation"
    if store_kind == "python":
        assert python_store.calls == [("get", KEY)], "no delete after cancellation"
    else:
        assert len(native_store) == 1, "the record is kept"


async def test_cancelling_during_get() -> None:
    destroyed: list[str] = []

    class Store(SyncStore):
        async def get(self, key: str) -> sr.SandboxInstanceRecord | None:  # type: ignore[override]
            await asyncio.sleep(3600)
            return None

    provider = SyncProvider()
    task = asyncio.ensure_future(sr.reclaim_sandbox(run_record(), provider=provider, instances=Store(instance())))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert provider.destroyed == destroyed


# ------------------------------------------------------- input checks


async def test_bad_options_are_type_errors_before_any_call() -> None:
    store = SyncStore(instance())

    class Nameless:
        def destroy(self, sandbox_id: str) -> None: ...

    class NumberName:
        name = 3

        def destroy(self, sandbox_id: str) -> None: ...

    class NoDelete:
        def __init__(self) -> None:
            self.calls: list[str] = []

        def get(self, key: str) -> None:
            self.calls.append(key)

    cases: list[tuple[dict[str, Any], str]] = [
        ({"provider": Nameless(), "instances": store}, "provider.name"),
        ({"provider": NumberName(), "instances": store}, "provider.name"),
        ({"provider": object(), "instances": store}, "provider"),
        ({"provider": SyncProvider(), "instances": object()}, "instances"),
        ({"provider": SyncProvider(), "instances": NoDelete()}, "instances.delete"),
        ({"provider": SyncProvider(), "instances": store, "logger": object()}, "logger"),
        ({"provider": SyncProvider(), "instances": store, "logger": "stdout"}, "logger"),
    ]
    for options, field in cases:
        with pytest.raises(TypeError, match=field.replace(".", r"\.")):
            await sr.reclaim_sandbox(run_record(), **options)
        with pytest.raises(TypeError, match=field.replace(".", r"\.")):
            sr.sandbox_reclaimer(**options)
    assert store.calls == []
    assert cases[4][0]["instances"].calls == []


async def test_records_as_wire_dicts_and_bad_records() -> None:
    store = SyncStore(instance())
    wire = run_record().to_dict()
    assert await sr.reclaim_sandbox(wire, provider=SyncProvider(), instances=store) == "destroyed"
    bad: list[tuple[Any, type[Exception], str]] = [
        ({**wire, "sandbox_key": "x"}, ValueError, "sandbox_key"),
        ({k: v for k, v in wire.items() if k != "runId"}, ValueError, "runId"),
        ({**wire, "sandboxKey": 5}, TypeError, "sandbox_key"),
        ({**wire, "status": "done"}, ValueError, "status"),
        ({**wire, "startedAt": "now"}, TypeError, "started_at"),
        ("run-1", TypeError, "record"),
        (None, TypeError, "record"),
    ]
    store = SyncStore(instance())
    for record, kind, field in bad:
        with pytest.raises(kind, match=field):
            await sr.reclaim_sandbox(record, provider=SyncProvider(), instances=store)
        with pytest.raises(kind, match=field):
            await sr.sandbox_reclaimer(provider=SyncProvider(), instances=store)(record)
    assert store.calls == []


def test_outcome_is_a_str_enum_of_the_reference_strings() -> None:
    assert [outcome.value for outcome in sr.ReclaimOutcome] == [
        "no-sandbox-key", "not-found", "provider-mismatch", "destroyed", "destroy-failed",
    ]
    assert sr.ReclaimOutcome("destroyed") is sr.ReclaimOutcome.DESTROYED
    assert isinstance(sr.ReclaimOutcome.DESTROYED, str) and str(sr.ReclaimOutcome.NOT_FOUND) == "not-found"
    assert f"{sr.ReclaimOutcome.DESTROY_FAILED}" == "destroy-failed"


async def test_protocols_describe_the_hosts() -> None:
    assert isinstance(SyncProvider(), sr.SandboxProvider)
    assert isinstance(AsyncStore(), sr.SandboxInstanceStore)
    assert isinstance(sr.InMemorySandboxInstanceStore(), sr.SandboxInstanceStore)
    assert isinstance(sr.InMemorySandboxInstanceStore.with_ledger(), sr.LeakLedgerStore)
    assert not isinstance(sr.InMemorySandboxInstanceStore(), sr.LeakLedgerStore)
    assert isinstance(CollectingLogger(), sr.ReclaimLogger)


@pytest.mark.parametrize("native", [False, True])
async def test_the_destroy_error_is_released_after_the_reclaim(native: bool) -> None:
    import gc
    import weakref

    class EngineDown(Exception):
        pass  # a Python subclass: builtin exceptions take no weak references

    class Provider:
        name = "docker"

        async def destroy(self, sandbox_id: str) -> None:
            raise EngineDown("engine down")

    refs: list[weakref.ref[BaseException]] = []

    class Keeping(CollectingLogger):
        def warn(self, message: str, meta: dict[str, Any]) -> None:
            refs.append(weakref.ref(meta["error"]))

    store: Any
    if native:
        store = sr.InMemorySandboxInstanceStore()
        await store.upsert(instance())
    else:
        store = SyncStore(instance())
    outcome = await sr.reclaim_sandbox(run_record(), provider=Provider(), instances=store, logger=Keeping())
    assert outcome is sr.ReclaimOutcome.DESTROY_FAILED
    gc.collect()
    assert len(refs) == 1 and refs[0]() is None, "no uncollectable cycle keeps the destroy error alive"
