"""What every reclaiming client does for its sessions, whatever the vendor:
label at create, record as soon as the backend id exists, and at teardown
destroy by id with the reference's rules (:func:`sandbox_reclaim.reclaim_sandbox`:
destroy before deleting the record, already gone is success, a failure kept
in the leak ledger and logged through the SDK's logger).

The SDK's own shutdown always runs first and keeps its behaviour (snapshots,
``pause_on_exit``); ours only confirms, by id, that the sandbox is gone.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import _native
from .._flows import reclaim_sandbox
from .._protocols import SandboxInstanceStore, SandboxProvider
from .._providers import DEFAULT_OWNER
from .._records import ReclaimOutcome, SandboxInstanceRecord
from .._stores import SqliteSandboxInstanceStore


@dataclass(frozen=True)
class Vendor:
    """One SDK client's facts: where its session state keeps the backend id,
    and how our provider for it is made (``state`` is the first session's,
    for what only it knows, as the Docker image)."""

    backend_id: str
    """The SDK client's ``backend_id`` (``"docker"``, ``"e2b"``, ...)."""
    id_field: str
    """The session state's field holding the vendor's sandbox id."""
    provider: Callable[[Any, str, Any], SandboxProvider]
    """``provider(client, owner, state)``: this project's provider that destroys by id."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class Reclaim:
    """The record-and-destroy side of one reclaiming client (shared by every
    session it creates or resumes)."""

    def __init__(
        self,
        vendor: Vendor,
        client: object,
        *,
        instances: SandboxInstanceStore | None,
        owner: str | None,
        provider: SandboxProvider | None,
        logger: Any,
    ) -> None:
        if owner is not None and not isinstance(owner, str):
            raise TypeError(f"`owner` must be a str, got {type(owner).__name__}")
        self.vendor = vendor
        self._client = client
        self.owner = DEFAULT_OWNER if owner is None else owner
        # The core's rule for owners, checked before anything is created.
        _native.creation_labels(self.owner, None, 0)
        self._instances = instances
        self._provider = provider
        self._logger = logger
        self._opening: asyncio.Lock | None = None

    def labels(self) -> dict[str, str]:
        """What a sandbox is labelled with at create (the core's label names):
        our owner, and its creation time, so a sandbox whose record never got
        written is still swept once it is old."""
        labels: dict[str, str] = _native.creation_labels(self.owner, None, _now_ms())
        return labels

    @staticmethod
    def merged(user: Mapping[str, str] | None, ours: Mapping[str, str]) -> dict[str, str]:
        """``ours`` beneath what the user set: a user's value is never overridden."""
        return {**ours, **(user or {})}

    async def store(self) -> SandboxInstanceStore:
        """The store (the command's default SQLite store unless one was given),
        opened once, on first use."""
        if self._instances is not None:
            return self._instances
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._instances is None:
                path = _native.default_store_path()
                # As the command does for its default store: the directory is made on first use.
                os.makedirs(os.path.dirname(path), exist_ok=True)
                self._instances = await SqliteSandboxInstanceStore.open(path)
        return self._instances

    def provider(self, state: Any) -> SandboxProvider:
        if self._provider is None:
            self._provider = self.vendor.provider(self._client, self.owner, state)
        return self._provider

    @staticmethod
    def key(state: Any) -> str:
        """The record's key: the SDK's session id."""
        return str(state.session_id)

    def sandbox_id(self, state: Any) -> str | None:
        value = getattr(state, self.vendor.id_field, None)
        return value if isinstance(value, str) and value else None

    async def record(self, state: Any) -> None:
        """Writes (or rewrites) the session's record once its backend id exists."""
        sandbox_id = self.sandbox_id(state)
        if sandbox_id is None:
            return
        key = self.key(state)
        record = SandboxInstanceRecord(
            key=key,
            provider=self.provider(state).name,
            provider_sandbox_id=sandbox_id,
            thread_id=key,
            updated_at=_now_ms(),
        )
        await _call(await self.store(), "upsert", record)

    async def reclaim(self, key: str, state: Any) -> ReclaimOutcome:
        """The reference's reclaim of the sandbox recorded under ``key``."""
        return await reclaim_sandbox(
            {"runId": key, "threadId": key, "status": "completed", "startedAt": 0, "sandboxKey": key},
            provider=self.provider(state),
            instances=await self.store(),
            logger=self._logger,
        )

    async def finish(self, state: Any) -> ReclaimOutcome | None:
        """After the SDK's teardown: destroy by id and delete the record,
        unless the SDK keeps the sandbox on purpose (``pause_on_exit``: the
        record stays, so a sweep sees it referenced until it idles out)."""
        if getattr(state, "pause_on_exit", False):
            return None
        if self.sandbox_id(state) is None:
            return None
        return await self.reclaim(self.key(state), state)


async def _call(target: object, name: str, *args: object) -> object:
    result = getattr(target, name)(*args)
    if isinstance(result, Awaitable):
        return await result
    return result
