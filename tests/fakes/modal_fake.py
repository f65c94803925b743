"""A local fake of the Modal control-plane gRPC calls sandbox-reclaim makes,
written from the official Python client PyPI ``modal`` 1.6.4 (its
``modal_proto`` stubs: ``api_pb2``, ``api_grpc``; ``modal/sandbox/_sandbox.py``
``Sandbox.list`` / ``from_id`` / ``terminate`` / ``set_tags`` / ``get_tags``,
``_impl_v1.py`` and ``_impl_v2.py`` for which RPC each id shape takes,
``client.py`` and ``_utils/auth_token_manager.py`` for the auth) and the
wire facts in docs/research/modal.md. tests/python/test_modal_fake.py proves
it faithful by driving the official client against it; the Rust, Node and
Python suites then test our ModalProvider against it, faults included.

Wire (the handle's ``url`` is what ``MODAL_SERVER_URL`` takes, as
``https://api.modal.com``): gRPC over plaintext HTTP/2 (h2c, prior
knowledge), service ``modal.client.ModalClient``, the messages the 1.6.4
stubs define (served by ``grpclib`` with those stubs, so field numbers are
the real ones). Every call must carry ``x-modal-client-type`` and
``x-modal-client-version`` (FAILED_PRECONDITION otherwise) and the
``x-modal-token-id`` / ``x-modal-token-secret`` pair (UNAUTHENTICATED
otherwise). ``AuthTokenGet`` answers a JWT (HS256-shaped, ``exp``
``authTokenTtlSeconds`` ahead); every V2 call (``SandboxListV2``,
``SandboxWaitV2``, ``SandboxTerminateV2``, ``SandboxTagsGetV2``,
``SandboxTagsSetV2``) must also carry it as ``x-modal-auth-token``
(UNAUTHENTICATED otherwise), V1 calls need not. Listing
(``SandboxList[V2]``) is newest first, ``created_at`` strictly before
``before_timestamp`` (0 = from the newest), ``pageSize`` items a page, tags
all-of, scoped by ``app_id`` (else by ``environment_name``, empty = the
default environment ``main``), finished sandboxes only with
``include_finished``; the client pages until an empty page. ``SandboxList``
(V1) lists V1-shaped ids only, ``SandboxListV2`` both shapes. A V1 RPC finds
only V1-shaped ids and a V2 RPC only the others (the shape rule of
``modal/sandbox/_common.py`` ``_get_sandbox_version``), as the client routes
them; an unknown id answers NOT_FOUND ``Sandbox <id> not found``.
``SandboxWait[V2]`` (``timeout=0``: ``Sandbox.from_id``) answers the result
(unset while running); ``SandboxTerminate[V2]`` ends a running sandbox
(result TERMINATED, empty ``existing_result``) and answers a finished one
with success and its ``existing_result``; ``SandboxTagsSet[V2]`` replaces
the whole tag set, ``SandboxTagsGet[V2]`` reads it. ``ClientHello`` answers
an empty hello. Every other method of the service answers UNIMPLEMENTED.

Ids: V1 ``sb-`` and 22 base62 characters; V2 ``sb-`` and a 26-character
ULID (Crockford base32, first character 0-7). Seeded without an id, a
sandbox gets a V2 id; without ``appId``, the app ``DEFAULT_APP_ID``.

Faults (``POST /_fake/faults``, all off by default; what a real Modal answer
looks like is in docs/research/modal.md): ``failDeleteEvery`` (every Nth
terminate answers INTERNAL), ``rateLimitDeletes`` (the next N terminates
answer RESOURCE_EXHAUSTED carrying a ``modal.client.RPCRetryPolicy`` of
``retryAfterSeconds`` in ``grpc-status-details-bin``, as Modal throttles),
``hangDeletes`` / ``hangLists`` (never answer; a call the client gives up on
counts in ``abandoned``), ``malformedPage`` (page N, 1-based, of every
listing has its first item's ``id`` empty and its last item's
``created_at`` unset: a strict client refuses it, the official one loops),
``repeatAcrossPages`` (each page after the first starts with the previous
page's last item), ``deletedStayListedMs`` (a terminated sandbox stays
listed, as running, this long), ``cycleCursor`` (page 2 ends with page 1's
last item again, so ``before_timestamp`` never moves on), ``latencyMs``
(every gRPC answer waits this long), ``pageSize`` (items a page, default
100), ``authTokenTtlSeconds`` (the issued JWT's lifetime, default 1200).
Control routes (HTTP/1.1 JSON on ``control``, no auth): ``POST
/_fake/sandboxes`` (seed), ``POST /_fake/faults``, ``POST /_fake/reset``,
``GET /_fake/state``.

Run as a program (``python tests/fakes/modal_fake.py [--token-id ID]
[--token-secret SECRET]``) it prints one JSON line ``{"url": ...,
"control": ...}`` and serves until stdin closes or it is killed. Needs only
the ``modal`` package (``modal_proto``, ``grpclib``, ``protobuf``)."""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import json
import random
import socket
import sys
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpclib.const
import grpclib.server
from google.protobuf import any_pb2, empty_pb2
from google.protobuf.message import Message
from grpclib import GRPCError, Status
from grpclib.encoding.base import StatusDetailsCodecBase
from json_http import serve_http, serve_until_stdin_closes
from modal_proto import api_grpc, api_pb2

DEFAULT_TOKEN_ID = "ak-test-id"
DEFAULT_TOKEN_SECRET = "as-test-secret"
DEFAULT_APP_ID = "ap-SandboxReclaimFakeApp0"
DEFAULT_ENVIRONMENT = "main"
SERVICE = "/modal.client.ModalClient/"

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

NO_FAULTS: dict[str, Any] = {
    "failDeleteEvery": 0,  # every Nth terminate answers INTERNAL
    "rateLimitDeletes": 0,  # the next N terminates answer RESOURCE_EXHAUSTED with a retry policy
    "retryAfterSeconds": 1.0,  # ...whose retry_after_secs is this
    "hangDeletes": False,  # terminates never answer
    "hangLists": False,  # listings never answer
    "malformedPage": 0,  # page N (1-based) of every listing: first id empty, last created_at unset
    "repeatAcrossPages": False,  # each page after the first repeats the previous page's last item
    "deletedStayListedMs": 0,  # a terminated sandbox stays listed, as running, this long
    "cycleCursor": False,  # page 2 ends with page 1's last item: the cursor never moves on
    "latencyMs": 0,  # every gRPC answer waits this long (the benchmark's 20 ms)
    "pageSize": 100,  # items per listing page
    "authTokenTtlSeconds": 1200.0,  # lifetime of the JWT AuthTokenGet issues
}
_WHOLE = ("failDeleteEvery", "rateLimitDeletes", "malformedPage", "deletedStayListedMs", "latencyMs", "pageSize")
_FLAGS = ("hangDeletes", "hangLists", "repeatAcrossPages", "cycleCursor")
_SECONDS = ("retryAfterSeconds", "authTokenTtlSeconds")

# The V2 RPCs authenticate with the JWT from AuthTokenGet (x-modal-auth-token).
V2_METHODS = frozenset({"SandboxListV2", "SandboxWaitV2", "SandboxTerminateV2", "SandboxTagsGetV2", "SandboxTagsSetV2"})


def is_v1_id(sandbox_id: str) -> bool:
    """``modal/sandbox/_common.py`` ``_is_v1_sandbox_id``: ``sb-`` and 22 base62."""
    prefix, separator, suffix = sandbox_id.partition("-")
    return prefix == "sb" and separator == "-" and len(suffix) == 22 and all(ch in BASE62 for ch in suffix)


def is_v2_ulid_id(sandbox_id: str) -> bool:
    """The V2 shape Modal mints: ``sb-`` and a ULID (modal-client's former ``_is_v2_sandbox_id``)."""
    prefix, separator, suffix = sandbox_id.partition("-")
    return (
        prefix == "sb"
        and separator == "-"
        and len(suffix) == 26
        and suffix[0] in "01234567"
        and all(ch in CROCKFORD for ch in suffix)
    )


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class RetryPolicyCodec(StatusDetailsCodecBase):
    """Writes ``grpc-status-details-bin`` as Modal does: a ``modal.client.RPCStatus``
    (``google.rpc.Status``-compatible) whose details are ``Any`` with the
    ``type.modal.com/`` prefix (``modal/_utils/grpc_utils.py``
    ``CustomProtoStatusDetailsCodec.encode``)."""

    def encode(self, status: Status, message: str | None, details: Any) -> bytes:
        proto = api_pb2.RPCStatus(code=status.value, message=message or "")
        for detail in details or ():
            packed = any_pb2.Any()
            packed.Pack(detail, type_url_prefix="type.modal.com/")
            proto.details.append(packed)
        encoded: bytes = proto.SerializeToString()
        return encoded

    def decode(self, status: Status, message: str | None, data: bytes) -> Any:
        return []


@dataclass
class Sandbox:
    id: str
    app_id: str
    environment: str
    tags: dict[str, str]
    created_at: float
    finished: bool
    result: api_pb2.GenericResult = field(default_factory=api_pb2.GenericResult)
    terminated_at: float | None = None  # monotonic seconds, when terminated through the API


class Refused(Exception):
    """A control request the fake refuses (answered 400 with the message)."""


class ModalFake:
    def __init__(self, token_id: str = DEFAULT_TOKEN_ID, token_secret: str = DEFAULT_TOKEN_SECRET) -> None:
        self.token_id = token_id
        self.token_secret = token_secret
        self._signing_key = hashlib.sha256(b"modal-fake:" + token_secret.encode()).digest()
        self.sandboxes: dict[str, Sandbox] = {}
        self.requests: list[dict[str, Any]] = []
        self.terminated: list[str] = []
        self.faults: dict[str, Any] = dict(NO_FAULTS)
        self.abandoned = 0
        self.terminates = 0
        self.tokens_issued = 0
        self._seeded = 0
        self._random = random.Random(20260101)
        self._grpc: grpclib.server.Server | None = None
        self._control: asyncio.Server | None = None
        self.url = ""
        self.control_url = ""

    # ------------------------------------------------------------ control

    def seed(self, items: Any) -> int:
        if not isinstance(items, list):
            raise Refused("seed takes a JSON array of sandboxes")
        ready = [self._seeded_sandbox(item) for item in items]
        homes = {s.app_id: s.environment for s in self.sandboxes.values()}
        homes.setdefault(DEFAULT_APP_ID, DEFAULT_ENVIRONMENT)
        for sandbox in ready:
            if homes.setdefault(sandbox.app_id, sandbox.environment) != sandbox.environment:
                raise Refused(
                    f"{sandbox.id}: app {sandbox.app_id} lives in environment {homes[sandbox.app_id]!r},"
                    f" not {sandbox.environment!r}"
                )
        for sandbox in ready:
            self.sandboxes[sandbox.id] = sandbox
        return len(ready)

    def _seeded_sandbox(self, item: Any) -> Sandbox:
        if not isinstance(item, dict):
            raise Refused(f"a sandbox must be a JSON object, got {json.dumps(item)}")
        unknown = set(item) - {"id", "appId", "environment", "tags", "createdAt", "finished"}
        if unknown:
            raise Refused(f"unknown sandbox fields {sorted(unknown)}")
        self._seeded += 1
        created_at = item.get("createdAt", time.time() - 3600 + self._seeded * 0.001)
        if isinstance(created_at, bool) or not isinstance(created_at, (int, float)) or not created_at > 0:
            raise Refused(f"createdAt must be unix seconds above 0, got {json.dumps(created_at)}")
        sandbox_id = item.get("id", self.new_v2_id(float(created_at)))
        if not isinstance(sandbox_id, str) or not (is_v1_id(sandbox_id) or is_v2_ulid_id(sandbox_id)):
            raise Refused(
                f"sandbox id {json.dumps(sandbox_id)} is neither a V1 id (sb- and 22 base62 characters)"
                " nor a V2 id (sb- and a 26-character ULID)"
            )
        app_id = item.get("appId", DEFAULT_APP_ID)
        if not isinstance(app_id, str) or not app_id.startswith("ap-") or not app_id[3:].isalnum():
            raise Refused(f"{sandbox_id}: appId must be ap- and letters or digits, got {json.dumps(app_id)}")
        environment = item.get("environment", DEFAULT_ENVIRONMENT)
        if not isinstance(environment, str) or not environment:
            raise Refused(f"{sandbox_id}: environment must be a non-empty string")
        tags = item.get("tags", {})
        if not isinstance(tags, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in tags.items()):
            raise Refused(f"{sandbox_id}: tags must map strings to strings, got {json.dumps(tags)}")
        finished = item.get("finished", False)
        if not isinstance(finished, bool):
            raise Refused(f"{sandbox_id}: finished must be a boolean")
        result = api_pb2.GenericResult()
        if finished:
            result.status = api_pb2.GenericResult.GENERIC_STATUS_SUCCESS
        return Sandbox(sandbox_id, app_id, environment, dict(tags), float(created_at), finished, result)

    def new_v2_id(self, created_at: float | None = None) -> str:
        """A fresh V2 id: ``sb-`` and a ULID (48-bit milliseconds, 80 random bits)."""
        millis = int((time.time() if created_at is None else created_at) * 1000) & ((1 << 48) - 1)
        stamp = "".join(CROCKFORD[(millis >> shift) & 31] for shift in range(45, -1, -5))
        return "sb-" + stamp + "".join(self._random.choice(CROCKFORD) for _ in range(16))

    def new_v1_id(self) -> str:
        """A fresh V1 id: ``sb-`` and 22 base62 characters."""
        return "sb-" + "".join(self._random.choice(BASE62) for _ in range(22))

    def set_faults(self, more: Any) -> dict[str, Any]:
        if not isinstance(more, dict):
            raise Refused("faults take a JSON object")
        for name, value in more.items():
            if name not in NO_FAULTS:
                raise Refused(f"unknown fault {name!r}; known: {', '.join(NO_FAULTS)}")
            if name in _FLAGS and not isinstance(value, bool):
                raise Refused(f"fault {name} takes true or false")
            if name in _WHOLE and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise Refused(f"fault {name} takes a whole number")
            if name in _SECONDS and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
                raise Refused(f"fault {name} takes seconds (a number)")
        if more.get("pageSize", 1) < 1:
            raise Refused("pageSize must be at least 1")
        self.faults.update(more)
        return dict(self.faults)

    def state(self) -> dict[str, Any]:
        return {
            "alive": sorted(s.id for s in self.sandboxes.values() if not s.finished),
            "requests": [dict(r) for r in self.requests],
            "abandoned": self.abandoned,
            "terminated": list(self.terminated),
            "tokensIssued": self.tokens_issued,
        }

    def reset(self) -> None:
        self.sandboxes.clear()
        self.requests.clear()
        self.terminated.clear()
        self.faults = dict(NO_FAULTS)
        self.abandoned = 0
        self.terminates = 0
        self.tokens_issued = 0

    def control(self, method: str, target: str, body: bytes) -> tuple[int, Any]:
        path = urllib.parse.urlsplit(target).path
        try:
            data = json.loads(body) if body else None
            if (method, path) == ("POST", "/_fake/sandboxes"):
                self.seed(data)
                return 200, {"alive": len(self.state()["alive"])}
            if (method, path) == ("POST", "/_fake/faults"):
                return 200, self.set_faults(data)
            if (method, path) == ("POST", "/_fake/reset"):
                self.reset()
                return 200, {}
            if (method, path) == ("GET", "/_fake/state"):
                return 200, self.state()
        except (Refused, ValueError) as error:
            return 400, {"message": str(error)}
        return 404, {"message": f"no control route {method} {path}"}

    # ------------------------------------------------------------ auth

    def issue_token(self) -> str:
        now = int(time.time())
        self.tokens_issued += 1
        header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        expiry = int(now + self.faults["authTokenTtlSeconds"])
        claims = {"sub": self.token_id, "iat": now, "exp": expiry, "jti": self.tokens_issued}
        payload = _b64url(json.dumps(claims).encode())
        signature = hmac.new(self._signing_key, f"{header}.{payload}".encode(), hashlib.sha256).digest()
        return f"{header}.{payload}.{_b64url(signature)}"

    def _check_token(self, token: str | None) -> None:
        if not token:
            raise GRPCError(Status.UNAUTHENTICATED, "Missing auth token (x-modal-auth-token); call AuthTokenGet first")
        parts = token.split(".")
        if len(parts) != 3:
            raise GRPCError(Status.UNAUTHENTICATED, "Invalid auth token")
        expected = hmac.new(self._signing_key, f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest()
        try:
            valid = hmac.compare_digest(expected, _b64url_decode(parts[2]))
            claims = json.loads(_b64url_decode(parts[1]))
        except ValueError:
            valid = False
        if not valid:
            raise GRPCError(Status.UNAUTHENTICATED, "Invalid auth token")
        if not time.time() < float(claims.get("exp", 0)):
            raise GRPCError(Status.UNAUTHENTICATED, "Auth token expired")

    def authorize(self, method: str, metadata: Mapping[str, Any]) -> None:
        for header in ("x-modal-client-type", "x-modal-client-version"):
            if not metadata.get(header):
                raise GRPCError(Status.FAILED_PRECONDITION, f"Missing {header} header")
        token_id = metadata.get("x-modal-token-id")
        token_secret = metadata.get("x-modal-token-secret")
        if not token_id or not token_secret:
            raise GRPCError(Status.UNAUTHENTICATED, "Token missing. Could not authenticate client.")
        if not str(token_id).startswith("ak-"):
            raise GRPCError(Status.UNAUTHENTICATED, "Token ID is malformed")
        if not str(token_secret).startswith("as-"):
            raise GRPCError(Status.UNAUTHENTICATED, "Token secret is malformed")
        known = hmac.compare_digest(str(token_id), self.token_id)
        if not (hmac.compare_digest(str(token_secret), self.token_secret) and known):
            raise GRPCError(Status.UNAUTHENTICATED, "Invalid token ID or token secret")
        if method in V2_METHODS:
            self._check_token(metadata.get("x-modal-auth-token"))

    # ------------------------------------------------------------ sandboxes

    def find(self, method: str, sandbox_id: str) -> Sandbox:
        sandbox = self.sandboxes.get(sandbox_id)
        # A V1 RPC serves V1-shaped ids only, a V2 RPC the others, as the client routes them.
        if sandbox is None or is_v1_id(sandbox_id) == (method in V2_METHODS):
            raise GRPCError(Status.NOT_FOUND, f"Sandbox {sandbox_id} not found")
        return sandbox

    def _listed_as_running(self, sandbox: Sandbox) -> bool:
        if not sandbox.finished:
            return True
        stay = self.faults["deletedStayListedMs"] / 1000
        return sandbox.terminated_at is not None and time.monotonic() - sandbox.terminated_at < stay

    def info(self, sandbox: Sandbox, running: bool) -> api_pb2.SandboxInfo:
        result = api_pb2.GenericResult() if running else sandbox.result
        task = api_pb2.TaskInfo(
            id="ta-" + sandbox.id[3:],
            sandbox_id=sandbox.id,
            enqueued_at=sandbox.created_at,
            started_at=sandbox.created_at + 0.5,
            result=result,
        )
        if not running:
            task.finished_at = sandbox.created_at + 1
        return api_pb2.SandboxInfo(
            id=sandbox.id,
            created_at=sandbox.created_at,
            task_info=task,
            app_id=sandbox.app_id,
            tags=[api_pb2.SandboxTag(tag_name=k, tag_value=v) for k, v in sandbox.tags.items()],
            timeout_secs=300,
            metadata=api_pb2.SandboxHandleMetadata(app_id=sandbox.app_id, result=result),
        )

    def list_page(self, method: str, request: api_pb2.SandboxListRequest) -> api_pb2.SandboxListResponse:
        wanted = {tag.tag_name: tag.tag_value for tag in request.tags}
        environment = request.environment_name or DEFAULT_ENVIRONMENT
        matching: list[tuple[Sandbox, bool]] = []
        for sandbox in self.sandboxes.values():
            if method == "SandboxList" and not is_v1_id(sandbox.id):
                continue
            if request.app_id:
                if sandbox.app_id != request.app_id:
                    continue
                if request.environment_name and sandbox.environment != request.environment_name:
                    continue
            elif sandbox.environment != environment:
                continue
            if any(sandbox.tags.get(name) != value for name, value in wanted.items()):
                continue
            running = self._listed_as_running(sandbox)
            if running or request.include_finished:
                matching.append((sandbox, running))
        matching.sort(key=lambda pair: (pair[0].created_at, pair[0].id), reverse=True)
        before = request.before_timestamp
        rest = [pair for pair in matching if not before or pair[0].created_at < before]
        size = self.faults["pageSize"]
        page = (len(matching) - len(rest)) // size + 1
        items = rest[:size]
        previous = [pair for pair in matching if before and pair[0].created_at == before]
        if self.faults["cycleCursor"] and page == 2 and previous and items:
            # This page ends where page 1 did, so the next cursor is this one again.
            items = rest[: size - 1] + previous[-1:]
        elif self.faults["repeatAcrossPages"] and page > 1 and previous and items:
            items = previous[-1:] + items
        infos = [self.info(sandbox, running) for sandbox, running in items]
        if self.faults["malformedPage"] == page and infos:
            infos[0].id = ""
            infos[-1].ClearField("created_at")
        return api_pb2.SandboxListResponse(sandboxes=infos)

    async def terminate(
        self, method: str, request: api_pb2.SandboxTerminateRequest
    ) -> api_pb2.SandboxTerminateResponse:
        self.terminates += 1
        if self.faults["hangDeletes"]:
            await asyncio.Future()
        if self.faults["rateLimitDeletes"] > 0:
            self.faults["rateLimitDeletes"] -= 1
            policy = api_pb2.RPCRetryPolicy(retry_after_secs=self.faults["retryAfterSeconds"])
            raise GRPCError(Status.RESOURCE_EXHAUSTED, "Too many requests: rate limit exceeded", [policy])
        every = self.faults["failDeleteEvery"]
        if every > 0 and self.terminates % every == 0:
            raise GRPCError(Status.INTERNAL, "Internal server error")
        sandbox = self.find(method, request.sandbox_id)
        if sandbox.finished:
            return api_pb2.SandboxTerminateResponse(existing_result=sandbox.result)
        sandbox.finished = True
        sandbox.terminated_at = time.monotonic()
        sandbox.result = api_pb2.GenericResult(status=api_pb2.GenericResult.GENERIC_STATUS_TERMINATED)
        self.terminated.append(sandbox.id)
        return api_pb2.SandboxTerminateResponse()

    async def answer(self, method: str, request: Any) -> Message:
        if method == "ClientHello":
            return api_pb2.ClientHelloResponse()
        if method == "AuthTokenGet":
            return api_pb2.AuthTokenGetResponse(token=self.issue_token())
        if method in ("SandboxList", "SandboxListV2"):
            if self.faults["hangLists"]:
                await asyncio.Future()
            return self.list_page(method, request)
        if method in ("SandboxWait", "SandboxWaitV2"):
            sandbox = self.find(method, request.sandbox_id)
            result = sandbox.result if sandbox.finished else api_pb2.GenericResult()
            if not sandbox.finished and request.timeout > 0:
                await asyncio.sleep(min(request.timeout, 60))
            metadata = api_pb2.SandboxHandleMetadata(app_id=sandbox.app_id, result=result)
            return api_pb2.SandboxWaitResponse(result=result, metadata=metadata)
        if method in ("SandboxTerminate", "SandboxTerminateV2"):
            return await self.terminate(method, request)
        if method in ("SandboxTagsGet", "SandboxTagsGetV2"):
            sandbox = self.find(method, request.sandbox_id)
            tags = [api_pb2.SandboxTag(tag_name=k, tag_value=v) for k, v in sandbox.tags.items()]
            return api_pb2.SandboxTagsGetResponse(tags=tags)
        if method in ("SandboxTagsSet", "SandboxTagsSetV2"):
            sandbox = self.find(method, request.sandbox_id)
            sandbox.tags = {tag.tag_name: tag.tag_value for tag in request.tags}
            return empty_pb2.Empty()
        raise GRPCError(Status.UNIMPLEMENTED, f"{method} is not implemented by the Modal fake")

    def record(self, method: str, request: Any) -> dict[str, Any]:
        entry: dict[str, Any] = {"method": method, "authorized": False}
        if getattr(request, "sandbox_id", ""):
            entry["id"] = request.sandbox_id
        if isinstance(request, (api_pb2.SandboxListRequest, api_pb2.SandboxTagsSetRequest)):
            entry["tags"] = {tag.tag_name: tag.tag_value for tag in request.tags}
        if isinstance(request, api_pb2.SandboxListRequest):
            entry.update(
                appId=request.app_id,
                environmentName=request.environment_name,
                includeFinished=request.include_finished,
                beforeTimestamp=request.before_timestamp,
            )
        self.requests.append(entry)
        return entry

    def handler(self, method: str) -> Callable[[grpclib.server.Stream[Any, Any]], Awaitable[None]]:
        async def handle(stream: grpclib.server.Stream[Any, Any]) -> None:
            request = await stream.recv_message()
            entry = self.record(method, request)
            try:
                if self.faults["latencyMs"] > 0:
                    await asyncio.sleep(self.faults["latencyMs"] / 1000)
                self.authorize(method, stream.metadata or {})
                entry["authorized"] = True
                reply = await self.answer(method, request)
            except asyncio.CancelledError:
                self.abandoned += 1
                raise
            await stream.send_message(reply)

        return handle

    def __mapping__(self) -> dict[str, grpclib.const.Handler]:
        fake = self

        class Routes:
            """Every method of the 1.6.4 service, with its stub's request and reply types."""

            def __getattr__(self, name: str) -> Callable[[grpclib.server.Stream[Any, Any]], Awaitable[None]]:
                return fake.handler(name)

        return api_grpc.ModalClientBase.__mapping__(Routes())  # type: ignore[arg-type]

    # ------------------------------------------------------------ serving

    async def start(self, host: str = "127.0.0.1") -> None:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind((host, 0))
        self._grpc = grpclib.server.Server([self], status_details_codec=RetryPolicyCodec())
        await self._grpc.start(sock=listener)
        self.url = f"http://{host}:{listener.getsockname()[1]}"
        self._control = await asyncio.start_server(self._serve_control, host, 0)
        self.control_url = f"http://{host}:{self._control.sockets[0].getsockname()[1]}"

    async def close(self) -> None:
        if self._control is not None:
            self._control.close()
        if self._grpc is not None:
            self._grpc.close()
            await self._grpc.wait_closed()

    async def _serve_control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await serve_http(reader, writer, lambda method, target, body: (*self.control(method, target, body), {}), b"")


async def serve(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(description="A local fake of Modal's sandbox gRPC calls.")
    parser.add_argument("--token-id", default=DEFAULT_TOKEN_ID)
    parser.add_argument("--token-secret", default=DEFAULT_TOKEN_SECRET)
    args = parser.parse_args(argv)
    fake = ModalFake(args.token_id, args.token_secret)
    await fake.start()
    await serve_until_stdin_closes({"url": fake.url, "control": fake.control_url}, fake.close)


if __name__ == "__main__":
    try:
        asyncio.run(serve(sys.argv[1:]))
    except KeyboardInterrupt:
        pass
