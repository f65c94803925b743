"""Store throughput through the Python binding: sequential upsert / get /
delete per second for the native in-memory, SQLite and PostgreSQL stores,
measured in one run (the Rust figures come from core/examples/store_bench.rs).

    SANDBOX_RECLAIM_PG_URL=postgres://... .venv/bin/python bench/python/stores.py [ops]
"""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import sandbox_reclaim as sr


def make_records(ops: int) -> list[sr.SandboxInstanceRecord]:
    return [
        sr.SandboxInstanceRecord(
            key=f"bench-key-{i}",
            provider="docker",
            provider_sandbox_id=f"ctr-{i:08}",
            latest_snapshot_id=f"snap-{i}",
            thread_id="thread-bench",
            latest_run_id=f"run-{i}",
            updated_at=1_700_000_000_000 + i,
        )
        for i in range(ops)
    ]


async def maybe_await(value: Any) -> Any:
    # The in-memory store is synchronous; the SQL stores are async.
    return await value if inspect.isawaitable(value) else value


async def timed(name: str, op: str, records: list[sr.SandboxInstanceRecord],
                body: Callable[[sr.SandboxInstanceRecord], Awaitable[None]]) -> None:
    started = time.perf_counter()
    for record in records:
        await body(record)
    per_sec = len(records) / (time.perf_counter() - started)
    print(f"python   {name:<8} {op:<7} {len(records):>7} {per_sec:>12.0f} ops/s")


async def bench(name: str, store: Any, records: list[sr.SandboxInstanceRecord]) -> None:
    async def upsert(record: sr.SandboxInstanceRecord) -> None:
        await maybe_await(store.upsert(record))

    async def get(record: sr.SandboxInstanceRecord) -> None:
        read = await maybe_await(store.get(record.key))
        if read != record:
            raise AssertionError(f"{name}: read back {read!r}")

    async def delete(record: sr.SandboxInstanceRecord) -> None:
        await maybe_await(store.delete(record.key))

    await timed(name, "upsert", records, upsert)
    await timed(name, "get", records, get)
    await timed(name, "delete", records, delete)


async def main() -> None:
    ops = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    url = os.environ.get("SANDBOX_RECLAIM_PG_URL")
    if not url:
        sys.exit("stores bench: SANDBOX_RECLAIM_PG_URL is not set (scripts/postgres.sh start DIR prints one)")
    records = make_records(ops)
    await bench("memory", sr.InMemorySandboxInstanceStore(), records)
    with tempfile.TemporaryDirectory() as work:
        sqlite = await sr.SqliteSandboxInstanceStore.open(Path(work) / "bench.sqlite")
        await bench("sqlite", sqlite, records)
        await sqlite.close()
    postgres = await sr.PostgresSandboxInstanceStore.connect(url, schema=f"bench_python_{os.getpid()}")
    await bench("postgres", postgres, records)
    await postgres.close()


if __name__ == "__main__":
    asyncio.run(main())
