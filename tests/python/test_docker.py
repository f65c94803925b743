"""DockerProvider through the binding, against a real Docker Engine API
(podman's, from scripts/podman.sh): create, list, exec, reclaim, idempotent
destroy, and the ownership guard refusing a container it did not create."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hosts import run_record
from services import docker_image, require_env

import sandbox_reclaim as sr

OWNER_LABEL = "io.sandbox-reclaim.owner"


@pytest.fixture
def image() -> str:
    return docker_image()


def podman(*args: str) -> subprocess.CompletedProcess[str]:
    """The podman CLI on the same storage as the API service (CONTAINERS_CONF)."""
    require_env("CONTAINERS_CONF", "the podman CLI must use the test service's configuration")
    binary = shutil.which("podman")
    if binary is None:
        pytest.fail("podman is not installed (scripts/podman.sh installs it)")
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=120, env=os.environ.copy())


def labelled(owner: str) -> list[str]:
    """Full ids of every container (running or not) carrying ``owner``'s label."""
    listed = podman("ps", "-a", "--no-trunc", "--filter", f"label={OWNER_LABEL}={owner}", "--format", "{{.ID}}")
    assert listed.returncode == 0, listed.stderr
    return [name for name in listed.stdout.split() if name]


@pytest.fixture
def owner() -> Iterator[str]:
    """An owner namespace of this test only; its containers are removed after."""
    namespace = f"py-test-{uuid.uuid4().hex[:12]}"
    yield namespace
    for container in labelled(namespace):
        podman("rm", "-f", "-t", "0", container)


@pytest.fixture
def stranger(image: str) -> Iterator[str]:
    """A running container created without our owner label."""
    name = f"py-stranger-{uuid.uuid4().hex[:12]}"
    started = podman("run", "-d", "--name", name, image, "sleep", "3600")
    assert started.returncode == 0, started.stderr
    try:
        yield name
    finally:
        removed = podman("rm", "-f", "-t", "0", name)
        assert removed.returncode == 0, removed.stderr


def running(name: str) -> bool:
    inspected = podman("inspect", "-f", "{{.State.Running}}", name)
    assert inspected.returncode == 0, inspected.stderr
    return inspected.stdout.strip() == "true"


async def test_create_list_exec_reclaim_and_destroy_again(image: str, owner: str, tmp_path: Path) -> None:
    provider = sr.DockerProvider(image=image, owner=owner, keep_alive=["sleep", "3600"])
    assert provider.name == "docker"
    keys = [f"thread-{index}:sandbox" for index in range(3)]
    handles = [await provider.create(key, {"team": "py"}) for key in keys]
    assert [handle.key for handle in handles] == keys
    assert len({handle.id for handle in handles}) == 3
    assert await provider.create(keys[0]) == handles[0], "a retried create returns the same sandbox"

    listed = await provider.list()
    assert sorted(handle.id for handle in listed) == sorted(handle.id for handle in handles)
    assert sorted(labelled(owner)) == sorted(handle.id for handle in handles)

    result = await provider.exec(handles[1].id, ["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert result == sr.ExecResult("out\n", "err\n", 3)

    store = await sr.SqliteSandboxInstanceStore.open(tmp_path / "instances.db")
    for handle in handles:
        await store.upsert(sr.SandboxInstanceRecord(handle.key, provider.name, handle.id, "thread", handle.created_at))
    reclaim = sr.sandbox_reclaimer(provider=provider, instances=store)
    outcome = await sr.reclaim_sandbox(run_record(keys[0], "run-0"), provider=provider, instances=store)
    assert outcome is sr.ReclaimOutcome.DESTROYED
    for index, key in enumerate(keys[1:], start=1):
        await reclaim(run_record(key, f"run-{index}"))
    assert [await store.get(key) for key in keys] == [None, None, None]
    assert await store.list_leaks() == []

    assert await provider.list() == []
    for handle in handles:
        await provider.destroy(handle.id)  # already gone: success
    assert labelled(owner) == [], "nothing of ours is left"
    await store.close()


async def test_refuses_a_container_it_does_not_own(image: str, owner: str, stranger: str, tmp_path: Path) -> None:
    provider = sr.DockerProvider(image=image, owner=owner)
    with pytest.raises(sr.SandboxNotOwnedError) as caught:
        await provider.destroy(stranger)
    assert caught.value.sandbox_id == stranger
    assert isinstance(caught.value, sr.SandboxReclaimError)
    with pytest.raises(sr.SandboxNotOwnedError):
        await provider.exec(stranger, ["true"])
    assert running(stranger)

    # Through the reclaimer: destroy-failed, the leak is recorded, the container still runs.
    store = await sr.SqliteSandboxInstanceStore.open(tmp_path / "instances.db")
    await store.upsert(sr.SandboxInstanceRecord("k", "docker", stranger, "thread", 1))
    outcome = await sr.reclaim_sandbox(run_record("k", "run-x"), provider=provider, instances=store)
    assert outcome is sr.ReclaimOutcome.DESTROY_FAILED
    [leak] = await store.list_leaks("docker")
    assert leak.provider_sandbox_id == stranger and "refusing" in leak.last_error
    summary = await sr.retry_leaks(provider=provider, instances=store)
    assert summary == sr.RetrySummary(retried=1, destroyed=0, still_failing=1)
    assert running(stranger)
    assert await provider.list() == [], "a stranger is never listed"
    await store.close()


async def test_config_errors_name_the_field(image: str) -> None:
    with pytest.raises(TypeError, match="image"):
        sr.DockerProvider(image=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`image`"):
        sr.DockerProvider(image="")
    with pytest.raises(ValueError, match="`keep_alive`"):
        sr.DockerProvider(image=image, keep_alive=[])
    with pytest.raises(TypeError, match="keep_alive"):
        sr.DockerProvider(image=image, keep_alive="sleep infinity")
    with pytest.raises(ValueError, match="`memory_bytes`"):
        sr.DockerProvider(image=image, memory_bytes=1024)
    with pytest.raises(ValueError, match="`cpus`"):
        sr.DockerProvider(image=image, cpus=-1.0)
    # The core's range (finite, positive), as for Node and the Rust config.
    with pytest.raises(ValueError, match="`cpus`"):
        sr.DockerProvider(image=image, cpus=float("inf"))
    with pytest.raises(ValueError, match="`network_mode`"):
        sr.DockerProvider(image=image, network_mode="")
    provider = sr.DockerProvider(image=image)
    with pytest.raises(ValueError, match="`id`"):
        await provider.destroy("../etc")
    with pytest.raises(ValueError, match="`labels`"):
        await provider.create("k", {"io.sandbox-reclaim.owner": "me"})


async def test_unreachable_engine_is_a_provider_error(tmp_path: Path) -> None:
    with pytest.raises(sr.SandboxProviderError, match="missing.sock"):
        sr.DockerProvider(image="busybox", docker_host=f"unix://{tmp_path}/missing.sock")
    provider = sr.DockerProvider(image="busybox", docker_host="tcp://127.0.0.1:1")  # connects lazily
    with pytest.raises(sr.SandboxProviderError) as caught:
        await provider.destroy("sr-anything")
    assert not isinstance(caught.value, sr.SandboxNotOwnedError)
