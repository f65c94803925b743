"""Argument checks shared by the package's public functions: each raises
``TypeError`` for the wrong type and ``ValueError`` for a value out of range,
naming the argument, before anything native sees it (pyo3 would raise
``OverflowError`` for an int that does not fit, naming nothing)."""

from __future__ import annotations

MAX_U32 = 2**32 - 1
"""The largest count the native side takes (pool sizes, claim limits, attempts)."""

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest epoch-milliseconds value every binding holds exactly."""


def _shown(value: int | float) -> str:
    # str() of a huge int is slow, and refused beyond 4300 digits.
    if isinstance(value, int) and value.bit_length() > 128:
        return f"an int of {value.bit_length()} bits"
    return repr(value)


def whole_number(value: object, name: str, minimum: int, maximum: int) -> int:
    """``value`` if it is an ``int`` (not a ``bool``) from ``minimum`` to
    ``maximum``; otherwise ``TypeError``/``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"`{name}` must be an int, got {type(value).__name__}")
    if not minimum <= value <= maximum:
        raise ValueError(f"`{name}` must be a whole number between {minimum} and {maximum}, got {_shown(value)}")
    return value


def seconds(value: object, name: str, maximum: float) -> float:
    """``value`` as a float if it is a number of seconds from 0 to
    ``maximum``; otherwise ``TypeError``/``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"`{name}` must be a number of seconds, got {type(value).__name__}")
    # Compared before any float(): a huge int would overflow the conversion
    # (NaN fails every comparison, so it is refused too).
    if not 0 <= value <= maximum:
        raise ValueError(f"`{name}` must be a number of seconds between 0 and {maximum}, got {_shown(value)}")
    return float(value)


def exact(value: str, name: str) -> str:
    """A string for the core: one holding a lone surrogate cannot cross into
    Rust unchanged, so it is refused (``TypeError`` naming it), never altered."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise TypeError(f"`{name}` must not contain a lone surrogate (it cannot be carried exactly)") from None
    return value
