"""Side-by-side benchmark, one process: the pure-Python baseline vs the
binding with identical Python store and provider, and the binding with the
native in-memory store. Run: .venv/bin/python bench/python/bench.py [calls]."""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from baseline import reclaim_sandbox_pure  # noqa: E402

from sandbox_reclaim import _native  # noqa: E402
from sandbox_reclaim import (  # noqa: E402
    InMemorySandboxInstanceStore,
    RunRecord,
    RunStatus,
    SandboxInstanceRecord,
    reclaim_sandbox,
    sandbox_reclaimer,
)


class PyStore:
    """An in-memory Python store with async methods, as a Python user writes one."""

    def __init__(self) -> None:
        self.records: dict[str, SandboxInstanceRecord] = {}

    async def get(self, key: str) -> SandboxInstanceRecord | None:
        return self.records.get(key)

    async def upsert(self, record: SandboxInstanceRecord) -> None:
        self.records[record.key] = record

    async def delete(self, key: str) -> None:
        self.records.pop(key, None)


class PyProvider:
    name = "docker"

    async def destroy(self, sandbox_id: str) -> None:
        return None


def workload(calls: int) -> tuple[list[RunRecord], list[SandboxInstanceRecord]]:
    records = [RunRecord(f"run-{i}", f"t-{i}", RunStatus.COMPLETED, 0, sandbox_key=f"k-{i}") for i in range(calls)]
    instances = [SandboxInstanceRecord(f"k-{i}", "docker", f"ctr-{i}", f"t-{i}", 1) for i in range(calls)]
    return records, instances


Reclaim = Callable[[RunRecord], Awaitable[object]]


async def timed(reclaim: Reclaim, records: list[RunRecord]) -> float:
    started = time.perf_counter()
    for record in records:
        await reclaim(record)
    return (time.perf_counter() - started) / len(records) * 1e6


def py_store(instances: list[SandboxInstanceRecord]) -> PyStore:
    store = PyStore()
    for instance in instances:
        store.records[instance.key] = instance
    return store


def native_store(instances: list[SandboxInstanceRecord]) -> InMemorySandboxInstanceStore:
    store = InMemorySandboxInstanceStore()

    async def fill() -> None:
        for instance in instances:
            await store.upsert(instance)

    # Outside the timed loop; the store's methods are coroutines like any store's.
    coroutine = fill()
    try:
        coroutine.send(None)
    except StopIteration:
        pass
    return store


def cases(provider: PyProvider) -> dict[str, tuple[Callable[[list[SandboxInstanceRecord]], Any], Callable[[Any], Reclaim]]]:
    """label -> (store factory, reclaim callable factory)."""
    return {
        BASELINE: (py_store, lambda store: lambda r: reclaim_sandbox_pure(r, provider=provider, instances=store)),
        BINDING: (py_store, lambda store: lambda r: reclaim_sandbox(r, provider=provider, instances=store)),
        RECLAIMER: (py_store, lambda store: sandbox_reclaimer(provider=provider, instances=store)),
        NATIVE: (native_store, lambda store: lambda r: reclaim_sandbox(r, provider=provider, instances=store)),
    }


BASELINE = "pure-Python baseline, Python store"
BINDING = "binding reclaim_sandbox, Python store"
RECLAIMER = "binding sandbox_reclaimer, Python store"
NATIVE = "binding reclaim_sandbox, native store"


async def run(calls: int, chunk: int) -> dict[str, list[float]]:
    """Interleaves the cases chunk by chunk, so load from other processes
    hits them alike; returns every chunk's µs per call, per case."""
    records, instances = workload(calls)
    provider = PyProvider()
    timings: dict[str, list[float]] = {}
    for start in range(0, calls, chunk):
        batch, batch_instances = records[start : start + chunk], instances[start : start + chunk]
        for label, (make_store, make_reclaim) in cases(provider).items():
            store = make_store(batch_instances)
            gc.collect()
            timings.setdefault(label, []).append(await timed(make_reclaim(store), batch))
            # Every record was destroyed: the store is empty afterwards.
            remaining = len(store.records) if isinstance(store, PyStore) else len(store)
            assert remaining == 0, f"{label}: {remaining} records left"
    return timings


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    chunk = min(5_000, calls)
    timings = asyncio.run(run(calls, chunk))
    best = {label: min(values) for label, values in timings.items()}
    median = {label: statistics.median(values) for label, values in timings.items()}
    print(
        f"sandbox_reclaim Python bench: {calls} reclaims per case ('destroyed' path), async Python store and "
        f"provider, interleaved in chunks of {chunk}; µs per call (best chunk / median chunk)"
    )
    for label in timings:
        print(
            f"  {label:<42} {best[label]:7.3f} / {median[label]:7.3f} us   "
            f"ratio vs baseline {best[label] / best[BASELINE]:5.2f} / {median[label] / median[BASELINE]:5.2f}"
        )
    print(f"ratio binding/baseline, Python store:  {best[BINDING] / best[BASELINE]:.2f} (guard: <= 3)")
    print(f"ratio reclaimer/baseline, Python store: {best[RECLAIMER] / best[BASELINE]:.2f} (guard: <= 3)")
    print(f"ratio binding/baseline, native store:  {best[NATIVE] / best[BASELINE]:.2f} (guard: <= 3)")
    floor = boundary_floor(calls)
    print(f"the boundary alone: 4 empty native calls {floor:.3f} us = {floor / best[BASELINE]:.2f}x the baseline's whole reclaim")


def boundary_floor(calls: int) -> float:
    """A plain reclaim makes 4 native calls (start, then one per store or
    provider answer). Here, 4 calls that cross with one number and do
    nothing (``abandon`` of no run), best of 5: what no driver with 4 native
    calls can go below."""
    no_run = 0xFFFF_FFFF
    abandon = _native.abandon
    rounds = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(calls):
            abandon(no_run)
            abandon(no_run)
            abandon(no_run)
            abandon(no_run)
        rounds.append((time.perf_counter() - started) / calls * 1e6)
    return min(rounds)


if __name__ == "__main__":
    main()
