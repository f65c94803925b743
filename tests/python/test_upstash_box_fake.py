"""The Upstash Box fake (tests/fakes/upstash-box.mjs) driven by the vendor's
official Python SDK (PyPI ``upstash-box`` 0.4.0, pinned in
scripts/test-python.sh), as tests/node/upstash-box-fake.test.mjs drives it
with the npm SDK: refused with a wrong key, listed (with and without a label),
got by id and by name, deleted (and what follows: the tombstone, the 404s),
created with labels, and the faults read as the vendor's.

Needs only pytest, the SDK and ``node`` (never ``sandbox_reclaim``); a missing
SDK or ``node`` FAILS these tests, never skips them."""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import httpx
import pydantic
import pytest
from test_vendor_sdks import Fake
from upstash_box import Box, BoxError, __version__

KEY = "box_key"
T0 = int(datetime(2026, 1, 1, tzinfo=timezone.utc).timestamp())  # epoch seconds, as the API serves them
STATUSES = ["idle", "running", "paused", "error"]


class BoxFake(Fake):
    """tests/fakes/upstash-box.mjs, whose seed route is ``/_fake/boxes``."""

    def seed(self, items: list[dict[str, Any]]) -> None:
        self.seed_ids(items)

    def seed_ids(self, items: list[dict[str, Any]]) -> list[str]:
        ids: list[str] = self._call("POST", "boxes", items)["ids"]
        return ids

    def log(self, method: str | None = None) -> list[dict[str, Any]]:
        """The API requests, each with its ``headers`` (the key redacted) and ``authorized``."""
        return [r for r in self.state()["requests"] if method is None or r["method"] == method]


@pytest.fixture
def fake() -> Iterator[BoxFake]:
    box_fake = BoxFake("upstash-box.mjs", "--key", KEY)
    try:
        yield box_fake
    finally:
        box_fake.close()


def box_id(i: int) -> str:
    return f"box_{i:04d}"


def seed_boxes(fake: BoxFake, count: int) -> None:
    fake.seed(
        [
            {
                "id": box_id(i),
                "name": f"sb-{i}",
                "status": STATUSES[i % 4],
                "labels": ["io.sr:owner-a", f"key-{i}"] if i % 2 else ["io.sr:owner-ab"],
                "created_at": T0 + i,
            }
            for i in range(count)
        ]
    )


def ids(boxes: Any) -> list[str]:
    return [b.id for b in boxes]


def status_of(error: pytest.ExceptionInfo[BoxError]) -> tuple[int | None, str]:
    return error.value.status_code, error.value.message


def test_the_sdk_is_0_4_0() -> None:
    assert __version__ == "0.4.0"


def test_a_wrong_key_is_refused_with_401(fake: BoxFake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UPSTASH_DISABLE_TELEMETRY", raising=False)  # read at call time
    seed_boxes(fake, 2)
    with pytest.raises(BoxError) as raised:
        Box.list(api_key="box_wrong", base_url=fake.url)
    assert status_of(raised) == (401, "unauthorized")
    with pytest.raises(BoxError) as raised:
        Box.get(box_id(0), api_key="box_wrong", base_url=fake.url)
    assert status_of(raised) == (401, "unauthorized")
    with pytest.raises(BoxError) as raised:
        Box.delete_boxes(box_ids=[box_id(0)], api_key="box_wrong", base_url=fake.url)
    assert status_of(raised) == (401, "unauthorized")
    requests = fake.log()
    assert [(r["method"], r["path"]) for r in requests] == [
        ("GET", "/v2/box"),
        ("GET", f"/v2/box/{box_id(0)}"),
        ("DELETE", "/v2/box"),
    ], "the SDK never retries"
    assert all(not r["authorized"] and r["headers"]["x-box-api-key"] == "<redacted>" for r in requests)
    assert requests[0]["headers"]["upstash-telemetry-sdk"] == "upstash-box-py@0.4.0"
    assert fake.state()["alive"] == [box_id(0), box_id(1)]


def test_list_is_every_box_and_a_label_filters_exactly(fake: BoxFake) -> None:
    seed_boxes(fake, 7)
    fake.seed([{"id": "box_gone", "status": "deleted", "labels": ["io.sr:owner-a"]}])
    listed = Box.list(api_key=KEY, base_url=fake.url)
    assert ids(listed) == [box_id(i) for i in range(7)], "a deleted box is never listed"
    b3 = listed[3]
    assert (b3.id, b3.name, b3.status, b3.labels, b3.created_at, b3.updated_at) == (
        box_id(3),
        "sb-3",
        "error",
        ["io.sr:owner-a", "key-3"],
        T0 + 3,
        T0 + 3,
    )
    assert ids(Box.list(api_key=KEY, base_url=fake.url, label="io.sr:owner-a")) == [box_id(1), box_id(3), box_id(5)]
    assert ids(Box.list(api_key=KEY, base_url=fake.url, label="key-5")) == [box_id(5)]
    assert Box.list(api_key=KEY, base_url=fake.url, label="nobody") == []
    queries = [r["query"] for r in fake.requests("GET")]
    assert queries == ["", "?label=io.sr%3Aowner-a", "?label=key-5", "?label=nobody"], "quote(safe='')"


def test_get_by_id_and_by_name_and_not_found(fake: BoxFake) -> None:
    seed_boxes(fake, 3)
    with Box.get(box_id(1), api_key=KEY, base_url=fake.url) as box:
        assert box.id == box_id(1)
        assert box.get_status() == {"status": "running"}
        assert box.labels.list() == ["io.sr:owner-a", "key-1"]
    with Box.get_by_name("sb-2", api_key=KEY, base_url=fake.url) as by_name:
        assert by_name.id == box_id(2)
        assert by_name.get_status() == {"status": "paused"}
    assert fake.requests()[-1]["path"] == f"/v2/box/{box_id(2)}/status", "later calls use the answer's id"
    with pytest.raises(BoxError) as raised:
        Box.get("box_nope", api_key=KEY, base_url=fake.url)
    assert status_of(raised) == (404, "Box not found")


def test_delete_then_the_tombstone_and_the_404s(fake: BoxFake) -> None:
    seed_boxes(fake, 3)
    Box.get(box_id(1), api_key=KEY, base_url=fake.url).delete()
    assert fake.state()["deletes"] == [box_id(1)]
    assert ids(Box.list(api_key=KEY, base_url=fake.url)) == [box_id(0), box_id(2)]
    assert Box.list(api_key=KEY, base_url=fake.url, label="key-1") == []
    with Box.get(box_id(1), api_key=KEY, base_url=fake.url) as tombstone:
        assert tombstone.id == box_id(1), "a deleted box still answers GET /v2/box/{id}"
        with pytest.raises(BoxError) as raised:
            tombstone.get_status()
        assert status_of(raised) == (404, "Box has been deleted")
        with pytest.raises(BoxError) as raised:
            tombstone.delete()
        assert status_of(raised) == (404, "Box has been deleted")
    with pytest.raises(BoxError) as raised:
        Box.delete_boxes(box_ids=["box_nope"], api_key=KEY, base_url=fake.url)
    assert status_of(raised) == (404, "Box not found")
    before = len(fake.requests())
    with pytest.raises(BoxError, match="must contain at least one non-empty id"):
        Box.delete_boxes(box_ids=[], api_key=KEY, base_url=fake.url)
    assert len(fake.requests()) == before, "the SDK refuses an empty bulk delete before sending it"
    Box.delete_boxes(box_ids=[box_id(0), box_id(2)], api_key=KEY, base_url=fake.url)
    assert fake.state()["deletes"] == [box_id(1), box_id(0), box_id(2)]
    assert Box.list(api_key=KEY, base_url=fake.url) == []


def test_create_with_labels_then_list_by_label(fake: BoxFake) -> None:
    seed_boxes(fake, 2)
    box = Box.create(
        api_key=KEY, base_url=fake.url, name="0123456789abcdef", labels=["io.sr:o-1a2b3c4d", "k:9f8e"], runtime="python"
    )
    with box:
        assert box.id.startswith("box_") and len(box.id) == 20
        assert box.get_status() == {"status": "idle"}
        found = Box.list(api_key=KEY, base_url=fake.url, label="io.sr:o-1a2b3c4d")
        assert [(b.id, b.name, b.status, b.runtime) for b in found] == [(box.id, "0123456789abcdef", "idle", "python")]
        assert abs(found[0].created_at - time.time()) < 60, "created_at is now, in seconds"
        assert box.labels.add("extra") == ["io.sr:o-1a2b3c4d", "k:9f8e", "extra"]
        assert box.labels.remove("k:9f8e") == ["io.sr:o-1a2b3c4d", "extra"]
    posted = [r for r in fake.log("POST") if r["path"] == "/v2/box"]
    assert len(posted) == 1 and posted[0]["headers"]["content-type"] == "application/json"
    for labels, message in [
        (["io.sandbox-reclaim.owner=me"], "invalid label"),
        (["a" * 21], "invalid label"),
        (["a", "b", "c", "d", "e", "f"], "at most 5 labels"),
    ]:
        with pytest.raises(BoxError, match=message) as raised:
            Box.create(api_key=KEY, base_url=fake.url, labels=labels)
        assert raised.value.status_code == 400
    with Box.create(api_key=KEY, base_url=fake.url, labels=["a" * 20, "b", "c", "d", "e"]) as edge:
        assert len(Box.list(api_key=KEY, base_url=fake.url, label="a" * 20)) == 1, f"{edge.id}: 20 characters, 5 labels"


def test_faults_reach_the_sdk(fake: BoxFake) -> None:
    seed_boxes(fake, 6)
    box0 = Box.get(box_id(0), api_key=KEY, base_url=fake.url)
    fake.faults(failDeleteEvery=1)
    with pytest.raises(BoxError) as raised:
        box0.delete()
    assert status_of(raised) == (500, "Internal server error")
    fake.faults(failDeleteEvery=0, rateLimitDeletes=1, retryAfterSeconds=7)
    with pytest.raises(BoxError) as raised:
        box0.delete()
    assert status_of(raised) == (429, "Too many requests")
    assert len(fake.requests("DELETE")) == 2, "the SDK does not retry a 429"
    assert fake.state()["deletes"] == []
    box0.delete()

    fake.faults(malformedPage=True)
    with pytest.raises(pydantic.ValidationError):
        Box.list(api_key=KEY, base_url=fake.url)
    fake.faults(malformedPage=False, repeatItems=True)
    assert ids(Box.list(api_key=KEY, base_url=fake.url)) == [box_id(i) for i in (1, 2, 3, 4, 5, 1)]
    fake.faults(repeatItems=False, deletedStayListedMs=60_000)
    Box.get(box_id(1), api_key=KEY, base_url=fake.url).delete()
    assert {b.id: b.status for b in Box.list(api_key=KEY, base_url=fake.url)}[box_id(1)] == "running"
    fake.faults(deletedStayListedMs=0)
    assert box_id(1) not in ids(Box.list(api_key=KEY, base_url=fake.url))

    fake.faults(latencyMs=150)
    started = time.monotonic()
    Box.list(api_key=KEY, base_url=fake.url)
    assert time.monotonic() - started >= 0.14
    fake.faults(latencyMs=0, hangDeletes=True)
    with Box.get(box_id(2), api_key=KEY, base_url=fake.url, timeout=300) as box2:
        with pytest.raises(BoxError) as raised:
            box2.delete()
        assert status_of(raised) == (None, "Request timeout")
    fake.faults(hangDeletes=False, hangLists=True)
    # Box.list takes no timeout: httpx's default (5 s) ends it, unwrapped.
    with pytest.raises(httpx.ReadTimeout):
        Box.list(api_key=KEY, base_url=fake.url)
    assert box_id(2) in fake.state()["alive"]


def test_the_fake_answers_without_the_sdk_as_the_sdk_reads_it(fake: BoxFake) -> None:
    """What the Rust provider meets on the wire, read by hand."""
    [minted] = fake.seed_ids([{"name": "x", "created_at": T0}])
    assert minted.startswith("box_")
    headers = {"X-Box-Api-Key": KEY}
    with httpx.Client(base_url=fake.url, headers=headers) as client:
        listing = client.get("/v2/box", params={"label": "a:b"})
        assert (listing.status_code, listing.json()) == (200, [])
        assert client.get("/v2/box").json()[0]["created_at"] == T0
        assert client.delete(f"/v2/box/{urllib.parse.quote(minted)}").json() == {}
        gone = client.delete(f"/v2/box/{minted}")
        assert (gone.status_code, gone.json()) == (404, {"error": "Box has been deleted"})
        assert client.get(f"/v2/box/{minted}").json()["status"] == "deleted"
        unknown = client.get("/v2/box/box_nope/status")
        assert (unknown.status_code, unknown.json()) == (404, {"error": "Box not found"})
        fake.faults(rateLimitDeletes=1, retryAfterSeconds=3)
        limited = client.delete("/v2/box/box_nope")
        assert (limited.status_code, limited.headers["retry-after"]) == (429, "3")
        refused = client.get("/v2/box", headers={"X-Box-Api-Key": "nope"})
        assert (refused.status_code, refused.json()) == (401, {"error": "unauthorized"})
