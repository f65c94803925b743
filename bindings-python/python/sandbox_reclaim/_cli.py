"""The ``sandbox-reclaim`` console script: the operator command, as the Rust
binary runs it. Without ``--providers`` the native command runs it all. With
``--providers package.module:attribute`` the pass runs on this package's
driver so Python providers take part; the command crate plans it, checks what
the module holds and words every refusal, opens the store, builds the flags'
providers, decides each step of the loop (``HostLoop``) and prints every line.
This module only resolves the attribute, runs ``reconcile``, sleeps and
listens for SIGINT/SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import json
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from . import _native
from ._clock import now as _now  # the driver's clock, epoch ms
from ._errors import SandboxStoreError
from ._flows import reconcile
from ._providers import hosted_from_native, managed_from_native
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
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # the native command listens for it itself
        return _native.run_cli(plan["args"])
    return asyncio.run(_host(plan, planned))


async def _host(plan: dict[str, Any], plan_text: str) -> int:
    hosted, stop = _native.HostLoop(plan_text), asyncio.Event()
    _listen_for_signals(hosted, stop)
    found, given = await _load_providers(plan["providers"])
    refused = _native.host_check_module(plan_text, json.dumps(found))
    opened = await _native.host_open(plan_text) if refused is None else refused
    if isinstance(opened, int):
        return opened  # refused or failed, and printed by the command crate
    store = (SqliteSandboxInstanceStore if plan["store"]["kind"] == "sqlite" else PostgresSandboxInstanceStore)(opened)
    try:
        try:  # --docker, --local, --e2b, ... built natively as the binary builds them (no credential crosses)
            providers: list[object] = [managed_from_native(built) for built in _native.host_managed_providers(plan_text)]
            providers += [hosted_from_native(built) for built in _native.host_hosted_providers(plan_text)] + given
        except Exception as error:  # noqa: BLE001 - as the binary: the provider is unavailable
            return _native.host_fail(plan["command"], plan["json"], "unavailable", "provider", str(error))
        options: dict[str, Any] = json.loads(_native.respell_options("reconcile", plan_text))
        step, value = hosted.start(_now())
        while step != "exit":
            if step == "pass":
                try:
                    report = await reconcile(providers=providers, instances=store, stop=stop, **options)  # type: ignore[arg-type]
                except Exception as error:  # noqa: BLE001 - a pass that could not finish: the loop words it
                    refused_option = isinstance(error, (TypeError, ValueError))
                    kind = "store" if isinstance(error, SandboxStoreError) else "option" if refused_option else "other"
                    step, value = hosted.failed(kind, _describe(error) if kind == "other" else str(error), _now())
                else:
                    step, value = hosted.passed(json.dumps(report.to_dict()), _now())
            else:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), max(0, value - _now()) / 1000)
                step, value = hosted.woke(_now())
        return int(value)
    finally:
        await store.close()


def _listen_for_signals(hosted: Any, stop: asyncio.Event) -> None:
    """The first SIGINT/SIGTERM stops the pass; at a second the loop answers the code to exit with."""
    def on_signal(name: str) -> None:
        code = hosted.signal(name)
        if code is not None:
            os._exit(code)
        stop.set()

    for name in ("SIGINT", "SIGTERM"):
        with contextlib.suppress(NotImplementedError, RuntimeError, AttributeError):  # Windows event loops
            asyncio.get_running_loop().add_signal_handler(getattr(signal, name), on_signal, name)


async def _load_providers(spec: str) -> tuple[dict[str, Any], list[object]]:
    """Resolves ``package.module:attribute`` (a list, or a zero-arg callable
    returning one) and describes what it found, each provider's attributes
    read once; the command crate checks it and words every refusal."""
    found: dict[str, Any] = {"host": "python", "named": spec, "problem": None, "providers": []}

    def problem(kind: str, **details: str) -> tuple[dict[str, Any], list[object]]:
        return {**found, "problem": {"kind": kind, **details}}, []

    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        return problem("bad-spec", shown=repr(spec))
    # Like `python -m`, and like npx resolving ./providers.mjs: the current directory first.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        value: Any = importlib.import_module(module_name)
    except Exception as error:  # noqa: BLE001 - whatever the module raises is reported
        name = error.name if isinstance(error, ModuleNotFoundError) else None  # the module itself (or a parent) is missing
        if name is not None and f"{module_name}.".startswith(f"{name}."):
            return problem("no-module", module=module_name)
        return problem("import-failed", module=module_name, error=_describe(error))
    try:
        for part in attribute.split("."):
            value = getattr(value, part)
    except AttributeError:
        return problem("no-attribute", module=module_name, attribute=attribute)
    called = not isinstance(value, (list, tuple)) and callable(value)
    if called:
        try:
            value = value()
            value = await value if inspect.isawaitable(value) else value
        except Exception as error:  # noqa: BLE001
            return problem("call-raised", error=_describe(error))
    if not isinstance(value, (list, tuple)):
        return problem("call-not-a-list" if called else "not-a-list", got=type(value).__name__)
    found["providers"] = [_seen(provider) for provider in value]
    return found, list(value)


def _seen(provider: object) -> dict[str, Any]:
    name, listing, owner = (getattr(provider, field, None) for field in ("name", "list", "owner"))
    named = isinstance(name, str) and name != ""
    shown = repr(name) if named else type(name).__name__
    return {"object": True, "name": name if named else None, "shown": shown, "destroy": callable(getattr(provider, "destroy", None)),
            "list": listing is None or callable(listing), "owner": owner is None or isinstance(owner, str)}


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__

