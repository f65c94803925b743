"""One reconcile process of the fleet simulation (bench/sim/fleet_sim.py), in
Python: one pass over every provider the simulation runs, on its PostgreSQL
store. Providers read their vendor's own variables (the simulation sets them
to its fakes). Prints the pass's report as one JSON line."""

import asyncio
import json
import sys
import time

import sandbox_reclaim as sr


async def main(store_url: str, host: str, concurrency: int, per_provider: int, limit: int) -> None:
    providers = [sr.E2bProvider(), sr.DaytonaProvider(), sr.RunloopProvider(), sr.BlaxelProvider()]
    store = await sr.PostgresSandboxInstanceStore.connect(store_url, max_connections=8)
    started = int(time.time() * 1000)
    report = await sr.reconcile(
        providers=providers, instances=store, host=host, concurrency=concurrency, per_provider_concurrency=per_provider,
        limit=limit,
    )
    ended = int(time.time() * 1000)
    sweeps = [
        {
            "name": provider.name,
            "status": provider.orphans.status.value,
            "error": provider.orphans.error,
            "listed": provider.orphans.listed,
            "found": provider.orphans.found,
            "destroyed": provider.orphans.destroyed,
            "failed": provider.orphans.failed,
        }
        for provider in report.providers
    ]
    line = {"host": host, "language": "python", "startedAt": started, "endedAt": ended, "sweeps": sweeps}
    print(json.dumps(line), flush=True)
    await store.close()


asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))
