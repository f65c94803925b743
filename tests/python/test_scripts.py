"""The package from plain ``asyncio.run`` scripts, in fresh interpreters."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import asyncio
    import sandbox_reclaim as sr

    class Provider:
        name = "docker"
        def destroy(self, sandbox_id):
            print("destroy", sandbox_id)

    async def main():
        store = sr.InMemorySandboxInstanceStore()
        await store.upsert(sr.SandboxInstanceRecord("k", "docker", "ctr-1", "t", 1))
        record = {"runId": "r", "threadId": "t", "status": "completed", "startedAt": 0, "sandboxKey": "k"}
        print(await sr.reclaim_sandbox(record, provider=Provider(), instances=store))
        print(await sr.reclaim_sandbox(record, provider=Provider(), instances=store))

    asyncio.run(main())
    """
)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=60, check=False, cwd="/")


def test_asyncio_run_script() -> None:
    done = run("-c", SCRIPT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["destroy ctr-1", "destroyed", "not-found"]


def test_quickstart_example_runs() -> None:
    done = run(str(REPO / "examples" / "python" / "quickstart.py"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "run-1: destroyed",
        "run-2: run-2 thread-2:sandbox: destroy failed, sandbox may still be running",
        "records left: 0; still running: ['ctr-2']",
    ]
    assert "WARNING reclaim: provider destroy failed; deleting the record anyway runId=run-2" in done.stderr
    assert "ERROR reclaim: destroy failed; sandbox may still be running runId=run-2" in done.stderr


def test_durable_example_runs() -> None:
    done = run(str(REPO / "examples" / "python" / "durable.py"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "run-0: destroy-failed",
        "run-1: destroyed",
        "run-2: destroyed",
        "leak: run-0 thread-0:sandbox attempts=1 error='engine hiccup'",
        "retry: retried=1 destroyed=1 still_failing=0",
        "leaks left: 0; sandboxes left: 0",
    ]
