"""The shapes of the host objects ``reclaim_sandbox`` works with.

Every method may be a plain ``def`` or an ``async def``: the interpreter
awaits a result only when it is awaitable. Return types are therefore
``object`` (or a union with ``Awaitable``), which both forms satisfy.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, Protocol, TypeAlias, runtime_checkable

from ._records import AuditEntry, LeakEntry, LeakReason, NewLeak, SandboxInstanceRecord

InstanceAnswer: TypeAlias = SandboxInstanceRecord | Mapping[str, Any] | None
"""What ``get`` answers: a record, a wire-form (camelCase) mapping, or ``None``."""


@runtime_checkable
class SandboxProvider(Protocol):
    """Destroys sandboxes. ``name`` is compared exactly (case-sensitive) with
    the instance record's ``provider`` before anything is destroyed."""

    @property
    def name(self) -> str: ...

    def destroy(self, sandbox_id: str, /) -> object:
        """Destroys the sandbox with this provider-side id (an already-gone
        sandbox should count as destroyed). Raising, or returning an
        awaitable that raises, is the ``destroy-failed`` path."""
        ...


@runtime_checkable
class SandboxInstanceStore(Protocol):
    """Maps sandbox keys to instance records (``SandboxStore`` in
    ``@tanstack/ai-sandbox``). ``get`` of a missing key answers ``None``;
    ``upsert`` fully replaces; deleting a missing key is a no-op."""

    def get(self, key: str, /) -> InstanceAnswer | Awaitable[InstanceAnswer]: ...

    def upsert(self, record: SandboxInstanceRecord, /) -> object: ...

    def delete(self, key: str, /) -> object: ...


@runtime_checkable
class LeakLedgerStore(SandboxInstanceStore, Protocol):
    """A store with a leak ledger: when destroy fails it gets one
    ``delete_recording_leak(key, leak)`` call instead of ``delete(key)``, and
    must delete the record and record the leak atomically."""

    def delete_recording_leak(self, key: str, leak: NewLeak, /) -> object: ...


@runtime_checkable
class FleetStore(Protocol):
    """A store :func:`reconcile` runs against (every native store is one).
    Every time is epoch milliseconds (an ``int``), ``lease_ms`` too; each
    method is atomic on its own and may be sync or async.

    * ``list_stale(older_than, limit)``: instance records updated before
      ``older_than``, oldest first, at most ``limit``;
    * ``expire_idle(key, updated_at, leak)``: deletes record ``key`` only if
      its ``updated_at`` is still that, recording ``leak`` (reason ``idle``,
      due at once), in one step; answers whether it did;
    * ``sandbox_references(provider, destroyed_since)``: every
      ``provider_sandbox_id`` of ``provider`` a record or a leak entry
      references, and every one an audit row says was destroyed at or after
      ``destroyed_since`` (epoch ms); a store whose method takes only
      ``provider`` still works, without the audit log's recent destroys;
    * ``registered_sandboxes(provider, since)`` (optional, so not a member
      of this protocol): the store's registry, every ``provider_sandbox_id``
      of ``provider`` an instance record named, whose record still exists
      or was last written or deleted at or after ``since`` (epoch ms). With
      it, the orphan sweep also takes for ours a sandbox listed without an
      owner label (owner ``""``) that the registry names; a store without
      it names nothing, so only labelled sandboxes are swept (the native
      stores have it);
    * ``prune(provider, registry_before, audit_before)`` (optional, so not a
      member of this protocol): bounded growth, deletes ``provider``'s
      registry rows last seen before ``registry_before`` and its audit rows
      from before ``audit_before`` (epoch ms); :func:`reconcile` calls it
      from the pass that takes the provider's sweep, and ignores a failure
      (the native stores have it);
    * ``record_leak(leak, reason, next_attempt_at)``: records a leak (again:
      attempts + 1);
    * ``due_leaks(provider, limit, lease_ms, now)``: entries due at ``now``
      and unclaimed, oldest first, claimed until ``now + lease_ms`` (``None``:
      only listed); :class:`DueLeak` objects (or ``LeakEntry`` objects, or
      wire-form dicts, with ``reason`` and ``next_attempt_at``);
    * ``defer_leak(entry, message, failed_at, next_attempt_at)``: attempts +
      1, message kept, claim released; ``resolve_leak(entry)``: removes it;
      each only while the claim the entry carries still holds, answering
      ``False`` when it no longer does (any other answer counts as written);
    * ``claim_sweep(provider, holder, lease_ms, now)`` / ``release_sweep(provider,
      holder)``: one sweeper per provider; answers whether it is ``holder``'s;
    * ``append_audit(entries)``: appends :class:`AuditEntry` rows.
    """

    def list_stale(self, older_than: int, limit: int, /) -> object: ...

    def expire_idle(self, key: str, updated_at: int, leak: NewLeak, /) -> object: ...

    def sandbox_references(self, provider: str, destroyed_since: int, /) -> object: ...

    def record_leak(self, leak: NewLeak, reason: LeakReason, next_attempt_at: int, /) -> object: ...

    def due_leaks(self, provider: str, limit: int, lease_ms: int | None, now: int, /) -> object: ...

    def defer_leak(self, entry: LeakEntry, message: str, failed_at: int, next_attempt_at: int, /) -> object: ...

    def resolve_leak(self, entry: LeakEntry, /) -> object: ...

    def claim_sweep(self, provider: str, holder: str, lease_ms: int, now: int, /) -> object: ...

    def release_sweep(self, provider: str, holder: str, /) -> object: ...

    def append_audit(self, entries: list[AuditEntry], /) -> object: ...


@runtime_checkable
class ReclaimLogger(Protocol):
    """TanStack's ``InternalLogger`` methods. Called synchronously (never
    awaited), with the message and a fresh meta dict whose keys are the
    reference's camelCase ones (``runId``, ``sandboxKey``, ...)."""

    def warn(self, message: str, meta: dict[str, Any], /) -> object: ...

    def errors(self, message: str, meta: dict[str, Any], /) -> object: ...

    def sandbox(self, message: str, meta: dict[str, Any], /) -> object: ...
