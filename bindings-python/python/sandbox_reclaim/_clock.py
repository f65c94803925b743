"""Where the driver's time comes from: the wall clock and the running loop's
timers, or (in the vector suite) a virtual clock with the same two methods."""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any, Protocol


class Clock(Protocol):
    """The driver's time source."""

    def now(self) -> int:
        """Epoch milliseconds."""

    async def wait(self, waker: asyncio.Future[None], stop: asyncio.Future[Any] | None, deadline: int | None) -> None:
        """Returns once ``waker`` (the driver's own future, which this may
        complete) or ``stop`` is done, or ``deadline`` has passed."""


class WallClock:
    """The real clock: ``time.time`` and the running loop's timers."""

    def now(self) -> int:
        return time.time_ns() // 1_000_000

    async def wait(self, waker: asyncio.Future[None], stop: asyncio.Future[Any] | None, deadline: int | None) -> None:
        # What asyncio.wait does, without its sets and its own waiter: this
        # runs once per settled effect of a fleet pass.
        wake = functools.partial(_wake, waker)
        if stop is not None:
            stop.add_done_callback(wake)
        timer = None
        if deadline is not None:
            loop = asyncio.get_running_loop()
            timer = loop.call_at(loop.time() + max(0.0, (deadline - self.now()) / 1000), wake)
        try:
            if not waker.done() and (stop is None or not stop.done()):
                await waker
        finally:
            if timer is not None:
                timer.cancel()
            if stop is not None:
                stop.remove_done_callback(wake)


def _wake(waker: asyncio.Future[None], *_: object) -> None:
    if not waker.done():
        waker.set_result(None)


current: Clock = WallClock()  # the driver reads the time here


def set_clock(clock: Clock) -> Clock:
    """Internal, for tests: replaces the driver's clock; returns the previous one."""
    global current
    previous, current = current, clock
    return previous


def now() -> int:
    """The driver's clock, epoch milliseconds (virtual in the vector suite)."""
    return current.now()
