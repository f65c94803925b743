"""``UpstashBoxProvider`` through the Python binding, against the Upstash Box
fake (tests/fakes/upstash-box.mjs, run by ``node``, proven by the official
SDKs in tests/python/test_upstash_box_fake.py and
tests/node/upstash-box-fake.test.mjs): options checked before any request
(an owner that cannot be part of the ``sr:<owner>`` label included), and the
fault set every hosted vendor meets: a failed delete reaches the ledger
without the key, throttling waits, a hanging call is cut by its deadline,
repeated items and a lagging listing are harmless, a malformed listing makes
the sweep unavailable, unlabelled strangers are never touched and registered
ones are found by id."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from test_upstash_box_fake import BoxFake

from sandbox_reclaim import (
    InMemoryLeakLedgerStore,
    ReclaimOutcome,
    RunRecord,
    RunStatus,
    SandboxInstanceRecord,
    SandboxProviderError,
    SweepStatus,
    UpstashBoxProvider,
    list_leaks,
    reclaim_sandbox,
    reconcile,
)

KEY = "box_py_secret_key"
OWNER = "sandbox-reclaim"
OLD = 1_767_225_600  # 2026-01-01, epoch seconds (the unit the SDKs' tests use)


@pytest.fixture
def fake() -> Iterator[BoxFake]:
    started = BoxFake("upstash-box.mjs", "--key", KEY)
    try:
        yield started
    finally:
        started.close()


def box(box_id: str, owner: str | None = None) -> dict[str, Any]:
    """A seed box: labelled ``sr:<owner>`` (or unlabelled), created long ago."""
    return {"id": box_id, "labels": [f"sr:{owner}"] if owner else [], "status": "idle", "created_at": OLD}


def provider(fake: BoxFake, **options: Any) -> UpstashBoxProvider:
    given: dict[str, Any] = {"api_key": KEY, "api_url": fake.url, "request_timeout": 10.0}
    return UpstashBoxProvider(**{**given, **options})


def calls(fake: BoxFake, method: str, path: str) -> list[dict[str, Any]]:
    return [r for r in fake.log(method) if r["path"] == path]


def run(key: str) -> RunRecord:
    return RunRecord(run_id=f"run-{key}", thread_id="t1", status=RunStatus.COMPLETED, started_at=1, sandbox_key=key)


async def store_with(*records: tuple[str, str]) -> InMemoryLeakLedgerStore:
    store = InMemoryLeakLedgerStore()
    for key, sandbox_id in records:
        record = SandboxInstanceRecord(
            key=key, provider="upstash-box", provider_sandbox_id=sandbox_id, thread_id="t1", updated_at=1
        )
        await store.upsert(record)
    return store


def test_bad_options_name_their_field_before_any_request(fake: BoxFake, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UPSTASH_BOX_API_KEY", raising=False)
    monkeypatch.delenv("UPSTASH_BOX_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="UPSTASH_BOX_API_KEY"):
        UpstashBoxProvider(api_url=fake.url)
    with pytest.raises(ValueError, match="api_key"):
        provider(fake, api_key="")
    with pytest.raises(TypeError, match="api_key"):
        provider(fake, api_key=5)
    with pytest.raises(ValueError, match="api_url"):
        provider(fake, api_url="ftp://box.example")
    with pytest.raises(ValueError, match="request_timeout"):
        provider(fake, request_timeout=0)
    # `sr:<owner>` must be a Box label: at most 20 of letters, digits, `.`, `_`, `-`, `:`.
    for owner in ("an-owner-of-18-chr", "team a", "team/a"):
        with pytest.raises(ValueError, match="owner"):
            provider(fake, owner=owner)
    with pytest.raises(TypeError):
        UpstashBoxProvider(api_key=KEY, page_size=5)  # type: ignore[call-arg]
    assert fake.log() == [], "nothing was sent"
    built = provider(fake, owner="an-owner-of-17chr")
    assert (built.name, built.api_url, built.owner) == ("upstash-box", fake.url, "an-owner-of-17chr")
    assert KEY not in repr(built)


async def test_a_reclaim_deletes_the_box_and_a_failed_delete_reaches_the_ledger_without_the_key(fake: BoxFake) -> None:
    fake.seed([box("box_0", OWNER), box("box_1", OWNER)])
    built = provider(fake)
    store = await store_with(("k0", "box_0"), ("k1", "box_1"))
    assert await reclaim_sandbox(run("k0"), provider=built, instances=store) is ReclaimOutcome.DESTROYED
    assert fake.state()["deletes"] == ["box_0"]
    deletes = calls(fake, "DELETE", "/v2/box/box_0")
    assert len(deletes) == 1 and deletes[0]["authorized"] and "authorization" not in deletes[0]["headers"]
    assert calls(fake, "DELETE", "/v2/box") == [], "never the bulk delete"
    fake.faults(failDeleteEvery=1)
    assert await reclaim_sandbox(run("k1"), provider=built, instances=store) is ReclaimOutcome.DESTROY_FAILED
    assert fake.state()["alive"] == ["box_1"]
    leaks = await list_leaks(store)
    assert [leak.provider_sandbox_id for leak in leaks] == ["box_1"]
    assert "500" in (leaks[0].last_error or "")
    assert KEY not in repr(leaks)


async def test_a_throttled_delete_waits_its_retry_after(fake: BoxFake) -> None:
    fake.seed([box("box_0", OWNER)])
    fake.faults(rateLimitDeletes=1, retryAfterSeconds=0.3)
    started = time.monotonic()
    await provider(fake).destroy("box_0")
    assert time.monotonic() - started >= 0.3
    assert fake.state()["alive"] == []
    assert len(calls(fake, "DELETE", "/v2/box/box_0")) == 2, "the throttled one, then the one that went"


async def test_the_destroy_deadline_cuts_the_call_and_the_box_reaches_the_ledger(fake: BoxFake) -> None:
    fake.seed([box("box_0", OWNER)])
    fake.faults(hangDeletes=True)
    store = await store_with(("k0", "box_0"))
    started = time.monotonic()
    outcome = await reclaim_sandbox(run("k0"), provider=provider(fake), instances=store, destroy_timeout=0.2)
    assert outcome is ReclaimOutcome.DESTROY_FAILED
    assert time.monotonic() - started < 5
    for _ in range(100):
        if fake.state()["abandoned"] == 1:
            break
        await asyncio.sleep(0.01)
    assert fake.state()["abandoned"] == 1
    assert [leak.provider_sandbox_id for leak in await list_leaks(store)] == ["box_0"]
    assert fake.state()["alive"] == ["box_0"]


async def test_a_wrong_key_names_the_variable_never_the_key(fake: BoxFake) -> None:
    fake.seed([box("box_0", OWNER)])
    refused = provider(fake, api_key="box_wrong_secret_value")
    for call in (refused.check_access, refused.list_sandboxes, lambda: refused.destroy("box_0")):
        with pytest.raises(SandboxProviderError) as raised:
            await call()
        message = str(raised.value)
        assert "UPSTASH_BOX_API_KEY" in message
        assert "box_wrong_secret_value" not in message and KEY not in message
    assert fake.state()["alive"] == ["box_0"]
    assert not any(r["authorized"] for r in fake.log())


async def test_reconcile_sweeps_our_labelled_boxes_once_repeated_or_lagging_and_spares_the_rest(fake: BoxFake) -> None:
    ours = [f"ours_{i}" for i in range(6)]
    fake.seed([box(box_id, OWNER) for box_id in ours] + [box("theirs_0", "another-team"), box("bare_0")])
    fake.faults(repeatItems=True, deletedStayListedMs=60_000)
    built = provider(fake)
    store = await store_with()
    report = await reconcile(providers=[built], instances=store, orphan_grace=60)
    orphans = report.providers[0].orphans
    assert (orphans.status, orphans.destroyed) == (SweepStatus.SWEPT, 6)
    assert fake.state()["alive"] == ["theirs_0", "bare_0"]
    assert [len(calls(fake, "DELETE", f"/v2/box/{box_id}")) for box_id in ours] == [1] * 6
    assert all(r["query"] == "?label=sr%3Asandbox-reclaim" for r in calls(fake, "GET", "/v2/box"))
    # Deleted, still listed with their old status a minute: nothing fails, nothing is deleted twice.
    again = await reconcile(providers=[built], instances=store, orphan_grace=60)
    assert (again.providers[0].orphans.listed, again.providers[0].orphans.failed) == (6, 0)
    assert sorted(fake.state()["deletes"]) == ours, "each box deleted once"
    assert fake.state()["alive"] == ["theirs_0", "bare_0"]


async def test_a_malformed_listing_makes_the_sweep_unavailable(fake: BoxFake) -> None:
    fake.seed([box(f"box_{i}", OWNER) for i in range(3)])
    fake.faults(malformedPage=True)
    report = await reconcile(providers=[provider(fake)], instances=await store_with(), orphan_grace=60)
    orphans = report.providers[0].orphans
    assert (orphans.status, orphans.destroyed) == (SweepStatus.UNAVAILABLE, 0)
    assert "GET /v2/box" in (orphans.error or "")
    assert len(fake.state()["alive"]) == 3
    assert fake.state()["deletes"] == []


async def test_a_registered_unlabelled_box_is_found_by_id_and_a_stranger_never_touched(fake: BoxFake) -> None:
    fake.seed([box("box_reg"), box("box_stranger")])
    store = await store_with(("k-reg", "box_reg"))
    await store.delete("k-reg")
    report = await reconcile(providers=[provider(fake)], instances=store, orphan_grace=60)
    orphans = report.providers[0].orphans
    assert (orphans.status, orphans.destroyed) == (SweepStatus.SWEPT, 1)
    assert fake.state()["alive"] == ["box_stranger"]
    assert len(calls(fake, "GET", "/v2/box/box_reg")) == 1, "looked up by id"
    assert calls(fake, "GET", "/v2/box/box_stranger") == [] and calls(fake, "DELETE", "/v2/box/box_stranger") == []
