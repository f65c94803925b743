#!/usr/bin/env python3
"""Writes the fleet vector files: reclaim-all.json and reconcile.json.
Every expectation below is written out by hand from the rules (README.md of
this folder, "Fleet passes"); nothing is computed by the implementation.

    python3 tests/vectors/generate_fleet.py   # then commit the JSON it wrote
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from generate import thrown_twins

HERE = Path(__file__).parent
WARN_DESTROY = "reclaim: provider destroy failed; deleting the record anyway"
MISMATCH = "reclaim: instance record belongs to a different provider; refusing to destroy"
IDLE_EXPIRED = "idle: the instance record was expired by a reconcile pass"
LOOKUP_TIMEOUT = 'looking up the registered sandboxes of provider "local" did not settle within 100 ms; it was cancelled'
CANNOT_LIST = "the provider has no list(): no orphan sweep (nothing guessed, nothing destroyed)"
OWNER = "sandbox-reclaim"
MINUTE = 60_000
HOUR = 3_600_000
REGISTRY_RETENTION = 30 * 24 * HOUR  # the default registry retention
AUDIT_RETENTION = 90 * 24 * HOUR  # the default audit retention
LEASE_END = 270_000  # the default lease (300 s) less its last tenth


def timeout_message(sandbox_id: str, timeout_ms: int) -> str:
    return f'destroying sandbox "{sandbox_id}" did not settle within {timeout_ms} ms; it was cancelled'


def call(on: str, method: str, args: list[Any], at: int, name: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"on": on, "method": method, "args": args, "at": at}
    if name is not None:
        entry["name"] = name
    return entry


def store(method: str, args: list[Any], at: int) -> dict[str, Any]:
    return call("store", method, args, at)


def destroy(sandbox_id: str, at: int, provider: str = "docker") -> dict[str, Any]:
    return call("provider", "destroy", [{"id": sandbox_id}], at, provider)


def listing(at: int, provider: str = "local") -> dict[str, Any]:
    return call("provider", "list", [], at, provider)


def record(run_id: str, key: str | None = None) -> dict[str, Any]:
    run: dict[str, Any] = {"runId": run_id, "threadId": f"thread-{run_id}", "status": "completed", "startedAt": 1700000000000}
    if key is not None:
        run["sandboxKey"] = key
    return run


def instance(key: str, provider: str, sandbox_id: str, updated_at: int = 0) -> dict[str, Any]:
    return {"key": key, "provider": provider, "providerSandboxId": sandbox_id, "threadId": f"thread-{key}", "updatedAt": updated_at}


def counts(**given: int) -> dict[str, int]:
    names = ["no-sandbox-key", "not-found", "provider-mismatch", "destroyed", "destroy-failed", "error", "deferred", "duplicate"]
    return {name: given.get(name.replace("-", "_"), 0) for name in names}


def line(run_id: str, outcome: str, key: str | None = None, duration: int = 0, error: str | None = None) -> dict[str, Any]:
    report: dict[str, Any] = {"runId": run_id}
    if key is not None:
        report["sandboxKey"] = key
    report["outcome"] = outcome
    if error is not None:
        report["error"] = error
    report["durationMs"] = duration
    return report


def warn_destroy(run_id: str, key: str, sandbox_id: str, error: Any) -> dict[str, Any]:
    meta = {"runId": run_id, "sandboxKey": key, "providerSandboxId": sandbox_id, "error": error}
    return {"level": "warn", "message": WARN_DESTROY, "meta": meta}


def reclaim_all_cases() -> list[dict[str, Any]]:
    def case(name: str, description: str, records: list[dict[str, Any]], expect: dict[str, Any], **extra: Any) -> dict[str, Any]:
        providers = extra.pop("providers", [{"name": "docker", "destroy": extra.pop("destroy", {})}])
        built: dict[str, Any] = {
            "name": name,
            "description": description,
            "api": "reclaimAll",
            "options": extra.pop("options", {}),
            "records": records,
            "providers": providers,
            "store": {"ledger": extra.pop("ledger", False), "instances": extra.pop("instances", []), **extra.pop("store", {})},
            "logger": True,
            "expect": {"logs": [], "instancesAfter": [], **expect},
        }
        built.update(extra)
        return built

    def thrown_synchronously(concurrency: int, name: str, description: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
        """get('k1') and c2's destroy throw before returning a promise; only
        the call order depends on the concurrency."""
        return case(
            name,
            description,
            [record("r1", "k1"), record("r2", "k2"), record("r3", "k3")],
            {
                "report": {
                    "counts": counts(destroyed=1, destroy_failed=1, error=1),
                    "records": [
                        line("r1", "error", "k1", 0, "get threw"),
                        line("r2", "destroy-failed", "k2", 0, "destroy threw"),
                        line("r3", "destroyed", "k3", 0),
                    ],
                },
                "calls": calls,
                "logs": [warn_destroy("r2", "k2", "c2", {"$hostError": "destroy"})],
                "instancesAfter": [instance("k1", "docker", "c1")],
            },
            options={"concurrency": concurrency},
            instances=[instance("k1", "docker", "c1"), instance("k2", "docker", "c2"), instance("k3", "docker", "c3")],
            destroy={"c2": {"mode": "throw", "message": "destroy threw"}},
            store={"scripts": {"get:k1": {"mode": "throw", "message": "get threw"}}},
        )

    timed_out = {"$timeoutError": {"providerSandboxId": "c2", "timeoutMs": 50, "message": timeout_message("c2", 50)}}
    return [
        case(
            "reclaimAll: one provider, every outcome, one at a time",
            "At concurrency 1 a fleet reclaim is the reference's loop: each record gets exactly reclaimSandbox's calls, lines and outcome.",
            [record("r1"), record("r2", "k2"), record("r3", "k3"), record("r4", "k4"), record("r5", "k5")],
            {
                "report": {
                    "total": 5,
                    "counts": counts(no_sandbox_key=1, not_found=1, provider_mismatch=1, destroyed=1, destroy_failed=1),
                    "records": [
                        line("r1", "no-sandbox-key"),
                        line("r2", "not-found", "k2"),
                        line("r3", "provider-mismatch", "k3"),
                        line("r4", "destroyed", "k4"),
                        line("r5", "destroy-failed", "k5", error="boom"),
                    ],
                    "elapsedMs": 0,
                },
                "calls": [
                    store("get", ["k2"], 0),
                    store("get", ["k3"], 0),
                    store("get", ["k4"], 0),
                    destroy("c4", 0),
                    store("delete", ["k4"], 0),
                    store("get", ["k5"], 0),
                    destroy("c5", 0),
                    store("delete", ["k5"], 0),
                ],
                "logs": [
                    {"level": "warn", "message": MISMATCH, "meta": {"runId": "r3", "sandboxKey": "k3", "recordProvider": "local", "reclaimerProvider": "docker"}},
                    warn_destroy("r5", "k5", "c5", {"$hostError": "destroy"}),
                ],
                "instancesAfter": [instance("k3", "local", "c3")],
            },
            options={"concurrency": 1},
            instances=[instance("k3", "local", "c3"), instance("k4", "docker", "c4"), instance("k5", "docker", "c5")],
            destroy={"c5": {"mode": "reject", "message": "boom"}},
        ),
        case(
            "reclaimAll: concurrency 2 overlaps destroys",
            "Two records run side by side; the third starts when the first slot frees (at 10 ms), so the pass takes 35 ms, not 65.",
            [record("r1", "k1"), record("r2", "k2"), record("r3", "k3")],
            {
                "report": {
                    "counts": counts(destroyed=3),
                    "records": [line("r1", "destroyed", "k1", 30), line("r2", "destroyed", "k2", 10), line("r3", "destroyed", "k3", 25)],
                    "elapsedMs": 35,
                },
                "calls": [
                    store("get", ["k1"], 0),
                    store("get", ["k2"], 0),
                    destroy("c1", 0),
                    destroy("c2", 0),
                    store("delete", ["k2"], 10),
                    store("get", ["k3"], 10),
                    destroy("c3", 10),
                    store("delete", ["k1"], 30),
                    store("delete", ["k3"], 35),
                ],
                "elapsedMs": 35,
            },
            options={"concurrency": 2},
            instances=[instance("k1", "docker", "c1"), instance("k2", "docker", "c2"), instance("k3", "docker", "c3")],
            destroy={"c1": {"latencyMs": 30}, "c2": {"latencyMs": 10}, "c3": {"latencyMs": 25}},
        ),
        case(
            "reclaimAll: a held destroy's deadline starts when it starts",
            "With one destroy per provider, the second record's destroy waits for the first (40 ms) and only then gets its 50 ms deadline.",
            [record("r1", "k1"), record("r2", "k2")],
            {
                "report": {
                    "counts": counts(destroyed=1, destroy_failed=1),
                    "records": [line("r1", "destroyed", "k1", 40), line("r2", "destroy-failed", "k2", 90, timeout_message("c2", 50))],
                    "elapsedMs": 90,
                },
                "calls": [
                    store("get", ["k1"], 0),
                    store("get", ["k2"], 0),
                    destroy("c1", 0),
                    store("delete", ["k1"], 40),
                    destroy("c2", 40),
                    store("delete", ["k2"], 90),
                ],
                "logs": [warn_destroy("r2", "k2", "c2", timed_out)],
                "aborted": ["c2"],
                "elapsedMs": 90,
            },
            options={"concurrency": 3, "perProviderConcurrency": 1, "destroyTimeoutMs": 50},
            instances=[instance("k1", "docker", "c1"), instance("k2", "docker", "c2")],
            destroy={"c1": {"latencyMs": 40}, "c2": {"mode": "hang"}},
        ),
        case(
            "reclaimAll: routes each record to its instance's provider",
            "Each sandbox goes to the provider its record names; a record naming none of them is provider-mismatch, touching nothing.",
            [record("r1", "k1"), record("r2", "k2"), record("r3", "k3")],
            {
                "report": {"counts": counts(destroyed=2, provider_mismatch=1)},
                "calls": [
                    store("get", ["k1"], 0),
                    destroy("d1", 0, "docker"),
                    store("delete", ["k1"], 0),
                    store("get", ["k2"], 0),
                    destroy("l2", 0, "local"),
                    store("delete", ["k2"], 0),
                    store("get", ["k3"], 0),
                ],
                "logs": [{"level": "warn", "message": MISMATCH, "meta": {"runId": "r3", "sandboxKey": "k3", "recordProvider": "e2b", "reclaimerProvider": "docker, local"}}],
                "instancesAfter": [instance("k3", "e2b", "x3")],
            },
            options={"concurrency": 1},
            providers=[{"name": "docker", "destroy": {}}, {"name": "local", "destroy": {}}],
            instances=[instance("k1", "docker", "d1"), instance("k2", "local", "l2"), instance("k3", "e2b", "x3")],
        ),
        case(
            "reclaimAll: the budget defers records not yet started",
            "After budgetMs nothing new starts: the third record (due at 40 ms, budget 25 ms) is deferred with its record untouched.",
            [record("r1", "k1"), record("r2", "k2"), record("r3", "k3")],
            {
                "report": {
                    "counts": counts(destroyed=2, deferred=1),
                    "records": [line("r1", "destroyed", "k1", 20), line("r2", "destroyed", "k2", 20), line("r3", "deferred", "k3")],
                    "elapsedMs": 40,
                },
                "calls": [
                    store("get", ["k1"], 0),
                    destroy("c1", 0),
                    store("delete", ["k1"], 20),
                    store("get", ["k2"], 20),
                    destroy("c2", 20),
                    store("delete", ["k2"], 40),
                ],
                "instancesAfter": [instance("k3", "docker", "c3")],
            },
            options={"concurrency": 1, "budgetMs": 25},
            instances=[instance("k1", "docker", "c1"), instance("k2", "docker", "c2"), instance("k3", "docker", "c3")],
            destroy={sandbox: {"latencyMs": 20} for sandbox in ("c1", "c2", "c3")},
        ),
        case(
            "reclaimAll: records sharing a key are reclaimed once",
            "The second record with the same sandboxKey is reported duplicate and causes no call.",
            [record("r1", "k1"), record("r2", "k1")],
            {
                "report": {"counts": counts(destroyed=1, duplicate=1), "records": [line("r1", "destroyed", "k1"), line("r2", "duplicate", "k1")]},
                "calls": [store("get", ["k1"], 0), destroy("c1", 0), store("delete", ["k1"], 0)],
            },
            instances=[instance("k1", "docker", "c1")],
        ),
        case(
            "reclaimAll: a store failure is reported on its record",
            "get failing for one key makes that record `error` (with the store's message); the others are reclaimed.",
            [record("r1", "k1"), record("r2", "k2"), record("r3", "k3")],
            {
                "report": {
                    "counts": counts(destroyed=2, error=1),
                    "records": [line("r1", "destroyed", "k1"), line("r2", "error", "k2", error="db down"), line("r3", "destroyed", "k3")],
                },
                "calls": [
                    store("get", ["k1"], 0),
                    destroy("c1", 0),
                    store("delete", ["k1"], 0),
                    store("get", ["k2"], 0),
                    store("get", ["k3"], 0),
                    destroy("c3", 0),
                    store("delete", ["k3"], 0),
                ],
                "instancesAfter": [instance("k2", "docker", "c2")],
            },
            options={"concurrency": 1},
            instances=[instance("k1", "docker", "c1"), instance("k2", "docker", "c2"), instance("k3", "docker", "c3")],
            store={"scripts": {"get:k2": {"mode": "reject", "message": "db down"}}},
        ),
        case(
            "reclaimAll: with a ledger, a failed destroy records its leak",
            "A store with a leak ledger gets deleteRecordingLeak instead of delete, exactly as a single reclaim.",
            [record("r1", "k1")],
            {
                "report": {"counts": counts(destroy_failed=1), "records": [line("r1", "destroy-failed", "k1", error="gone wrong")]},
                "calls": [
                    store("get", ["k1"], 0),
                    destroy("c1", 0),
                    store("deleteRecordingLeak", ["k1", {"key": "k1", "provider": "docker", "providerSandboxId": "c1", "runId": "r1", "errorMessage": "gone wrong"}], 0),
                ],
                "logs": [warn_destroy("r1", "k1", "c1", {"$hostError": "destroy"})],
                "leaksAfter": [{"key": "k1", "provider": "docker", "providerSandboxId": "c1", "runId": "r1", "lastError": "gone wrong", "attempts": 1}],
            },
            ledger=True,
            instances=[instance("k1", "docker", "c1")],
            destroy={"c1": {"mode": "reject", "message": "gone wrong"}},
        ),
        case(
            "reclaimAll: progress after each record",
            "onProgress hears of every record as it ends, in the order they end.",
            [record("r1", "k1"), record("r2")],
            {
                "report": {"counts": counts(destroyed=1, no_sandbox_key=1)},
                "calls": [store("get", ["k1"], 0), destroy("c1", 0), store("delete", ["k1"], 10)],
                "progress": [
                    {"kind": "record", "done": 1, "total": 2, "runId": "r2", "sandboxKey": None, "outcome": "no-sandbox-key", "elapsedMs": 0},
                    {"kind": "record", "done": 2, "total": 2, "runId": "r1", "sandboxKey": "k1", "outcome": "destroyed", "elapsedMs": 10},
                ],
            },
            instances=[instance("k1", "docker", "c1")],
            destroy={"c1": {"latencyMs": 10}},
            progress=True,
        ),
        case(
            "reclaimAll: no records",
            "An empty list resolves at once with an empty report.",
            [],
            {"report": {"total": 0, "counts": counts(), "records": [], "elapsedMs": 0}, "calls": []},
        ),
        case(
            "reclaimAll: stopping lets in-flight work settle and defers the rest",
            "Stopped at 5 ms, the running record finishes (20 ms); the two not started are deferred, untouched.",
            [record("r1", "k1"), record("r2", "k2"), record("r3", "k3")],
            {
                "report": {"counts": counts(destroyed=1, deferred=2), "records": [line("r1", "destroyed", "k1", 20), line("r2", "deferred", "k2"), line("r3", "deferred", "k3")], "elapsedMs": 20},
                "calls": [store("get", ["k1"], 0), destroy("c1", 0), store("delete", ["k1"], 20)],
                "instancesAfter": [instance("k2", "docker", "c2"), instance("k3", "docker", "c3")],
            },
            options={"concurrency": 1},
            instances=[instance("k1", "docker", "c1"), instance("k2", "docker", "c2"), instance("k3", "docker", "c3")],
            destroy={sandbox: {"latencyMs": 20} for sandbox in ("c1", "c2", "c3")},
            stopAtMs=5,
        ),
        case(
            "reclaimAll: a throwing logger fails only its own record",
            "The warn after c1's failed destroy throws: r1 rejects as the reference's reclaim does (error, its record kept), "
            "while c2's destroy, released by that very completion into the same batch, still starts at 10 ms. "
            "Likewise for r3 and c4 at 30 ms. The pass settles; nothing is left waiting.",
            [record("r1", "k1"), record("r2", "k2"), record("r3", "k3"), record("r4", "k4")],
            {
                "report": {
                    "counts": counts(destroyed=2, error=2),
                    "records": [
                        line("r1", "error", "k1", 10, "logger down"),
                        line("r2", "destroyed", "k2", 20),
                        line("r3", "error", "k3", 30, "logger down"),
                        line("r4", "destroyed", "k4", 40),
                    ],
                    "elapsedMs": 40,
                },
                "calls": [
                    store("get", ["k1"], 0),
                    store("get", ["k2"], 0),
                    store("get", ["k3"], 0),
                    store("get", ["k4"], 0),
                    destroy("c1", 0),
                    destroy("c2", 10),
                    store("delete", ["k2"], 20),
                    destroy("c3", 20),
                    destroy("c4", 30),
                    store("delete", ["k4"], 40),
                ],
                "logs": [
                    warn_destroy("r1", "k1", "c1", {"$hostError": "destroy"}),
                    warn_destroy("r3", "k3", "c3", {"$hostError": "destroy"}),
                ],
                "instancesAfter": [instance("k1", "docker", "c1"), instance("k3", "docker", "c3")],
                "elapsedMs": 40,
            },
            options={"concurrency": 4, "perProviderConcurrency": 1},
            instances=[instance(f"k{n}", "docker", f"c{n}") for n in range(1, 5)],
            destroy={
                "c1": {"mode": "reject", "message": "boom", "latencyMs": 10},
                "c2": {"latencyMs": 10},
                "c3": {"mode": "reject", "message": "boom", "latencyMs": 10},
                "c4": {"latencyMs": 10},
            },
            loggerThrows={"warn": "logger down"},
        ),
        case(
            "reclaimAll: a throwing logger with progress events in its batch",
            "With progress on, r1's warn throws in the batch that also releases r3's held destroy: r3's destroy still "
            "starts at 10 ms, r1's progress event says error, and its record is kept.",
            [record("r1", "k1"), record("r2"), record("r3", "k3")],
            {
                "report": {
                    "counts": counts(no_sandbox_key=1, destroyed=1, error=1),
                    "records": [line("r1", "error", "k1", 10, "logger down"), line("r2", "no-sandbox-key"), line("r3", "destroyed", "k3", 20)],
                    "elapsedMs": 20,
                },
                "calls": [
                    store("get", ["k1"], 0),
                    store("get", ["k3"], 0),
                    destroy("c1", 0),
                    destroy("c3", 10),
                    store("delete", ["k3"], 20),
                ],
                "logs": [warn_destroy("r1", "k1", "c1", {"$hostError": "destroy"})],
                "progress": [
                    {"kind": "record", "done": 1, "total": 3, "runId": "r2", "sandboxKey": None, "outcome": "no-sandbox-key", "elapsedMs": 0},
                    {"kind": "record", "done": 2, "total": 3, "runId": "r1", "sandboxKey": "k1", "outcome": "error", "elapsedMs": 10},
                    {"kind": "record", "done": 3, "total": 3, "runId": "r3", "sandboxKey": "k3", "outcome": "destroyed", "elapsedMs": 20},
                ],
                "instancesAfter": [instance("k1", "docker", "c1")],
                "elapsedMs": 20,
            },
            options={"concurrency": 3, "perProviderConcurrency": 1},
            instances=[instance("k1", "docker", "c1"), instance("k3", "docker", "c3")],
            destroy={"c1": {"mode": "reject", "message": "boom", "latencyMs": 10}, "c3": {"latencyMs": 10}},
            loggerThrows={"warn": "logger down"},
            progress=True,
        ),
        case(
            "reclaimAll: a throwing progress callback changes nothing",
            "onProgress throws on every event: each event is still delivered, in order, and every record is reclaimed as without it.",
            [record("r1", "k1"), record("r2")],
            {
                "report": {"counts": counts(destroyed=1, no_sandbox_key=1)},
                "calls": [store("get", ["k1"], 0), destroy("c1", 0), store("delete", ["k1"], 10)],
                "progress": [
                    {"kind": "record", "done": 1, "total": 2, "runId": "r2", "sandboxKey": None, "outcome": "no-sandbox-key", "elapsedMs": 0},
                    {"kind": "record", "done": 2, "total": 2, "runId": "r1", "sandboxKey": "k1", "outcome": "destroyed", "elapsedMs": 10},
                ],
            },
            instances=[instance("k1", "docker", "c1")],
            destroy={"c1": {"latencyMs": 10}},
            progress=True,
            progressThrows=True,
        ),
        thrown_synchronously(
            1,
            "reclaimAll: a store call or a destroy that throws synchronously fails only its own record",
            "get('k1') throws before returning a promise: r1 is an error with its message; c2's destroy throws synchronously: "
            "r2 is destroy-failed, its record deleted; r3 is untouched by either.",
            [store("get", ["k1"], 0), store("get", ["k2"], 0), destroy("c2", 0), store("delete", ["k2"], 0),
             store("get", ["k3"], 0), destroy("c3", 0), store("delete", ["k3"], 0)],
        ),
        thrown_synchronously(
            3,
            "reclaimAll: a host call that throws synchronously at concurrency 3 settles after its batch has started",
            "The same throws with all three records started in one batch: every get is issued before any throw is heard "
            "(a throw settles after the rest of its batch started, in start order, in every driver), and each record "
            "ends as at concurrency 1.",
            [store("get", ["k1"], 0), store("get", ["k2"], 0), store("get", ["k3"], 0), destroy("c2", 0),
             destroy("c3", 0), store("delete", ["k2"], 0), store("delete", ["k3"], 0)],
        ),
        case(
            "reclaimAll: a record writing its outcome frees its slot",
            "Once its destroy settled, a record only writes its outcome: it gives its slot to the next record meanwhile "
            "(r2 starts at 10 ms while k1's delete runs until 35), but at most `concurrency` (here 1) writes run, so r2's "
            "delete waits for k1's (20 -> 35 ms) and keeps r2's slot. At concurrency 1 the calls are still exactly the "
            "reference's loop, record after record; the pass takes 85 ms, not 3 x 35.",
            [record("r1", "k1"), record("r2", "k2"), record("r3", "k3")],
            {
                "report": {
                    "counts": counts(destroyed=3),
                    "records": [line("r1", "destroyed", "k1", 35), line("r2", "destroyed", "k2", 50), line("r3", "destroyed", "k3", 50)],
                    "elapsedMs": 85,
                },
                "calls": [
                    store("get", ["k1"], 0),
                    destroy("c1", 0),
                    store("delete", ["k1"], 10),
                    store("get", ["k2"], 10),
                    destroy("c2", 10),
                    store("delete", ["k2"], 35),
                    store("get", ["k3"], 35),
                    destroy("c3", 35),
                    store("delete", ["k3"], 60),
                ],
                "elapsedMs": 85,
            },
            options={"concurrency": 1},
            instances=[instance(f"k{n}", "docker", f"c{n}") for n in range(1, 4)],
            destroy={f"c{n}": {"latencyMs": 10} for n in range(1, 4)},
            store={"scripts": {"delete": {"latencyMs": 25}}},
        ),
        case(
            "reclaimAll: at most concurrency outcome writes in flight",
            "At concurrency 2, k1's and k2's deletes (40 ms each) free their slots for r3 and r4; when c3 and c4 settle "
            "(20, 25 ms) two writes are already in flight, so r3 and r4 hold their deletes and their slots: r5 starts only "
            "when k1's delete settles (50 ms) and r3's delete takes its place. Never more than 2 writes at once.",
            [record(f"r{n}", f"k{n}") for n in range(1, 6)],
            {
                "report": {
                    "counts": counts(destroyed=5),
                    "records": [
                        line("r1", "destroyed", "k1", 50),
                        line("r2", "destroyed", "k2", 55),
                        line("r3", "destroyed", "k3", 80),
                        line("r4", "destroyed", "k4", 80),
                        line("r5", "destroyed", "k5", 80),
                    ],
                    "elapsedMs": 130,
                },
                "calls": [
                    store("get", ["k1"], 0),
                    store("get", ["k2"], 0),
                    destroy("c1", 0),
                    destroy("c2", 0),
                    store("delete", ["k1"], 10),
                    store("get", ["k3"], 10),
                    destroy("c3", 10),
                    store("delete", ["k2"], 15),
                    store("get", ["k4"], 15),
                    destroy("c4", 15),
                    store("delete", ["k3"], 50),
                    store("get", ["k5"], 50),
                    destroy("c5", 50),
                    store("delete", ["k4"], 55),
                    store("delete", ["k5"], 90),
                ],
                "elapsedMs": 130,
            },
            options={"concurrency": 2},
            instances=[instance(f"k{n}", "docker", f"c{n}") for n in range(1, 6)],
            destroy={"c1": {"latencyMs": 10}, "c2": {"latencyMs": 15}, "c3": {"latencyMs": 10}, "c4": {"latencyMs": 10}, "c5": {"latencyMs": 10}},
            store={"scripts": {"delete": {"latencyMs": 40}}},
        ),
        case(
            "reclaimAll: a destroy cancelled at its deadline frees its slot while its leak is recorded",
            "c1 hangs and is cancelled at 20 ms: r1 records its leak (30 ms) without its slot, so r2 starts at 20 ms; "
            "r2's delete waits for that write (one at a time at concurrency 1).",
            [record("r1", "k1"), record("r2", "k2")],
            {
                "report": {
                    "counts": counts(destroyed=1, destroy_failed=1),
                    "records": [line("r1", "destroy-failed", "k1", 50, timeout_message("c1", 20)), line("r2", "destroyed", "k2", 30)],
                    "elapsedMs": 50,
                },
                "calls": [
                    store("get", ["k1"], 0),
                    destroy("c1", 0),
                    store("deleteRecordingLeak", ["k1", {"key": "k1", "provider": "docker", "providerSandboxId": "c1", "runId": "r1", "errorMessage": timeout_message("c1", 20)}], 20),
                    store("get", ["k2"], 20),
                    destroy("c2", 20),
                    store("delete", ["k2"], 50),
                ],
                "logs": [warn_destroy("r1", "k1", "c1", {"$timeoutError": {"providerSandboxId": "c1", "timeoutMs": 20, "message": timeout_message("c1", 20)}})],
                "leaksAfter": [{"key": "k1", "provider": "docker", "providerSandboxId": "c1", "runId": "r1", "lastError": timeout_message("c1", 20), "attempts": 1}],
                "aborted": ["c1"],
                "elapsedMs": 50,
            },
            options={"concurrency": 1, "destroyTimeoutMs": 20},
            ledger=True,
            instances=[instance("k1", "docker", "c1"), instance("k2", "docker", "c2")],
            destroy={"c1": {"mode": "hang"}, "c2": {"latencyMs": 10}},
            store={"scripts": {"deleteRecordingLeak": {"latencyMs": 30}}},
        ),
        case(
            "reclaimAll: a throwing logger drops a record's waiting outcome write",
            "r2's destroy fails at 20 ms while k1's delete runs (until 40): r2's delete waits, and its warn throws, so r2 "
            "ends `error` (its record kept) and gives up both its slot and its place in the write queue: r3 starts at 20 ms "
            "and its delete is the one that follows k1's.",
            [record("r1", "k1"), record("r2", "k2"), record("r3", "k3")],
            {
                "report": {
                    "counts": counts(destroyed=2, error=1),
                    "records": [line("r1", "destroyed", "k1", 40), line("r2", "error", "k2", 10, "logger down"), line("r3", "destroyed", "k3", 20)],
                    "elapsedMs": 40,
                },
                "calls": [
                    store("get", ["k1"], 0),
                    destroy("c1", 0),
                    store("delete", ["k1"], 10),
                    store("get", ["k2"], 10),
                    destroy("c2", 10),
                    store("get", ["k3"], 20),
                    destroy("c3", 20),
                    store("delete", ["k3"], 40),
                ],
                "logs": [warn_destroy("r2", "k2", "c2", {"$hostError": "destroy"})],
                "instancesAfter": [instance("k2", "docker", "c2")],
                "elapsedMs": 40,
            },
            options={"concurrency": 1},
            instances=[instance(f"k{n}", "docker", f"c{n}") for n in range(1, 4)],
            destroy={"c1": {"latencyMs": 10}, "c2": {"mode": "reject", "message": "boom", "latencyMs": 10}, "c3": {"latencyMs": 10}},
            store={"scripts": {"delete:k1": {"latencyMs": 30}}},
            loggerThrows={"warn": "logger down"},
        ),
    ]


def leak(key: str, provider: str, sandbox_id: str, *, reason: str = "destroy-failed", next_attempt_at: int = -1000, attempts: int = 1, error: str = "first failure", run_id: str | None = None) -> dict[str, Any]:
    return {
        "key": key,
        "provider": provider,
        "providerSandboxId": sandbox_id,
        "runId": run_id if run_id is not None else f"run-{key}",
        "errorMessage": error,
        "failedAt": -60_000,
        "reason": reason,
        "nextAttemptAt": next_attempt_at,
        "attempts": attempts,
    }


def after(entry: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """A seeded leak as listLeaks answers it (without failedAt)."""
    listed = {"key": entry["key"], "provider": entry["provider"], "providerSandboxId": entry["providerSandboxId"], "runId": entry["runId"], "lastError": entry["errorMessage"], "attempts": entry["attempts"]}
    listed.update(changes)
    return listed


def audit(at: int, provider: str, sandbox_id: str, key: str | None, reason: str, result: str, error: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"at": at, "host": "host-a", "provider": provider, "providerSandboxId": sandbox_id}
    if key is not None:
        row["key"] = key
    row.update({"reason": reason, "result": result})
    if error is not None:
        row["error"] = error
    return row


def action(reason: str, provider: str, sandbox_id: str, key: str | None, result: str, error: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"reason": reason, "provider": provider, "providerSandboxId": sandbox_id}
    if key is not None:
        entry["key"] = key
    entry["result"] = result
    if error is not None:
        entry["error"] = error
    return entry


def orphans(status: str, **given: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"status": status}
    if "error" in given:
        base["error"] = given.pop("error")
    for name in ("listed", "foreign", "referenced", "young", "deleting", "found", "destroyed", "failed", "deferred"):
        base[name] = given.pop(name, 0)
    assert not given, given
    return base


def leak_counts(**given: int) -> dict[str, int]:
    return {name: given.get(name, 0) for name in ("due", "destroyed", "failed", "deferred", "leaseLost")}


def action_counts(**given: int) -> dict[str, int]:
    return {name: given.get(name, 0) for name in ("planned", "destroyed", "failed", "deferred", "touched")}


def sandbox(sandbox_id: str, created_at: int | None, owner: str | None = OWNER, key: str | None = None, deleting: bool = False) -> dict[str, Any]:
    listed: dict[str, Any] = {"id": sandbox_id, "createdAt": created_at, "owner": owner}
    if key is not None:
        listed["key"] = key
    if deleting:
        listed["deleting"] = True
    return listed


def due(provider: str, at: int = 0, lease: int | None = 300_000) -> dict[str, Any]:
    return store("dueLeaks", [provider, 1000, lease, at], at)


def claim_sweep(provider: str = "local", at: int = 0) -> dict[str, Any]:
    return store("claimSweep", [provider, "$holder", 300_000, at], at)


def references(at: int, provider: str = "local", grace: int = 600_000) -> dict[str, Any]:
    """The sweep's read: records, ledger entries, and what the audit log says was destroyed within the grace."""
    return store("sandboxReferences", [provider, at - grace], at)


def registered(at: int, provider: str = "local", retention: int = REGISTRY_RETENTION) -> dict[str, Any]:
    """The sweep's second read: what the store's registry names (records written or deleted within the retention)."""
    return store("registeredSandboxes", [provider, at - retention], at)


def prune(at: int, provider: str = "local", registry: int = REGISTRY_RETENTION, audit: int = AUDIT_RETENTION) -> dict[str, Any]:
    """The sweep holder's bounded growth, alongside its listing: registry rows last seen before, and audit rows from before, the bounds go."""
    return store("prune", [provider, at - registry, at - audit], at)


def release_sweep(at: int, provider: str = "local") -> dict[str, Any]:
    return store("releaseSweep", [provider, "$holder"], at)


# messages::LEASE_LOST: the audit row's error when the store refused a leak's outcome.
LEASE_LOST = "the lease ran out before this outcome was written and another pass holds the entry now; nothing was written"


def reconcile_cases() -> list[dict[str, Any]]:
    def case(name: str, description: str, expect: dict[str, Any], **extra: Any) -> dict[str, Any]:
        built: dict[str, Any] = {
            "name": name,
            "description": description,
            "api": "reconcile",
            "options": {"host": "host-a", **extra.pop("options", {})},
            "providers": extra.pop("providers", [{"name": "docker", "destroy": extra.pop("destroy", {})}]),
            "store": {"ledger": True, "instances": extra.pop("instances", []), "leaks": extra.pop("leaks", []), **extra.pop("store", {})},
            "expect": {"instancesAfter": [], "leaksAfter": [], "auditAfter": [], **expect},
        }
        built.update(extra)
        return built

    no_sweep = orphans("unavailable", error=CANNOT_LIST)
    l1 = leak("k1", "docker", "c1")
    l1_twice = leak("k1", "docker", "c1", attempts=2)
    l1_often = leak("k1", "docker", "c1", attempts=10)
    l1_later = leak("k1", "docker", "c1", next_attempt_at=MINUTE)
    l5 = leak("k5", "local", "o5", next_attempt_at=HOUR)
    old = -20 * MINUTE
    local = lambda listed, destroys=None, **more: {"name": "local", "destroy": destroys or {}, "list": {"mode": "return", "value": listed}, **more}  # noqa: E731
    three = [leak(f"k{n}", "docker", f"c{n}") for n in (1, 2, 3)]
    return [
        case(
            "reconcile: a due leak is destroyed and resolved",
            "A ledger entry due now is claimed under the lease, destroyed, resolved, and audited; a provider without list gets no sweep.",
            {
                "report": {
                    "dryRun": False, "host": "host-a", "elapsedMs": 10, "cutShort": False,
                    "idle": {"enabled": False, "stale": 0, "expired": 0, "touched": 0, "skipped": 0},
                    "providers": [{"name": "docker", "leaks": leak_counts(due=1, destroyed=1), "orphans": no_sweep}],
                    "counts": action_counts(destroyed=1),
                    "actions": [action("leak-retry", "docker", "c1", "k1", "destroyed")],
                    "stillLeaking": False,
                },
                "calls": [due("docker"), destroy("c1", 0), store("resolveLeak", ["c1"], 10), store("appendAudit", [1], 10)],
                "auditAfter": [audit(10, "docker", "c1", "k1", "leak-retry", "destroyed")],
                "elapsedMs": 10,
            },
            leaks=[l1],
            destroy={"c1": {"latencyMs": 10}},
        ),
        case(
            "reconcile: a failed retry backs off exponentially",
            "The third failure of an entry waits backoffMs × 2^2 before its next attempt; attempts and error are kept.",
            {
                "report": {"providers": [{"name": "docker", "leaks": leak_counts(due=1, failed=1), "orphans": no_sweep}], "counts": action_counts(failed=1), "actions": [action("leak-retry", "docker", "c1", "k1", "failed", "still broken")]},
                "calls": [due("docker"), destroy("c1", 0), store("deferLeak", ["c1", "still broken", 10, 10 + 4000], 10), store("appendAudit", [1], 10)],
                "leaksAfter": [after(l1_twice, lastError="still broken", attempts=3)],
                "auditAfter": [audit(10, "docker", "c1", "k1", "leak-retry", "failed", "still broken")],
            },
            options={"backoffMs": 1000},
            leaks=[l1_twice],
            destroy={"c1": {"mode": "reject", "message": "still broken", "latencyMs": 10}},
        ),
        case(
            "reconcile: a resolve the store refuses (the claim passed on) is counted and audited",
            "The destroy succeeded, but the store answers that the entry's claim is no longer this pass's (its lease ran out and another pass took it): nothing is written, the report counts leaseLost, and the audit log says lease-lost beside destroyed.",
            {
                "report": {"providers": [{"name": "docker", "leaks": leak_counts(due=1, destroyed=1, leaseLost=1), "orphans": no_sweep}], "counts": action_counts(destroyed=1), "actions": [action("leak-retry", "docker", "c1", "k1", "destroyed")]},
                "calls": [due("docker"), destroy("c1", 0), store("resolveLeak", ["c1"], 10), store("appendAudit", [1], 10), store("appendAudit", [1], 10)],
                "leaksAfter": [after(l1)],
                "auditAfter": [audit(10, "docker", "c1", "k1", "leak-retry", "destroyed"), audit(10, "docker", "c1", "k1", "leak-retry", "lease-lost", LEASE_LOST)],
            },
            leaks=[l1],
            destroy={"c1": {"latencyMs": 10}},
            store={"scripts": {"resolveLeak": {"mode": "return", "value": False}}},
        ),
        case(
            "reconcile: a deferral the store refuses (the claim passed on) is counted and audited",
            "The destroy failed again, but the entry's claim is another pass's now: the deferral writes nothing (attempts unchanged), the report counts leaseLost, and the audit log says lease-lost beside failed.",
            {
                "report": {"providers": [{"name": "docker", "leaks": leak_counts(due=1, failed=1, leaseLost=1), "orphans": no_sweep}], "counts": action_counts(failed=1), "actions": [action("leak-retry", "docker", "c1", "k1", "failed", "still broken")]},
                "calls": [due("docker"), destroy("c1", 0), store("deferLeak", ["c1", "still broken", 10, 10 + 2000], 10), store("appendAudit", [1], 10), store("appendAudit", [1], 10)],
                "leaksAfter": [after(l1)],
                "auditAfter": [audit(10, "docker", "c1", "k1", "leak-retry", "failed", "still broken"), audit(10, "docker", "c1", "k1", "leak-retry", "lease-lost", LEASE_LOST)],
            },
            options={"backoffMs": 1000},
            leaks=[l1],
            destroy={"c1": {"mode": "reject", "message": "still broken", "latencyMs": 10}},
            store={"scripts": {"deferLeak": {"mode": "return", "value": False}}},
        ),
        case(
            "reconcile: backoff is capped",
            "However many failures, the next attempt is at most maxBackoffMs away.",
            {
                "calls": [due("docker"), destroy("c1", 0), store("deferLeak", ["c1", "nope", 0, 60_000], 0), store("appendAudit", [1], 0)],
                "leaksAfter": [after(l1_often, lastError="nope", attempts=11)],
                "auditAfter": [audit(0, "docker", "c1", "k1", "leak-retry", "failed", "nope")],
            },
            options={"backoffMs": 1000, "maxBackoffMs": 60_000},
            leaks=[l1_often],
            destroy={"c1": {"mode": "reject", "message": "nope"}},
        ),
        case(
            "reconcile: a leak not yet due is left alone",
            "An entry whose next attempt is in the future is neither claimed nor destroyed.",
            {
                "report": {"providers": [{"name": "docker", "leaks": leak_counts(), "orphans": no_sweep}], "counts": action_counts(), "actions": []},
                "calls": [due("docker")],
                "leaksAfter": [after(l1_later)],
            },
            leaks=[l1_later],
        ),
        case(
            "reconcile: the orphan sweep destroys only unreferenced, old sandboxes of our owner",
            "Of five listed sandboxes only o1 is an orphan: o2 and o5 are referenced (a record, a ledger entry), o3 is inside the grace period, o4 is another owner's.",
            {
                "report": {
                    "providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("swept", listed=5, foreign=1, referenced=2, young=1, found=1, destroyed=1)}],
                    "counts": action_counts(destroyed=1),
                    "actions": [action("orphan", "local", "o1", "ko1", "destroyed")],
                },
                "calls": [due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0), destroy("o1", 0, "local"), store("appendAudit", [1], 10), release_sweep(10)],
                "instancesAfter": [instance("k2", "local", "o2")],
                "leaksAfter": [after(l5)],
                "auditAfter": [audit(10, "local", "o1", "ko1", "orphan", "destroyed")],
            },
            providers=[local([sandbox("o1", old, key="ko1"), sandbox("o2", old, key="k2"), sandbox("o3", -MINUTE), sandbox("o4", old, owner="someone-else"), sandbox("o5", old, key="k5")], {"o1": {"latencyMs": 10}})],
            instances=[instance("k2", "local", "o2")],
            leaks=[l5],
        ),
        case(
            "reconcile: a provider's own owner namespace wins",
            "A provider that names its owner has its sandboxes swept under that owner, not the pass's default.",
            {
                "report": {"providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("swept", listed=2, foreign=1, found=1, destroyed=1)}]},
                "calls": [due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0), destroy("t1", 0, "local"), store("appendAudit", [1], 0), release_sweep(0)],
                "auditAfter": [audit(0, "local", "t1", None, "orphan", "destroyed")],
            },
            providers=[local([sandbox("t1", old, owner="team-a"), sandbox("s1", old)], owner="team-a")],
        ),
        case(
            "reconcile: a failed orphan destroy goes to the ledger",
            "An orphan whose destroy fails is recorded (reason orphan, due after one backoff) so later passes retry it.",
            {
                "report": {"providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("swept", listed=1, found=1, failed=1)}], "actions": [action("orphan", "local", "o1", None, "failed", "busy")]},
                "calls": [
                    due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0), destroy("o1", 0, "local"),
                    store("recordLeak", [{"key": "o1", "provider": "local", "providerSandboxId": "o1", "runId": "", "errorMessage": "busy"}, "orphan", 1005], 5),
                    store("appendAudit", [1], 5), release_sweep(5),
                ],
                "leaksAfter": [{"key": "o1", "provider": "local", "providerSandboxId": "o1", "runId": "", "lastError": "busy", "attempts": 1}],
                "auditAfter": [audit(5, "local", "o1", None, "orphan", "failed", "busy")],
            },
            options={"backoffMs": 1000},
            providers=[local([sandbox("o1", old)], {"o1": {"mode": "reject", "message": "busy", "latencyMs": 5}})],
        ),
        case(
            "reconcile: a sandbox the vendor is already deleting is never destroyed again",
            "A listed sandbox marked deleting (Daytona's destroying) is counted as deleting, not swept, and spares nothing else; its unknown creation time does not fail the sweep closed.",
            {
                "report": {"providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("swept", listed=3, deleting=2, found=1, destroyed=1)}]},
                "calls": [due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0), destroy("o1", 0, "local"), store("appendAudit", [1], 0), release_sweep(0)],
                "auditAfter": [audit(0, "local", "o1", None, "orphan", "destroyed")],
            },
            providers=[local([sandbox("o1", old), sandbox("d1", old, deleting=True), sandbox("d2", None, deleting=True)])],
        ),
        case(
            "reconcile: fails closed on a sandbox of unknown creation time",
            "One listed sandbox without a creation time spares every sandbox of that provider.",
            {
                "report": {"providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("unavailable", error='listed sandbox "o2" has no known creation time; the sweep destroys nothing of this provider', listed=2)}], "counts": action_counts()},
                "calls": [due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0), release_sweep(0)],
            },
            providers=[local([sandbox("o1", old), sandbox("o2", None)])],
        ),
        case(
            "reconcile: fails closed on a sandbox of unknown owner",
            "A listed sandbox without an owner spares every sandbox of that provider.",
            {
                "report": {"providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("unavailable", error='listed sandbox "o1" has no known owner; the sweep destroys nothing of this provider', listed=2)}]},
                "calls": [due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0), release_sweep(0)],
            },
            providers=[local([sandbox("o1", old, owner=None), sandbox("o2", old)])],
        ),
        case(
            "reconcile: fails closed when the listing fails",
            "A list() that rejects makes the provider's sweep unavailable, with the provider's message.",
            {
                "report": {"providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("unavailable", error="api down")}]},
                "calls": [due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0), release_sweep(0)],
            },
            providers=[{"name": "local", "destroy": {}, "list": {"mode": "reject", "message": "api down"}}],
        ),
        case(
            "reconcile: a listing past its deadline is cut and fails closed",
            "A list() still running at destroyTimeoutMs is cancelled; the sweep is unavailable.",
            {
                "report": {"providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("unavailable", error='listing the sandboxes of provider "local" did not settle within 50 ms; it was cancelled')}]},
                "calls": [due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0), release_sweep(50)],
                "aborted": ["list:local"],
                "elapsedMs": 50,
            },
            options={"destroyTimeoutMs": 50},
            providers=[{"name": "local", "destroy": {}, "list": {"mode": "hang"}}],
        ),
        case(
            "reconcile: a hanging listing ends at the default deadline",
            "Without destroyTimeoutMs a list() that never settles is still cancelled, at the default 120 s: the pass ends and the sweep is unavailable.",
            {
                "report": {"providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("unavailable", error='listing the sandboxes of provider "local" did not settle within 120000 ms; it was cancelled')}]},
                "calls": [due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0), release_sweep(120_000)],
                "aborted": ["list:local"],
                "elapsedMs": 120_000,
            },
            providers=[{"name": "local", "destroy": {}, "list": {"mode": "hang"}}],
        ),
        case(
            "reconcile: another host holds the sweep",
            "While another holder's sweep lease runs, this pass lists nothing and destroys nothing of that provider.",
            {
                "report": {"providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("held-elsewhere")}]},
                "calls": [due("local"), claim_sweep()],
            },
            providers=[local([sandbox("o1", old)])],
            store={"sweeps": [{"provider": "local", "holder": "host-b/1/0/0", "leaseMs": 600_000}]},
        ),
        case(
            "reconcile: idle records are expired into the ledger, then destroyed from it",
            "A record idle past maxIdleMs is deleted with a conditional delete that records an idle leak; the leak phase destroys it; a record of an unknown provider is left alone.",
            {
                "report": {
                    "idle": {"enabled": True, "stale": 2, "expired": 1, "touched": 0, "skipped": 1},
                    "providers": [{"name": "docker", "leaks": leak_counts(due=1, destroyed=1), "orphans": no_sweep}],
                    "actions": [action("idle", "docker", "c1", "k1", "destroyed")],
                },
                "calls": [
                    store("listStale", [-HOUR, 1000], 0),
                    store("expireIdle", ["k1", -2 * HOUR, {"key": "k1", "provider": "docker", "providerSandboxId": "c1", "runId": "", "errorMessage": IDLE_EXPIRED}], 0),
                    due("docker"), destroy("c1", 0), store("resolveLeak", ["c1"], 10), store("appendAudit", [1], 10),
                ],
                "instancesAfter": [instance("k2", "docker", "c2", -10 * MINUTE), instance("k3", "e2b", "x3", -7_000_000)],
                "auditAfter": [audit(10, "docker", "c1", "k1", "idle", "destroyed")],
            },
            options={"maxIdleMs": HOUR},
            instances=[instance("k1", "docker", "c1", -2 * HOUR), instance("k2", "docker", "c2", -10 * MINUTE), instance("k3", "e2b", "x3", -7_000_000)],
            destroy={"c1": {"latencyMs": 10}},
        ),
        case(
            "reconcile: an idle record touched meanwhile is left alone",
            "When the conditional delete finds the record updated since it was read, nothing is written or destroyed: the record is reported touched.",
            {
                "report": {"idle": {"enabled": True, "stale": 1, "expired": 0, "touched": 1, "skipped": 0}, "counts": action_counts(touched=1), "actions": [action("idle", "docker", "c1", "k1", "touched")]},
                "calls": [
                    store("listStale", [-HOUR, 1000], 0),
                    store("expireIdle", ["k1", -2 * HOUR, {"key": "k1", "provider": "docker", "providerSandboxId": "c1", "runId": "", "errorMessage": IDLE_EXPIRED}], 0),
                    due("docker"),
                ],
                "instancesAfter": [instance("k1", "docker", "c1", -2 * HOUR)],
            },
            options={"maxIdleMs": HOUR},
            instances=[instance("k1", "docker", "c1", -2 * HOUR)],
            store={"scripts": {"expireIdle": {"mode": "return", "value": False}}},
        ),
        case(
            "reconcile: a dry run plans and changes nothing",
            "dryRun reads (stale records, due leaks without a lease, references, the listing), claims no sweep, destroys and writes nothing, and answers the plan with reasons.",
            {
                "report": {
                    "dryRun": True,
                    "idle": {"enabled": True, "stale": 1, "expired": 1, "touched": 0, "skipped": 0},
                    "providers": [{"name": "local", "leaks": leak_counts(due=1), "orphans": orphans("swept", listed=3, referenced=2, found=1)}],
                    "counts": action_counts(planned=3),
                    "actions": [action("idle", "local", "l1", "k1", "planned"), action("leak-retry", "local", "l2", "k2", "planned"), action("orphan", "local", "o3", None, "planned")],
                    "stillLeaking": True,
                },
                "calls": [store("listStale", [-HOUR, 1000], 0), due("local", lease=None), references(0), registered(0), listing(0)],
                "instancesAfter": [instance("k1", "local", "l1", -2 * HOUR)],
                "leaksAfter": [after(leak("k2", "local", "l2"))],
            },
            options={"dryRun": True, "maxIdleMs": HOUR},
            providers=[local([sandbox("l1", old), sandbox("l2", old), sandbox("o3", old)])],
            instances=[instance("k1", "local", "l1", -2 * HOUR)],
            leaks=[leak("k2", "local", "l2")],
        ),
        case(
            "reconcile: a destroy past its deadline fails with a timeout and backs off",
            "The destroy is cancelled at destroyTimeoutMs; the entry keeps the timeout error and is deferred; the audit says timeout.",
            {
                "report": {"counts": action_counts(failed=1), "actions": [action("leak-retry", "docker", "c1", "k1", "failed", timeout_message("c1", 100))]},
                "calls": [due("docker"), destroy("c1", 0), store("deferLeak", ["c1", timeout_message("c1", 100), 100, 2100], 100), store("appendAudit", [1], 100)],
                "leaksAfter": [after(l1, lastError=timeout_message("c1", 100), attempts=2)],
                "auditAfter": [audit(100, "docker", "c1", "k1", "leak-retry", "timeout", timeout_message("c1", 100))],
                "aborted": ["c1"],
                "elapsedMs": 100,
            },
            options={"destroyTimeoutMs": 100, "backoffMs": 1000},
            leaks=[l1],
            destroy={"c1": {"mode": "hang"}},
        ),
        case(
            "reconcile: a claim's lease running out cuts the destroy and leaves the entry",
            "No destroy runs past the lease (less its last tenth): the destroy is cancelled at 900 ms and the entry left, unrecorded, to its next holder.",
            {
                "report": {"providers": [{"name": "docker", "leaks": leak_counts(due=1, deferred=1), "orphans": no_sweep}], "counts": action_counts(deferred=1), "actions": [action("leak-retry", "docker", "c1", "k1", "deferred")]},
                "calls": [store("dueLeaks", ["docker", 1000, 1000, 0], 0), destroy("c1", 0)],
                "leaksAfter": [after(l1)],
                "aborted": ["c1"],
                "elapsedMs": 900,
            },
            options={"leaseMs": 1000},
            leaks=[l1],
            destroy={"c1": {"mode": "hang"}},
        ),
        case(
            "reconcile: the budget stops new destroys",
            "At concurrency 1 and a 30 ms budget, the destroy due at 40 ms is deferred; the pass reports itself cut short.",
            {
                "report": {"cutShort": True, "providers": [{"name": "docker", "leaks": leak_counts(due=3, destroyed=2, deferred=1), "orphans": no_sweep}], "counts": action_counts(destroyed=2, deferred=1)},
                "calls": [due("docker"), destroy("c1", 0), store("resolveLeak", ["c1"], 20), destroy("c2", 20), store("resolveLeak", ["c2"], 40), store("appendAudit", [2], 40)],
                "leaksAfter": [after(three[2])],
                "auditAfter": [audit(20, "docker", "c1", "k1", "leak-retry", "destroyed"), audit(40, "docker", "c2", "k2", "leak-retry", "destroyed")],
                "progress": [
                    {"kind": "action", "done": 1, "total": 3, "reason": "leak-retry", "provider": "docker", "providerSandboxId": "c1", "result": "destroyed", "elapsedMs": 20},
                    {"kind": "action", "done": 2, "total": 3, "reason": "leak-retry", "provider": "docker", "providerSandboxId": "c2", "result": "destroyed", "elapsedMs": 40},
                    {"kind": "action", "done": 3, "total": 3, "reason": "leak-retry", "provider": "docker", "providerSandboxId": "c3", "result": "deferred", "elapsedMs": 40},
                ],
            },
            options={"concurrency": 1, "budgetMs": 30},
            leaks=three,
            destroy={sandbox: {"latencyMs": 20} for sandbox in ("c1", "c2", "c3")},
            progress=True,
        ),
        case(
            "reconcile: a store write failure ends the pass once in-flight destroys settle",
            "resolveLeak failing at 10 ms stops new work; the destroy in flight settles and is written down (the audit still succeeds); the pass then rejects with the first store error, and both entries stay in the ledger.",
            {
                "error": {"kind": "hostError", "source": "resolveLeak"},
                "calls": [due("docker"), destroy("c1", 0), destroy("c2", 0), store("resolveLeak", ["c1"], 10), store("resolveLeak", ["c2"], 30), store("appendAudit", [2], 30)],
                "leaksAfter": [after(three[0]), after(three[1])],
                "auditAfter": [audit(10, "docker", "c1", "k1", "leak-retry", "destroyed"), audit(30, "docker", "c2", "k2", "leak-retry", "destroyed")],
            },
            options={"concurrency": 2},
            leaks=three[:2],
            destroy={"c1": {"latencyMs": 10}, "c2": {"latencyMs": 30}},
            store={"scripts": {"resolveLeak": {"mode": "reject", "message": "disk full"}}},
        ),
        case(
            "reconcile: concurrency and per-provider slots",
            "Two providers, one destroy each at a time: each provider's second destroy starts when its first ends.",
            {
                "report": {"counts": action_counts(destroyed=4)},
                "calls": [
                    due("a"), due("b"), destroy("a1", 0, "a"), destroy("b1", 0, "b"),
                    store("resolveLeak", ["a1"], 10), destroy("a2", 10, "a"),
                    store("resolveLeak", ["b1"], 15), destroy("b2", 15, "b"),
                    store("resolveLeak", ["a2"], 20), store("resolveLeak", ["b2"], 30), store("appendAudit", [4], 30),
                ],
                "auditAfter": [
                    audit(10, "a", "a1", "ka1", "leak-retry", "destroyed"), audit(15, "b", "b1", "kb1", "leak-retry", "destroyed"),
                    audit(20, "a", "a2", "ka2", "leak-retry", "destroyed"), audit(30, "b", "b2", "kb2", "leak-retry", "destroyed"),
                ],
                "elapsedMs": 30,
            },
            options={"concurrency": 2, "perProviderConcurrency": 1},
            providers=[
                {"name": "a", "destroy": {"a1": {"latencyMs": 10}, "a2": {"latencyMs": 10}}},
                {"name": "b", "destroy": {"b1": {"latencyMs": 15}, "b2": {"latencyMs": 15}}},
            ],
            leaks=[leak("ka1", "a", "a1"), leak("ka2", "a", "a2"), leak("kb1", "b", "b1"), leak("kb2", "b", "b2")],
        ),
        case(
            "reconcile: stopping lets in-flight destroys settle and starts nothing new",
            "Stopped at 5 ms, the running destroy ends and is resolved; the next is deferred (its entry stays).",
            {
                "report": {"cutShort": True, "counts": action_counts(destroyed=1, deferred=1)},
                "calls": [due("docker"), destroy("c1", 0), store("resolveLeak", ["c1"], 20), store("appendAudit", [1], 20)],
                "leaksAfter": [after(three[1])],
                "auditAfter": [audit(20, "docker", "c1", "k1", "leak-retry", "destroyed")],
                "elapsedMs": 20,
            },
            options={"concurrency": 1},
            leaks=three[:2],
            destroy={"c1": {"latencyMs": 20}, "c2": {"latencyMs": 20}},
            stopAtMs=5,
        ),
        case(
            "reconcile: a sandbox a listing repeats is destroyed once",
            "Offset pages repeat an item when the fleet changes between pages: o1 listed twice and o2 once are two sandboxes, two destroys, two destroyed.",
            {
                "report": {
                    "providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("swept", listed=2, found=2, destroyed=2)}],
                    "counts": action_counts(destroyed=2),
                    "actions": [action("orphan", "local", "o1", None, "destroyed"), action("orphan", "local", "o2", None, "destroyed")],
                },
                "calls": [due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0), destroy("o1", 0, "local"), destroy("o2", 0, "local"), store("appendAudit", [2], 10), release_sweep(10)],
                "auditAfter": [audit(10, "local", "o1", None, "orphan", "destroyed"), audit(10, "local", "o2", None, "orphan", "destroyed")],
            },
            providers=[local([sandbox("o1", old), sandbox("o1", old), sandbox("o2", old)], {"o1": {"latencyMs": 10}, "o2": {"latencyMs": 10}})],
        ),
        case(
            "reconcile: a leak this pass retried is never swept as well",
            "The sweep's claim answers late (20 ms), so its references are read after the retry destroyed l1 (5 ms) and resolved its entry; the lagging listing still shows l1, and the store's audit write is lost, so only the pass's own memory spares it: one destroy.",
            {
                "report": {
                    "providers": [{"name": "local", "leaks": leak_counts(due=1, destroyed=1), "orphans": orphans("swept", listed=1, referenced=1)}],
                    "counts": action_counts(destroyed=1),
                    "actions": [action("leak-retry", "local", "l1", "k1", "destroyed")],
                },
                "calls": [due("local"), claim_sweep(), destroy("l1", 0, "local"), store("resolveLeak", ["l1"], 5), store("appendAudit", [1], 5), references(20), registered(20), listing(20), prune(20), release_sweep(20)],
            },
            providers=[local([sandbox("l1", old, key="k1")], {"l1": {"latencyMs": 5}})],
            leaks=[leak("k1", "local", "l1")],
            store={"scripts": {"claimSweep": {"latencyMs": 20}, "appendAudit": {"mode": "return", "value": None}}},
        ),
        case(
            "reconcile: a sandbox this pass acted on, listed half-deleted, does not fail the sweep closed",
            "The retry destroys l1 (5 ms) before the lagging listing (20 ms), which shows l1 mid-deletion, without a creation time or an owner (a LocalProvider directory whose owner file is already removed). What this pass acted on is never swept, so what the listing lacks for it does not matter: the sweep goes on (o1 is destroyed), and nothing is left leaking.",
            {
                "report": {
                    "providers": [{"name": "local", "leaks": leak_counts(due=1, destroyed=1), "orphans": orphans("swept", listed=2, referenced=1, found=1, destroyed=1)}],
                    "counts": action_counts(destroyed=2),
                    "actions": [action("leak-retry", "local", "l1", "k1", "destroyed"), action("orphan", "local", "o1", None, "destroyed")],
                },
                "calls": [due("local"), claim_sweep(), destroy("l1", 0, "local"), store("resolveLeak", ["l1"], 5), store("appendAudit", [1], 5), references(20), registered(20), listing(20), prune(20), destroy("o1", 20, "local"), store("appendAudit", [1], 20), release_sweep(20)],
                "auditAfter": [audit(5, "local", "l1", "k1", "leak-retry", "destroyed"), audit(20, "local", "o1", None, "orphan", "destroyed")],
            },
            providers=[local([sandbox("l1", None, owner=None), sandbox("o1", old)], {"l1": {"latencyMs": 5}})],
            leaks=[leak("k1", "local", "l1")],
            store={"scripts": {"claimSweep": {"latencyMs": 20}}},
        ),
        case(
            "reconcile: what a pass destroyed within the grace is not an orphan",
            "A lagging listing still shows o1 and o2, destroyed by another host's pass 2 and 15 minutes ago, and o3, whose destroy failed 1 minute ago. The audit log spares o1 (inside the 10-minute grace); o2's destroy is older than the grace and o3's did not succeed, so both are swept.",
            {
                "report": {
                    "providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("swept", listed=3, referenced=1, found=2, destroyed=2)}],
                    "counts": action_counts(destroyed=2),
                    "actions": [action("orphan", "local", "o2", None, "destroyed"), action("orphan", "local", "o3", None, "destroyed")],
                },
                "calls": [due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0), destroy("o2", 0, "local"), destroy("o3", 0, "local"), store("appendAudit", [2], 0), release_sweep(0)],
                "auditAfter": [
                    {**audit(-2 * MINUTE, "local", "o1", None, "orphan", "destroyed"), "host": "host-b"},
                    {**audit(-15 * MINUTE, "local", "o2", None, "orphan", "destroyed"), "host": "host-b"},
                    {**audit(-MINUTE, "local", "o3", None, "orphan", "failed", "busy"), "host": "host-b"},
                    audit(0, "local", "o2", None, "orphan", "destroyed"),
                    audit(0, "local", "o3", None, "orphan", "destroyed"),
                ],
            },
            providers=[local([sandbox("o1", -30 * MINUTE), sandbox("o2", -30 * MINUTE), sandbox("o3", -30 * MINUTE)])],
            store={"audit": [
                {**audit(-2 * MINUTE, "local", "o1", None, "orphan", "destroyed"), "host": "host-b"},
                {**audit(-15 * MINUTE, "local", "o2", None, "orphan", "destroyed"), "host": "host-b"},
                {**audit(-MINUTE, "local", "o3", None, "orphan", "failed", "busy"), "host": "host-b"},
            ]},
        ),
        case(
            "reconcile: a dry run that plans a destroy is still leaking",
            "A planned destroy did not happen: the sandbox still bills, so the dry run's report says stillLeaking (an audit-only cron job alerts on it).",
            {
                "report": {"dryRun": True, "counts": action_counts(planned=1), "actions": [action("orphan", "local", "o1", None, "planned")], "stillLeaking": True},
                "calls": [due("local", lease=None), references(0), registered(0), listing(0)],
            },
            options={"dryRun": True},
            providers=[local([sandbox("o1", old)])],
        ),
        case(
            "reconcile: retryLeaks false sweeps orphans only",
            "The command's orphans pass: no due leak is claimed or retried (the entry stays for a full pass), and the sweep runs as ever.",
            {
                "report": {
                    "providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("swept", listed=2, referenced=1, found=1, destroyed=1)}],
                    "actions": [action("orphan", "local", "o1", None, "destroyed")],
                },
                "calls": [claim_sweep(), references(0), registered(0), listing(0), prune(0), destroy("o1", 0, "local"), store("appendAudit", [1], 0), release_sweep(0)],
                "leaksAfter": [after(leak("k1", "local", "l1"))],
                "auditAfter": [audit(0, "local", "o1", None, "orphan", "destroyed")],
            },
            options={"retryLeaks": False},
            providers=[local([sandbox("o1", old), sandbox("l1", old, key="k1")])],
            leaks=[leak("k1", "local", "l1")],
        ),
        case(
            "reconcile: an unlabelled sandbox the registry names is ours",
            "TanStack's providers label nothing: a listed sandbox without a label (owner \"\") is ours when the store's registry names it (a record named it, then was deleted after a destroy that silently failed), so it is destroyed; an unlabelled one the registry does not name is a stranger's, never touched.",
            {
                "report": {
                    "providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("swept", listed=2, foreign=1, found=1, destroyed=1)}],
                    "actions": [action("orphan", "local", "u1", None, "destroyed")],
                    "stillLeaking": False,
                },
                "calls": [due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0), destroy("u1", 0, "local"), store("appendAudit", [1], 0), release_sweep(0)],
                "auditAfter": [audit(0, "local", "u1", None, "orphan", "destroyed")],
            },
            providers=[local([sandbox("u1", old, owner=""), sandbox("u2", old, owner="")])],
            store={"registered": [instance("gone", "local", "u1", old)]},
        ),
        case(
            "reconcile: the registry never claims another owner's sandbox",
            "A registered sandbox labelled for another owner is that owner's: foreign, untouched. A registered unlabelled one still referenced by a record is spared as referenced; a young one as young.",
            {
                "report": {
                    "providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("swept", listed=3, foreign=1, referenced=1, young=1)}],
                    "actions": [],
                },
                "calls": [due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0), release_sweep(0)],
                "instancesAfter": [instance("live", "local", "r1")],
            },
            providers=[local([sandbox("x1", old, owner="someone-else"), sandbox("r1", old, owner=""), sandbox("y1", -MINUTE, owner="")])],
            instances=[instance("live", "local", "r1")],
            store={"registered": [instance("gone-x", "local", "x1", old), instance("gone-y", "local", "y1", old)]},
        ),
        case(
            "reconcile: a dry run plans a registered unlabelled orphan",
            "The registry is read in a dry run too (a read), and the plan names the unlabelled registered sandbox.",
            {
                "report": {"dryRun": True, "counts": action_counts(planned=1), "actions": [action("orphan", "local", "u1", None, "planned")], "stillLeaking": True},
                "calls": [due("local", lease=None), references(0), registered(0), listing(0)],
            },
            options={"dryRun": True},
            providers=[local([sandbox("u1", old, owner="")])],
            store={"registered": [instance("gone", "local", "u1", old)]},
        ),
        case(
            "reconcile: a provider that looks up by id finds the registered sandboxes its listing did not show",
            "A vendor that cannot list unlabelled sandboxes cheaply reads by id (its get) what the store's registry names and the listing did not show, once the listing is in: not one a live record references (r1). What the lookup finds is judged with the listing: unlabelled (u1) it is the registry's, so ours; labelled for another owner (x1) it stays theirs; one it does not answer (g1) is gone.",
            {
                "report": {
                    "providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("swept", listed=3, foreign=1, found=2, destroyed=2)}],
                    "actions": [action("orphan", "local", "o1", None, "destroyed"), action("orphan", "local", "u1", None, "destroyed")],
                    "stillLeaking": False,
                },
                "calls": [
                    due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0),
                    call("provider", "lookup", [{"ids": ["g1", "u1", "x1"]}], 0, "local"),
                    destroy("o1", 0, "local"), destroy("u1", 0, "local"), store("appendAudit", [2], 0), release_sweep(0),
                ],
                "instancesAfter": [instance("live", "local", "r1")],
                "auditAfter": [audit(0, "local", "o1", None, "orphan", "destroyed"), audit(0, "local", "u1", None, "orphan", "destroyed")],
            },
            providers=[local([sandbox("o1", old)], lookup={"mode": "return", "value": [sandbox("u1", old, owner=None), sandbox("x1", old, owner="someone-else")]})],
            instances=[instance("live", "local", "r1")],
            store={"registered": [instance("gone-u", "local", "u1", old), instance("gone-x", "local", "x1", old), instance("gone-g", "local", "g1", old), instance("live-old", "local", "r1", old)]},
        ),
        case(
            "reconcile: a failed lookup fails the sweep closed",
            "A lookup that rejects (or answers what does not read) makes the provider's sweep unavailable, naming why: not even what the listing showed is destroyed, as for a failed listing.",
            {
                "report": {
                    "providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("unavailable", error="vendor down")}],
                    "actions": [],
                    "stillLeaking": True,
                },
                "calls": [
                    due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0),
                    call("provider", "lookup", [{"ids": ["u1"]}], 0, "local"), release_sweep(0),
                ],
            },
            providers=[local([sandbox("o1", old)], lookup={"mode": "reject", "message": "vendor down"})],
            store={"registered": [instance("gone-u", "local", "u1", old)]},
        ),
        case(
            "reconcile: a lookup that hangs is cut by the listing's deadline",
            "The lookup runs under the listing's deadline (the destroy timeout): at it the lookup is cancelled and the sweep is unavailable, naming the deadline.",
            {
                "report": {
                    "providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("unavailable", error=LOOKUP_TIMEOUT)}],
                    "actions": [],
                    "stillLeaking": True,
                    "elapsedMs": 100,
                },
                "calls": [
                    due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0),
                    call("provider", "lookup", [{"ids": ["u1"]}], 0, "local"), release_sweep(100),
                ],
                "aborted": ["lookup:local"],
            },
            options={"destroyTimeoutMs": 100},
            providers=[local([], lookup={"mode": "hang"})],
            store={"registered": [instance("gone-u", "local", "u1", old)]},
        ),
        case(
            "reconcile: a dry run with nothing to do is not leaking",
            "Nothing planned, nothing failed: stillLeaking is false.",
            {
                "report": {"dryRun": True, "counts": action_counts(), "actions": [], "stillLeaking": False},
                "calls": [due("local", lease=None), references(0), registered(0), listing(0)],
            },
            options={"dryRun": True},
            providers=[local([sandbox("o1", -MINUTE)])],
        ),
        case(
            "reconcile: the sweep's holder prunes the registry and the audit log past their retention",
            "Bounded growth: the pass that took a provider's sweep calls the store's prune once, alongside the listing (after the sweep's reads, so no destroy waits and a short audit retention never hides a recent destroy from this sweep), with registryBefore = now - registryRetentionMs and auditBefore = now - auditRetentionMs. The audit row from before the bound goes; the one at the bound and another provider's stay.",
            {
                "report": {"providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("swept")}], "actions": []},
                "calls": [due("local"), claim_sweep(), references(0), registered(0, retention=HOUR), listing(0), prune(0, registry=HOUR, audit=24 * HOUR), release_sweep(0)],
                "auditAfter": [
                    {**audit(-24 * HOUR, "local", "o2", None, "orphan", "destroyed"), "host": "host-b"},
                    {**audit(-48 * HOUR, "docker", "c1", None, "orphan", "destroyed"), "host": "host-b"},
                ],
            },
            options={"registryRetentionMs": HOUR, "auditRetentionMs": 24 * HOUR},
            providers=[local([])],
            store={"audit": [
                {**audit(-48 * HOUR, "local", "o1", None, "orphan", "destroyed"), "host": "host-b"},
                {**audit(-24 * HOUR, "local", "o2", None, "orphan", "destroyed"), "host": "host-b"},
                {**audit(-48 * HOUR, "docker", "c1", None, "orphan", "destroyed"), "host": "host-b"},
            ]},
        ),
        case(
            "reconcile: a failed prune fails nothing",
            "A prune the store rejects is ignored, like a failed release: the sweep still destroys its orphan, audits it and releases the sweep; the next holder prunes.",
            {
                "report": {
                    "providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("swept", listed=1, found=1, destroyed=1)}],
                    "counts": action_counts(destroyed=1),
                    "actions": [action("orphan", "local", "o1", None, "destroyed")],
                    "stillLeaking": False,
                },
                "calls": [due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0), destroy("o1", 0, "local"), store("appendAudit", [1], 0), release_sweep(0)],
                "auditAfter": [audit(0, "local", "o1", None, "orphan", "destroyed")],
            },
            providers=[local([sandbox("o1", old)])],
            store={"scripts": {"prune": {"mode": "reject", "message": "disk full"}}},
        ),
        case(
            "reconcile: a pass that does not hold the sweep prunes nothing",
            "Only the sweep's holder prunes: while another host holds it, this pass neither sweeps nor prunes, and an audit row far past auditRetentionMs stays.",
            {
                "report": {"providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("held-elsewhere")}]},
                "calls": [due("local"), claim_sweep()],
                "auditAfter": [{**audit(-48 * HOUR, "local", "o1", None, "orphan", "destroyed"), "host": "host-b"}],
            },
            options={"auditRetentionMs": HOUR},
            providers=[local([])],
            store={
                "sweeps": [{"provider": "local", "holder": "host-b/1/0/0", "leaseMs": 600_000}],
                "audit": [{**audit(-48 * HOUR, "local", "o1", None, "orphan", "destroyed"), "host": "host-b"}],
            },
        ),
        case(
            "reconcile: a dry run prunes nothing",
            "A dry run takes no sweep and makes only reads: no prune, and an audit row far past auditRetentionMs stays.",
            {
                "report": {"dryRun": True, "providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("swept")}], "actions": [], "stillLeaking": False},
                "calls": [due("local", lease=None), references(0), registered(0), listing(0)],
                "auditAfter": [{**audit(-48 * HOUR, "local", "o1", None, "orphan", "destroyed"), "host": "host-b"}],
            },
            options={"dryRun": True, "auditRetentionMs": HOUR},
            providers=[local([])],
            store={"audit": [{**audit(-48 * HOUR, "local", "o1", None, "orphan", "destroyed"), "host": "host-b"}]},
        ),
        # Between listing and judging: the sweep asks its store about what it
        # listed only once the listing is in, so what other processes do
        # meanwhile (the listing's `meanwhile`) is what it must see.
        case(
            "reconcile: a record deleted between listing and judging is not an orphan",
            "A record that names a listed sandbox is deleted while the listing is out (the app reclaimed it: its destroy came first, and a lagging listing still shows it). Its record existed after the sweep's mark, so the store counts it through the registry's deletion mark: spared, never destroyed a second time. The unreferenced old sandbox beside it is an orphan.",
            {
                "report": {
                    "providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("swept", listed=2, referenced=1, found=1, destroyed=1)}],
                    "actions": [action("orphan", "local", "o2", None, "destroyed")],
                },
                "calls": [due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0), destroy("o2", 10, "local"), store("appendAudit", [1], 10), release_sweep(10)],
                "auditAfter": [audit(10, "local", "o2", None, "orphan", "destroyed")],
            },
            providers=[{"name": "local", "destroy": {}, "list": {"mode": "return", "value": [sandbox("o1", old), sandbox("o2", old)], "latencyMs": 10, "meanwhile": [{"op": "delete", "key": "k1"}]}}],
            instances=[instance("k1", "local", "o1")],
        ),
        case(
            "reconcile: a leak resolved between listing and judging is not swept again",
            "A ledger entry (not yet due for this pass) names a listed sandbox; while the listing is out another host's leak retry destroys it and resolves the entry. The entry is gone when the store is asked, but its resolve is within the orphan grace: spared, not destroyed again off a lagging listing.",
            {
                "report": {"providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("swept", listed=1, referenced=1)}], "actions": []},
                "calls": [due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0), release_sweep(10)],
            },
            providers=[{"name": "local", "destroy": {}, "list": {"mode": "return", "value": [sandbox("o5", old)], "latencyMs": 10, "meanwhile": [{"op": "resolveLeaks", "provider": "local"}]}}],
            leaks=[l5],
        ),
        case(
            "reconcile: a record created between listing and judging is not an orphan",
            "A record naming a listed old sandbox is written while the listing is out (an app adopted the sandbox for a new run). The sweep reads references after listing, so it sees the record and spares the sandbox (a sweep that read its references before listing could not).",
            {
                "report": {"providers": [{"name": "local", "leaks": leak_counts(), "orphans": orphans("swept", listed=1, referenced=1)}], "actions": []},
                "calls": [due("local"), claim_sweep(), references(0), registered(0), listing(0), prune(0), release_sweep(10)],
                "instancesAfter": [instance("k3", "local", "o3", 5)],
            },
            providers=[{"name": "local", "destroy": {}, "list": {"mode": "return", "value": [sandbox("o3", old)], "latencyMs": 10, "meanwhile": [{"op": "upsert", "record": instance("k3", "local", "o3", 5)}]}}],
        ),
    ]


def scoped(case: dict[str, Any]) -> dict[str, Any]:
    """A sweep on a store that answers about what it listed (every native
    store, and so every fleet case): the sweep's two whole-provider reads
    before the listing become the store's deletion mark, and after the
    listing (and its lookup) come the scoped reads, as the rules say:

    * ``sweepMark(provider)`` where ``sandboxReferences`` was;
    * ``list``, ``prune`` as before;
    * with a provider that looks up by id, once the listing is in:
      ``lookupCandidates(provider, since, limit)`` (the registry's queue:
      registered sandboxes whose record is gone, no ledger entry), the
      ``lookup`` of those the listing did not show, then (not in a dry run)
      ``lookupChecked(provider, gone, checked, markTime)``: asked ids the
      lookup left out are gone, every other candidate was checked;
    * ``referencedAmong(provider, ids, destroyedSince, "$mark")`` and
      ``registeredAmong(provider, ids, since)`` about every listed or found
      id (sorted, once), unless a read before them failed.
    """
    options = case["options"]
    dry = options.get("dryRun", False)
    limit = options.get("limit", 1000)
    store_seed = case["store"]
    live = {(i["provider"], i["providerSandboxId"]) for i in store_seed.get("instances", [])}
    ledger = {(l["provider"], l["providerSandboxId"]) for l in store_seed.get("leaks", [])}
    providers = {provider["name"]: provider for provider in case["providers"]}
    calls = case["expect"].get("calls")
    if calls is None:
        return case
    out: list[dict[str, Any]] = []
    marks: dict[str, tuple[int, int]] = {}
    since: dict[str, int] = {}
    index = 0

    def settles(script: dict[str, Any] | None, at: int) -> int | None:
        if script is None or script.get("mode") in ("reject", "throw", "hang"):
            return None
        return at + script.get("latencyMs", 0)

    while index < len(calls):
        entry = calls[index]
        index += 1
        method, args = entry["method"], entry["args"]
        if entry["on"] == "store" and method == "sandboxReferences":
            marks[args[0]] = (entry["at"], args[1])
            out.append(store("sweepMark", [args[0]], entry["at"]))
            continue
        if entry["on"] == "store" and method == "registeredSandboxes":
            since[args[0]] = args[1]
            continue
        out.append(entry)
        if not (entry["on"] == "provider" and method == "list"):
            continue
        name = entry["name"]
        provider = providers[name]
        if index < len(calls) and calls[index]["method"] == "prune":
            out.append(calls[index])
            index += 1
        at = settles(provider["list"], entry["at"])
        if at is None:
            continue
        listed = [sandbox["id"] for sandbox in provider["list"]["value"]]
        found: list[str] = []
        mark_at, destroyed_since = marks[name]
        if "lookup" in provider:
            registered = [r["providerSandboxId"] for r in store_seed.get("registered", []) if r["provider"] == name]
            candidates = sorted({sid for sid in registered if (name, sid) not in live and (name, sid) not in ledger})[:limit]
            out.append(store("lookupCandidates", [name, since[name], limit], at))
            asked: list[str] = []
            if index < len(calls) and calls[index]["method"] == "lookup":
                asked = calls[index]["args"][0]["ids"]
                assert asked == sorted(set(candidates) - set(listed)), (case["name"], asked, candidates)
                out.append(calls[index])
                index += 1
                at = settles(provider["lookup"], at)
                if at is None:
                    continue
                found = [sandbox["id"] for sandbox in provider["lookup"]["value"] if sandbox["id"] in asked]
            gone = sorted(set(asked) - set(found))
            if not dry and candidates:
                out.append(store("lookupChecked", [name, gone, sorted(set(candidates) - set(gone)), mark_at], at))
        ids = sorted(set(listed) | set(found))
        if ids:
            out.append(store("referencedAmong", [name, ids, destroyed_since, "$mark"], at))
            out.append(store("registeredAmong", [name, ids, since[name]], at))
    case["expect"]["calls"] = out
    return case


def write(name: str, comment: str, cases: list[dict[str, Any]]) -> None:
    path = HERE / name
    path.write_text(json.dumps({"comment": comment, "cases": cases}, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {path} ({len(cases)} cases)")


if __name__ == "__main__":
    write("reclaim-all.json", "reclaimAll: written by generate_fleet.py; see README.md (Fleet passes).", reclaim_all_cases())
    write("reconcile.json", "reconcile: written by generate_fleet.py; see README.md (Fleet passes).", thrown_twins([scoped(case) for case in reconcile_cases()]))
