"""Durable instance stores with a leak ledger, on the Rust core (sqlx):
``SqliteSandboxInstanceStore`` (one file shared by the processes of one
machine) and ``PostgresSandboxInstanceStore`` (a fleet of hosts).

Both are ``LeakLedgerStore``s with ``async def`` methods, so they plug into
``reclaim_sandbox`` / ``sandbox_reclaimer`` like any Python store, and share
their tables with the Node binding and Rust: a record one language writes
reads back unchanged in the others.
"""

from __future__ import annotations

import enum
import os
from types import TracebackType
from typing import Any, Final, TypeVar

from . import _native
from ._checks import exact, exact_ids
from ._records import AuditEntry, DueLeak, LeakEntry, LeakReason, NewLeak, SandboxInstanceRecord, leak_reason

_Store = TypeVar("_Store", bound="_SqlStore")


class _NotGiven(enum.Enum):
    """An option the caller left out: it does not cross to the native side,
    which takes the core's default (issue #16: no default lives in Python)."""

    NOT_GIVEN = "not given"

    def __repr__(self) -> str:
        return "<the core's default>"


_NOT_GIVEN: Final = _NotGiven.NOT_GIVEN


def _given(**options: object) -> dict[str, Any]:
    """The options the caller gave (an explicit ``None`` included, for the
    core to refuse), as keyword arguments for the native side."""
    return {field: value for field, value in options.items() if value is not _NOT_GIVEN}

def _check_str(field: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"`{field}` must be a str, got {type(value).__name__}")
    return exact(value, field)


class _SqlStore:
    """The methods both SQL stores share (a native ``SqlStore`` handle).
    Numbers cross as given: the core checks each one's type and range."""

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
        return await self._native.claim_leaks(provider, limit, lease)

    async def resolve_leak(self, entry: LeakEntry) -> bool:
        """Removes a claimed entry whose sandbox is now destroyed; ``False``:
        its claim had passed to another retrier, and nothing was written."""
        held: bool = await self._native.resolve_leak(entry)
        return held

    async def record_retry_failure(self, entry: LeakEntry, message: str, failed_at: int) -> bool:
        """Bumps a claimed entry's attempts, keeps ``message`` and releases the
        claim; ``failed_at`` is epoch milliseconds. ``False``: its claim had
        passed on, and nothing was written."""
        held: bool = await self._native.record_retry_failure(entry, message, failed_at)
        return held

    # ---- the fleet store (reconcile); every time is epoch milliseconds ----

    async def list_stale(self, older_than: int, limit: int) -> list[SandboxInstanceRecord]:
        """Records last updated before ``older_than``, oldest first, at most ``limit``."""
        return await self._native.list_stale(older_than, limit)

    async def expire_idle(self, key: str, updated_at: int, leak: NewLeak) -> bool:
        """Deletes record ``key`` if its ``updated_at`` is still ``updated_at``
        and records ``leak`` (reason ``idle``, due at once), in one
        transaction; ``False`` (nothing written) when it was touched or is gone."""
        return await self._native.expire_idle(_check_str("key", key), updated_at, leak)

    async def sandbox_references(self, provider: str, destroyed_since: int | None = None) -> list[str]:
        """Every ``provider_sandbox_id`` of ``provider`` a record or a leak entry
        references, and (with ``destroyed_since``, epoch ms) every one the audit
        log says was destroyed at or after it."""
        return await self._native.sandbox_references(_check_str("provider", provider), destroyed_since)

    async def registered_sandboxes(self, provider: str, since: int) -> list[str]:
        """The registry: every ``provider_sandbox_id`` of ``provider`` an
        instance record named, while the record exists and after it is
        deleted, if it was last written or deleted at or after ``since``
        (epoch ms; a deletion is stamped with the database's clock).
        :func:`reconcile` takes an unlabelled listed sandbox (owner ``""``)
        for ours only when this names it."""
        return await self._native.registered_sandboxes(_check_str("provider", provider), since)

    async def prune(self, provider: str, registry_before: int, audit_before: int) -> None:
        """Bounded growth: deletes ``provider``'s registry rows last seen before
        ``registry_before`` and its audit rows from before ``audit_before``
        (epoch ms). :func:`reconcile` calls it from the pass that holds the
        provider's sweep."""
        await self._native.prune(_check_str("provider", provider), registry_before, audit_before)

    # A sweep's questions about what it listed: with all five, :func:`reconcile`
    # reads only what a sweep listed (on indexes), never every reference.

    async def sweep_mark(self, provider: str) -> int:
        """A mark of the store's record deletions, taken before a sweep lists:
        a record deleted (or pointed at another sandbox) after it is counted
        by :meth:`referenced_among` with this mark. Never goes down."""
        return await self._native.sweep_mark(_check_str("provider", provider))

    async def referenced_among(self, provider: str, ids: list[str], destroyed_since: int, mark: int) -> list[str]:
        """Those of ``ids`` (listed sandboxes of ``provider``) a record or a
        leak entry references now, that an audit row says was destroyed (or a
        leak retry resolved) at or after ``destroyed_since`` (epoch ms), or
        whose record was deleted after ``mark``; sorted, each once."""
        names = (_check_str("provider", provider), exact_ids(ids, "ids"))
        return await self._native.referenced_among(*names, destroyed_since, mark)

    async def registered_among(self, provider: str, ids: list[str], since: int) -> list[str]:
        """Those of ``ids`` the registry names: a record of ``provider`` names
        it now, or one last written or deleted at or after ``since`` (epoch
        ms) did; sorted, each once."""
        return await self._native.registered_among(_check_str("provider", provider), exact_ids(ids, "ids"), since)

    async def lookup_candidates(self, provider: str, since: int, limit: int) -> list[str]:
        """At most ``limit`` registered sandbox ids of ``provider`` for a
        lookup by id: last written or deleted at or after ``since``
        (epoch ms), named by no record or leak entry now, not known gone;
        never checked first, then least recently checked first."""
        return await self._native.lookup_candidates(_check_str("provider", provider), since, limit)

    async def lookup_checked(self, provider: str, gone: list[str], checked: list[str], now: int) -> None:
        """What a lookup learned: the sandboxes of ``gone`` are gone (no
        candidate again until a record names them), those of ``checked`` were
        checked at ``now`` (epoch ms) and go to the back of the queue."""
        names = (_check_str("provider", provider), exact_ids(gone, "gone"), exact_ids(checked, "checked"))
        await self._native.lookup_checked(*names, now)

    async def record_leak(self, leak: NewLeak, reason: LeakReason | str, next_attempt_at: int) -> None:
        """Records ``leak`` with ``reason``, due at ``next_attempt_at`` (a known sandbox: attempts + 1)."""
        await self._native.record_leak(leak, leak_reason(reason).value, next_attempt_at)

    async def due_leaks(self, provider: str, limit: int, lease_ms: int | None, now: int) -> list[DueLeak]:
        """``provider``'s entries due at ``now`` and unclaimed, oldest first, at
        most ``limit``, claimed until ``now + lease_ms`` (``None``: only listed;
        PostgreSQL skips rows another pass has locked)."""
        return await self._native.due_leaks(_check_str("provider", provider), limit, lease_ms, now)

    async def defer_leak(self, entry: LeakEntry, message: str, failed_at: int, next_attempt_at: int) -> bool:
        """A claimed entry failed again: attempts + 1, ``message`` kept, due at
        ``next_attempt_at``, claim released. ``False``: its claim had passed
        on, and nothing was written."""
        held: bool = await self._native.defer_leak(entry, _check_str("message", message), failed_at, next_attempt_at)
        return held

    async def claim_sweep(self, provider: str, holder: str, lease_ms: int, now: int) -> bool:
        """Takes ``provider``'s orphan sweep for ``holder`` until ``now + lease_ms``
        unless another holder's lease runs; whether ``holder`` holds it."""
        names = (_check_str("provider", provider), _check_str("holder", holder))
        return await self._native.claim_sweep(*names, lease_ms, now)

    async def release_sweep(self, provider: str, holder: str) -> None:
        """Gives ``provider``'s sweep back if ``holder`` still holds it."""
        await self._native.release_sweep(_check_str("provider", provider), _check_str("holder", holder))

    async def append_audit(self, entries: list[AuditEntry]) -> None:
        """Appends audit rows, in order, in one transaction."""
        await self._native.append_audit(list(entries))

    async def list_audit(self, since: int | None = None, limit: int | None = None) -> list[AuditEntry]:
        """Audit rows with ``at >= since`` (epoch ms), oldest first, at most
        ``limit`` (None: the core's default, 1000)."""
        return await self._native.list_audit(since, limit)

    async def close(self) -> None:
        """Closes the connection pool; later calls raise ``SandboxStoreError``."""
        await self._native.close()

    async def __aenter__(self: _Store) -> _Store:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.close()


# The SQL stores' methods that only await their native call, unchanged.
_PASS_THROUGH: Final = frozenset(
    {"get", "upsert", "delete", "delete_recording_leak", "list_leaks", "count_leaks", "claim_leaks",
     "resolve_leak", "record_retry_failure", "list_stale", "list_audit"}
)


def native_method(method: Any) -> Any:
    """What a flow calls for a store method it read (once): for a SQL store's
    own pass-through method, the native call itself, whose awaitable is an
    asyncio future, so the driver steps no coroutine and runs no task per
    store call (most of a fleet pass's Python time on a SQL store); for
    anything else (a subclass overriding it, a user store), ``method``."""
    function, owner = getattr(method, "__func__", None), getattr(method, "__self__", None)
    if function is None or not isinstance(owner, _SqlStore):
        return method
    name = getattr(function, "__name__", None)
    if name in _PASS_THROUGH and function is _SqlStore.__dict__[name]:
        return getattr(owner._native, name)
    return method


class SqliteSandboxInstanceStore(_SqlStore):
    """An instance store with a leak ledger in one SQLite file (WAL mode),
    safe to share between processes (Python, Node, Rust) on one machine.
    Create it with ``await SqliteSandboxInstanceStore.open(path)``."""

    __slots__ = ()

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float | _NotGiven = _NOT_GIVEN,
        max_connections: int | _NotGiven = _NOT_GIVEN,
    ) -> SqliteSandboxInstanceStore:
        """Opens (creating if missing) the store file, switches it to WAL and
        applies pending migrations. An option left out takes the core's
        default; ``None`` is refused (``TypeError``).

        Options:

        .. ---- generated by scripts/gen_declarations.py from the Rust types (proto/src): do not edit [sqlite store options] ----

        * ``busy_timeout``: How long a write waits for another process's lock before failing.
          Seconds, at most about 24.8 days. Default 30 s.
        * ``max_connections``: Connections in this handle's pool (readers run in parallel in WAL
          mode). A whole number, at least 1. Default 4.

        .. ---- end of generated declarations [sqlite store options] ----

        A file that is not ours is refused, unchanged, with
        ``SandboxStoreOpenError`` (another application's tables, or a table of
        ours we did not create) or ``SchemaTooNewError``."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"`path` must be a str or os.PathLike, got {type(path).__name__}")
        file = os.fspath(path)
        if not isinstance(file, str):
            raise TypeError("`path` must be a text path, not bytes")
        options = _given(busy_timeout=busy_timeout, max_connections=max_connections)
        return cls(await _native.open_sqlite(file, **options))

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
        schema: str | _NotGiven = _NOT_GIVEN,
        instances_table: str | _NotGiven = _NOT_GIVEN,
        leaks_table: str | _NotGiven = _NOT_GIVEN,
        schema_version_table: str | _NotGiven = _NOT_GIVEN,
        max_connections: int | _NotGiven = _NOT_GIVEN,
    ) -> PostgresSandboxInstanceStore:
        """Connects a pool to ``url`` (``postgres://user@host:port/db``),
        creates ``schema`` if missing and applies pending migrations (under an
        advisory lock, so hosts may start together). Names are plain
        identifiers, quoted, so case-sensitive.

        An option left out takes the core's default; ``None`` is refused
        (``TypeError``).

        Options:

        .. ---- generated by scripts/gen_declarations.py from the Rust types (proto/src): do not edit [postgres store options] ----

        * ``schema``: Schema holding the tables, created if missing. Default ``"public"``.
        * ``instances_table``: Table of instance records. Default ``"sandbox_instances"``.
        * ``leaks_table``: Table of the leak ledger; the sweep-lease, audit and registry tables are
          named after it. Default ``"sandbox_leaks"``.
        * ``schema_version_table``: Table of applied migration versions. Default
          ``"sandbox_reclaim_schema_version"``.
        * ``max_connections``: Most connections this handle's pool opens. A whole number, at least
          1. Default 10.

        .. ---- end of generated declarations [postgres store options] ----
        """
        _check_str("url", url)
        names = _given(
            schema=schema,
            instances_table=instances_table,
            leaks_table=leaks_table,
            schema_version_table=schema_version_table,
        )
        for field, value in names.items():
            _check_str(field, value)
        native = await _native.connect_postgres(url, **names, **_given(max_connections=max_connections))
        return cls(native)

    def __repr__(self) -> str:
        return "<PostgresSandboxInstanceStore>"
