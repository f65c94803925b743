"""``InMemorySandboxInstanceStore`` and ``InMemoryLeakLedgerStore``: the
core's in-memory store behind async methods, like every other store's (the
native half answers at once, so awaiting costs one coroutine step)."""

from __future__ import annotations

from . import _native
from ._checks import exact, exact_ids
from ._records import AuditEntry, DueLeak, LeakEntry, LeakReason, NewLeak, SandboxInstanceRecord, leak_reason


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


def _text(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"`{name}` must be a str, got {type(value).__name__}")
    return exact(value, name)


class InMemoryLeakLedgerStore(InMemorySandboxInstanceStore):
    """An in-memory store with a leak ledger: a failed destroy's record
    removal and its leak entry happen in one step. It is also a fleet store
    (:func:`reconcile`): every time its fleet methods take is epoch
    milliseconds. Numbers cross as given: the core checks each one's type and
    range."""

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
        return self._native.claim_leaks(exact(provider, "provider"), limit, lease)

    async def resolve_leak(self, entry: LeakEntry) -> bool:
        """Removes a claimed entry whose sandbox is now destroyed; ``False``:
        its claim had passed on, and nothing was written."""
        held: bool = self._native.resolve_leak(entry)
        return held

    async def record_retry_failure(self, entry: LeakEntry, message: str, failed_at: int) -> bool:
        """Bumps a claimed entry's attempts, keeps ``message`` and releases the
        claim; ``False``: its claim had passed on, and nothing was written."""
        held: bool = self._native.record_retry_failure(entry, message, failed_at)
        return held

    # ---- the fleet store (reconcile) ----

    async def list_stale(self, older_than: int, limit: int) -> list[SandboxInstanceRecord]:
        """Records last updated before ``older_than``, oldest first, at most ``limit``."""
        return self._native.list_stale(older_than, limit)

    async def expire_idle(self, key: str, updated_at: int, leak: NewLeak) -> bool:
        """Deletes record ``key`` if its ``updated_at`` is still ``updated_at``
        and records ``leak`` (reason ``idle``, due at once), in one step;
        ``False`` (nothing written) when it was touched or is gone."""
        return self._native.expire_idle(_text(key, "key"), updated_at, leak)

    async def sandbox_references(self, provider: str, destroyed_since: int | None = None) -> list[str]:
        """Every ``provider_sandbox_id`` of ``provider`` a record or a leak entry
        references, and (with ``destroyed_since``, epoch ms) every one the audit
        log says was destroyed at or after it."""
        return self._native.sandbox_references(_text(provider, "provider"), destroyed_since)

    async def registered_sandboxes(self, provider: str, since: int) -> list[str]:
        """The registry: every ``provider_sandbox_id`` of ``provider`` an
        instance record named, while the record exists and after it is
        deleted, if it was last written or deleted at or after ``since``
        (epoch ms). :func:`reconcile` takes an unlabelled listed sandbox
        (owner ``""``) for ours only when this names it."""
        return self._native.registered_sandboxes(_text(provider, "provider"), since)

    async def prune(self, provider: str, registry_before: int, audit_before: int) -> None:
        """Bounded growth: deletes ``provider``'s registry rows last seen before
        ``registry_before`` and its audit rows from before ``audit_before``
        (epoch ms). :func:`reconcile` calls it from the pass that holds the
        provider's sweep."""
        self._native.prune(_text(provider, "provider"), registry_before, audit_before)

    # A sweep's questions about what it listed (all five, so :func:`reconcile`
    # asks about the listed ids instead of reading every reference).

    async def sweep_mark(self, provider: str) -> int:
        """A mark of the store's record deletions, taken before a sweep lists:
        a record deleted (or pointed at another sandbox) after it is counted
        by :meth:`referenced_among` with this mark. Never goes down."""
        return self._native.sweep_mark(_text(provider, "provider"))

    async def referenced_among(self, provider: str, ids: list[str], destroyed_since: int, mark: int) -> list[str]:
        """Those of ``ids`` (listed sandboxes of ``provider``) a record or a
        leak entry references now, that an audit row says was destroyed (or a
        leak retry resolved) at or after ``destroyed_since`` (epoch ms), or
        whose record was deleted after ``mark``; sorted, each once."""
        return self._native.referenced_among(_text(provider, "provider"), exact_ids(ids, "ids"), destroyed_since, mark)

    async def registered_among(self, provider: str, ids: list[str], since: int) -> list[str]:
        """Those of ``ids`` the registry names: a record of ``provider`` names
        it now, or one last written or deleted at or after ``since`` (epoch
        ms) did; sorted, each once."""
        return self._native.registered_among(_text(provider, "provider"), exact_ids(ids, "ids"), since)

    async def lookup_candidates(self, provider: str, since: int, limit: int) -> list[str]:
        """At most ``limit`` registered sandbox ids of ``provider`` for a
        lookup by id: last written or deleted at or after ``since``
        (epoch ms), named by no record or leak entry now, not known gone;
        never checked first, then least recently checked first."""
        return self._native.lookup_candidates(_text(provider, "provider"), since, limit)

    async def lookup_checked(self, provider: str, gone: list[str], checked: list[str], now: int) -> None:
        """What a lookup learned: the sandboxes of ``gone`` are gone (no
        candidate again until a record names them), those of ``checked`` were
        checked at ``now`` (epoch ms) and go to the back of the queue."""
        self._native.lookup_checked(
            _text(provider, "provider"), exact_ids(gone, "gone"), exact_ids(checked, "checked"), now
        )

    async def record_leak(self, leak: NewLeak, reason: LeakReason | str, next_attempt_at: int) -> None:
        """Records ``leak`` with ``reason``, due at ``next_attempt_at`` (a known sandbox: attempts + 1)."""
        self._native.record_leak(leak, leak_reason(reason).value, next_attempt_at)

    async def due_leaks(self, provider: str, limit: int, lease_ms: int | None, now: int) -> list[DueLeak]:
        """``provider``'s entries due at ``now`` and unclaimed, oldest first, at
        most ``limit``, claimed until ``now + lease_ms`` (``None``: only listed)."""
        return self._native.due_leaks(_text(provider, "provider"), limit, lease_ms, now)

    async def defer_leak(self, entry: LeakEntry, message: str, failed_at: int, next_attempt_at: int) -> bool:
        """A claimed entry failed again: attempts + 1, ``message`` kept, due at
        ``next_attempt_at``, claim released; ``False``: its claim had passed
        on, and nothing was written."""
        held: bool = self._native.defer_leak(entry, _text(message, "message"), failed_at, next_attempt_at)
        return held

    async def claim_sweep(self, provider: str, holder: str, lease_ms: int, now: int) -> bool:
        """Takes ``provider``'s orphan sweep for ``holder`` until ``now + lease_ms``
        unless another holder's lease runs; whether ``holder`` holds it."""
        return self._native.claim_sweep(_text(provider, "provider"), _text(holder, "holder"), lease_ms, now)

    async def release_sweep(self, provider: str, holder: str) -> None:
        """Gives ``provider``'s sweep back if ``holder`` still holds it."""
        self._native.release_sweep(_text(provider, "provider"), _text(holder, "holder"))

    async def append_audit(self, entries: list[AuditEntry]) -> None:
        """Appends audit rows, in order."""
        self._native.append_audit(list(entries))

    async def list_audit(self, since: int | None = None, limit: int | None = None) -> list[AuditEntry]:
        """Audit rows with ``at >= since`` (epoch ms), oldest first, at most
        ``limit`` (None: the core's default, 1000)."""
        return self._native.list_audit(since, limit)
