"""``ModalSandboxClient``: the SDK's Modal client, labelled, recorded and
destroyed honestly. Modal's ``Sandbox.create`` takes no tags: ours are set
as soon as the sandbox exists (``Sandbox.set_tags``, after the SDK's
``create`` makes it, and again after ``start`` if that replaced it), beneath
the tags it already has (``set_tags`` replaces the whole set); our
:class:`~sandbox_reclaim.ModalProvider` lists by the owner tag. The session
state's ``sandbox_id`` is what our provider terminates. The Modal SDK reads
``MODAL_TOKEN_ID`` / ``MODAL_TOKEN_SECRET`` / ``MODAL_SERVER_URL`` (or its
profile): our provider takes the same from the Modal SDK's resolved config."""

from __future__ import annotations

from typing import Any

from agents.extensions.sandbox.modal import sandbox as sdk

from .._protocols import SandboxProvider
from ._client import ReclaimingClient
from ._lifecycle import Reclaim, Vendor


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _provider(client: Any, owner: str, state: Any) -> SandboxProvider:
    from modal.config import config as modal_config

    from .._providers import ModalProvider

    provider: SandboxProvider = ModalProvider(
        owner=owner,
        token_id=_text(modal_config.get("token_id")),
        token_secret=_text(modal_config.get("token_secret")),
        # Modal 1.6 may hold several server URLs, comma-separated: the first is its primary.
        api_url=_text((_text(modal_config.get("server_url")) or "").split(",")[0].strip()),
    )
    return provider


class ModalSandboxClient(ReclaimingClient, sdk.ModalSandboxClient):
    """:class:`agents.extensions.sandbox.modal.ModalSandboxClient`, reclaimed:
    takes ``instances=``, ``owner=`` and ``provider=`` besides the SDK's
    arguments (see :mod:`sandbox_reclaim.openai_agents`)."""

    _vendor = Vendor(backend_id="modal", id_field="sandbox_id", provider=_provider)

    async def _label_existing(self, session: Any) -> None:
        sandbox = getattr(session._inner, "_sandbox", None)
        if sandbox is None:
            return
        current = await sandbox.get_tags.aio()
        await sandbox.set_tags.aio(Reclaim.merged(current, self._reclaim.labels()))
