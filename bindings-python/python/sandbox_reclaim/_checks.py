"""Argument checks shared by the package's public functions: a string that
cannot cross into Rust exactly is refused with ``TypeError`` naming the
argument. Every number a store takes crosses as it is: the core checks its
type and range (``proto/src/options/arguments.rs``) and the native module raises its
refusal as ``TypeError`` / ``ValueError``; so does a record's
whole-number field (``_native.check_record_whole``)."""

from __future__ import annotations

def exact(value: str, name: str) -> str:
    """A string for the core: one holding a lone surrogate cannot cross into
    Rust unchanged, so it is refused (``TypeError`` naming it), never altered."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise TypeError(f"`{name}` must not contain a lone surrogate (it cannot be carried exactly)") from None
    return value


def exact_ids(value: object, name: str) -> list[str]:
    """A list of sandbox ids for the core (a list or tuple of ``str``): a
    ``TypeError`` naming the argument (or its item) for anything else, and
    each item checked as :func:`exact` checks a string."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"`{name}` must be a list of str, got {type(value).__name__}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise TypeError(f"`{name}[{index}]` must be a str, got {type(item).__name__}")
        exact(item, f"{name}[{index}]")
    return list(value)
