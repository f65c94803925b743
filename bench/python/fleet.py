"""Fleet wall time, side by side in one process: ``reclaim_all`` of N records
(default 2,000) at concurrency 64 against a provider whose destroy takes
20 ms, with the native in-memory store, SQLite and PostgreSQL, against the
ideal (⌈N / 64⌉ waves of 20 ms; N × 20 ms / 64 when destroys take 15–25 ms)
and against a sequential loop of ``reclaim_sandbox`` over the same records
(the reference's way). Each ``reclaim_all`` pass runs ``FLEET_PASSES`` times
(default 5): the median and the range are printed.

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
PASSES = max(1, int(os.environ.get("FLEET_PASSES") or 5))


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
    # The best a perfect scheduler does: whole waves of LATENCY, or the work bound when destroys vary.
    ideal = -(-count // CONCURRENCY) * LATENCY
    varied_ideal = count * LATENCY / CONCURRENCY
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

    async def passes(store: sr.SandboxInstanceStore) -> list[float]:
        """``store`` reclaimed PASSES times (refilled before each): the sorted wall times."""
        times = []
        for _ in range(PASSES):
            await fill(store, count)
            times.append(await timed(sr.reclaim_all(runs, provider=provider, instances=store, concurrency=CONCURRENCY)))
        return sorted(times)

    results = [("in-memory", await passes(sr.InMemorySandboxInstanceStore()), ideal)]
    with tempfile.TemporaryDirectory() as folder:
        sqlite = await sr.SqliteSandboxInstanceStore.open(str(Path(folder) / "fleet.sqlite"))
        results.append(("SQLite", await passes(sqlite), ideal))
        await sqlite.close()
    # PostgreSQL, in a schema of its own (make bench starts a server).
    url = os.environ.get("SANDBOX_RECLAIM_PG_URL")
    if url:
        postgres = await sr.PostgresSandboxInstanceStore.connect(url, schema=f"fleet_bench_py_{os.getpid()}", max_connections=16)
        results.append(("PostgreSQL", await passes(postgres), ideal))
        # The same passes with destroys that do not end in lockstep (same mean).
        provider.varied = True
        for label, store in (("in-memory", sr.InMemorySandboxInstanceStore()), ("PostgreSQL", postgres)):
            results.append((f"{label}, destroy 15–25 ms", await passes(store), varied_ideal))
        provider.varied = False
        await postgres.close()
    loop_store = sr.InMemorySandboxInstanceStore()
    await fill(loop_store, count)

    async def sequential() -> None:
        for run in runs:
            assert await sr.reclaim_sandbox(run, provider=provider, instances=loop_store) == sr.ReclaimOutcome.DESTROYED

    sequential_s = await timed(sequential())
    print(
        f"reclaim_all of {count} records, destroy {LATENCY * 1000:.0f} ms, concurrency {CONCURRENCY}; ideal {ideal * 1000:.1f} ms "
        f"(15–25 ms destroys: {varied_ideal * 1000:.1f} ms); median of {PASSES} passes; python {sys.version.split()[0]}"
    )
    for label, times, best in results:
        seconds = times[len(times) // 2]
        spread = f"{times[0] / best:.3f}–{times[-1] / best:.3f}×"
        print(f"  reclaim_all {label:<10} {seconds * 1000:8.1f} ms   {seconds / best:.3f}× ideal ({spread})   {sequential_s / seconds:.1f}× faster than the sequential loop")
    print(f"  sequential reclaim_sandbox loop {sequential_s * 1000:8.1f} ms   {sequential_s / ideal:.1f}× ideal")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
