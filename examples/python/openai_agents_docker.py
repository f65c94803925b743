"""The OpenAI Agents SDK with reclaimed sandboxes: one import changes.

    # from agents.sandbox.sandboxes.docker import DockerSandboxClient
    from sandbox_reclaim.openai_agents import DockerSandboxClient

1. A ``SandboxAgent`` run: its container is labelled, recorded while it runs,
   and destroyed (with its record) when the run ends.
2. A crash: a second run is killed with SIGKILL mid-run. Its container and
   record stay behind, as with any crashed process.
3. ``sandbox-reclaim reconcile --docker`` spares the crashed run's container
   while its record is fresh and destroys it once the record is idle.

The model is scripted so this runs offline (no API key); an app passes its
own (``model="gpt-5"``). Needs a Docker Engine (``DOCKER_HOST``) and an image
with ``sh`` and ``tail`` (``--image``, default ``busybox:latest``).

Run: python examples/python/openai_agents_docker.py [--image IMAGE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import docker  # type: ignore[import-untyped]
from agents import RunConfig, Runner
from agents.items import ModelResponse, TResponseStreamEvent
from agents.models.interface import Model
from agents.sandbox import SandboxAgent, SandboxRunConfig
from agents.sandbox.sandboxes.docker import DockerSandboxClientOptions
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

import sandbox_reclaim as sr
from sandbox_reclaim.openai_agents import DockerSandboxClient

OWNER_LABEL = "io.sandbox-reclaim.owner"


class ScriptedModel(Model):
    """Stands in for a real model: runs one command, then answers (or, with
    ``hang``, announces the live run and waits to be killed)."""

    def __init__(self, hang: bool = False) -> None:
        self.turns = 0
        self.hang = hang

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        self.turns += 1
        if self.turns == 1:
            command = json.dumps({"cmd": "uname -a"})
            call = ResponseFunctionToolCall(type="function_call", id="fc_1", call_id="c1", name="exec_command", arguments=command)
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        if self.hang:
            print("live", flush=True)
            await asyncio.Event().wait()
        text = ResponseOutputText(type="output_text", text="done", annotations=[])
        message = ResponseOutputMessage(type="message", id="m1", role="assistant", status="completed", content=[text])
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError


async def run_agent(store_path: Path, owner: str, image: str, hang: bool = False) -> str:
    store = await sr.SqliteSandboxInstanceStore.open(store_path)
    # The one changed line: our client, told where to record and whose it is.
    client = DockerSandboxClient(docker.from_env(), instances=store, owner=owner)
    agent = SandboxAgent(name="worker", instructions="Inspect the machine.", model=ScriptedModel(hang))
    sandbox = SandboxRunConfig(client=client, options=DockerSandboxClientOptions(image=image))
    result = await Runner.run(agent, "What kernel is this?", run_config=RunConfig(sandbox=sandbox, tracing_disabled=True))
    await store.close()
    return str(result.final_output)


def ours(owner: str) -> list[str]:
    return [c.id for c in docker.from_env().containers.list(all=True, filters={"label": f"{OWNER_LABEL}={owner}"})]


def reconcile(store_path: Path, owner: str, max_idle: str) -> dict[str, Any]:
    command = Path(sys.executable).parent / "sandbox-reclaim"
    argv = [str(command), "reconcile", "--docker", "--store", f"sqlite:{store_path}", "--owner", owner]
    done = subprocess.run([*argv, "--max-idle", max_idle, "--json"], capture_output=True, text=True, check=True)
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--image", default=os.environ.get("SANDBOX_RECLAIM_TEST_IMAGE", "busybox:latest"))
    parser.add_argument("--crash", nargs=2, metavar=("STORE", "OWNER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.crash:  # the run step 2 kills
        asyncio.run(run_agent(Path(args.crash[0]), args.crash[1], args.image, hang=True))
        return

    owner = f"example-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as directory:
        store_path = Path(directory) / "store.db"

        answer = asyncio.run(run_agent(store_path, owner, args.image))
        print(f"1. run answered {answer!r}; containers left: {len(ours(owner))}")

        crashed = subprocess.Popen(
            [sys.executable, __file__, "--image", args.image, "--crash", str(store_path), owner],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert crashed.stdout is not None
        if crashed.stdout.readline().strip() != "live":
            raise SystemExit("the second run never went live")
        crashed.send_signal(signal.SIGKILL)
        crashed.wait()
        print(f"2. run killed mid-run; containers left: {len(ours(owner))}")

        fresh = reconcile(store_path, owner, "1h")
        print(f"3. reconcile --max-idle 1h: exit {fresh['exitCode']}; containers left: {len(ours(owner))}")
        time.sleep(2.5)
        idle = reconcile(store_path, owner, "2s")
        print(f"   reconcile --max-idle 2s: exit {idle['exitCode']}; containers left: {len(ours(owner))}")


if __name__ == "__main__":
    main()
