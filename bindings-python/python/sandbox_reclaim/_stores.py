"""Durable instance stores with a leak ledger, on the Rust core (sqlx):
``SqliteSandboxInstanceStore`` (one file shared by the processes of one
machine) and ``PostgresSandboxInstanceStore`` (a fleet of hosts).

Both are ``LeakLedgerStore``s with ``async def`` methods, so they plug into
``reclaim_sandbox`` / ``sandbox_reclaimer`` like any Python store, and share
their tables with the Node binding and Rust: a record one language writes
reads back unchanged in the others.
"""

from __future__ import annotations

import os
from types import TracebackType
from typing import Any, TypeVar

from . import _native
from ._checks import MAX_SAFE_INTEGER, MAX_U32, exact, seconds, whole_number
from ._records import AuditEntry, DueLeak, LeakEntry, LeakReason, NewLeak, SandboxInstanceRecord, leak_reason

_Store = TypeVar("_Store", bound="_SqlStore")

_MAX_LEASE = MAX_SAFE_INTEGER / 1000
"""The longest claim lease, in seconds: 2^53-1 milliseconds, as in Node."""

_MAX_BUSY_TIMEOUT = 2_147_483.647
"""The longest busy timeout, in seconds: SQLite waits an ``int`` of milliseconds."""


def _check_str(field: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"`{field}` must be a str, got {type(value).__name__}")
    return exact(value, field)


def _check_seconds(field: str, value: object, maximum: float = _MAX_LEASE) -> float:
    """A lease (or another duration up to ``maximum``) in seconds."""
    return seconds(value, field, maximum)


def _millis(value: object, name: str) -> int:
    return whole_number(value, name, 0, MAX_SAFE_INTEGER)


def _optional_millis(value: object, name: str) -> int | None:
    return None if value is None else _millis(value, name)


class _SqlStore:
    """The methods both SQL stores share (a native ``SqlStore`` handle)."""

    __slots__ = ("_native",)

    def __init__(self, native: _native.SqlStore, /) -> None:
        # Built by open()/connect(), which create the handle.
        if not isinstance(native, _native.SqlStore):
            raise TypeError(f"use `await {type(self).__name__}.open(...)`/`connect(...)` to create a store")
        self._native = native

    async def get(self, key: str) -> SandboxInstanceRecord | None:
        """The record stored under ``key``, or ``None``."""
        return await self._native.get(key)

    async def upsert(self, record: SandboxInstanceRecord) -> None:
        """Stores ``record``, fully replacing any under the same key
        (``ValueError`` naming the field for a record breaking the contract)."""
        await self._native.upsert(record)

    async def delete(self, key: str) -> None:
        """Deletes the record under ``key``; a missing key is a no-op."""
        await self._native.delete(key)

    async def delete_recording_leak(self, key: str, leak: NewLeak) -> None:
        """Deletes the record ``key`` and records ``leak``, in one transaction."""
        await self._native.delete_recording_leak(key, leak)

    async def list_leaks(self, provider: str | None = None) -> list[LeakEntry]:
        """Pending leak entries, oldest first, of one provider or of all."""
        return await self._native.list_leaks(provider)

    async def count_leaks(self, provider: str | None = None) -> int:
        """How many leak entries are pending, of one provider or of all."""
        return await self._native.count_leaks(provider)

    async def claim_leaks(self, provider: str, limit: int, lease: float) -> list[LeakEntry]:
        """Claims up to ``limit`` of ``provider``'s entries for ``lease``
        seconds (used by :func:`retry_leaks`; an entry another retrier holds
        is skipped until its lease ends)."""
        count = whole_number(limit, "limit", 0, MAX_U32)
        return await self._native.claim_leaks(provider, count, _check_seconds("lease", lease))

    async def resolve_leak(self, entry: LeakEntry) -> None:
        """Removes a claimed entry whose sandbox is now destroyed."""
        await self._native.resolve_leak(entry)

    async def record_retry_failure(self, entry: LeakEntry, message: str, failed_at: int) -> None:
        """Bumps a claimed entry's attempts, keeps ``message`` and releases the
        claim; ``failed_at`` is epoch milliseconds."""
        millis = whole_number(failed_at, "failed_at", 0, MAX_SAFE_INTEGER)
        await self._native.record_retry_failure(entry, message, millis)

    # ---- the fleet store (reconcile); every time is epoch milliseconds ----

    async def list_stale(self, older_than: int, limit: int) -> list[SandboxInstanceRecord]:
        """Records last updated before ``older_than``, oldest first, at most ``limit``."""
        count = whole_number(limit, "limit", 0, MAX_U32)
        return await self._native.list_stale(_millis(older_than, "older_than"), count)

    async def expire_idle(self, key: str, updated_at: int, leak: NewLeak) -> bool:
        """Deletes record ``key`` if its ``updated_at`` is still ``updated_at``
        and records ``leak`` (reason ``idle``, due at once), in one
        transaction; ``False`` (nothing written) when it was touched or is gone."""
        return await self._native.expire_idle(_check_str("key", key), _millis(updated_at, "updated_at"), leak)

    async def sandbox_references(self, provider: str, destroyed_since: int | None = None) -> list[str]:
        """Every ``provider_sandbox_id`` of ``provider`` a record or a leak entry
        references, and (with ``destroyed_since``, epoch ms) every one the audit
        log says was destroyed at or after it."""
        since = None if destroyed_since is None else _millis(destroyed_since, "destroyed_since")
        return await self._native.sandbox_references(_check_str("provider", provider), since)

    async def registered_sandboxes(self, provider: str, since: int) -> list[str]:
        """The registry: every ``provider_sandbox_id`` of ``provider`` an
        instance record named, while the record exists and after it is
        deleted, if it was last written or deleted at or after ``since``
        (epoch ms; a deletion is stamped with the database's clock).
        :func:`reconcile` takes an unlabelled listed sandbox (owner ``""``)
        for ours only when this names it."""
        return await self._native.registered_sandboxes(_check_str("provider", provider), _millis(since, "since"))

    async def record_leak(self, leak: NewLeak, reason: LeakReason | str, next_attempt_at: int) -> None:
        """Records ``leak`` with ``reason``, due at ``next_attempt_at`` (a known sandbox: attempts + 1)."""
        due = _millis(next_attempt_at, "next_attempt_at")
        await self._native.record_leak(leak, leak_reason(reason).value, due)

    async def due_leaks(self, provider: str, limit: int, lease_ms: int | None, now: int) -> list[DueLeak]:
        """``provider``'s entries due at ``now`` and unclaimed, oldest first, at
        most ``limit``, claimed until ``now + lease_ms`` (``None``: only listed;
        PostgreSQL skips rows another pass has locked)."""
        count = whole_number(limit, "limit", 0, MAX_U32)
        lease = _optional_millis(lease_ms, "lease_ms")
        return await self._native.due_leaks(_check_str("provider", provider), count, lease, _millis(now, "now"))

    async def defer_leak(self, entry: LeakEntry, message: str, failed_at: int, next_attempt_at: int) -> None:
        """A claimed entry failed again: attempts + 1, ``message`` kept, due at
        ``next_attempt_at``, claim released."""
        failed = _millis(failed_at, "failed_at")
        due = _millis(next_attempt_at, "next_attempt_at")
        await self._native.defer_leak(entry, _check_str("message", message), failed, due)

    async def claim_sweep(self, provider: str, holder: str, lease_ms: int, now: int) -> bool:
        """Takes ``provider``'s orphan sweep for ``holder`` until ``now + lease_ms``
        unless another holder's lease runs; whether ``holder`` holds it."""
        lease = _millis(lease_ms, "lease_ms")
        names = (_check_str("provider", provider), _check_str("holder", holder))
        return await self._native.claim_sweep(*names, lease, _millis(now, "now"))

    async def release_sweep(self, provider: str, holder: str) -> None:
        """Gives ``provider``'s sweep back if ``holder`` still holds it."""
        await self._native.release_sweep(_check_str("provider", provider), _check_str("holder", holder))

    async def append_audit(self, entries: list[AuditEntry]) -> None:
        """Appends audit rows, in order, in one transaction."""
        await self._native.append_audit(list(entries))

    async def list_audit(self, since: int | None = None, limit: int | None = None) -> list[AuditEntry]:
        """Audit rows with ``at >= since`` (epoch ms), oldest first, at most
        ``limit`` (None: the core's default, 1000)."""
        count = None if limit is None else whole_number(limit, "limit", 0, MAX_U32)
        return await self._native.list_audit(_optional_millis(since, "since"), count)

    async def close(self) -> None:
        """Closes the connection pool; later calls raise ``SandboxStoreError``."""
        await self._native.close()

    async def __aenter__(self: _Store) -> _Store:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.close()


class SqliteSandboxInstanceStore(_SqlStore):
    """An instance store with a leak ledger in one SQLite file (WAL mode),
    safe to share between processes (Python, Node, Rust) on one machine.
    Create it with ``await SqliteSandboxInstanceStore.open(path)``."""

    __slots__ = ()

    @classmethod
    async def open(
        cls, path: str | os.PathLike[str], *, busy_timeout: float = 30.0, max_connections: int = 4
    ) -> SqliteSandboxInstanceStore:
        """Opens (creating if missing) the store file, switches it to WAL and
        applies pending migrations. ``busy_timeout`` (seconds, at most about
        24.8 days) is how long a write waits for another process's lock.

        A file that is not ours is refused, unchanged, with
        ``SandboxStoreOpenError`` (another application's tables, or a table of
        ours we did not create) or ``SchemaTooNewError``."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"`path` must be a str or os.PathLike, got {type(path).__name__}")
        file = os.fspath(path)
        if not isinstance(file, str):
            raise TypeError("`path` must be a text path, not bytes")
        timeout = _check_seconds("busy_timeout", busy_timeout, _MAX_BUSY_TIMEOUT)
        connections = whole_number(max_connections, "max_connections", 1, MAX_U32)
        return cls(await _native.open_sqlite(file, timeout, connections))

    def __repr__(self) -> str:
        return "<SqliteSandboxInstanceStore>"


class PostgresSandboxInstanceStore(_SqlStore):
    """An instance store with a leak ledger in PostgreSQL, for many hosts.
    Create it with ``await PostgresSandboxInstanceStore.connect(url)``."""

    __slots__ = ()

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        schema: str = "public",
        instances_table: str = "sandbox_instances",
        leaks_table: str = "sandbox_leaks",
        schema_version_table: str = "sandbox_reclaim_schema_version",
        max_connections: int = 10,
    ) -> PostgresSandboxInstanceStore:
        """Connects a pool to ``url`` (``postgres://user@host:port/db``),
        creates ``schema`` if missing and applies pending migrations (under an
        advisory lock, so hosts may start together). Names are plain
        identifiers, quoted, so case-sensitive."""
        names: dict[str, Any] = {
            "url": url,
            "schema": schema,
            "instances_table": instances_table,
            "leaks_table": leaks_table,
            "schema_version_table": schema_version_table,
        }
        for field, value in names.items():
            _check_str(field, value)
        connections = whole_number(max_connections, "max_connections", 1, MAX_U32)
        native = await _native.connect_postgres(
            url, schema, instances_table, leaks_table, schema_version_table, connections
        )
        return cls(native)

    def __repr__(self) -> str:
        return "<PostgresSandboxInstanceStore>"
