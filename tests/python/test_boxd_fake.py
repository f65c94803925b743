"""The boxd fake (tests/fakes/boxd_fake.py) driven by the official Python
client, PyPI ``boxd`` 0.2.19 (pinned in scripts/test-python.sh), as
tests/python/test_modal_fake.py drives the Modal fake: the API-key exchange
then the listing, a token given as is, refused credentials, the listing by
org and by label (one answer, no paging), ``get`` by id or name, not found,
``delete`` once and again, ``create``, and the faults read as the client
reads boxd's. Each proof runs the client in a fresh ``python`` subprocess
(this file, run as a program), so its environment (``BOXD_*``) and its
cached token start clean. What the official client cannot show (the
server-side label filter it repeats client-side, a malformed listing, an
expired token, the HTTP/1.1 exchange on the gRPC port) is read on the raw
wire with the stubs the package ships.

Needs only pytest and ``boxd`` (with its ``grpcio``), never
``sandbox_reclaim``; a missing ``boxd`` FAILS these tests under CI, never
skips them (:func:`services.needs`). ``boxd`` ships no ``py.typed``, so it
is imported through :mod:`importlib` (typed ``Any``)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fake_process import FakeProcess, need_package

BOXD_VERSION = "0.2.19"
FAKE = Path(__file__).resolve().parents[1] / "fakes" / "boxd_fake.py"
API_KEY = "bxd_test_key"
TOKEN = "boxd-test-session-token"
ORG = "acme"
T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
OWNER_KEY = "io.sandbox-reclaim.owner"
OWNER = {OWNER_KEY: "owner-a"}
IDS = [f"0c0ffee0-0000-4000-8000-00000000000{i}" for i in range(6)]


@pytest.fixture(autouse=True)
def _boxd_installed() -> None:
    need_package("boxd", BOXD_VERSION, "the boxd fake is proven with the official client (pip install boxd==0.2.19)")


class Fake(FakeProcess):
    """The boxd fake in a ``python`` subprocess, serving until its stdin closes."""

    seed_route = "vms"

    def __init__(self, *args: str) -> None:
        super().__init__([sys.executable, str(FAKE), *args])
        self.exchange: str = self.started["exchange"]

    def requests(self, method: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.state()["requests"] if method is None or r["method"] == method]

    def target(self) -> str:
        return self.url.removeprefix("http://")


@pytest.fixture
def fake() -> Iterator[Fake]:
    started = Fake()
    try:
        yield started
    finally:
        started.close()


def run(fake: Fake, steps: list[dict[str, Any]], client: dict[str, Any] | None = None, **env: str) -> list[Any]:
    """Runs ``steps`` (see :func:`proof`) with one official client in a fresh interpreter.
    ``BOXD_BASE_URL`` is the fake; credentials come from ``env`` (or ``client``)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("BOXD_")}
    clean.update(BOXD_BASE_URL=fake.url, **env)
    done = subprocess.run(
        [sys.executable, __file__, json.dumps({"client": client or {}, "steps": steps})],
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    results: list[Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return results


def seed_fleet(fake: Fake) -> None:
    """Ours in acme (labelled), a stranger's in acme, personal ones, and one in an org we are not in."""
    fake.seed(
        [
            {"id": IDS[0], "name": "tanstack-ai-0123456789abcdef", "org": ORG, "labels": OWNER, "created_at": T0},
            {"id": IDS[1], "name": "worker-1", "org": ORG, "labels": {**OWNER, "k": "1"}, "created_at": T0 + 1},
            {"id": IDS[2], "name": "theirs", "org": ORG, "labels": {OWNER_KEY: "owner-b"}, "created_at": T0 + 2},
            {"id": IDS[3], "name": "personal", "labels": OWNER, "created_at": T0 + 3, "status": "suspended"},
            {"id": IDS[4], "name": "elsewhere", "org": "other-org", "labels": OWNER, "created_at": T0 + 4},
        ]
    )


def ids(listed: Any) -> list[str]:
    assert isinstance(listed, list), listed
    return [machine["id"] for machine in listed]


# ------------------------------------------------------------ the official client


def test_an_api_key_is_exchanged_for_a_token_then_every_call_carries_it(fake: Fake) -> None:
    seed_fleet(fake)
    listed, got, personal = run(
        fake,
        [{"op": "list", "org": ORG}, {"op": "get", "id": IDS[1]}, {"op": "list"}],
        BOXD_API_KEY=API_KEY,
    )
    assert ids(listed) == IDS[:3]
    assert got["id"] == IDS[1] and got["name"] == "worker-1"
    assert ids(personal) == [IDS[3]]
    requests = fake.requests()
    # One exchange, over HTTP/1.1 on the gRPC port, then gRPC calls with its JWT as the bearer.
    assert requests[0] == {"method": "POST", "path": "/api/v1/auth/token", "status": 200}
    assert [r["method"] for r in requests[1:]] == ["ListVms", "GetVm", "ListVms"]
    assert all(r["authorized"] and r["auth"] == "bearer" for r in requests[1:])
    assert all(r["sdkVersion"] == BOXD_VERSION for r in requests[1:])
    assert [r["org"] for r in fake.requests("ListVms")] == [ORG, ""]
    assert fake.state()["tokensIssued"] == 1
    assert API_KEY not in json.dumps(fake.state())


def test_a_token_given_directly_is_used_as_is_and_never_exchanged(fake: Fake) -> None:
    seed_fleet(fake)
    # BOXD_TOKEN outranks BOXD_API_KEY (a wrong key here would fail an exchange).
    (listed,) = run(fake, [{"op": "list", "org": ORG}], BOXD_TOKEN=TOKEN, BOXD_API_KEY="bxd_wrong")
    assert ids(listed) == IDS[:3]
    (got,) = run(fake, [{"op": "get", "id": IDS[3]}], {"token": TOKEN})
    assert got["status"] == "suspended"
    assert [r["method"] for r in fake.requests()] == ["ListVms", "GetVm"]
    assert fake.state()["tokensIssued"] == 0


def test_a_wrong_credential_is_refused_as_the_sdk_surfaces_it(fake: Fake) -> None:
    seed_fleet(fake)
    refused = run(fake, [{"op": "list", "org": ORG}, {"op": "delete", "id": IDS[0]}], BOXD_API_KEY="bxd_wrong")
    assert refused == [
        {"error": "AuthenticationError", "code": None, "message": "invalid or expired API key"},
    ] * 2
    # The exchange refused the key (and was asked again for the second call); no gRPC call was made.
    assert fake.requests() == [{"method": "POST", "path": "/api/v1/auth/token", "status": 401}] * 2
    bad_token = run(fake, [{"op": "list", "org": ORG}, {"op": "delete", "id": IDS[0]}], BOXD_TOKEN="not-ours")
    assert bad_token == [{"error": "AuthenticationError", "code": "unauthenticated", "message": "invalid token"}] * 2
    # A bxd_ key is never a bearer.
    (as_bearer,) = run(fake, [{"op": "get", "id": IDS[0]}], {"token": API_KEY})
    assert as_bearer["error"] == "AuthenticationError" and as_bearer["code"] == "unauthenticated"
    grpc_calls = [r for r in fake.requests() if r["method"] != "POST"]
    assert [(r["method"], r["authorized"], r["status"]) for r in grpc_calls] == [
        ("ListVms", False, "UNAUTHENTICATED"),
        ("DestroyVm", False, "UNAUTHENTICATED"),
        ("GetVm", False, "UNAUTHENTICATED"),
    ]
    # UNAUTHENTICATED is terminal for the client: no retry. Nothing was destroyed.
    assert fake.state()["destroyed"] == []
    assert IDS[0] in fake.state()["alive"]


def test_listing_scopes_by_org_and_filters_by_label(fake: Fake) -> None:
    seed_fleet(fake)
    owned, ours_by_list, everywhere, one, not_member = run(
        fake,
        [
            {"op": "list", "org": ORG, "labels": OWNER},
            {"op": "list", "org": ORG, "labels": [f"{OWNER_KEY}=owner-a", "k"]},
            {"op": "list", "all_contexts": True, "labels": [OWNER_KEY]},
            {"op": "list", "org": ORG, "labels": {**OWNER, "k": "1"}},
            {"op": "list", "org": "other-org"},
        ],
        BOXD_TOKEN=TOKEN,
    )
    assert ids(owned) == IDS[:2]
    assert ids(ours_by_list) == [IDS[1]]
    # Personal and every org the caller is in (not other-org), label key present.
    assert ids(everywhere) == IDS[:4]
    assert ids(one) == [IDS[1]]
    assert not_member == {
        "error": "PermissionDeniedError",
        "code": "permission_denied",
        "message": "not a member of org other-org",
    }
    selectors = [r["labelSelector"] for r in fake.requests("ListVms")]
    assert selectors[:3] == [[f"{OWNER_KEY}=owner-a"], [f"{OWNER_KEY}=owner-a", "k"], [OWNER_KEY]]
    assert fake.requests("ListVms")[2]["allContexts"] is True


def test_get_reads_a_machine_by_id_or_name_as_the_sdk_maps_it(fake: Fake) -> None:
    seed_fleet(fake)
    by_id, by_name, personal = run(
        fake,
        [{"op": "get", "id": IDS[0]}, {"op": "get", "id": "worker-1"}, {"op": "get", "id": IDS[3]}],
        BOXD_TOKEN=TOKEN,
    )
    assert by_id == {
        "id": IDS[0],
        "name": "tanstack-ai-0123456789abcdef",
        "status": "running",
        "created_at": T0,  # int64 epoch seconds on the wire, a UTC datetime in the client
        "labels": OWNER,
        "org": ORG,  # billing_org: private machines of an org leave `org` empty
        "shared": False,
    }
    assert by_name["id"] == IDS[1] and by_name["labels"] == {**OWNER, "k": "1"}
    assert personal["org"] is None and personal["status"] == "suspended"


def test_an_unknown_or_invisible_machine_is_not_found(fake: Fake) -> None:
    seed_fleet(fake)
    unknown, elsewhere = run(fake, [{"op": "get", "id": IDS[5]}, {"op": "get", "id": IDS[4]}], BOXD_TOKEN=TOKEN)
    assert unknown == {"error": "NotFoundError", "code": "not_found", "message": f"machine {IDS[5]} not found"}
    assert elsewhere["error"] == "NotFoundError"  # in an org the caller is not in
    assert [r["status"] for r in fake.requests("GetVm")] == ["NOT_FOUND", "NOT_FOUND"]


def test_destroy_is_terminal_and_destroying_again_is_not_found(fake: Fake) -> None:
    seed_fleet(fake)
    results = run(
        fake,
        [
            {"op": "delete", "id": IDS[1]},
            {"op": "delete", "id": IDS[1]},
            {"op": "get", "id": IDS[1]},
            {"op": "list", "org": ORG},
            {"op": "delete", "id": "tanstack-ai-0123456789abcdef"},  # by name
            {"op": "list", "org": ORG},
        ],
        BOXD_TOKEN=TOKEN,
    )
    gone = {"error": "NotFoundError", "code": "not_found", "message": f"machine {IDS[1]} not found"}
    assert results[:3] == ["ok", gone, gone]
    assert ids(results[3]) == [IDS[0], IDS[2]]
    assert results[4] == "ok"
    assert ids(results[5]) == [IDS[2]]
    state = fake.state()
    assert state["destroyed"] == [IDS[1], IDS[0]]
    assert state["alive"] == sorted([IDS[2], IDS[3], IDS[4]])
    assert [r["id"] for r in fake.requests("DestroyVm")] == [IDS[1], IDS[1], "tanstack-ai-0123456789abcdef"]


def test_create_makes_a_machine_the_sdk_reads_back(fake: Fake) -> None:
    labels = {**OWNER, "io.sandbox-reclaim.key": "k-1"}
    before = int(time.time())
    created, duplicate, listed, unnamed, bad_name, bad_label = run(
        fake,
        [
            {"op": "create", "name": "tanstack-ai-00000000000000aa", "org": ORG, "labels": labels},
            {"op": "create", "name": "tanstack-ai-00000000000000aa", "org": ORG},
            {"op": "list", "org": ORG, "labels": OWNER},
            {"op": "create"},
            {"op": "create", "name": "3f00"},
            {"op": "create", "name": "fine", "labels": {"boxd/reserved": "x"}},
        ],
        BOXD_API_KEY=API_KEY,
    )
    assert created["name"] == "tanstack-ai-00000000000000aa" and created["status"] == "running"
    assert created["labels"] == labels and created["org"] == ORG
    assert before <= created["created_at"] <= time.time() + 1
    assert duplicate["error"] == "ConflictError" and duplicate["code"] == "already_exists"
    assert ids(listed) == [created["id"]]
    assert unnamed["name"].startswith("vm-") and unnamed["org"] is None
    assert bad_name["error"] == "APIStatusError" and bad_name["code"] == "invalid_argument"
    assert bad_label["error"] == "APIStatusError" and "reserved" in bad_label["message"]
    # create() re-reads the machine with GetVm.
    assert [r["method"] for r in fake.requests() if r["method"] != "POST"][:2] == ["CreateVm", "GetVm"]
    assert fake.requests("CreateVm")[0] == {
        "method": "CreateVm",
        "authorized": True,
        "name": "tanstack-ai-00000000000000aa",
        "org": ORG,
        "labels": labels,
        "auth": "bearer",
        "sdkVersion": BOXD_VERSION,
        "status": "OK",
    }
    assert sorted(fake.state()["alive"]) == sorted([created["id"], unnamed["id"]])


def test_a_rate_limited_destroy_surfaces_unretried(fake: Fake) -> None:
    seed_fleet(fake)
    answered = fake.faults(rate_limit_destroys=1)  # the brief's name, answered as the canonical one
    assert answered["rateLimitDeletes"] == 1
    limited, through = run(fake, [{"op": "delete", "id": IDS[0]}, {"op": "delete", "id": IDS[0]}], BOXD_TOKEN=TOKEN)
    assert limited == {"error": "RateLimitError", "code": "resource_exhausted", "message": "rate limit exceeded"}
    assert through == "ok"
    # The client retries UNAVAILABLE only: one refused call, then the second step's.
    assert [r["status"] for r in fake.requests("DestroyVm")] == ["RESOURCE_EXHAUSTED", "OK"]
    assert fake.state()["destroyed"] == [IDS[0]]


def test_failed_destroys_are_internal_and_unretried(fake: Fake) -> None:
    seed_fleet(fake)
    fake.faults(fail_destroy_every=2)
    results = run(fake, [{"op": "delete", "id": i} for i in IDS[:3]], BOXD_TOKEN=TOKEN)
    assert results == ["ok", {"error": "APIStatusError", "code": "internal", "message": "internal error"}, "ok"]
    assert len(fake.requests("DestroyVm")) == 3
    assert fake.state()["destroyed"] == [IDS[0], IDS[2]]


def test_the_key_exchange_waits_out_one_retry_after(fake: Fake) -> None:
    seed_fleet(fake)
    fake.faults(rateLimitExchanges=1, retryAfterSeconds=0.5)
    (listed,) = run(fake, [{"op": "list", "org": ORG, "timed": True}], BOXD_API_KEY=API_KEY)
    assert ids(listed["result"]) == IDS[:3]
    # It waited the Retry-After the 429 carried (without one it waits 5 s).
    assert 0.5 <= listed["seconds"] < 4
    exchanges = [r["status"] for r in fake.requests("POST")]
    assert exchanges == [429, 200]
    fake.faults(rateLimitExchanges=2, retryAfterSeconds=0.2)
    (refused,) = run(fake, [{"op": "list", "org": ORG}], BOXD_API_KEY=API_KEY)
    assert refused["error"] == "RateLimitError"
    assert refused["message"].startswith("token exchange rate limit exceeded")
    assert [r["status"] for r in fake.requests("POST")] == [429, 200, 429, 429]


def test_a_token_near_its_expiry_is_exchanged_again(fake: Fake) -> None:
    seed_fleet(fake)
    # The client re-exchanges 300 s before expiry: a 60 s token is renewed before every call.
    fake.faults(authTokenTtlSeconds=60)
    run(fake, [{"op": "get", "id": IDS[0]}, {"op": "get", "id": IDS[1]}], BOXD_API_KEY=API_KEY)
    assert fake.state()["tokensIssued"] == 2
    fake.faults(authTokenTtlSeconds=3600)
    run(fake, [{"op": "get", "id": IDS[0]}, {"op": "get", "id": IDS[1]}], BOXD_API_KEY=API_KEY)
    assert fake.state()["tokensIssued"] == 3


def test_the_listing_does_not_page(fake: Fake) -> None:
    many = [{"name": f"vm-{i:04d}", "org": ORG, "labels": OWNER, "created_at": T0 + i} for i in range(300)]
    fake.seed(many)
    (listed,) = run(fake, [{"op": "list", "org": ORG, "labels": OWNER}], BOXD_TOKEN=TOKEN)
    assert [m["name"] for m in listed] == [f"vm-{i:04d}" for i in range(300)]  # oldest first
    assert len(fake.requests("ListVms")) == 1


def test_a_destroyed_machine_can_stay_listed_as_destroyed_for_a_while(fake: Fake) -> None:
    seed_fleet(fake)
    fake.faults(destroying_ms=60_000)
    deleted, listed, got, again = run(
        fake,
        [
            {"op": "delete", "id": IDS[0]},
            {"op": "list", "org": ORG},
            {"op": "get", "id": IDS[0]},
            {"op": "delete", "id": IDS[0]},
        ],
        BOXD_TOKEN=TOKEN,
    )
    assert deleted == "ok" and again == "ok"
    assert [(m["id"], m["status"]) for m in listed] == [(IDS[0], "destroyed"), (IDS[1], "running"), (IDS[2], "running")]
    assert got["status"] == "destroyed"
    assert fake.state()["destroyed"] == [IDS[0]]  # destroyed once
    assert IDS[0] not in fake.state()["alive"]
    fake.faults(deletedStayListedMs=0, destroyingStatus="stopped")  # read per call: as if the minute had passed
    listed_after, got_after = run(fake, [{"op": "list", "org": ORG}, {"op": "get", "id": IDS[0]}], BOXD_TOKEN=TOKEN)
    assert ids(listed_after) == [IDS[1], IDS[2]]
    assert got_after["error"] == "NotFoundError"
    fake.faults(deletedStayListedMs=60_000)
    (stopping,) = run(fake, [{"op": "delete", "id": IDS[1]}, {"op": "list", "org": ORG}], BOXD_TOKEN=TOKEN)[1:]
    assert [(m["id"], m["status"]) for m in stopping] == [(IDS[0], "stopped"), (IDS[1], "stopped"), (IDS[2], "running")]


def test_a_malformed_listing_is_passed_through_by_the_client(fake: Fake) -> None:
    seed_fleet(fake)
    fake.faults(malformed_page=1)
    (listed,) = run(fake, [{"op": "list", "org": ORG}], BOXD_TOKEN=TOKEN)
    # The client neither refuses an empty id nor an unknown status: the sweep has to.
    assert [(m["id"], m["status"], m["created_at"]) for m in listed] == [
        ("", "running", T0),
        (IDS[1], "running", T0 + 1),
        (IDS[2], "unknown", None),
    ]
    fake.faults(malformedPage=0, repeatAcrossPages=True)
    (repeated,) = run(fake, [{"op": "list", "org": ORG}], BOXD_TOKEN=TOKEN)
    assert ids(repeated) == [*IDS[:3], IDS[0]]


def test_hanging_calls_the_client_gives_up_on_are_abandoned(fake: Fake) -> None:
    seed_fleet(fake)
    fake.faults(hang_lists=True, hang_destroys=True)
    listing, destroy = run(
        fake, [{"op": "list", "org": ORG}, {"op": "delete", "id": IDS[0]}], {"token": TOKEN, "timeout": 0.5}
    )
    assert listing["error"] == destroy["error"] == "APIStatusError"
    assert listing["code"] == destroy["code"] == "deadline_exceeded"
    assert wait_abandoned(fake, 2) == 2
    assert IDS[0] in fake.state()["alive"]


def test_latency_slows_every_answer(fake: Fake) -> None:
    seed_fleet(fake)
    fake.faults(latency_ms=300)
    steps = [{"op": "get", "id": IDS[0], "timed": True}, {"op": "list", "org": ORG, "timed": True}]
    timed = run(fake, steps, BOXD_TOKEN=TOKEN)
    assert timed[0]["result"]["id"] == IDS[0] and len(timed[1]["result"]) == 3
    assert all(result["seconds"] >= 0.3 for result in timed), timed


def test_other_methods_are_unimplemented_and_labels_can_be_updated(fake: Fake) -> None:
    seed_fleet(fake)
    stopped, labelled, listed = run(
        fake,
        [
            {"op": "stop", "id": IDS[0]},
            {"op": "update_labels", "id": IDS[3], "set": {"io.sandbox-reclaim.key": "k-9"}, "remove": [OWNER_KEY]},
            {"op": "list", "labels": {"io.sandbox-reclaim.key": "k-9"}},
        ],
        BOXD_TOKEN=TOKEN,
    )
    assert stopped == {
        "error": "APIStatusError",
        "code": "unimplemented",
        "message": "StopVm is not implemented by the boxd fake",
    }
    assert labelled == {"io.sandbox-reclaim.key": "k-9"}
    assert ids(listed) == [IDS[3]]


# ------------------------------------------------------------ the raw wire


def wait_abandoned(fake: Fake, count: int) -> int:
    seen = 0
    for _ in range(100):
        seen = fake.state()["abandoned"]
        if seen >= count:
            break
        time.sleep(0.02)
    return int(seen)


class Wire:
    """A bare ``grpcio`` client on the package's generated stubs: what a client of our own sends."""

    def __init__(self, fake: Fake) -> None:
        self.grpc: Any = importlib.import_module("grpc")
        self.api: Any = importlib.import_module("boxd._generated.api_pb2")
        stubs: Any = importlib.import_module("boxd._generated.api_pb2_grpc")
        self.channel: Any = self.grpc.insecure_channel(fake.target())
        self.stub: Any = stubs.BoxdApiStub(self.channel)

    def __enter__(self) -> Wire:
        return self

    def __exit__(self, *exc: object) -> None:
        self.channel.close()

    def status(self, method: str, request: Any, metadata: list[tuple[str, str]]) -> tuple[str, str]:
        """The status name and details a call answers with."""
        try:
            getattr(self.stub, method)(request, metadata=metadata, timeout=10)
        except self.grpc.RpcError as error:
            return str(error.code().name), str(error.details())
        return "OK", ""


def exchange(fake: Fake, body: bytes, method: str = "POST", path: str = "/api/v1/auth/token") -> tuple[int, Any]:
    request = urllib.request.Request(fake.url + path, data=body if method == "POST" else None, method=method)
    request.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_label_selector_is_applied_by_the_server_not_only_the_client(fake: Fake) -> None:
    seed_fleet(fake)
    with Wire(fake) as wire:
        metadata = [("authorization", f"Bearer {TOKEN}")]
        request = wire.api.ListVmsRequest(org=ORG, label_selector=[f"{OWNER_KEY}=owner-a"])
        reply = wire.stub.ListVms(request, metadata=metadata, timeout=10)
        assert [vm.vm_id for vm in reply.vms] == IDS[:2]
        first = reply.vms[0]
        assert (first.name, first.status, first.created_at, first.billing_org, first.org) == (
            "tanstack-ai-0123456789abcdef",
            "running",
            T0,
            ORG,
            "",
        )
        assert dict(first.labels) == OWNER
        bad = wire.api.ListVmsRequest(org=ORG, label_selector=["Not A Key"])
        assert wire.status("ListVms", bad, metadata) == ("INVALID_ARGUMENT", "invalid label selector 'Not A Key'")


def test_every_call_needs_a_bearer_and_an_expired_jwt_is_refused(fake: Fake) -> None:
    seed_fleet(fake)
    fake.faults(authTokenTtlSeconds=0)
    status, issued = exchange(fake, json.dumps({"api_key": API_KEY}).encode())
    assert status == 200 and issued["expires_at"] <= time.time() + 1
    fake.faults(authTokenTtlSeconds=600)
    _, fresh = exchange(fake, json.dumps({"api_key": API_KEY}).encode())
    assert abs(fresh["expires_at"] - (time.time() + 600)) < 5
    with Wire(fake) as wire:
        get = wire.api.GetVmRequest(vm_id=IDS[0])
        assert wire.status("GetVm", get, []) == ("UNAUTHENTICATED", "missing bearer token")
        assert wire.status("GetVm", get, [("authorization", TOKEN)]) == ("UNAUTHENTICATED", "missing bearer token")
        assert wire.status("GetVm", get, [("authorization", f"Bearer {issued['token']}")]) == (
            "UNAUTHENTICATED",
            "token expired",
        )
        forged = fresh["token"][:-4] + ("AAAA" if not fresh["token"].endswith("AAAA") else "BBBB")
        forged_bearer = [("authorization", f"Bearer {forged}")]
        assert wire.status("GetVm", get, forged_bearer) == ("UNAUTHENTICATED", "invalid token")
        assert wire.status("GetVm", get, [("authorization", f"Bearer {fresh['token']}")]) == ("OK", "")
        destroy = wire.api.DestroyVmRequest(vm_id=IDS[5])
        static = [("authorization", f"Bearer {TOKEN}")]
        assert wire.status("DestroyVm", destroy, static) == ("NOT_FOUND", f"machine {IDS[5]} not found")


def test_the_exchange_shares_the_grpc_port_and_refuses_what_it_should(fake: Fake) -> None:
    assert fake.exchange == fake.url + "/api/v1/auth/token"
    assert exchange(fake, b'{"api_key": "bxd_nope"}') == (401, {"error": "invalid or expired API key"})
    assert exchange(fake, b"not json") == (400, {"error": "api_key is required"})
    assert exchange(fake, b"", method="GET")[0] == 405
    assert exchange(fake, b"{}", path="/api/v1/other")[0] == 404
    assert [r["status"] for r in fake.requests()] == [401, 400, 405, 404]
    assert fake.state()["tokensIssued"] == 0


def test_the_control_routes_refuse_what_boxd_would_never_list(fake: Fake) -> None:
    refused_seeds: list[dict[str, Any]] = [
        {"id": ""},
        {"name": "3-starts-with-a-digit"},
        {"name": "UPPER"},
        {"created_at": 1.5},
        {"created_at": -1},
        {"labels": {"a": 1}},
        {"status": "Running"},
        {"shared": "yes"},
        {"vm_id": "a-wire-name"},
    ]
    for bad in refused_seeds:
        with pytest.raises(urllib.error.HTTPError) as refused:
            fake.seed([bad])
        assert refused.value.code == 400, bad
    fake.seed([{"id": IDS[0], "name": "one"}])
    for clash in ({"id": IDS[0], "name": "two"}, {"name": "one"}):
        with pytest.raises(urllib.error.HTTPError):
            fake.seed([clash])
    for fault in ({"noSuchFault": True}, {"hangLists": 1}, {"latencyMs": -1}, {"destroying_ms": "soon"}):
        with pytest.raises(urllib.error.HTTPError):
            fake.faults(**fault)
    fake.reset()
    assert fake.state() == {
        "alive": [],
        "vms": [],
        "destroyed": [],
        "requests": [],
        "abandoned": 0,
        "tokensIssued": 0,
    }


# ------------------------------------------------------------ the proof, run in a fresh interpreter


def as_json(machine: Any) -> dict[str, Any]:
    """What a sweep reads of the client's ``Machine``."""
    created = machine.created_at
    return {
        "id": machine.id,
        "name": machine.name,
        "status": machine.status,
        "created_at": None if created is None else int(created.timestamp()),
        "labels": dict(machine.labels),
        "org": None if machine.org is None else machine.org.name,
        "shared": machine.shared,
    }


def step(client: Any, do: dict[str, Any]) -> Any:
    op = do["op"]
    machines = client.machines
    if op == "list":
        listed = machines.list(org=do.get("org"), all_contexts=do.get("all_contexts", False), labels=do.get("labels"))
        return [as_json(machine) for machine in listed]
    if op == "get":
        return as_json(machines.get(do["id"]))
    if op == "delete":
        machines.delete(do["id"])
        return "ok"
    if op == "create":
        return as_json(machines.create(do.get("name"), org=do.get("org"), labels=do.get("labels")))
    if op == "stop":
        machines.stop(do["id"])
        return "ok"
    if op == "update_labels":
        return machines.update_labels(do["id"], set=do.get("set"), remove=do.get("remove"))
    raise ValueError(f"unknown step {op}")


def proof(args: dict[str, Any]) -> list[Any]:
    """Runs each step with one ``boxd.Boxd`` client; an SDK error answers ``{error, code, message}``."""
    boxd: Any = importlib.import_module("boxd")
    client = boxd.Boxd(**args["client"])
    results: list[Any] = []
    for do in args["steps"]:
        started = time.monotonic()
        try:
            result = step(client, do)
        except boxd.BoxdError as error:
            result = {"error": type(error).__name__, "code": error.code, "message": error.message}
        if do.get("timed"):
            result = {"result": result, "seconds": time.monotonic() - started}
        results.append(result)
    client.close()
    return results


if __name__ == "__main__":
    print(json.dumps(proof(json.loads(sys.argv[1]))))
