"""A local fake of the boxd (boxd.sh) machine calls sandbox-reclaim makes,
written from the official Python client PyPI ``boxd`` 0.2.19 (its generated
``boxd/_generated/api_pb2.py`` / ``api_pb2_grpc.py``; ``resources/machines.py``
``create`` / ``get`` / ``list`` / ``delete`` / ``update_labels``,
``_requests.py`` for the label selector, ``_mappers.py`` for what it reads,
``_credentials.py`` / ``_urls.py`` / ``_transport.py`` for the auth) and the
wire facts in docs/research/boxd.md. tests/python/test_boxd_fake.py proves it
faithful by driving the official client against it.

Wire (the handle's ``url`` is what ``BOXD_BASE_URL`` takes, as
``https://boxd.sh:9443``): ONE plaintext port serving both gRPC over HTTP/2
(h2c, prior knowledge) and HTTP/1.1, told apart by the connection's first
bytes (the HTTP/2 preface ``PRI * HTTP/2.0``), because the client derives
its API-key exchange URL from the base URL and keeps a raw IP's port
(``_urls.console_base_url``): with ``BOXD_BASE_URL=http://127.0.0.1:P`` it
POSTs ``http://127.0.0.1:P/api/v1/auth/token``.

- gRPC: service ``boxd.api.v1.BoxdApi``, served by ``grpc.aio`` with the
  SDK's own ``api_pb2_grpc.BoxdApiServicer`` (so field numbers are the real
  ones). ``ListVms`` (``org``: "" = the caller's personal machines, an org
  name = that org's, ``all_contexts`` = personal and every org the caller
  belongs to; ``label_selector`` terms ``key=value`` / ``key``, ANDed,
  filtered server-side; NO paging: one answer holds every match, oldest
  first), ``GetVm`` / ``DestroyVm`` (``vm_id`` = the id or the name;
  NOT_FOUND ``machine <ref> not found`` when unknown or gone; a destroy is
  terminal, destroying again is NOT_FOUND), ``CreateVm`` (name: lowercase
  letter first, then ``a-z 0-9 -``, unique per org, "" = a generated one;
  ALREADY_EXISTS on a taken name; labels checked as ``update_labels``
  documents; the machine is ``running`` at once), ``UpdateVmLabels``. A
  machine in an org the caller is not in is invisible (NOT_FOUND); listing
  or creating in such an org is PERMISSION_DENIED. Every other method of the
  service answers UNIMPLEMENTED.
- Auth: every gRPC call must carry ``authorization: Bearer <token>``
  (UNAUTHENTICATED ``missing bearer token`` / ``invalid token`` / ``token
  expired`` otherwise), the token being either the static session token
  (``--token``, what ``BOXD_TOKEN`` carries) or a JWT this fake issued. A
  ``bxd_`` API key is never accepted as a bearer. The client also sends
  ``x-boxd-py-sdk-version`` (logged, not required).
- HTTP/1.1 ``POST /api/v1/auth/token`` ``{"api_key": "bxd_..."}`` answers
  200 ``{"token": <HS256-shaped JWT>, "expires_at": <epoch seconds>}``
  (``exp`` ``authTokenTtlSeconds`` ahead, default 3600: "a token is valid
  for 1 hour"), 401 ``{"error": "invalid or expired API key"}`` for another
  key, 400 for a body without ``api_key``.

Machines: ids are UUIDs (boxd's id form is unverified; the client treats it
as opaque), ``created_at`` is int64 epoch SECONDS (0 = unset), statuses are
``pending starting running suspended hibernated stopped failed destroyed
migrating`` (any other lowercase word may be seeded, as a status the client
does not know yet). A private machine of an org answers ``org`` "" and
``billing_org`` = the org (``org`` is set only when shared), as the client's
mapper reads them.

Faults (``POST /_fake/faults``, all off by default; the brief's snake_case
names are accepted as aliases and answered in camelCase):
``failDeleteEvery`` / fail_destroy_every (every Nth DestroyVm answers
INTERNAL ``internal error``), ``rateLimitDeletes`` / rate_limit_destroys
(the next N DestroyVm answer RESOURCE_EXHAUSTED ``rate limit exceeded``:
boxd's gRPC answers carry no retry hint, the client reads none),
``rateLimitExchanges`` (the next N key exchanges answer 429 with
``Retry-After: retryAfterSeconds``, which the client waits out once),
``hangDeletes`` / hang_destroys and ``hangLists`` / hang_lists (never
answer; a call the client gives up on counts in ``abandoned``),
``malformedPage`` / malformed_page (page N, 1-based, of every listing; boxd
answers one page, so only 1 does anything: its first machine's ``vm_id`` is
empty and its last machine's ``status`` is ``unknown`` with ``created_at``
unset), ``repeatAcrossPages`` / repeat_across_pages (boxd does not page:
the one answer lists its first machine again at its end),
``deletedStayListedMs`` / destroying_ms (a destroyed machine stays listed and
readable this long, in status ``destroyingStatus``, default ``destroyed`` as
TanStack saw; destroying it again meanwhile succeeds), ``latencyMs`` /
latency_ms (every gRPC answer waits this long), ``authTokenTtlSeconds``.
Control routes (HTTP/1.1 JSON on ``control``, no auth): ``POST /_fake/vms``
(or ``/_fake/sandboxes``; seed ``[{id?, name?, status?, created_at?,
labels?, org?, shared?}]``), ``POST /_fake/faults``, ``POST /_fake/reset``,
``GET /_fake/state`` (``alive``, ``vms``, ``destroyed`` in order,
``requests`` without any credential, ``abandoned``, ``tokensIssued``).

Run as a program (``python tests/fakes/boxd_fake.py [--api-key KEY]
[--token TOKEN] [--orgs acme,other]``) it prints one JSON line ``{"url":
..., "control": ..., "exchange": ...}`` and serves until stdin closes or it
is killed. Needs only the ``boxd`` package (``grpcio``, ``protobuf``)."""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import hmac
import json
import re
import sys
import time
import urllib.parse
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc  # type: ignore[import-untyped,unused-ignore]
import grpc.aio  # type: ignore[import-untyped,unused-ignore]
from boxd._generated import api_pb2, api_pb2_grpc  # type: ignore[import-untyped,unused-ignore]
from json_http import serve_http, serve_until_stdin_closes

DEFAULT_API_KEY = "bxd_test_key"
DEFAULT_TOKEN = "boxd-test-session-token"
DEFAULT_ORGS = ("acme",)
USER = "usr-sandbox-reclaim-fake"
SERVICE = "boxd.api.v1.BoxdApi"
EXCHANGE_PATH = "/api/v1/auth/token"
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

STATUSES = ("pending", "starting", "running", "suspended", "hibernated", "stopped", "failed", "destroyed", "migrating")
NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
LABEL_KEY = re.compile(r"^[a-z0-9]([a-z0-9._/-]{0,61}[a-z0-9])?$")

NO_FAULTS: dict[str, Any] = {
    "failDeleteEvery": 0,  # every Nth DestroyVm answers INTERNAL
    "rateLimitDeletes": 0,  # the next N DestroyVm answer RESOURCE_EXHAUSTED (no retry hint, as boxd)
    "rateLimitExchanges": 0,  # the next N key exchanges answer 429 with Retry-After
    "retryAfterSeconds": 1.0,  # ...whose Retry-After is this
    "hangDeletes": False,  # DestroyVm never answers
    "hangLists": False,  # ListVms never answers
    "malformedPage": 0,  # page N (1-based) of every listing (boxd: one page): first vm_id empty, last status unknown
    "repeatAcrossPages": False,  # the one answer lists its first machine again at its end
    "deletedStayListedMs": 0,  # a destroyed machine stays listed and readable this long...
    "destroyingStatus": "destroyed",  # ...in this status
    "latencyMs": 0,  # every gRPC answer waits this long
    "authTokenTtlSeconds": 3600.0,  # lifetime of the JWT the key exchange issues
}
ALIASES = {
    "fail_destroy_every": "failDeleteEvery",
    "rate_limit_destroys": "rateLimitDeletes",
    "rate_limit_exchanges": "rateLimitExchanges",
    "retry_after_seconds": "retryAfterSeconds",
    "hang_destroys": "hangDeletes",
    "hang_lists": "hangLists",
    "malformed_page": "malformedPage",
    "repeat_across_pages": "repeatAcrossPages",
    "destroying_ms": "deletedStayListedMs",
    "destroying_status": "destroyingStatus",
    "latency_ms": "latencyMs",
    "auth_token_ttl_seconds": "authTokenTtlSeconds",
}
_WHOLE = (
    "failDeleteEvery",
    "rateLimitDeletes",
    "rateLimitExchanges",
    "malformedPage",
    "deletedStayListedMs",
    "latencyMs",
)
_FLAGS = ("hangDeletes", "hangLists", "repeatAcrossPages")
_SECONDS = ("retryAfterSeconds", "authTokenTtlSeconds")
_SEED_FIELDS = {"id", "name", "status", "created_at", "labels", "org", "shared"}


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def label_problem(labels: Mapping[str, str]) -> str | None:
    """Why boxd refuses these labels (``machines.update_labels``'s rules), or None."""
    if len(labels) > 64:
        return "a machine holds at most 64 labels"
    for key, value in labels.items():
        if not LABEL_KEY.match(key):
            return f"label key {key!r}: 1-63 characters of a-z 0-9 . _ / -, starting and ending with a letter or digit"
        if key.startswith("boxd/"):
            return f"label key {key!r}: the boxd/ prefix is reserved"
        if len(value) > 256 or any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
            return f"label {key!r}: a value is up to 256 characters, no control characters"
    return None


@dataclass
class Vm:
    id: str
    name: str
    status: str
    created_at: int
    org: str  # "" = the caller's personal machines
    labels: dict[str, str] = field(default_factory=dict)
    shared: bool = False
    image: str = ""
    destroyed_at: float | None = None  # monotonic seconds, when destroyed through the API


class Refused(Exception):
    """A control request the fake refuses (answered 400 with the message)."""


class Abort(Exception):
    """A gRPC answer other than OK."""

    def __init__(self, code: Any, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class BoxdFake:
    def __init__(
        self, api_key: str = DEFAULT_API_KEY, token: str = DEFAULT_TOKEN, orgs: Sequence[str] = DEFAULT_ORGS
    ) -> None:
        self.api_key = api_key
        self.token = token
        self.orgs = frozenset(orgs)
        self._signing_key = hashlib.sha256(b"boxd-fake:" + api_key.encode()).digest()
        self.vms: dict[str, Vm] = {}
        self.requests: list[dict[str, Any]] = []
        self.destroyed: list[str] = []
        self.faults: dict[str, Any] = dict(NO_FAULTS)
        self.abandoned = 0
        self.destroys = 0
        self.tokens_issued = 0
        self._seeded = 0
        self._grpc: Any = None
        self._grpc_port = 0
        self._front: asyncio.Server | None = None
        self._control: asyncio.Server | None = None
        self.url = ""
        self.control_url = ""

    # ------------------------------------------------------------ control

    def seed(self, items: Any) -> int:
        if not isinstance(items, list):
            raise Refused("seed takes a JSON array of machines")
        ready: list[Vm] = []
        # The ids and (org, name)s a machine could clash with (`self.vms` is keyed by id), so a
        # seed of thousands is not quadratic; only a possible clash is scanned for, in order, to
        # refuse it as the first machine it meets. (A listed machine can only stop being listed.)
        ids = set(self.vms)
        names = {(other.org, other.name) for other in self.vms.values() if self._listed(other)}
        for item in items:
            vm = self._seeded_vm(item)
            if vm.id in ids or (vm.org, vm.name) in names:
                for other in [*self.vms.values(), *ready]:
                    if other.id == vm.id:
                        raise Refused(f"machine id {vm.id} is seeded already")
                    if self._listed(other) and other.org == vm.org and other.name == vm.name:
                        raise Refused(f"machine name {vm.name} is taken in {vm.org or 'the personal context'}")
            ready.append(vm)
            ids.add(vm.id)
            names.add((vm.org, vm.name))
        for vm in ready:
            self.vms[vm.id] = vm
        return len(ready)

    def _seeded_vm(self, item: Any) -> Vm:
        if not isinstance(item, dict):
            raise Refused(f"a machine must be a JSON object, got {json.dumps(item)}")
        unknown = set(item) - _SEED_FIELDS
        if unknown:
            raise Refused(f"unknown machine fields {sorted(unknown)}; known: {sorted(_SEED_FIELDS)}")
        self._seeded += 1
        vm_id = item.get("id", str(uuid.uuid4()))
        if not isinstance(vm_id, str) or not vm_id.strip():
            raise Refused(f"id must be a non-empty string, got {json.dumps(vm_id)}")
        name = item.get("name", f"vm-{uuid.uuid4().hex[:12]}")
        if not isinstance(name, str) or not NAME.match(name):
            raise Refused(f"{vm_id}: name must start with a lowercase letter, then a-z 0-9 -, got {json.dumps(name)}")
        status = item.get("status", "running")
        if not isinstance(status, str) or not re.fullmatch(r"[a-z][a-z_-]*", status):
            raise Refused(f"{vm_id}: status must be a lowercase word, got {json.dumps(status)}")
        created_at = item.get("created_at", int(time.time()) - 3600)
        if isinstance(created_at, bool) or not isinstance(created_at, int) or created_at < 0:
            raise Refused(f"{vm_id}: created_at must be whole epoch seconds (0 = unset), got {json.dumps(created_at)}")
        labels = item.get("labels", {})
        strings = isinstance(labels, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in labels.items())
        if not strings:
            raise Refused(f"{vm_id}: labels must map strings to strings, got {json.dumps(labels)}")
        org = item.get("org", "")
        if not isinstance(org, str):
            raise Refused(f"{vm_id}: org must be a string ('' = personal)")
        shared = item.get("shared", False)
        if not isinstance(shared, bool):
            raise Refused(f"{vm_id}: shared must be a boolean")
        return Vm(vm_id, name, status, created_at, org, dict(labels), shared)

    def set_faults(self, more: Any) -> dict[str, Any]:
        if not isinstance(more, dict):
            raise Refused("faults take a JSON object")
        named: dict[str, Any] = {ALIASES.get(str(name), str(name)): value for name, value in more.items()}
        for name, value in named.items():
            if name not in NO_FAULTS:
                raise Refused(f"unknown fault {name!r}; known: {', '.join(NO_FAULTS)} (or {', '.join(ALIASES)})")
            if name in _FLAGS and not isinstance(value, bool):
                raise Refused(f"fault {name} takes true or false")
            if name in _WHOLE and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise Refused(f"fault {name} takes a whole number")
            if name in _SECONDS and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
                raise Refused(f"fault {name} takes seconds (a number)")
            if name == "destroyingStatus" and (not isinstance(value, str) or not value):
                raise Refused("fault destroyingStatus takes a status string")
        self.faults.update(named)
        return dict(self.faults)

    def state(self) -> dict[str, Any]:
        return {
            "alive": sorted(vm.id for vm in self.vms.values() if self._alive(vm)),
            "vms": [self._as_json(vm) for vm in self._ordered(self.vms.values())],
            "destroyed": list(self.destroyed),
            "requests": [dict(r) for r in self.requests],
            "abandoned": self.abandoned,
            "tokensIssued": self.tokens_issued,
        }

    def _as_json(self, vm: Vm) -> dict[str, Any]:
        return {
            "id": vm.id,
            "name": vm.name,
            "status": self._status(vm),
            "created_at": vm.created_at,
            "org": vm.org,
            "shared": vm.shared,
            "labels": dict(vm.labels),
            "listed": self._listed(vm),
        }

    def reset(self) -> None:
        self.vms.clear()
        self.requests.clear()
        self.destroyed.clear()
        self.faults = dict(NO_FAULTS)
        self.abandoned = 0
        self.destroys = 0
        self.tokens_issued = 0

    def control(self, method: str, target: str, body: bytes) -> tuple[int, Any, dict[str, str]]:
        path = urllib.parse.urlsplit(target).path
        try:
            data = json.loads(body) if body else None
            if method == "POST" and path in ("/_fake/vms", "/_fake/sandboxes"):
                self.seed(data)
                return 200, {"alive": len(self.state()["alive"])}, {}
            if (method, path) == ("POST", "/_fake/faults"):
                return 200, self.set_faults(data), {}
            if (method, path) == ("POST", "/_fake/reset"):
                self.reset()
                return 200, {}, {}
            if (method, path) == ("GET", "/_fake/state"):
                return 200, self.state(), {}
        except (Refused, ValueError) as error:
            return 400, {"message": str(error)}, {}
        return 404, {"message": f"no control route {method} {path}"}, {}

    # ------------------------------------------------------------ auth

    def exchange(self, method: str, target: str, body: bytes) -> tuple[int, Any, dict[str, str]]:
        """``POST /api/v1/auth/token``: a ``bxd_`` key for a JWT (HTTP/1.1, on the gRPC port)."""
        path = urllib.parse.urlsplit(target).path
        entry: dict[str, Any] = {"method": method, "path": path}
        self.requests.append(entry)
        if path != EXCHANGE_PATH:
            entry["status"] = 404
            return 404, {"error": f"no route {method} {path}"}, {}
        if method != "POST":
            entry["status"] = 405
            return 405, {"error": "method not allowed"}, {"allow": "POST"}
        if self.faults["rateLimitExchanges"] > 0:
            self.faults["rateLimitExchanges"] -= 1
            entry["status"] = 429
            retry_after = self.faults["retryAfterSeconds"]
            return 429, {"error": "too many token requests"}, {"retry-after": f"{retry_after:g}"}
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        key = data.get("api_key") if isinstance(data, dict) else None
        if not isinstance(key, str) or not key:
            entry["status"] = 400
            return 400, {"error": "api_key is required"}, {}
        if not hmac.compare_digest(key.encode(), self.api_key.encode()):
            entry["status"] = 401
            return 401, {"error": "invalid or expired API key"}, {}
        token, expires_at = self.issue_token()
        entry["status"] = 200
        return 200, {"token": token, "expires_at": expires_at}, {}

    def issue_token(self) -> tuple[str, int]:
        now = int(time.time())
        self.tokens_issued += 1
        header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        expiry = int(now + self.faults["authTokenTtlSeconds"])
        claims = {"sub": USER, "iat": now, "exp": expiry, "jti": self.tokens_issued}
        payload = _b64url(json.dumps(claims).encode())
        signature = hmac.new(self._signing_key, f"{header}.{payload}".encode(), hashlib.sha256).digest()
        return f"{header}.{payload}.{_b64url(signature)}", expiry

    def authorize(self, metadata: Mapping[str, str]) -> None:
        value = metadata.get("authorization", "")
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Abort(grpc.StatusCode.UNAUTHENTICATED, "missing bearer token")
        token = token.strip()
        if hmac.compare_digest(token.encode(), self.token.encode()):
            return
        parts = token.split(".")
        if len(parts) != 3:
            raise Abort(grpc.StatusCode.UNAUTHENTICATED, "invalid token")
        expected = hmac.new(self._signing_key, f"{parts[0]}.{parts[1]}".encode(), hashlib.sha256).digest()
        try:
            valid = hmac.compare_digest(expected, _b64url_decode(parts[2]))
            claims = json.loads(_b64url_decode(parts[1]))
        except ValueError:
            valid = False
        if not valid or not isinstance(claims, dict):
            raise Abort(grpc.StatusCode.UNAUTHENTICATED, "invalid token")
        if not time.time() < float(claims.get("exp", 0)):
            raise Abort(grpc.StatusCode.UNAUTHENTICATED, "token expired")

    # ------------------------------------------------------------ machines

    def _gone(self, vm: Vm) -> bool:
        if vm.destroyed_at is None:
            return False
        return bool(time.monotonic() - vm.destroyed_at >= self.faults["deletedStayListedMs"] / 1000)

    def _listed(self, vm: Vm) -> bool:
        return not self._gone(vm)

    def _alive(self, vm: Vm) -> bool:
        return vm.destroyed_at is None and vm.status != "destroyed"

    def _status(self, vm: Vm) -> str:
        return str(self.faults["destroyingStatus"]) if vm.destroyed_at is not None else vm.status

    def _visible(self, vm: Vm) -> bool:
        return self._listed(vm) and (vm.org == "" or vm.org in self.orgs)

    @staticmethod
    def _ordered(vms: Any) -> list[Vm]:
        return sorted(vms, key=lambda vm: vm.created_at)  # stable: equal times stay in seeding order

    def find(self, ref: str) -> Vm:
        """A machine by id, else by name (personal first), as GetVm/DestroyVm take either."""
        by_id = self.vms.get(ref)  # keyed by id: the one machine with that id, without a scan
        if by_id is not None and self._visible(by_id):
            return by_id
        visible = [vm for vm in self.vms.values() if self._visible(vm)]
        for vm in visible:
            if vm.id == ref:
                return vm
        named = sorted((vm for vm in visible if vm.name == ref), key=lambda vm: vm.org != "")
        if ref and named:
            return named[0]
        raise Abort(grpc.StatusCode.NOT_FOUND, f"machine {ref} not found")

    def message(self, vm: Vm) -> Any:
        billing_id = f"org-{vm.org}" if vm.org else ""
        return api_pb2.GetVmResponse(
            vm_id=vm.id,
            name=vm.name,
            image_ref=vm.image or "ubuntu:24.04",
            status=self._status(vm),
            restart_policy="always",
            disk_bytes=10 << 30,
            vcpu=2,
            memory_bytes=4 << 30,
            org=vm.org if vm.shared else "",
            org_id=billing_id if vm.shared else "",
            billing_org=vm.org,
            billing_org_id=billing_id,
            access_domain="boxd.sh",
            created_at=vm.created_at,
            labels=dict(vm.labels),
            created_by=USER,
        )

    def _check_org(self, org: str) -> None:
        if org and org not in self.orgs:
            raise Abort(grpc.StatusCode.PERMISSION_DENIED, f"not a member of org {org}")

    def list_vms(self, request: Any) -> Any:
        selector = list(request.label_selector)
        terms: list[tuple[str, str | None]] = []
        for term in selector:
            key, sep, value = term.partition("=")
            if not LABEL_KEY.match(key):
                raise Abort(grpc.StatusCode.INVALID_ARGUMENT, f"invalid label selector {term!r}")
            terms.append((key, value if sep else None))
        if request.all_contexts:
            contexts = {"", *self.orgs}
        else:
            self._check_org(request.org)
            contexts = {request.org}
        matching = [
            vm
            for vm in self._ordered(self.vms.values())
            if self._listed(vm)
            and vm.org in contexts
            and all(key in vm.labels and (value is None or vm.labels[key] == value) for key, value in terms)
        ]
        vms = [self.message(vm) for vm in matching]
        if self.faults["malformedPage"] == 1 and vms:
            vms[0].vm_id = ""
            vms[-1].status = "unknown"
            vms[-1].created_at = 0
        if self.faults["repeatAcrossPages"] and matching:
            vms.append(self.message(matching[0]))
        return api_pb2.ListVmsResponse(vms=vms, ssh_host_key="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBoxdFake")

    async def destroy_vm(self, request: Any) -> Any:
        self.destroys += 1
        if self.faults["hangDeletes"]:
            await asyncio.Future()
        if self.faults["rateLimitDeletes"] > 0:
            self.faults["rateLimitDeletes"] -= 1
            raise Abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "rate limit exceeded")
        every = self.faults["failDeleteEvery"]
        if every > 0 and self.destroys % every == 0:
            raise Abort(grpc.StatusCode.INTERNAL, "internal error")
        vm = self.find(request.vm_id)
        if vm.destroyed_at is None:
            vm.destroyed_at = time.monotonic()
            self.destroyed.append(vm.id)
        return api_pb2.DestroyVmResponse()

    def create_vm(self, request: Any) -> Any:
        org = request.org
        self._check_org(org)
        name = request.name or f"vm-{uuid.uuid4().hex[:12]}"
        if not NAME.match(name):
            raise Abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"invalid machine name {name!r}: start with a lowercase letter, then a-z 0-9 -",
            )
        if any(vm.name == name and vm.org == org and self._listed(vm) for vm in self.vms.values()):
            raise Abort(grpc.StatusCode.ALREADY_EXISTS, f"machine name {name} is already taken")
        labels = dict(request.labels)
        problem = label_problem(labels)
        if problem:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
        vm = Vm(str(uuid.uuid4()), name, "running", int(time.time()), org, labels, request.shared, request.image_ref)
        self.vms[vm.id] = vm
        return api_pb2.CreateVmResponse(
            vm_id=vm.id, name=vm.name, status=vm.status, image=vm.image, url=f"https://{vm.name}.boxd.sh"
        )

    def update_labels(self, request: Any) -> Any:
        vm = self.find(request.vm)
        if request.replace_all and request.remove:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, "replace_all does not take remove")
        labels = {} if request.replace_all else dict(vm.labels)
        labels.update(dict(request.set))
        for key in request.remove:
            labels.pop(key, None)
        problem = label_problem(labels)
        if problem:
            raise Abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
        vm.labels = labels
        return api_pb2.UpdateVmLabelsResponse(labels=labels)

    async def answer(self, method: str, request: Any) -> Any:
        if method == "ListVms":
            if self.faults["hangLists"]:
                await asyncio.Future()
            return self.list_vms(request)
        if method == "GetVm":
            return self.message(self.find(request.vm_id))
        if method == "DestroyVm":
            return await self.destroy_vm(request)
        if method == "CreateVm":
            return self.create_vm(request)
        if method == "UpdateVmLabels":
            return self.update_labels(request)
        raise Abort(grpc.StatusCode.UNIMPLEMENTED, f"{method} is not implemented by the boxd fake")

    def record(self, method: str, request: Any, metadata: Mapping[str, str]) -> dict[str, Any]:
        entry: dict[str, Any] = {"method": method, "authorized": False}
        if method in ("GetVm", "DestroyVm"):
            entry["id"] = request.vm_id
        elif method == "ListVms":
            entry.update(
                org=request.org, allContexts=request.all_contexts, labelSelector=list(request.label_selector)
            )
        elif method == "CreateVm":
            entry.update(name=request.name, org=request.org, labels=dict(request.labels))
        elif method == "UpdateVmLabels":
            entry.update(id=request.vm, set=dict(request.set), remove=list(request.remove))
        # What the client said about itself and how it authenticated, never the credential.
        scheme = metadata.get("authorization", "").partition(" ")[0]
        entry["auth"] = scheme.lower() or None
        entry["sdkVersion"] = metadata.get("x-boxd-py-sdk-version")
        self.requests.append(entry)
        return entry

    async def handle(self, method: str, request: Any, context: Any) -> Any:
        metadata: dict[str, str] = {}
        for item in context.invocation_metadata() or ():
            key, value = item
            if isinstance(value, str):
                metadata[key.lower()] = value
        entry = self.record(method, request if hasattr(request, "DESCRIPTOR") else None, metadata)
        try:
            if self.faults["latencyMs"] > 0:
                await asyncio.sleep(self.faults["latencyMs"] / 1000)
            self.authorize(metadata)
            entry["authorized"] = True
            reply = await self.answer(method, request)
            entry["status"] = "OK"
            return reply
        except Abort as refusal:
            entry["status"] = refusal.code.name
            await context.abort(refusal.code, refusal.message)
            return None  # not reached: abort raises
        except asyncio.CancelledError:
            self.abandoned += 1
            raise

    def servicer(self) -> Any:
        """The SDK's ``BoxdApiServicer`` with every method answered by this fake."""
        fake = self

        def route(name: str) -> Callable[[Any, Any, Any], Awaitable[Any]]:
            async def call(_self: Any, request: Any, context: Any) -> Any:
                return await fake.handle(name, request, context)

            call.__name__ = name
            return call

        methods = api_pb2.DESCRIPTOR.services_by_name["BoxdApi"].methods
        routes = {method.name: route(method.name) for method in methods}
        return type("BoxdFakeServicer", (api_pb2_grpc.BoxdApiServicer,), routes)()

    # ------------------------------------------------------------ serving

    async def start(self, host: str = "127.0.0.1") -> None:
        self._grpc = grpc.aio.server()
        api_pb2_grpc.add_BoxdApiServicer_to_server(self.servicer(), self._grpc)
        self._grpc_port = self._grpc.add_insecure_port(f"{host}:0")
        await self._grpc.start()
        self._front = await asyncio.start_server(self._accept, host, 0)
        self.url = f"http://{host}:{self._front.sockets[0].getsockname()[1]}"
        self._control = await asyncio.start_server(
            lambda reader, writer: serve_http(reader, writer, self.control, b""), host, 0
        )
        self.control_url = f"http://{host}:{self._control.sockets[0].getsockname()[1]}"

    async def close(self) -> None:
        for server in (self._front, self._control):
            if server is not None:
                server.close()
        if self._grpc is not None:
            await self._grpc.stop(0)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One port, two protocols: the HTTP/2 preface goes to the gRPC server, anything else is HTTP/1.1."""
        try:
            first = await reader.readexactly(3)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        if first == H2_PREFACE[:3]:
            await self._pipe(first, reader, writer)
        else:
            await serve_http(reader, writer, self.exchange, first)

    async def _pipe(self, first: bytes, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self._grpc_port)
        except OSError:
            writer.close()
            return
        upstream_writer.write(first)

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while chunk := await source.read(65536):
                    sink.write(chunk)
                    await sink.drain()
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                sink.close()

        await asyncio.gather(pump(reader, upstream_writer), pump(upstream_reader, writer))


async def serve(argv: Sequence[str]) -> None:
    parser = argparse.ArgumentParser(description="A local fake of boxd's machine gRPC calls and its key exchange.")
    parser.add_argument("--api-key", default=DEFAULT_API_KEY, help="the bxd_ key the exchange accepts")
    parser.add_argument("--token", default=DEFAULT_TOKEN, help="the static session token (BOXD_TOKEN) accepted")
    parser.add_argument(
        "--orgs", default=",".join(DEFAULT_ORGS), help="the orgs the caller belongs to, comma-separated"
    )
    args = parser.parse_args(argv)
    fake = BoxdFake(args.api_key, args.token, [org for org in args.orgs.split(",") if org])
    await fake.start()
    started = {"url": fake.url, "control": fake.control_url, "exchange": fake.url + EXCHANGE_PATH}
    await serve_until_stdin_closes(started, fake.close)


if __name__ == "__main__":
    try:
        asyncio.run(serve(sys.argv[1:]))
    except KeyboardInterrupt:
        pass
