"""Drop-in sandbox clients for the OpenAI Agents SDK (``openai-agents``,
``agents.sandbox``): change the import, keep the code.

    # from agents.sandbox.sandboxes.docker import DockerSandboxClient
    from sandbox_reclaim.openai_agents import DockerSandboxClient

    client = DockerSandboxClient(docker.from_env(), instances=store, owner="my-app")

Each class here is a subclass, of the same name, of the SDK's client. Besides
the SDK's arguments it takes ``instances`` (any instance store; default: the
command's default SQLite store, so ``sandbox-reclaim reconcile`` sees the
records with no flag), ``owner`` (default ``DEFAULT_OWNER``) and ``provider``
(this project's provider that destroys by id; default: the vendor's, from
the vendor's own variables). It

* labels the sandbox for ``owner`` at create, beneath what the user set;
* records it (key: the SDK's session id) as soon as the backend id exists,
  and re-records it when ``resume`` replaces the sandbox;
* at teardown (the client's ``delete``, and the session's ``shutdown``, which
  ``async with session`` ends with) runs the SDK's own shutdown first, then
  destroys by id with the reference's rules: destroy before deleting the
  record, already gone is success, a failure kept in the leak ledger and
  logged through the SDK's logger (``openai.agents``) so ``retry_leaks`` /
  ``sandbox-reclaim reconcile`` finish it. With ``pause_on_exit`` the SDK
  keeps the sandbox on purpose: the record stays.

Everything else (snapshots, manifests, ``pause_on_exit``, exec) is the SDK's.
Supported SDK versions: :data:`SUPPORTED_SDK` (the SDK calls sandboxes beta;
another version warns at import). A class is imported on first use, so a
vendor's package is needed only for its client.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import warnings
from typing import TYPE_CHECKING, Any

SUPPORTED_SDK = (">=0.24.0", "<0.25")
"""The ``openai-agents`` versions these clients are tested with."""


def _check_sdk() -> None:
    try:
        version = importlib.metadata.version("openai-agents")
    except importlib.metadata.PackageNotFoundError:
        raise ImportError(
            "sandbox_reclaim.openai_agents needs the OpenAI Agents SDK: "
            'pip install "sandbox-reclaim[openai-agents]"'
        ) from None
    parts = tuple(int(part) if part.isdigit() else 0 for part in version.split(".")[:2])
    if parts != (0, 24):
        warnings.warn(
            f"sandbox_reclaim.openai_agents is tested with openai-agents {','.join(SUPPORTED_SDK)}; "
            f"{version} is installed (the SDK's sandboxes are beta: check what it changed)",
            stacklevel=3,
        )


_check_sdk()

# Each client's module: imported on first use (it imports the vendor's SDK module).
_MODULES = {
    "DockerSandboxClient": "._docker",
    "E2BSandboxClient": "._e2b",
    "ModalSandboxClient": "._modal",
    "DaytonaSandboxClient": "._daytona",
    "RunloopSandboxClient": "._runloop",
    "BlaxelSandboxClient": "._blaxel",
    "VercelSandboxClient": "._vercel",
}

__all__ = ["SUPPORTED_SDK", *_MODULES]

if TYPE_CHECKING:
    from ._blaxel import BlaxelSandboxClient as BlaxelSandboxClient
    from ._daytona import DaytonaSandboxClient as DaytonaSandboxClient
    from ._docker import DockerSandboxClient as DockerSandboxClient
    from ._e2b import E2BSandboxClient as E2BSandboxClient
    from ._modal import ModalSandboxClient as ModalSandboxClient
    from ._runloop import RunloopSandboxClient as RunloopSandboxClient
    from ._vercel import VercelSandboxClient as VercelSandboxClient


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
