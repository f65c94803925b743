"""The Sprites, Runloop and Blaxel fakes (tests/fakes/sprites.mjs,
runloop.mjs, blaxel.mjs) driven by each vendor's official Python SDK (PyPI
``sprites-py``, ``runloop-api-client``, ``blaxel``, pinned in
scripts/test-python.sh), as tests/node/vendor-sdks.test.mjs drives them with
the Node SDKs: refused with a wrong key, every page listed once, one got, one
destroyed (and what follows), not found, and the faults read as the vendor's.

Needs only pytest, the three SDKs and ``node`` (never ``sandbox_reclaim``);
a missing SDK or ``node`` FAILS these tests, never skips them."""

from __future__ import annotations

import importlib
import itertools
import json
import logging
import os
import subprocess
import tempfile
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import runloop_api_client
import sprites
from runloop_api_client import Runloop
from sprites import ListOptions, SpritesClient

FAKES = Path(__file__).resolve().parents[1] / "fakes"
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
T0_MS = int(T0.timestamp() * 1000)


class Fake:
    """A fake vendor in a ``node`` subprocess, serving until its stdin closes."""

    def __init__(self, script: str, *args: str) -> None:
        self.process = subprocess.Popen(
            ["node", str(FAKES / script), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.process.stdout is not None
        self.url: str = json.loads(self.process.stdout.readline())["url"]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def _call(self, method: str, route: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}/_fake/{route}", data=data, method=method)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def seed(self, items: list[dict[str, Any]]) -> None:
        self._call("POST", "sandboxes", items)

    def faults(self, **faults: object) -> None:
        self._call("POST", "faults", faults)

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = self._call("GET", "state")
        return state

    def requests(self, method: str | None = None) -> list[dict[str, str]]:
        return [r for r in self.state()["requests"] if method is None or r["method"] == method]


def start(script: str, *args: str) -> Iterator[Fake]:
    fake = Fake(script, *args)
    try:
        yield fake
    finally:
        fake.close()


def query(request: dict[str, str]) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(request["query"].lstrip("?")))


# ------------------------------------------------------------------ Sprites

SPRITES_KEY = "spr_key"
SPRITE_STATUSES = ["cold", "warm", "running"]


def sprite_name(i: int) -> str:
    return f"sb-{i:03d}"


@pytest.fixture
def sprites_fake() -> Iterator[Fake]:
    yield from start("sprites.mjs", "--key", SPRITES_KEY)


def seed_sprites(fake: Fake, count: int) -> None:
    fake.seed(
        [
            {
                "name": sprite_name(i),
                "labels": ["sandbox-reclaim", f"key-{i}"] if i % 2 else [],
                "status": SPRITE_STATUSES[i % 3],
                "createdAt": T0_MS + i * 1000,
            }
            for i in range(count)
        ]
    )


def sprites_client(fake: Fake, key: str = SPRITES_KEY, timeout: float = 5.0) -> SpritesClient:
    return SpritesClient(key, base_url=fake.url, timeout=timeout)


def test_sprites_refuses_a_wrong_token(sprites_fake: Fake) -> None:
    seed_sprites(sprites_fake, 2)
    client = sprites_client(sprites_fake, "spr_wrong")
    with pytest.raises(sprites.AuthenticationError, match="Authentication failed for list sprites"):
        client.list_sprites()
    with pytest.raises(sprites.AuthenticationError):
        client.get_sprite(sprite_name(0))
    assert len(sprites_fake.requests()) == 2


def test_sprites_lists_every_page_once(sprites_fake: Fake) -> None:
    seed_sprites(sprites_fake, 123)
    client = sprites_client(sprites_fake)
    # list_all_sprites asks for 100 a page (clamped to 50) and keeps only the names.
    names = [s.name for s in client.list_all_sprites(prefix="sb-")]
    assert names == [sprite_name(i) for i in range(123)]
    lists = sprites_fake.requests("GET")
    assert len(lists) == 3
    assert all(query(r)["max_results"] == "100" for r in lists)

    seen: list[sprites.SpriteInfo] = []
    token: str | None = None
    pages = 0
    while True:
        page = client.list_sprites(ListOptions(prefix="sb-", max_results=7, continuation_token=token))
        pages += 1
        assert len(page.sprites) <= 7
        seen.extend(page.sprites)
        if not page.has_more:
            assert page.next_continuation_token is None
            break
        assert page.next_continuation_token
        token = page.next_continuation_token
    assert pages == -(-123 // 7)
    assert [s.name for s in seen] == names
    info = seen[7]
    assert (info.status, info.labels, info.organization) == ("warm", ["sandbox-reclaim", "key-7"], "fake-org")
    assert info.created_at == datetime(2026, 1, 1, 0, 0, 7, tzinfo=timezone.utc)
    assert info.id.startswith("sprite-")


def test_sprites_gets_deletes_and_reads_not_found(sprites_fake: Fake) -> None:
    seed_sprites(sprites_fake, 3)
    client = sprites_client(sprites_fake)
    sprite = client.get_sprite(sprite_name(1))
    assert (sprite.name, sprite.status, sprite.labels) == (sprite_name(1), "warm", ["sandbox-reclaim", "key-1"])
    client.delete_sprite(sprite_name(1))
    assert sprites_fake.state()["alive"] == [sprite_name(0), sprite_name(2)]
    assert sprites_fake.state()["deleted"] == [sprite_name(1)]
    with pytest.raises(sprites.NotFoundError, match="get sprite 'sb-001'"):
        client.get_sprite(sprite_name(1))
    with pytest.raises(sprites.NotFoundError, match="destroy sprite 'sb-001'"):
        client.delete_sprite(sprite_name(1))
    with pytest.raises(sprites.NotFoundError):
        client.get_sprite("never-was")


def test_sprites_faults_reach_the_sdk(sprites_fake: Fake) -> None:
    seed_sprites(sprites_fake, 8)
    client = sprites_client(sprites_fake)
    sprites_fake.faults(failDeleteEvery=1)
    with pytest.raises(sprites.SpriteError, match=r"status 500"):
        client.delete_sprite(sprite_name(0))
    sprites_fake.faults(failDeleteEvery=0, rateLimitDeletes=1, retryAfterSeconds=7)
    with pytest.raises(sprites.SpriteError, match=r"status 429.*retry_after_seconds.*7"):
        client.delete_sprite(sprite_name(0))
    assert len(sprites_fake.state()["alive"]) == 8

    sprites_fake.faults(deletedStayListedMs=60_000)
    client.delete_sprite(sprite_name(0))
    listed = {s.name: s.status for s in client.list_sprites().sprites}
    assert listed[sprite_name(0)] == "cold", "listed a while after, in its last status"
    sprites_fake.faults(deletedStayListedMs=0)

    first = client.list_sprites(ListOptions(max_results=3))
    sprites_fake.faults(cycleCursor=True)
    again = client.list_sprites(ListOptions(max_results=3, continuation_token=first.next_continuation_token))
    assert again.has_more and again.next_continuation_token == first.next_continuation_token
    sprites_fake.faults(cycleCursor=False, malformedPage=2)
    with pytest.raises(AttributeError):
        client.list_sprites(ListOptions(max_results=3, continuation_token=first.next_continuation_token))
    sprites_fake.faults(malformedPage=0, hangLists=True)
    with pytest.raises(sprites.NetworkError):
        sprites_client(sprites_fake, timeout=0.3).list_sprites()


# ------------------------------------------------------------------ Runloop

RUNLOOP_KEY = "rl_key"


def devbox_id(i: int) -> str:
    return f"dbx_{i:03d}"


@pytest.fixture
def runloop_fake() -> Iterator[Fake]:
    yield from start("runloop.mjs", "--key", RUNLOOP_KEY)


def seed_devboxes(fake: Fake, count: int) -> None:
    fake.seed(
        [
            {
                "id": devbox_id(i),
                "metadata": {"io.sandbox-reclaim.owner": "me"} if i % 2 else {},
                "status": "suspended" if i % 5 == 4 else "running",
                "createTimeMs": T0_MS + i * 1000,
            }
            for i in range(count)
        ]
    )


def runloop_client(fake: Fake, key: str = RUNLOOP_KEY, timeout: float = 5.0, max_retries: int = 0) -> Runloop:
    # Strict: the fake's answers must validate against the SDK's models.
    return Runloop(
        bearer_token=key, base_url=fake.url, max_retries=max_retries, timeout=timeout, _strict_response_validation=True
    )


def test_runloop_refuses_a_wrong_key(runloop_fake: Fake) -> None:
    with pytest.raises(runloop_api_client.AuthenticationError) as raised:
        runloop_client(runloop_fake, "rl_wrong", max_retries=2).devboxes.list()
    assert raised.value.status_code == 401
    assert len(runloop_fake.requests()) == 1


def test_runloop_lists_every_page_once(runloop_fake: Fake) -> None:
    seed_devboxes(runloop_fake, 23)
    seen = list(runloop_client(runloop_fake).devboxes.list(limit=5))
    assert [d.id for d in seen] == [devbox_id(i) for i in range(23)]
    assert [query(r).get("starting_after") for r in runloop_fake.requests("GET")] == [
        None,
        "dbx_004",
        "dbx_009",
        "dbx_014",
        "dbx_019",
    ]
    assert seen[3].metadata == {"io.sandbox-reclaim.owner": "me"}
    assert seen[3].create_time_ms == T0_MS + 3000
    assert seen[4].status == "suspended"
    page = runloop_client(runloop_fake).devboxes.list(limit=10, status="suspended")
    assert [d.id for d in page.devboxes] == ["dbx_004", "dbx_009", "dbx_014", "dbx_019"]
    assert (page.has_more, page.total_count, page.has_next_page()) == (False, 4, False)


def test_runloop_retrieves_shuts_down_and_reads_not_found(runloop_fake: Fake) -> None:
    seed_devboxes(runloop_fake, 3)
    client = runloop_client(runloop_fake)
    assert client.devboxes.retrieve(devbox_id(1)).status == "running"
    shut = client.devboxes.shutdown(devbox_id(1))
    assert (shut.status, shut.shutdown_reason) == ("shutdown", "api_shutdown")
    assert shut.end_time_ms is not None
    assert client.devboxes.retrieve(devbox_id(1)).status == "shutdown"
    listed = {d.id: d.status for d in client.devboxes.list()}
    assert listed[devbox_id(1)] == "shutdown", "a shut-down devbox stays listed"
    assert client.devboxes.shutdown(devbox_id(1), force="true") == shut
    assert runloop_fake.state()["alive"] == [devbox_id(0), devbox_id(2)]
    assert runloop_fake.state()["deleted"] == [devbox_id(1)]
    with pytest.raises(runloop_api_client.NotFoundError) as raised:
        client.devboxes.retrieve("dbx_nope")
    assert raised.value.status_code == 404
    assert raised.value.body == {"message": "Devbox dbx_nope not found"}
    with pytest.raises(runloop_api_client.NotFoundError):
        client.devboxes.shutdown("dbx_nope")


def test_runloop_faults_reach_the_sdk(runloop_fake: Fake) -> None:
    seed_devboxes(runloop_fake, 6)
    client = runloop_client(runloop_fake)
    runloop_fake.faults(failDeleteEvery=1)
    with pytest.raises(runloop_api_client.InternalServerError):
        client.devboxes.shutdown(devbox_id(0))
    runloop_fake.faults(failDeleteEvery=0, rateLimitDeletes=1, retryAfterSeconds=9)
    with pytest.raises(runloop_api_client.RateLimitError) as raised:
        client.devboxes.shutdown(devbox_id(0))
    assert raised.value.response.headers["retry-after"] == "9"
    assert len(runloop_fake.requests("POST")) == 2

    runloop_fake.faults(rateLimitDeletes=0, cycleCursor=True)
    looping = [d.id for d in itertools.islice(client.devboxes.list(limit=2), 9)]
    assert looping == ["dbx_000", "dbx_001"] + ["dbx_002", "dbx_001"] * 3 + ["dbx_002"], "a naive client loops"
    runloop_fake.faults(cycleCursor=False, repeatAcrossPages=True)
    repeated = [d.id for d in client.devboxes.list(limit=2)]
    assert repeated == ["dbx_000", "dbx_001", "dbx_001", "dbx_002", "dbx_003", "dbx_003", "dbx_004", "dbx_005"]
    runloop_fake.faults(repeatAcrossPages=False, hangDeletes=True)
    with pytest.raises(runloop_api_client.APITimeoutError):
        runloop_client(runloop_fake, timeout=0.3).devboxes.shutdown(devbox_id(1))


# ------------------------------------------------------------------- Blaxel

BLAXEL_KEY = "bl_key"
BLAXEL_WORKSPACE = "ws-test"


def sandbox_name(i: int) -> str:
    return f"sbx-{i:03d}"


@pytest.fixture(scope="module")
def blaxel() -> Iterator[SimpleNamespace]:
    """The Blaxel SDK, imported with the environment it reads at import time
    (credentials, no tracking, HOME away from ~/.blaxel)."""
    saved = dict(os.environ)
    with tempfile.TemporaryDirectory() as home:
        for name in ("BL_API_URL", "BL_CLIENT_CREDENTIALS", "BL_ENV", "BL_REGION", "BL_API_VERSION", "BL_ENABLE_OPENTELEMETRY"):
            os.environ.pop(name, None)
        os.environ.update(
            {"BL_API_KEY": BLAXEL_KEY, "BL_WORKSPACE": BLAXEL_WORKSPACE, "DO_NOT_TRACK": "1", "HOME": home}
        )
        # Importing blaxel configures logging (basicConfig on the root logger):
        # the rest of the suite gets the root logger back as it was.
        root = logging.getLogger()
        handlers, level = root.handlers[:], root.level
        try:
            importlib.import_module("blaxel")
            root.handlers[:] = handlers
            root.setLevel(level)
            core = importlib.import_module("blaxel.core")
            yield SimpleNamespace(
                client=importlib.import_module("blaxel.core.client").client,
                Sandbox=core.SyncSandboxInstance,
                APIError=core.SandboxAPIError,
                RateLimitError=importlib.import_module("blaxel.core.client.errors").RateLimitError,
                ApiKey=importlib.import_module("blaxel.core.authentication.apikey").ApiKey,
                Credentials=importlib.import_module("blaxel.core.authentication.types").CredentialsType,
                list_sandboxes=importlib.import_module("blaxel.core.client.api.compute.list_sandboxes"),
            )
        finally:
            os.environ.clear()
            os.environ.update(saved)


@pytest.fixture
def blaxel_fake(blaxel: SimpleNamespace) -> Iterator[Fake]:
    for fake in start("blaxel.mjs", "--key", BLAXEL_KEY, "--workspace", BLAXEL_WORKSPACE):
        use_blaxel(blaxel, fake)
        yield fake


def use_blaxel(blaxel: SimpleNamespace, fake: Fake, key: str = BLAXEL_KEY, workspace: str = BLAXEL_WORKSPACE) -> None:
    # The Python SDK reads no base-URL variable: its module client is pointed here.
    blaxel.client.with_base_url(f"{fake.url}/v0")
    blaxel.client.with_auth(blaxel.ApiKey(blaxel.Credentials(api_key=key, workspace=workspace), workspace, fake.url))


def seed_sandboxes(fake: Fake, count: int) -> None:
    fake.seed(
        [
            {
                "name": sandbox_name(i),
                "labels": {"io.sandbox-reclaim.owner": "me"} if i % 2 else {},
                "status": "DEACTIVATED" if i % 5 == 4 else "DEPLOYED",
                "createdAt": T0_MS + i * 1000,
            }
            for i in range(count)
        ]
    )


def names(sandboxes: Any) -> list[str]:
    return [s.metadata.name for s in sandboxes]


def test_blaxel_refuses_a_wrong_key_or_workspace(blaxel: SimpleNamespace, blaxel_fake: Fake) -> None:
    use_blaxel(blaxel, blaxel_fake, key="bl_wrong")
    with pytest.raises(blaxel.APIError) as raised:
        blaxel.Sandbox.list()
    assert raised.value.status_code == 401
    use_blaxel(blaxel, blaxel_fake, workspace="ws-other")
    with pytest.raises(blaxel.APIError) as raised:
        blaxel.Sandbox.get(sandbox_name(0))
    assert raised.value.status_code == 403
    use_blaxel(blaxel, blaxel_fake)
    assert names(blaxel.Sandbox.list()) == []


def test_blaxel_lists_every_page_once(blaxel: SimpleNamespace, blaxel_fake: Fake) -> None:
    seed_sandboxes(blaxel_fake, 23)
    first = blaxel.Sandbox.list(limit=5)
    assert first.meta.total == 23
    seen = list(first.auto_paging_iter())
    assert names(seen) == [sandbox_name(22 - i) for i in range(23)]
    lists = blaxel_fake.requests("GET")
    assert len(lists) == 5
    assert all(query(r)["showTerminated"] == "false" and query(r)["limit"] == "5" for r in lists)
    s3 = next(s for s in seen if s.metadata.name == sandbox_name(3))
    assert s3.metadata.labels.to_dict() == {"io.sandbox-reclaim.owner": "me"}
    assert s3.metadata.created_at == "2026-01-01T00:00:03Z"
    assert s3.status == "DEPLOYED"
    assert next(s for s in seen if s.metadata.name == sandbox_name(4)).status == "DEACTIVATED"


def test_blaxel_gets_deletes_and_reads_not_found(blaxel: SimpleNamespace, blaxel_fake: Fake) -> None:
    seed_sandboxes(blaxel_fake, 3)
    sandbox = blaxel.Sandbox.get(sandbox_name(1))
    assert (sandbox.metadata.name, sandbox.status, sandbox.metadata.workspace) == (
        sandbox_name(1),
        "DEPLOYED",
        BLAXEL_WORKSPACE,
    )
    deleted = blaxel.Sandbox.delete(sandbox_name(1))
    assert (deleted.metadata.name, deleted.status) == (sandbox_name(1), "DELETING")
    assert blaxel.Sandbox.get(sandbox_name(1)).status == "TERMINATED"
    assert names(blaxel.Sandbox.list()) == [sandbox_name(2), sandbox_name(0)]
    everything = blaxel.list_sandboxes.sync(client=blaxel.client, show_terminated=True)
    assert {s.metadata.name: s.status for s in everything.data}[sandbox_name(1)] == "TERMINATED"
    assert blaxel_fake.state()["deleted"] == [sandbox_name(1)]
    with pytest.raises(blaxel.APIError) as raised:
        blaxel.Sandbox.get("nope")
    assert (raised.value.status_code, str(raised.value)) == (404, "Sandbox not found")
    with pytest.raises(blaxel.APIError) as raised:
        blaxel.Sandbox.delete("nope")
    assert raised.value.status_code == 404


def test_blaxel_faults_reach_the_sdk(blaxel: SimpleNamespace, blaxel_fake: Fake) -> None:
    seed_sandboxes(blaxel_fake, 6)
    blaxel_fake.faults(failDeleteEvery=1)
    with pytest.raises(blaxel.APIError) as raised:
        blaxel.Sandbox.delete(sandbox_name(0))
    assert raised.value.status_code == 500
    blaxel_fake.faults(failDeleteEvery=0, rateLimitDeletes=1, retryAfterSeconds=4)
    with pytest.raises(blaxel.RateLimitError) as limited:
        blaxel.Sandbox.delete(sandbox_name(0))
    assert (limited.value.status_code, limited.value.retry_after) == (429, "4"), "the Retry-After header, as text"
    assert len(blaxel_fake.requests("DELETE")) == 2

    blaxel_fake.faults(deletedStayListedMs=60_000)
    blaxel.Sandbox.delete(sandbox_name(0))
    listed = {s.metadata.name: s.status for s in blaxel.Sandbox.list()}
    assert listed[sandbox_name(0)] == "DELETING"
    blaxel_fake.faults(deletedStayListedMs=0)

    blaxel_fake.faults(cycleCursor=True)
    looping = names(itertools.islice(blaxel.Sandbox.list(limit=2).auto_paging_iter(), 8))
    assert looping == ["sbx-005", "sbx-004"] + ["sbx-003", "sbx-002"] * 3, "a naive client loops"
    blaxel_fake.faults(cycleCursor=False, repeatAcrossPages=True)
    repeated = names(blaxel.Sandbox.list(limit=2).auto_paging_iter())
    assert repeated == ["sbx-005", "sbx-004", "sbx-004", "sbx-003", "sbx-002", "sbx-002", "sbx-001"]
