"""``sandbox_reclaim.openai_agents``'s hosted clients (E2B, Runloop, Blaxel,
Daytona, Vercel, Modal) driven through the OpenAI Agents SDK's own
``create`` / ``resume`` / ``delete`` and the session's ``shutdown``, against
this project's vendor fakes (tests/fakes/*.mjs) with each vendor's own
Python SDK underneath, as an app runs them. No live service, no model.

For every vendor: (a) the sandbox the fake created carries our owner label
(and its creation time) beneath what the user set; (b) it is recorded under
the SDK's session id with our provider's name and the vendor's id; (c) the
client's ``delete`` and the session's ``shutdown`` end with our provider's
destroy by id (the fake shows it), the record gone, no leak; (d) a failing
destroy deletes the record and keeps the sandbox in the ledger of a SQLite
store, with no credential in any message; (e) ``pause_on_exit=True`` keeps
the sandbox and its record; (f) the SDK's ``resume`` of a saved session, in
a new client of ours on the same store, reattaches a sandbox that still
exists (the record unchanged, no destroy; ``delete`` then destroys it),
and, where the sandbox vanished behind the SDK's back, records the
replacement the SDK made (labelled by us) in place of the old record, which
is reclaimed by the reference's rules; after ``pause_on_exit`` it reattaches
the paused sandbox, record kept.

Where a vendor SDK cannot create against a fake, the vendor's section says
why, and the rest is proven from a session state built as the SDK builds it.
A missing vendor package or ``node`` FAILS these tests under CI
(services.needs), and skips them locally."""

from __future__ import annotations

import inspect
import json
import logging
import os
import random
import shutil
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agents_world import records
from services import needs
from test_vendor_sdks import Fake

import sandbox_reclaim as sr

OWNER_LABEL = "io.sandbox-reclaim.owner"
CREATED_LABEL = "io.sandbox-reclaim.created-at"
USER_LABELS = {"team": "agents", "io.sandbox-reclaim.key": "user-chosen"}
SDK_LOGGER = "openai.agents"


def vendor_package(module: str, purpose: str) -> None:
    """The vendor's Python SDK (and the OpenAI Agents SDK): a failure under CI."""
    try:
        __import__(module)
        __import__("agents.sandbox")
    except ImportError as error:
        needs(f"{module} ({error})", False, purpose)


@pytest.fixture
def owner() -> str:
    return f"oa-hosted-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def fakes() -> Iterator[list[Fake]]:
    """Fakes a test starts (closed after it)."""
    started: list[Fake] = []
    yield started
    for fake in started:
        fake.close()


def start_fake(fakes: list[Fake], script: str, *args: str) -> Fake:
    needs("node", shutil.which("node") is not None, "the vendor fakes run under node")
    fake = Fake(script, *args)
    fakes.append(fake)
    return fake


def http_json(method: str, url: str, headers: dict[str, str]) -> Any:
    request = urllib.request.Request(url, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


@dataclass
class Hosted:
    """One vendor as the tests drive it: our client on its fake."""

    provider: str
    """Our provider's name (what records carry)."""
    fake: Fake
    client: Any
    secret: str
    """The credential no message may contain."""
    create: Callable[[dict[str, str] | None, bool], Awaitable[Any]]
    """``create(user_labels, pause_on_exit)``: a session, through the SDK's ``create``."""
    labels: Callable[[str], dict[str, str]]
    """What the fake holds as the sandbox's labels / metadata / tags."""
    alive: Callable[[str], bool]
    destroys: Callable[[str], int]
    """How many destroy requests for this sandbox the fake has answered."""
    fresh: Callable[[], Any]
    """A new client of ours on the same fake, store and owner (what a process
    resuming a saved session makes)."""
    kill: Callable[[str], None] | None
    """Makes the sandbox vanish behind the SDK's back (through the vendor's
    API, as another process or the vendor's own expiry would); ``None`` where
    the SDK's ``resume`` could not replace it against the fake."""
    user_labels: bool = True
    """Whether the SDK's options let the user set labels at all."""
    kept: dict[str, str] = field(default_factory=dict)
    """Labels the vendor's SDK sets itself, which ours must not displace."""
    clients: list[Any] = field(default_factory=list)
    """The clients :meth:`another` made (closed with ``client``)."""

    def another(self) -> Any:
        """A new client of ours, as a process resuming a saved session makes."""
        client = self.fresh()
        self.clients.append(client)
        return client


# --------------------------------------------------------------------- E2B
#
# The E2B SDK's ``AsyncSandbox.create`` is one ``POST /sandboxes`` (the fake
# answers it); nothing inside the sandbox runs at create or at ``shutdown``
# (``kill``: ``DELETE /sandboxes/{id}``). The SDK's client takes no
# credentials: both its SDK and our E2bProvider read E2B_API_KEY / E2B_API_URL.
# The SDK's ``resume`` reattaches with ``connect`` (``POST
# /sandboxes/{id}/connect``, which also resumes a paused sandbox; with the
# default ``on_timeout="pause"`` it asks envd nothing more); a sandbox gone
# makes it create another with the saved metadata (ours included).

E2B_KEY = "e2b_" + "5ec7e7" * 6 + "ab"  # the E2B SDK checks the key's format


async def e2b(fakes: list[Fake], monkeypatch: pytest.MonkeyPatch, store: Any, owner: str, tmp_path: Path) -> Hosted:
    vendor_package("e2b", "the E2B client is driven through the E2B SDK")
    from agents.extensions.sandbox.e2b import E2BSandboxClientOptions

    from sandbox_reclaim.openai_agents import E2BSandboxClient

    fake = start_fake(fakes, "e2b.mjs", "--key", E2B_KEY)
    monkeypatch.setenv("E2B_API_KEY", E2B_KEY)
    monkeypatch.setenv("E2B_API_URL", fake.url)

    def fresh() -> Any:
        return E2BSandboxClient(instances=store, owner=owner)

    client = fresh()

    async def create(labels: dict[str, str] | None, pause_on_exit: bool) -> Any:
        options = E2BSandboxClientOptions(sandbox_type="e2b", metadata=labels, pause_on_exit=pause_on_exit)
        return await client.create(options=options)

    def labels(sandbox_id: str) -> dict[str, str]:
        got: dict[str, str] = http_json("GET", f"{fake.url}/sandboxes/{sandbox_id}", {"X-API-KEY": E2B_KEY})["metadata"]
        return got

    def destroys(sandbox_id: str) -> int:
        return sum(1 for r in fake.requests("DELETE") if r["path"] == f"/sandboxes/{sandbox_id}")

    def kill(sandbox_id: str) -> None:
        urllib.request.urlopen(
            urllib.request.Request(f"{fake.url}/sandboxes/{sandbox_id}", method="DELETE", headers={"X-API-KEY": E2B_KEY}),
            timeout=10,
        ).close()

    return Hosted(
        provider="e2b",
        fake=fake,
        client=client,
        secret=E2B_KEY,
        create=create,
        labels=labels,
        alive=lambda sandbox_id: sandbox_id in fake.state()["alive"],
        destroys=destroys,
        fresh=fresh,
        kill=kill,
    )


# ----------------------------------------------------------------- Runloop
#
# The Runloop SDK's ``devbox.create`` is one ``POST /v1/devboxes`` (the fake
# answers it ``running``, so no wait follows); ``shutdown`` is ``POST
# /v1/devboxes/{id}/shutdown`` (Runloop never deletes: a shut-down devbox
# stays listed); ``pause_on_exit`` suspends (``/suspend``, then
# ``/wait_for_status``). The client is given the key and base URL explicitly,
# and our provider uses the same. The SDK's ``resume`` reads the devbox
# (``GET /v1/devboxes/{id}``): ``running`` is reattached, ``suspended`` is
# resumed (``POST .../resume``, then ``/wait_for_status``), anything else (a
# shut-down devbox) makes it create another with the saved metadata.

RUNLOOP_KEY = "runloop_test_key"


async def runloop(fakes: list[Fake], monkeypatch: pytest.MonkeyPatch, store: Any, owner: str, tmp_path: Path) -> Hosted:
    vendor_package("runloop_api_client", "the Runloop client is driven through the Runloop SDK")
    from agents.extensions.sandbox.runloop import RunloopSandboxClientOptions

    from sandbox_reclaim.openai_agents import RunloopSandboxClient

    fake = start_fake(fakes, "runloop.mjs", "--key", RUNLOOP_KEY)
    monkeypatch.delenv("RUNLOOP_API_KEY", raising=False)
    monkeypatch.delenv("RUNLOOP_BASE_URL", raising=False)

    def fresh() -> Any:
        made = RunloopSandboxClient(bearer_token=RUNLOOP_KEY, base_url=fake.url, instances=store, owner=owner)
        # The SDK's own shutdown retries a 500 with backoff (half a minute against
        # a failing fake); the test needs its failure, not its patience.
        made._sdk.api.max_retries = 0
        return made

    client = fresh()

    async def create(labels: dict[str, str] | None, pause_on_exit: bool) -> Any:
        return await client.create(options=RunloopSandboxClientOptions(metadata=labels, pause_on_exit=pause_on_exit))

    def labels(devbox_id: str) -> dict[str, str]:
        view = http_json("GET", f"{fake.url}/v1/devboxes/{devbox_id}", {"Authorization": f"Bearer {RUNLOOP_KEY}"})
        got: dict[str, str] = view["metadata"]
        return got

    def destroys(devbox_id: str) -> int:
        return sum(1 for r in fake.requests("POST") if r["path"] == f"/v1/devboxes/{devbox_id}/shutdown")

    def kill(devbox_id: str) -> None:
        http_json("POST", f"{fake.url}/v1/devboxes/{devbox_id}/shutdown", {"Authorization": f"Bearer {RUNLOOP_KEY}"})

    return Hosted(
        provider="runloop",
        fake=fake,
        client=client,
        secret=RUNLOOP_KEY,
        create=create,
        labels=labels,
        alive=lambda devbox_id: devbox_id in fake.state()["alive"],
        destroys=destroys,
        fresh=fresh,
        kill=kill,
    )


# ------------------------------------------------------------------ Blaxel
#
# The Blaxel SDK's ``SandboxInstance.create_if_not_exists`` is one ``POST
# /v0/sandboxes?createIfNotExist=true`` (the fake answers it ``DEPLOYED``);
# the session's ``shutdown`` deletes (``DELETE /v0/sandboxes/{name}``) unless
# ``pause_on_exit``. The SDK talks through its module client, which reads no
# base-URL variable: it is pointed at the fake (as test_vendor_sdks does), and
# our provider takes that client's base URL, workspace and key. The SDK's
# ``resume`` calls ``create_if_not_exists`` with the saved name and labels
# (after ``pause_on_exit``, ``SandboxInstance.get``, ``GET
# /v0/sandboxes/{name}``, first): an alive sandbox is reattached, a deleted
# one is replaced under the same name, so the record's key and id stay.

BLAXEL_KEY = "bl_test_key"
BLAXEL_WORKSPACE = "ws-agents"


def import_blaxel(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """Imports the Blaxel SDK with the environment it reads at import time
    (no tracking, HOME away from ~/.blaxel), giving the root logger back as it
    was (importing blaxel calls basicConfig)."""
    for name in ("BL_API_URL", "BL_CLIENT_CREDENTIALS", "BL_ENV", "BL_REGION", "BL_API_VERSION", "BL_ENABLE_OPENTELEMETRY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {"BL_API_KEY": BLAXEL_KEY, "BL_WORKSPACE": BLAXEL_WORKSPACE, "DO_NOT_TRACK": "1"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HOME", str(home))
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        vendor_package("blaxel", "the Blaxel client is driven through the Blaxel SDK")
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


async def blaxel(fakes: list[Fake], monkeypatch: pytest.MonkeyPatch, store: Any, owner: str, tmp_path: Path) -> Hosted:
    import_blaxel(monkeypatch, tmp_path)
    from agents.extensions.sandbox.blaxel import BlaxelSandboxClientOptions
    from blaxel.core.authentication.apikey import ApiKey
    from blaxel.core.authentication.types import CredentialsType
    from blaxel.core.client import client as blaxel_client

    from sandbox_reclaim.openai_agents import BlaxelSandboxClient

    fake = start_fake(fakes, "blaxel.mjs", "--key", BLAXEL_KEY, "--workspace", BLAXEL_WORKSPACE)
    blaxel_client.with_base_url(f"{fake.url}/v0")
    blaxel_client.with_auth(ApiKey(CredentialsType(api_key=BLAXEL_KEY, workspace=BLAXEL_WORKSPACE), BLAXEL_WORKSPACE, fake.url))

    def fresh() -> Any:
        return BlaxelSandboxClient(token=BLAXEL_KEY, instances=store, owner=owner)

    client = fresh()
    headers = {"X-Blaxel-Authorization": f"Bearer {BLAXEL_KEY}", "X-Blaxel-Workspace": BLAXEL_WORKSPACE}

    async def create(labels: dict[str, str] | None, pause_on_exit: bool) -> Any:
        return await client.create(options=BlaxelSandboxClientOptions(labels=labels, pause_on_exit=pause_on_exit))

    def labels(name: str) -> dict[str, str]:
        got: dict[str, str] = http_json("GET", f"{fake.url}/v0/sandboxes/{name}", headers)["metadata"]["labels"]
        return got

    def destroys(name: str) -> int:
        return sum(1 for r in fake.requests("DELETE") if r["path"] == f"/v0/sandboxes/{name}")

    def kill(name: str) -> None:
        http_json("DELETE", f"{fake.url}/v0/sandboxes/{name}", headers)

    return Hosted(
        provider="blaxel",
        fake=fake,
        client=client,
        secret=BLAXEL_KEY,
        create=create,
        labels=labels,
        alive=lambda name: name in fake.state()["alive"],
        destroys=destroys,
        fresh=fresh,
        kill=kill,
    )


# ----------------------------------------------------------------- Daytona
#
# The Daytona SDK's ``AsyncDaytona.create`` is one ``POST /api/sandbox`` (the
# fake answers it ``started`` with a toolbox proxy URL, so no wait and no
# event socket follow); the session's ``shutdown`` deletes (``DELETE
# /api/sandbox/{id}``), or with ``pause_on_exit`` stops (``POST .../stop``,
# then one read). The SDK's options have no labels for a user to set: what
# must survive ours is the label the Daytona SDK sets itself. The SDK's
# ``resume`` reads the sandbox (``GET /api/sandbox/{id}``) and starts one not
# ``started`` (``POST .../start``); one gone makes it create another (with
# our labels: ours label the create parameters it builds for that too).

DAYTONA_KEY = "dtn_test_key"


async def daytona(fakes: list[Fake], monkeypatch: pytest.MonkeyPatch, store: Any, owner: str, tmp_path: Path) -> Hosted:
    vendor_package("daytona", "the Daytona client is driven through the Daytona SDK")
    from agents.extensions.sandbox.daytona import DaytonaSandboxClientOptions

    from sandbox_reclaim.openai_agents import DaytonaSandboxClient

    for name in ("DAYTONA_API_KEY", "DAYTONA_API_URL", "DAYTONA_SERVER_URL", "DAYTONA_JWT_TOKEN", "DAYTONA_TARGET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env for the Daytona SDK to read
    fake = start_fake(fakes, "daytona.mjs", "--key", DAYTONA_KEY)

    def fresh() -> Any:
        return DaytonaSandboxClient(api_key=DAYTONA_KEY, api_url=fake.url, instances=store, owner=owner)

    client = fresh()

    async def create(labels: dict[str, str] | None, pause_on_exit: bool) -> Any:
        return await client.create(options=DaytonaSandboxClientOptions(pause_on_exit=pause_on_exit))

    def labels(sandbox_id: str) -> dict[str, str]:
        got: dict[str, str] = http_json("GET", f"{fake.url}/sandbox/{sandbox_id}", {"Authorization": f"Bearer {DAYTONA_KEY}"})["labels"]
        return got

    def destroys(sandbox_id: str) -> int:
        return sum(1 for r in fake.requests("DELETE") if r["path"] == f"/api/sandbox/{sandbox_id}")

    def kill(sandbox_id: str) -> None:
        http_json("DELETE", f"{fake.url}/sandbox/{sandbox_id}", {"Authorization": f"Bearer {DAYTONA_KEY}"})

    return Hosted(
        provider="daytona",
        fake=fake,
        client=client,
        secret=DAYTONA_KEY,
        create=create,
        labels=labels,
        alive=lambda sandbox_id: sandbox_id in fake.state()["alive"],
        destroys=destroys,
        fresh=fresh,
        kill=kill,
        user_labels=False,
        kept={"code-toolbox-language": "python"},
    )


# ------------------------------------------------------------------ Vercel
#
# The Vercel SDK's ``create_sandbox`` is one ``POST /v2/sandboxes`` (the fake
# answers it with a ``running`` session, so no wait follows); our tags follow
# at once (``PATCH /v2/sandboxes/{name}``: the SDK's options have none and its
# create passes none). The session's ``shutdown`` only stops the execution
# session (``POST /v2/sandboxes/sessions/{id}/stop``): the named sandbox
# stays, so our destroy (``DELETE /v2/sandboxes/{name}``) is what removes it.
# The SDK's client builds its Vercel client with the Vercel SDK's default base
# URL and no way to pass another: the test points that default at the fake.
# Vercel has no ``pause_on_exit``. The SDK's ``resume`` reads the named
# sandbox (``GET /v2/sandboxes/{name}``) and reattaches its execution session
# if it still runs; otherwise (the sandbox gone, or its session stopped) it
# creates another sandbox, under a new name, which ours then tags.

VERCEL_TOKEN = "vercel_test_token"
VERCEL_TEAM = "team_fake"
VERCEL_PROJECT = "prj_fake"


async def vercel(fakes: list[Fake], monkeypatch: pytest.MonkeyPatch, store: Any, owner: str, tmp_path: Path) -> Hosted:
    vendor_package("vercel.sandbox", "the Vercel client is driven through the Vercel SDK")
    from agents.extensions.sandbox.vercel import VercelSandboxClientOptions
    from vercel.sandbox._internal import options as vercel_options

    from sandbox_reclaim.openai_agents import VercelSandboxClient

    for name in ("VERCEL_OIDC_TOKEN", "VERCEL_TOKEN", "VERCEL_TEAM_ID", "VERCEL_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VERCEL_SANDBOX_TELEMETRY_DISABLED", "1")
    fake = start_fake(fakes, "vercel.mjs", "--token", VERCEL_TOKEN, "--team", VERCEL_TEAM, "--project", VERCEL_PROJECT)
    monkeypatch.setattr(vercel_options, "DEFAULT_SANDBOX_API_BASE_URL", fake.url)

    def fresh() -> Any:
        return VercelSandboxClient(
            token=VERCEL_TOKEN, team_id=VERCEL_TEAM, project_id=VERCEL_PROJECT, instances=store, owner=owner
        )

    client = fresh()
    query = f"projectId={VERCEL_PROJECT}&teamId={VERCEL_TEAM}"

    async def create(labels: dict[str, str] | None, pause_on_exit: bool) -> Any:
        assert not pause_on_exit, "Vercel has no pause_on_exit"
        return await client.create(options=VercelSandboxClientOptions())

    def labels(name: str) -> dict[str, str]:
        got: dict[str, str] = http_json(
            "GET", f"{fake.url}/v2/sandboxes/{name}?{query}", {"Authorization": f"Bearer {VERCEL_TOKEN}"}
        )["sandbox"]["tags"]
        return got

    def destroys(name: str) -> int:
        return sum(1 for r in fake.requests("DELETE") if r["path"] == f"/v2/sandboxes/{name}")

    def kill(name: str) -> None:
        http_json("DELETE", f"{fake.url}/v2/sandboxes/{name}?{query}", {"Authorization": f"Bearer {VERCEL_TOKEN}"})

    return Hosted(
        provider="vercel",
        fake=fake,
        client=client,
        secret=VERCEL_TOKEN,
        create=create,
        labels=labels,
        alive=lambda name: name in fake.state()["alive"],
        destroys=destroys,
        fresh=fresh,
        kill=kill,
        user_labels=False,
    )


# ------------------------------------------------------------------- Modal
#
# Modal's ``Sandbox.create`` cannot run against the Modal fake
# (tests/fakes/modal_fake.py): it needs the app (``AppGetOrCreate``), the
# image build (``ImageGetOrCreate`` and its streamed build) and
# ``SandboxCreate``, a container runtime the fake does not model (it answers
# them UNIMPLEMENTED). So the sandbox is seeded in the fake, as if Modal had
# just created it, and the session is built as the SDK's ``create`` builds
# it (``ModalSandboxSessionState`` plus ``ModalSandboxSession.from_state``
# with the Modal SDK's own ``Sandbox.from_id`` handle, wrapped by the
# client); then our client does what it does once the SDK's ``create`` (or
# ``start``) made the sandbox: tags it through the Modal SDK and records it.
# Teardown (``delete``, ``shutdown``) is the SDK's own, then ours. The user's
# labels are the tags the sandbox already had. Modal has no
# ``pause_on_exit``. The SDK's ``resume`` runs against the fake where it
# reattaches (``Sandbox.from_id`` and ``poll``: ``SandboxWaitV2``); where the
# sandbox is gone it would ``Sandbox.create`` another, which the fake cannot
# (above), so Modal's replacement is not proven here (no ``kill``).

MODAL_ID = "ak-test-id"
MODAL_SECRET = "as-test-secret"
MODAL_FAKE = Path(__file__).resolve().parents[1] / "fakes" / "modal_fake.py"


class ModalFake(Fake):
    """The Modal fake (a ``python`` subprocess): ``url`` is its control
    address (what :class:`Fake`'s helpers call), ``grpc`` its gRPC one."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(MODAL_FAKE), "--token-id", MODAL_ID, "--token-secret", MODAL_SECRET],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        started = json.loads(self.process.stdout.readline())
        self.url = started["control"]
        self.grpc: str = started["url"]


def modal_v2_id() -> str:
    crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    millis = int(time.time() * 1000)
    stamp = "".join(crockford[(millis >> shift) & 31] for shift in range(45, -1, -5))
    return "sb-" + stamp + "".join(random.choice(crockford) for _ in range(16))


def native_modal() -> bool:
    from sandbox_reclaim import _native

    return "modal" in dict(_native.hosted_vendors())


class ModalStandIn:
    """Destroys by id through the Modal SDK (``terminate``; a finished or
    unknown sandbox is gone: success), named as our ModalProvider is."""

    name = "modal"

    async def destroy(self, sandbox_id: str) -> None:
        import modal as modal_sdk

        try:
            sandbox = await modal_sdk.Sandbox.from_id.aio(sandbox_id)
        except modal_sdk.exception.NotFoundError:
            return
        await sandbox.terminate.aio()


async def modal(fakes: list[Fake], monkeypatch: pytest.MonkeyPatch, store: Any, owner: str, tmp_path: Path) -> Hosted:
    vendor_package("modal", "the Modal client is driven through the Modal SDK")
    import modal as modal_sdk
    from agents.extensions.sandbox.modal import ModalSandboxSession, ModalSandboxSessionState
    from agents.sandbox.manifest import Manifest
    from agents.sandbox.snapshot import resolve_snapshot
    from modal.client import _Client

    from sandbox_reclaim.openai_agents import ModalSandboxClient

    fake = ModalFake()
    fakes.append(fake)
    for name in [name for name in os.environ if name.startswith("MODAL_")]:
        monkeypatch.delenv(name)
    for name, value in {
        "MODAL_SERVER_URL": fake.grpc,
        "MODAL_TOKEN_ID": MODAL_ID,
        "MODAL_TOKEN_SECRET": MODAL_SECRET,
        "MODAL_CONFIG_PATH": str(tmp_path / "absent.toml"),
        "MODAL_DISABLE_API_PROXY": "1",
    }.items():
        monkeypatch.setenv(name, value)
    # The Modal SDK keeps one client per process, made from the environment
    # the first time: each test's fake is a new server.
    monkeypatch.setattr(_Client, "_client_from_env", None)
    # Until the native module carries our ModalProvider (being written), a
    # stand-in named as ours terminates through the Modal SDK, so the rest is
    # proven now; test_modal_uses_our_modal_provider needs the real one.
    stand_in = None if native_modal() else ModalStandIn()

    def fresh() -> Any:
        return ModalSandboxClient(instances=store, owner=owner, provider=stand_in)

    client = fresh()

    async def create(labels: dict[str, str] | None, pause_on_exit: bool) -> Any:
        assert not pause_on_exit, "Modal has no pause_on_exit"
        sandbox_id = modal_v2_id()
        fake.seed([{"id": sandbox_id, "tags": labels or {}}])
        sandbox = await modal_sdk.Sandbox.from_id.aio(sandbox_id)
        session_id = uuid.uuid4()
        state = ModalSandboxSessionState(
            session_id=session_id,
            manifest=Manifest(),
            snapshot=resolve_snapshot(None, str(session_id)),
            app_name="agents",
            sandbox_id=sandbox_id,
        )
        inner = ModalSandboxSession.from_state(state, sandbox=sandbox)
        session = client._wrap_session(inner, instrumentation=client._instrumentation)
        await client.after_start(session)  # what ours does once the SDK's create / start made it
        return session

    def labels(sandbox_id: str) -> dict[str, str]:
        sets: list[Any] = [r["tags"] for r in fake.state()["requests"] if r["method"] == "SandboxTagsSetV2" and r.get("id") == sandbox_id]
        assert sets, "our tags are set through the Modal SDK"
        got: dict[str, str] = sets[-1]
        return got

    def destroys(sandbox_id: str) -> int:
        return sum(1 for r in fake.state()["requests"] if r["method"].startswith("SandboxTerminate") and r.get("id") == sandbox_id)

    return Hosted(
        provider="modal",
        fake=fake,
        client=client,
        secret=MODAL_SECRET,
        create=create,
        labels=labels,
        alive=lambda sandbox_id: sandbox_id in fake.state()["alive"],
        destroys=destroys,
        fresh=fresh,
        kill=None,
    )


# ------------------------------------------------------------------ the tests

VENDORS: dict[str, Callable[[list[Fake], pytest.MonkeyPatch, Any, str, Path], Awaitable[Hosted]]] = {
    "e2b": e2b,
    "runloop": runloop,
    "blaxel": blaxel,
    "daytona": daytona,
    "vercel": vercel,
    "modal": modal,
}
PAUSING = [name for name in VENDORS if name not in ("vercel", "modal")]  # no pause_on_exit there
REPLACING = [name for name in VENDORS if name != "modal"]  # Modal's create cannot run against its fake


@pytest.fixture(params=list(VENDORS))
def vendor(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@asynccontextmanager
async def hosted(
    vendor: str, fakes: list[Fake], monkeypatch: pytest.MonkeyPatch, owner: str, tmp_path: Path
) -> AsyncIterator[tuple[Hosted, sr.SqliteSandboxInstanceStore]]:
    store = await sr.SqliteSandboxInstanceStore.open(tmp_path / "store.db")
    try:
        h = await VENDORS[vendor](fakes, monkeypatch, store, owner, tmp_path)
        try:
            yield h, store
        finally:
            for client in [h.client, *h.clients]:
                close = getattr(client, "close", None)  # the vendor SDK's HTTP sessions
                if close is not None:
                    closing = close()
                    if inspect.isawaitable(closing):
                        await closing
    finally:
        await store.close()


class Spy:
    """Our provider, as the client made it, noting every destroy it is asked for."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.destroyed: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def destroy(self, sandbox_id: str) -> None:
        self.destroyed.append(sandbox_id)
        await self.inner.destroy(sandbox_id)


def spy(session: Any) -> Spy:
    """Spies on the provider the session's client made (its vendor factory's)."""
    return spy_on(session._sandbox_reclaim_client, session._inner.state)


def spy_on(client: Any, state: Any) -> Spy:
    """Spies on the provider ``client`` makes for ``state`` (before it resumes it)."""
    reclaim = client._reclaim
    provider = reclaim.provider(state)
    if isinstance(provider, Spy):
        return provider
    made = Spy(provider)
    reclaim._provider = made
    return made


def sandbox_id_of(session: Any) -> str:
    state = session._inner.state
    value: str = getattr(state, state_id_field(session))
    return value


def state_id_field(session: Any) -> str:
    field_name: str = type(session._sandbox_reclaim_client)._vendor.id_field
    return field_name


async def test_create_labels_beneath_the_users_and_records(
    vendor: str, fakes: list[Fake], monkeypatch: pytest.MonkeyPatch, owner: str, tmp_path: Path
) -> None:
    async with hosted(vendor, fakes, monkeypatch, owner, tmp_path) as (h, store):
        session = await h.create(dict(USER_LABELS), False)
        sandbox_id = sandbox_id_of(session)
        assert h.alive(sandbox_id)
        labels = h.labels(sandbox_id)
        assert labels[OWNER_LABEL] == owner
        assert int(labels[CREATED_LABEL]) > 0
        for key, value in {**(USER_LABELS if h.user_labels else {}), **h.kept}.items():
            assert labels[key] == value, f"the user's {key} must be kept"
        [record] = await records(store)
        assert record.key == str(session._inner.state.session_id)
        assert (record.provider, record.provider_sandbox_id) == (h.provider, sandbox_id)

        # No user labels at all: ours alone.
        bare = await h.create(None, False)
        bare_labels = h.labels(sandbox_id_of(bare))
        assert bare_labels[OWNER_LABEL] == owner and CREATED_LABEL in bare_labels
        assert len(await records(store)) == 2
        await h.client.delete(session)
        await h.client.delete(bare)


async def test_delete_destroys_by_id_and_deletes_the_record(
    vendor: str, fakes: list[Fake], monkeypatch: pytest.MonkeyPatch, owner: str, tmp_path: Path
) -> None:
    async with hosted(vendor, fakes, monkeypatch, owner, tmp_path) as (h, store):
        session = await h.create(None, False)
        sandbox_id = sandbox_id_of(session)
        ours = spy(session)
        await h.client.delete(session)
        assert ours.destroyed == [sandbox_id], "our provider destroys by id"
        assert not h.alive(sandbox_id)
        assert h.destroys(sandbox_id) >= 1
        assert await records(store) == []
        assert await store.list_leaks() == []


async def test_shutdown_destroys_by_id_and_deletes_the_record(
    vendor: str, fakes: list[Fake], monkeypatch: pytest.MonkeyPatch, owner: str, tmp_path: Path
) -> None:
    async with hosted(vendor, fakes, monkeypatch, owner, tmp_path) as (h, store):
        session = await h.create(None, False)
        sandbox_id = sandbox_id_of(session)
        ours = spy(session)
        await session.shutdown()
        assert ours.destroyed == [sandbox_id], "our provider destroys by id"
        assert not h.alive(sandbox_id)
        assert h.destroys(sandbox_id) >= 1
        assert await records(store) == []
        assert await store.list_leaks() == []
        # delete after shutdown (what an app may do as well): ours is done already.
        await h.client.delete(session)
        assert ours.destroyed == [sandbox_id]
        assert await store.list_leaks() == []


async def test_a_failing_destroy_is_kept_in_the_ledger(
    vendor: str,
    fakes: list[Fake],
    monkeypatch: pytest.MonkeyPatch,
    owner: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with hosted(vendor, fakes, monkeypatch, owner, tmp_path) as (h, store):
        session = await h.create(None, False)
        sandbox_id = sandbox_id_of(session)
        ours = spy(session)
        h.fake.faults(failDeleteEvery=1)
        with caplog.at_level(logging.DEBUG):
            await h.client.delete(session)
        assert ours.destroyed == [sandbox_id]
        assert h.alive(sandbox_id), "every destroy failed: the sandbox is still there"
        assert h.destroys(sandbox_id) >= 1
        assert await records(store) == []  # deleted even though destroy failed (the reference's rule)
        [leak] = await store.list_leaks(h.provider)
        assert (leak.provider_sandbox_id, leak.key) == (sandbox_id, str(session._inner.state.session_id))
        assert leak.last_error
        logged = [r for r in caplog.records if r.name == SDK_LOGGER and "destroy failed" in r.getMessage()]
        assert logged, "the failure is logged through the SDK's logger"
        # Ours: the ledger and what our clients log (the SDK's logger, ours);
        # a vendor's transport logging its own headers at DEBUG is not ours.
        mine = [r for r in caplog.records if r.name.startswith((SDK_LOGGER, "sandbox_reclaim"))]
        messages = [leak.last_error, *(r.getMessage() for r in mine), *(repr(vars(r)) for r in mine)]
        for message in messages:
            assert h.secret not in message

        # Once the vendor answers, the ledger's retry finishes it.
        h.fake.faults(failDeleteEvery=0)
        summary = await sr.retry_leaks(instances=store, provider=ours.inner)
        assert summary.destroyed == 1, summary
        assert not h.alive(sandbox_id)
        assert await store.list_leaks() == []


@pytest.mark.parametrize("vendor", PAUSING)
async def test_pause_on_exit_keeps_the_sandbox_and_its_record(
    vendor: str, fakes: list[Fake], monkeypatch: pytest.MonkeyPatch, owner: str, tmp_path: Path
) -> None:
    async with hosted(vendor, fakes, monkeypatch, owner, tmp_path) as (h, store):
        session = await h.create(None, True)
        sandbox_id = sandbox_id_of(session)
        ours = spy(session)
        await session.shutdown()
        await h.client.delete(session)
        assert ours.destroyed == []
        assert h.alive(sandbox_id)
        assert h.destroys(sandbox_id) == 0
        [record] = await records(store)
        assert record.provider_sandbox_id == sandbox_id
        assert await store.list_leaks() == []


def saved(h: Hosted, session: Any) -> dict[str, object]:
    """The session's state as an app saves it (the SDK's serializer, through JSON)."""
    payload: dict[str, object] = json.loads(json.dumps(h.client.serialize_session_state(session._inner.state)))
    return payload


async def test_resume_reattaches_a_sandbox_that_still_exists(
    vendor: str, fakes: list[Fake], monkeypatch: pytest.MonkeyPatch, owner: str, tmp_path: Path
) -> None:
    async with hosted(vendor, fakes, monkeypatch, owner, tmp_path) as (h, store):
        session = await h.create(None, False)
        sandbox_id = sandbox_id_of(session)
        [before] = await records(store)
        payload = saved(h, session)

        # A new process: a new client of ours, on the same store.
        client = h.another()
        state = client.deserialize_session_state(payload)
        ours = spy_on(client, state)
        resumed = await client.resume(state)
        assert sandbox_id_of(resumed) == sandbox_id, "the same sandbox"
        assert h.alive(sandbox_id)
        [after] = await records(store)
        assert (after.key, after.provider, after.provider_sandbox_id) == (
            before.key,
            before.provider,
            before.provider_sandbox_id,
        )
        assert ours.destroyed == [] and h.destroys(sandbox_id) == 0

        await client.delete(resumed)
        assert ours.destroyed == [sandbox_id], "our provider destroys by id"
        assert not h.alive(sandbox_id)
        assert h.destroys(sandbox_id) >= 1
        assert await records(store) == []
        assert await store.list_leaks() == []


@pytest.mark.parametrize("vendor", REPLACING)
async def test_resume_records_the_replacement_of_a_vanished_sandbox(
    vendor: str, fakes: list[Fake], monkeypatch: pytest.MonkeyPatch, owner: str, tmp_path: Path
) -> None:
    async with hosted(vendor, fakes, monkeypatch, owner, tmp_path) as (h, store):
        assert h.kill is not None
        session = await h.create(dict(USER_LABELS), False)
        old = sandbox_id_of(session)
        payload = saved(h, session)
        h.kill(old)  # behind the SDK's back
        assert not h.alive(old)

        client = h.another()
        state = client.deserialize_session_state(payload)
        ours = spy_on(client, state)
        resumed = await client.resume(state)
        new = sandbox_id_of(resumed)
        assert h.alive(new), "the SDK made a replacement"
        labels = h.labels(new)
        assert labels[OWNER_LABEL] == owner
        assert int(labels[CREATED_LABEL]) > 0
        for key, value in {**(USER_LABELS if h.user_labels else {}), **h.kept}.items():
            assert labels[key] == value, f"the user's {key} must be kept"
        [record] = await records(store)
        assert (record.key, record.provider, record.provider_sandbox_id) == (
            str(resumed._inner.state.session_id),
            h.provider,
            new,
        )
        if new != old:
            # The old record was reclaimed: destroy by id (already gone: success).
            assert ours.destroyed == [old]
        else:
            # Blaxel replaces under the same name: the record already names it.
            assert ours.destroyed == []
        assert await store.list_leaks() == []

        await client.delete(resumed)
        assert ours.destroyed[-1:] == [new], "our provider destroys the replacement by id"
        assert not h.alive(new)
        assert await records(store) == []
        assert await store.list_leaks() == []


@pytest.mark.parametrize("vendor", PAUSING)
async def test_resume_after_pause_on_exit_reattaches_the_paused_sandbox(
    vendor: str, fakes: list[Fake], monkeypatch: pytest.MonkeyPatch, owner: str, tmp_path: Path
) -> None:
    async with hosted(vendor, fakes, monkeypatch, owner, tmp_path) as (h, store):
        session = await h.create(None, True)
        sandbox_id = sandbox_id_of(session)
        await session.shutdown()  # the SDK pauses it; the record stays
        [before] = await records(store)
        payload = saved(h, session)

        client = h.another()
        state = client.deserialize_session_state(payload)
        ours = spy_on(client, state)
        resumed = await client.resume(state)
        assert sandbox_id_of(resumed) == sandbox_id, "the same sandbox"
        assert h.alive(sandbox_id)
        [after] = await records(store)
        assert (after.key, after.provider_sandbox_id) == (before.key, before.provider_sandbox_id)
        assert ours.destroyed == [] and h.destroys(sandbox_id) == 0
        assert await store.list_leaks() == []


async def test_vercel_resume_after_its_session_stopped_destroys_the_old_sandbox(
    fakes: list[Fake], monkeypatch: pytest.MonkeyPatch, owner: str, tmp_path: Path
) -> None:
    """Vercel stops a sandbox's execution session on its own (its timeout)
    and keeps the named sandbox: the SDK's ``resume`` then creates another
    sandbox and leaves the old one behind. Ours destroys it by name."""
    async with hosted("vercel", fakes, monkeypatch, owner, tmp_path) as (h, store):
        session = await h.create(None, False)
        old = sandbox_id_of(session)
        payload = saved(h, session)
        execution = session._inner.state.sandbox_id
        http_json(
            "POST",
            f"{h.fake.url}/v2/sandboxes/sessions/{execution}/stop?teamId={VERCEL_TEAM}",
            {"Authorization": f"Bearer {VERCEL_TOKEN}"},
        )
        assert h.alive(old), "the named sandbox stays"

        client = h.another()
        state = client.deserialize_session_state(payload)
        ours = spy_on(client, state)
        resumed = await client.resume(state)
        new = sandbox_id_of(resumed)
        assert new != old and h.alive(new)
        assert ours.destroyed == [old]
        assert not h.alive(old) and h.destroys(old) == 1
        [record] = await records(store)
        assert record.provider_sandbox_id == new
        assert h.labels(new)[OWNER_LABEL] == owner

        await client.delete(resumed)
        assert not h.alive(new)
        assert await records(store) == []
        assert await store.list_leaks() == []


async def test_modal_uses_our_modal_provider(
    fakes: list[Fake], monkeypatch: pytest.MonkeyPatch, owner: str, tmp_path: Path
) -> None:
    """The client's default provider for Modal is our ModalProvider, talking
    to the server and with the token the Modal SDK is configured with."""
    needs("ModalProvider in the native module", native_modal(), "our Modal provider destroys by id")
    async with hosted("modal", fakes, monkeypatch, owner, tmp_path) as (h, store):
        session = await h.create(None, False)
        sandbox_id = sandbox_id_of(session)
        provider = session._sandbox_reclaim_client._reclaim.provider(session._inner.state)
        assert isinstance(provider, sr.ModalProvider)
        assert (provider.name, provider.owner) == ("modal", owner)
        await provider.destroy(sandbox_id)
        assert not h.alive(sandbox_id)
        await h.client.delete(session)
        assert await records(store) == []
        assert await store.list_leaks() == []
