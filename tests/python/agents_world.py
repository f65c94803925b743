"""What the OpenAI Agents SDK tests share: a scripted model (no network, no
model service) that asks the sandbox to run one command and then answers,
and a Runner run of a ``SandboxAgent`` with a given client. Run as a program
(``python agents_world.py STORE OWNER``) it is the run a test kills: it
prints ``live <session id> <container id>`` once the sandbox is live and
recorded, then waits forever inside the run."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from agents import RunConfig, Runner
from agents.items import ModelResponse, TResponseStreamEvent
from agents.models.interface import Model
from agents import RunResult
from agents.sandbox import SandboxAgent, SandboxRunConfig
from agents.sandbox.sandboxes.docker import DockerSandboxClientOptions
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

COMMAND = "echo hello-from-the-sandbox"


class ScriptedModel(Model):
    """Turn 1: a tool call to the sandbox's ``exec_command``; then
    ``during()`` runs (the sandbox is live); turn 2: the final answer."""

    def __init__(self, during: Callable[[], Awaitable[None]]) -> None:
        self.turns = 0
        self.during = during
        self.tool_output: str | None = None

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        self.turns += 1
        if self.turns == 1:
            call = ResponseFunctionToolCall(
                type="function_call", id="fc_1", call_id="call_1", name="exec_command", arguments=json.dumps({"cmd": COMMAND})
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        items = args[1] if len(args) > 1 else kwargs.get("input")
        outputs = [item for item in items or [] if isinstance(item, dict) and item.get("type") == "function_call_output"]
        self.tool_output = str(outputs[-1]["output"]) if outputs else None
        await self.during()
        text = ResponseOutputText(type="output_text", text="done", annotations=[])
        message = ResponseOutputMessage(type="message", id="msg_1", role="assistant", status="completed", content=[text])
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("the scripted model does not stream")


async def records(store: Any) -> list[Any]:
    """Every record of a SQL store (``list_stale`` with a bound in the future)."""
    listed: list[Any] = await store.list_stale(2**53 - 1, 1000)
    return listed


async def run_agent(client: Any, image: str, during: Callable[[], Awaitable[None]]) -> tuple[RunResult, ScriptedModel]:
    """One ``Runner.run`` of a ``SandboxAgent`` with ``client``, exactly as an app runs it."""
    model = ScriptedModel(during)
    agent = SandboxAgent(name="worker", instructions="Run the command.", model=model)
    sandbox = SandboxRunConfig(client=client, options=DockerSandboxClientOptions(image=image))
    result = await Runner.run(agent, "go", run_config=RunConfig(sandbox=sandbox, tracing_disabled=True))
    return result, model


async def _killed_run(store_path: str, owner: str) -> None:
    import docker  # type: ignore[import-untyped]

    import sandbox_reclaim as sr
    from sandbox_reclaim.openai_agents import DockerSandboxClient

    store = await sr.SqliteSandboxInstanceStore.open(store_path)
    engine = docker.from_env()
    client = DockerSandboxClient(engine, instances=store, owner=owner)

    async def hang() -> None:
        [container] = engine.containers.list(filters={"label": f"io.sandbox-reclaim.owner={owner}"})
        [record] = await records(store)
        assert record.provider_sandbox_id == container.id
        print(f"live {record.key} {container.id}", flush=True)
        await asyncio.Event().wait()

    await run_agent(client, os.environ["SANDBOX_RECLAIM_TEST_IMAGE"], hang)


if __name__ == "__main__":
    asyncio.run(_killed_run(sys.argv[1], sys.argv[2]))
