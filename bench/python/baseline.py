"""A straightforward pure-Python asyncio implementation of the reclaim rules,
written for the benchmark only (it is what a Python user would write by hand;
it is not part of the package)."""

from __future__ import annotations

from typing import Any

from sandbox_reclaim import ReclaimOutcome, RunRecord


async def reclaim_sandbox_pure(record: RunRecord, *, provider: Any, instances: Any, logger: Any = None) -> ReclaimOutcome:
    """The reference's reclaimSandbox, line for line, with awaited host methods."""
    key = record.sandbox_key
    if key is None:
        return ReclaimOutcome.NO_SANDBOX_KEY
    instance = await instances.get(key)
    if instance is None:
        return ReclaimOutcome.NOT_FOUND
    if instance.provider != provider.name:
        if logger is not None:
            logger.warn(
                "reclaim: instance record belongs to a different provider; refusing to destroy",
                {
                    "runId": record.run_id,
                    "sandboxKey": key,
                    "recordProvider": instance.provider,
                    "reclaimerProvider": provider.name,
                },
            )
        return ReclaimOutcome.PROVIDER_MISMATCH
    destroy_failed = False
    try:
        await provider.destroy(instance.provider_sandbox_id)
    except Exception as error:
        destroy_failed = True
        if logger is not None:
            logger.warn(
                "reclaim: provider destroy failed; deleting the record anyway",
                {
                    "runId": record.run_id,
                    "sandboxKey": key,
                    "providerSandboxId": instance.provider_sandbox_id,
                    "error": error,
                },
            )
    await instances.delete(key)
    return ReclaimOutcome.DESTROY_FAILED if destroy_failed else ReclaimOutcome.DESTROYED
