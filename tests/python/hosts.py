"""Small host objects for the behaviour tests."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

import sandbox_reclaim as sr

KEY = "thread-1:sandbox"


def run_record(key: str | None = KEY, run_id: str = "run-1") -> sr.RunRecord:
    return sr.RunRecord(run_id, "thread-1", sr.RunStatus.COMPLETED, 1_700_000_000_000, sandbox_key=key)


def instance(key: str = KEY, provider: str = "docker", sandbox_id: str = "ctr-1") -> sr.SandboxInstanceRecord:
    return sr.SandboxInstanceRecord(key, provider, sandbox_id, "thread-1", 1_700_000_000_000)


class SyncStore:
    """Plain ``def`` methods."""

    def __init__(self, *records: sr.SandboxInstanceRecord) -> None:
        self.records = {record.key: record for record in records}
        self.calls: list[tuple[str, str]] = []

    def get(self, key: str) -> sr.SandboxInstanceRecord | None:
        self.calls.append(("get", key))
        return self.records.get(key)

    def upsert(self, record: sr.SandboxInstanceRecord) -> None:
        self.records[record.key] = record

    def delete(self, key: str) -> None:
        self.calls.append(("delete", key))
        self.records.pop(key, None)


class AsyncStore(SyncStore):
    """``async def`` methods that really suspend (``asyncio.sleep(0)``)."""

    async def get(self, key: str) -> sr.SandboxInstanceRecord | None:  # type: ignore[override]
        await asyncio.sleep(0)
        return super().get(key)

    async def delete(self, key: str) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        super().delete(key)


class SyncProvider:
    def __init__(self, name: str = "docker", error: BaseException | None = None) -> None:
        self.name = name
        self.error = error
        self.destroyed: list[str] = []

    def destroy(self, sandbox_id: str) -> None:
        self.destroyed.append(sandbox_id)
        if self.error is not None:
            raise self.error


class AsyncProvider(SyncProvider):
    async def destroy(self, sandbox_id: str) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        super().destroy(sandbox_id)


class Ready:
    """An awaitable that is not a coroutine (a custom ``__await__``)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __await__(self) -> Generator[None, None, Any]:
        yield None
        return self.value


class CollectingLogger:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict[str, Any]]] = []

    def warn(self, message: str, meta: dict[str, Any]) -> None:
        self.lines.append(("warn", message, meta))

    def errors(self, message: str, meta: dict[str, Any]) -> None:
        self.lines.append(("errors", message, meta))

    def sandbox(self, message: str, meta: dict[str, Any]) -> None:
        self.lines.append(("sandbox", message, meta))


class ListingOnly:
    """A hosted provider without its lookup by id: what its listing alone
    finds (the sweep-unlabelled tests assert the listing, not the lookup)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.name: str = inner.name
        self.owner: str = inner.owner

    async def destroy(self, sandbox_id: str) -> None:
        await self._inner.destroy(sandbox_id)

    async def list_sandboxes(self) -> list[sr.ListedSandbox]:
        listed: list[sr.ListedSandbox] = await self._inner.list_sandboxes()
        return listed
