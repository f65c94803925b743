"""``E2BSandboxClient``: the SDK's E2B client, labelled, recorded and
destroyed honestly. Our labels go into ``E2BSandboxClientOptions.metadata``
beneath the user's (E2B keeps metadata on the sandbox, and our
:class:`~sandbox_reclaim.E2bProvider` lists by the owner key in it); the
session state's ``sandbox_id`` is what our provider destroys (``DELETE
/sandboxes/{id}``). The SDK's client takes no credentials: the E2B SDK reads
``E2B_API_KEY`` / ``E2B_API_URL`` / ``E2B_DOMAIN``, and so does our provider."""

from __future__ import annotations

from typing import Any

from agents.extensions.sandbox.e2b import sandbox as sdk

from .._protocols import SandboxProvider
from .._providers import E2bProvider
from ._client import ReclaimingClient
from ._lifecycle import Reclaim, Vendor


def _provider(client: Any, owner: str, state: Any) -> SandboxProvider:
    return E2bProvider(owner=owner)


class E2BSandboxClient(ReclaimingClient, sdk.E2BSandboxClient):
    """:class:`agents.extensions.sandbox.e2b.E2BSandboxClient`, reclaimed:
    takes ``instances=``, ``owner=`` and ``provider=`` besides the SDK's
    arguments (see :mod:`sandbox_reclaim.openai_agents`)."""

    _vendor = Vendor(backend_id="e2b", id_field="sandbox_id", provider=_provider)

    def _labelled(self, options: Any) -> Any:
        metadata = Reclaim.merged(options.metadata, self._reclaim.labels())
        return options.model_copy(update={"metadata": metadata})
