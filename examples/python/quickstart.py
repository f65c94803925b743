"""Quickstart: reclaim the sandboxes of finished agent runs.

Run: .venv/bin/python examples/python/quickstart.py
"""

from __future__ import annotations

import asyncio
import logging

from sandbox_reclaim import (
    InMemorySandboxInstanceStore,
    ReclaimOutcome,
    RunRecord,
    RunStatus,
    SandboxInstanceRecord,
    SandboxReclaimFailedError,
    reclaim_sandbox,
    sandbox_reclaimer,
)


class DockerProvider:
    """A stand-in provider: a real one would call the container engine."""

    name = "docker"

    def __init__(self) -> None:
        self.running = {"ctr-1", "ctr-2"}

    async def destroy(self, sandbox_id: str) -> None:
        if sandbox_id == "ctr-2":
            raise ConnectionError("container engine unreachable")
        self.running.discard(sandbox_id)


async def main() -> None:
    logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(message)s runId=%(runId)s")
    logger = logging.getLogger("reclaim")

    instances = InMemorySandboxInstanceStore()
    for key, container in (("thread-1:sandbox", "ctr-1"), ("thread-2:sandbox", "ctr-2")):
        await instances.upsert(SandboxInstanceRecord(key, "docker", container, key.split(":")[0], 1_700_000_000_000))
    provider = DockerProvider()

    # A finished run that ran in a sandbox: destroy it, then forget it.
    run = RunRecord("run-1", "thread-1", RunStatus.COMPLETED, 1_700_000_000_000, sandbox_key="thread-1:sandbox")
    outcome = await reclaim_sandbox(run, provider=provider, instances=instances, logger=logger)
    assert outcome is ReclaimOutcome.DESTROYED
    print(f"run-1: {outcome}")

    # A sweep's reclaim hook: raises when the sandbox may still be running.
    reclaim = sandbox_reclaimer(provider=provider, instances=instances, logger=logger)
    wire_record = {"runId": "run-2", "threadId": "thread-2", "status": "failed", "startedAt": 0, "sandboxKey": "thread-2:sandbox"}
    try:
        await reclaim(wire_record)
    except SandboxReclaimFailedError as error:
        print(f"run-2: {error.run_id} {error.sandbox_key}: destroy failed, sandbox may still be running")

    print(f"records left: {len(instances)}; still running: {sorted(provider.running)}")


if __name__ == "__main__":
    asyncio.run(main())
