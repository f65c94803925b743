"""What the driver reads of the host's own answers before the core sees them.

Two answers cross as fields (the record ``instances.get()`` returned, the
entries ``claim_leaks()`` claimed); the others cross as the core's camelCase
JSON wire form, read here field by field from the shapes the core's operand
table publishes (``proto/src/machine/effect_table.rs``), so no answer has a converter
of its own. An item is a wire-form mapping (camelCase keys) or an object with
the contract's snake_case attributes. An answer that breaks its method's
contract is a ``TypeError``/``ValueError`` naming the method and the field,
never a guess.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from typing import Any

from . import _native
from ._checks import exact
from ._records import SandboxInstanceRecord

_UNREADABLE: str = _native.protocol()["unreadable_error_message"]
_MISSING: Any = object()
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MILLISECOND = datetime.timedelta(milliseconds=1)


def error_message(error: BaseException) -> str:
    """What a leak entry records of a destroy's exception: ``str(error)``, its
    type's name when ``__str__`` fails, the core's fallback if even that does."""
    try:
        return exact(str(error), "message")
    except Exception:  # noqa: BLE001 - a broken __str__ still failed the destroy
        try:
            return type(error).__name__
        except Exception:  # noqa: BLE001
            return _UNREADABLE


def instance_fields(found: object) -> tuple[str, str]:
    """``(provider, provider_sandbox_id)`` of what ``get`` answered: a record
    (or any object with those attributes) or a camelCase wire-form mapping,
    each field read once."""
    if type(found) is SandboxInstanceRecord:
        # A record checked its fields' types when it was made.
        provider, sandbox_id = found.provider, found.provider_sandbox_id
        if provider.isascii() and sandbox_id.isascii():
            return provider, sandbox_id
    what = "the record instances.get() returned"
    mapping = found if isinstance(found, Mapping) else None
    names = ("provider", "providerSandboxId") if mapping is not None else ("provider", "provider_sandbox_id")
    values = []
    for name in names:
        value = mapping.get(name, _MISSING) if mapping is not None else getattr(found, name, _MISSING)
        if value is _MISSING and mapping is not None:
            raise TypeError(f"{what} has no `{name}`")
        if value is _MISSING:
            raise TypeError(
                f"expected a SandboxInstanceRecord, a wire-form dict or None, got "
                f"{type(found).__name__} (no `{name}` attribute)"
            )
        if not isinstance(value, str):
            raise TypeError(f"{what}: `{name}` must be a str, got {type(value).__name__}")
        values.append(exact(value, f"{what}: `{name}`"))
    return values[0], values[1]


def claimed_sandbox_ids(entries: object) -> list[str]:
    if not isinstance(entries, list):
        raise TypeError(f"instances.claim_leaks() must return a list of LeakEntry, got {type(entries).__name__}")
    ids = []
    for index, entry in enumerate(entries):
        sandbox_id = getattr(entry, "provider_sandbox_id", None)
        if not isinstance(sandbox_id, str):
            raise TypeError(f"leak entry {index} from claim_leaks() has no str `provider_sandbox_id`")
        ids.append(exact(sandbox_id, f"leak entry {index}'s provider_sandbox_id"))
    return ids


def _text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    return exact(value, what)


def _millis(value: object, what: str) -> int:
    """Epoch milliseconds: a whole number, or an aware ``datetime``."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise TypeError(f"{what} must be a timezone-aware datetime (a naive one names no instant)")
        value = (value - _EPOCH) // _MILLISECOND
    elif isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int (epoch milliseconds), got {type(value).__name__}")
    if not 0 <= value <= 2**53 - 1:
        raise ValueError(f"{what} must be a whole number of epoch milliseconds between 0 and 2^53-1, got {value}")
    return value


def _count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**32:
        raise TypeError(f"{what} must be an int between 0 and 2^32-1")
    return value


def _flag(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be a bool, got {type(value).__name__}")
    return value


_KINDS = {"text": _text, "millis": _millis, "count": _count, "flag": _flag}


def json_reader(shape: dict[str, Any], method: str) -> Any:
    """The reader of a JSON answer of ``shape`` (the core's table) from the
    host method ``method`` (``instances.list_stale``): answer → wire JSON."""
    what = f"{method}()"
    kind, noun = shape["kind"], shape["noun"]
    fields = [(f["wire"], f["python"], _KINDS[f["kind"]], f["required"]) for f in shape["fields"]]

    def flag(answer: object) -> str:
        if not isinstance(answer, bool):
            raise TypeError(f"{what} must return a bool, got {type(answer).__name__}")
        return "true" if answer else "false"

    def mark(answer: object) -> str:
        if isinstance(answer, bool) or not isinstance(answer, int):
            raise TypeError(f"{what} must return an int (a whole number of at least 0), got {type(answer).__name__}")
        if answer < 0:
            raise ValueError(f"{what} must return a whole number of at least 0, got {answer}")
        return json.dumps(answer)

    def ids(answer: object) -> str:
        if not isinstance(answer, (list, tuple, set, frozenset)):
            raise TypeError(f"{what} must return a list of str, got {type(answer).__name__}")
        return json.dumps([_text(each, f"{noun} {what} returned") for each in answer])

    def records(answer: object) -> str:
        if not isinstance(answer, (list, tuple)):
            raise TypeError(f"{what} must return a list, got {type(answer).__name__}")
        items = []
        for index, item in enumerate(answer):
            mapping = isinstance(item, Mapping)
            wire_form: dict[str, Any] = {}
            for wire, attribute, read, required in fields:
                value = item.get(wire, _MISSING) if mapping else getattr(item, attribute, _MISSING)
                if (value is None or value is _MISSING) and not required:
                    continue
                wire_form[wire] = read(value, f"{noun} {index} of {what}: `{attribute}`")
            items.append(wire_form)
        return json.dumps(items)

    return {"flag": flag, "mark": mark, "ids": ids, "records": records}[kind]
