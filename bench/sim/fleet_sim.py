"""The fleet simulation of issue #38: many reconcile processes, of the three
languages, on one PostgreSQL store of a million records, sweeping four
vendors' fakes of 25,000 sandboxes each at 20 ms a request.

By hand (`make fleet-sim`, `scripts/fleet-sim.sh`: it builds, starts and stops
PostgreSQL); never part of `make test` or CI. What it does:

1. Seeds the store (SQL shaped as the package writes it: records through the
   instances table, whose trigger registers them): `SIM_RECORDS` records
   (default 1,000,000), a quarter per vendor.
2. Starts the E2B, Daytona, Runloop and Blaxel fakes (`tests/fakes/`), each
   with `SIM_LISTED / 4` labelled sandboxes created long ago, every 10th
   named by no record (an orphan), the rest by one; 20 ms per request.
3. Starts `SIM_PROCS` reconcile processes at once (default 8: the command,
   Node and Python in turn; `SIM_KINDS` changes the turn), each one pass over the four vendors (the
   vendors' own variables point at the fakes), 64 destroys per vendor at once.
   Leases decide who sweeps which vendor.
4. Checks, from each fake's request log and state, that every orphan was
   destroyed exactly once and nothing a record names was touched, and prints
   the fleet's wall time against the ideal (per vendor, its listing requests
   in sequence plus its orphans' destroys 64 at a time, 20 ms each; the
   vendors run side by side, so the slowest vendor's).

Exit 1 when an orphan is left or destroyed twice, or a named sandbox was
destroyed.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any, Callable

import sandbox_reclaim as sr

ROOT = Path(__file__).resolve().parents[2]
RECORDS = int(os.environ.get("SIM_RECORDS", "1000000"))
LISTED = int(os.environ.get("SIM_LISTED", "100000"))
PROCS = int(os.environ.get("SIM_PROCS", "8"))
KINDS = os.environ.get("SIM_KINDS", "command,node,python").split(",")
LATENCY_MS = 20
CONCURRENCY = 64
# Orphans a pass destroys per vendor at most: all of them (the default, 1,000, leaves the rest to the next pass).
LIMIT = LISTED
OWNER_LABEL, OWNER = "io.sandbox-reclaim.owner", "sandbox-reclaim"
LONG_AGO, LONG_AGO_MS = "2026-01-01T00:00:00Z", 1_767_225_600_000


def orphan(index: int) -> bool:
    return index % 10 == 9


class Vendor:
    def __init__(
        self,
        name: str,
        flags: list[str],
        sandbox_id: Callable[[int], str],
        item: Callable[[str], dict[str, Any]],
        env: Callable[[str], dict[str, str]],
        destroy: Callable[[dict[str, Any]], str | None],
    ) -> None:
        self.name, self.flags, self.sandbox_id, self.item, self.env, self.destroy = (
            name,
            flags,
            sandbox_id,
            item,
            env,
            destroy,
        )
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""


def last_segment(request: dict[str, Any], method: str, suffix: str = "") -> str | None:
    path = str(request["path"])
    if request["method"] != method or not path.endswith(suffix):
        return None
    return path[: len(path) - len(suffix)].rstrip("/").rsplit("/", 1)[-1]


VENDORS = [
    Vendor(
        "e2b",
        ["--key", "e2b_bench"],
        lambda i: f"sbx{i:05d}",
        lambda sid: {"sandboxID": sid, "startedAt": LONG_AGO, "metadata": {OWNER_LABEL: OWNER}},
        lambda url: {"E2B_API_KEY": "e2b_bench", "E2B_API_URL": url},
        lambda r: last_segment(r, "DELETE"),
    ),
    Vendor(
        "daytona",
        ["--key", "daytona_bench"],
        lambda i: f"sbx{i:05d}",
        lambda sid: {
            "id": sid,
            "labels": {OWNER_LABEL: OWNER},
            "state": "started",
            "createdAt": "2026-01-01T00:00:00.000Z",
        },
        lambda url: {"DAYTONA_API_KEY": "daytona_bench", "DAYTONA_API_URL": url},
        lambda r: last_segment(r, "DELETE"),
    ),
    Vendor(
        "runloop",
        ["--key", "runloop_bench"],
        lambda i: f"dbx_{i:05d}",
        lambda sid: {"id": sid, "metadata": {OWNER_LABEL: OWNER}, "status": "running", "createTimeMs": LONG_AGO_MS},
        lambda url: {"RUNLOOP_API_KEY": "runloop_bench", "RUNLOOP_BASE_URL": url},
        lambda r: last_segment(r, "POST", "/shutdown"),
    ),
    Vendor(
        "blaxel",
        ["--key", "bl_bench", "--workspace", "ws-bench"],
        lambda i: f"sbx{i:05d}",
        lambda sid: {"name": sid, "labels": {OWNER_LABEL: OWNER}, "status": "DEPLOYED", "createdAt": LONG_AGO},
        lambda url: {"BL_API_KEY": "bl_bench", "BL_WORKSPACE": "ws-bench", "BL_API_URL": f"{url}/v0"},
        lambda r: last_segment(r, "DELETE"),
    ),
]


def post(url: str, body: Any) -> Any:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.loads(answer.read() or b"null")


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=120) as answer:
        return json.loads(answer.read())


def psql(url: str, sql: str) -> None:
    subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", url, "-c", sql], check=True, stdout=subprocess.DEVNULL)


def transactions(url: str) -> int:
    """The database's committed and rolled-back transactions so far."""
    sql = "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()"
    out = subprocess.run(["psql", "-At", url, "-c", sql], check=True, capture_output=True, text=True).stdout
    return int(out.strip())


def seed_store(url: str) -> float:
    asyncio.run(_create_store(url))
    started = time.monotonic()
    psql(url, "TRUNCATE sandbox_instances, sandbox_registry, sandbox_leaks, sandbox_audit, sandbox_sweeps")
    per_vendor = RECORDS // len(VENDORS)
    now = int(time.time() * 1000)
    for vendor in VENDORS:
        # Every index but the listed orphans (every 10th below LISTED / 4).
        prefix = "dbx_" if vendor.name == "runloop" else "sbx"
        # As the fakes name them (`sbx00042`), longer numbers whole: `lpad` would cut them to 5 characters.
        padded = "CASE WHEN i < 100000 THEN lpad(i::text, 5, '0') ELSE i::text END"
        psql(
            url,
            f"INSERT INTO sandbox_instances (key_hash, sandbox_key, provider, provider_sandbox_id, latest_snapshot_id, "
            f"thread_id, latest_run_id, updated_at) SELECT sha256(convert_to('{vendor.name}-' || i || ':sandbox', "
            f"'UTF8')), '{vendor.name}-' || i || ':sandbox', '{vendor.name}', '{prefix}' || {padded}, NULL, "
            f"'thread-' || i, 'run-' || i, {now} - 3600000 FROM generate_series(0, {per_vendor} - 1) i "
            f"WHERE NOT (i < {LISTED // len(VENDORS)} AND i % 10 = 9)",
        )
    psql(url, "ANALYZE; CHECKPOINT")
    return time.monotonic() - started


async def _create_store(url: str) -> None:
    store = await sr.PostgresSandboxInstanceStore.connect(url)
    await store.close()


def start_fakes() -> None:
    per_vendor = LISTED // len(VENDORS)
    for vendor in VENDORS:
        script = ROOT / "tests" / "fakes" / f"{vendor.name}.mjs"
        vendor.proc = subprocess.Popen(["node", str(script), *vendor.flags], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert vendor.proc.stdout is not None
        vendor.url = json.loads(vendor.proc.stdout.readline())["url"]
        post(f"{vendor.url}/_fake/sandboxes", [vendor.item(vendor.sandbox_id(i)) for i in range(per_vendor)])
        post(f"{vendor.url}/_fake/faults", {"latencyMs": LATENCY_MS})


def reconcilers(url: str) -> list[tuple[str, list[str]]]:
    env_note: list[tuple[str, list[str]]] = []
    cli = str(ROOT / "target" / "release" / "sandbox-reclaim")
    python = sys.executable
    for n in range(PROCS):
        host = f"sim-{n}"
        kind = KINDS[n % len(KINDS)]
        if kind == "command":
            argv = [cli, "--store", url, "--e2b", "--daytona", "--runloop", "--blaxel", "--host", host, "--json"]
            argv += ["reconcile", "--concurrency", str(CONCURRENCY * len(VENDORS))]
            argv += ["--per-provider-concurrency", str(CONCURRENCY), "--limit", str(LIMIT)]
        elif kind == "node":
            argv = ["node", str(ROOT / "bench" / "sim" / "reconcile.mjs"), url, host]
            argv += [str(CONCURRENCY * len(VENDORS)), str(CONCURRENCY), str(LIMIT)]
        else:
            argv = [python, str(ROOT / "bench" / "sim" / "reconcile.py"), url, host]
            argv += [str(CONCURRENCY * len(VENDORS)), str(CONCURRENCY), str(LIMIT)]
        env_note.append((kind, argv))
    return env_note


def pass_of(kind: str, output: str) -> tuple[int, int, list[dict[str, Any]]]:
    """A process's pass: when it started and ended (epoch ms) and its sweeps."""
    if kind != "command":
        line = json.loads(output.strip().splitlines()[-1])
        return int(line["startedAt"]), int(line["endedAt"]), list(line["sweeps"])
    document = json.loads(output.strip().splitlines()[-1])
    # The command's JSON envelope holds the report (`{"version", "command", ...}`).
    report = document if "providers" in document else next(v for v in document.values() if isinstance(v, dict) and "providers" in v)
    sweeps = [
        {"name": p["name"], **{k: p["orphans"].get(k) for k in ("status", "error", "listed", "found", "destroyed")}}
        for p in report["providers"]
    ]
    return int(report["startedAt"]), int(report["startedAt"]) + int(report["elapsedMs"]), sweeps


def main() -> int:
    url = os.environ["SANDBOX_RECLAIM_PG_URL"]
    print(f"fleet-sim: {RECORDS} records, {LISTED} listed across {len(VENDORS)} vendors, {PROCS} processes", flush=True)
    seeded = seed_store(url)
    print(f"  store seeded in {seeded:.1f} s", flush=True)
    start_fakes()
    env = dict(os.environ)
    for vendor in VENDORS:
        env.update(vendor.env(vendor.url))
    plan = reconcilers(url)
    time.sleep(1)  # the statistics of the seeding flushed
    before = transactions(url)
    started = time.monotonic()
    procs = [
        (kind, subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for kind, argv in plan
    ]
    outputs = [(kind, *proc.communicate()) for kind, proc in procs]
    wall = time.monotonic() - started
    time.sleep(1)  # the passes' statistics flushed (every second at most)
    store_transactions = transactions(url) - before - 1
    failed = False
    swept: Counter[str] = Counter()
    first_start, last_end = float("inf"), 0.0
    for (kind, out, err), (_, proc) in zip(outputs, procs):
        if proc.returncode not in (0,):
            print(f"  a {kind} process failed ({proc.returncode}): {err.strip()[-400:]}", flush=True)
            failed = True
            continue
        began, ended, sweeps = pass_of(kind, out)
        first_start, last_end = min(first_start, began), max(last_end, ended)
        for sweep in sweeps:
            if sweep["status"] == "swept":
                swept[sweep["name"]] += 1
            print(f"    {kind:<8} {sweep['name']:<8} {sweep['status']:<10} listed {sweep['listed']:>6} "
                  f"found {sweep['found']:>5} destroyed {sweep['destroyed']:>5}", flush=True)
    ideal = 0.0
    per_vendor = LISTED // len(VENDORS)
    for vendor in VENDORS:
        state = get(f"{vendor.url}/_fake/state")
        alive = set(state["alive"])
        destroys = Counter(filter(None, (vendor.destroy(r) for r in state["requests"])))
        listing = sum(1 for r in state["requests"] if r["method"] == "GET" and vendor.destroy(r) is None)
        orphans = {vendor.sandbox_id(i) for i in range(per_vendor) if orphan(i)}
        named = {vendor.sandbox_id(i) for i in range(per_vendor) if not orphan(i)}
        left = orphans & alive
        twice = {sid for sid in orphans if destroys[sid] > 1}
        touched = {sid for sid in named if destroys[sid] > 0}
        vendor_ideal = (listing + -(-len(orphans) // CONCURRENCY)) * LATENCY_MS / 1000
        ideal = max(ideal, vendor_ideal)
        print(f"  {vendor.name:<8} swept by {swept[vendor.name]} process(es); {len(orphans)} orphans: "
              f"{len(orphans) - len(left)} destroyed, {len(twice)} twice, {len(left)} left; named destroyed: "
              f"{len(touched)}; {listing} GETs; ideal {vendor_ideal:.2f} s", flush=True)
        failed = failed or bool(left or twice or touched) or swept[vendor.name] != 1
    sweep_wall = (last_end - first_start) / 1000
    print(f"  processes: {wall:.2f} s from the first start to the last exit (their start-up included)", flush=True)
    print(f"  store: {store_transactions} transactions, {store_transactions / sweep_wall:.0f} a second over the sweep",
          flush=True)
    print(f"fleet-sim: wall {sweep_wall:.2f} s (first pass start to last pass end), ideal {ideal:.2f} s, "
          f"{sweep_wall / ideal:.2f}× (target ≤ 1.2×)", flush=True)
    for vendor in VENDORS:
        if vendor.proc is not None:
            vendor.proc.kill()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
