"""The generator of the hosts' declarations (scripts/gen_declarations.py):
fresh, fail-closed on Rust it does not understand, and the rules it writes
into the Python record classes (order, enum fallbacks) hold."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
from pathlib import Path
from typing import Any

import pytest

import sandbox_reclaim as sr
from sandbox_reclaim import _native
from sandbox_reclaim._options import DEFAULT

REPO = Path(__file__).resolve().parents[2]


def generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_declarations", REPO / "scripts" / "gen_declarations.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_checked_in_declarations_are_fresh() -> None:
    assert generator().main(["--check"]) == 0


@pytest.mark.parametrize(
    "attribute",
    ['#[serde(skip)]', '#[serde(with = "millis")]', '#[serde(default, skip_serializing_if = "Vec::is_empty")]'],
)
def test_a_serde_attribute_it_does_not_understand_fails_the_run(attribute: str) -> None:
    gen = generator()
    source = f"#[serde(rename_all = \"camelCase\")]\npub struct Probe {{\n    {attribute}\n    pub some_field: u64,\n}}\n"
    types = gen.parse(source)
    with pytest.raises(SystemExit, match="some_field"):
        gen.fields(types, "Probe")


def test_a_rust_type_without_a_python_check_fails_the_run() -> None:
    gen = generator()
    types = gen.parse("pub struct Probe {\n    pub wide: i128,\n}\n")
    with pytest.raises(SystemExit, match="i128"):
        gen.python_records(types, ["Probe"])


def test_records_take_required_fields_first_as_the_native_module_builds_them() -> None:
    names = [field.name for field in dataclasses.fields(sr.SandboxInstanceRecord)]
    assert names == ["key", "provider", "provider_sandbox_id", "thread_id", "updated_at", "latest_snapshot_id", "latest_run_id"]
    # ... while the wire form keeps the core's order.
    record = sr.SandboxInstanceRecord("k", "p", "id", "t", 1, latest_snapshot_id="s", latest_run_id="r")
    assert list(record.to_dict()) == ["key", "provider", "providerSandboxId", "latestSnapshotId", "threadId", "latestRunId", "updatedAt"]


def test_an_unknown_leak_reason_reads_as_destroy_failed_as_in_the_core() -> None:
    wire = {"key": "k", "provider": "p", "providerSandboxId": "id", "runId": "r", "lastError": "e",
            "failedAt": 1, "attempts": 1, "reason": "from-a-newer-writer", "nextAttemptAt": 2}
    assert sr.DueLeak.from_dict(wire).reason is sr.LeakReason.DESTROY_FAILED
    with pytest.raises(ValueError, match="RunRecord.status must be one of"):
        sr.RunRecord.from_dict({"runId": "r", "threadId": "t", "status": "from-a-newer-writer", "startedAt": 0})


@pytest.mark.parametrize(
    ("flow", "functions"),
    [("reclaim", ["reclaim_sandbox", "sandbox_reclaimer"]), ("reclaimAll", ["reclaim_all"]),
     ("reconcile", ["reconcile"]), ("retryLeaks", ["retry_leaks"])],
)
def test_each_flows_keyword_arguments_are_the_options_the_core_checks(flow: str, functions: list[str]) -> None:
    """The generated signatures name exactly the options the core reads (its
    runtime table, not the generator's reading of it), in its order, with
    the core's defaults: ``DEFAULT`` or ``None``."""
    names = list(_native.option_names(flow))
    for function in functions:
        parameters = inspect.signature(getattr(sr, function)).parameters
        taken = [name for name in parameters if name in names]
        assert taken == names, function
        for name in names:
            assert parameters[name].default is DEFAULT or parameters[name].default is None, (function, name)
    generated = generator()
    options = generated.OPTIONS_FILE.read_text()
    specs = generated.flows(generated.FLOWS_FILE.read_text(), generated.option_names(options), generated.option_defaults(options))
    snake = {"reclaim": "reclaim", "reclaimAll": "reclaim_all", "reconcile": "reconcile", "retryLeaks": "retry_leaks"}[flow]
    assert [python for _, python, *_ in specs[snake]] == names


def test_a_fleet_store_method_the_generator_cannot_read_fails_the_run() -> None:
    gen = generator()
    source = 'pub const FLEET_STORE: [Method; 1] = [\n    method("listStale", "list_stale", &[OLDER], Records, maybe, "x"),\n];\n'
    with pytest.raises(SystemExit, match="cannot read"):
        gen.host_members(source, "FLEET_STORE")


def test_a_host_member_of_a_kind_the_generator_does_not_know_fails_the_run() -> None:
    gen = generator()
    source = 'pub const PROVIDER: [Method; 1] = [\n    property("name", "name", Colour, false, "x"),\n];\n'
    with pytest.raises(SystemExit, match="unknown kind Colour"):
        gen.host_members(source, "PROVIDER")


def test_a_narrowed_field_that_is_not_the_structs_fails_the_run() -> None:
    gen = generator()
    types = {}
    for source in gen.SOURCES:
        types.update(gen.parse(source.read_text()))
    with pytest.raises(SystemExit, match="AuditEntry.outcome narrowed to AuditResult"):
        gen.typescript(types, gen.RECORDS, {("AuditEntry", "outcome"): "AuditResult"})


def test_the_hand_written_listed_sandbox_has_the_rust_wire_fields() -> None:
    """``ListedSandbox`` stays hand-written in both hosts (each accepts more than
    the Rust wire form: a field left out or ``null``, Python an aware datetime),
    so its fields are checked against the Rust type's here."""
    import re

    source = (REPO / "proto/src/model/fleet.rs").read_text()
    struct = source[source.index("pub struct ListedSandbox {"):]
    rust = re.findall(r"^\s*pub (\w+):", struct[: struct.index("\n}")], re.M)
    wire = ["".join([word if i == 0 else word.capitalize() for i, word in enumerate(name.split("_"))]) for name in rust]
    assert [field.name for field in dataclasses.fields(sr.ListedSandbox)] == rust
    full = sr.ListedSandbox(id="i", created_at=1, owner="o", key="k", deleting=True).to_dict()
    assert list(full) == wire
    declarations = (REPO / "bindings-node/index.d.ts").read_text()
    interface = declarations[declarations.index("export interface ListedSandbox {"):]
    assert re.findall(r"^  (\w+)\??:", interface[: interface.index("\n}")], re.M) == wire


@pytest.mark.parametrize("module, method", [("sqlite", sr.SqliteSandboxInstanceStore.open), ("postgres", sr.PostgresSandboxInstanceStore.connect)])
def test_a_stores_keywords_are_the_options_the_core_declares(module: str, method: Any) -> None:
    """The generated docstring lists the options ``options/stores.rs`` declares;
    the signature (hand-written: it reads each once) takes exactly those."""
    gen = generator()
    declared = gen.store_options(gen.STORES_FILE.read_text(), gen.ranges(gen.ARGUMENTS_FILE.read_text()))[module]
    keywords = [p.name for p in inspect.signature(method).parameters.values() if p.kind is p.KEYWORD_ONLY]
    assert keywords == [python for _, python, *_ in declared]
