"""``BlaxelSandboxClient``: the SDK's Blaxel client, labelled, recorded and
destroyed honestly. Our labels go into ``BlaxelSandboxClientOptions.labels``
beneath the user's (Blaxel keeps them as ``metadata.labels``, and our
:class:`~sandbox_reclaim.BlaxelProvider` keeps the sandboxes whose labels name
our owner); the session state's ``sandbox_name`` is what our provider destroys
(``DELETE /v0/sandboxes/{name}``). The Blaxel SDK talks through its module
client (``blaxel.core.client.client``, set up from ``BL_API_KEY`` /
``BL_WORKSPACE`` / ``BL_ENV`` or ``bl login``): our provider takes the same
base URL, workspace and key (the SDK client's ``token`` first), so both talk
to the same place."""

from __future__ import annotations

import dataclasses
from typing import Any

from agents.extensions.sandbox.blaxel import sandbox as sdk

from .._protocols import SandboxProvider
from .._providers import BlaxelProvider
from ._client import ReclaimingClient
from ._lifecycle import Reclaim, Vendor


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _provider(client: Any, owner: str, state: Any) -> SandboxProvider:
    from blaxel.core.client import client as blaxel_client

    auth = getattr(blaxel_client, "_auth", None)
    credentials = getattr(auth, "credentials", None)
    return BlaxelProvider(
        owner=owner,
        api_key=_text(getattr(client, "_token", None)) or _text(getattr(credentials, "api_key", None)),
        workspace=_text(getattr(auth, "workspace_name", None)),
        api_url=_text(getattr(blaxel_client, "_base_url", None)),
    )


class BlaxelSandboxClient(ReclaimingClient, sdk.BlaxelSandboxClient):
    """:class:`agents.extensions.sandbox.blaxel.BlaxelSandboxClient`,
    reclaimed: takes ``instances=``, ``owner=`` and ``provider=`` besides the
    SDK's arguments (see :mod:`sandbox_reclaim.openai_agents`)."""

    _vendor = Vendor(backend_id="blaxel", id_field="sandbox_name", provider=_provider)

    def _labelled(self, options: Any) -> Any:
        labels = Reclaim.merged(options.labels, self._reclaim.labels())
        return dataclasses.replace(options, labels=labels)
