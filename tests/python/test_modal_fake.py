"""The Modal fake (tests/fakes/modal_fake.py) driven by the official Python
client, PyPI ``modal`` 1.6.4 (pinned in scripts/test-python.sh), as
tests/python/test_vendor_sdks.py drives the REST fakes with their SDKs:
refused with a wrong token, every page listed once and only the tagged
sandboxes, ``Sandbox.from_id`` of V1- and V2-shaped ids, ``terminate``,
not found, tags set and got, and the faults read as Modal's. Each proof
runs the client in a fresh ``python`` subprocess (this file, run as a
program), so its global config (``MODAL_*`` variables, the ``from_env``
client) starts clean. The faults the official client cannot show (a
malformed page, a cursor that never moves on) are read on the raw wire with
the stubs the package ships.

Needs only pytest and ``modal`` (its ``modal_proto`` and ``grpclib``), never
``sandbox_reclaim``; a missing ``modal`` FAILS these tests under CI, never
skips them (:func:`services.needs`)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fake_process import FakeProcess, need_package

MODAL_VERSION = "1.6.4"
FAKE = Path(__file__).resolve().parents[1] / "fakes" / "modal_fake.py"
TOKEN_ID = "ak-test-id"
TOKEN_SECRET = "as-test-secret"
APP = "ap-SandboxReclaimFakeApp0"  # the fake's default app
OTHER_APP = "ap-AnotherAppOfTheOwner1"
STAGING_APP = "ap-StagingAppOfTheOwner1"
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
V1_IDS = ["sb-nGEijt9WbBMlGrsPH9FOaC", "sb-0123456789abcdefABCDEF", "sb-ZZZZZZZZZZZZZZZZZZZZZ1"]
V2_IDS = ["sb-01ARZ3NDEKTSV4RRFFQ69G5FAV", "sb-01KHD9X4T2ZB8Y7VQ6W5M3N1PA", "sb-7ZZZZZZZZZZZZZZZZZZZZZZZZZ"]
OWNER = {"sandbox-reclaim": "owner-a"}
CREDENTIALS = {
    "x-modal-client-type": "1",
    "x-modal-client-version": MODAL_VERSION,
    "x-modal-token-id": TOKEN_ID,
    "x-modal-token-secret": TOKEN_SECRET,
}


@pytest.fixture(autouse=True)
def _modal_installed() -> None:
    need_package("modal", MODAL_VERSION, "the Modal fake is proven with the official client (pip install modal==1.6.4)")


class Fake(FakeProcess):
    """The Modal fake in a ``python`` subprocess, serving until its stdin closes."""

    def __init__(self, *args: str) -> None:
        super().__init__([sys.executable, str(FAKE), *args])

    def requests(self, method: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.state()["requests"] if method is None or r["method"] == method]

    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])


@pytest.fixture
def fake() -> Iterator[Fake]:
    started = Fake()
    try:
        yield started
    finally:
        started.close()


def run(fake: Fake, proof: str, args: dict[str, Any], *, secret: str = TOKEN_SECRET, **env: str) -> Any:
    """Runs ``proof`` (below) with the official client in a fresh interpreter."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MODAL_")}
    with tempfile.TemporaryDirectory() as home:
        clean.update(
            MODAL_SERVER_URL=fake.url,
            MODAL_TOKEN_ID=TOKEN_ID,
            MODAL_TOKEN_SECRET=secret,
            MODAL_CONFIG_PATH=str(Path(home) / "absent.toml"),
            MODAL_DISABLE_API_PROXY="1",
            **env,
        )
        done = subprocess.run(
            [sys.executable, __file__, proof, json.dumps({**args, "control": fake.control})],
            env=clean,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def seed_owner_fleet(fake: Fake) -> list[str]:
    """Ten sandboxes of ours in APP (V1 and V2 ids), newest first, and
    strangers around them; answers our ids newest first."""
    ours = [*V1_IDS, *V2_IDS, *(f"sb-01KHD9X4T2ZB8Y7VQ6W5M3N1{c}{d}" for c, d in ("B0", "C1", "D2", "E3"))]
    fake.seed(
        [{"id": sandbox_id, "tags": {**OWNER, "k": str(i)}, "createdAt": T0 + i} for i, sandbox_id in enumerate(ours)]
        + [
            {"id": "sb-01KHD9X4T2ZB8Y7VQ6W5M3N1F4", "createdAt": T0 + 100},  # untagged
            {"id": "sb-01KHD9X4T2ZB8Y7VQ6W5M3N1G5", "tags": {"sandbox-reclaim": "owner-b"}, "createdAt": T0 + 101},
            {"id": "sb-01KHD9X4T2ZB8Y7VQ6W5M3N1H6", "appId": OTHER_APP, "tags": OWNER, "createdAt": T0 + 102},
            {"id": "sb-01KHD9X4T2ZB8Y7VQ6W5M3N1J7", "tags": OWNER, "createdAt": T0 + 103, "finished": True},
            {
                "id": "sb-01KHD9X4T2ZB8Y7VQ6W5M3N1K8",
                "appId": STAGING_APP,
                "environment": "staging",
                "tags": OWNER,
                "createdAt": T0 + 104,
            },
        ]
    )
    return list(reversed(ours))


# ------------------------------------------------------------ the official client


def test_a_wrong_token_is_refused_as_modal_refuses_it(fake: Fake) -> None:
    fake.seed([{"id": V1_IDS[0], "tags": OWNER}, {"id": V2_IDS[0], "tags": OWNER}])
    refused = run(fake, "list", {"appId": APP, "tags": OWNER}, secret="as-wrong")
    assert refused == {"error": "AuthError", "message": "Invalid token ID or token secret"}
    assert run(fake, "from_id", {"ids": [V1_IDS[0]]}, secret="as-wrong") == [
        {"error": "AuthError", "message": "Invalid token ID or token secret"}
    ]
    assert run(fake, "list", {"appId": APP, "tags": OWNER}, secret="not-a-secret") == {
        "error": "AuthError",
        "message": "Token secret is malformed",
    }
    # The V2 listing fails at its AuthTokenGet; the V1 lookup on its own call. Nothing else was tried.
    assert [(r["method"], r["authorized"]) for r in fake.requests()] == [
        ("AuthTokenGet", False),
        ("SandboxWait", False),
        ("AuthTokenGet", False),
    ]
    assert fake.state()["alive"] == sorted([V1_IDS[0], V2_IDS[0]])


def test_listing_pages_until_an_empty_page_and_answers_only_the_tagged(fake: Fake) -> None:
    ours = seed_owner_fleet(fake)
    fake.faults(pageSize=3)
    assert run(fake, "list", {"appId": APP, "tags": OWNER}) == {"ids": ours}
    listings = fake.requests("SandboxListV2")
    # 10 sandboxes, 3 a page: 4 pages, then the empty one; each cursor is the previous page's last created_at.
    assert len(listings) == 5
    assert [r["beforeTimestamp"] for r in listings] == [0.0, T0 + 7, T0 + 4, T0 + 1, T0]
    assert all(r["appId"] == APP and r["tags"] == OWNER and r["environmentName"] == "" for r in listings)
    assert all(r["includeFinished"] is False and r["authorized"] for r in listings)
    assert [r["method"] for r in fake.requests()][0] == "AuthTokenGet"
    assert len(fake.requests("AuthTokenGet")) == 1
    # Tags are all-of: one more tag narrows to the one sandbox that has it.
    assert run(fake, "list", {"appId": APP, "tags": {**OWNER, "k": "4"}}) == {"ids": [V2_IDS[1]]}
    assert run(fake, "list", {"appId": OTHER_APP, "tags": OWNER}) == {"ids": ["sb-01KHD9X4T2ZB8Y7VQ6W5M3N1H6"]}


def test_listing_without_an_app_is_deprecated_and_scoped_by_environment(fake: Fake) -> None:
    seed_owner_fleet(fake)
    staging = run(fake, "list", {"tags": OWNER}, MODAL_ENVIRONMENT="staging")
    assert staging["ids"] == ["sb-01KHD9X4T2ZB8Y7VQ6W5M3N1K8"]
    assert any("Listing Sandboxes without an `app_id` scans the entire Environment" in w for w in staging["warnings"])
    assert fake.requests("SandboxListV2")[0]["environmentName"] == "staging"


def test_from_id_takes_the_v1_or_v2_call_by_the_id_shape(fake: Fake) -> None:
    fake.seed(
        [
            {"id": V1_IDS[0]},
            {"id": V2_IDS[0]},
            {"id": V1_IDS[1], "finished": True},
            {"id": V2_IDS[1], "finished": True},
        ]
    )
    found = run(fake, "from_id", {"ids": [V1_IDS[0], V2_IDS[0], V1_IDS[1], V2_IDS[1]]})
    assert found == [
        {"id": V1_IDS[0], "returncode": None},
        {"id": V2_IDS[0], "returncode": None},
        {"id": V1_IDS[1], "returncode": 0},
        {"id": V2_IDS[1], "returncode": 0},
    ]
    assert [(r["method"], r.get("id")) for r in fake.requests()] == [
        ("SandboxWait", V1_IDS[0]),
        ("AuthTokenGet", None),
        ("SandboxWaitV2", V2_IDS[0]),
        ("SandboxWait", V1_IDS[1]),
        ("SandboxWaitV2", V2_IDS[1]),
    ]


def test_terminate_ends_a_sandbox_once_and_a_finished_one_terminates_as_success(fake: Fake) -> None:
    fake.seed([{"id": V1_IDS[0], "tags": OWNER}, {"id": V2_IDS[0], "tags": OWNER}, {"id": V2_IDS[1], "tags": OWNER}])
    ended = run(fake, "terminate", {"ids": [V2_IDS[0], V1_IDS[0]]})
    # 137: GENERIC_STATUS_TERMINATED as the client reads it; the second terminate is a success.
    assert ended == [
        {"id": V2_IDS[0], "returncode": 137, "again": "ok"},
        {"id": V1_IDS[0], "returncode": 137, "again": "ok"},
    ]
    assert fake.state()["terminated"] == [V2_IDS[0], V1_IDS[0]]
    assert fake.state()["alive"] == [V2_IDS[1]]
    assert [r.get("id") for r in fake.requests("SandboxTerminateV2")] == [V2_IDS[0], V2_IDS[0]]
    assert [r.get("id") for r in fake.requests("SandboxTerminate")] == [V1_IDS[0], V1_IDS[0]]
    assert run(fake, "list", {"appId": APP, "tags": OWNER}) == {"ids": [V2_IDS[1]]}


def test_an_unknown_id_is_not_found(fake: Fake) -> None:
    fake.seed([{"id": V2_IDS[0]}, {"id": V1_IDS[0]}])
    assert run(fake, "from_id", {"ids": [V1_IDS[2], V2_IDS[2]]}) == [
        {"error": "NotFoundError", "message": f"Sandbox {V1_IDS[2]} not found"},
        {"error": "NotFoundError", "message": f"Sandbox {V2_IDS[2]} not found"},
    ]
    # A handle whose sandbox has gone (the fake forgets everything in between).
    assert run(fake, "terminate_gone", {"ids": [V2_IDS[0], V1_IDS[0]]}) == [
        {"error": "NotFoundError", "message": f"Sandbox {V2_IDS[0]} not found"},
        {"error": "NotFoundError", "message": f"Sandbox {V1_IDS[0]} not found"},
    ]


def test_tags_are_set_whole_and_read_back_and_listed_by(fake: Fake) -> None:
    fake.seed([{"id": V2_IDS[0], "tags": {"old": "x"}}, {"id": V1_IDS[0]}])
    tagged = run(fake, "tags", {"ids": [V2_IDS[0], V1_IDS[0]], "tags": OWNER})
    assert tagged == [{"id": V2_IDS[0], "tags": OWNER}, {"id": V1_IDS[0], "tags": OWNER}]
    assert [r["method"] for r in fake.requests() if r["method"].startswith("SandboxTags")] == [
        "SandboxTagsSetV2",
        "SandboxTagsGetV2",
        "SandboxTagsSet",
        "SandboxTagsGet",
    ]
    assert fake.requests("SandboxTagsSetV2")[0]["tags"] == OWNER
    assert run(fake, "list", {"appId": APP, "tags": OWNER}) == {"ids": [V1_IDS[0], V2_IDS[0]]}


def test_throttled_terminates_carry_modals_retry_policy(fake: Fake) -> None:
    fake.seed([{"id": V2_IDS[0]}, {"id": V2_IDS[1]}])
    fake.faults(rateLimitDeletes=2, retryAfterSeconds=0.2)
    started = time.monotonic()
    # The client sleeps the policy's retry_after_secs and tries again, unasked.
    assert run(fake, "terminate", {"ids": [V2_IDS[0]]}) == [{"id": V2_IDS[0], "returncode": 137, "again": "ok"}]
    assert time.monotonic() - started >= 0.4
    assert len(fake.requests("SandboxTerminateV2")) == 4  # 2 throttled, 1 through, 1 again
    fake.faults(rateLimitDeletes=1)
    refused = run(fake, "terminate", {"ids": [V2_IDS[1]]}, MODAL_MAX_THROTTLE_WAIT="0")
    assert refused == [{"error": "ResourceExhaustedError", "message": "Too many requests: rate limit exceeded"}]


def test_failed_terminates_are_internal_and_retried_by_the_client(fake: Fake) -> None:
    fake.seed([{"id": V2_IDS[0]}])
    fake.faults(failDeleteEvery=1)
    failed = run(fake, "terminate", {"ids": [V2_IDS[0]]})
    assert failed == [{"error": "InternalError", "message": "Internal server error"}]
    assert len(fake.requests("SandboxTerminateV2")) == 4  # the client's 3 retries of INTERNAL
    assert fake.state()["alive"] == [V2_IDS[0]]


def test_a_hanging_listing_the_client_gives_up_on_is_abandoned(fake: Fake) -> None:
    fake.seed([{"id": V2_IDS[0], "tags": OWNER}])
    fake.faults(hangLists=True)
    assert run(fake, "list_with_deadline", {"appId": APP, "tags": OWNER, "seconds": 0.5}) == {"timedOut": True}
    assert asyncio.run(wait_abandoned(fake, 1)) == 1


# ------------------------------------------------------------ the raw wire


class Wire:
    """A bare grpclib client on the package's stubs: what a client of our own sends."""

    def __init__(self, fake: Fake) -> None:
        from grpclib.client import Channel
        from modal_proto import api_grpc

        self.channel = Channel("127.0.0.1", fake.port())
        self.stub = api_grpc.ModalClientStub(self.channel)
        self.token = ""

    async def __aenter__(self) -> Wire:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.channel.close()

    async def authenticate(self) -> dict[str, str]:
        """Credentials and a fresh JWT from AuthTokenGet, as every V2 call needs."""
        from modal_proto import api_pb2

        reply = await self.stub.AuthTokenGet(api_pb2.AuthTokenGetRequest(), metadata=CREDENTIALS)
        self.token = reply.token
        return {**CREDENTIALS, "x-modal-auth-token": self.token}

    async def pages(self, metadata: dict[str, str], limit: int = 10, **request: Any) -> list[list[str]]:
        """The ids of each page of a listing, paged as the client pages, at most ``limit`` pages."""
        from modal_proto import api_pb2

        pages: list[list[str]] = []
        before = 0.0
        for _ in range(limit):
            reply = await self.stub.SandboxListV2(
                api_pb2.SandboxListRequest(before_timestamp=before, **request), metadata=metadata
            )
            if not reply.sandboxes:
                break
            pages.append([s.id for s in reply.sandboxes])
            before = reply.sandboxes[-1].created_at
        return pages


def seed_pages(fake: Fake, count: int) -> list[str]:
    """``count`` tagged V2 sandboxes in APP, a second apart; their ids newest first."""
    ids = [f"sb-01KHD9X4T2ZB8Y7VQ6W5M3N{i:03d}" for i in range(count)]
    fake.seed([{"id": sandbox_id, "tags": OWNER, "createdAt": T0 + i} for i, sandbox_id in enumerate(ids)])
    return list(reversed(ids))


async def wait_abandoned(fake: Fake, count: int) -> int:
    seen = 0
    for _ in range(100):
        seen = fake.state()["abandoned"]
        if seen >= count:
            break
        await asyncio.sleep(0.02)
    return seen


async def test_v2_calls_need_the_auth_token_and_every_call_the_client_headers(fake: Fake) -> None:
    from grpclib import GRPCError, Status
    from modal_proto import api_pb2

    seed_pages(fake, 1)
    request = api_pb2.SandboxListRequest(app_id=APP)
    async with Wire(fake) as wire:
        with pytest.raises(GRPCError) as missing:
            await wire.stub.SandboxListV2(request, metadata=CREDENTIALS)
        assert missing.value.status == Status.UNAUTHENTICATED
        bare = {k: v for k, v in CREDENTIALS.items() if k != "x-modal-client-version"}
        with pytest.raises(GRPCError) as headerless:
            await wire.stub.SandboxWait(api_pb2.SandboxWaitRequest(sandbox_id=V1_IDS[0]), metadata=bare)
        assert (headerless.value.status, headerless.value.message) == (
            Status.FAILED_PRECONDITION,
            "Missing x-modal-client-version header",
        )
        fake.faults(authTokenTtlSeconds=600)
        metadata = await wire.authenticate()
        claims = json.loads(base64.urlsafe_b64decode(wire.token.split(".")[1] + "=="))
        assert isinstance(claims["exp"], int) and abs(claims["exp"] - (time.time() + 600)) < 5
        assert len((await wire.stub.SandboxListV2(request, metadata=metadata)).sandboxes) == 1
        fake.faults(authTokenTtlSeconds=0)
        expired = await wire.authenticate()
        with pytest.raises(GRPCError) as stale:
            await wire.stub.SandboxListV2(request, metadata=expired)
        assert (stale.value.status, stale.value.message) == (Status.UNAUTHENTICATED, "Auth token expired")


async def test_a_malformed_page_has_an_empty_id_and_an_unset_created_at(fake: Fake) -> None:
    from modal_proto import api_pb2

    ids = seed_pages(fake, 5)
    fake.faults(pageSize=2, malformedPage=2)
    async with Wire(fake) as wire:
        metadata = await wire.authenticate()
        assert await wire.pages(metadata, limit=1, app_id=APP) == [ids[:2]]
        cursor = (await wire.stub.SandboxListV2(api_pb2.SandboxListRequest(app_id=APP), metadata=metadata)).sandboxes
        page_two = await wire.stub.SandboxListV2(
            api_pb2.SandboxListRequest(app_id=APP, before_timestamp=cursor[-1].created_at), metadata=metadata
        )
    assert [s.id for s in page_two.sandboxes] == ["", ids[3]]
    assert page_two.sandboxes[-1].created_at == 0.0  # unset: as the next cursor it restarts the listing


async def test_repeated_and_cycling_pages(fake: Fake) -> None:
    ids = seed_pages(fake, 5)
    async with Wire(fake) as wire:
        metadata = await wire.authenticate()
        fake.faults(pageSize=2)
        assert await wire.pages(metadata, app_id=APP) == [ids[0:2], ids[2:4], ids[4:]]
        fake.faults(repeatAcrossPages=True)
        assert await wire.pages(metadata, app_id=APP) == [ids[0:2], [ids[1], *ids[2:4]], [ids[3], ids[4]]]
        fake.faults(repeatAcrossPages=False, cycleCursor=True)
        cycled = await wire.pages(metadata, limit=4, app_id=APP)
    assert cycled == [ids[0:2], [ids[2], ids[1]], [ids[2], ids[1]], [ids[2], ids[1]]]


async def test_a_terminated_sandbox_stays_listed_for_a_while(fake: Fake) -> None:
    from modal_proto import api_pb2

    ids = seed_pages(fake, 2)
    fake.faults(deletedStayListedMs=60_000)
    running = api_pb2.GenericResult.GENERIC_STATUS_UNSPECIFIED
    terminated = api_pb2.GenericResult.GENERIC_STATUS_TERMINATED
    async with Wire(fake) as wire:
        metadata = await wire.authenticate()
        await wire.stub.SandboxTerminateV2(api_pb2.SandboxTerminateRequest(sandbox_id=ids[0]), metadata=metadata)
        listed = await wire.stub.SandboxListV2(api_pb2.SandboxListRequest(app_id=APP), metadata=metadata)
        assert [(s.id, s.task_info.result.status) for s in listed.sandboxes] == [(ids[0], running), (ids[1], running)]
        fake.faults(deletedStayListedMs=0)  # read at listing time: as if the minute had passed
        listed = await wire.stub.SandboxListV2(api_pb2.SandboxListRequest(app_id=APP), metadata=metadata)
        assert [s.id for s in listed.sandboxes] == [ids[1]]
        every = api_pb2.SandboxListRequest(app_id=APP, include_finished=True)
        finished = await wire.stub.SandboxListV2(every, metadata=metadata)
    assert [(s.id, s.task_info.result.status) for s in finished.sandboxes] == [(ids[0], terminated), (ids[1], running)]


async def test_failing_slow_and_hanging_terminates(fake: Fake) -> None:
    from grpclib import GRPCError
    from modal_proto import api_pb2

    ids = seed_pages(fake, 3)
    fake.faults(failDeleteEvery=2, latencyMs=50)
    outcomes: list[str] = []
    async with Wire(fake) as wire:
        metadata = await wire.authenticate()
        for sandbox_id in ids:
            started = time.monotonic()
            try:
                request = api_pb2.SandboxTerminateRequest(sandbox_id=sandbox_id)
                await wire.stub.SandboxTerminateV2(request, metadata=metadata)
                outcomes.append("ok")
            except GRPCError as error:
                outcomes.append(error.status.name)
            assert time.monotonic() - started >= 0.05
        assert outcomes == ["ok", "INTERNAL", "ok"]
        fake.faults(failDeleteEvery=0, latencyMs=0, hangDeletes=True)
        with pytest.raises(asyncio.TimeoutError):
            request = api_pb2.SandboxTerminateRequest(sandbox_id=ids[1])
            await wire.stub.SandboxTerminateV2(request, metadata=metadata, timeout=0.2)
    assert await wait_abandoned(fake, 1) == 1
    assert fake.state()["alive"] == [ids[1]]


def test_the_control_routes_refuse_what_modal_would_never_list(fake: Fake) -> None:
    refused_seeds: list[dict[str, Any]] = [
        {"id": "sb-123"},  # neither shape
        {"id": "sb-81ARZ3NDEKTSV4RRFFQ69G5FAV"},  # not a ULID (above 7 in its first character)
        {"tags": {"a": 1}},
        {"appId": "app-1"},
        {"environment": "staging"},  # the default app lives in the default environment
    ]
    for bad in refused_seeds:
        with pytest.raises(urllib.error.HTTPError) as refused:
            fake.seed([bad])
        assert refused.value.code == 400
    with pytest.raises(urllib.error.HTTPError):
        fake.faults(pageSize=0)
    with pytest.raises(urllib.error.HTTPError):
        fake.faults(noSuchFault=True)
    assert fake.state() == {"alive": [], "requests": [], "abandoned": 0, "terminated": [], "tokensIssued": 0}


# ------------------------------------------------------------ the proofs, run in a fresh interpreter


def attempt(call: Callable[[], Any]) -> Any:
    """What ``call`` answers, or the Modal error it raises as ``{error, message}``."""
    import modal.exception

    try:
        return call()
    except modal.exception.Error as error:
        return {"error": type(error).__name__, "message": str(error)}


def proof_list(args: dict[str, Any]) -> Any:
    import modal

    def listed() -> dict[str, Any]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ids = [sandbox.object_id for sandbox in modal.Sandbox.list(app_id=args.get("appId"), tags=args["tags"])]
        return {"ids": ids, "warnings": [str(w.message) for w in caught]} if "appId" not in args else {"ids": ids}

    return attempt(listed)


def proof_from_id(args: dict[str, Any]) -> Any:
    import modal

    def found(sandbox_id: str) -> dict[str, Any]:
        sandbox = modal.Sandbox.from_id(sandbox_id)
        return {"id": sandbox.object_id, "returncode": sandbox.returncode}

    return [attempt(lambda: found(sandbox_id)) for sandbox_id in args["ids"]]


def proof_terminate(args: dict[str, Any]) -> Any:
    import modal

    def ended(sandbox_id: str) -> dict[str, Any]:
        sandbox = modal.Sandbox.from_id(sandbox_id)
        sandbox.terminate()
        returncode = sandbox.poll()
        sandbox.terminate()  # finished: a no-op success
        return {"id": sandbox_id, "returncode": returncode, "again": "ok"}

    return [attempt(lambda: ended(sandbox_id)) for sandbox_id in args["ids"]]


def proof_terminate_gone(args: dict[str, Any]) -> Any:
    import modal

    sandboxes = [modal.Sandbox.from_id(sandbox_id) for sandbox_id in args["ids"]]
    request = urllib.request.Request(f"{args['control']}/_fake/reset", data=b"{}", method="POST")
    urllib.request.urlopen(request, timeout=10).close()
    return [attempt(lambda: sandbox.terminate()) for sandbox in sandboxes]


def proof_tags(args: dict[str, Any]) -> Any:
    import modal

    def tagged(sandbox_id: str) -> dict[str, Any]:
        sandbox = modal.Sandbox.from_id(sandbox_id)
        sandbox.set_tags(args["tags"])
        return {"id": sandbox_id, "tags": sandbox.get_tags()}

    return [attempt(lambda: tagged(sandbox_id)) for sandbox_id in args["ids"]]


def proof_list_with_deadline(args: dict[str, Any]) -> Any:
    import modal

    async def first() -> Any:
        async for sandbox in modal.Sandbox.list.aio(app_id=args["appId"], tags=args["tags"]):
            return sandbox.object_id
        return None

    async def bounded() -> dict[str, Any]:
        try:
            await asyncio.wait_for(first(), args["seconds"])
        except asyncio.TimeoutError:
            return {"timedOut": True}
        return {"timedOut": False}

    return asyncio.run(bounded())


PROOFS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "list": proof_list,
    "from_id": proof_from_id,
    "terminate": proof_terminate,
    "terminate_gone": proof_terminate_gone,
    "tags": proof_tags,
    "list_with_deadline": proof_list_with_deadline,
}


if __name__ == "__main__":
    print(json.dumps(PROOFS[sys.argv[1]](json.loads(sys.argv[2]))))
