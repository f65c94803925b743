"""What the fleet passes answer: :func:`reclaim_all`'s
:class:`FleetReclaimReport` and :func:`reconcile`'s :class:`ReconcileReport`.

Frozen dataclasses with snake_case fields, built from the JSON report the
core produced; ``to_dict()`` gives that camelCase JSON form back exactly (the
form the Node binding answers and the vectors describe). No rule lives here:
every number was decided by the core.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import _native

_CANNOT_LIST: str = _native.protocol()["provider_cannot_list"]

class RecordOutcome(str, enum.Enum):
    """How one record of a :func:`reclaim_all` pass ended: a reclaim's five
    outcomes, and three of the fleet's own."""

    NO_SANDBOX_KEY = "no-sandbox-key"
    NOT_FOUND = "not-found"
    PROVIDER_MISMATCH = "provider-mismatch"
    """No provider of the pass has the name its instance record names; nothing was touched."""
    DESTROYED = "destroyed"
    DESTROY_FAILED = "destroy-failed"
    ERROR = "error"
    """A store call (or the logger) failed; see the record's ``error``."""
    DEFERRED = "deferred"
    """Not started (or its destroy never started): the budget ran out or the pass was stopped."""
    DUPLICATE = "duplicate"
    """Another record with the same ``sandbox_key`` was reclaimed instead."""

    def __str__(self) -> str:
        return self.value


class ActionReason(str, enum.Enum):
    """Why a :func:`reconcile` pass destroys (or would destroy) a sandbox."""

    LEAK_RETRY = "leak-retry"
    """A ledger entry of a failed destroy (a reclaim's or an orphan's)."""
    ORPHAN = "orphan"
    IDLE = "idle"
    """An expired idle record (its ledger entry, or the record in a dry run)."""

    def __str__(self) -> str:
        return self.value


class ActionResult(str, enum.Enum):
    """What became of an action."""

    PLANNED = "planned"
    """Dry run: would be destroyed."""
    DESTROYED = "destroyed"
    FAILED = "failed"
    """The destroy failed (or timed out); the sandbox is in the ledger."""
    DEFERRED = "deferred"
    """Not started (budget, stop, a lapsed lease, a failed store): still in the ledger or still listed."""
    TOUCHED = "touched"
    """Idle expiry skipped a record updated since it was read."""

    def __str__(self) -> str:
        return self.value


class SweepStatus(str, enum.Enum):
    """How a provider's orphan sweep went."""

    SWEPT = "swept"
    UNAVAILABLE = "unavailable"
    """Destroyed nothing: no ``list``, a listing or store read failed, or a
    sandbox of unknown creation time or owner (fail closed). See ``error``."""
    HELD_ELSEWHERE = "held-elsewhere"
    """Another pass holds this provider's sweep."""
    SKIPPED = "skipped"
    """Not started: the budget ran out, the pass was stopped or a store failed."""

    def __str__(self) -> str:
        return self.value


def _optional(wire: dict[str, Any], name: str, value: Any) -> None:
    if value is not None:
        wire[name] = value


# ---- reclaim_all ----


@dataclass(frozen=True, slots=True)
class OutcomeCounts:
    """Records per outcome."""

    no_sandbox_key: int = 0
    not_found: int = 0
    provider_mismatch: int = 0
    destroyed: int = 0
    destroy_failed: int = 0
    error: int = 0
    deferred: int = 0
    duplicate: int = 0

    def __getitem__(self, outcome: RecordOutcome | str) -> int:
        """The count of one outcome: ``counts[RecordOutcome.DESTROYED]`` or ``counts["destroyed"]``."""
        value: int = getattr(self, RecordOutcome(outcome).name.lower())
        return value

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OutcomeCounts:
        return cls(*(data.get(outcome.value, 0) for outcome in RecordOutcome))

    def to_dict(self) -> dict[str, int]:
        """Keyed by the outcomes' strings (``{"no-sandbox-key": 0, ...}``)."""
        return {outcome.value: self[outcome] for outcome in RecordOutcome}


@dataclass(frozen=True, slots=True)
class RecordReport:
    """One record's line in a :class:`FleetReclaimReport`."""

    run_id: str
    sandbox_key: str | None
    outcome: RecordOutcome
    error: str | None
    """The destroy's error message (``destroy-failed``) or the store's (``error``)."""
    duration_ms: int
    """From the record's start to its end."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecordReport:
        return cls(
            data["runId"], data.get("sandboxKey"), RecordOutcome(data["outcome"]), data.get("error"), data["durationMs"]
        )

    def to_dict(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"runId": self.run_id}
        _optional(wire, "sandboxKey", self.sandbox_key)
        wire["outcome"] = self.outcome.value
        _optional(wire, "error", self.error)
        wire["durationMs"] = self.duration_ms
        return wire


@dataclass(frozen=True, slots=True)
class FleetReclaimReport:
    """What :func:`reclaim_all` answers: counts, and one line per record in the order given."""

    total: int
    counts: OutcomeCounts
    records: list[RecordReport]
    elapsed_ms: int

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FleetReclaimReport:
        return cls(
            data["total"],
            OutcomeCounts.from_dict(data["counts"]),
            [RecordReport.from_dict(record) for record in data["records"]],
            data["elapsedMs"],
        )

    def to_dict(self) -> dict[str, Any]:
        """The camelCase JSON form, as the core produced it."""
        return {
            "total": self.total,
            "counts": self.counts.to_dict(),
            "records": [record.to_dict() for record in self.records],
            "elapsedMs": self.elapsed_ms,
        }


# ---- reconcile ----


@dataclass(frozen=True, slots=True)
class Action:
    """One sandbox a :func:`reconcile` pass acted on (or would, in a dry run)."""

    reason: ActionReason
    provider: str
    provider_sandbox_id: str
    key: str | None
    result: ActionResult
    error: str | None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Action:
        return cls(
            ActionReason(data["reason"]),
            data["provider"],
            data["providerSandboxId"],
            data.get("key"),
            ActionResult(data["result"]),
            data.get("error"),
        )

    def to_dict(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "reason": self.reason.value,
            "provider": self.provider,
            "providerSandboxId": self.provider_sandbox_id,
        }
        _optional(wire, "key", self.key)
        wire["result"] = self.result.value
        _optional(wire, "error", self.error)
        return wire


@dataclass(frozen=True, slots=True)
class LeakCounts:
    """The leak side of a provider's pass."""

    due: int
    """Due entries claimed (or listed, in a dry run)."""
    destroyed: int
    failed: int
    deferred: int

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LeakCounts:
        return cls(data["due"], data["destroyed"], data["failed"], data["deferred"])

    def to_dict(self) -> dict[str, Any]:
        return {"due": self.due, "destroyed": self.destroyed, "failed": self.failed, "deferred": self.deferred}


_ORPHAN_COUNTS = ("listed", "foreign", "referenced", "young", "found", "destroyed", "failed", "deferred")


@dataclass(frozen=True, slots=True)
class OrphanCounts:
    """The orphan side of a provider's pass."""

    status: SweepStatus
    error: str | None
    listed: int
    """Sandboxes the provider listed."""
    foreign: int
    """Listed under another owner: never touched."""
    referenced: int
    """Referenced by a record or a ledger entry."""
    young: int
    """Unreferenced but inside the grace period."""
    found: int
    """Orphans found (destroyed, failed, deferred or planned)."""
    destroyed: int
    failed: int
    deferred: int

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OrphanCounts:
        return cls(SweepStatus(data["status"]), data.get("error"), *(data[name] for name in _ORPHAN_COUNTS))

    def to_dict(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"status": self.status.value}
        _optional(wire, "error", self.error)
        for name in _ORPHAN_COUNTS:
            wire[name] = getattr(self, name)
        return wire


@dataclass(frozen=True, slots=True)
class ProviderReport:
    """One provider's part of a :class:`ReconcileReport`."""

    name: str
    leaks: LeakCounts
    orphans: OrphanCounts

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProviderReport:
        return cls(data["name"], LeakCounts.from_dict(data["leaks"]), OrphanCounts.from_dict(data["orphans"]))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "leaks": self.leaks.to_dict(), "orphans": self.orphans.to_dict()}


@dataclass(frozen=True, slots=True)
class IdleCounts:
    """The idle-expiry part of a :class:`ReconcileReport`."""

    enabled: bool
    stale: int
    """Stale records read."""
    expired: int
    """Expired into the ledger (or planned, in a dry run)."""
    touched: int
    """Updated since they were read: left alone."""
    skipped: int
    """Of a provider this pass does not know: left alone."""

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> IdleCounts:
        return cls(data["enabled"], data["stale"], data["expired"], data["touched"], data["skipped"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "stale": self.stale,
            "expired": self.expired,
            "touched": self.touched,
            "skipped": self.skipped,
        }


@dataclass(frozen=True, slots=True)
class ActionCounts:
    """Actions per result."""

    planned: int
    destroyed: int
    failed: int
    deferred: int
    touched: int

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ActionCounts:
        return cls(data["planned"], data["destroyed"], data["failed"], data["deferred"], data["touched"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "planned": self.planned,
            "destroyed": self.destroyed,
            "failed": self.failed,
            "deferred": self.deferred,
            "touched": self.touched,
        }


@dataclass(frozen=True, slots=True)
class ReconcileReport:
    """What :func:`reconcile` answers."""

    dry_run: bool
    host: str
    started_at: int
    """Epoch milliseconds."""
    elapsed_ms: int
    cut_short: bool
    """The budget ran out or the pass was stopped before it was done."""
    idle: IdleCounts
    providers: list[ProviderReport]
    counts: ActionCounts
    actions: list[Action]

    @property
    def still_leaking(self) -> bool:
        """Whether anything may still be billing after the pass: a failed or
        deferred destroy, a pass cut short, or a provider whose sweep could
        not run (a provider that cannot list at all does not count: no pass
        will ever sweep it)."""
        return (
            self.counts.failed > 0
            or self.counts.deferred > 0
            or self.cut_short
            or any(
                provider.orphans.status is SweepStatus.UNAVAILABLE and provider.orphans.error != _CANNOT_LIST
                for provider in self.providers
            )
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReconcileReport:
        return cls(
            data["dryRun"],
            data["host"],
            data["startedAt"],
            data["elapsedMs"],
            data["cutShort"],
            IdleCounts.from_dict(data["idle"]),
            [ProviderReport.from_dict(provider) for provider in data["providers"]],
            ActionCounts.from_dict(data["counts"]),
            [Action.from_dict(action) for action in data["actions"]],
        )

    def to_dict(self) -> dict[str, Any]:
        """The camelCase JSON form, as the core produced it."""
        return {
            "dryRun": self.dry_run,
            "host": self.host,
            "startedAt": self.started_at,
            "elapsedMs": self.elapsed_ms,
            "cutShort": self.cut_short,
            "idle": self.idle.to_dict(),
            "providers": [provider.to_dict() for provider in self.providers],
            "counts": self.counts.to_dict(),
            "actions": [action.to_dict() for action in self.actions],
        }
