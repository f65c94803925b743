"""The shapes of the host objects ``reclaim_sandbox`` works with.

Every method may be a plain ``def`` or an ``async def``: the interpreter
awaits a result only when it is awaitable. Return types are therefore
``object`` (or a union with ``Awaitable``), which both forms satisfy.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, Protocol, TypeAlias, runtime_checkable

from ._records import NewLeak, SandboxInstanceRecord

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
class ReclaimLogger(Protocol):
    """TanStack's ``InternalLogger`` methods. Called synchronously (never
    awaited), with the message and a fresh meta dict whose keys are the
    reference's camelCase ones (``runId``, ``sandboxKey``, ...)."""

    def warn(self, message: str, meta: dict[str, Any], /) -> object: ...

    def errors(self, message: str, meta: dict[str, Any], /) -> object: ...

    def sandbox(self, message: str, meta: dict[str, Any], /) -> object: ...
