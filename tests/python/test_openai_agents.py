"""``sandbox_reclaim.openai_agents.DockerSandboxClient`` under the OpenAI
Agents SDK's own ``Runner.run`` (a ``SandboxAgent`` whose model is scripted:
no network, no model service), on the podman Docker-API socket ``make test``
starts. The SDK's Docker client runs ``tail -f /dev/null`` and ``sh -lc`` in
the busybox test image and sets no labels of its own.

Proves: the container carries our owner label and is recorded while the run
is live, and is gone with its record after it; with the engine failing at
teardown the run still completes and the ledger holds the entry, which
``retry_leaks`` clears once the engine answers; a run killed with SIGKILL
leaves a labelled container and its record, which ``sandbox-reclaim
reconcile --docker`` spares while the record is fresh and destroys once it
is idle, touching nothing unlabelled or foreign; ``resume`` re-records a
replaced container; user labels are kept."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from agents_world import COMMAND, records, run_agent
from cli_world import rust_binary, run
from services import docker_image, needs, require_env

import sandbox_reclaim as sr

try:
    import docker  # type: ignore[import-untyped]

    from sandbox_reclaim.openai_agents import DockerSandboxClient
except ImportError as error:  # pragma: no cover - a missing SDK fails under CI
    needs(f"openai-agents / docker ({error})", False, "the OpenAI Agents SDK tests drive the SDK's Runner")

OWNER_LABEL = "io.sandbox-reclaim.owner"


def podman(*args: str) -> subprocess.CompletedProcess[str]:
    require_env("CONTAINERS_CONF", "the podman CLI must use the test service's configuration")
    binary = shutil.which("podman")
    if binary is None:
        pytest.fail("podman is not installed (scripts/podman.sh installs it)")
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=120, env=os.environ.copy())


def containers(owner: str) -> list[str]:
    listed = podman("ps", "-a", "--no-trunc", "--filter", f"label={OWNER_LABEL}={owner}", "--format", "{{.ID}}")
    assert listed.returncode == 0, listed.stderr
    return [name for name in listed.stdout.split() if name]


def exists(container: str) -> bool:
    return podman("container", "exists", container).returncode == 0


@pytest.fixture
def image() -> str:
    return docker_image()


@pytest.fixture
def owner() -> Iterator[str]:
    namespace = f"oa-test-{uuid.uuid4().hex[:12]}"
    yield namespace
    for container in containers(namespace):
        podman("rm", "-f", "-t", "0", container)


class Gate:
    """A unix-socket forwarder in front of the engine that can refuse every
    connection: the engine "failing" for the SDK and for our provider alike
    (a thread of its own, since docker-py blocks the event loop)."""

    def __init__(self, directory: Path, engine: str) -> None:
        self.path = directory / "gate.sock"
        self.engine = engine
        self.open = True
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(self.path))
        self.server.listen(64)
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            if not self.open:
                client.close()
                continue
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(self.engine)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self.server.close()


def engine_socket() -> str:
    host = require_env("DOCKER_HOST", "the OpenAI Agents SDK tests need a Docker Engine API (scripts/podman.sh)")
    assert host.startswith("unix://"), host
    return host.removeprefix("unix://")


async def test_a_runner_run_labels_records_and_destroys_its_container(image: str, owner: str, tmp_path: Path) -> None:
    store = await sr.SqliteSandboxInstanceStore.open(tmp_path / "store.db")
    engine = docker.from_env()
    client = DockerSandboxClient(engine, instances=store, owner=owner)
    seen: dict[str, Any] = {}

    async def during() -> None:
        [container] = containers(owner)
        seen["container"] = container
        seen["labels"] = engine.containers.get(container).labels
        seen["records"] = await records(store)

    result, model = await run_agent(client, image, during)

    assert result.final_output == "done"
    assert model.tool_output is not None and "hello-from-the-sandbox" in model.tool_output, COMMAND
    container = seen["container"]
    assert seen["labels"][OWNER_LABEL] == owner
    assert int(seen["labels"]["io.sandbox-reclaim.created-at"]) > 0
    [record] = seen["records"]
    assert (record.provider, record.provider_sandbox_id) == ("docker", container)
    uuid.UUID(record.key)  # the SDK's session id
    # After the run: the container is gone, and so is its record; no leak.
    assert not exists(container)
    assert await records(store) == []
    assert await store.list_leaks() == []
    await store.close()


async def test_a_failed_teardown_is_kept_in_the_ledger_and_retried(image: str, owner: str, tmp_path: Path) -> None:
    gate = Gate(tmp_path, engine_socket())
    store = await sr.SqliteSandboxInstanceStore.open(tmp_path / "store.db")
    engine = docker.DockerClient(base_url=gate.url)
    client = DockerSandboxClient(engine, instances=store, owner=owner)
    seen: dict[str, str] = {}

    async def during() -> None:
        [seen["container"]] = containers(owner)
        gate.open = False  # the engine stops answering before teardown

    result, _ = await run_agent(client, image, during)

    assert result.final_output == "done"  # the run completes whatever teardown met
    container = seen["container"]
    assert exists(container), "the engine refused every call: the container must still be there"
    [leak] = await store.list_leaks("docker")
    assert leak.provider_sandbox_id == container
    assert await records(store) == []  # deleted even though destroy failed (the reference's rule)

    gate.open = True
    provider = sr.DockerProvider(image=image, owner=owner, docker_host=gate.url)
    summary = await sr.retry_leaks(instances=store, provider=provider)
    assert summary.destroyed == 1, summary
    assert not exists(container)
    assert await store.list_leaks() == []
    await store.close()
    gate.close()


def test_a_killed_run_is_swept_once_its_record_is_idle(image: str, owner: str, tmp_path: Path) -> None:
    store_path = tmp_path / "store.db"
    stranger = f"oa-stranger-{uuid.uuid4().hex[:12]}"
    foreign = f"oa-foreign-{uuid.uuid4().hex[:12]}"
    assert podman("run", "-d", "--name", stranger, image, "sleep", "3600").returncode == 0
    started = podman("run", "-d", "--name", foreign, "--label", f"{OWNER_LABEL}=someone-else", image, "sleep", "3600")
    assert started.returncode == 0
    child = subprocess.Popen(
        [sys.executable, str(Path(__file__).parent / "agents_world.py"), str(store_path), owner],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.startswith("live "), f"the run did not go live: {line!r}\n{child.stderr.read() if child.poll() is not None and child.stderr else ''}"
        _, key, container = line.split()
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)

        # What the crash left: a labelled container, and its record.
        assert containers(owner) == [container]
        binary = [str(rust_binary())]
        store_url = f"sqlite:{store_path}"
        common = ["reconcile", "--docker", "--store", store_url, "--owner", owner, "--json"]
        fresh = run(binary, [*common, "--max-idle", "1h"])
        assert fresh.code == 0, fresh
        assert exists(container), "a fresh record keeps its sandbox"

        time.sleep(2.2)
        idle = run(binary, [*common, "--max-idle", "2s"])
        assert idle.code == 0, idle
        assert not exists(container), idle
        for untouched in (stranger, foreign):
            assert exists(untouched), f"{untouched} is not ours and must be untouched"
    finally:
        if child.poll() is None:
            child.kill()
        podman("rm", "-f", "-t", "0", stranger, foreign)


async def test_resume_rerecords_a_replaced_container_and_keeps_user_labels(image: str, owner: str, tmp_path: Path) -> None:
    from agents.sandbox.sandboxes.docker import DockerSandboxClientOptions

    store = await sr.SqliteSandboxInstanceStore.open(tmp_path / "store.db")
    engine = docker.from_env()
    client = DockerSandboxClient(engine, instances=store, owner=owner)
    options = DockerSandboxClientOptions(image=image, labels={"team": "agents", OWNER_LABEL: owner})
    session = await client.create(options=options)
    state: Any = session._inner.state
    first = state.container_id
    labels = engine.containers.get(first).labels
    assert labels["team"] == "agents" and labels[OWNER_LABEL] == owner
    [record] = await records(store)
    assert (record.key, record.provider_sandbox_id) == (str(state.session_id), first)

    # The container vanishes behind the SDK's back; resume replaces it.
    podman("rm", "-f", "-t", "0", first)
    payload = client.serialize_session_state(state)
    resumed = await client.resume(client.deserialize_session_state(payload))
    second = cast(Any, resumed._inner.state).container_id
    assert second != first
    [record] = await records(store)
    assert record.provider_sandbox_id == second
    assert engine.containers.get(second).labels[OWNER_LABEL] == owner

    await client.delete(resumed)
    assert not exists(second)
    assert await records(store) == []
    assert await store.list_leaks() == []
    await store.close()


def test_the_example_runs(image: str) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "python" / "openai_agents_docker.py"
    done = subprocess.run(
        [sys.executable, str(example), "--image", image], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "1. run answered 'done'; containers left: 0",
        "2. run killed mid-run; containers left: 1",
        "3. reconcile --max-idle 1h: exit 0; containers left: 1",
        "   reconcile --max-idle 2s: exit 0; containers left: 0",
    ]


def test_without_a_store_it_records_where_the_command_looks_by_default(image: str, owner: str, tmp_path: Path) -> None:
    # A fresh interpreter whose platform data directory is tmp_path: the
    # client's default store and the command's default `--store` must agree.
    script = f"""
import asyncio, docker
from agents.sandbox.sandboxes.docker import DockerSandboxClientOptions
from sandbox_reclaim.openai_agents import DockerSandboxClient

async def main():
    client = DockerSandboxClient(docker.from_env(), owner={owner!r})
    session = await client.create(options=DockerSandboxClientOptions(image={image!r}))
    print(session._inner.state.container_id, flush=True)

asyncio.run(main())
"""
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    created = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert created.returncode == 0, created.stderr
    container = created.stdout.split()[-1]
    assert (tmp_path / "data" / "sandbox-reclaim" / "store.db").is_file()
    # The command with no --store finds the record: the container is referenced, not an orphan.
    argv = [str(rust_binary()), "reconcile", "--docker", "--owner", owner, "--orphan-grace", "0s", "--json"]
    swept = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)
    assert swept.returncode == 0, swept.stderr
    assert exists(container), "recorded in the default store: referenced, never swept"
    [provider] = json.loads(swept.stdout)["report"]["providers"]
    assert provider["orphans"]["referenced"] == 1, provider


class FailingStore:
    """A host store that forwards to ``inner`` but fails ``fail`` (``upsert``
    or ``delete``): the store unreachable at the worst moment."""

    def __init__(self, inner: Any, fail: str) -> None:
        self.inner = inner
        self.fail = fail

    async def get(self, key: str) -> Any:
        return await self.inner.get(key)

    async def upsert(self, record: Any) -> None:
        if self.fail == "upsert":
            raise RuntimeError("store unreachable (upsert)")
        await self.inner.upsert(record)

    async def delete(self, key: str) -> None:
        if self.fail == "delete":
            raise RuntimeError("store unreachable (delete)")
        await self.inner.delete(key)


async def test_a_sandbox_that_cannot_be_recorded_is_torn_down_before_the_error(image: str, owner: str, tmp_path: Path) -> None:
    from agents.sandbox.sandboxes.docker import DockerSandboxClientOptions

    store = await sr.SqliteSandboxInstanceStore.open(tmp_path / "store.db")
    client = DockerSandboxClient(docker.from_env(), instances=FailingStore(store, "upsert"), owner=owner)
    with pytest.raises(RuntimeError, match="store unreachable"):
        await client.create(options=DockerSandboxClientOptions(image=image))
    assert containers(owner) == [], "a sandbox no record names must not outlive the failed create"
    await store.close()


async def test_a_store_failing_at_teardown_is_logged_and_never_breaks_the_run(
    image: str, owner: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = await sr.SqliteSandboxInstanceStore.open(tmp_path / "store.db")
    client = DockerSandboxClient(docker.from_env(), instances=FailingStore(store, "delete"), owner=owner)
    seen: dict[str, str] = {}

    async def during() -> None:
        [seen["container"]] = containers(owner)

    with caplog.at_level("ERROR", logger="openai.agents"):
        result, _ = await run_agent(client, image, during)
    assert result.final_output == "done"
    assert not exists(seen["container"]), "destroyed before the record's delete failed (the reference's order)"
    failures = [record.getMessage() for record in caplog.records if "sandbox-reclaim: reclaiming session" in record.getMessage()]
    assert failures and all("store unreachable (delete)" in message for message in failures), caplog.text
    await store.close()
