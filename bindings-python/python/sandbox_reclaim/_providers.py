"""Providers on the Rust core: the managed ``DockerProvider`` (containers
through the Docker Engine API, Docker or podman) and ``LocalProvider`` (a
private directory plus a supervised process tree, in namespaces where
possible), and one hosted provider per vendor of the core's table
(``E2bProvider``, ``SpritesProvider``, ...: destroy and list only; the
vendor's SDK creates).

Each is a ``SandboxProvider`` (``name`` + ``async destroy``) that also
creates, lists and runs commands in its sandboxes, and lists them for
:func:`reconcile`'s orphan sweep (``list_sandboxes``, under its ``owner``). Sandboxes carry an owner
label; ``destroy`` and ``exec`` refuse one of another owner with
:class:`SandboxNotOwnedError`, and ``destroy`` of a sandbox already gone
succeeds.
"""

from __future__ import annotations

import builtins
import json
import os
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Literal, TypedDict, overload

from . import _native
from ._errors import SandboxProviderError
from ._options import DEFAULT, options_json
from ._records import ExecResult, ListedSandbox, SandboxHandle

DEFAULT_OWNER: str = _native.protocol()["default_owner"]
"""The owner namespace both providers use unless told otherwise."""

Isolation = Literal["auto", "namespaces", "process-group"]


def _text(field: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"`{field}` must be a str, got {type(value).__name__}")
    return value


def _given(field: str, value: object) -> str | None:
    """A string argument, or ``None`` for one left at :data:`DEFAULT` (the core's default)."""
    return None if value is DEFAULT else _text(field, value)


def _argv(field: str, value: object) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"`{field}` must be a sequence of str (an argv), got {type(value).__name__}")
    for item in value:
        _text(field, item)
    return list(value)


def _labels(value: object) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"`labels` must be a mapping of str to str, got {type(value).__name__}")
    for name, text in value.items():
        _text("labels", name)
        _text("labels", text)
    return dict(value)


class _ManagedProvider:
    __slots__ = ("_native",)
    _native: _native.ManagedProvider

    @property
    def name(self) -> str:
        """The provider name instance records carry in ``provider``."""
        return self._native.name

    @property
    def owner(self) -> str:
        """The owner namespace its sandboxes carry (:func:`reconcile` sweeps only those)."""
        return self._native.owner

    async def destroy(self, sandbox_id: str) -> None:
        """Destroys the sandbox (already gone is success). Raises
        :class:`SandboxNotOwnedError` for a sandbox of another owner and
        :class:`SandboxProviderError` when the backend fails."""
        await self._native.destroy(_text("sandbox_id", sandbox_id))

    async def create(self, key: str, labels: Mapping[str, str] | None = None) -> SandboxHandle:
        """Creates a running sandbox for ``key``, or returns the one this
        provider already has for it (a retried create never starts two).
        ``labels`` are extra labels; the ``io.sandbox-reclaim.`` prefix is reserved."""
        found_key, sandbox_id, created_at = await self._native.create(_text("key", key), _labels(labels))
        return SandboxHandle(found_key, sandbox_id, created_at)

    async def list(self) -> list[SandboxHandle]:
        """The sandboxes this provider's owner namespace holds, oldest first."""
        return [SandboxHandle(*handle) for handle in await self._native.list()]

    async def list_sandboxes(self) -> builtins.list[ListedSandbox]:
        """Every sandbox of this owner namespace, for :func:`reconcile`'s orphan
        sweep, ordered by id. Unlike :meth:`list`, nothing unreadable is
        dropped: a sandbox whose creation time, key or owner cannot be read
        is listed with those fields ``None``, so the sweep fails closed."""
        return [ListedSandbox(*sandbox) for sandbox in await self._native.list_sandboxes()]

    async def exec(self, sandbox_id: str, argv: Sequence[str]) -> ExecResult:
        """Runs ``argv`` in the sandbox and waits for it to finish."""
        command = _argv("argv", argv)
        assert command is not None
        stdout, stderr, exit_code = await self._native.exec(_text("sandbox_id", sandbox_id), command)
        return ExecResult(stdout, stderr, exit_code)


class DockerProvider(_ManagedProvider):
    """Sandboxes as containers on a Docker Engine API (Docker or podman).

    ``image`` must already be present on the engine; ``keep_alive`` is the
    command that keeps a container running (default ``sleep infinity``);
    ``network_mode`` defaults to ``"none"``; ``docker_host`` defaults to
    ``DOCKER_HOST``, else the local socket; ``owner`` to :data:`DEFAULT_OWNER`;
    ``name`` to ``"docker"`` (the core's defaults). Connecting is lazy.
    """

    __slots__ = ()

    def __init__(
        self,
        *,
        image: str,
        keep_alive: Sequence[str] | None = None,
        network_mode: str = DEFAULT,
        cpus: float | None = None,
        memory_bytes: int | None = None,
        owner: str = DEFAULT,
        name: str = DEFAULT,
        docker_host: str | None = None,
    ) -> None:
        if cpus is not None and (isinstance(cpus, bool) or not isinstance(cpus, (int, float))):
            raise TypeError(f"`cpus` must be a number or None, got {type(cpus).__name__}")
        if memory_bytes is not None and (isinstance(memory_bytes, bool) or not isinstance(memory_bytes, int)):
            raise TypeError(f"`memory_bytes` must be an int or None, got {type(memory_bytes).__name__}")
        if memory_bytes is not None and not -(2**63) <= memory_bytes < 2**63:
            raise ValueError("`memory_bytes` is out of range")
        self._native = _native.docker_provider(
            _text("image", image),
            _argv("keep_alive", keep_alive),
            _given("network_mode", network_mode),
            None if cpus is None else float(cpus),
            memory_bytes,
            _given("owner", owner),
            _given("name", name),
            None if docker_host is None else _text("docker_host", docker_host),
        )

    def __repr__(self) -> str:
        return f"<DockerProvider name={self.name!r}>"


class LocalProvider(_ManagedProvider):
    """Sandboxes as directories under ``base_dir`` plus supervised process
    trees: fresh PID, mount, network (loopback only), IPC and UTS namespaces
    where the kernel allows, else a process group (``isolation="auto"``, the
    default; ``"namespaces"`` or ``"process-group"`` insist). ``owner``
    defaults to :data:`DEFAULT_OWNER`, ``name`` to ``"local"`` (the core's defaults).
    """

    __slots__ = ()

    def __init__(
        self,
        *,
        base_dir: str | os.PathLike[str],
        owner: str = DEFAULT,
        keep_alive: Sequence[str] | None = None,
        isolation: Isolation = DEFAULT,
        name: str = DEFAULT,
    ) -> None:
        if not hasattr(_native, "local_provider"):
            # Namespaces and process groups: the native module has it on Unix only.
            raise SandboxProviderError(f"LocalProvider needs a Unix host; this build is for {sys.platform}")
        if not isinstance(base_dir, (str, os.PathLike)):
            raise TypeError(f"`base_dir` must be a str or os.PathLike, got {type(base_dir).__name__}")
        directory = os.fspath(base_dir)
        if not isinstance(directory, str):
            raise TypeError("`base_dir` must be a text path, not bytes")
        self._native = _native.local_provider(
            directory,
            _given("owner", owner),
            _argv("keep_alive", keep_alive),
            _given("isolation", isolation),
            _given("name", name),
        )

    def isolation(self) -> Literal["namespaces", "process-group"]:
        """The isolation new sandboxes get."""
        found = self._native.isolation()
        if found == "namespaces":
            return "namespaces"
        assert found == "process-group", found
        return "process-group"

    def __repr__(self) -> str:
        return f"<LocalProvider name={self.name!r} isolation={self.isolation()!r}>"


def _hosted(vendor: str, arguments: Mapping[str, object]) -> _native.HostedProvider:
    """The native provider ``arguments`` (the constructor's) configure: the
    core names the options ``vendor`` takes, checks each, and applies its
    defaults to those left at :data:`DEFAULT`."""
    return _native.hosted_provider(vendor, options_json(_native.hosted_option_names(vendor), arguments))


class _HostedProvider:
    """What the hosted providers share: ``name``, ``owner``, an honest
    ``destroy`` (the vendor's permanent delete; already gone is success; any
    other failure raises :class:`SandboxProviderError`, so a reclaim reports
    ``destroy-failed`` and the ledger retries it; cancelling it, as a
    destroy's deadline does, drops the HTTP request), ``list_sandboxes`` of
    every page under ``owner`` for :func:`reconcile`, and ``check_access``.
    The vendor's own SDK creates sandboxes: pass it
    :func:`owner_labels` as labels / metadata / tags. Credentials are never
    printed; nothing is sent until a call.

    ``sweep_unlabelled=True`` (default ``False``) lists every sandbox of the
    account instead of only those under ``owner``, and reports one without
    our owner label with owner ``""`` (unlabelled), so :func:`reconcile`
    also sweeps what was created without labels (TanStack's providers) when
    the store's registry names it; an unlabelled sandbox the registry does
    not name, or one labelled for another owner, is never touched.

    ``owner`` defaults to :data:`DEFAULT_OWNER`; ``request_timeout``, the
    longest one HTTP request may take, to 30 seconds (at most a day);
    ``max_listing_pages`` (default 10,000; at most 1,000,000) and
    ``max_listing_items`` (default 1,000,000; at most 100,000,000) bound one
    listing: past either it fails closed (the sweep is ``unavailable``,
    naming the ceiling), whatever cursors the vendor offers. The
    core checks and defaults every option (a wrong type is a ``TypeError``,
    a value out of range a ``ValueError``, naming the argument)."""

    __slots__ = ("_native",)
    _native: _native.HostedProvider

    @property
    def name(self) -> str:
        """The provider name instance records carry in ``provider``."""
        return self._native.name

    @property
    def owner(self) -> str:
        """The owner namespace the listing is filtered by."""
        return self._native.owner

    @property
    def api_url(self) -> str:
        """The API base URL in use."""
        return self._native.api_url

    async def destroy(self, sandbox_id: str) -> None:
        """Destroys the sandbox for good (already gone is success)."""
        await self._native.destroy(_text("sandbox_id", sandbox_id))

    async def list_sandboxes(self) -> builtins.list[ListedSandbox]:
        """Every sandbox under ``owner`` (with ``sweep_unlabelled``, every
        sandbox, unlabelled ones with owner ``""``), for the orphan sweep."""
        return [ListedSandbox(*sandbox) for sandbox in await self._native.list_sandboxes()]

    async def check_access(self) -> None:
        """One small authenticated call: raises :class:`SandboxProviderError`
        naming the variable to set when the vendor refuses the credential."""
        await self._native.check_access()

    @property
    def lookup(self) -> Callable[[Sequence[str]], Awaitable[builtins.list[ListedSandbox]]] | None:
        """``lookup(ids)``: the sandboxes of ``ids`` that still exist, read by
        id (the vendor's get), for :func:`reconcile` to judge what the store's
        registry names and the listing did not show. ``None`` when the
        listing takes every sandbox (``sweep_unlabelled``)."""
        return self._lookup if self._native.can_lookup else None

    async def _lookup(self, ids: Sequence[str]) -> builtins.list[ListedSandbox]:
        if isinstance(ids, str) or not isinstance(ids, Sequence):
            raise TypeError(f"`ids` must be a sequence of str, got {type(ids).__name__}")
        checked = [_text(f"ids[{index}]", sandbox_id) for index, sandbox_id in enumerate(ids)]
        return [ListedSandbox(*sandbox) for sandbox in await self._native.lookup(checked)]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r} api_url={self.api_url!r}>"


# Every hosted vendor: its row, in its module of the core (core/src/providers/hosted/vendors.rs lists them).
# ---- generated by scripts/gen_declarations.py from the Rust types (proto/src): do not edit [hosted vendors] ----
class E2bProvider(_HostedProvider):
    """E2B (name ``e2b``): destroy is DELETE /sandboxes/{id}; gone or going (never destroyed again): 404; a
    listed sandbox is running or paused (both bill). Key: ``E2B_API_KEY``; API: E2B_API_URL, else
    https://api.$E2B_DOMAIN, else https://api.e2b.app. Pages of 100 (at most 100); the vendor filters the
    listing by the owner label.
    """

    __slots__ = ()

    def __init__(
        self,
        *,
        name: str = DEFAULT,
        owner: str = DEFAULT,
        api_key: str | None = None,
        api_url: str | None = None,
        page_size: int = DEFAULT,
        request_timeout: float = DEFAULT,
        sweep_unlabelled: bool = DEFAULT,
        max_listing_pages: int = DEFAULT,
        max_listing_items: int = DEFAULT,
    ) -> None:
        self._native = _hosted(
            "e2b",
            {
                "name": name,
                "owner": owner,
                "api_key": api_key,
                "api_url": api_url,
                "page_size": page_size,
                "request_timeout": request_timeout,
                "sweep_unlabelled": sweep_unlabelled,
                "max_listing_pages": max_listing_pages,
                "max_listing_items": max_listing_items,
            },
        )


class DaytonaProvider(_HostedProvider):
    """Daytona (name ``daytona``): destroy is DELETE /sandbox/{id}; gone or going (never destroyed again): 404;
    ``destroying`` or desiredState ``destroyed`` is deleting. Key: ``DAYTONA_API_KEY``; API: DAYTONA_API_URL,
    else https://app.daytona.io/api. Pages of 100 (at most 200); the vendor filters the listing by the owner
    label.
    """

    __slots__ = ()

    def __init__(
        self,
        *,
        name: str = DEFAULT,
        owner: str = DEFAULT,
        api_key: str | None = None,
        api_url: str | None = None,
        page_size: int = DEFAULT,
        request_timeout: float = DEFAULT,
        sweep_unlabelled: bool = DEFAULT,
        max_listing_pages: int = DEFAULT,
        max_listing_items: int = DEFAULT,
    ) -> None:
        self._native = _hosted(
            "daytona",
            {
                "name": name,
                "owner": owner,
                "api_key": api_key,
                "api_url": api_url,
                "page_size": page_size,
                "request_timeout": request_timeout,
                "sweep_unlabelled": sweep_unlabelled,
                "max_listing_pages": max_listing_pages,
                "max_listing_items": max_listing_items,
            },
        )


class VercelProvider(_HostedProvider):
    """Vercel (name ``vercel``): destroy is DELETE /v2/sandboxes/{name} (not stop: a stopped sandbox bills); gone
    or going (never destroyed again): 404; every listed status still bills. Key: ``VERCEL_TOKEN``; API:
    https://api.vercel.com. Pages of 50 (at most 50); the vendor filters the listing by the owner label.
    """

    __slots__ = ()

    def __init__(
        self,
        *,
        name: str = DEFAULT,
        owner: str = DEFAULT,
        api_key: str | None = None,
        team_id: str | None = None,
        project_id: str | None = None,
        api_url: str | None = None,
        page_size: int = DEFAULT,
        request_timeout: float = DEFAULT,
        sweep_unlabelled: bool = DEFAULT,
        max_listing_pages: int = DEFAULT,
        max_listing_items: int = DEFAULT,
    ) -> None:
        self._native = _hosted(
            "vercel",
            {
                "name": name,
                "owner": owner,
                "api_key": api_key,
                "team_id": team_id,
                "project_id": project_id,
                "api_url": api_url,
                "page_size": page_size,
                "request_timeout": request_timeout,
                "sweep_unlabelled": sweep_unlabelled,
                "max_listing_pages": max_listing_pages,
                "max_listing_items": max_listing_items,
            },
        )


class SpritesProvider(_HostedProvider):
    """Sprites (name ``sprites``): destroy is DELETE /v1/sprites/{name}; gone or going (never destroyed again):
    404 (no deleting status: a deleted sprite may stay listed a while). Key: ``SPRITES_API_KEY``, else
    ``SPRITE_TOKEN``; API: SPRITES_API_URL, else https://api.sprites.dev. Pages of 50 (at most 50); the vendor
    cannot filter by label, so the engine lists every sandbox and keeps those labelled for ``owner``.
    """

    __slots__ = ()

    def __init__(
        self,
        *,
        name: str = DEFAULT,
        owner: str = DEFAULT,
        api_key: str | None = None,
        api_url: str | None = None,
        page_size: int = DEFAULT,
        request_timeout: float = DEFAULT,
        sweep_unlabelled: bool = DEFAULT,
        max_listing_pages: int = DEFAULT,
        max_listing_items: int = DEFAULT,
    ) -> None:
        self._native = _hosted(
            "sprites",
            {
                "name": name,
                "owner": owner,
                "api_key": api_key,
                "api_url": api_url,
                "page_size": page_size,
                "request_timeout": request_timeout,
                "sweep_unlabelled": sweep_unlabelled,
                "max_listing_pages": max_listing_pages,
                "max_listing_items": max_listing_items,
            },
        )


class RunloopProvider(_HostedProvider):
    """Runloop (name ``runloop``): destroy is POST /v1/devboxes/{id}/shutdown (Runloop never deletes a devbox);
    gone or going (never destroyed again): ``shutdown`` and ``failure`` (listed forever, never billed);
    ``suspended`` still bills. Key: ``RUNLOOP_API_KEY``; API: RUNLOOP_BASE_URL, else https://api.runloop.ai.
    Pages of 100 (at most 5000); the vendor cannot filter by label, so the engine lists every sandbox and
    keeps those labelled for ``owner``.
    """

    __slots__ = ()

    def __init__(
        self,
        *,
        name: str = DEFAULT,
        owner: str = DEFAULT,
        api_key: str | None = None,
        api_url: str | None = None,
        page_size: int = DEFAULT,
        request_timeout: float = DEFAULT,
        sweep_unlabelled: bool = DEFAULT,
        max_listing_pages: int = DEFAULT,
        max_listing_items: int = DEFAULT,
    ) -> None:
        self._native = _hosted(
            "runloop",
            {
                "name": name,
                "owner": owner,
                "api_key": api_key,
                "api_url": api_url,
                "page_size": page_size,
                "request_timeout": request_timeout,
                "sweep_unlabelled": sweep_unlabelled,
                "max_listing_pages": max_listing_pages,
                "max_listing_items": max_listing_items,
            },
        )


class BlaxelProvider(_HostedProvider):
    """Blaxel (name ``blaxel``): destroy is DELETE /v0/sandboxes/{name}; gone or going (never destroyed again):
    404 and ``TERMINATED`` (a tombstone GET still reads); ``DELETING`` is deleting. Key: ``BL_API_KEY``; API:
    BL_API_URL, else https://api.blaxel.ai/v0 (https://api.blaxel.dev/v0 when BL_ENV=dev). Pages of 100 (at
    most 200); the vendor cannot filter by label, so the engine lists every sandbox and keeps those labelled
    for ``owner``.
    """

    __slots__ = ()

    def __init__(
        self,
        *,
        name: str = DEFAULT,
        owner: str = DEFAULT,
        api_key: str | None = None,
        workspace: str | None = None,
        api_url: str | None = None,
        page_size: int = DEFAULT,
        request_timeout: float = DEFAULT,
        sweep_unlabelled: bool = DEFAULT,
        max_listing_pages: int = DEFAULT,
        max_listing_items: int = DEFAULT,
    ) -> None:
        self._native = _hosted(
            "blaxel",
            {
                "name": name,
                "owner": owner,
                "api_key": api_key,
                "workspace": workspace,
                "api_url": api_url,
                "page_size": page_size,
                "request_timeout": request_timeout,
                "sweep_unlabelled": sweep_unlabelled,
                "max_listing_pages": max_listing_pages,
                "max_listing_items": max_listing_items,
            },
        )


class ModalProvider(_HostedProvider):
    """Modal (name ``modal``): destroy is SandboxTerminate, or SandboxTerminateV2 for a V2 id (listed by
    SandboxListV2 within ``appId``); gone or going (never destroyed again): NOT_FOUND and a finished sandbox
    (its terminate is success). Key: ``MODAL_TOKEN_ID`` + ``MODAL_TOKEN_SECRET``; API: MODAL_SERVER_URL, else
    https://api.modal.com (gRPC). Pages sized by the vendor (no page size); the vendor filters the listing by
    the owner label.
    """

    __slots__ = ()

    def __init__(
        self,
        *,
        name: str = DEFAULT,
        owner: str = DEFAULT,
        token_id: str | None = None,
        token_secret: str | None = None,
        app_id: str | None = None,
        environment: str | None = None,
        api_url: str | None = None,
        request_timeout: float = DEFAULT,
        sweep_unlabelled: bool = DEFAULT,
        max_listing_pages: int = DEFAULT,
        max_listing_items: int = DEFAULT,
    ) -> None:
        self._native = _hosted(
            "modal",
            {
                "name": name,
                "owner": owner,
                "token_id": token_id,
                "token_secret": token_secret,
                "app_id": app_id,
                "environment": environment,
                "api_url": api_url,
                "request_timeout": request_timeout,
                "sweep_unlabelled": sweep_unlabelled,
                "max_listing_pages": max_listing_pages,
                "max_listing_items": max_listing_items,
            },
        )


class KubernetesProvider(_HostedProvider):
    """Kubernetes (name ``kubernetes``): destroy is DELETE of the SandboxClaim (or Sandbox, Pod)
    ``{namespace}_{name}``, propagationPolicy Foreground; gone or going (never destroyed again): 404; an
    object with a deletionTimestamp is deleting. Key: ``KUBECONFIG``; API: the kubeconfig context's server
    (KUBECONFIG, else ~/.kube/config), else in-cluster. Pages of 100 (at most 500); the vendor filters the
    listing by the owner label.
    """

    __slots__ = ()

    def __init__(
        self,
        *,
        name: str = DEFAULT,
        owner: str = DEFAULT,
        kubeconfig: str | None = None,
        context: str | None = None,
        namespace: str | None = None,
        kind: str | None = None,
        api_url: str | None = None,
        page_size: int = DEFAULT,
        request_timeout: float = DEFAULT,
        sweep_unlabelled: bool = DEFAULT,
        max_listing_pages: int = DEFAULT,
        max_listing_items: int = DEFAULT,
    ) -> None:
        self._native = _hosted(
            "kubernetes",
            {
                "name": name,
                "owner": owner,
                "kubeconfig": kubeconfig,
                "context": context,
                "namespace": namespace,
                "kind": kind,
                "api_url": api_url,
                "page_size": page_size,
                "request_timeout": request_timeout,
                "sweep_unlabelled": sweep_unlabelled,
                "max_listing_pages": max_listing_pages,
                "max_listing_items": max_listing_items,
            },
        )


class UpstashBoxProvider(_HostedProvider):
    """Upstash Box (name ``upstash-box``): destroy is DELETE /v2/box/{id}; gone or going (never destroyed again):
    404 and ``deleted`` (a deleted box still reads by GET). Key: ``UPSTASH_BOX_API_KEY``; API:
    UPSTASH_BOX_BASE_URL, else https://us-east-1.box.upstash.com. Pages sized by the vendor (no page size);
    the vendor filters the listing by the owner label.
    """

    __slots__ = ()

    def __init__(
        self,
        *,
        name: str = DEFAULT,
        owner: str = DEFAULT,
        api_key: str | None = None,
        api_url: str | None = None,
        request_timeout: float = DEFAULT,
        sweep_unlabelled: bool = DEFAULT,
        max_listing_pages: int = DEFAULT,
        max_listing_items: int = DEFAULT,
    ) -> None:
        self._native = _hosted(
            "upstash-box",
            {
                "name": name,
                "owner": owner,
                "api_key": api_key,
                "api_url": api_url,
                "request_timeout": request_timeout,
                "sweep_unlabelled": sweep_unlabelled,
                "max_listing_pages": max_listing_pages,
                "max_listing_items": max_listing_items,
            },
        )


class BoxdProvider(_HostedProvider):
    """boxd (name ``boxd``): destroy is DestroyVm (listed by ListVms within ``org``); gone or going (never
    destroyed again): NOT_FOUND and status ``destroyed``. Key: ``BOXD_TOKEN``, else ``BOXD_API_KEY``; API:
    BOXD_BASE_URL, else https://boxd.sh:9443 (gRPC). Pages sized by the vendor (no page size); the vendor
    filters the listing by the owner label.
    """

    __slots__ = ()

    def __init__(
        self,
        *,
        name: str = DEFAULT,
        owner: str = DEFAULT,
        api_key: str | None = None,
        org: str | None = None,
        api_url: str | None = None,
        request_timeout: float = DEFAULT,
        sweep_unlabelled: bool = DEFAULT,
        max_listing_pages: int = DEFAULT,
        max_listing_items: int = DEFAULT,
    ) -> None:
        self._native = _hosted(
            "boxd",
            {
                "name": name,
                "owner": owner,
                "api_key": api_key,
                "org": org,
                "api_url": api_url,
                "request_timeout": request_timeout,
                "sweep_unlabelled": sweep_unlabelled,
                "max_listing_pages": max_listing_pages,
                "max_listing_items": max_listing_items,
            },
        )


class RailwayProvider(_HostedProvider):
    """Railway (name ``railway``): destroy is sandboxDestroy(id, environmentId); gone or going (never destroyed
    again): ``sandbox: null`` and ``DESTROYED``; ``DESTROYING`` is deleting. Key: ``RAILWAY_TOKEN``, else
    ``RAILWAY_API_TOKEN``; API: RAILWAY_GRAPHQL_ENDPOINT, else https://backboard.railway.com/graphql/v2
    (GraphQL). Pages of 100 (at most 100); its sandboxes carry no labels, so the sweep destroys only what the
    store's registry names.
    """

    __slots__ = ()

    def __init__(
        self,
        *,
        name: str = DEFAULT,
        owner: str = DEFAULT,
        api_key: str | None = None,
        environment_id: str | None = None,
        api_url: str | None = None,
        page_size: int = DEFAULT,
        request_timeout: float = DEFAULT,
        sweep_unlabelled: bool = DEFAULT,
        max_listing_pages: int = DEFAULT,
        max_listing_items: int = DEFAULT,
    ) -> None:
        self._native = _hosted(
            "railway",
            {
                "name": name,
                "owner": owner,
                "api_key": api_key,
                "environment_id": environment_id,
                "api_url": api_url,
                "page_size": page_size,
                "request_timeout": request_timeout,
                "sweep_unlabelled": sweep_unlabelled,
                "max_listing_pages": max_listing_pages,
                "max_listing_items": max_listing_items,
            },
        )
# ---- end of generated declarations [hosted vendors] ----


def hosted_from_native(native: _native.HostedProvider) -> _HostedProvider:
    """A facade over a native hosted provider the command crate built (the
    hosted command's ``--e2b``, ...)."""
    provider = _HostedProvider.__new__(_HostedProvider)
    provider._native = native
    return provider


def managed_from_native(native: _native.ManagedProvider) -> _ManagedProvider:
    """A facade over a native Docker or local provider the command crate
    built (the hosted command's ``--docker``, ``--local``)."""
    kind: type[_ManagedProvider] = DockerProvider if native.isolation() is None else LocalProvider
    provider = kind.__new__(kind)
    provider._native = native
    return provider


class KubernetesMarks(TypedDict):
    """What a Kubernetes object carries for the sweep, merged into its
    ``metadata``: the owner a label, the key an annotation."""

    labels: dict[str, str]
    annotations: dict[str, str]


# ---- generated by scripts/gen_declarations.py from the Rust types (proto/src): do not edit [owner labels] ----
@overload
def owner_labels(owner: str, key: str, vendor: Literal["e2b", "daytona", "vercel", "runloop", "blaxel", "modal", "boxd"] | None = None) -> dict[str, str]:
    """Where it goes at create: E2B ``metadata`` (name/value labels); Daytona ``labels`` (name/value labels);
    Vercel ``tags`` (name/value labels); Runloop ``metadata`` (name/value labels); Blaxel
    ``metadata.labels`` (name/value labels); Modal ``tags`` (name/value labels); boxd ``labels``
    (name/value labels)."""


@overload
def owner_labels(owner: str, key: str, vendor: Literal["sprites", "upstash-box"]) -> list[str]:
    """Where it goes at create: Sprites ``labels`` (``name=value`` strings); Upstash Box ``labels`` (the
    owner only: its labels are too short for the key)."""


@overload
def owner_labels(owner: str, key: str, vendor: Literal["kubernetes"]) -> KubernetesMarks:
    """Where it goes at create: Kubernetes ``metadata``, merged in (the owner a label, the key an
    annotation)."""
# ---- end of generated declarations [owner labels] ----


def owner_labels(
    owner: str, key: str, vendor: str | None = None
) -> dict[str, str] | list[str] | KubernetesMarks:
    """What to set on a sandbox at create so :func:`reconcile`'s orphan sweep
    knows it as ``owner``'s and for ``key``, in the shape ``vendor`` takes
    (the ``HostedProvider`` key: ``"e2b"``, ``"upstash-box"``, ...); without
    ``vendor`` (Docker, local, your own provider) name/value labels. A vendor
    whose sandboxes carry no labels (Railway) is a ``ValueError`` naming
    ``vendor``: the sweep finds them through the store's registry."""
    owner, key = _text("owner", owner), _text("key", key)
    if vendor is None:
        return _native.owner_labels(owner, key)
    marks: dict[str, str] | list[str] | KubernetesMarks = json.loads(
        _native.vendor_owner_labels_json(owner, key, _text("vendor", vendor))
    )
    return marks
