"""``RunloopSandboxClient``: the SDK's Runloop client, labelled, recorded and
destroyed honestly. Our labels go into ``RunloopSandboxClientOptions.metadata``
beneath the user's (Runloop keeps metadata on the devbox, and our
:class:`~sandbox_reclaim.RunloopProvider` keeps the devboxes whose metadata
names our owner); the session state's ``devbox_id`` is what our provider
destroys (``POST /v1/devboxes/{id}/shutdown``: Runloop never deletes). Our
provider uses the key and base URL the SDK's client resolved (its
``bearer_token`` / ``base_url`` arguments, else ``RUNLOOP_API_KEY`` /
``RUNLOOP_BASE_URL``), so both talk to the same place."""

from __future__ import annotations

from typing import Any

from agents.extensions.sandbox.runloop import sandbox as sdk

from .._protocols import SandboxProvider
from .._providers import RunloopProvider
from ._client import ReclaimingClient
from ._lifecycle import Reclaim, Vendor


def _provider(client: Any, owner: str, state: Any) -> SandboxProvider:
    api = getattr(getattr(client, "_sdk", None), "api", None)
    key = getattr(api, "bearer_token", None)
    base_url = getattr(api, "base_url", None)
    return RunloopProvider(
        owner=owner,
        api_key=key if isinstance(key, str) and key else None,
        api_url=str(base_url).rstrip("/") if base_url is not None else None,
    )


class RunloopSandboxClient(ReclaimingClient, sdk.RunloopSandboxClient):
    """:class:`agents.extensions.sandbox.runloop.RunloopSandboxClient`,
    reclaimed: takes ``instances=``, ``owner=`` and ``provider=`` besides the
    SDK's arguments (see :mod:`sandbox_reclaim.openai_agents`)."""

    _vendor = Vendor(backend_id="runloop", id_field="devbox_id", provider=_provider)

    def _labelled(self, options: Any) -> Any:
        # The SDK's client takes `options=None` (its defaults).
        if options is None:
            options = sdk.RunloopSandboxClientOptions()
        metadata = Reclaim.merged(options.metadata, self._reclaim.labels())
        return options.model_copy(update={"metadata": metadata})
