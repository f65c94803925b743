"""LocalProvider through the binding: create, exec, list, reclaim, destroy
again, and nothing (directories, processes) left behind."""

from __future__ import annotations

import asyncio
import random
import uuid
from pathlib import Path

import pytest
from hosts import run_record

import sandbox_reclaim as sr


def processes_running(argv: list[str]) -> int:
    """How many processes on the host run exactly ``argv``."""
    wanted = ("\0".join(argv) + "\0").encode()
    count = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if (proc / "cmdline").read_bytes() == wanted:
                count += 1
        except OSError:
            continue  # exited meanwhile
    return count


async def test_create_exec_list_reclaim_destroy(tmp_path: Path) -> None:
    # A keep-alive no other process runs, so the host's process table shows ours.
    keep_alive = ["sleep", f"{random.randint(100_000, 999_999)}"]
    base_dir = tmp_path / "sandboxes"
    provider = sr.LocalProvider(base_dir=base_dir, owner=f"py-{uuid.uuid4().hex[:8]}", keep_alive=keep_alive)
    assert provider.name == "local"
    assert provider.isolation() in ("namespaces", "process-group")

    handles = [await provider.create(f"thread-{index}:sandbox") for index in range(2)]
    assert sorted(await provider.list(), key=lambda handle: handle.id) == sorted(handles, key=lambda handle: handle.id)
    assert processes_running(keep_alive) == 2

    result = await provider.exec(handles[0].id, ["sh", "-c", "echo hello; pwd >&2; exit 4"])
    assert (result.stdout, result.exit_code) == ("hello\n", 4)
    assert result.stderr.strip(), "the working directory is reported on stderr"

    store = sr.InMemorySandboxInstanceStore.with_ledger()
    for handle in handles:
        await store.upsert(sr.SandboxInstanceRecord(handle.key, provider.name, handle.id, "thread", handle.created_at))
    for index, handle in enumerate(handles):
        outcome = await sr.reclaim_sandbox(run_record(handle.key, f"run-{index}"), provider=provider, instances=store)
        assert outcome is sr.ReclaimOutcome.DESTROYED
    assert len(store) == 0 and await store.list_leaks() == []

    for handle in handles:
        await provider.destroy(handle.id)  # already gone: success
    assert await provider.list() == []
    assert processes_running(keep_alive) == 0, "every sandbox process is gone"
    assert [entry.name for entry in base_dir.iterdir() if not entry.name.startswith(".")] == []


async def test_native_retry_leaks_with_local_provider_and_sqlite(tmp_path: Path) -> None:
    provider = sr.LocalProvider(base_dir=tmp_path / "sandboxes", isolation="process-group")
    assert provider.isolation() == "process-group"
    handle = await provider.create("k")
    store = await sr.SqliteSandboxInstanceStore.open(tmp_path / "ledger.db")
    await store.delete_recording_leak(
        "k", sr.NewLeak("k", "local", handle.id, "run-1", "simulated failure", 1_700_000_000_000)
    )
    assert await sr.retry_leaks(provider=provider, instances=store) == sr.RetrySummary(1, 1, 0)
    assert await store.list_leaks() == [] and await provider.list() == []
    await store.close()


async def test_foreign_sandbox_is_refused(tmp_path: Path) -> None:
    base_dir = tmp_path / "sandboxes"
    mine = sr.LocalProvider(base_dir=base_dir, owner="mine", isolation="process-group")
    theirs = sr.LocalProvider(base_dir=base_dir, owner="theirs", isolation="process-group")
    handle = await theirs.create("k")
    try:
        with pytest.raises(sr.SandboxNotOwnedError) as caught:
            await mine.destroy(handle.id)
        assert caught.value.sandbox_id == handle.id
        assert await mine.list() == []
        assert [found.id for found in await theirs.list()] == [handle.id]
    finally:
        await theirs.destroy(handle.id)


def test_left_out_options_take_the_cores_defaults(tmp_path: Path) -> None:
    provider = sr.LocalProvider(base_dir=tmp_path / "defaults")
    assert (provider.name, provider.owner) == ("local", sr.DEFAULT_OWNER)
    assert provider.isolation() in ("namespaces", "process-group")


def test_config_errors_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="base_dir"):
        sr.LocalProvider(base_dir=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError) as isolation:
        sr.LocalProvider(base_dir=tmp_path, isolation="chroot")  # type: ignore[arg-type]
    assert str(isolation.value) == "`isolation` must be 'auto', 'namespaces' or 'process-group', got \"chroot\""
    with pytest.raises(TypeError, match="`isolation`"):
        sr.LocalProvider(base_dir=tmp_path, isolation=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`owner`"):
        sr.LocalProvider(base_dir=tmp_path, owner="")
    with pytest.raises(ValueError, match="`keep_alive`"):
        sr.LocalProvider(base_dir=tmp_path, keep_alive=[""])
    with pytest.raises(ValueError, match="`name`"):
        sr.LocalProvider(base_dir=tmp_path, name="")


async def test_cancelling_a_native_awaitable_stops_it(tmp_path: Path) -> None:
    provider = sr.LocalProvider(base_dir=tmp_path / "sandboxes", isolation="process-group")
    handle = await provider.create("k")
    task = asyncio.ensure_future(provider.exec(handle.id, ["sleep", "30"]))
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await provider.destroy(handle.id)
    assert await provider.list() == []


def test_native_awaitables_refuse_to_start_without_a_running_loop(tmp_path: Path) -> None:
    provider = sr.LocalProvider(base_dir=tmp_path / "sandboxes", isolation="process-group")
    with pytest.raises(RuntimeError, match="no running event loop"):
        provider._native.destroy("x")
