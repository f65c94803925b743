"""Records: snake_case dataclasses, camelCase wire form, and round trips
with the Node binding (records written by Node read back here, and back)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from harness import load_vectors
from services import needs

import sandbox_reclaim as sr

REPO = Path(__file__).resolve().parents[2]
NODE_BINDING = REPO / "bindings-node" / "index.mjs"
NODE_ADDON = REPO / "bindings-node" / "sandbox-reclaim.node"

FULL_RUN = {
    "runId": "run \"1\" – ü",
    "threadId": "thread-1",
    "status": "failed",
    "startedAt": 1700000000000.5,
    "finishedAt": 1700000005000,
    "error": {"message": "boom", "code": "E_TOOL", "details": [1, None, {"nested": True}]},
    "usage": {"inputTokens": 10, "outputTokens": 20, "cost": 0.0012},
    "sandboxKey": "thread-1:sandbox",
    "detachedSince": 1700000006000,
    "cancelRequested": True,
    "driverEpoch": 3,
}
FULL_INSTANCE = {
    "key": "thread-1:sandbox",
    "provider": "docker",
    "providerSandboxId": "ctr \"q\" 🚀",
    "latestSnapshotId": "snap-1",
    "threadId": "thread-1",
    "latestRunId": "run-0",
    "updatedAt": 1700000000000,
}


def test_every_vector_record_round_trips() -> None:
    for vector in load_vectors():
        if "record" in vector:  # retryLeaks vectors reclaim no run
            assert sr.RunRecord.from_dict(vector["record"]).to_dict() == vector["record"], vector["name"]
        for wire in vector["store"]["instances"]:
            assert sr.SandboxInstanceRecord.from_dict(wire).to_dict() == wire, vector["name"]


def test_every_field_round_trips_in_camel_case() -> None:
    run = sr.RunRecord.from_dict(FULL_RUN)
    assert run.status is sr.RunStatus.FAILED and run.status.is_terminal
    assert (run.run_id, run.sandbox_key, run.cancel_requested, run.driver_epoch) == (
        FULL_RUN["runId"], "thread-1:sandbox", True, 3,
    )
    assert run.to_dict() == FULL_RUN
    assert list(run.to_dict()) == list(FULL_RUN), "the core's field order"
    assert json.loads(json.dumps(run.to_dict())) == FULL_RUN
    instance = sr.SandboxInstanceRecord.from_dict(FULL_INSTANCE)
    assert instance.provider_sandbox_id == FULL_INSTANCE["providerSandboxId"]
    assert instance.to_dict() == FULL_INSTANCE


def test_json_values_are_copied_not_shared() -> None:
    wire: dict[str, Any] = json.loads(json.dumps(FULL_RUN))
    run = sr.RunRecord.from_dict(wire)
    wire["error"]["code"] = "changed"
    assert run.error is not None and run.error["code"] == "E_TOOL"
    out = run.to_dict()
    out["usage"]["inputTokens"] = 0
    assert run.usage is not None and run.usage["inputTokens"] == 10


def test_null_optionals_read_as_absent() -> None:
    run = sr.RunRecord.from_dict({**FULL_RUN, "sandboxKey": None, "error": None})
    assert run.sandbox_key is None and run.error is None
    assert "sandboxKey" not in run.to_dict()


@pytest.mark.parametrize(
    ("wire", "kind", "field"),
    [
        ({**FULL_RUN, "run_id": "x"}, ValueError, "unknown field `run_id`"),
        ({k: v for k, v in FULL_RUN.items() if k != "threadId"}, ValueError, "threadId"),
        ({**FULL_RUN, "status": "paused"}, ValueError, "status"),
        ({**FULL_RUN, "startedAt": True}, TypeError, "startedAt"),
        ({**FULL_RUN, "startedAt": float("nan")}, ValueError, "startedAt"),
        ({**FULL_RUN, "cancelRequested": "yes"}, TypeError, "cancelRequested"),
        ({**FULL_RUN, "error": {"when": object()}}, TypeError, "error"),
        ({**FULL_RUN, "usage": {1: 2}}, TypeError, "usage"),
        ([("runId", "r")], TypeError, "mapping"),
    ],
)
def test_bad_run_records_name_the_field(wire: Any, kind: type[Exception], field: str) -> None:
    with pytest.raises(kind, match=field):
        sr.RunRecord.from_dict(wire)


@pytest.mark.parametrize(
    ("wire", "kind", "field"),
    [
        ({**FULL_INSTANCE, "updatedAt": 1.5}, TypeError, "updatedAt"),
        ({**FULL_INSTANCE, "updatedAt": -1}, ValueError, "updatedAt"),
        ({**FULL_INSTANCE, "updatedAt": 2**53}, ValueError, "updatedAt"),
        ({**FULL_INSTANCE, "provider": 7}, TypeError, "provider"),
        ({k: v for k, v in FULL_INSTANCE.items() if k != "providerSandboxId"}, ValueError, "providerSandboxId"),
    ],
)
def test_bad_instance_records_name_the_field(wire: Any, kind: type[Exception], field: str) -> None:
    with pytest.raises(kind, match=field):
        sr.SandboxInstanceRecord.from_dict(wire)


FULL_LEAK_ENTRY = {
    "key": "k",
    "provider": "docker",
    "providerSandboxId": "ctr",
    "runId": "run",
    "lastError": "boom",
    "failedAt": 5,
    "attempts": 1,
}
FULL_NEW_LEAK = {k: v for k, v in FULL_LEAK_ENTRY.items() if k not in ("lastError", "attempts")} | {"errorMessage": "boom"}


@pytest.mark.parametrize(
    ("wire", "kind", "field"),
    [
        ({**FULL_LEAK_ENTRY, "failedAt": -1}, ValueError, "failedAt"),
        ({**FULL_LEAK_ENTRY, "failedAt": 2**53}, ValueError, "failedAt"),
        ({**FULL_LEAK_ENTRY, "failedAt": 2**70}, ValueError, "failedAt"),
        ({**FULL_LEAK_ENTRY, "attempts": -1}, ValueError, "attempts"),
        ({**FULL_LEAK_ENTRY, "attempts": 2**32}, ValueError, "attempts"),
        ({**FULL_LEAK_ENTRY, "attempts": 2**70}, ValueError, "attempts"),
        ({**FULL_LEAK_ENTRY, "attempts": "1"}, TypeError, "attempts"),
    ],
)
def test_bad_leak_entries_name_the_field(wire: Any, kind: type[Exception], field: str) -> None:
    with pytest.raises(kind, match=field):
        sr.LeakEntry.from_dict(wire)


@pytest.mark.parametrize(
    ("failed_at", "kind"),
    [(-1, ValueError), (2**53, ValueError), (2**70, ValueError), (10**400, ValueError), (1.5, TypeError), (True, TypeError)],
)
def test_new_leak_failed_at_out_of_range_names_the_field(failed_at: Any, kind: type[Exception]) -> None:
    with pytest.raises(kind, match="failedAt"):
        sr.NewLeak.from_dict({**FULL_NEW_LEAK, "failedAt": failed_at})
    with pytest.raises(kind, match="failed_at"):
        sr.NewLeak("k", "docker", "ctr", "run", "boom", failed_at)


def test_leak_records_at_the_edges_of_their_ranges_are_accepted() -> None:
    entry = sr.LeakEntry.from_dict({**FULL_LEAK_ENTRY, "failedAt": 2**53 - 1, "attempts": 2**32 - 1})
    assert (entry.failed_at, entry.attempts) == (2**53 - 1, 2**32 - 1)
    assert sr.NewLeak.from_dict({**FULL_NEW_LEAK, "failedAt": 0}).failed_at == 0


@pytest.mark.parametrize(
    ("value", "kind", "message"),
    [
        (-1, ValueError, r"^`limit` must be a whole number between 0 and 4294967295, got -1$"),
        (2**32, ValueError, r"between 0 and 4294967295, got 4294967296$"),
        (10**400, ValueError, r"got an int of 1329 bits$"),
        (1.0, TypeError, r"^`limit` must be an int, got float$"),
        (True, TypeError, r"^`limit` must be an int, got bool$"),
    ],
)
async def test_whole_number_names_the_argument_and_its_range(value: object, kind: type[Exception], message: str) -> None:
    # The core checks a store's numbers (proto/src/options/arguments.rs), with the text a Python check had.
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    with pytest.raises(kind, match=message):
        await store.list_stale(0, value)  # type: ignore[arg-type]


async def test_whole_number_returns_values_in_range() -> None:
    store = sr.InMemorySandboxInstanceStore.with_ledger()
    assert [await store.list_stale(0, value) for value in (0, 1, 2**32 - 1)] == [[], [], []]


def test_whole_float_timestamps_and_str_status_are_accepted() -> None:
    instance = sr.SandboxInstanceRecord.from_dict({**FULL_INSTANCE, "updatedAt": 1700000000000.0})
    assert instance.updated_at == 1700000000000 and type(instance.updated_at) is int
    run = sr.RunRecord("r", "t", "completed", 0)  # type: ignore[arg-type]
    assert run.status is sr.RunStatus.COMPLETED


def test_records_are_frozen_values() -> None:
    a, b = sr.SandboxInstanceRecord.from_dict(FULL_INSTANCE), sr.SandboxInstanceRecord.from_dict(FULL_INSTANCE)
    assert a == b and hash(a) == hash(b)
    with pytest.raises(AttributeError):
        a.key = "other"  # type: ignore[misc]


# ------------------------------------------------------ Node interop

NODE_SCRIPT = """
import { InMemorySandboxInstanceStore, reclaimSandbox } from %(binding)s;
let input = '';
for await (const chunk of process.stdin) input += chunk;
const fromPython = JSON.parse(input);

// Python -> Node: the binding's store accepts Python's instance record, and
// reclaimSandbox reads Python's run record.
const store = new InMemorySandboxInstanceStore();
await store.upsert(fromPython.instance);
const readBack = await store.get(fromPython.instance.key);
const destroyed = [];
const provider = { name: 'docker', destroy: async ({ id }) => { destroyed.push(id); } };
const outcome = await reclaimSandbox(fromPython.run, { provider, instances: store });

// Node -> Python: a record with every field, and an instance record read
// back from the binding's store.
const nodeRun = {
  runId: 'node-run', threadId: 'th', status: 'failed', startedAt: 1700000000000.25, finishedAt: 1700000001000,
  error: { message: 'tool crashed', code: 'E_TOOL', details: [1, null, { retry: false }] },
  usage: { inputTokens: 12, outputTokens: 34, cost: 0.0042 },
  sandboxKey: 'th:sandbox "q" ü', detachedSince: 1700000002000, cancelRequested: true, driverEpoch: 2,
};
const nodeStore = new InMemorySandboxInstanceStore();
await nodeStore.upsert({ key: nodeRun.sandboxKey, provider: 'docker', providerSandboxId: 'ctr-n 🚀',
  latestSnapshotId: 'snap-1', threadId: 'th', latestRunId: 'node-run', updatedAt: 1700000003000 });
const nodeInstance = await nodeStore.get(nodeRun.sandboxKey);
process.stdout.write(JSON.stringify({ readBack, outcome, destroyed, nodeRun, nodeInstance }));
"""


def node_binding_or_fail() -> str:
    """The node executable; without Node or the built binding the test
    fails under CI and is skipped otherwise (:func:`services.needs`)."""
    node = shutil.which("node")
    missing = None if node else "node is not installed"
    if node and not (NODE_BINDING.exists() and NODE_ADDON.exists()):
        missing = f"the Node binding is not built ({NODE_ADDON} missing; run make test-node)"
    if missing is not None:
        needs(missing, False, "records crossing between Python and the Node binding")
    assert node is not None
    return node


async def test_records_cross_between_python_and_the_node_binding(tmp_path: Path) -> None:
    node = node_binding_or_fail()
    script = tmp_path / "roundtrip.mjs"
    script.write_text(NODE_SCRIPT % {"binding": json.dumps(NODE_BINDING.as_uri())}, encoding="utf-8")
    python_run = sr.RunRecord.from_dict(FULL_RUN)
    python_instance = sr.SandboxInstanceRecord.from_dict({**FULL_INSTANCE, "providerSandboxId": "ctr-py"})
    payload = json.dumps({"run": python_run.to_dict(), "instance": python_instance.to_dict()})
    done = subprocess.run([node, str(script)], input=payload, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)

    assert answer["readBack"] == python_instance.to_dict(), "Node reads Python's instance record unchanged"
    assert (answer["outcome"], answer["destroyed"]) == ("destroyed", ["ctr-py"]), "Node reads Python's run record"

    node_run = sr.RunRecord.from_dict(answer["nodeRun"])
    assert node_run.to_dict() == answer["nodeRun"], "every RunRecord field survives Node -> Python -> wire"
    assert node_run.error == {"message": "tool crashed", "code": "E_TOOL", "details": [1, None, {"retry": False}]}
    node_instance = sr.SandboxInstanceRecord.from_dict(answer["nodeInstance"])
    assert node_instance.to_dict() == answer["nodeInstance"]

    # And Python reclaims with what Node wrote.
    store = sr.InMemorySandboxInstanceStore()
    await store.upsert(node_instance)

    class Provider:
        name = "docker"
        destroyed: list[str] = []

        async def destroy(self, sandbox_id: str) -> None:
            self.destroyed.append(sandbox_id)

    provider = Provider()
    assert await sr.reclaim_sandbox(node_run, provider=provider, instances=store) is sr.ReclaimOutcome.DESTROYED
    assert provider.destroyed == ["ctr-n 🚀"] and len(store) == 0
