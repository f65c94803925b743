"""Coroutine plumbing the driver needs: a coroutine whose first step already
ran (so a fleet pass runs a host coroutine's first step at once, as JS runs an
async function's), and the clean-up of ones it never awaits or tasks it
drops, so asyncio never warns about them."""

from __future__ import annotations

import asyncio
import collections
import types
from collections.abc import Generator
from typing import Any

__all__ = ["Suspended", "close_unawaited", "consume", "first_step"]


def consume(task: asyncio.Future[Any]) -> None:
    """Retrieves a dropped task's outcome so asyncio never warns about it."""
    if not task.cancelled():
        task.exception()


def close_unawaited(awaitable: object) -> bool:
    """Closes a coroutine never awaited (no "never awaited" warning); answers False."""
    if isinstance(awaitable, (types.CoroutineType, Suspended)):
        awaitable.close()
    return False


_STEPPED = object()  # a Suspended whose first yield was handed on


class Suspended(collections.abc.Coroutine[Any, Any, Any]):
    """A coroutine whose first step already ran and suspended on ``yielded``:
    as a coroutine itself, it hands ``yielded`` on at its first step and then
    is the coroutine, so a task (or an ``await``) runs it as if from the start."""

    __slots__ = ("coroutine", "yielded")

    def __init__(self, coroutine: types.CoroutineType[Any, Any, Any], yielded: Any) -> None:
        self.coroutine, self.yielded = coroutine, yielded

    def send(self, value: Any) -> Any:
        yielded = self.yielded
        if yielded is _STEPPED:
            return self.coroutine.send(value)
        self.yielded = _STEPPED
        return yielded

    def throw(self, *error: Any) -> Any:
        self.yielded = _STEPPED
        return self.coroutine.throw(*error)

    def close(self) -> None:
        self.coroutine.close()

    def __await__(self) -> Generator[Any, None, Any]:
        return self

    def __iter__(self) -> Suspended:
        return self

    def __next__(self) -> Any:
        return self.send(None)


def first_step(coroutine: types.CoroutineType[Any, Any, Any]) -> tuple[bool, Any, bool]:
    """Runs ``coroutine``'s first step: ``(True, result, False)`` if it returned,
    ``(True, error, True)`` if it raised (as its task would fail), else
    ``(False, Suspended, False)`` to await or run as a task from where it stopped."""
    try:
        return False, Suspended(coroutine, coroutine.send(None)), False
    except StopIteration as done:  # it returned (PEP 479: never one it raised)
        return True, done.value, False
    except (Exception, asyncio.CancelledError) as error:  # noqa: BLE001 - as its task would fail
        return True, error, True
