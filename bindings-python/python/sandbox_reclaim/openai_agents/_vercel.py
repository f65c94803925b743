"""``VercelSandboxClient``: the SDK's Vercel client, labelled, recorded and
destroyed honestly. The SDK's options carry no tags and its create passes
none, so ours are set on the sandbox as soon as it exists (the Vercel SDK's
``Sandbox.update``, ``PATCH /v2/sandboxes/{name}``), beneath the tags it
already has; our :class:`~sandbox_reclaim.VercelProvider` lists by the owner
tag. Vercel names its sandboxes: the session state's ``sandbox_name`` is what
our provider destroys (``DELETE /v2/sandboxes/{name}``; the SDK's own
teardown only stops the execution session, which leaves the named sandbox,
and its bill for snapshots, behind). Our provider uses the token, team and
project the SDK resolves (its client's arguments, else the Vercel OIDC
variables) and the base URL the SDK's sandbox client talks to."""

from __future__ import annotations

from typing import Any

from agents.extensions.sandbox.vercel import sandbox as sdk

from .._protocols import SandboxProvider
from .._providers import VercelProvider
from ._client import ReclaimingClient
from ._lifecycle import Reclaim, Vendor


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _provider(client: Any, owner: str, state: Any) -> SandboxProvider:
    from vercel.oidc.credentials import get_credentials
    from vercel.sandbox._internal import options as vercel_options

    credentials = get_credentials(
        token=_text(getattr(client, "_token", None)),
        project_id=_text(getattr(state, "project_id", None)) or _text(getattr(client, "_project_id", None)),
        team_id=_text(getattr(state, "team_id", None)) or _text(getattr(client, "_team_id", None)),
    )
    # The SDK's sandbox client is built with the default base URL (the agents
    # SDK passes none): the same one for ours.
    base_url = _text(getattr(vercel_options, "DEFAULT_SANDBOX_API_BASE_URL", None))
    return VercelProvider(
        owner=owner,
        api_key=credentials.token,
        team_id=credentials.team_id,
        project_id=credentials.project_id,
        api_url=base_url,
    )


class VercelSandboxClient(ReclaimingClient, sdk.VercelSandboxClient):
    """:class:`agents.extensions.sandbox.vercel.VercelSandboxClient`,
    reclaimed: takes ``instances=``, ``owner=`` and ``provider=`` besides the
    SDK's arguments (see :mod:`sandbox_reclaim.openai_agents`)."""

    _vendor = Vendor(backend_id="vercel", id_field="sandbox_name", provider=_provider)

    async def _label_existing(self, session: Any) -> None:
        # The SDK's ProviderSandbox wraps the Vercel SDK's own `Sandbox` handle.
        handle = getattr(getattr(session._inner, "_sandbox", None), "_sandbox", None)
        if handle is None:
            return
        tags = Reclaim.merged(handle.tags, self._reclaim.labels())
        await handle.update(tags=tags)
