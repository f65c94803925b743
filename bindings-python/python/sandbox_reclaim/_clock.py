"""Where the driver's time comes from: the wall clock and the running loop's
timers, or (in the vector suite) a virtual clock with the same two methods."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Protocol


class Clock(Protocol):
    """The driver's time source."""

    def now(self) -> int:
        """Epoch milliseconds."""

    async def wait(self, pending: set[asyncio.Future[Any]], deadline: int | None) -> None:
        """Returns once one of ``pending`` is done or ``deadline`` has passed."""


class WallClock:
    """The real clock: ``time.time`` and the running loop's timers."""

    def now(self) -> int:
        return time.time_ns() // 1_000_000

    async def wait(self, pending: set[asyncio.Future[Any]], deadline: int | None) -> None:
        timeout = None if deadline is None else max(0.0, (deadline - self.now()) / 1000)
        if pending:
            await asyncio.wait(pending, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        elif timeout is not None:
            await asyncio.sleep(timeout)
