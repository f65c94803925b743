"""``DockerSandboxClient``: the SDK's Docker client, labelled, recorded and
destroyed honestly. The SDK's client sets no labels of its own: ours go into
``DockerSandboxClientOptions.labels`` beneath the user's, and our
:class:`~sandbox_reclaim.DockerProvider` (which refuses a container without
our owner label) destroys it by id on the same engine."""

from __future__ import annotations

import os
from typing import Any

from agents.sandbox.sandboxes import docker as sdk

from .._protocols import SandboxProvider
from .._providers import DockerProvider
from ._client import ReclaimingClient
from ._lifecycle import Reclaim, Vendor


def _engine_url(client: Any) -> str | None:
    """The engine the SDK's ``docker.DockerClient`` talks to, so our provider
    destroys on the same one (``None``: ``DOCKER_HOST``, else the local socket)."""
    api = getattr(getattr(client, "docker_client", None), "api", None)
    base_url = getattr(api, "base_url", None)
    if not isinstance(base_url, str):
        return None
    if base_url.startswith("http+docker://"):
        # docker-py's unix-socket adapter keeps the path it was given.
        socket_path = getattr(getattr(api, "_custom_adapter", None), "socket_path", None)
        return f"unix://{socket_path}" if isinstance(socket_path, str) else None
    return base_url if base_url.startswith(("http://", "https://")) else None


def _provider(client: Any, owner: str, state: Any) -> SandboxProvider:
    # The image is what our provider would create with; a destroy never uses it.
    image = getattr(state, "image", None) or "unused"
    url = _engine_url(client) or os.environ.get("DOCKER_HOST") or None
    return DockerProvider(image=image, owner=owner, docker_host=url) if url else DockerProvider(image=image, owner=owner)


class DockerSandboxClient(ReclaimingClient, sdk.DockerSandboxClient):
    """:class:`agents.sandbox.sandboxes.docker.DockerSandboxClient`, reclaimed:
    takes ``instances=``, ``owner=`` and ``provider=`` besides the SDK's
    arguments (see :mod:`sandbox_reclaim.openai_agents`)."""

    _vendor = Vendor(backend_id="docker", id_field="container_id", provider=_provider)

    def _labelled(self, options: Any) -> Any:
        labels = Reclaim.merged(options.labels, self._reclaim.labels())
        return options.model_copy(update={"labels": labels})
