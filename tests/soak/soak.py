"""`make soak` (issue #26): many processes of every language on one store,
paused and killed at random, against one fake cloud that logs every destroy;
then the verdict. See tests/soak/README.md.

    python tests/soak/soak.py --work DIR --bin PATH [--pg-url URL]

Environment: SOAK_SECONDS (whole run, default 600; split between the
phases), SOAK_PAUSES=0 (no SIGSTOP/SIGCONT), SOAK_KILLS=0 (no SIGKILL),
SOAK_SEED (default: random, printed), SOAK_LIST_LAG_MS (a destroyed sandbox
stays listed this long, default 0). Its last line is

    soak: live_destroyed=N orphans_left=N repeat_destroys=N pauses=N kills=N

and it exits 1 when live_destroyed or orphans_left is not 0, when a sandbox
not ours was destroyed, or when repeat_destroys is not 0 in a run without
pauses.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import math
import os
import random
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sandbox_reclaim as sr

ROOT = Path(__file__).resolve().parents[2]
SOAK = ROOT / "tests" / "soak"
NODE_WORKER = SOAK / "worker.mjs"
PY_WORKER = SOAK / "worker.py"
CLOUD = SOAK / "cloud.mjs"
# The largest time the stores hold (2^53 - 1 ms): list_stale below it lists every record.
ALL_RECORDS = 9_007_199_254_740_991
TICK = 0.25  # seconds between chaos decisions
LEASE_S = 5  # Node and Python reconcilers' lease; the command's is its fixed 300 s
COMMAND_LEASE_S = 300
FAIL_DELETE_EVERY = 7  # the cloud answers 500 to every 7th DELETE during the chaos


def now_ms() -> int:
    return int(time.time() * 1000)


def log(message: str) -> None:
    print(message, flush=True)


def faketime_library() -> str:
    """libfaketime's multithreaded build (Node, tokio and Python all run threads)."""
    for pattern in ("/usr/lib/*/faketime/libfaketimeMT.so.1", "/usr/lib/faketime/libfaketimeMT.so.1"):
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    raise SystemExit("soak: libfaketime not found (apt-get install faketime; scripts/soak.sh does)")


def http_json(url: str, body: Any | None = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read() or b"null")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    lines = []
    for raw in path.read_text().splitlines():
        try:
            lines.append(json.loads(raw))
        except json.JSONDecodeError:
            pass  # a line cut short by SIGKILL
    return lines


@dataclass
class Proc:
    """One soak process (a restart after a kill is a new Proc of the same slot)."""

    slot: str  # e.g. node-rec-1
    kind: str  # bin | node | python
    role: str  # writer | reconciler
    offset_s: int
    gen: int
    out: Path
    handle: subprocess.Popen[bytes] | None = None
    paused_at: float | None = None
    resume_at: float = 0.0
    ever_paused: bool = False
    clock_checked: bool = False
    reported: bool = False  # an unexpected exit was printed

    @property
    def popen(self) -> subprocess.Popen[bytes]:
        assert self.handle is not None
        return self.handle

    @property
    def name(self) -> str:
        return f"{self.slot}.g{self.gen}"

    @property
    def api_key(self) -> str:
        return f"soak-{self.role}-{self.name}"


@dataclass
class Chaos:
    pauses: int = 0
    kills: int = 0
    writer_kills: int = 0
    # (start ms, end ms, api key) of every pause; (at ms, api key) of every kill
    paused: list[tuple[int, int, str]] = field(default_factory=list)
    killed: list[tuple[int, str]] = field(default_factory=list)
    last_command_kill: float = 0.0


@dataclass
class Verdict:
    live_destroyed: int = 0
    orphans_left: int = 0
    repeat_destroys: int = 0
    pauses: int = 0
    kills: int = 0
    foreign_destroyed: int = 0

    def add(self, other: Verdict) -> None:
        for name in vars(self):
            setattr(self, name, getattr(self, name) + getattr(other, name))


class Phase:
    def __init__(
        self,
        args: argparse.Namespace,
        *,
        label: str,
        store: str,
        schema: str | None,
        max_offset_s: int,
        grace_s: int,
        seconds: int,
        rand: random.Random,
    ) -> None:
        self.args = args
        self.label = label
        self.store = store
        self.schema = schema
        self.max_offset_s = max_offset_s
        self.grace_s = grace_s
        self.seconds = seconds
        self.rand = rand
        self.dir = Path(args.work) / label
        self.dir.mkdir(parents=True, exist_ok=True)
        self.destroy_log = self.dir / "destroys.jsonl"
        self.chaos_log = os.open(self.dir / "chaos.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.procs: list[Proc] = []
        self.chaos = Chaos()
        self.clocks: list[tuple[str, int, float]] = []  # (name, intended s, measured s)
        self.cloud_url = ""
        self.cloud: subprocess.Popen[bytes] | None = None
        self.faketime = faketime_library() if max_offset_s else ""

    # ------------------------------------------------------------ processes

    def start_cloud(self) -> None:
        argv = ["node", str(CLOUD), "--log", str(self.destroy_log), "--fail-delete-every", str(FAIL_DELETE_EVERY)]
        argv += ["--list-lag-ms", str(self.args.list_lag_ms)]
        self.cloud = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.cloud.stdout is not None
        self.cloud_url = json.loads(self.cloud.stdout.readline())["url"]
        # Sandboxes that are not ours: under another owner, and unlabelled
        # (the sweep must never touch either). Created an hour ago.
        old = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))
        foreign = [{"sandboxID": f"foreign-{i}", "startedAt": old, "metadata": sr.owner_labels("someone-else", f"f{i}")} for i in range(5)]
        bare = [{"sandboxID": f"bare-{i}", "startedAt": old, "metadata": {}} for i in range(5)]
        http_json(f"{self.cloud_url}/_fake/sandboxes", foreign + bare)

    def env(self, offset_s: int) -> dict[str, str]:
        env = dict(os.environ)
        if self.faketime:
            env["LD_PRELOAD"] = self.faketime
            env["FAKETIME"] = f"{offset_s:+d}s"
            # Timers and timeouts keep real time; only the wall clock is off.
            env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
        return env

    def spawn(self, slot: str, kind: str, role: str, offset_s: int, gen: int) -> Proc:
        out = self.dir / f"{slot}.g{gen}.out"
        probe = Proc(slot, kind, role, offset_s, gen, out)
        env = self.env(offset_s) if role == "reconciler" else dict(os.environ)
        if kind == "bin":
            argv = [self.args.bin, "--store", self.store, "--e2b", "--host", probe.name, "--json", "reconcile"]
            if self.schema:
                argv[3:3] = ["--pg-schema", self.schema]
            argv += ["--every", "2s", "--orphan-grace", f"{self.grace_s}s", "--concurrency", "4", "--destroy-timeout", "10s"]
            env["E2B_API_KEY"] = probe.api_key
            env["E2B_API_URL"] = self.cloud_url
        else:
            cfg: dict[str, Any] = {
                "role": role,
                "name": probe.name,
                "store": self.store,
                "schema": self.schema,
                "cloud": self.cloud_url,
                "seed": self.rand.randrange(1, 2**31),
            }
            if role == "writer":
                cfg |= {
                    "log": str(self.dir / f"{probe.name}.timeline.jsonl"),
                    "sessions": 3,
                    "cancelRate": 0.3,
                    "updatedAtOffsetMs": offset_s * 1000,
                }
            else:
                cfg |= {"graceMs": self.grace_s * 1000, "leaseMs": LEASE_S * 1000, "intervalMs": 1000}
            interpreter = ["node"] if kind == "node" else [sys.executable]
            argv = [*interpreter, str(NODE_WORKER if kind == "node" else PY_WORKER), json.dumps(cfg)]
        with open(out, "wb") as stdout, open(out.with_suffix(".err"), "wb") as stderr:
            probe.handle = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=env, cwd=ROOT)
        self.procs.append(probe)
        return probe

    def live(self, role: str | None = None) -> list[Proc]:
        return [p for p in self.procs if p.popen.poll() is None and (role is None or p.role == role)]

    # ------------------------------------------------------------ chaos

    def check_clocks(self) -> None:
        """Reads each reconciler's first clock (a Node/Python `clock` line, the
        command's first pass report) as it appears and compares it with ours."""
        for proc in self.live("reconciler"):
            if proc.clock_checked or proc.ever_paused:
                continue
            for line in read_jsonl(proc.out)[:3]:
                if "clock" in line:
                    stamp = int(line["clock"])
                elif "report" in line:
                    stamp = int(line["report"]["startedAt"]) + int(line["report"]["elapsedMs"])
                else:
                    continue
                proc.clock_checked = True
                self.clocks.append((proc.name, proc.offset_s, (stamp - now_ms()) / 1000))
                break

    def note(self, what: str, proc: Proc, **more: Any) -> None:
        line = {"t": now_ms(), "what": what, "proc": proc.name, "pid": proc.popen.pid, **more}
        os.write(self.chaos_log, (json.dumps(line) + "\n").encode())

    def pause_one(self) -> None:
        candidates = [p for p in self.live("reconciler") if p.paused_at is None]
        if not candidates:
            return
        proc = self.rand.choice(candidates)
        proc.popen.send_signal(signal.SIGSTOP)
        proc.paused_at = time.time()
        proc.ever_paused = True
        proc.resume_at = time.monotonic() + self.rand.uniform(0.2, 3 * LEASE_S)
        self.chaos.pauses += 1
        self.note("pause", proc, seconds=round(proc.resume_at - time.monotonic(), 2))

    def resume_due(self, everyone: bool = False) -> None:
        for proc in self.procs:
            if proc.paused_at is not None and (everyone or time.monotonic() >= proc.resume_at):
                if proc.popen.poll() is None:
                    proc.popen.send_signal(signal.SIGCONT)
                    self.note("continue", proc)
                self.chaos.paused.append((int(proc.paused_at * 1000), now_ms(), proc.api_key))
                proc.paused_at = None

    def kill_one(self, role: str) -> None:
        candidates = self.live(role)
        if not candidates:
            return
        proc = self.rand.choice(candidates)
        proc.popen.kill()
        proc.popen.wait()
        self.note("kill", proc, paused=proc.paused_at is not None)
        self.chaos.killed.append((now_ms(), proc.api_key))
        if proc.paused_at is not None:
            self.chaos.paused.append((int(proc.paused_at * 1000), now_ms(), proc.api_key))
            proc.paused_at = None
        if role == "writer":
            self.chaos.writer_kills += 1
        else:
            self.chaos.kills += 1
        if proc.kind == "bin":
            self.chaos.last_command_kill = time.monotonic()
        # A supervisor restarts it, on the same host (same clock).
        self.spawn(proc.slot, proc.kind, proc.role, proc.offset_s, proc.gen + 1)

    def progress(self, elapsed: float) -> None:
        state = http_json(f"{self.cloud_url}/_fake/state")
        destroys = read_jsonl(self.destroy_log)
        by_reconciler = sum(1 for d in destroys if d["apiKey"].startswith("soak-reconciler-") and d["status"] == 204)
        by_app = sum(1 for d in destroys if d["apiKey"].startswith("soak-writer-") and d["status"] == 204)
        log(
            f"soak[{self.label}] {elapsed:4.0f}s: alive={len(state['alive'])} destroyed={len(state['deleted'])} "
            f"(app {by_app}, reconcilers {by_reconciler}) delete_requests={len(destroys)} "
            f"pauses={self.chaos.pauses} kills={self.chaos.kills} writer_kills={self.chaos.writer_kills}"
        )

    # ------------------------------------------------------------ the run

    def run(self) -> Verdict:
        offsets = f", clocks offset up to ±{self.max_offset_s} s" if self.max_offset_s else ", one clock"
        log(f"soak[{self.label}] {self.seconds}s on {self.label}{offsets}, orphan grace {self.grace_s} s, logs in {self.dir}")
        self.start_cloud()
        try:
            return self._run()
        finally:
            for proc in self.procs:
                if proc.popen.poll() is None:
                    proc.popen.kill()
                    proc.popen.wait()
            if self.cloud is not None and self.cloud.stdin is not None:
                self.cloud.stdin.close()
                self.cloud.wait(timeout=10)

    def _offset(self, index: int) -> int:
        if not self.max_offset_s:
            return 0
        # The extremes first, so the widest spread is always there.
        if index < 2:
            return self.max_offset_s if index == 0 else -self.max_offset_s
        return self.rand.randint(-self.max_offset_s, self.max_offset_s)

    def _run(self) -> Verdict:
        index = 0
        for kind in ("bin", "node", "python"):
            for n in range(1, self.args.reconcilers + 1):
                slot = f"{kind}-rec-{n}"
                self.spawn(slot, kind, "reconciler", self._offset(index), 1)
                index += 1
        for kind in ("node", "python"):
            for n in range(1, self.args.writers + 1):
                self.spawn(f"{kind}-w-{n}", kind, "writer", self._offset(index), 1)
                index += 1
        start = time.monotonic()
        next_progress = 30.0
        while (elapsed := time.monotonic() - start) < self.seconds:
            time.sleep(TICK)
            self.check_clocks()
            self.resume_due()
            if self.args.pauses and self.rand.random() < TICK / 2:  # one pause per 2 s
                self.pause_one()
            if self.args.kills and self.rand.random() < TICK / 5:  # a reconciler killed per 5 s
                self.kill_one("reconciler")
            if self.args.kills and self.rand.random() < TICK / 20:  # a writer killed per 20 s
                self.kill_one("writer")
            for proc in [p for p in self.procs if p.popen.poll() not in (None, -9) and not p.reported]:
                proc.reported = True
                log(f"soak[{self.label}] {proc.name} exited {proc.popen.returncode} (see {proc.out.with_suffix('.err')})")
            if elapsed >= next_progress:
                self.progress(elapsed)
                next_progress += 30
        self.stop_everyone()
        self.clean()
        return self.verdict()

    def stop_everyone(self) -> None:
        for proc in self.live("writer"):
            proc.popen.terminate()
        self.resume_due(everyone=True)
        for proc in self.live("reconciler"):
            proc.popen.terminate()
        deadline = time.monotonic() + 30
        for proc in self.live():
            try:
                proc.popen.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log(f"soak[{self.label}] {proc.name} did not stop on SIGTERM within 30 s: killed")
                proc.popen.kill()
                proc.popen.wait()
        log(
            f"soak[{self.label}] chaos over: pauses={self.chaos.pauses} kills={self.chaos.kills} "
            f"writer_kills={self.chaos.writer_kills}; clean passes (no faults, orphan grace 0)"
        )

    # ------------------------------------------------------------ the clean passes

    def command(self, *argv: str) -> subprocess.CompletedProcess[bytes]:
        base = [self.args.bin, "--store", self.store, "--e2b", "--host", "soak-clean", "--json"]
        if self.schema:
            base += ["--pg-schema", self.schema]
        env = dict(os.environ, E2B_API_KEY="soak-clean-command", E2B_API_URL=self.cloud_url)
        done = subprocess.run([*base, *argv], env=env, capture_output=True, timeout=120)
        if done.returncode not in (0, 1):
            log(f"soak[{self.label}] clean `{' '.join(argv)}` exited {done.returncode}: {done.stderr.decode()[-500:]}")
        return done

    async def records_and_leaks(self) -> tuple[list[sr.SandboxInstanceRecord], list[sr.LeakEntry]]:
        store: sr.SqliteSandboxInstanceStore | sr.PostgresSandboxInstanceStore
        if self.store.startswith("sqlite:"):
            store = await sr.SqliteSandboxInstanceStore.open(self.store[len("sqlite:") :])
        elif self.schema:
            store = await sr.PostgresSandboxInstanceStore.connect(self.store, schema=self.schema)
        else:
            store = await sr.PostgresSandboxInstanceStore.connect(self.store)
        try:
            return await store.list_stale(ALL_RECORDS, 1_000_000), await store.list_leaks()
        finally:
            await store.close()

    def leftovers(self) -> tuple[list[str], int, int]:
        """Ours still alive that no record references; records; leaks."""
        records, leaks = asyncio.run(self.records_and_leaks())
        referenced = {record.provider_sandbox_id for record in records}
        alive = http_json(f"{self.cloud_url}/_fake/state")["alive"]
        return [sid for sid in alive if sid.startswith("sb-") and sid not in referenced], len(records), len(leaks)

    def sweep_holder(self) -> str:
        """Who holds the sweep (SQLite only: read the table directly)."""
        if not self.store.startswith("sqlite:"):
            return ""
        import sqlite3

        with sqlite3.connect(self.store[len("sqlite:") :]) as db:
            rows = db.execute("SELECT holder, until FROM sandbox_sweeps").fetchall()
        return "".join(f", sweep held by {holder} for {(until - now_ms()) / 1000:.0f} s more" for holder, until in rows)

    def clean(self) -> None:
        http_json(f"{self.cloud_url}/_fake/faults", {"failDeleteEvery": 0})
        time.sleep(self.args.list_lag_ms / 1000 + 0.5)
        # Claims of a command killed mid-pass hold for its lease (300 s; the
        # command has no lease flag): wait that long at most, and only when
        # something is left.
        deadline = time.monotonic() + 30
        if self.chaos.last_command_kill:
            deadline = max(deadline, self.chaos.last_command_kill + COMMAND_LEASE_S + 10)
        passes = 0
        waited_note = False
        while True:
            self.command("leaks", "retry")
            # `leaks retry` writes no audit row, so a sweep right after it
            # would take what it destroyed, still listed, for an orphan.
            time.sleep(self.args.list_lag_ms / 1000)
            self.command("reconcile", "--orphan-grace", "0s", "--concurrency", "8")
            passes += 1
            left, records, leaks = self.leftovers()
            if not left or time.monotonic() >= deadline:
                break
            if not waited_note and time.monotonic() + 40 < deadline:
                waited_note = True
                log(
                    f"soak[{self.label}] {len(left)} left after clean pass {passes} ({leaks} leaks{self.sweep_holder()}): "
                    f"waiting up to {deadline - time.monotonic():.0f} s for the claims of killed commands (lease {COMMAND_LEASE_S} s)"
                )
            time.sleep(5)
        log(f"soak[{self.label}] {passes} clean pass(es): {len(left)} ours left unreferenced, {records} records, {leaks} leaks")

    # ------------------------------------------------------------ the verdict

    def verdict(self) -> Verdict:
        destroys = read_jsonl(self.destroy_log)
        timelines: dict[str, list[dict[str, Any]]] = {}
        for path in sorted(self.dir.glob("*.timeline.jsonl")):
            timelines[path.name] = read_jsonl(path)

        # When a record named each sandbox: from its upsert's answer (or a
        # read that found it) to the start of whatever may remove it.
        windows: dict[str, list[tuple[int, float]]] = {}
        first_recorded: dict[str, int] = {}
        unconfirmed = 0
        for events in timelines.values():
            open_at: dict[str, int] = {}
            started: set[str] = set()
            for event in events:
                ev, sid, t = event["ev"], event.get("sid"), int(event["t"])
                if sid is None:
                    continue
                if ev in ("upsert-done", "resume-done", "still-referenced"):
                    open_at.setdefault(sid, t)
                    first_recorded.setdefault(sid, t)
                elif ev == "upsert-start":
                    started.add(sid)
                elif ev == "release-start" and sid in open_at:
                    windows.setdefault(sid, []).append((open_at.pop(sid), t))
            for sid, t in open_at.items():
                windows.setdefault(sid, []).append((t, math.inf))
            unconfirmed += len(started - set(first_recorded))

        verdict = Verdict(pauses=self.chaos.pauses, kills=self.chaos.kills + self.chaos.writer_kills)
        live: list[str] = []
        repeats: list[str] = []
        early = 0
        first_destroy: dict[str, dict[str, Any]] = {}
        causes: Counter[str] = Counter()
        app_repeats: Counter[str] = Counter()
        by_status: Counter[str] = Counter()
        for event in destroys:
            sid, at, key = event["id"], int(event["at"]), event["apiKey"]
            ours = key.startswith("soak-reconciler-") or key.startswith("soak-clean")
            by_status[f"{'reconciler' if ours else 'app'}:{event['status']}"] += 1
            if not sid.startswith("sb-"):
                verdict.foreign_destroyed += 1
                live.append(f"FOREIGN {sid} by {key} at {at}")
                continue
            if ours and event["alive"]:
                if any(opened < at < closed for opened, closed in windows.get(sid, [])):
                    verdict.live_destroyed += 1
                    live.append(f"{sid} by {key} at {at}, record windows {windows[sid]}")
                elif sid in first_recorded and at < first_recorded[sid]:
                    early += 1  # destroyed before its record was confirmed: a grace race
            if not event["alive"] and sid in first_destroy:
                first = first_destroy[sid]
                if ours:
                    cause = self.cause(first, event)
                    causes[cause] += 1
                    # The app destroyed it itself and left a ledger entry
                    # behind (a cancelled reclaim, retried): the reconciler
                    # did the entry's job. Shown, not counted.
                    verdict.repeat_destroys += int(cause != "after_app")
                    repeats.append(
                        f"{sid}: {first['apiKey']} at {first['at']}, again by {key} {at - int(first['at'])} ms later ({cause})"
                    )
                else:
                    app_repeats["after_app" if first["apiKey"].startswith("soak-writer-") else "after_reconciler"] += 1
            if event["status"] == 204:
                first_destroy.setdefault(sid, event)

        left, records, leaks = self.leftovers()
        verdict.orphans_left = len(left)
        orphaned = Counter(e.get("how") for events in timelines.values() for e in events if e["ev"] == "orphan")
        created = sum(1 for events in timelines.values() for e in events if e["ev"] == "create")
        cancelled = sum(1 for events in timelines.values() for e in events if e["ev"] in ("cancelled", "abandoned"))
        log(
            f"soak[{self.label}] writers: {created} sandboxes created, {cancelled} reclaims cancelled or abandoned, "
            f"orphaned on purpose {dict(orphaned)}, {unconfirmed} upserts never confirmed (killed)"
        )
        log(f"soak[{self.label}] delete requests by status: {dict(sorted(by_status.items()))}")
        log(
            f"soak[{self.label}] repeat destroys by reconcilers: {sum(causes.values())} {dict(causes)}, "
            f"{verdict.repeat_destroys} counted (not after_app: a ledger entry the app's own cancelled and retried "
            f"reclaim left for a sandbox it had destroyed); by apps (retried reclaims): {sum(app_repeats.values())} "
            f"{dict(app_repeats)}; destroyed before their record was confirmed: {early}"
        )
        if self.clocks:
            worst = max(abs(measured - intended) for _, intended, measured in self.clocks)
            shown = ", ".join(f"{name} {intended:+d}s→{measured:+.1f}s" for name, intended, measured in self.clocks[:8])
            log(f"soak[{self.label}] clocks checked {len(self.clocks)} (worst error {worst:.1f} s): {shown}")
        for line in live[:10]:
            log(f"soak[{self.label}] LIVE DESTROY: {line}")
        for sid in left[:10]:
            log(f"soak[{self.label}] LEFT: {sid}")
        for line in repeats[:10]:
            log(f"soak[{self.label}] repeat destroy: {line}")
        log(
            f"soak[{self.label}] live_destroyed={verdict.live_destroyed} orphans_left={verdict.orphans_left} "
            f"repeat_destroys={verdict.repeat_destroys} pauses={verdict.pauses} kills={verdict.kills} "
            f"foreign_destroyed={verdict.foreign_destroyed}"
        )
        return verdict

    def cause(self, first: dict[str, Any], again: dict[str, Any]) -> str:
        """Why a reconciler destroyed an already destroyed sandbox."""
        if first["apiKey"].startswith("soak-writer-"):
            # Only a ledger entry (or, with SOAK_LIST_LAG_MS, a lagging
            # listing) sends a reconciler to a sandbox the app destroyed.
            return "after_app"
        start, end = int(first["at"]) - 1000, int(again["at"])
        involved = {first["apiKey"], again["apiKey"]}
        if any(start <= at <= end and key in involved for at, key in self.chaos.killed):
            return "after_kill"
        if any(key in involved and p0 <= end and p1 >= start - 30_000 for p0, p1, key in self.chaos.paused):
            return "after_pause"
        return "unexplained"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", required=True, help="directory for the stores and logs")
    parser.add_argument("--bin", required=True, help="the sandbox-reclaim binary")
    parser.add_argument("--pg-url", help="PostgreSQL URL (no PostgreSQL phase without it)")
    parser.add_argument("--reconcilers", type=int, default=2, help="reconcilers per kind (command, Node, Python)")
    parser.add_argument("--writers", type=int, default=2, help="writers per language (Node, Python)")
    args = parser.parse_args()
    args.seconds = int(os.environ.get("SOAK_SECONDS", "600"))
    args.pauses = os.environ.get("SOAK_PAUSES", "1") != "0"
    args.kills = os.environ.get("SOAK_KILLS", "1") != "0"
    args.list_lag_ms = int(os.environ.get("SOAK_LIST_LAG_MS", "0"))
    seed = int(os.environ.get("SOAK_SEED") or random.randrange(1, 2**31))
    rand = random.Random(seed)
    log(
        f"soak: SOAK_SECONDS={args.seconds} SOAK_PAUSES={int(args.pauses)} SOAK_KILLS={int(args.kills)} "
        f"SOAK_SEED={seed} SOAK_LIST_LAG_MS={args.list_lag_ms}"
    )
    phases: list[Phase] = []
    halves = [args.seconds - args.seconds // 2, args.seconds // 2] if args.pg_url else [0, args.seconds]
    if args.pg_url:
        schema = f"soak_{int(time.time())}"
        # Orphan grace past the widest clock spread's half (a +30 s host sees
        # a sandbox 30 s older than it is) plus margin for create → upsert.
        phases.append(
            Phase(args, label="postgres", store=args.pg_url, schema=schema, max_offset_s=30, grace_s=45, seconds=halves[0], rand=rand)
        )
    sqlite = Path(args.work) / "sqlite" / "store.db"
    phases.append(
        Phase(args, label="sqlite", store=f"sqlite:{sqlite}", schema=None, max_offset_s=0, grace_s=20, seconds=halves[1], rand=rand)
    )
    total = Verdict()
    for phase in phases:
        total.add(phase.run())
    failed = total.live_destroyed or total.orphans_left or total.foreign_destroyed or (not args.pauses and total.repeat_destroys)
    if total.foreign_destroyed:
        log(f"soak: {total.foreign_destroyed} sandboxes not ours were destroyed")
    log(
        f"soak: live_destroyed={total.live_destroyed} orphans_left={total.orphans_left} "
        f"repeat_destroys={total.repeat_destroys} pauses={total.pauses} kills={total.kills}"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
