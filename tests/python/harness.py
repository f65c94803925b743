"""Runs the parity vectors of tests/vectors/ against the Python binding, with
the same expectations as the Rust and Node runners (format:
tests/vectors/README.md). Python spellings: the ledger method is
``delete_recording_leak`` and ``destroy`` takes the id itself (JS passes
``{id}``)."""

from __future__ import annotations

import copy
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sandbox_reclaim as sr

VECTORS_DIR = Path(__file__).resolve().parent.parent / "vectors"

Vector = dict[str, Any]


def load_vectors() -> list[Vector]:
    """Every case of every vector file, in file order."""
    cases: list[Vector] = []
    for path in sorted(VECTORS_DIR.glob("*.json")):
        cases.extend(json.loads(path.read_text(encoding="utf-8"))["cases"])
    return cases


class HostError(Exception):
    """The error a scripted host method raises (JS: ``new Error(message)``)."""


@dataclass
class Fixture:
    """Scripted store, provider and logger that record every call."""

    vector: Vector
    calls: list[dict[str, Any]] = field(default_factory=list)
    logs: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    thrown: dict[str, BaseException] = field(default_factory=dict)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    leaks: list[dict[str, Any]] = field(default_factory=list)

    def perform(self, behaviour: dict[str, Any] | None, source: str, produce: Callable[[], Any]) -> Any:
        """Acts out a scripted behaviour: returns the value, raises, or returns an awaitable."""
        mode = (behaviour or {}).get("mode", "resolve")
        if mode == "resolve":

            async def resolve() -> Any:
                return produce()

            return resolve()
        if mode == "return":
            produced = produce()
            assert behaviour is not None
            return behaviour["value"] if "value" in behaviour else produced
        error = HostError(behaviour["message"] if behaviour else "")
        self.thrown[source] = error
        if mode == "throw":
            raise error
        if mode == "reject":

            async def reject() -> Any:
                raise error

            return reject()
        raise AssertionError(f"unknown behaviour mode {mode}")


class VectorStore:
    def __init__(self, fixture: Fixture) -> None:
        self._fixture = fixture

    def get(self, key: str) -> Any:
        fixture = self._fixture
        fixture.calls.append({"on": "store", "method": "get", "args": [key]})

        def produce() -> sr.SandboxInstanceRecord | None:
            found = fixture.records.get(key)
            return None if found is None else sr.SandboxInstanceRecord.from_dict(found)

        return fixture.perform(fixture.vector["store"].get("get"), "get", produce)

    def upsert(self, record: sr.SandboxInstanceRecord) -> None:
        self._fixture.records[record.key] = record.to_dict()

    def delete(self, key: str) -> Any:
        fixture = self._fixture
        fixture.calls.append({"on": "store", "method": "delete", "args": [key]})
        return fixture.perform(fixture.vector["store"].get("delete"), "delete", lambda: fixture.records.pop(key, None))


class VectorLedgerStore(VectorStore):
    def delete_recording_leak(self, key: str, leak: sr.NewLeak) -> Any:
        fixture = self._fixture
        assert isinstance(leak, sr.NewLeak)
        assert isinstance(leak.failed_at, int) and leak.failed_at > 0, "leak.failed_at is epoch milliseconds"
        rest = leak.to_dict()
        del rest["failedAt"]
        fixture.calls.append({"on": "store", "method": "delete_recording_leak", "args": [key, rest]})

        def produce() -> None:
            fixture.records.pop(key, None)
            entry = {k: v for k, v in rest.items() if k != "errorMessage"}
            fixture.leaks.append({**entry, "lastError": rest["errorMessage"], "attempts": 1})

        return fixture.perform(fixture.vector["store"].get("delete"), "delete", produce)


class VectorProvider:
    def __init__(self, fixture: Fixture) -> None:
        self._fixture = fixture
        self.name: str = fixture.vector["provider"]["name"]

    def destroy(self, sandbox_id: str) -> Any:
        fixture = self._fixture
        fixture.calls.append({"on": "provider", "method": "destroy", "args": [sandbox_id]})
        behaviour = (fixture.vector["provider"].get("destroy") or {}).get(sandbox_id)
        return fixture.perform(behaviour, "destroy", lambda: None)


class RecordingLogger:
    def __init__(self, logs: list[tuple[str, str, dict[str, Any]]]) -> None:
        self._logs = logs

    def warn(self, message: str, meta: dict[str, Any]) -> None:
        self._logs.append(("warn", message, meta))

    def errors(self, message: str, meta: dict[str, Any]) -> None:
        self._logs.append(("errors", message, meta))

    def sandbox(self, message: str, meta: dict[str, Any]) -> None:
        self._logs.append(("sandbox", message, meta))


def expected_calls(vector: Vector) -> list[dict[str, Any]]:
    """The vector's calls in Python spelling."""
    calls = []
    for call in vector["expect"]["calls"]:
        if call["method"] == "destroy":
            calls.append({**call, "args": [call["args"][0]["id"]]})
        elif call["method"] == "deleteRecordingLeak":
            calls.append({**call, "method": "delete_recording_leak"})
        else:
            calls.append(call)
    return calls


async def call_api(
    vector: Vector, record: Any, provider: Any, instances: Any, logger: Any
) -> tuple[Any, BaseException | None]:
    """Calls the vector's API; returns (result, error)."""
    call: Callable[[], Awaitable[Any]]
    if vector["api"] == "reclaimSandbox":
        call = lambda: sr.reclaim_sandbox(record, provider=provider, instances=instances, logger=logger)  # noqa: E731
    else:
        call = lambda: sr.sandbox_reclaimer(provider=provider, instances=instances, logger=logger)(record)  # noqa: E731
    try:
        return await call(), None
    except Exception as error:  # noqa: BLE001 - the vector says which error
        return None, error


def check_outcome(vector: Vector, result: Any, error: BaseException | None, thrown: dict[str, BaseException]) -> None:
    expected = vector["expect"]
    if "error" not in expected:
        assert error is None, f"expected success, got {error!r}"
        if expected.get("result") is None:
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
            else:
                assert meta[key] == value, f"log {index} meta.{key}"


async def run_vector(vector: Vector) -> None:
    """Runs one vector against Python host objects and asserts every expectation."""
    fixture = Fixture(vector)
    for instance in vector["store"]["instances"]:
        fixture.records[instance["key"]] = copy.deepcopy(instance)
    store = VectorLedgerStore(fixture) if vector["store"].get("ledger") else VectorStore(fixture)
    logger = RecordingLogger(fixture.logs) if vector["logger"] else None
    record = sr.RunRecord.from_dict(vector["record"])

    result, error = await call_api(vector, record, VectorProvider(fixture), store, logger)

    check_outcome(vector, result, error, fixture.thrown)
    assert fixture.calls == expected_calls(vector), "calls on store and provider"
    check_logs(vector, fixture.logs, fixture.thrown)
    assert sorted(fixture.records.values(), key=lambda r: r["key"]) == vector["expect"]["instancesAfter"]
    if "leaksAfter" in vector["expect"]:
        assert fixture.leaks == vector["expect"]["leaksAfter"], "leak ledger afterwards"


def runs_on_native_store(vector: Vector) -> bool:
    """Vectors without scripted store faults also run on the native store."""
    return "get" not in vector["store"] and "delete" not in vector["store"]


async def run_vector_native_store(vector: Vector) -> None:
    """The same vector with the native in-memory store (answered inside the
    machine's native calls): same outcome, provider calls, logs, contents."""
    fixture = Fixture(vector)
    store = sr.InMemorySandboxInstanceStore.with_ledger() if vector["store"].get("ledger") else sr.InMemorySandboxInstanceStore()
    for instance in vector["store"]["instances"]:
        store.upsert(sr.SandboxInstanceRecord.from_dict(instance))
    logger = RecordingLogger(fixture.logs) if vector["logger"] else None
    record = sr.RunRecord.from_dict(vector["record"])

    result, error = await call_api(vector, record, VectorProvider(fixture), store, logger)

    check_outcome(vector, result, error, fixture.thrown)
    provider_calls = [call for call in expected_calls(vector) if call["on"] == "provider"]
    assert fixture.calls == provider_calls, "calls on the provider"
    check_logs(vector, fixture.logs, fixture.thrown)
    assert [r.to_dict() for r in store.records()] == vector["expect"]["instancesAfter"]
    if "leaksAfter" in vector["expect"]:
        assert isinstance(store, sr.InMemoryLeakLedgerStore)
        leaks = [leak.to_dict() for leak in store.list_leaks()]
        for leak in leaks:
            assert isinstance(leak.pop("failedAt"), int)
        assert leaks == vector["expect"]["leaksAfter"]
