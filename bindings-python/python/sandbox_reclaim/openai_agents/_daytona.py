"""``DaytonaSandboxClient``: the SDK's Daytona client, labelled, recorded and
destroyed honestly. The SDK's options carry no labels, but Daytona's create
API takes them: ours go into the create parameters the SDK builds (for
``create`` and for the sandbox ``resume`` creates anew), beneath any already
there; the Daytona SDK then adds its own ``code-toolbox-language``. Our
:class:`~sandbox_reclaim.DaytonaProvider` lists by the owner label; the
session state's ``sandbox_id`` is what it destroys (``DELETE /sandbox/{id}``).
Our provider uses the key and API URL the SDK's ``AsyncDaytona`` resolved
(the client's ``api_key`` / ``api_url`` arguments, else ``DAYTONA_API_KEY`` /
``DAYTONA_API_URL``), so both talk to the same place."""

from __future__ import annotations

from typing import Any

from agents.extensions.sandbox.daytona import sandbox as sdk

from .._protocols import SandboxProvider
from .._providers import DaytonaProvider
from ._client import ReclaimingClient
from ._lifecycle import Reclaim, Vendor


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _provider(client: Any, owner: str, state: Any) -> SandboxProvider:
    daytona = getattr(client, "_daytona", None)
    return DaytonaProvider(
        owner=owner,
        api_key=_text(getattr(daytona, "_api_key", None)),
        api_url=_text(getattr(daytona, "_api_url", None)),
    )


class DaytonaSandboxClient(ReclaimingClient, sdk.DaytonaSandboxClient):
    """:class:`agents.extensions.sandbox.daytona.DaytonaSandboxClient`,
    reclaimed: takes ``instances=``, ``owner=`` and ``provider=`` besides the
    SDK's arguments (see :mod:`sandbox_reclaim.openai_agents`)."""

    _vendor = Vendor(backend_id="daytona", id_field="sandbox_id", provider=_provider)

    async def _build_create_params(self, **kwargs: Any) -> Any:
        params = await super()._build_create_params(**kwargs)
        params.labels = Reclaim.merged(params.labels, self._reclaim.labels())
        return params
