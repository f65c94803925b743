"""Records and outcomes: frozen dataclasses with snake_case fields whose
``from_dict``/``to_dict`` speak the camelCase wire form of TanStack's
JavaScript packages, so a record a Node process wrote reads back here
unchanged (and the other way round)."""

from __future__ import annotations

import copy
import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field as _field
from typing import Any, TypeAlias

from . import _native

JsonValue: TypeAlias = Any
"""An opaque JSON value (``error`` and ``usage`` belong to TanStack and grow)."""


class ReclaimOutcome(str, enum.Enum):
    """How a reclaim ended. The values are the reference's five strings."""

    NO_SANDBOX_KEY = "no-sandbox-key"
    """The run record has no ``sandbox_key``: it never ran in a sandbox."""
    NOT_FOUND = "not-found"
    """No instance record for the key: someone already reclaimed it."""
    PROVIDER_MISMATCH = "provider-mismatch"
    """The instance belongs to another provider; nothing was touched."""
    DESTROYED = "destroyed"
    """The provider destroyed the sandbox and the record was deleted."""
    DESTROY_FAILED = "destroy-failed"
    """Destroy failed; the record was deleted anyway (the sandbox may still run)."""

    def __str__(self) -> str:
        return self.value


class RunStatus(str, enum.Enum):
    """Lifecycle state of an agent run (TanStack's ``RunStatus``)."""

    RUNNING = "running"
    INTERRUPTED = "interrupted"
    COMPLETED = "completed"
    FAILED = "failed"
    ABORTED = "aborted"

    def __str__(self) -> str:
        return self.value

    @property
    def is_terminal(self) -> bool:
        """Whether no further events will be appended: only then may its sandbox go."""
        return self in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.ABORTED)


def _field_error(owner: str, field: str, wire: str, expected: str, value: object) -> TypeError:
    return TypeError(f"{owner}.{field} (wire `{wire}`) must be {expected}, got {type(value).__name__}")


def _check_text(owner: str, field: str, wire: str, value: object, optional: bool = False) -> None:
    if isinstance(value, str) or (optional and value is None):
        return
    raise _field_error(owner, field, wire, "a str" + (" or None" if optional else ""), value)


def _check_number(owner: str, field: str, wire: str, value: object, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _field_error(owner, field, wire, "a number (epoch milliseconds)" + (" or None" if optional else ""), value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{owner}.{field} (wire `{wire}`) must be finite, got {value!r}")


def _check_whole(owner: str, field: str, wire: str, value: object, count: bool = False) -> None:
    """A whole number the core holds: epoch milliseconds, or a ``count``
    (its range and texts are the core's: ``proto/src/options/arguments.rs``)."""
    _native.check_record_whole(owner, field, wire, value, count)


def _check_json(owner: str, field: str, wire: str, value: object) -> None:
    """Rejects what JSON cannot carry, so ``to_dict`` output always serialises."""
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if item is None or isinstance(item, (str, bool, int)):
            continue
        if isinstance(item, float):
            if math.isfinite(item):
                continue
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
            continue
        elif isinstance(item, dict):
            if all(isinstance(key, str) for key in item):
                stack.extend(item.values())
                continue
        raise TypeError(f"{owner}.{field} (wire `{wire}`) must be JSON (dict with str keys, list, str, number, bool, None); found {type(item).__name__}")


def _read_wire(owner: str, data: object, fields: Mapping[str, str], required: tuple[str, ...]) -> dict[str, Any]:
    """Maps a wire-form mapping to constructor keywords, naming any bad key."""
    if not isinstance(data, Mapping):
        raise TypeError(f"{owner}.from_dict expects a mapping in the camelCase wire form, got {type(data).__name__}")
    for wire in data:
        if wire not in fields:
            raise ValueError(f"{owner}.from_dict: unknown field `{wire}`")
    for wire in required:
        if wire not in data:
            raise ValueError(f"{owner}.from_dict: missing required field `{wire}`")
    return {fields[wire]: value for wire, value in data.items() if value is not None}


def _write_wire(record: object, fields: Mapping[str, str]) -> dict[str, Any]:
    wire: dict[str, Any] = {}
    for name, field in fields.items():
        value = getattr(record, field)
        if value is None:
            continue
        if isinstance(value, enum.Enum):
            value = value.value
        elif isinstance(value, (dict, list)):
            value = copy.deepcopy(value)
        wire[name] = value
    return wire


_RUN_WIRE = {
    "runId": "run_id",
    "threadId": "thread_id",
    "status": "status",
    "startedAt": "started_at",
    "finishedAt": "finished_at",
    "error": "error",
    "usage": "usage",
    "sandboxKey": "sandbox_key",
    "detachedSince": "detached_since",
    "cancelRequested": "cancel_requested",
    "driverEpoch": "driver_epoch",
}


@dataclass(frozen=True, slots=True)
class RunRecord:
    """Durable bookkeeping for one agent run (TanStack's ``RunRecord``).

    The reclaimer reads only ``run_id`` and ``sandbox_key``; every other field
    is carried so the record round-trips through every binding unchanged.
    """

    run_id: str
    thread_id: str
    status: RunStatus
    started_at: float
    finished_at: float | None = None
    error: JsonValue | None = None
    usage: JsonValue | None = None
    sandbox_key: str | None = None
    detached_since: float | None = None
    cancel_requested: bool | None = None
    driver_epoch: float | None = None

    def __post_init__(self) -> None:
        owner = "RunRecord"
        _check_text(owner, "run_id", "runId", self.run_id)
        _check_text(owner, "thread_id", "threadId", self.thread_id)
        if not isinstance(self.status, RunStatus):
            if not isinstance(self.status, str):
                raise _field_error(owner, "status", "status", "a RunStatus", self.status)
            try:
                object.__setattr__(self, "status", RunStatus(self.status))
            except ValueError:
                allowed = ", ".join(status.value for status in RunStatus)
                raise ValueError(f"RunRecord.status must be one of {allowed}; got {self.status!r}") from None
        _check_number(owner, "started_at", "startedAt", self.started_at)
        _check_number(owner, "finished_at", "finishedAt", self.finished_at, optional=True)
        _check_json(owner, "error", "error", self.error)
        _check_json(owner, "usage", "usage", self.usage)
        _check_text(owner, "sandbox_key", "sandboxKey", self.sandbox_key, optional=True)
        _check_number(owner, "detached_since", "detachedSince", self.detached_since, optional=True)
        if self.cancel_requested is not None and not isinstance(self.cancel_requested, bool):
            raise _field_error(owner, "cancel_requested", "cancelRequested", "a bool or None", self.cancel_requested)
        _check_number(owner, "driver_epoch", "driverEpoch", self.driver_epoch, optional=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunRecord:
        """Reads the camelCase wire form (``JSON.parse`` of a Node record).

        Unknown keys are refused (a snake_case key is a likely typo), and a
        ``null`` optional reads as absent. ``error``/``usage`` are deep-copied.
        """
        keywords = _read_wire("RunRecord", data, _RUN_WIRE, ("runId", "threadId", "status", "startedAt"))
        for field in ("error", "usage"):
            if field in keywords:
                keywords[field] = copy.deepcopy(keywords[field])
        return cls(**keywords)

    def to_dict(self) -> dict[str, Any]:
        """The camelCase wire form, absent optionals omitted (as ``JSON.stringify`` does)."""
        return _write_wire(self, _RUN_WIRE)


_INSTANCE_WIRE = {
    "key": "key",
    "provider": "provider",
    "providerSandboxId": "provider_sandbox_id",
    "latestSnapshotId": "latest_snapshot_id",
    "threadId": "thread_id",
    "latestRunId": "latest_run_id",
    "updatedAt": "updated_at",
}


@dataclass(frozen=True, slots=True)
class SandboxInstanceRecord:
    """What an instance store keeps per sandbox key: which provider owns the
    sandbox, and its id there (``SandboxRecord`` in ``@tanstack/ai-sandbox``).

    Field order is part of the native store's contract (it builds records
    positionally): key, provider, provider_sandbox_id, thread_id, updated_at,
    latest_snapshot_id, latest_run_id.
    """

    key: str
    provider: str
    provider_sandbox_id: str
    thread_id: str
    updated_at: int
    latest_snapshot_id: str | None = None
    latest_run_id: str | None = None

    def __post_init__(self) -> None:
        owner = "SandboxInstanceRecord"
        _check_text(owner, "key", "key", self.key)
        _check_text(owner, "provider", "provider", self.provider)
        _check_text(owner, "provider_sandbox_id", "providerSandboxId", self.provider_sandbox_id)
        _check_text(owner, "thread_id", "threadId", self.thread_id)
        _check_whole(owner, "updated_at", "updatedAt", self.updated_at)
        _check_text(owner, "latest_snapshot_id", "latestSnapshotId", self.latest_snapshot_id, optional=True)
        _check_text(owner, "latest_run_id", "latestRunId", self.latest_run_id, optional=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SandboxInstanceRecord:
        """Reads the camelCase wire form. A whole-number float ``updatedAt`` is accepted."""
        keywords = _read_wire(
            "SandboxInstanceRecord", data, _INSTANCE_WIRE, ("key", "provider", "providerSandboxId", "threadId", "updatedAt")
        )
        updated_at = keywords.get("updated_at")
        if isinstance(updated_at, float) and updated_at.is_integer():
            keywords["updated_at"] = int(updated_at)
        return cls(**keywords)

    def to_dict(self) -> dict[str, Any]:
        """The camelCase wire form, absent optionals omitted."""
        return _write_wire(self, _INSTANCE_WIRE)


_NEW_LEAK_WIRE = {
    "key": "key",
    "provider": "provider",
    "providerSandboxId": "provider_sandbox_id",
    "runId": "run_id",
    "errorMessage": "error_message",
    "failedAt": "failed_at",
}


@dataclass(frozen=True, slots=True)
class NewLeak:
    """The leak a ledger store records when a destroy failed, handed to
    ``instances.delete_recording_leak(key, leak)``. ``error_message`` is
    ``str()`` of the destroy's exception; ``failed_at`` is epoch milliseconds."""

    key: str
    provider: str
    provider_sandbox_id: str
    run_id: str
    error_message: str
    failed_at: int

    def __post_init__(self) -> None:
        # Only the number: the text fields pass through to a host ledger
        # store as the reclaim found them.
        _check_whole("NewLeak", "failed_at", "failedAt", self.failed_at)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NewLeak:
        """Reads the camelCase wire form. Every field is required."""
        keywords = _read_wire("NewLeak", data, _NEW_LEAK_WIRE, tuple(_NEW_LEAK_WIRE))
        failed_at = keywords.get("failed_at")
        if isinstance(failed_at, float) and failed_at.is_integer():
            keywords["failed_at"] = int(failed_at)
        return cls(**keywords)

    def to_dict(self) -> dict[str, Any]:
        """The camelCase wire form (the Node binding's ``deleteRecordingLeak`` argument)."""
        return _write_wire(self, _NEW_LEAK_WIRE)


_LEAK_ENTRY_WIRE = {
    "key": "key",
    "provider": "provider",
    "providerSandboxId": "provider_sandbox_id",
    "runId": "run_id",
    "lastError": "last_error",
    "failedAt": "failed_at",
    "attempts": "attempts",
    "claim": "claim",
}


@dataclass(frozen=True, slots=True)
class LeakEntry:
    """A sandbox that may still be running: its destroy failed and its
    instance record is gone. Field order is the native store's contract."""

    key: str
    provider: str
    provider_sandbox_id: str
    run_id: str
    last_error: str
    failed_at: int
    attempts: int
    claim: int | None = _field(default=None, kw_only=True)
    """The claim it was handed out under (``claim_leaks``, ``due_leaks``):
    pass the entry back as it came, and a write lands only while that claim
    still holds. ``None`` on an entry that was only listed."""

    def __post_init__(self) -> None:
        owner = "LeakEntry"
        for field, wire in (("key", "key"), ("provider", "provider"), ("provider_sandbox_id", "providerSandboxId")):
            _check_text(owner, field, wire, getattr(self, field))
        _check_text(owner, "run_id", "runId", self.run_id)
        _check_text(owner, "last_error", "lastError", self.last_error)
        _check_whole(owner, "failed_at", "failedAt", self.failed_at)
        _check_whole(owner, "attempts", "attempts", self.attempts, count=True)
        if self.claim is not None:
            _check_whole(owner, "claim", "claim", self.claim)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LeakEntry:
        """Reads the camelCase wire form (a Node ``LeakEntry``). Every field but ``claim`` is required."""
        keywords = _read_wire("LeakEntry", data, _LEAK_ENTRY_WIRE, _LEAK_ENTRY_REQUIRED)
        for field in ("failed_at", "attempts", "claim"):
            value = keywords.get(field)
            if isinstance(value, float) and value.is_integer():
                keywords[field] = int(value)
        return cls(**keywords)

    def to_dict(self) -> dict[str, Any]:
        """The camelCase wire form."""
        return _write_wire(self, _LEAK_ENTRY_WIRE)


@dataclass(frozen=True, slots=True)
class SandboxHandle:
    """A sandbox a managed provider created or listed."""

    key: str
    """The sandbox key it was created for."""
    id: str
    """The provider-side id: an instance record's ``provider_sandbox_id``."""
    created_at: int
    """Creation time, epoch milliseconds."""


@dataclass(frozen=True, slots=True)
class ExecResult:
    """What a command run in a sandbox produced (invalid UTF-8 replaced)."""

    stdout: str
    stderr: str
    exit_code: int
    """The exit code; ``128 + n`` when killed by signal ``n``."""


class LeakReason(str, enum.Enum):
    """Why a sandbox is in the leak ledger."""

    DESTROY_FAILED = "destroy-failed"
    """A reclaim's destroy failed and the record was deleted anyway."""
    ORPHAN = "orphan"
    """An orphan's destroy failed during a sweep."""
    IDLE = "idle"
    """An idle record was expired; its destroy runs from the ledger."""

    def __str__(self) -> str:
        return self.value


def leak_reason(value: object) -> LeakReason:
    """``value`` as a :class:`LeakReason` (``ValueError`` naming ``reason`` otherwise)."""
    try:
        return LeakReason(value)
    except ValueError:
        allowed = ", ".join(repr(reason.value) for reason in LeakReason)
        raise ValueError(f"`reason` must be one of {allowed}, got {value!r}") from None


_DUE_LEAK_WIRE = {**_LEAK_ENTRY_WIRE, "reason": "reason", "nextAttemptAt": "next_attempt_at"}
_LEAK_ENTRY_REQUIRED = tuple(wire for wire in _LEAK_ENTRY_WIRE if wire != "claim")


@dataclass(frozen=True, slots=True)
class DueLeak(LeakEntry):
    """A leak entry a fleet store's ``due_leaks`` answers: a ``LeakEntry``
    (so ``resolve_leak``/``defer_leak`` take it) with why it is in the ledger
    and when it is next due. Field order is the native store's contract."""

    reason: LeakReason
    next_attempt_at: int
    """Epoch milliseconds before which no retry is due."""

    def __post_init__(self) -> None:
        LeakEntry.__post_init__(self)
        if not isinstance(self.reason, LeakReason):
            if not isinstance(self.reason, str):
                raise _field_error("DueLeak", "reason", "reason", "a LeakReason", self.reason)
            # A reason a newer writer knows reads as destroy-failed, as in the core.
            known = {reason.value: reason for reason in LeakReason}
            object.__setattr__(self, "reason", known.get(self.reason, LeakReason.DESTROY_FAILED))
        _check_whole("DueLeak", "next_attempt_at", "nextAttemptAt", self.next_attempt_at)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DueLeak:
        """Reads the camelCase wire form (a ``LeakEntry``'s fields, ``reason``, ``nextAttemptAt``)."""
        required = tuple(wire for wire in _DUE_LEAK_WIRE if wire != "claim")
        keywords = _read_wire("DueLeak", data, _DUE_LEAK_WIRE, required)
        for field in ("failed_at", "attempts", "next_attempt_at", "claim"):
            value = keywords.get(field)
            if isinstance(value, float) and value.is_integer():
                keywords[field] = int(value)
        return cls(**keywords)

    def to_dict(self) -> dict[str, Any]:
        """The camelCase wire form."""
        return _write_wire(self, _DUE_LEAK_WIRE)


_AUDIT_WIRE = {
    "at": "at",
    "host": "host",
    "provider": "provider",
    "providerSandboxId": "provider_sandbox_id",
    "key": "key",
    "reason": "reason",
    "result": "result",
    "error": "error",
}


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One row of a fleet store's audit log: a destroy attempt a
    :func:`reconcile` pass made. Field order is the native store's contract."""

    at: int
    """Epoch milliseconds when the attempt settled."""
    host: str
    """Who ran the pass (the host name unless ``reconcile(host=...)``)."""
    provider: str
    provider_sandbox_id: str
    reason: str
    """``leak-retry``, ``orphan`` or ``idle``."""
    result: str
    """``destroyed``, ``failed`` or ``timeout``."""
    key: str | None = None
    error: str | None = None

    def __post_init__(self) -> None:
        owner = "AuditEntry"
        _check_whole(owner, "at", "at", self.at)
        for field, wire in (("host", "host"), ("provider", "provider"), ("provider_sandbox_id", "providerSandboxId")):
            _check_text(owner, field, wire, getattr(self, field))
        _check_text(owner, "reason", "reason", self.reason)
        _check_text(owner, "result", "result", self.result)
        _check_text(owner, "key", "key", self.key, optional=True)
        _check_text(owner, "error", "error", self.error, optional=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AuditEntry:
        """Reads the camelCase wire form (``key`` and ``error`` optional)."""
        required = ("at", "host", "provider", "providerSandboxId", "reason", "result")
        keywords = _read_wire("AuditEntry", data, _AUDIT_WIRE, required)
        at = keywords.get("at")
        if isinstance(at, float) and at.is_integer():
            keywords["at"] = int(at)
        return cls(**keywords)

    def to_dict(self) -> dict[str, Any]:
        """The camelCase wire form, absent optionals omitted."""
        return _write_wire(self, _AUDIT_WIRE)


@dataclass(frozen=True, slots=True)
class ListedSandbox:
    """A sandbox as a provider lists it for :func:`reconcile`'s orphan sweep.
    The sweep fails closed: one sandbox of unknown ``created_at`` or
    ``owner`` spares every sandbox of that provider."""

    id: str
    """The provider-side id (what ``destroy`` takes)."""
    created_at: int | None
    """Creation time, epoch milliseconds; ``None``: unknown."""
    owner: str | None
    """The owner namespace it was created under; ``None``: unknown."""
    key: str | None = None
    """The sandbox key it was created for, when known."""
    deleting: bool = False
    """The vendor is already deleting it (Daytona ``destroying``): counted, never destroyed again."""

    def to_dict(self) -> dict[str, Any]:
        """The camelCase wire form (``key`` omitted when unknown, ``deleting`` when false)."""
        wire: dict[str, Any] = {"id": self.id, "createdAt": self.created_at, "owner": self.owner}
        if self.key is not None:
            wire["key"] = self.key
        if self.deleting:
            wire["deleting"] = True
        return wire
