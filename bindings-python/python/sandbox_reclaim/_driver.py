"""The generic asyncio driver: runs any of the core's flow machines against
Python host objects. It knows effects, time and cancellation, never a flow.

A native call answers with a *batch* (run, deadline, ending, effects; layout
in ``proto/src/wire.rs``); each op's row of the core's operand table becomes a
starter once, at import (``_host_calls.py``). Host values (a raised
exception, claimed entries) stay here by effect id. Host methods may be
``def`` or ``async def``; a lone call with no deadline is awaited in place
(natively while it is the only thing a flow does: every step of a plain
reclaim). ``stoppable`` flows run each effect as a task: cancelling the
caller, or setting ``stop``, tells the machine to stop and drives it to its end.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import inspect
import types
from collections.abc import Callable
from typing import Any

from . import _native
from . import _clock as clocks
from ._clock import Clock, WallClock, now, set_clock
from ._coroutines import Suspended, close_unawaited, consume, first_step
from ._endings import finish
from ._host_answers import error_message, instance_fields
from ._host_calls import Answer, Batch, Host, starters
from ._records import SandboxInstanceRecord

__all__ = ["LEVELS", "Clock", "Host", "WallClock", "drive", "error_message", "now", "set_clock"]

_PROTOCOL = _native.protocol()
_HEADER: int = _PROTOCOL["header"]
_ENDING_OPERANDS: list[int] = _PROTOCOL["ending_operands"]
_RUNNING: int = _PROTOCOL["endings"][0]
_FAILED: int = _PROTOCOL["completions"][1]
LEVELS: tuple[str, ...] = tuple(_PROTOCOL["levels"])
_NONE: dict[int, Any] = {}  # the shared empty task table (a run needing tasks gets its own)


class _Run:
    """One flow run's host side: what it started and what the host gave back."""

    __slots__ = ("host", "run", "values", "awaiting", "settled", "tasks", "done", "waker", "cancelled", "cancelling", "replaced", "eager")

    def __init__(self, host: Host, eager: bool, values: dict[int, Any]) -> None:
        self.host, self.run, self.eager = host, -1, eager
        self.values = values
        self.awaiting: list[tuple[int, Answer, Any]] = []  # started, not yet awaited
        self.settled: list[tuple[int, Answer, Any, bool]] = []  # answered synchronously, in start order
        self.tasks: dict[int, tuple[Answer, asyncio.Future[Any]]] = _NONE
        self.done: collections.deque[tuple[int, Answer, Any]] = collections.deque()  # finished tasks
        self.waker: asyncio.Future[None] | None = None
        self.cancelled: set[int] = set()
        self.cancelling: list[asyncio.Future[Any]] = []  # tasks told to cancel, maybe not yet told
        self.replaced: Batch | None = None  # the batch a raising logger's completion answered

    def start(self, batch: Batch) -> Batch:
        """Starts every effect of ``batch``; answers the batch that stands."""
        while True:
            self.run, at, end = batch[0], _HEADER + _ENDING_OPERANDS[batch[2]], len(batch)
            while at < end and self.replaced is None:
                at = _STARTERS[batch[at]](self, batch[at + 1], batch, at + 2)
            if self.replaced is None:
                return batch
            batch, self.replaced = self.replaced, None

    def cancel(self, effect: int, batch: Batch, at: int) -> int:
        """The machine cancelled an effect (its deadline passed); its late settle is never reported."""
        target = batch[at]
        self.cancelled.add(target)
        running = self.tasks.pop(target, None)
        if running is not None:
            running[1].cancel()
            running[1].add_done_callback(consume)
            self.cancelling.append(running[1])
        # Not yet reported: drop it wherever it waits.
        self.awaiting[:] = [item for item in self.awaiting if item[0] != target or close_unawaited(item[2])]
        self.settled[:] = [item for item in self.settled if item[0] != target]
        for item in [item for item in self.done if item[0] == target]:
            self.done.remove(item)
            consume(item[2])
        return at + 1

    def call(self, effect: int, answer: Answer, method: Callable[..., Any], args: list[Any]) -> None:
        try:
            value = method(*args)
        except Exception as error:  # noqa: BLE001 - a host failure is an answer (a StopIteration too)
            self.settled.append((effect, answer, error, True))
            return
        if self.eager and type(value) is types.CoroutineType:
            # Its first step runs now, as a JS async function's does: one that
            # never suspends (an in-memory store) answers without a task.
            returned, value, failed = first_step(value)
            if returned:
                self.settled.append((effect, answer, value, failed))
                return
        if type(value) is types.CoroutineType or type(value) is Suspended or inspect.isawaitable(value):
            self.awaiting.append((effect, answer, value))
        else:
            self.settled.append((effect, answer, value, False))

    def failed(self, effect: int, error: BaseException, now: int | None = None) -> Batch:
        """The exception stays here (logs, rejections); its message goes to the machine."""
        self.values[effect] = error
        return _native.complete(self.run, effect, _FAILED, error_message(error), None, clocks.current.now() if now is None else now)

    def completion(self, effect: int, answer: Answer, value: Any, failed: bool) -> Batch:
        """Feeds one settle to the machine; answers the next batch."""
        now = clocks.current.now()
        if failed:
            return self.failed(effect, value, now)
        report, keeps = answer
        if keeps:
            self.values[effect] = value  # the entries later effects name
        return report(self, effect, value, now)

    async def wait(self, deadline: int | None, stop: asyncio.Future[Any] | None = None) -> Batch | None:
        """Several effects in flight, or a deadline: runs them as tasks; answers the
        batch of the first to settle or of the deadline; ``None`` once ``stop`` is done."""
        if self.tasks is _NONE:
            self.tasks = {}
        for effect, answer, awaitable in self.awaiting:
            task = asyncio.ensure_future(awaitable)
            self.tasks[effect] = (answer, task)
            task.add_done_callback(functools.partial(self.finished, effect))
        self.awaiting.clear()
        if not self.done:
            if not self.tasks and deadline is None and stop is None:
                raise RuntimeError("sandbox_reclaim: the flow waits on nothing (a driver bug)")
            # One future to wait on however many tasks run: each task's done callback wakes it.
            self.waker = asyncio.get_running_loop().create_future()
            try:
                await clocks.current.wait(self.waker, stop, deadline)
            finally:
                self.waker = None
        if self.done:
            effect, answer, task = self.done.popleft()
            if task.cancelled():
                return self.completion(effect, answer, asyncio.CancelledError(), True)
            failure = task.exception()
            if failure is not None and not isinstance(failure, Exception):
                raise failure
            return self.completion(effect, answer, task.result() if failure is None else failure, failure is not None)
        if stop is not None and stop.done():
            return None
        return _native.timeout(self.run, clocks.current.now())  # the deadline (an early wake-up waits again)

    def finished(self, effect: int, task: asyncio.Future[Any]) -> None:
        running = self.tasks.get(effect)
        if running is None or running[1] is not task:
            return  # cancelled by the machine, or the run was dropped
        del self.tasks[effect]
        self.done.append((effect, running[0], task))
        if self.waker is not None and not self.waker.done():
            self.waker.set_result(None)

    def drop(self) -> None:
        """The run ended: nothing it started may linger."""
        for _, task in self.tasks.values():
            task.cancel()
            task.add_done_callback(consume)
        self.tasks.clear()
        for _, _, task in self.done:
            consume(task)
        self.done.clear()
        for _, _, awaitable in self.awaiting:
            close_unawaited(awaitable)
        self.awaiting.clear()



_STARTERS = starters(cancel=_Run.cancel)  # by op number
_native.bind_inline_helpers(error_message, instance_fields, SandboxInstanceRecord, types.CoroutineType)


async def drive(start: Callable[..., Batch], arguments: tuple[Any, ...], host: Host, *,
                stoppable: bool = False, stop: asyncio.Event | None = None) -> Any:
    """Runs the flow ``start(*arguments, now)`` begins against ``host``; returns
    what the machine resolves with or raises what it rejects with. Cancelling
    a ``stoppable`` flow's caller stops the machine, drives it to its end and
    re-raises; ``stop`` stops it likewise and returns its ending. Other flows
    are abandoned where they stand, their effects cancelled."""
    values: dict[int, Any] = {}  # host values by effect id (a failed effect's exception)
    batch: Batch = start(*arguments, clocks.current.now())
    if not stoppable:
        # Lone host calls with no deadline (every step of a plain reclaim) are
        # called and awaited in place natively (src/inline.rs); it answers the
        # first other batch, unstarted, or the ending (it abandons the run if it
        # raises). Without a logger, log effects are nothing to do there either.
        clock = None if type(clocks.current) is WallClock else clocks.current.now  # None: the native side reads the wall clock
        batch = await _native.InlineSteps(batch, host.provided, host.store, values, clock, host.log is not None)
        if batch[2] != _RUNNING and len(batch) == _HEADER + _ENDING_OPERANDS[batch[2]]:
            return finish(batch, values)
    # A lone awaitable of a flow that is not stoppable is awaited in place.
    return await _drive(_Run(host, stoppable, values), batch, stoppable, stop)


async def _drive(state: _Run, batch: Batch, stoppable: bool, stop: asyncio.Event | None) -> Any:
    """``drive`` from ``batch`` on (not yet started)."""
    cancelled = stopped = False
    stop_waiter: asyncio.Future[Any] | None = None
    try:
        batch = state.start(batch)
        while batch[2] == _RUNNING:
            if state.settled:  # synchronous answers, in the order their effects started
                batch = state.start(state.completion(*state.settled.pop(0)))
            elif not stoppable:
                awaiting = state.awaiting
                if batch[1] is None and not state.tasks and not state.done and len(awaiting) == 1:
                    effect, answer, awaitable = awaiting.pop()  # alone, no deadline: awaited in place
                    try:
                        value, failed = await awaitable, False
                    except Exception as error:  # noqa: BLE001 - a host failure is an answer
                        value, failed = error, True
                    batch = state.start(state.completion(effect, answer, value, failed))
                else:
                    batch = state.start(await state.wait(batch[1]))  # type: ignore[arg-type]
            elif not stopped and (cancelled or (stop is not None and stop.is_set())):
                stopped = True
                batch = state.start(_native.stop(state.run, clocks.current.now()))
            else:
                if stop is not None and stop_waiter is None and not stopped:
                    stop_waiter = asyncio.ensure_future(stop.wait())
                try:
                    answered = await state.wait(batch[1], None if stopped else stop_waiter)
                except asyncio.CancelledError:
                    cancelled = True  # shielded: the machine stops, what runs settles or times out
                    continue
                if answered is not None:
                    batch = state.start(answered)
        if any(not task.done() for task in state.cancelling):
            # Let what the machine cancelled see its CancelledError before the
            # caller goes on (it is delivered at the loop's next turn).
            await asyncio.sleep(0)
        if cancelled:
            raise asyncio.CancelledError
        return finish(batch, state.values)
    except BaseException:
        if batch[2] == _RUNNING and state.run >= 0:
            _native.abandon(state.run)
        raise
    finally:
        if stop_waiter is not None and not stop_waiter.done():
            stop_waiter.cancel()
            stop_waiter.add_done_callback(consume)
        if state.tasks or state.awaiting or state.done:
            state.drop()
