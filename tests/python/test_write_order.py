"""Native stores keep the order of writes whatever their callers do: a
cancelled ``delete`` never lands after a later ``upsert`` of the same key
(which orphaned a live sandbox: the next sweep destroyed it)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_stores import fresh_store

import sandbox_reclaim as sr


def record(key: str, updated_at: int) -> sr.SandboxInstanceRecord:
    return sr.SandboxInstanceRecord(key, "docker", f"c-{key}-{updated_at}", f"thread-{key}", updated_at)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_cancelled_delete_never_lands_after_a_later_upsert(backend: str, tmp_path: Path) -> None:
    async with fresh_store(backend, tmp_path) as store:
        for trial in range(30):
            live = f"live-{trial}"
            await store.upsert(record(live, 1))
            others = [f"o-{trial}-{n}" for n in range(15)]
            for key in others:
                await store.upsert(record(key, 1))
            busy = [asyncio.ensure_future(store.delete(key)) for key in others]
            cancelled = asyncio.ensure_future(store.delete(live))
            await asyncio.sleep(0)  # the delete has started
            cancelled.cancel()
            resumed = record(live, 2)
            await store.upsert(resumed)
            await asyncio.gather(*busy)
            # Later writes flush whatever is still queued.
            await store.upsert(record("flush", 1))
            await store.delete("flush")
            kept = await store.get(live)
            assert kept is not None, f"trial {trial}: the cancelled delete landed after the fresh upsert"
            assert (kept.provider_sandbox_id, kept.updated_at) == (resumed.provider_sandbox_id, 2)
