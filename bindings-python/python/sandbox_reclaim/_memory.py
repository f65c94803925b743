"""``InMemorySandboxInstanceStore`` and ``InMemoryLeakLedgerStore``: the
core's in-memory store behind async methods, like every other store's (the
native half answers at once, so awaiting costs one coroutine step)."""

from __future__ import annotations

from . import _native
from ._checks import MAX_SAFE_INTEGER, MAX_U32, exact, seconds, whole_number
from ._records import LeakEntry, NewLeak, SandboxInstanceRecord


class InMemorySandboxInstanceStore:
    """An instance store in memory. It copies records in and out: mutating
    a record a caller holds never changes what it stores. Every method is
    ``async``, as the durable stores' are."""

    __slots__ = ("_native",)

    _native: _native.InMemorySandboxInstanceStore

    def __init__(self) -> None:
        self._native = _native.InMemorySandboxInstanceStore()

    @staticmethod
    def with_ledger() -> InMemoryLeakLedgerStore:
        """A store that also keeps a leak ledger."""
        return InMemoryLeakLedgerStore()

    async def get(self, key: str) -> SandboxInstanceRecord | None:
        """The record stored under ``key``, or ``None``."""
        return self._native.get(exact(key, "key"))

    async def upsert(self, record: SandboxInstanceRecord) -> None:
        """Stores a copy, replacing any under its key; ``ValueError`` naming
        the field for a record breaking the store contract."""
        for field in ("key", "provider", "provider_sandbox_id", "thread_id"):
            value = getattr(record, field, None)
            if isinstance(value, str):
                exact(value, f"record.{field}")
        self._native.upsert(record)

    async def delete(self, key: str) -> None:
        """Deletes the record under ``key``; a missing key is a no-op."""
        self._native.delete(exact(key, "key"))

    def records(self) -> list[SandboxInstanceRecord]:
        """Every record, sorted by key (copies, for inspection)."""
        return self._native.records()

    def __len__(self) -> int:
        return len(self._native)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} with {len(self)} record(s)>"


class InMemoryLeakLedgerStore(InMemorySandboxInstanceStore):
    """An in-memory store with a leak ledger: a failed destroy's record
    removal and its leak entry happen in one step."""

    __slots__ = ()

    _native: _native.InMemoryLeakLedgerStore

    def __init__(self) -> None:
        self._native = _native.InMemoryLeakLedgerStore()

    async def delete_recording_leak(self, key: str, leak: NewLeak) -> None:
        """Deletes the record ``key`` and records ``leak``, in one step."""
        self._native.delete_recording_leak(exact(key, "key"), leak)

    async def list_leaks(self, provider: str | None = None) -> list[LeakEntry]:
        """Pending leak entries, oldest first, of one provider or of all."""
        return self._native.list_leaks(provider)

    async def count_leaks(self, provider: str | None = None) -> int:
        """How many leak entries are pending, of one provider or of all."""
        return self._native.count_leaks(provider)

    async def claim_leaks(self, provider: str, limit: int, lease: float) -> list[LeakEntry]:
        """Claims up to ``limit`` of ``provider``'s entries for ``lease`` seconds."""
        count = whole_number(limit, "limit", 0, MAX_U32)
        duration = seconds(lease, "lease", MAX_SAFE_INTEGER / 1000)
        return self._native.claim_leaks(exact(provider, "provider"), count, duration)

    async def resolve_leak(self, entry: LeakEntry) -> None:
        """Removes a claimed entry whose sandbox is now destroyed."""
        self._native.resolve_leak(entry)

    async def record_retry_failure(self, entry: LeakEntry, message: str, failed_at: int) -> None:
        """Bumps a claimed entry's attempts, keeps ``message`` and releases the claim."""
        moment = whole_number(failed_at, "failed_at", 0, MAX_SAFE_INTEGER)
        self._native.record_retry_failure(entry, message, moment)
