"""The translator of the core's compiled reclaim programs (``_program.py``):
it refuses what it cannot translate, and follows the table it is given."""

from __future__ import annotations

import json
from typing import Any

import pytest

import sandbox_reclaim as sr
from sandbox_reclaim import _native
from sandbox_reclaim._program import WALKERS, translate


def program(*instructions: dict[str, Any]) -> dict[str, Any]:
    return {"api": "reclaimSandbox", "ledger": False, "instructions": list(instructions)}


def test_every_api_and_ledger_combination_is_loaded() -> None:
    assert set(WALKERS) == {(api, ledger, native) for api in (False, True) for ledger in (False, True) for native in (False, True)}
    for api in ("reclaimSandbox", "sandboxReclaimer"):
        loaded = json.loads(_native.reclaim_program(api, True))
        assert loaded["api"] == api and loaded["ledger"] is True and loaded["instructions"]
    with pytest.raises(ValueError, match="reclaim api"):
        _native.reclaim_program("reap", False)


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        (program({"op": "teleport"}), "unknown op"),
        (program({"op": "ifNoSandboxKey", "target": 0}), "loops"),
        (program({"op": "getInstance"}), "out of range"),
        (program({"op": "log", "level": "info", "message": "m", "meta": []}), "log level"),
        (program({"op": "log", "level": "warn", "message": "m", "meta": [["k", "secret"]]}), "unknown operand"),
    ],
)
def test_untranslatable_programs_fail_loudly(broken: dict[str, Any], message: str) -> None:
    with pytest.raises(RuntimeError, match=message):
        translate(broken, native=False)


async def test_the_walk_follows_the_table_not_built_in_rules() -> None:
    """A hand-written table: the walker does what it says, nothing more."""

    class Provider:
        name = "docker"
        destroyed: list[str] = []

        def destroy(self, sandbox_id: str) -> None:
            self.destroyed.append(sandbox_id)

    lines: list[tuple[str, dict[str, Any]]] = []

    class Logger:
        def warn(self, message: str, meta: dict[str, Any]) -> None:
            lines.append((message, meta))

        errors = sandbox = warn

    walker = translate(
        program(
            {"op": "getInstance"},
            {"op": "log", "level": "warn", "message": "custom line", "meta": [["id", "providerSandboxId"]]},
            {"op": "finish", "outcome": "not-found"},
        ),
        native=False,
    )
    store = sr.InMemorySandboxInstanceStore()
    store.upsert(sr.SandboxInstanceRecord("k", "docker", "ctr-1", "t", 1))
    provider = Provider()
    outcome = await walker("run", "k", "docker", store.get, provider.destroy, store.delete, None, Logger())
    assert outcome is sr.ReclaimOutcome.NOT_FOUND
    assert lines == [("custom line", {"id": "ctr-1"})]
    assert provider.destroyed == [] and len(store) == 1, "no destroy or delete: the table had none"
