"""A durable reclaim loop: LocalProvider sandboxes, a SQLite instance store
with a leak ledger, one destroy that fails, and retry_leaks cleaning it up.

Run: python examples/python/durable.py   (no daemon or database needed)
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import sandbox_reclaim as sr


class FlakyOnce:
    """Wraps a provider so its first destroy fails, as an engine hiccup would."""

    def __init__(self, inner: sr.LocalProvider) -> None:
        self.inner = inner
        self.failed = False

    @property
    def name(self) -> str:
        return self.inner.name

    async def destroy(self, sandbox_id: str) -> None:
        if not self.failed:
            self.failed = True
            raise RuntimeError("engine hiccup")
        await self.inner.destroy(sandbox_id)


async def main() -> None:
    with tempfile.TemporaryDirectory() as work:
        provider = sr.LocalProvider(base_dir=Path(work) / "sandboxes")
        async with await sr.SqliteSandboxInstanceStore.open(Path(work) / "instances.db") as store:
            records = []
            for index in range(3):
                key = f"thread-{index}:sandbox"
                handle = await provider.create(key)
                await store.upsert(sr.SandboxInstanceRecord(key, provider.name, handle.id, f"thread-{index}", handle.created_at))
                records.append(sr.RunRecord(f"run-{index}", f"thread-{index}", sr.RunStatus.COMPLETED, 0, sandbox_key=key))

            flaky = FlakyOnce(provider)
            for record in records:
                outcome = await sr.reclaim_sandbox(record, provider=flaky, instances=store)
                print(f"{record.run_id}: {outcome}")
            for leak in await sr.list_leaks(store):
                print(f"leak: {leak.run_id} {leak.key} attempts={leak.attempts} error={leak.last_error!r}")

            summary = await sr.retry_leaks(provider=provider, instances=store)
            print(f"retry: retried={summary.retried} destroyed={summary.destroyed} still_failing={summary.still_failing}")
            print(f"leaks left: {await store.count_leaks()}; sandboxes left: {len(await provider.list())}")


if __name__ == "__main__":
    asyncio.run(main())
