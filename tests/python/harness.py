"""Runs the parity vectors of tests/vectors/ against the Python binding on a
virtual clock, with the same expectations as the Rust and Node runners
(format: tests/vectors/README.md). Python spellings: store methods are
snake_case, ``destroy`` takes the id itself (JS passes ``{id}``) and
``claim_leaks`` a lease in seconds."""

from __future__ import annotations

import asyncio
import copy
import heapq
import inspect
import json
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sandbox_reclaim as sr
from sandbox_reclaim import _driver

VECTORS_DIR = Path(__file__).resolve().parent.parent / "vectors"
DEFAULT_CLOCK_START = 1_700_000_000_000
PYTHON_METHODS = {
    "deleteRecordingLeak": "delete_recording_leak",
    "claimLeaks": "claim_leaks",
    "resolveLeak": "resolve_leak",
    "recordRetryFailure": "record_retry_failure",
}

Vector = dict[str, Any]


FLEET_APIS = ("reclaimAll", "reconcile")


def _all_vectors() -> list[Vector]:
    cases: list[Vector] = []
    for path in sorted(VECTORS_DIR.glob("*.json")):
        cases.extend(json.loads(path.read_text(encoding="utf-8"))["cases"])
    return cases


def load_vectors() -> list[Vector]:
    """Every case of the single-run flows (reclaimSandbox, sandboxReclaimer,
    retryLeaks), in file order."""
    return [case for case in _all_vectors() if case["api"] not in FLEET_APIS]


def load_fleet_vectors() -> list[Vector]:
    """Every fleet case (reclaimAll, reconcile), in file order."""
    return [case for case in _all_vectors() if case["api"] in FLEET_APIS]


class HostError(Exception):
    """The error a scripted host method raises (JS: ``new Error(message)``)."""


class VirtualClock:
    """A virtual clock: timers fire in (time, order set) order, only when
    nothing else can run. It is also the driver's clock while a vector runs."""

    def __init__(self, start: int) -> None:
        self.start = start
        self._now = start
        self._order = 0
        self._timers: list[tuple[int, int, asyncio.Future[None]]] = []

    def now(self) -> int:
        return self._now

    def sleep_until(self, at: int) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._order += 1
        heapq.heappush(self._timers, (at, self._order, future))
        return future

    async def sleep(self, ms: int) -> None:
        await self.sleep_until(self._now + ms)

    async def wait(self, waker: asyncio.Future[None], stop: asyncio.Future[Any] | None, deadline: int | None) -> None:
        waiters: set[asyncio.Future[Any]] = {waker} if stop is None else {waker, stop}
        timer = None if deadline is None else self.sleep_until(deadline)
        if timer is not None:
            waiters.add(timer)
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if timer is not None and not timer.done():
                timer.cancel()

    async def run_until(self, task: asyncio.Future[Any]) -> None:
        """Runs the world until ``task`` is done; fails if it never can be."""
        while True:
            for _ in range(50):
                await asyncio.sleep(0)
            if task.done():
                return
            while self._timers and self._timers[0][2].done():
                heapq.heappop(self._timers)
            if not self._timers:
                task.cancel()
                raise AssertionError("the vector hangs: nothing scheduled and the call has not finished")
            at, _, future = heapq.heappop(self._timers)
            self._now = max(self._now, at)
            future.set_result(None)


@dataclass
class Fixture:
    """Scripted store, provider and logger that record every call."""

    vector: Vector
    clock: VirtualClock
    calls: list[dict[str, Any]] = field(default_factory=list)
    logs: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    thrown: dict[str, BaseException] = field(default_factory=dict)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    leaks: list[dict[str, Any]] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)

    def record(self, on: str, method: str, args: list[Any]) -> None:
        self.calls.append({"on": on, "method": method, "args": args, "at": self.clock.now() - self.clock.start})

    def perform(self, behaviour: dict[str, Any] | None, source: str, produce: Callable[[], Any]) -> Any:
        """Acts out a scripted behaviour: returns the value, raises, or returns an awaitable."""
        behaviour = behaviour or {}
        mode = behaviour.get("mode", "resolve")
        latency = behaviour.get("latencyMs", 0)
        if mode == "return":
            produced = produce()
            return behaviour["value"] if "value" in behaviour else produced
        if mode == "throw":
            self.thrown[source] = HostError(behaviour["message"])
            raise self.thrown[source]

        async def later() -> Any:
            if mode == "hang":
                await asyncio.get_running_loop().create_future()
            if latency:
                await self.clock.sleep(latency)
            if mode == "reject":
                self.thrown[source] = HostError(behaviour["message"])
                raise self.thrown[source]
            return produce()

        return later()

    def leak_index(self, provider: str, sandbox_id: str) -> int | None:
        for index, leak in enumerate(self.leaks):
            if leak["provider"] == provider and leak["providerSandboxId"] == sandbox_id:
                return index
        return None


class VectorStore:
    def __init__(self, fixture: Fixture) -> None:
        self._fixture = fixture

    def get(self, key: str) -> Any:
        fixture = self._fixture
        fixture.record("store", "get", [key])

        def produce() -> sr.SandboxInstanceRecord | None:
            found = fixture.records.get(key)
            return None if found is None else sr.SandboxInstanceRecord.from_dict(found)

        return fixture.perform(fixture.vector["store"].get("get"), "get", produce)

    def upsert(self, record: sr.SandboxInstanceRecord) -> None:
        self._fixture.records[record.key] = record.to_dict()

    def delete(self, key: str) -> Any:
        fixture = self._fixture
        fixture.record("store", "delete", [key])
        return fixture.perform(fixture.vector["store"].get("delete"), "delete", lambda: fixture.records.pop(key, None))


class VectorLedgerStore(VectorStore):
    def delete_recording_leak(self, key: str, leak: sr.NewLeak) -> Any:
        fixture = self._fixture
        assert isinstance(leak, sr.NewLeak)
        assert isinstance(leak.failed_at, int) and leak.failed_at > 0, "leak.failed_at is epoch milliseconds"
        rest = leak.to_dict()
        del rest["failedAt"]
        fixture.record("store", "delete_recording_leak", [key, rest])

        def produce() -> None:
            fixture.records.pop(key, None)
            entry = {k: v for k, v in rest.items() if k != "errorMessage"}
            entry = {**entry, "lastError": rest["errorMessage"], "failedAt": leak.failed_at, "attempts": 1}
            known = fixture.leak_index(entry["provider"], entry["providerSandboxId"])
            if known is None:
                fixture.leaks.append(entry)
            else:
                fixture.leaks[known] = {**entry, "attempts": fixture.leaks[known]["attempts"] + 1}

        return fixture.perform(fixture.vector["store"].get("delete"), "delete", produce)

    def claim_leaks(self, provider: str, limit: int, lease: float) -> Any:
        fixture = self._fixture
        fixture.record("store", "claim_leaks", [provider, limit, round(lease * 1000)])

        def produce() -> list[sr.LeakEntry]:
            now = fixture.clock.now()
            taken: list[sr.LeakEntry] = []
            for leak in fixture.leaks:
                free = "claimedUntil" not in leak or leak["claimedUntil"] <= now
                if len(taken) < limit and leak["provider"] == provider and free:
                    leak["claimedUntil"] = now + round(lease * 1000)
                    taken.append(sr.LeakEntry.from_dict({k: v for k, v in leak.items() if k != "claimedUntil"}))
            return taken

        return fixture.perform(fixture.vector["store"].get("claimLeaks"), "claimLeaks", produce)

    def resolve_leak(self, entry: sr.LeakEntry) -> Any:
        fixture = self._fixture
        fixture.record("store", "resolve_leak", [entry.provider_sandbox_id])

        def produce() -> None:
            index = fixture.leak_index(entry.provider, entry.provider_sandbox_id)
            if index is not None:
                del fixture.leaks[index]

        return fixture.perform(fixture.vector["store"].get("resolveLeak"), "resolveLeak", produce)

    def record_retry_failure(self, entry: sr.LeakEntry, message: str, failed_at: int) -> Any:
        fixture = self._fixture
        fixture.record("store", "record_retry_failure", [entry.provider_sandbox_id, message, failed_at - fixture.clock.start])

        def produce() -> None:
            index = fixture.leak_index(entry.provider, entry.provider_sandbox_id)
            if index is not None:
                leak = fixture.leaks[index]
                leak.update(attempts=leak["attempts"] + 1, lastError=message, failedAt=failed_at)
                leak.pop("claimedUntil", None)

        return fixture.perform(fixture.vector["store"].get("recordRetryFailure"), "recordRetryFailure", produce)


class VectorProvider:
    def __init__(self, fixture: Fixture) -> None:
        self._fixture = fixture
        self.name: str = fixture.vector["provider"]["name"]

    def destroy(self, sandbox_id: str) -> Any:
        fixture = self._fixture
        fixture.record("provider", "destroy", [sandbox_id])
        behaviour = (fixture.vector["provider"].get("destroy") or {}).get(sandbox_id)
        answer = fixture.perform(behaviour, "destroy", lambda: None)
        if not isinstance(answer, Coroutine):
            return answer

        async def cancellable() -> Any:
            try:
                return await answer
            except asyncio.CancelledError:
                fixture.aborted.append(sandbox_id)
                raise

        return cancellable()


def _throwing_progress(events: list[dict[str, Any]]) -> Any:
    """A progress callback that records each event, then raises (a fleet case's ``progressThrows``)."""

    def on_progress(event: dict[str, Any]) -> None:
        events.append(event)
        raise RuntimeError("progress callback down")

    return on_progress


class RecordingLogger:
    """Records every line; a level named in ``throws`` (a fleet case's
    ``loggerThrows``) then raises an Exception with that message."""

    def __init__(self, logs: list[tuple[str, str, dict[str, Any]]], throws: dict[str, str] | None = None) -> None:
        self._logs = logs
        self._throws = throws or {}

    def _line(self, level: str, message: str, meta: dict[str, Any]) -> None:
        self._logs.append((level, message, meta))
        if level in self._throws:
            raise RuntimeError(self._throws[level])

    def warn(self, message: str, meta: dict[str, Any]) -> None:
        self._line("warn", message, meta)

    def errors(self, message: str, meta: dict[str, Any]) -> None:
        self._line("errors", message, meta)

    def sandbox(self, message: str, meta: dict[str, Any]) -> None:
        self._line("sandbox", message, meta)


def expected_calls(vector: Vector) -> list[dict[str, Any]]:
    """The vector's calls in Python spelling."""
    calls = []
    for call in vector["expect"]["calls"]:
        call = {**call, "method": PYTHON_METHODS.get(call["method"], call["method"])}
        if call["method"] == "destroy":
            call["args"] = [call["args"][0]["id"]]
        calls.append(call)
    return calls


def seconds(options: dict[str, Any], name: str) -> float | None:
    value = options.get(name)
    return None if value is None else value / 1000


async def call_api(vector: Vector, provider: Any, instances: Any, logger: Any) -> tuple[Any, BaseException | None]:
    """Calls the vector's API with its options; returns (result, error)."""
    options = vector.get("options", {})
    timeout = seconds(options, "destroyTimeoutMs")
    call: Callable[[], Awaitable[Any]]
    if vector["api"] == "retryLeaks":
        lease = seconds(options, "leaseMs") or 300.0
        limit = options.get("limit", 100)
        call = lambda: sr.retry_leaks(  # noqa: E731
            provider=provider, instances=instances, limit=limit, lease=lease, destroy_timeout=timeout
        )
    else:
        record = sr.RunRecord.from_dict(vector["record"])
        if vector["api"] == "reclaimSandbox":
            call = lambda: sr.reclaim_sandbox(  # noqa: E731
                record, provider=provider, instances=instances, logger=logger, destroy_timeout=timeout
            )
        else:
            reclaimer = sr.sandbox_reclaimer(provider=provider, instances=instances, logger=logger, destroy_timeout=timeout)
            call = lambda: reclaimer(record)  # noqa: E731
    try:
        return await call(), None
    except Exception as error:  # noqa: BLE001 - the vector says which error
        return None, error


def check_outcome(vector: Vector, result: Any, error: BaseException | None, thrown: dict[str, BaseException]) -> None:
    expected = vector["expect"]
    if "error" not in expected:
        assert error is None, f"expected success, got {error!r}"
        if vector["api"] == "retryLeaks":
            assert isinstance(result, sr.RetrySummary)
            assert result.to_dict() == expected["result"]
        elif expected.get("result") is None:
            assert result is None
        else:
            assert isinstance(result, sr.ReclaimOutcome)
            assert result == expected["result"]
            assert result.value == expected["result"]
        return
    assert error is not None, "expected an error"
    if expected["error"]["kind"] == "hostError":
        source = expected["error"]["source"]
        assert source in thrown, "the host fault was raised"
        assert error is thrown[source], "raises the very host error"
    else:
        assert type(error) is sr.SandboxReclaimFailedError
        assert isinstance(error, sr.SandboxReclaimError)
        assert str(error) == expected["error"]["message"]
        assert error.run_id == expected["error"]["runId"]
        assert error.sandbox_key == expected["error"].get("sandboxKey")
        assert error.__cause__ is None and error.__context__ is None


def check_logs(vector: Vector, logs: list[tuple[str, str, dict[str, Any]]], thrown: dict[str, BaseException]) -> None:
    expected = vector["expect"]["logs"]
    assert len(logs) == len(expected), f"number of log lines: {logs}"
    for index, (line, (level, message, meta)) in enumerate(zip(expected, logs)):
        assert level == line["level"], f"log {index} level"
        assert message == line["message"], f"log {index} message"
        assert list(meta) == list(line["meta"]), f"log {index} meta keys in order"
        for key, value in line["meta"].items():
            if isinstance(value, dict) and "$hostError" in value:
                assert meta[key] is thrown[value["$hostError"]], f"log {index} meta.{key} is the host's error"
            elif isinstance(value, dict) and "$timeoutError" in value:
                want = value["$timeoutError"]
                error = meta[key]
                assert isinstance(error, sr.SandboxDestroyTimeoutError) and isinstance(error, TimeoutError)
                assert error.provider_sandbox_id == want["providerSandboxId"]
                assert error.timeout_ms == want["timeoutMs"]
                assert str(error) == want["message"]
            else:
                assert meta[key] == value, f"log {index} meta.{key}"


async def run_vector(vector: Vector) -> None:
    """Runs one vector against Python host objects on a virtual clock and
    asserts every expectation."""
    clock = VirtualClock(vector.get("clock", {}).get("start", DEFAULT_CLOCK_START))
    fixture = Fixture(vector, clock)
    for instance in vector["store"]["instances"]:
        fixture.records[instance["key"]] = copy.deepcopy(instance)
    for leak in vector["store"].get("leaks", []):
        leak = copy.deepcopy(leak)
        if "claimedUntil" in leak:
            leak["claimedUntil"] += clock.start
        fixture.leaks.append(leak)
    store = VectorLedgerStore(fixture) if vector["store"].get("ledger") else VectorStore(fixture)
    logger = RecordingLogger(fixture.logs) if vector["logger"] else None

    previous = _driver.set_clock(clock)
    try:
        task = asyncio.ensure_future(call_api(vector, VectorProvider(fixture), store, logger))
        await clock.run_until(task)
        result, error = task.result()
    finally:
        _driver.set_clock(previous)

    check_outcome(vector, result, error, fixture.thrown)
    calls = fixture.calls
    wanted = expected_calls(vector)
    calls = [call if index < len(wanted) and "at" in wanted[index] else {k: v for k, v in call.items() if k != "at"} for index, call in enumerate(calls)]
    assert calls == wanted, "calls on store and provider"
    check_logs(vector, fixture.logs, fixture.thrown)
    assert sorted(fixture.records.values(), key=lambda r: r["key"]) == vector["expect"]["instancesAfter"]
    if "leaksAfter" in vector["expect"]:
        leaks = [{k: v for k, v in leak.items() if k not in ("failedAt", "claimedUntil")} for leak in fixture.leaks]
        assert leaks == vector["expect"]["leaksAfter"], "leak ledger afterwards"
    assert fixture.aborted == vector["expect"].get("aborted", []), "cancelled destroys"
    if "elapsedMs" in vector["expect"]:
        assert clock.now() - clock.start == vector["expect"]["elapsedMs"], "virtual time at the end"


def runs_on_native_store(vector: Vector) -> bool:
    """Untimed reclaim vectors without scripted store faults also run on the native stores."""
    untimed = "options" not in vector and "latencyMs" not in json.dumps(vector)
    store = vector["store"]
    return vector["api"] != "retryLeaks" and untimed and "get" not in store and "delete" not in store


async def run_vector_native_store(vector: Vector, store: Any) -> None:
    """The same vector with a native store (its records upserted first): same
    outcome, provider calls, logs and contents."""
    fixture = Fixture(vector, VirtualClock(DEFAULT_CLOCK_START))
    for instance in vector["store"]["instances"]:
        await store.upsert(sr.SandboxInstanceRecord.from_dict(instance))
    logger = RecordingLogger(fixture.logs) if vector["logger"] else None

    result, error = await call_api(vector, VectorProvider(fixture), store, logger)

    check_outcome(vector, result, error, fixture.thrown)
    provider_calls = [call for call in expected_calls(vector) if call["on"] == "provider"]
    assert [{k: v for k, v in call.items() if k != "at"} for call in fixture.calls] == provider_calls, "provider calls"
    check_logs(vector, fixture.logs, fixture.thrown)
    after = {record["key"]: record for record in vector["expect"]["instancesAfter"]}
    for instance in vector["store"]["instances"]:
        found = await store.get(instance["key"])
        assert (None if found is None else found.to_dict()) == after.get(instance["key"]), f"record {instance['key']!r}"
    if "leaksAfter" in vector["expect"] and vector["store"].get("ledger"):
        leaks = [leak.to_dict() for leak in await store.list_leaks()]
        for leak in leaks:
            assert isinstance(leak.pop("failedAt"), int)
        assert leaks == vector["expect"]["leaksAfter"]


# ---- fleet passes (reclaimAll, reconcile): tests/vectors/README.md "Fleet passes" ----


def partial_match(actual: Any, expected: Any, path: str = "report") -> None:
    """``actual`` matches ``expected`` when every key ``expected`` names
    matches; arrays element by element, of equal length; anything else equal."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: got {actual!r}, expected an object"
        for key, want in expected.items():
            partial_match(actual.get(key), want, f"{path}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list), f"{path}: got {actual!r}, expected an array"
        assert len(actual) == len(expected), f"{path}: {len(actual)} items, expected {len(expected)}: {actual!r}"
        for index, (got, want) in enumerate(zip(actual, expected)):
            partial_match(got, want, f"{path}[{index}]")
    else:
        assert actual == expected and type(actual) is type(expected), f"{path}: got {actual!r}, expected {expected!r}"


@dataclass
class FleetFixture:
    """The fleet case's world: the virtual clock, what was called, what was
    thrown (by method), what was logged, reported and cancelled."""

    vector: Vector
    clock: VirtualClock
    calls: list[dict[str, Any]] = field(default_factory=list)
    logs: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    progress: list[dict[str, Any]] = field(default_factory=list)
    thrown: dict[str, list[BaseException]] = field(default_factory=dict)
    aborted: list[str] = field(default_factory=list)
    native: Any = None  # the native in-memory store, for a listing's ``meanwhile``

    def at(self) -> int:
        return self.clock.now() - self.clock.start

    def relative(self, at: int) -> int:
        return at - self.clock.start

    def record(self, call: dict[str, Any]) -> None:
        self.calls.append({**call, "at": self.at()})

    def perform(
        self,
        method: str,
        behaviour: dict[str, Any] | None,
        produce: Callable[[], Any],
        aborted: str | None = None,
        settling: Callable[[], None] = lambda: None,
    ) -> Any:
        """Acts out a Behaviour: ``return`` answers its value (at once, or after
        ``latencyMs``) without calling ``produce``; ``throw`` raises at once;
        otherwise ``produce()`` (the native call) runs after the latency.
        ``settling`` runs as an answer settles, just before it is handed over."""
        behaviour = behaviour or {}
        mode = behaviour.get("mode", "resolve")
        latency = behaviour.get("latencyMs", 0)
        if mode == "return" and not latency:
            settling()
            return behaviour.get("value")
        if mode == "throw":
            error = HostError(behaviour["message"])
            self.thrown.setdefault(method, []).append(error)
            raise error

        async def later() -> Any:
            try:
                if mode == "hang":
                    await asyncio.get_running_loop().create_future()
                if latency:
                    await self.clock.sleep(latency)
            except asyncio.CancelledError:
                if aborted is not None:
                    self.aborted.append(aborted)
                raise
            if mode == "reject":
                error = HostError(behaviour["message"])
                self.thrown.setdefault(method, []).append(error)
                raise error
            if mode == "return":
                settling()
                return behaviour.get("value")
            answer = produce()
            answer = await answer if inspect.isawaitable(answer) else answer
            settling()
            return answer

        return later()


def _leak_wire(leak: sr.NewLeak) -> dict[str, Any]:
    wire = leak.to_dict()
    assert isinstance(wire.pop("failedAt"), int), "leak.failed_at is epoch milliseconds"
    return wire


class FleetStoreProxy:
    """The native in-memory store behind a proxy that records every call (in
    the vectors' camelCase spelling, times relative) and applies scripts."""

    def __init__(self, fixture: FleetFixture, native: Any) -> None:
        self._fixture = fixture
        self._native = native
        self._scripts: dict[str, Any] = fixture.vector["store"].get("scripts") or {}

    def _call(self, method: str, first: str, args: list[Any], produce: Callable[[], Any]) -> Any:
        fixture = self._fixture
        fixture.record({"on": "store", "method": method, "args": args})
        script = self._scripts.get(f"{method}:{first}") or self._scripts.get(method)
        return fixture.perform(method, script, produce)

    def get(self, key: str) -> Any:
        return self._call("get", key, [key], lambda: self._native.get(key))

    def upsert(self, record: sr.SandboxInstanceRecord) -> Any:
        return self._native.upsert(record)

    def delete(self, key: str) -> Any:
        return self._call("delete", key, [key], lambda: self._native.delete(key))

    def list_stale(self, older_than: int, limit: int) -> Any:
        args = [self._fixture.relative(older_than), limit]
        return self._call("listStale", "", args, lambda: self._native.list_stale(older_than, limit))

    def expire_idle(self, key: str, updated_at: int, leak: sr.NewLeak) -> Any:
        args = [key, self._fixture.relative(updated_at), _leak_wire(leak)]
        return self._call("expireIdle", key, args, lambda: self._native.expire_idle(key, updated_at, leak))

    def sandbox_references(self, provider: str, destroyed_since: int) -> Any:
        args = [provider, self._fixture.relative(destroyed_since)]
        return self._call("sandboxReferences", provider, args, lambda: self._native.sandbox_references(provider, destroyed_since))

    def registered_sandboxes(self, provider: str, since: int) -> Any:
        args = [provider, self._fixture.relative(since)]
        return self._call("registeredSandboxes", provider, args, lambda: self._native.registered_sandboxes(provider, since))

    # The scoped reads (README "Scoped sweeps"): the native store answers them.

    def sweep_mark(self, provider: str) -> Any:
        return self._call("sweepMark", provider, [provider], lambda: self._native.sweep_mark(provider))

    def referenced_among(self, provider: str, ids: list[str], destroyed_since: int, mark: int) -> Any:
        assert isinstance(ids, list) and all(isinstance(one, str) for one in ids), ids
        assert isinstance(mark, int) and not isinstance(mark, bool), mark
        # The mark is the store's own number: recorded as "$mark".
        args = [provider, list(ids), self._fixture.relative(destroyed_since), "$mark"]
        among = lambda: self._native.referenced_among(provider, ids, destroyed_since, mark)  # noqa: E731
        return self._call("referencedAmong", provider, args, among)

    def registered_among(self, provider: str, ids: list[str], since: int) -> Any:
        assert isinstance(ids, list) and all(isinstance(one, str) for one in ids), ids
        args = [provider, list(ids), self._fixture.relative(since)]
        return self._call("registeredAmong", provider, args, lambda: self._native.registered_among(provider, ids, since))

    def lookup_candidates(self, provider: str, since: int, limit: int) -> Any:
        args = [provider, self._fixture.relative(since), limit]
        return self._call("lookupCandidates", provider, args, lambda: self._native.lookup_candidates(provider, since, limit))

    def lookup_checked(self, provider: str, gone: list[str], checked: list[str], now: int) -> Any:
        assert isinstance(gone, list) and isinstance(checked, list), (gone, checked)
        args = [provider, list(gone), list(checked), self._fixture.relative(now)]
        checked_now = lambda: self._native.lookup_checked(provider, gone, checked, now)  # noqa: E731
        return self._call("lookupChecked", provider, args, checked_now)

    def record_leak(self, leak: sr.NewLeak, reason: sr.LeakReason, next_attempt_at: int) -> Any:
        assert isinstance(reason, sr.LeakReason)
        args = [_leak_wire(leak), reason.value, self._fixture.relative(next_attempt_at)]
        return self._call("recordLeak", leak.key, args, lambda: self._native.record_leak(leak, reason, next_attempt_at))

    def due_leaks(self, provider: str, limit: int, lease_ms: int | None, now: int) -> Any:
        args = [provider, limit, lease_ms, self._fixture.relative(now)]
        return self._call("dueLeaks", provider, args, lambda: self._native.due_leaks(provider, limit, lease_ms, now))

    def defer_leak(self, entry: sr.LeakEntry, message: str, failed_at: int, next_attempt_at: int) -> Any:
        fixture = self._fixture
        args = [entry.provider_sandbox_id, message, fixture.relative(failed_at), fixture.relative(next_attempt_at)]
        defer = lambda: self._native.defer_leak(entry, message, failed_at, next_attempt_at)  # noqa: E731
        return self._call("deferLeak", entry.provider_sandbox_id, args, defer)

    def resolve_leak(self, entry: sr.LeakEntry) -> Any:
        sandbox_id = entry.provider_sandbox_id
        return self._call("resolveLeak", sandbox_id, [sandbox_id], lambda: self._native.resolve_leak(entry))

    def claim_sweep(self, provider: str, holder: str, lease_ms: int, now: int) -> Any:
        args = [provider, "$holder", lease_ms, self._fixture.relative(now)]
        return self._call("claimSweep", provider, args, lambda: self._native.claim_sweep(provider, holder, lease_ms, now))

    def release_sweep(self, provider: str, holder: str) -> Any:
        args = [provider, "$holder"]
        return self._call("releaseSweep", provider, args, lambda: self._native.release_sweep(provider, holder))

    def append_audit(self, entries: list[sr.AuditEntry]) -> Any:
        assert all(isinstance(entry, sr.AuditEntry) for entry in entries)
        return self._call("appendAudit", "", [len(entries)], lambda: self._native.append_audit(entries))

    def prune(self, provider: str, registry_before: int, audit_before: int) -> Any:
        fixture = self._fixture
        args = [provider, fixture.relative(registry_before), fixture.relative(audit_before)]
        return self._call("prune", provider, args, lambda: self._native.prune(provider, registry_before, audit_before))


class FleetLedgerStoreProxy(FleetStoreProxy):
    """The proxy of a store with a leak ledger."""

    def delete_recording_leak(self, key: str, leak: sr.NewLeak) -> Any:
        args = [key, _leak_wire(leak)]
        return self._call("deleteRecordingLeak", key, args, lambda: self._native.delete_recording_leak(key, leak))


class FleetProvider:
    """A scripted provider of a fleet case (no ``list``: no orphan sweep)."""

    def __init__(self, fixture: FleetFixture, spec: dict[str, Any]) -> None:
        self._fixture = fixture
        self._spec = spec
        self.name: str = spec["name"]
        self.owner: str | None = spec.get("owner")

    def destroy(self, sandbox_id: str) -> Any:
        fixture = self._fixture
        fixture.record({"on": "provider", "method": "destroy", "args": [{"id": sandbox_id}], "name": self.name})
        behaviour = (self._spec.get("destroy") or {}).get(sandbox_id)
        return fixture.perform("destroy", behaviour, lambda: None, aborted=sandbox_id)


class ListingFleetProvider(FleetProvider):
    """A scripted provider that lists its sandboxes (``createdAt`` relative in the case)."""

    def list(self) -> Any:
        fixture = self._fixture
        fixture.record({"on": "provider", "method": "list", "args": [], "name": self.name})
        behaviour = dict(self._spec["list"])
        if "value" in behaviour:
            start = fixture.clock.start
            behaviour["value"] = [
                {**sandbox, "createdAt": sandbox["createdAt"] + start}
                if sandbox.get("createdAt") is not None
                else sandbox
                for sandbox in behaviour["value"]
            ]
        meanwhile = lambda: _meanwhile(fixture, behaviour.get("meanwhile", []))  # noqa: E731
        return fixture.perform("list", behaviour, lambda: [], aborted=f"list:{self.name}", settling=meanwhile)


def _meanwhile(fixture: FleetFixture, ops: list[dict[str, Any]]) -> None:
    """A listing's ``meanwhile`` (README "Meanwhile"): what other processes do
    to the store while the listing is out, applied to the native store as it
    settles (not recorded as calls)."""
    native = fixture.native._native  # the store's synchronous native half: applied at once
    for op in ops:
        if op["op"] == "delete":
            native.delete(op["key"])
        elif op["op"] == "upsert":
            record = op["record"]
            native.upsert(sr.SandboxInstanceRecord.from_dict({**record, "updatedAt": record["updatedAt"] + fixture.clock.start}))
        elif op["op"] == "resolveLeaks":
            for entry in native.claim_leaks(op["provider"], 1000, 60.0):
                assert native.resolve_leak(entry)
        else:
            raise AssertionError(f"unknown meanwhile op {op['op']!r}")


def _absolute(fixture: FleetFixture, behaviour: dict[str, Any]) -> dict[str, Any]:
    """A listing behaviour with its sandboxes' relative ``createdAt`` made absolute."""
    behaviour = dict(behaviour)
    if "value" in behaviour:
        start = fixture.clock.start
        behaviour["value"] = [
            {**sandbox, "createdAt": sandbox["createdAt"] + start} if sandbox.get("createdAt") is not None else sandbox
            for sandbox in behaviour["value"]
        ]
    return behaviour


class LookingFleetProvider(ListingFleetProvider):
    """A scripted provider that also looks sandboxes up by id."""

    def lookup(self, ids: list[str]) -> Any:
        fixture = self._fixture
        assert isinstance(ids, list) and all(isinstance(one, str) for one in ids), ids
        fixture.record({"on": "provider", "method": "lookup", "args": [{"ids": list(ids)}], "name": self.name})
        return fixture.perform("lookup", _absolute(fixture, self._spec["lookup"]), lambda: [], aborted=f"lookup:{self.name}")


def _fleet_options(options: dict[str, Any]) -> dict[str, Any]:
    """camelCase options as Python keywords: ``fooMs`` → ``foo`` in seconds."""
    keywords: dict[str, Any] = {}
    for name, value in options.items():
        if name.endswith("Ms"):
            name, value = name[:-2], value / 1000
        snake = "".join(f"_{char.lower()}" if char.isupper() else char for char in name)
        keywords[snake] = value
    return keywords


async def _seed(vector: Vector, store: Any, start: int) -> None:
    for instance in vector["store"].get("instances", []):
        await store.upsert(sr.SandboxInstanceRecord.from_dict({**instance, "updatedAt": instance["updatedAt"] + start}))
    # `store.registered`: records written, then deleted, so the registry names
    # their sandboxes with no record left (seeded on the native store: no call is recorded).
    for registered in vector["store"].get("registered", []):
        record = sr.SandboxInstanceRecord.from_dict({**registered, "updatedAt": registered["updatedAt"] + start})
        await store.upsert(record)
        await store.delete(record.key)
    for leak in vector["store"].get("leaks", []):
        new = sr.NewLeak(
            leak["key"], leak["provider"], leak["providerSandboxId"], leak["runId"], leak["errorMessage"], leak["failedAt"] + start
        )
        for _ in range(leak.get("attempts", 1)):
            await store.record_leak(new, leak.get("reason", "destroy-failed"), leak["nextAttemptAt"] + start)
    for sweep in vector["store"].get("sweeps", []):
        assert await store.claim_sweep(sweep["provider"], sweep["holder"], sweep["leaseMs"], start)
    for row in vector["store"].get("audit", []):
        await store.append_audit([sr.AuditEntry.from_dict({**row, "at": row["at"] + start})])


async def run_fleet_vector(vector: Vector) -> None:
    """Runs one fleet case on the Python driver and the virtual clock against
    the native in-memory store (behind a recording proxy) and scripted
    providers; asserts everything the case expects."""
    from sandbox_reclaim import _flows

    clock = VirtualClock(vector.get("clock", {}).get("start", DEFAULT_CLOCK_START))
    start = clock.start
    fixture = FleetFixture(vector, clock)
    ledger = vector["store"].get("ledger", True) is not False
    native: Any = sr.InMemorySandboxInstanceStore.with_ledger() if ledger else sr.InMemorySandboxInstanceStore()
    await _seed(vector, native, start)
    fixture.native = native
    store = FleetLedgerStoreProxy(fixture, native) if ledger else FleetStoreProxy(fixture, native)
    providers = [
        (LookingFleetProvider if "lookup" in spec else ListingFleetProvider if "list" in spec else FleetProvider)(
            fixture, spec
        )
        for spec in vector["providers"]
    ]
    options = _fleet_options(vector.get("options", {}))
    if vector.get("progress"):
        options["on_progress"] = (
            _throwing_progress(fixture.progress) if vector.get("progressThrows") else fixture.progress.append
        )
    stop: asyncio.Event | None = None
    if "stopAtMs" in vector:
        stop = asyncio.Event()
        event = stop
        clock.sleep_until(start + vector["stopAtMs"]).add_done_callback(lambda _: event.set())

    raw: list[Any] = []
    drive = getattr(_flows, "drive")  # noqa: B009 - the driver the declarations call

    async def recording_drive(*args: Any, **kwargs: Any) -> Any:
        answer = await drive(*args, **kwargs)
        raw.append(answer)
        return answer

    async def call() -> Any:
        if vector["api"] == "reclaimAll":
            records = [sr.RunRecord.from_dict(record) for record in vector["records"]]
            logger = RecordingLogger(fixture.logs, vector.get("loggerThrows")) if vector.get("logger") else None
            return await sr.reclaim_all(records, providers=providers, instances=store, logger=logger, stop=stop, **options)
        return await sr.reconcile(providers=providers, instances=store, stop=stop, **options)

    async def outcome() -> tuple[Any, BaseException | None]:
        try:
            return await call(), None
        except Exception as error:  # noqa: BLE001 - the case says which error
            return None, error

    previous = _driver.set_clock(clock)
    setattr(_flows, "drive", recording_drive)  # noqa: B010
    try:
        task = asyncio.ensure_future(outcome())
        await clock.run_until(task)
        result, error = task.result()
    finally:
        _driver.set_clock(previous)
        setattr(_flows, "drive", drive)  # noqa: B010

    name = vector["name"]
    expected = vector["expect"]
    if "error" in expected:
        assert error is not None, f"{name}: expected an error, got {result!r}"
        want = expected["error"]
        assert want["kind"] == "hostError"
        assert any(error is thrown for thrown in fixture.thrown.get(want["source"], [])), (
            f"{name}: raises the very error {want['source']} raised, got {error!r}"
        )
    else:
        assert error is None, f"{name}: expected a report, got {error!r}"
        report_type = sr.FleetReclaimReport if vector["api"] == "reclaimAll" else sr.ReconcileReport
        assert isinstance(result, report_type)
        assert result.to_dict() == raw[0], f"{name}: to_dict() is the core's JSON report"
        if "report" in expected:
            partial_match(result.to_dict(), expected["report"])

    wanted = expected["calls"]
    calls = [
        call if index < len(wanted) and "at" in wanted[index] else {k: v for k, v in call.items() if k != "at"}
        for index, call in enumerate(fixture.calls)
    ]
    assert calls == wanted, f"{name}: calls"
    check_fleet_logs(vector, fixture)
    if "progress" in expected:
        assert fixture.progress == expected["progress"], f"{name}: progress"
    records = [{**record.to_dict(), "updatedAt": record.updated_at - start} for record in native.records()]
    assert records == expected["instancesAfter"], f"{name}: records afterwards"
    if ledger:
        if "leaksAfter" in expected:
            leaks = [leak.to_dict() for leak in await native.list_leaks()]
            for leak in leaks:
                assert isinstance(leak.pop("failedAt"), int)
            assert leaks == expected["leaksAfter"], f"{name}: leak ledger afterwards"
        if "auditAfter" in expected:
            audit = [{**row.to_dict(), "at": row.at - start} for row in await native.list_audit(None, 100_000)]
            assert audit == expected["auditAfter"], f"{name}: audit log afterwards"
    assert fixture.aborted == expected.get("aborted", []), f"{name}: cancelled calls"
    if "elapsedMs" in expected:
        assert clock.now() - start == expected["elapsedMs"], f"{name}: virtual time at the end"


def check_fleet_logs(vector: Vector, fixture: FleetFixture) -> None:
    expected = vector["expect"].get("logs", [])
    logs = fixture.logs
    assert len(logs) == len(expected), f"number of log lines: {logs}"
    for index, (line, (level, message, meta)) in enumerate(zip(expected, logs)):
        assert (level, message) == (line["level"], line["message"]), f"log {index}"
        assert list(meta) == list(line["meta"]), f"log {index} meta keys in order"
        for key, value in line["meta"].items():
            if isinstance(value, dict) and "$hostError" in value:
                thrown = fixture.thrown.get(value["$hostError"], [])
                assert any(meta[key] is error for error in thrown), f"log {index} meta.{key} is the host's error"
            elif isinstance(value, dict) and "$timeoutError" in value:
                want = value["$timeoutError"]
                error = meta[key]
                assert isinstance(error, sr.SandboxDestroyTimeoutError) and isinstance(error, TimeoutError)
                assert (error.provider_sandbox_id, error.timeout_ms, str(error)) == (
                    want["providerSandboxId"], want["timeoutMs"], want["message"]
                )
            else:
                assert meta[key] == value, f"log {index} meta.{key}"
