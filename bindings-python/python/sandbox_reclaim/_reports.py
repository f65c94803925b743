"""What the fleet passes answer: :func:`reclaim_all`'s
:class:`FleetReclaimReport` and :func:`reconcile`'s :class:`ReconcileReport`.

Frozen dataclasses with snake_case fields, built from the JSON report the
core produced; ``to_dict()`` gives that camelCase JSON form back exactly (the
form the Node binding answers and the vectors describe). No rule lives here:
every number was decided by the core, and no field is mapped by hand: each
class declares its fields, and one generic conversion (:class:`_WireForm`)
reads and writes them (``duration_ms`` ↔ ``durationMs``, enums by value,
nested reports, lists, absent optional fields). A new report field is one
line here.
"""

from __future__ import annotations

import dataclasses
import enum
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar, Union, get_args, get_origin, get_type_hints

_Self = TypeVar("_Self", bound="_WireForm")
_Codec = tuple[str, str, Callable[[Any], Any], Callable[[Any], Any], str]
"""A field's codec: attribute, wire key, decode, encode, and when absent: ``none``, ``default`` or ``required``."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _codecs_of(hint: Any) -> tuple[Callable[[Any], Any], Callable[[Any], Any], bool]:
    """How to decode and encode a value of type ``hint``, and whether it is optional."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        (inner,) = [arg for arg in get_args(hint) if arg is not type(None)]
        decode, encode, _ = _codecs_of(inner)
        return (lambda value: None if value is None else decode(value)), encode, True
    if origin is list:
        item_decode, item_encode, _ = _codecs_of(get_args(hint)[0])
        return (lambda value: [item_decode(item) for item in value]), (lambda value: [item_encode(item) for item in value]), False
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint, (lambda value: value.value), False
    if isinstance(hint, type) and issubclass(hint, _WireForm):
        return hint.from_dict, (lambda value: value.to_dict()), False
    return (lambda value: value), (lambda value: value), False


class _WireForm:
    """Reads and writes a report dataclass's JSON form, field by declared type."""

    __slots__ = ()
    _wire_keys: ClassVar[Callable[[str], str]] = staticmethod(_camel)
    _codecs: ClassVar[dict[type, list[_Codec]]] = {}

    @classmethod
    def _fields(cls) -> list[_Codec]:
        found = _WireForm._codecs.get(cls)
        if found is None:
            hints = get_type_hints(cls)
            found = []
            for field in dataclasses.fields(cls):  # type: ignore[arg-type]
                decode, encode, optional = _codecs_of(hints[field.name])
                absent = "default" if field.default is not dataclasses.MISSING else "none" if optional else "required"
                found.append((field.name, cls._wire_keys(field.name), decode, encode, absent))
            _WireForm._codecs[cls] = found
        return found

    @classmethod
    def from_dict(cls: type[_Self], data: Mapping[str, Any]) -> _Self:
        """Reads the camelCase JSON form the core produced."""
        given: dict[str, Any] = {}
        for name, key, decode, _, absent in cls._fields():
            if key in data:
                given[name] = decode(data[key])
            elif absent == "none":
                given[name] = None
            elif absent == "required":
                raise KeyError(f"{cls.__name__}: the report has no {key!r}")
        return cls(**given)

    def to_dict(self) -> dict[str, Any]:
        """The camelCase JSON form, as the core produced it (absent fields left out)."""
        wire: dict[str, Any] = {}
        for name, key, _, encode, _ in self._fields():
            value = getattr(self, name)
            if value is not None:
                wire[key] = encode(value)
        return wire


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


# ---- reclaim_all ----


@dataclass(frozen=True, slots=True)
class OutcomeCounts(_WireForm):
    """Records per outcome."""

    no_sandbox_key: int = 0
    not_found: int = 0
    provider_mismatch: int = 0
    destroyed: int = 0
    destroy_failed: int = 0
    error: int = 0
    deferred: int = 0
    duplicate: int = 0

    # Keyed by the outcomes' strings (``{"no-sandbox-key": 0, ...}``).
    _wire_keys: ClassVar[Callable[[str], str]] = staticmethod(lambda name: name.replace("_", "-"))

    def __getitem__(self, outcome: RecordOutcome | str) -> int:
        """The count of one outcome: ``counts[RecordOutcome.DESTROYED]`` or ``counts["destroyed"]``."""
        value: int = getattr(self, RecordOutcome(outcome).name.lower())
        return value


@dataclass(frozen=True, slots=True)
class RecordReport(_WireForm):
    """One record's line in a :class:`FleetReclaimReport`."""

    run_id: str
    sandbox_key: str | None
    outcome: RecordOutcome
    error: str | None
    """The destroy's error message (``destroy-failed``) or the store's (``error``)."""
    duration_ms: int
    """From the record's start to its end."""


@dataclass(frozen=True, slots=True)
class FleetReclaimReport(_WireForm):
    """What :func:`reclaim_all` answers: counts, and one line per record in the order given."""

    total: int
    counts: OutcomeCounts
    records: list[RecordReport]
    elapsed_ms: int


# ---- reconcile ----


@dataclass(frozen=True, slots=True)
class Action(_WireForm):
    """One sandbox a :func:`reconcile` pass acted on (or would, in a dry run)."""

    reason: ActionReason
    provider: str
    provider_sandbox_id: str
    key: str | None
    result: ActionResult
    error: str | None


@dataclass(frozen=True, slots=True)
class LeakCounts(_WireForm):
    """The leak side of a provider's pass."""

    due: int
    """Due entries claimed (or listed, in a dry run)."""
    destroyed: int
    failed: int
    deferred: int
    lease_lost: int
    """Outcomes the store refused to write because another pass had taken
    the entry's claim meanwhile (also counted in ``destroyed`` or ``failed``)."""


@dataclass(frozen=True, slots=True)
class OrphanCounts(_WireForm):
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
    deleting: int = 0
    """Already being deleted by the vendor (Daytona ``destroying``): never destroyed again."""


@dataclass(frozen=True, slots=True)
class ProviderReport(_WireForm):
    """One provider's part of a :class:`ReconcileReport`."""

    name: str
    leaks: LeakCounts
    orphans: OrphanCounts


@dataclass(frozen=True, slots=True)
class IdleCounts(_WireForm):
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


@dataclass(frozen=True, slots=True)
class ActionCounts(_WireForm):
    """Actions per result."""

    planned: int
    destroyed: int
    failed: int
    deferred: int
    touched: int


@dataclass(frozen=True, slots=True)
class ReconcileReport(_WireForm):
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
    still_leaking: bool
    """Whether anything may still be billing after the pass, as the core
    decided: a failed or deferred destroy, a destroy a dry run planned, a
    pass cut short, or a sweep that failed closed (a provider that cannot
    list at all does not count: no pass will ever sweep it)."""


