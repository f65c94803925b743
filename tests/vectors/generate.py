#!/usr/bin/env python3
"""Writes the generated vector files: deadlines.json, retry.json and
key-identity.json. Every expectation below is written out by hand from the
rules (README.md of this folder); nothing is computed by the implementation.

    python3 tests/vectors/generate.py   # then commit the JSON it wrote
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
WARN_DESTROY = "reclaim: provider destroy failed; deleting the record anyway"
ERRORS_LINE = "reclaim: destroy failed; sandbox may still be running"
KEY = "thread-1:sandbox"
RECORD = {"runId": "run-1", "threadId": "thread-1", "status": "completed", "startedAt": 1700000000000, "sandboxKey": KEY}
INSTANCE = {"key": KEY, "provider": "docker", "providerSandboxId": "ctr-1", "threadId": "thread-1", "updatedAt": 1700000000000}


def timeout_message(sandbox_id: str, timeout_ms: int) -> str:
    return f'destroying sandbox "{sandbox_id}" did not settle within {timeout_ms} ms; it was cancelled'


def timeout_error(sandbox_id: str, timeout_ms: int) -> dict[str, Any]:
    return {"$timeoutError": {"providerSandboxId": sandbox_id, "timeoutMs": timeout_ms, "message": timeout_message(sandbox_id, timeout_ms)}}


def call(on: str, method: str, args: list[Any], at: int) -> dict[str, Any]:
    return {"on": on, "method": method, "args": args, "at": at}


def warn_destroy(error: Any) -> dict[str, Any]:
    meta = {"runId": "run-1", "sandboxKey": KEY, "providerSandboxId": "ctr-1", "error": error}
    return {"level": "warn", "message": WARN_DESTROY, "meta": meta}


def deadline_cases() -> list[dict[str, Any]]:
    def case(name: str, description: str, destroy: dict[str, Any], expect: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {
            "name": name,
            "description": description,
            "api": extra.pop("api", "reclaimSandbox"),
            "options": {"destroyTimeoutMs": extra.pop("timeout", 100)},
            "record": RECORD,
            "provider": {"name": "docker", "destroy": {"ctr-1": destroy}},
            "store": {"ledger": extra.pop("ledger", False), "instances": [INSTANCE], **extra.pop("store", {})},
            "logger": True,
            "expect": expect,
        }

    timed_out = timeout_error("ctr-1", 100)
    return [
        case(
            "deadline: destroy settles in time",
            "A destroy that resolves before its deadline is an ordinary destroy.",
            {"mode": "resolve", "latencyMs": 30},
            {
                "result": "destroyed",
                "calls": [call("store", "get", [KEY], 0), call("provider", "destroy", [{"id": "ctr-1"}], 0), call("store", "delete", [KEY], 30)],
                "logs": [],
                "instancesAfter": [],
                "elapsedMs": 30,
            },
        ),
        case(
            "deadline: destroy settles just before it",
            "Settling 1 ms before the deadline still counts as destroyed.",
            {"mode": "resolve", "latencyMs": 99},
            {
                "result": "destroyed",
                "calls": [call("store", "get", [KEY], 0), call("provider", "destroy", [{"id": "ctr-1"}], 0), call("store", "delete", [KEY], 99)],
                "logs": [],
                "instancesAfter": [],
                "elapsedMs": 99,
            },
        ),
        case(
            "deadline: a hanging destroy is cancelled and the record deleted",
            "At the deadline the destroy is cancelled and the reclaim takes the destroy-failed path with a timeout error.",
            {"mode": "hang"},
            {
                "result": "destroy-failed",
                "calls": [call("store", "get", [KEY], 0), call("provider", "destroy", [{"id": "ctr-1"}], 0), call("store", "delete", [KEY], 100)],
                "logs": [warn_destroy(timed_out)],
                "instancesAfter": [],
                "aborted": ["ctr-1"],
                "elapsedMs": 100,
            },
        ),
        case(
            "deadline: a late settle changes nothing",
            "The destroy resolves at 150 ms, after its deadline and while the delete is still running: no second line, no second delete, still destroy-failed.",
            {"mode": "resolve", "latencyMs": 150},
            {
                "result": "destroy-failed",
                "calls": [call("store", "get", [KEY], 0), call("provider", "destroy", [{"id": "ctr-1"}], 0), call("store", "delete", [KEY], 100)],
                "logs": [warn_destroy(timed_out)],
                "instancesAfter": [],
                "aborted": ["ctr-1"],
                "elapsedMs": 300,
            },
            store={"delete": {"mode": "resolve", "latencyMs": 200}},
        ),
        case(
            "deadline: a rejection before it is the host's own error",
            "A destroy that rejects before its deadline is warned about with the provider's own error, not a timeout.",
            {"mode": "reject", "message": "engine down", "latencyMs": 20},
            {
                "result": "destroy-failed",
                "calls": [call("store", "get", [KEY], 0), call("provider", "destroy", [{"id": "ctr-1"}], 0), call("store", "delete", [KEY], 20)],
                "logs": [warn_destroy({"$hostError": "destroy"})],
                "instancesAfter": [],
                "elapsedMs": 20,
            },
        ),
        case(
            "deadline: the ledger keeps the timeout",
            "With a ledger, the timed-out sandbox is recorded with the timeout's message.",
            {"mode": "hang"},
            {
                "result": "destroy-failed",
                "calls": [
                    call("store", "get", [KEY], 0),
                    call("provider", "destroy", [{"id": "ctr-1"}], 0),
                    call("store", "deleteRecordingLeak", [KEY, {"key": KEY, "provider": "docker", "providerSandboxId": "ctr-1", "runId": "run-1", "errorMessage": timeout_message("ctr-1", 100)}], 100),
                ],
                "logs": [warn_destroy(timed_out)],
                "instancesAfter": [],
                "leaksAfter": [{"key": KEY, "provider": "docker", "providerSandboxId": "ctr-1", "runId": "run-1", "lastError": timeout_message("ctr-1", 100), "attempts": 1}],
                "aborted": ["ctr-1"],
                "elapsedMs": 100,
            },
            ledger=True,
        ),
        case(
            "deadline: the reclaimer rejects on a timeout",
            "sandboxReclaimer with a deadline: warn, errors line, SandboxReclaimFailedError.",
            {"mode": "hang"},
            {
                "error": {
                    "kind": "SandboxReclaimFailedError",
                    "message": 'Reclaiming the sandbox for run "run-1" failed: the provider\'s destroy rejected and the instance record for "thread-1:sandbox" was deleted anyway, so the sandbox may still be running and is no longer reachable from the instance store.',
                    "runId": "run-1",
                    "sandboxKey": KEY,
                },
                "calls": [call("store", "get", [KEY], 0), call("provider", "destroy", [{"id": "ctr-1"}], 0), call("store", "delete", [KEY], 250)],
                "logs": [warn_destroy(timeout_error("ctr-1", 250)), {"level": "errors", "message": ERRORS_LINE, "meta": {"runId": "run-1", "sandboxKey": KEY}}],
                "instancesAfter": [],
                "aborted": ["ctr-1"],
                "elapsedMs": 250,
            },
            api="sandboxReclaimer",
            timeout=250,
        ),
        case(
            "deadline: a slow get does not start the clock",
            "The deadline covers the destroy only: a get taking 500 ms is waited for.",
            {"mode": "resolve", "latencyMs": 80},
            {
                "result": "destroyed",
                "calls": [call("store", "get", [KEY], 0), call("provider", "destroy", [{"id": "ctr-1"}], 500), call("store", "delete", [KEY], 580)],
                "logs": [],
                "instancesAfter": [],
                "elapsedMs": 580,
            },
            store={"get": {"mode": "resolve", "latencyMs": 500}},
        ),
    ]


def leak(sandbox_id: str, provider: str = "docker", **extra: Any) -> dict[str, Any]:
    entry = {"key": f"key-{sandbox_id}", "provider": provider, "providerSandboxId": sandbox_id, "runId": f"run-{sandbox_id}", "lastError": "engine down", "failedAt": 1699999990000, "attempts": 1}
    entry.update(extra)
    return entry


def public(entry: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in entry.items() if key not in ("failedAt", "claimedUntil")}


def retry_cases() -> list[dict[str, Any]]:
    def case(name: str, description: str, leaks: list[dict[str, Any]], expect: dict[str, Any], *, options: dict[str, Any] | None = None, destroy: dict[str, Any] | None = None, store: dict[str, Any] | None = None) -> dict[str, Any]:
        return {
            "name": name,
            "description": description,
            "api": "retryLeaks",
            "options": {"limit": 100, "leaseMs": 300000, **(options or {})},
            "provider": {"name": "docker", "destroy": destroy or {}},
            "store": {"ledger": True, "instances": [], "leaks": leaks, **(store or {})},
            "logger": False,
            "expect": {"logs": [], "instancesAfter": [], **expect},
        }

    a, b, c, other = leak("a"), leak("b"), leak("c"), leak("x", provider="daytona")
    claim = lambda at=0, limit=100, lease=300000: call("store", "claimLeaks", ["docker", limit, lease], at)  # noqa: E731
    destroy = lambda sandbox_id, at=0: call("provider", "destroy", [{"id": sandbox_id}], at)  # noqa: E731
    resolve = lambda sandbox_id, at=0: call("store", "resolveLeak", [sandbox_id], at)  # noqa: E731
    return [
        case(
            "retry: every claimed leak is destroyed and resolved",
            "Oldest first, one at a time; another provider's entries are not claimed.",
            [a, other, b],
            {
                "result": {"retried": 2, "destroyed": 2, "stillFailing": 0, "leaseLost": 0},
                "calls": [claim(), destroy("a"), resolve("a"), destroy("b"), resolve("b")],
                "leaksAfter": [public(other)],
            },
        ),
        case(
            "retry: a failed destroy keeps the leak with the new error",
            "attempts + 1, the newest error kept, the claim released.",
            [a],
            {
                "result": {"retried": 1, "destroyed": 0, "stillFailing": 1, "leaseLost": 0},
                "calls": [claim(), destroy("a"), call("store", "recordRetryFailure", ["a", "still down", 0], 0)],
                "leaksAfter": [public(leak("a", lastError="still down", attempts=2))],
            },
            destroy={"a": {"mode": "reject", "message": "still down"}},
        ),
        case(
            "retry: limit",
            "At most `limit` entries are claimed.",
            [a, b],
            {
                "result": {"retried": 1, "destroyed": 1, "stillFailing": 0, "leaseLost": 0},
                "calls": [claim(limit=1), destroy("a"), resolve("a")],
                "leaksAfter": [public(b)],
            },
            options={"limit": 1},
        ),
        case(
            "retry: an entry another retrier holds is skipped",
            "An unexpired claim (claimedUntil, relative to the clock's start) keeps the entry from this retrier.",
            [leak("a", claimedUntil=1000), b],
            {
                "result": {"retried": 1, "destroyed": 1, "stillFailing": 0, "leaseLost": 0},
                "calls": [claim(), destroy("b"), resolve("b")],
                "leaksAfter": [public(a)],
            },
        ),
        case(
            "retry: no destroy starts after the lease ends",
            "Lease 50 ms, its last tenth kept for store writes, destroys of 30 ms: a is done at 30; b starts at 30 and is cut at 45, its entry left untouched; c never starts.",
            [a, b, c],
            {
                "result": {"retried": 2, "destroyed": 1, "stillFailing": 1, "leaseLost": 0},
                "calls": [claim(lease=50), destroy("a"), resolve("a", 30), destroy("b", 30)],
                "leaksAfter": [public(b), public(c)],
                "aborted": ["b"],
                "elapsedMs": 45,
            },
            options={"leaseMs": 50},
            destroy={"a": {"mode": "resolve", "latencyMs": 30}, "b": {"mode": "resolve", "latencyMs": 30}, "c": {"mode": "resolve", "latencyMs": 30}},
        ),
        case(
            "retry: a claim answered after its lease destroys nothing",
            "The lease is measured from when the claim was asked: a claim that took 60 ms of a 50 ms lease has lapsed.",
            [a],
            {
                "result": {"retried": 0, "destroyed": 0, "stillFailing": 0, "leaseLost": 0},
                "calls": [claim(lease=50)],
                "leaksAfter": [public(a)],
                "elapsedMs": 60,
            },
            options={"leaseMs": 50},
            store={"claimLeaks": {"mode": "resolve", "latencyMs": 60}},
        ),
        case(
            "retry: a hanging destroy is cut by its deadline and recorded",
            "destroyTimeoutMs 100 within a 300 s lease: cancelled at 100, recorded with the timeout's message.",
            [a],
            {
                "result": {"retried": 1, "destroyed": 0, "stillFailing": 1, "leaseLost": 0},
                "calls": [claim(), destroy("a"), call("store", "recordRetryFailure", ["a", timeout_message("a", 100), 100], 100)],
                "leaksAfter": [public(leak("a", lastError=timeout_message("a", 100), attempts=2))],
                "aborted": ["a"],
                "elapsedMs": 100,
            },
            options={"destroyTimeoutMs": 100},
            destroy={"a": {"mode": "hang"}},
        ),
        case(
            "retry: a failing claim rejects with the store's error",
            "Ledger calls propagate their errors, as store calls always do.",
            [a],
            {
                "error": {"kind": "hostError", "source": "claimLeaks"},
                "calls": [claim()],
                "leaksAfter": [public(a)],
            },
            store={"claimLeaks": {"mode": "reject", "message": "database down"}},
        ),
        case(
            "retry: a failing resolve rejects after the destroy",
            "The sandbox was destroyed but its entry could not be removed: the store's error propagates.",
            [a, b],
            {
                "error": {"kind": "hostError", "source": "resolveLeak"},
                "calls": [claim(), destroy("a"), resolve("a")],
                "leaksAfter": [public(a), public(b)],
            },
            store={"resolveLeak": {"mode": "reject", "message": "database down"}},
        ),
        case(
            "retry: nothing to claim",
            "An empty ledger: one claim, nothing else.",
            [],
            {"result": {"retried": 0, "destroyed": 0, "stillFailing": 0, "leaseLost": 0}, "calls": [claim()], "leaksAfter": []},
        ),
    ]


# Byte lengths around the boundaries where a fixed buffer or a length
# prefix could cut a key, and the multi-byte last characters that straddle them.
BOUNDARIES = (64, 128, 256, 1024)
LAST_CHARACTERS = ("€", "🦀")


def key_identity_cases() -> list[dict[str, Any]]:
    cases = []
    lengths = sorted({1, 2, 3, 4, 5, 1100} | {b + d for b in BOUNDARIES for d in range(-4, 5)})
    for last in LAST_CHARACTERS:
        width = len(last.encode())
        for total in lengths:
            if total < width:
                continue
            key = "k" * (total - width) + last
            prefix = key[:-1]
            ours = {"key": key, "provider": "docker", "providerSandboxId": f"ctr-full-{total}", "threadId": "t", "updatedAt": 1}
            stranger = {"key": prefix, "provider": "docker", "providerSandboxId": f"ctr-prefix-{total}", "threadId": "t", "updatedAt": 1}
            near = [stranger] if prefix else []
            label = f"{total} bytes ending in {last}"
            cases.append({
                "name": f"key identity: {label}, its own record",
                "description": "The reclaim destroys and deletes exactly its own key's record; the record under its prefix survives.",
                "api": "reclaimSandbox",
                "nativeStores": True,
                "record": {"runId": "run-1", "threadId": "t", "status": "completed", "startedAt": 1, "sandboxKey": key},
                "provider": {"name": "docker"},
                "store": {"ledger": False, "instances": sorted([ours, *near], key=lambda r: r["key"])},
                "logger": False,
                "expect": {
                    "result": "destroyed",
                    "calls": [{"on": "store", "method": "get", "args": [key]}, {"on": "provider", "method": "destroy", "args": [{"id": ours["providerSandboxId"]}]}, {"on": "store", "method": "delete", "args": [key]}],
                    "logs": [],
                    "instancesAfter": near,
                },
            })
            if prefix:
                cases.append({
                    "name": f"key identity: {label}, only its prefix stored",
                    "description": "A key with no record is not-found even when its prefix has one: nothing destroyed, nothing deleted.",
                    "api": "reclaimSandbox",
                    "nativeStores": True,
                    "record": {"runId": "run-1", "threadId": "t", "status": "completed", "startedAt": 1, "sandboxKey": key},
                    "provider": {"name": "docker"},
                    "store": {"ledger": False, "instances": near},
                    "logger": False,
                    "expect": {"result": "not-found", "calls": [{"on": "store", "method": "get", "args": [key]}], "logs": [], "instancesAfter": near},
                })
    return cases


def thrown_twins(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each case with a host call that rejects, again with that call throwing
    synchronously instead: a host call that throws fails only its own run,
    exactly as one that rejects (same outcome, same calls)."""
    def swap(value: Any) -> tuple[Any, bool]:
        if isinstance(value, dict):
            if value.get("mode") == "reject":
                return {**value, "mode": "throw"}, True
            swapped = [(key, swap(inner)) for key, inner in value.items()]
            return {key: inner for key, (inner, _) in swapped}, any(found for _, (_, found) in swapped)
        if isinstance(value, list):
            swapped_items = [swap(inner) for inner in value]
            return [inner for inner, _ in swapped_items], any(found for _, found in swapped_items)
        return value, False

    twins = []
    for case in cases:
        scripted = {key: case[key] for key in ("provider", "providers", "store") if key in case}
        swapped, found = swap(scripted)
        # A throw happens at once: a rejection scripted with a latency keeps its timing only as a rejection.
        if found and "latencyMs" not in json.dumps(scripted):
            twins.append({**case, **swapped, "name": case["name"] + " (thrown synchronously)"})
    return cases + twins


def write(name: str, comment: str, cases: list[dict[str, Any]]) -> None:
    document = {"$comment": comment + " Generated by generate.py; format: README.md.", "cases": cases}
    (HERE / name).write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write("deadlines.json", "Destroy deadlines on a virtual clock.", deadline_cases())
    write("retry.json", "retryLeaks on a virtual clock: claims, leases, deadlines.", thrown_twins(retry_cases()))
    write("key-identity.json", "Keys whose last character is multi-byte, at byte boundaries, next to their prefixes; also run against every native store.", key_identity_cases())
