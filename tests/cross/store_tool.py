"""A small CLI over the Python binding's durable stores, the twin of
tests/node/store-tool.mjs (same arguments, same JSON output), for the
cross-language tests.

    python tests/cross/store_tool.py <sqlite|postgres> <path-or-url> <schema|-> <command> [args...]

Commands print one JSON document on stdout (exit 0); on failure
``{"ok": false, "error": "..."}`` and exit 1:

    dump [json-keys]   {"instances": [records of those keys, sorted, missing left out], "leaks": [every leak]}
    write <json>       {"instances": [...], "leaks": [{"key", "leak"}...]}: upserts every instance,
                       then delete_recording_leak(key, leak) per leak; prints {"ok": true, "instances": n, "leaks": m}
    ops <seed> <count> <prefix>
                       seeded upsert/get/delete on keys <prefix>0..<prefix>7 (the Node tool's PRNG and
                       mix), every read checked against this process's writes, then every key read again;
                       prints {"ok": true, "finalKeys": [...]}
    retry <provider> <lease-ms> <limit> <destroy-ms> <log>
                       retry_leaks until the provider has no pending leak, with a provider whose destroy
                       takes <destroy-ms> (cancellable); each completed destroy appends "<id> <pid>" to
                       <log>; prints {"ok": true, "rounds": n, "destroyed": m}
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import sandbox_reclaim as sr

USAGE = (
    "usage: store_tool.py <sqlite|postgres> <path-or-url> <schema|-> "
    "<dump [keys-json]|write <json>|ops <seed> <count> <prefix>>"
)

Store = sr.SqliteSandboxInstanceStore | sr.PostgresSandboxInstanceStore


async def open_store(kind: str, location: str, schema: str) -> Store:
    if kind == "sqlite":
        return await sr.SqliteSandboxInstanceStore.open(location)
    if kind == "postgres":
        if schema == "-":
            return await sr.PostgresSandboxInstanceStore.connect(location)
        return await sr.PostgresSandboxInstanceStore.connect(location, schema=schema)
    raise ValueError(f"unknown store kind {kind!r} (sqlite or postgres)")


def mulberry32(seed: int) -> Callable[[], float]:
    """The Node tool's seeded PRNG, bit for bit (uint32 arithmetic)."""
    state = seed & 0xFFFFFFFF

    def imul(left: int, right: int) -> int:
        return (left * right) & 0xFFFFFFFF

    def next_value() -> float:
        nonlocal state
        state = (state + 0x6D2B79F5) & 0xFFFFFFFF
        value = imul(state ^ (state >> 15), state | 1)
        value ^= (value + imul(value ^ (value >> 7), value | 61)) & 0xFFFFFFFF
        return ((value ^ (value >> 14)) & 0xFFFFFFFF) / 4294967296

    return next_value


async def dump(store: Store, keys_json: str | None) -> dict[str, Any]:
    keys = [] if keys_json is None else json.loads(keys_json)
    if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
        raise TypeError("dump: keys must be a JSON array of strings")
    instances = []
    for key in sorted(set(keys)):
        record = await store.get(key)
        if record is not None:
            instances.append(record.to_dict())
    return {"instances": instances, "leaks": [entry.to_dict() for entry in await store.list_leaks()]}


async def write(store: Store, payload: str | None) -> dict[str, Any]:
    if payload is None:
        raise TypeError("write: a JSON argument is required")
    data = json.loads(payload)
    instances = data.get("instances", [])
    leaks = data.get("leaks", [])
    for record in instances:
        await store.upsert(sr.SandboxInstanceRecord.from_dict(record))
    for item in leaks:
        await store.delete_recording_leak(item["key"], sr.NewLeak.from_dict(item["leak"]))
    return {"ok": True, "instances": len(instances), "leaks": len(leaks)}


async def ops(store: Store, seed_text: str, count_text: str, prefix: str) -> dict[str, Any]:
    seed, count = int(seed_text), int(count_text)
    if count < 0 or not prefix:
        raise ValueError("ops: <count> must be non-negative and <prefix> non-empty")
    next_value = mulberry32(seed)
    model: dict[str, sr.SandboxInstanceRecord] = {}
    keys = [f"{prefix}{index}" for index in range(8)]

    async def check(key: str) -> None:
        actual = await store.get(key)
        expected = model.get(key)
        if actual != expected:
            raise AssertionError(f"read of {key} gave {actual!r}, expected {expected!r}")

    for index in range(count):
        key = keys[int(next_value() * len(keys))]
        roll = next_value()
        if roll < 0.45:
            run_id = f"run-{index}" if next_value() < 0.5 else None
            record = sr.SandboxInstanceRecord(key, "docker", f"ctr-{seed}-{index}", f"thread-{prefix}", index, None, run_id)
            await store.upsert(record)
            model[key] = record
        elif roll < 0.75:
            await check(key)
        else:
            await store.delete(key)
            model.pop(key, None)
    for key in keys:
        await check(key)
    return {"ok": True, "finalKeys": sorted(model)}


class SlowProvider:
    """A provider whose destroy takes a while, stops when cancelled, and logs completions."""

    def __init__(self, name: str, destroy_ms: int, log: str) -> None:
        self.name = name
        self.destroy_ms = destroy_ms
        self.log = log
        self.destroyed = 0

    async def destroy(self, sandbox_id: str) -> None:
        await asyncio.sleep(self.destroy_ms / 1000)
        # One small O_APPEND write: lines of concurrent processes never mix.
        with open(self.log, "a", encoding="utf-8") as log:
            log.write(f"{sandbox_id} {os.getpid()}\n")
        self.destroyed += 1


async def retry(store: Store, name: str, lease_ms: str, limit: str, destroy_ms: str, log: str) -> dict[str, Any]:
    provider = SlowProvider(name, int(destroy_ms), log)
    rounds = 0
    while await store.count_leaks(name) > 0:
        rounds += 1
        await sr.retry_leaks(provider=provider, instances=store, lease=int(lease_ms) / 1000, limit=int(limit))
        # Leaks held by another retrier: wait a moment before claiming again.
        await asyncio.sleep(0.02)
    return {"ok": True, "rounds": rounds, "destroyed": provider.destroyed}


async def main(argv: list[str]) -> int:
    if len(argv) < 4:
        print(json.dumps({"ok": False, "error": USAGE}))
        return 1
    kind, location, schema, command, *args = argv
    store: Store | None = None
    try:
        store = await open_store(kind, location, schema)
        if command == "dump":
            result = await dump(store, args[0] if args else None)
        elif command == "write":
            result = await write(store, args[0] if args else None)
        elif command == "ops":
            if len(args) != 3:
                raise ValueError("ops takes <seed> <count> <prefix>")
            result = await ops(store, *args)
        elif command == "retry":
            if len(args) != 5:
                raise ValueError("retry takes <provider> <lease-ms> <limit> <destroy-ms> <log>")
            result = await retry(store, *args)
        else:
            raise ValueError(f"unknown command {command!r}; {USAGE}")
    except Exception as error:  # noqa: BLE001 - every failure is reported as JSON
        if store is not None:
            await store.close()
        print(json.dumps({"ok": False, "error": f"{type(error).__name__}: {error}"}))
        return 1
    await store.close()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
