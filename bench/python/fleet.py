"""Fleet wall time, side by side in one process: ``reclaim_all`` of N records
(default 2,000) at concurrency 64 against a provider whose destroy takes
20 ms, with the native in-memory store and with SQLite, against the ideal
(N × 20 ms / 64) and against a sequential loop of ``reclaim_sandbox`` over the
same records (the reference's way).

    .venv/bin/python bench/python/fleet.py [records]
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import sandbox_reclaim as sr

LATENCY = 0.020
CONCURRENCY = 64


def varied_latency(sandbox_id: str) -> float:
    """15–25 ms for ``sbx-N``, spread evenly over N (mean 20 ms): a real
    provider's destroys never end in lockstep, as a fixed latency makes them."""
    return (15 + (int(sandbox_id.rsplit("-", 1)[1]) * 7919) % 11) / 1000


class Provider:
    name = "bench"

    def __init__(self) -> None:
        self.destroyed = 0
        self.varied = False

    async def destroy(self, sandbox_id: str) -> None:
        await asyncio.sleep(varied_latency(sandbox_id) if self.varied else LATENCY)
        self.destroyed += 1


async def fill(store: object, count: int) -> None:
    for n in range(count):
        record = sr.SandboxInstanceRecord(
            key=f"thread-{n}:sandbox", provider="bench", provider_sandbox_id=f"sbx-{n}", thread_id=f"thread-{n}", updated_at=1_700_000_000_000
        )
        await store.upsert(record)  # type: ignore[attr-defined]


async def main(count: int) -> None:
    ideal = count * LATENCY / CONCURRENCY
    runs = [
        sr.RunRecord(run_id=f"run-{n}", thread_id=f"thread-{n}", status=sr.RunStatus.COMPLETED, started_at=1_700_000_000_000, sandbox_key=f"thread-{n}:sandbox")
        for n in range(count)
    ]
    provider = Provider()

    async def timed(run: object) -> float:
        before = provider.destroyed
        start = time.perf_counter()
        await run  # type: ignore[misc]
        elapsed = time.perf_counter() - start
        assert provider.destroyed - before == count, "every sandbox destroyed"
        return elapsed

    memory = sr.InMemorySandboxInstanceStore()
    await fill(memory, count)
    memory_s = await timed(sr.reclaim_all(runs, provider=provider, instances=memory, concurrency=CONCURRENCY))
    with tempfile.TemporaryDirectory() as folder:
        sqlite = await sr.SqliteSandboxInstanceStore.open(str(Path(folder) / "fleet.sqlite"))
        await fill(sqlite, count)
        sqlite_s = await timed(sr.reclaim_all(runs, provider=provider, instances=sqlite, concurrency=CONCURRENCY))
        close = getattr(sqlite, "close", None)
        if close is not None:
            result = close()
            if asyncio.iscoroutine(result):
                await result
    # PostgreSQL, in a schema of its own (make bench starts a server).
    passes = [("in-memory", memory_s), ("SQLite", sqlite_s)]
    url = os.environ.get("SANDBOX_RECLAIM_PG_URL")
    if url:
        postgres = await sr.PostgresSandboxInstanceStore.connect(url, schema=f"fleet_bench_py_{os.getpid()}", max_connections=16)
        await fill(postgres, count)
        passes.append(("PostgreSQL", await timed(sr.reclaim_all(runs, provider=provider, instances=postgres, concurrency=CONCURRENCY))))
        # The same passes with destroys that do not end in lockstep (same mean, same ideal).
        provider.varied = True
        again = sr.InMemorySandboxInstanceStore()
        for label, store in (("in-memory", again), ("PostgreSQL", postgres)):
            await fill(store, count)
            passes.append((f"{label}, destroy 15–25 ms", await timed(sr.reclaim_all(runs, provider=provider, instances=store, concurrency=CONCURRENCY))))
        provider.varied = False
        await postgres.close()
    loop_store = sr.InMemorySandboxInstanceStore()
    await fill(loop_store, count)

    async def sequential() -> None:
        for run in runs:
            assert await sr.reclaim_sandbox(run, provider=provider, instances=loop_store) == sr.ReclaimOutcome.DESTROYED

    sequential_s = await timed(sequential())
    print(f"reclaim_all of {count} records, destroy {LATENCY * 1000:.0f} ms, concurrency {CONCURRENCY}; ideal {ideal * 1000:.1f} ms; python {sys.version.split()[0]}")
    for label, seconds in passes:
        print(f"  reclaim_all {label:<10} {seconds * 1000:8.1f} ms   {seconds / ideal:.3f}× ideal   {sequential_s / seconds:.1f}× faster than the sequential loop")
    print(f"  sequential reclaim_sandbox loop {sequential_s * 1000:8.1f} ms   {sequential_s / ideal:.1f}× ideal")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
