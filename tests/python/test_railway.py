"""``RailwayProvider`` through the Python binding, against Railway's GraphQL
fake (tests/fakes/railway.mjs, run by ``node``, proven by the official SDK
in tests/node/railway-fake.test.mjs); the provider's ``api_url`` is the
fake's GraphQL endpoint. Railway sandboxes carry no labels: ours are those
a record (or the store's registry) names, read by ``sandbox`` get, or with
``sweep_unlabelled`` by listing the whole environment. Options checked
before any request (the environment required), and the fault set every
hosted vendor meets: a failed destroy reaches the ledger without the token,
throttling waits, a hanging call is cut by its deadline, repeated items and
a lagging listing are harmless, a malformed page makes the sweep
unavailable, unregistered strangers are never touched and registered ones
are found by id."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from test_vendor_sdks import Fake

from sandbox_reclaim import (
    InMemoryLeakLedgerStore,
    RailwayProvider,
    ReclaimOutcome,
    RunRecord,
    RunStatus,
    SandboxInstanceRecord,
    SandboxProviderError,
    SweepStatus,
    list_leaks,
    reclaim_sandbox,
    reconcile,
)

TOKEN = "railway_py_account_secret"
PROJECT_TOKEN = "railway_py_project_secret"
ENVIRONMENT = "env-py"
OLD = "2026-01-01T00:00:00.123Z"
VARIABLES = ("RAILWAY_TOKEN", "RAILWAY_API_TOKEN", "RAILWAY_ENVIRONMENT_ID", "RAILWAY_GRAPHQL_ENDPOINT")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[Fake]:
    """The fake; Railway's variables cleared, so only the options count."""
    for variable in VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    started = Fake("railway.mjs", "--token", TOKEN, "--project-token", PROJECT_TOKEN, "--environment", ENVIRONMENT)
    try:
        yield started
    finally:
        started.close()


def endpoint(fake: Fake) -> str:
    """The GraphQL endpoint (the fake's ``url`` is its origin, where ``/_fake/`` lives)."""
    return f"{fake.url}/graphql/v2"


def sandbox(sandbox_id: str, **more: Any) -> dict[str, Any]:
    return {"id": sandbox_id, "createdAt": OLD, **more}


def provider(fake: Fake, **options: Any) -> RailwayProvider:
    given: dict[str, Any] = {
        "api_key": TOKEN,
        "api_url": endpoint(fake),
        "environment_id": ENVIRONMENT,
        "request_timeout": 10.0,
    }
    return RailwayProvider(**{**given, **options})


def calls(fake: Fake, field: str, sandbox_id: str) -> int:
    """The GraphQL calls of root field ``field`` naming sandbox ``sandbox_id``."""
    requests: list[dict[str, Any]] = fake.state()["requests"]
    return len([r for r in requests if r["field"] == field and r["variables"].get("id") == sandbox_id])


def destroys_of(fake: Fake, sandbox_id: str) -> int:
    return calls(fake, "sandboxDestroy", sandbox_id)


def run(key: str) -> RunRecord:
    return RunRecord(run_id=f"run-{key}", thread_id="t1", status=RunStatus.COMPLETED, started_at=1, sandbox_key=key)


def record(key: str, sandbox_id: str, updated_at: int = 1) -> SandboxInstanceRecord:
    return SandboxInstanceRecord(
        key=key, provider="railway", provider_sandbox_id=sandbox_id, thread_id="t1", updated_at=updated_at
    )


async def store_with(*records: tuple[str, str]) -> InMemoryLeakLedgerStore:
    store = InMemoryLeakLedgerStore()
    for key, sandbox_id in records:
        await store.upsert(record(key, sandbox_id))
    return store


async def registered(*ids: str) -> InMemoryLeakLedgerStore:
    """A store whose registry names ``ids``: each record written, then deleted."""
    store = await store_with(*[(f"k-{sandbox_id}", sandbox_id) for sandbox_id in ids])
    for sandbox_id in ids:
        await store.delete(f"k-{sandbox_id}")
    return store


async def test_bad_options_name_their_field_and_the_environment_is_required(
    fake: Fake, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match="RAILWAY_TOKEN or RAILWAY_API_TOKEN"):
        provider(fake, api_key="")
    with pytest.raises(TypeError, match="api_key"):
        provider(fake, api_key=5)
    with pytest.raises(ValueError, match="api_url"):
        provider(fake, api_url="nope")
    with pytest.raises(TypeError, match="environment_id"):
        provider(fake, environment_id=5)
    with pytest.raises(ValueError, match="RAILWAY_ENVIRONMENT_ID") as missing:
        provider(fake, environment_id=None)
    assert "environment_id" in str(missing.value)
    with pytest.raises(ValueError, match="page_size"):
        provider(fake, page_size=101)
    assert fake.requests() == [], "nothing was sent"
    # The environment from its variable when no option gives it; the option wins over it.
    monkeypatch.setenv("RAILWAY_ENVIRONMENT_ID", ENVIRONMENT)
    from_variable = provider(fake, environment_id=None)
    assert (from_variable.name, from_variable.api_url) == ("railway", endpoint(fake))
    assert TOKEN not in repr(from_variable)
    await from_variable.check_access()
    monkeypatch.setenv("RAILWAY_ENVIRONMENT_ID", "env-unknown")
    await provider(fake).check_access()
    checks = fake.state()["requests"]
    assert [(r["operation"], r["auth"], r["variables"]["environmentId"]) for r in checks] == [
        ("RailwaySandboxes", "bearer", ENVIRONMENT)
    ] * 2


async def test_a_reclaim_destroys_and_a_failed_destroy_reaches_the_ledger_without_the_token(fake: Fake) -> None:
    fake.seed([sandbox("sb0"), sandbox("sb1")])
    built = provider(fake)
    store = await store_with(("k0", "sb0"), ("k1", "sb1"))
    assert await reclaim_sandbox(run("k0"), provider=built, instances=store) is ReclaimOutcome.DESTROYED
    assert fake.state()["statuses"]["sb0"] == "DESTROYED"
    assert destroys_of(fake, "sb0") == 1
    fake.faults(failDestroyEvery=1)
    assert await reclaim_sandbox(run("k1"), provider=built, instances=store) is ReclaimOutcome.DESTROY_FAILED
    assert fake.state()["alive"] == ["sb1"]
    leaks = await list_leaks(store)
    assert [leak.provider_sandbox_id for leak in leaks] == ["sb1"]
    assert "Problem processing request" in (leaks[0].last_error or "")
    assert TOKEN not in repr(leaks)


async def test_a_throttled_destroy_waits_its_retry_after(fake: Fake) -> None:
    fake.seed([sandbox("sb0")])
    fake.faults(rateLimitDestroys=1, retryAfterSeconds=0.3)
    started = time.monotonic()
    await provider(fake).destroy("sb0")
    assert time.monotonic() - started >= 0.3
    assert fake.state()["alive"] == []
    assert destroys_of(fake, "sb0") == 2, "the throttled one, then the one that went"


async def test_the_destroy_deadline_cuts_the_call_and_the_sandbox_reaches_the_ledger(fake: Fake) -> None:
    fake.seed([sandbox("sb0")])
    fake.faults(hangDestroys=True)
    store = await store_with(("k0", "sb0"))
    started = time.monotonic()
    outcome = await reclaim_sandbox(run("k0"), provider=provider(fake), instances=store, destroy_timeout=0.2)
    assert outcome is ReclaimOutcome.DESTROY_FAILED
    assert time.monotonic() - started < 5
    for _ in range(100):
        if fake.state()["abandoned"] == 1:
            break
        await asyncio.sleep(0.01)
    assert fake.state()["abandoned"] == 1
    assert [leak.provider_sandbox_id for leak in await list_leaks(store)] == ["sb0"]
    assert fake.state()["alive"] == ["sb0"]


async def test_a_wrong_token_or_an_unseen_environment_names_the_variables_never_the_token(fake: Fake) -> None:
    fake.seed([sandbox("sb0")])
    refused = [
        provider(fake, api_key="railway_wrong_secret_value"),
        provider(fake, environment_id="env-unknown"),
        # The api_key option is an account token: a project token there is refused too.
        provider(fake, api_key=PROJECT_TOKEN),
    ]
    for built in refused:
        for call in (built.check_access, built.list_sandboxes, lambda: built.destroy("sb0")):
            with pytest.raises(SandboxProviderError) as raised:
                await call()
            message = str(raised.value)
            assert all(name in message for name in ("RAILWAY_TOKEN", "RAILWAY_API_TOKEN", "RAILWAY_ENVIRONMENT_ID"))
            assert "railway_wrong_secret_value" not in message
            assert TOKEN not in message and PROJECT_TOKEN not in message
    assert fake.state()["alive"] == ["sb0"]
    assert fake.state()["destroys"] == []


async def test_sweep_unlabelled_destroys_what_the_registry_names_once_repeated_or_lagging(fake: Fake) -> None:
    ours = [f"sb{i}" for i in range(6)]
    fake.seed([sandbox(sandbox_id) for sandbox_id in ours] + [sandbox("stranger-1"), sandbox("referenced-1")])
    fake.faults(repeatAcrossPages=True, destroyingMs=60_000)
    built = provider(fake, sweep_unlabelled=True, page_size=2)
    assert built.lookup is None, "the listing already takes every sandbox"
    store = await registered(*ours)
    await store.upsert(record("k-live", "referenced-1", updated_at=int(time.time() * 1000)))
    report = await reconcile(providers=[built], instances=store, orphan_grace=60)
    orphans = report.providers[0].orphans
    assert orphans.status is SweepStatus.SWEPT
    counts = (orphans.listed, orphans.found, orphans.destroyed, orphans.foreign, orphans.referenced)
    assert counts == (8, 6, 6, 1, 1)
    assert fake.state()["alive"] == ["referenced-1", "stranger-1"]
    assert [destroys_of(fake, sandbox_id) for sandbox_id in ours] == [1] * 6
    # Destroyed, still listed DESTROYING a minute: reported deleting, never destroyed again.
    again = (await reconcile(providers=[built], instances=store, orphan_grace=60)).providers[0].orphans
    assert (again.status, again.deleting, again.found, again.failed) == (SweepStatus.SWEPT, 6, 0, 0)
    assert [destroys_of(fake, sandbox_id) for sandbox_id in ours] == [1] * 6
    assert destroys_of(fake, "stranger-1") + calls(fake, "sandbox", "stranger-1") == 0


async def test_a_malformed_page_makes_the_sweep_unavailable(fake: Fake) -> None:
    ids = [f"sb{i}" for i in range(5)]
    fake.seed([sandbox(sandbox_id) for sandbox_id in ids])
    fake.faults(malformedPage=2)
    built = provider(fake, sweep_unlabelled=True, page_size=2)
    report = await reconcile(providers=[built], instances=await registered(*ids), orphan_grace=60)
    orphans = report.providers[0].orphans
    assert (orphans.status, orphans.destroyed) == (SweepStatus.UNAVAILABLE, 0)
    assert "POST sandboxes" in (orphans.error or "") and "vouch for" in (orphans.error or "")
    assert len(fake.state()["alive"]) == 5
    assert fake.state()["destroys"] == []


async def test_a_registered_sandbox_is_found_by_get_and_a_stranger_never_touched(fake: Fake) -> None:
    fake.seed([sandbox("reg-1"), sandbox("stranger-1")])
    built = provider(fake)
    assert built.lookup is not None
    report = await reconcile(providers=[built], instances=await registered("reg-1"), orphan_grace=60)
    orphans = report.providers[0].orphans
    assert (orphans.status, orphans.destroyed) == (SweepStatus.SWEPT, 1)
    assert fake.state()["alive"] == ["stranger-1"]
    assert calls(fake, "sandbox", "reg-1") == 1, "looked up by id"
    assert destroys_of(fake, "stranger-1") + calls(fake, "sandbox", "stranger-1") == 0
