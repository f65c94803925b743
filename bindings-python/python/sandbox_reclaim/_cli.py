"""The ``sandbox-reclaim`` console script: the operator command, exactly as
the Rust binary runs it (see the package README, "The sandbox-reclaim command").

Without ``--providers`` the native command runs the whole thing. With
``--providers package.module:attribute`` the pass runs on this package's
driver so Python providers take part; the command crate plans it
(``host_plan``), checks what the module holds and words every refusal
(``host_check_module``), opens the store (``host_open``), decides each step
of the loop (``HostLoop``) and prints every line. This module only resolves
the attribute, builds the providers, runs ``reconcile``, sleeps and listens
for SIGINT/SIGTERM.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from typing import Any, NoReturn

from . import _native
from ._errors import SandboxStoreError
from ._flows import reconcile
from ._providers import DEFAULT_OWNER, DockerProvider, LocalProvider, hosted_from_native
from ._stores import PostgresSandboxInstanceStore, SqliteSandboxInstanceStore


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """The console script: runs the command with ``argv`` (default ``sys.argv[1:]``) and exits with its code."""
    sys.exit(run(list(sys.argv[1:] if argv is None else argv)))


def run(args: list[str]) -> int:
    """Runs the command; answers its exit code."""
    planned = _native.host_plan(args)
    if isinstance(planned, int):
        return planned  # refused, and printed by the command crate
    plan: dict[str, Any] = json.loads(planned)
    if plan["providers"] is None:
        # The native command listens for SIGINT itself: leave it the default disposition.
        if hasattr(signal, "SIGINT"):
            signal.signal(signal.SIGINT, signal.SIG_DFL)
        return _native.run_cli(plan["args"])
    return asyncio.run(_host(plan, planned))


async def _host(plan: dict[str, Any], plan_text: str) -> int:
    hosted = _native.HostLoop(plan_text)
    stop = asyncio.Event()
    _listen_for_signals(hosted, stop)
    found, given = await _load_providers(plan["providers"])
    refused = _native.host_check_module(plan_text, json.dumps(found))
    if refused is not None:
        return refused
    opened = await _native.host_open(plan_text)
    if isinstance(opened, int):
        return opened  # printed by the command crate
    store = (SqliteSandboxInstanceStore if plan["store"]["kind"] == "sqlite" else PostgresSandboxInstanceStore)(opened)
    try:
        try:
            providers = _managed_providers(plan, plan_text) + given
        except Exception as error:  # noqa: BLE001 - as the binary: the provider is unavailable
            return _native.host_fail(plan["command"], plan["json"], "unavailable", "provider", str(error))
        return await _passes(plan_text, hosted, store, providers, stop)
    finally:
        await store.close()


def _listen_for_signals(hosted: Any, stop: asyncio.Event) -> None:
    """The first SIGINT/SIGTERM stops the pass; at a second the loop answers the code to exit with."""
    loop = asyncio.get_running_loop()

    def on_signal(name: str) -> None:
        code = hosted.signal(name)
        if code is not None:
            os._exit(code)
        stop.set()

    for name in ("SIGINT", "SIGTERM"):
        number = getattr(signal, name, None)
        try:
            if number is not None:
                loop.add_signal_handler(number, on_signal, name)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - Windows event loops
            pass


async def _load_providers(spec: str) -> tuple[dict[str, Any], list[object]]:
    """Resolves ``package.module:attribute`` (a list, or a zero-arg callable
    returning one) and describes what it found, each provider's attributes
    read once; the command crate checks it and words every refusal."""
    found: dict[str, Any] = {"host": "python", "named": spec, "problem": None, "providers": []}
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        return {**found, "problem": {"kind": "bad-spec", "shown": repr(spec)}}, []
    # Like `python -m`, and like npx resolving ./providers.mjs: the current directory first.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    failed = {"kind": "import-failed", "module": module_name}
    try:
        value: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is not None and (module_name == error.name or module_name.startswith(f"{error.name}.")):
            return {**found, "problem": {"kind": "no-module", "module": module_name}}, []
        return {**found, "problem": {**failed, "error": _describe(error)}}, []
    except Exception as error:  # noqa: BLE001 - whatever the module raises is reported
        return {**found, "problem": {**failed, "error": _describe(error)}}, []
    try:
        for part in attribute.split("."):
            value = getattr(value, part)
    except AttributeError:
        return {**found, "problem": {"kind": "no-attribute", "module": module_name, "attribute": attribute}}, []
    if not isinstance(value, (list, tuple)) and callable(value):
        try:
            value = value()
            value = await value if inspect.isawaitable(value) else value
        except Exception as error:  # noqa: BLE001
            return {**found, "problem": {"kind": "call-raised", "error": _describe(error)}}, []
        if not isinstance(value, (list, tuple)):
            return {**found, "problem": {"kind": "call-not-a-list", "got": type(value).__name__}}, []
    elif not isinstance(value, (list, tuple)):
        return {**found, "problem": {"kind": "not-a-list", "got": type(value).__name__}}, []
    providers = list(value)
    found["providers"] = [_seen(provider) for provider in providers]
    return found, providers


def _seen(provider: object) -> dict[str, Any]:
    name, listing, owner = (getattr(provider, field, None) for field in ("name", "list", "owner"))
    named = isinstance(name, str) and name != ""
    return {
        "object": True,
        "name": name if named else None,
        "shown": repr(name) if named else type(name).__name__,
        "destroy": callable(getattr(provider, "destroy", None)),
        "list": listing is None or callable(listing),
        "owner": owner is None or isinstance(owner, str),
    }


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _managed_providers(plan: dict[str, Any], plan_text: str) -> list[object]:
    """``--docker``, ``--local``, then ``--e2b``, ``--daytona``, ``--vercel``
    (built natively: no credential crosses to Python), as the binary builds them."""
    owner: str = plan["owner"] or DEFAULT_OWNER
    docker, local = plan["docker"], plan["local"]
    providers: list[object] = []
    if docker is not None:
        providers.append(DockerProvider(image=docker["image"], owner=owner, name=docker["name"], docker_host=docker["url"]))
    if local is not None:
        providers.append(LocalProvider(base_dir=local["baseDir"], owner=owner, name=local["name"]))
    if plan["hosted"]:
        providers.extend(hosted_from_native(built) for built in _native.host_hosted_providers(plan_text))
    return providers


def _now() -> int:
    return time.time_ns() // 1_000_000


async def _passes(plan_text: str, hosted: Any, store: object, providers: list[object], stop: asyncio.Event) -> int:
    """Runs each pass and sleep the command's loop asks for; answers the exit code."""
    step, value = hosted.start(_now())
    while step != "exit":
        if step == "pass":
            options: dict[str, Any] = json.loads(_native.respell_options("reconcile", plan_text))
            try:
                report = await reconcile(providers=providers, instances=store, stop=stop, **options)  # type: ignore[arg-type]
            except SandboxStoreError as error:
                step, value = hosted.failed("store", str(error), _now())
            except (TypeError, ValueError) as error:
                step, value = hosted.failed("option", str(error), _now())
            except Exception as error:  # noqa: BLE001 - a pass that could not finish
                step, value = hosted.failed("other", _describe(error), _now())
            else:
                step, value = hosted.passed(json.dumps(report.to_dict()), _now())
        else:
            try:
                await asyncio.wait_for(stop.wait(), max(0, value - _now()) / 1000)
            except asyncio.TimeoutError:
                pass
            step, value = hosted.woke(_now())
    code: int = value
    return code


if __name__ == "__main__":
    main()
