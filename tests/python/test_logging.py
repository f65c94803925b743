"""Loggers: stdlib ``logging.Logger``/``LoggerAdapter`` and duck-typed objects."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from hosts import KEY, CollectingLogger, SyncProvider, SyncStore, instance, run_record

import sandbox_reclaim as sr


class ListHandler(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def captured() -> Any:
    logger = logging.getLogger("sandbox_reclaim.test")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    handler = ListHandler()
    logger.addHandler(handler)
    yield logger, handler.records
    logger.removeHandler(handler)


async def test_stdlib_logger_levels_messages_and_extra(captured: Any) -> None:
    logger, records = captured
    failure = RuntimeError("engine down")
    reclaim = sr.sandbox_reclaimer(provider=SyncProvider(error=failure), instances=SyncStore(instance()), logger=logger)
    with pytest.raises(sr.SandboxReclaimFailedError):
        await reclaim(run_record())
    warn, error = records
    assert (warn.levelno, warn.getMessage()) == (logging.WARNING, "reclaim: provider destroy failed; deleting the record anyway")
    assert (warn.runId, warn.sandboxKey, warn.providerSandboxId) == ("run-1", KEY, "ctr-1")
    assert warn.error is failure
    assert (error.levelno, error.getMessage()) == (logging.ERROR, "reclaim: destroy failed; sandbox may still be running")
    assert (error.runId, error.sandboxKey) == ("run-1", KEY)
    assert warn.pathname != logging.__file__


async def test_stdlib_sandbox_lines_are_debug_and_respect_the_level(captured: Any) -> None:
    logger, records = captured
    await sr.sandbox_reclaimer(provider=SyncProvider(), instances=SyncStore(instance()), logger=logger)(run_record())
    [line] = records
    assert (line.levelno, line.getMessage(), line.runId, line.sandboxKey) == (
        logging.DEBUG, "reclaim: destroyed", "run-1", KEY,
    )
    logger.setLevel(logging.INFO)
    await sr.sandbox_reclaimer(provider=SyncProvider(), instances=SyncStore(instance()), logger=logger)(run_record())
    assert len(records) == 1, "DEBUG lines are dropped at INFO"


async def test_logger_adapter_keeps_its_extra_and_the_meta(captured: Any) -> None:
    logger, records = captured

    class Prefixed(logging.LoggerAdapter):  # type: ignore[type-arg]
        def process(self, msg: Any, kwargs: Any) -> Any:
            kwargs["extra"] = self.extra  # what LoggerAdapter does before 3.13
            return f"[tenant-7] {msg}", kwargs

    adapter = Prefixed(logger, {"tenant": "7"})
    outcome = await sr.reclaim_sandbox(
        run_record(), provider=SyncProvider(), instances=SyncStore(instance("k", provider="daytona")), logger=adapter
    )
    assert outcome is sr.ReclaimOutcome.NOT_FOUND
    outcome = await sr.reclaim_sandbox(
        run_record("k"), provider=SyncProvider(), instances=SyncStore(instance("k", provider="daytona")), logger=adapter
    )
    assert outcome is sr.ReclaimOutcome.PROVIDER_MISMATCH
    [line] = records
    assert line.levelno == logging.WARNING
    assert line.getMessage() == "[tenant-7] reclaim: instance record belongs to a different provider; refusing to destroy"
    assert (line.tenant, line.runId, line.sandboxKey, line.recordProvider, line.reclaimerProvider) == (
        "7", "run-1", "k", "daytona", "docker",
    )


async def test_plain_logger_adapter(captured: Any) -> None:
    logger, records = captured
    adapter = logging.LoggerAdapter(logger, {"service": "sweeper"})
    await sr.sandbox_reclaimer(provider=SyncProvider(), instances=SyncStore(), logger=adapter)(run_record())
    [line] = records
    assert (line.getMessage(), line.service, line.runId) == ("reclaim: not-found", "sweeper", "run-1")


async def test_duck_logger_gets_fresh_meta_with_camel_case_keys() -> None:
    logger = CollectingLogger()
    reclaim = sr.sandbox_reclaimer(provider=SyncProvider(), instances=SyncStore(), logger=logger)
    await reclaim(run_record())
    await reclaim(run_record(None))
    assert logger.lines == [
        ("sandbox", "reclaim: not-found", {"runId": "run-1", "sandboxKey": KEY}),
        ("sandbox", "reclaim: no-sandbox-key", {"runId": "run-1"}),
    ]
    assert logger.lines[0][2] is not logger.lines[1][2]


async def test_a_raising_logger_stops_the_reclaim_like_the_reference() -> None:
    class Exploding(CollectingLogger):
        def warn(self, message: str, meta: dict[str, Any]) -> None:
            raise LookupError("logger broke")

    store = SyncStore(instance())
    with pytest.raises(LookupError):
        await sr.reclaim_sandbox(
            run_record(), provider=SyncProvider(error=RuntimeError("x")), instances=store, logger=Exploding()
        )
    assert store.calls == [("get", KEY)], "the reference's warn runs before its delete"


async def test_native_store_logs_before_it_deletes() -> None:
    store = sr.InMemorySandboxInstanceStore()
    await store.upsert(instance())
    seen: list[int] = []

    class Watching(CollectingLogger):
        def warn(self, message: str, meta: dict[str, Any]) -> None:
            seen.append(len(store))

    outcome = await sr.reclaim_sandbox(
        run_record(), provider=SyncProvider(error=RuntimeError("x")), instances=store, logger=Watching()
    )
    assert outcome is sr.ReclaimOutcome.DESTROY_FAILED
    assert seen == [1], "the warn line comes before the delete, as in the reference"
    assert len(store) == 0
