"""A Python soak process, the twin of tests/soak/worker.mjs (same JSON
argument, same stdout lines and writer timeline): a writer acting like an
app, or a reconciler running fleet passes in a loop.

    python tests/soak/worker.py '<json config>'

The difference is cancellation: a Python writer cancels some reclaims
mid-flight (``task.cancel()``), then reads its record back. If the record
still names the sandbox it logs ``still-referenced`` (the record is live
again) and reclaims once more, as an app retrying would.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sys
import time
import urllib.request
from collections.abc import Awaitable
from datetime import datetime, timezone
from typing import Any

import sandbox_reclaim as sr

Store = sr.SqliteSandboxInstanceStore | sr.PostgresSandboxInstanceStore


def now_ms() -> int:
    return int(time.time() * 1000)


def say(line: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def error_text(error: BaseException) -> str:
    return (str(error) or type(error).__name__)[:300]


async def open_store(cfg: dict[str, Any]) -> Store:
    spec: str = cfg["store"]
    if spec.startswith("sqlite:"):
        return await sr.SqliteSandboxInstanceStore.open(spec[len("sqlite:") :])
    if cfg.get("schema"):
        return await sr.PostgresSandboxInstanceStore.connect(spec, max_connections=4, schema=cfg["schema"])
    return await sr.PostgresSandboxInstanceStore.connect(spec, max_connections=4)


class Writer:
    def __init__(self, cfg: dict[str, Any], provider: sr.E2bProvider, store: Store) -> None:
        self.cfg = cfg
        self.provider = provider
        self.store = store
        self.rand = random.Random(cfg.get("seed", 1))
        self.log = os.open(cfg["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.sandboxes = 0
        self.keys = 0
        self.upserts = 0
        self.reclaimer = sr.sandbox_reclaimer(provider=provider, instances=store, destroy_timeout=10)

    def event(self, ev: str, **fields: Any) -> None:
        line = json.dumps({"t": now_ms(), "ev": ev, "w": self.cfg["name"], **fields}) + "\n"
        os.write(self.log, line.encode())

    def _post(self, body: bytes) -> None:
        request = urllib.request.Request(
            f"{self.cfg['cloud']}/_fake/sandboxes", data=body, headers={"content-type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            answer.read()

    async def create(self, key: str) -> str:
        sid = f"sb-{self.cfg['name']}-{self.sandboxes}"
        self.sandboxes += 1
        self.event("create-start", key=key, sid=sid)
        started = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        item = {"sandboxID": sid, "startedAt": started, "metadata": sr.owner_labels(sr.DEFAULT_OWNER, key)}
        await asyncio.to_thread(self._post, json.dumps([item]).encode())
        self.event("create", key=key, sid=sid)
        return sid

    async def upsert(self, key: str, sid: str, ev: str) -> None:
        self.upserts += 1
        record = sr.SandboxInstanceRecord(
            key=key,
            provider=self.provider.name,
            provider_sandbox_id=sid,
            thread_id=f"thread-{key}",
            latest_run_id=f"run-{key}-{self.upserts}",
            updated_at=max(0, now_ms() + int(self.cfg.get("updatedAtOffsetMs", 0))),
        )
        self.event(f"{ev}-start", key=key, sid=sid)
        await self.store.upsert(record)
        self.event(f"{ev}-done", key=key, sid=sid)

    def hold(self) -> float:
        r = self.rand.random()
        scale = float(self.cfg.get("holdScale", 1))
        if r < 0.6:
            return scale * (0.2 + self.rand.random() * 3)
        if r < 0.9:
            return scale * (3 + self.rand.random() * 17)
        return scale * (20 + self.rand.random() * 70)

    async def reclaim(self, key: str, sid: str) -> None:
        run = sr.RunRecord(run_id=f"run-{key}", thread_id=f"thread-{key}", status=sr.RunStatus.COMPLETED, started_at=1, sandbox_key=key)
        cancel = self.rand.random() < float(self.cfg.get("cancelRate", 0))
        while True:
            via_reclaimer = self.rand.random() < 0.5
            self.event("release-start", key=key, sid=sid, how="reclaimer" if via_reclaimer else "reclaim")
            call: Awaitable[object]
            if via_reclaimer:
                call = self.reclaimer(run)
            else:
                call = sr.reclaim_sandbox(run, provider=self.provider, instances=self.store, destroy_timeout=10)
            task: asyncio.Future[Any] = asyncio.ensure_future(call)
            if cancel:
                cancel = False
                done, _ = await asyncio.wait({task}, timeout=self.rand.random() * 0.015)
                if not done:
                    task.cancel()
                    try:
                        await task
                    except asyncio.CancelledError:
                        pass
                    except Exception as error:  # it settled as it was cancelled
                        self.event("release-done", key=key, sid=sid, error=error_text(error))
                    else:
                        self.event("release-done", key=key, sid=sid, outcome=str(getattr(task.result(), "value", task.result())))
                    if task.cancelled():
                        self.event("cancelled", key=key, sid=sid)
                    record = await self.store.get(key)
                    if record is not None and record.provider_sandbox_id == sid:
                        # The record is live again until the retry below starts.
                        self.event("still-referenced", key=key, sid=sid)
                        continue
                    return
            try:
                outcome = await task
                self.event("release-done", key=key, sid=sid, outcome=str(getattr(outcome, "value", outcome)))
            except Exception as error:
                self.event("release-done", key=key, sid=sid, error=error_text(error))
            return

    async def session(self) -> None:
        while True:
            key = f"{self.cfg['name']}-k{self.keys}"
            self.keys += 1
            sid: str | None = None
            try:
                sid = await self.create(key)
                if self.rand.random() < 0.04:
                    self.event("orphan", key=key, sid=sid, how="no-record")
                    continue
                await self.upsert(key, sid, "upsert")
                until = time.monotonic() + self.hold()
                while time.monotonic() < until:
                    await asyncio.sleep(min(until - time.monotonic(), 0.3 + self.rand.random() * 3))
                    if time.monotonic() >= until:
                        break
                    if self.rand.random() < 0.05:
                        following = await self.create(key)
                        self.event("release-start", key=key, sid=sid, how="replaced")
                        await self.upsert(key, following, "upsert")
                        self.event("orphan", key=key, sid=sid, how="replaced")
                        sid = following
                    else:
                        await self.upsert(key, sid, "resume")
                r = self.rand.random()
                if r < 0.08:
                    self.event("release-start", key=key, sid=sid, how="delete")
                    await self.store.delete(key)
                    self.event("release-done", key=key, sid=sid, outcome="deleted")
                    self.event("orphan", key=key, sid=sid, how="deleted")
                elif r < 0.11:
                    self.event("kept", key=key, sid=sid)
                else:
                    await self.reclaim(key, sid)
            except Exception as error:
                self.event("error", key=key, sid=sid, error=error_text(error))
                await asyncio.sleep(0.2)


async def writer(cfg: dict[str, Any], provider: sr.E2bProvider) -> None:
    # SIGTERM ends a writer at once, as a crash would (its log is complete).
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    say({"clock": now_ms()})
    store = await open_store(cfg)
    app = Writer(cfg, provider, store)
    await asyncio.gather(*(app.session() for _ in range(int(cfg.get("sessions", 3)))))


async def reconciler(cfg: dict[str, Any], provider: sr.E2bProvider) -> None:
    say({"clock": now_ms()})
    rand = random.Random(cfg.get("seed", 1))
    store = await open_store(cfg)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    lease = cfg["leaseMs"] / 1000
    while not stop.is_set():
        t = now_ms()
        try:
            if rand.random() < 0.2:
                summary = await sr.retry_leaks(provider=provider, instances=store, lease=lease, destroy_timeout=10)
                say({"t": t, "kind": "retry", "retried": summary.retried, "destroyed": summary.destroyed})
            else:
                report = await sr.reconcile(
                    provider=provider,
                    instances=store,
                    orphan_grace=cfg["graceMs"] / 1000,
                    lease=lease,
                    backoff=1,
                    max_backoff=5,
                    concurrency=4,
                    destroy_timeout=10,
                    host=cfg["name"],
                    stop=stop,
                )
                mine = report.providers[0]
                counts = report.counts
                say(
                    {
                        "t": t,
                        "kind": "pass",
                        "destroyed": counts.destroyed,
                        "failed": counts.failed,
                        "deferred": counts.deferred,
                        "sweep": mine.orphans.status.value,
                        "found": mine.orphans.found,
                    }
                )
        except Exception as error:
            say({"t": t, "kind": "error", "error": error_text(error)})
        if not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), cfg["intervalMs"] / 1000 * (0.5 + rand.random()))
            except asyncio.TimeoutError:
                pass
    await store.close()


def main() -> None:
    cfg: dict[str, Any] = json.loads(sys.argv[1])
    provider = sr.E2bProvider(api_key=f"soak-{cfg['role']}-{cfg['name']}", api_url=cfg["cloud"], request_timeout=10)
    asyncio.run(writer(cfg, provider) if cfg["role"] == "writer" else reconciler(cfg, provider))


if __name__ == "__main__":
    main()
