"""The ``sandbox-reclaim`` console script: the operator command, exactly as
the Rust binary runs it (same output, exit codes and signals; see the
package README, "The sandbox-reclaim command").

Without ``--providers`` the native command runs the whole thing
(``_native.run_cli``, without the GIL; it listens for SIGINT/SIGTERM itself).
With ``--providers package.module:attribute`` (a list of providers, or a
zero-arg callable returning one) ``reconcile`` and ``orphans`` run on this
package's driver: the command resolves flags and config into a plan
(``_native.host_plan``), the pass runs here with those providers mixed with
``--docker``/``--local``, and ``_native.host_emit`` prints each report as the
binary prints it and answers the exit code.
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
from typing import Any, NoReturn, TextIO

from . import _native
from ._errors import SandboxStoreError
from ._flows import reconcile
from ._providers import DEFAULT_OWNER, DockerProvider, LocalProvider, hosted_from_native
from ._reports import ReconcileReport
from ._stores import PostgresSandboxInstanceStore, SqliteSandboxInstanceStore

EXIT_OK = 0

_UNUSED_IMAGE = "sandbox-reclaim/unused:latest"
"""Destroy and list never create a container, so the image is never pulled (as in the binary)."""


class Failure(Exception):
    """Why the command stops before a pass, printed by the command crate
    (``_native.host_fail``): ``usage`` (naming the flag), ``unavailable``
    (naming what) or ``failed``."""

    def __init__(self, kind: str, message: str, *, flag: str | None = None, what: str | None = None) -> None:
        self.kind = kind
        self.message = message
        self.subject = flag if kind == "usage" else what
        super().__init__(message)

    @classmethod
    def usage(cls, flag: str, message: str) -> Failure:
        return cls("usage", message, flag=flag)

    @classmethod
    def unavailable(cls, what: str, message: str) -> Failure:
        return cls("unavailable", message, what=what)


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """The console script: runs the command with ``argv`` (default
    ``sys.argv[1:]``) and exits with its code."""
    sys.exit(run(list(sys.argv[1:] if argv is None else argv)))


def run(args: list[str]) -> int:
    """Runs the command; answers its exit code."""
    planned = _native.host_plan(args)
    if isinstance(planned, tuple):
        code, message = planned
        _refused(code, message)
        return code
    plan: dict[str, Any] = json.loads(planned)
    if plan["providers"] is None:
        # The native command listens for SIGINT itself: leave it the default
        # disposition (Python's handler would raise KeyboardInterrupt after).
        if hasattr(signal, "SIGINT"):
            signal.signal(signal.SIGINT, signal.SIG_DFL)
        return _native.run_cli(plan["args"])
    return asyncio.run(_host(plan, planned))


def _write(stream: TextIO, text: str) -> None:
    """Writes and flushes ``text``; a closed pipe (``| head``) is ignored, as
    the binary ignores it."""
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        # Nothing more can be written; keep the interpreter's exit flush quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def _refused(code: int, message: str) -> None:
    """Prints a refused plan as the binary would: help on stdout, clap's own
    errors as clap prints them, the command's with its prefix."""
    if code == EXIT_OK:
        _write(sys.stdout, message + "\n")
        return
    clap = "\nUsage:" in message or "try '--help'" in message
    prefix = "" if clap or not message.startswith("error: ") else "sandbox-reclaim: "
    _write(sys.stderr, prefix + message + "\n")


def _fail(plan: dict[str, Any], failure: Failure) -> int:
    """Printed as the binary prints it; answers the exit code."""
    return _native.host_fail(plan["command"], plan["json"], failure.kind, failure.subject, failure.message)


# ---- the pass on this host's driver ----


async def _host(plan: dict[str, Any], plan_text: str) -> int:
    hosted = _native.HostLoop(plan_text)
    stop = asyncio.Event()
    _listen_for_signals(hosted, stop)
    try:
        given = await _load_providers(plan["providers"])
        opened = await _native.host_open(plan_text)
        if isinstance(opened, int):
            return opened  # printed by the command crate
        store = (SqliteSandboxInstanceStore if plan["store"]["kind"] == "sqlite" else PostgresSandboxInstanceStore)(opened)
        try:
            providers = _managed_providers(plan, plan_text) + given
            _check_names(plan, providers, len(providers) - len(given))
            return await _passes(plan_text, hosted, store, providers, stop)
        finally:
            await store.close()
    except Failure as failure:
        return _fail(plan, failure)


def _listen_for_signals(hosted: Any, stop: asyncio.Event) -> None:
    """SIGINT/SIGTERM go to the command's loop: the first stops the pass
    (nothing new starts, what runs settles up to its deadline and is written
    down); at a second the loop says why and answers the code to exit with."""
    loop = asyncio.get_running_loop()

    def on_signal(name: str) -> None:
        code = hosted.signal(name)
        if code is not None:
            os._exit(code)
        stop.set()

    for name in ("SIGINT", "SIGTERM"):
        number = getattr(signal, name, None)
        if number is None:
            continue
        try:
            loop.add_signal_handler(number, on_signal, name)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - Windows event loops
            pass


async def _load_providers(spec: str) -> list[object]:
    """The providers ``package.module:attribute`` names, checked: exit 2
    naming the module, the attribute or the provider's index when wrong."""
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise Failure.usage(
            "--providers",
            f"{spec!r} is not `package.module:attribute` (a list of providers, or a zero-arg callable returning one)",
        )
    # Like `python -m`, and like npx resolving ./providers.mjs: the current directory first.
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is not None and (module_name == error.name or module_name.startswith(error.name + ".")):
            raise Failure.usage(
                "--providers", f"no module named {module_name!r} (looked in the current directory and sys.path)"
            ) from None
        raise Failure.usage("--providers", f"importing {module_name!r} failed: {_describe(error)}") from None
    except Exception as error:  # noqa: BLE001 - whatever the module raises is reported
        raise Failure.usage("--providers", f"importing {module_name!r} failed: {_describe(error)}") from None
    value: Any = module
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise Failure.usage("--providers", f"module {module_name!r} has no attribute {attribute!r}") from None
    if not isinstance(value, (list, tuple)) and callable(value):
        try:
            value = value()
            if inspect.isawaitable(value):
                value = await value
        except Exception as error:  # noqa: BLE001
            raise Failure.usage("--providers", f"{spec}() raised {_describe(error)}") from None
        if not isinstance(value, (list, tuple)):
            raise Failure.usage("--providers", f"{spec}() must return a list of providers, got {type(value).__name__}")
    elif not isinstance(value, (list, tuple)):
        raise Failure.usage(
            "--providers",
            f"{spec} must be a list of providers (or a zero-arg callable returning one), got {type(value).__name__}",
        )
    providers = list(value)
    seen: dict[str, int] = {}
    for index, provider in enumerate(providers):
        name = getattr(provider, "name", None)
        if not isinstance(name, str) or not name:
            raise Failure.usage(
                "--providers", f"{spec}[{index}] has no `name` (a non-empty str), got {type(name).__name__}"
            )
        if not callable(getattr(provider, "destroy", None)):
            raise Failure.usage("--providers", f"{spec}[{index}] (provider {name!r}) has no `destroy` method")
        if name in seen:
            raise Failure.usage(
                "--providers", f"{spec}[{index}]: provider {name!r} is already {spec}[{seen[name]}]'s name"
            )
        seen[name] = index
    return providers


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _check_names(plan: dict[str, Any], providers: list[object], managed: int) -> None:
    """The module's providers must not reuse the names of the command's own
    (``--docker``, ``--local``, ``--e2b``, ...: records are routed by name);
    and some provider is needed."""
    flags = [flag for flag in ("--docker", "--local") if plan[flag[2:]] is not None]
    flags += [hosted["flag"] for hosted in plan["hosted"]]
    names: dict[str, str] = {}
    for index, provider in enumerate(providers):
        name: str = getattr(provider, "name")
        given = flags[index] if index < managed else f"{plan['providers']}[{index - managed}]"
        if name in names:
            raise Failure.usage("--providers", f"{given}: provider {name!r} is already the name of {names[name]}")
        names[name] = given
    if not providers:
        raise Failure.usage(
            "--providers", f"{plan['providers']} holds no provider, and none of --docker, --local, --e2b, --daytona, --vercel is given"
        )


def _managed_providers(plan: dict[str, Any], plan_text: str) -> list[object]:
    """``--docker``, ``--local``, ``--e2b``, ``--daytona``, ``--vercel`` as the
    binary builds them (in that order), under ``--owner``; the command crate
    already checked that they answer. The hosted ones are built natively from
    the flags, config and environment: no credential crosses to Python."""
    owner: str = plan["owner"] or DEFAULT_OWNER
    providers: list[object] = []
    try:
        if plan["docker"] is not None:
            docker = plan["docker"]
            providers.append(DockerProvider(image=_UNUSED_IMAGE, owner=owner, name=docker["name"], docker_host=docker["url"]))
        if plan["local"] is not None:
            providers.append(LocalProvider(base_dir=plan["local"]["baseDir"], owner=owner, name=plan["local"]["name"]))
        if plan["hosted"]:
            providers.extend(hosted_from_native(built) for built in _native.host_hosted_providers(plan_text))
    except Exception as error:  # noqa: BLE001 - as the binary: the provider is unavailable
        raise Failure.unavailable("provider", str(error)) from None
    return providers


async def _pass(plan_text: str, store: object, providers: list[object], stop: asyncio.Event) -> ReconcileReport:
    """One pass with every reconcile option the plan holds, as the core respells them."""
    options: dict[str, Any] = json.loads(_native.respell_options("reconcile", plan_text))
    return await reconcile(
        providers=providers,  # type: ignore[arg-type]  # checked by _load_providers and reconcile
        instances=store,  # type: ignore[arg-type]
        stop=stop,
        **options,
    )


def _now() -> int:
    return time.time_ns() // 1_000_000


async def _passes(plan_text: str, hosted: Any, store: object, providers: list[object], stop: asyncio.Event) -> int:
    """The command's loop decides each step (a pass, a sleep until a signal
    wakes it, the exit code) and prints every report and failure; this runs
    the passes and sleeps."""
    step, value = hosted.start(_now())
    while step != "exit":
        if step == "pass":
            try:
                report = await _pass(plan_text, store, providers, stop)
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
