"""Options as the core reads them: a declaration hands over the option
arguments the core names (``_native.option_names``) as plain JSON values,
and the core checks, defaults and ranges each, raising ``TypeError`` /
``ValueError`` with its own text. No option is known here."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any


class _CoreDefault:
    """The default of an argument whose default the core decides."""

    def __repr__(self) -> str:
        return "<the core's default>"


DEFAULT: Any = _CoreDefault()
"""An argument left to the core's default (see the docstrings for its value)."""

_INT_RANGE = range(-(2**63), 2**64)


def _plain(value: object) -> object:
    """``value`` as JSON, with a marker for what JSON cannot say."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value) if value in _INT_RANGE else {"$hugeInt": "-" if value < 0 else "+"}
    if isinstance(value, float):
        if value != value:
            return {"$float": "nan"}
        if value in (float("inf"), float("-inf")):
            return {"$float": "inf" if value > 0 else "-inf"}
        return value
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return {"$loneSurrogate": True}
        return value
    return {"$type": type(value).__name__}


def options_json(names: Sequence[str], arguments: Mapping[str, object]) -> str:
    """The arguments named ``names`` that were given (not :data:`DEFAULT`), as
    the core's JSON input. Every name the core lists is an argument of the
    declaration (a ``KeyError`` here is a declaration missing an option)."""
    given = {name: _plain(arguments[name]) for name in names if arguments[name] is not DEFAULT}
    return json.dumps(given)
