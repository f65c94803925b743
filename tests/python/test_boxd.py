"""``BoxdProvider`` through the Python binding, against boxd's gRPC fake
(tests/fakes/boxd_fake.py, proven by the official ``boxd`` client in
tests/python/test_boxd_fake.py, whose ``Fake`` runs it here; it needs
``boxd==0.2.19``, and without it these tests FAIL under CI, never pass).
Options checked before any request, the API key's exchange and a token sent
as is, and the fault set every hosted vendor meets: a failed destroy reaches
the ledger without the credential, throttling waits, a hanging call is cut
by its deadline, repeated items and a lagging listing are harmless, a
malformed listing makes the sweep unavailable, unlabelled strangers are
never touched and registered ones are found by id."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fake_process import need_package
from test_boxd_fake import BOXD_VERSION, Fake, wait_abandoned

from sandbox_reclaim import (
    BoxdProvider,
    InMemoryLeakLedgerStore,
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

API_KEY = "bxd_py_secret_key"
TOKEN = "boxd-py-session-token"
ORG = "acme"
OWNER = "sandbox-reclaim"
OWNER_LABEL = "io.sandbox-reclaim.owner"
OLD = 1_767_225_600  # 2026-01-01, epoch seconds
VARIABLES = ("BOXD_TOKEN", "BOXD_API_KEY", "BOXD_ORG", "BOXD_BASE_URL", "BOXD_API_URL")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[Fake]:
    """The fake; boxd's variables cleared, so only the options count."""
    need_package("boxd", BOXD_VERSION, "the boxd fake runs on the official client's stubs (pip install boxd==0.2.19)")
    for variable in VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    started = Fake("--api-key", API_KEY, "--token", TOKEN, "--orgs", ORG)
    try:
        yield started
    finally:
        started.close()


def vm_id(index: int) -> str:
    """A machine id (a UUID, as the fake mints them)."""
    return f"0c0ffee0-0000-4000-8000-{index:012d}"


def machine(index: int, owner: str | None = None, org: str = ORG) -> dict[str, Any]:
    """A seed machine in ``org``, created ``index`` seconds after OLD, labelled for ``owner`` (or unlabelled)."""
    labels = {OWNER_LABEL: owner} if owner else {}
    return {"id": vm_id(index), "org": org, "labels": labels, "created_at": OLD + index}


def provider(fake: Fake, **options: Any) -> BoxdProvider:
    given: dict[str, Any] = {"api_key": API_KEY, "api_url": fake.url, "org": ORG, "request_timeout": 10.0}
    return BoxdProvider(**{**given, **options})


def destroys_of(fake: Fake, sandbox_id: str) -> int:
    return len([r for r in fake.requests("DestroyVm") if r["id"] == sandbox_id])


def run(key: str) -> RunRecord:
    return RunRecord(run_id=f"run-{key}", thread_id="t1", status=RunStatus.COMPLETED, started_at=1, sandbox_key=key)


async def store_with(*records: tuple[str, str]) -> InMemoryLeakLedgerStore:
    store = InMemoryLeakLedgerStore()
    for key, sandbox_id in records:
        record = SandboxInstanceRecord(
            key=key, provider="boxd", provider_sandbox_id=sandbox_id, thread_id="t1", updated_at=1
        )
        await store.upsert(record)
    return store


async def test_bad_options_name_their_field_before_any_request(fake: Fake) -> None:
    with pytest.raises(ValueError, match="api_key") as missing:
        provider(fake, api_key="")
    assert "BOXD_TOKEN" in str(missing.value) and "BOXD_API_KEY" in str(missing.value)
    with pytest.raises(TypeError, match="api_key"):
        provider(fake, api_key=5)
    with pytest.raises(TypeError, match="org"):
        provider(fake, org=5)
    with pytest.raises(ValueError, match="api_url"):
        provider(fake, api_url="ftp://boxd.example")
    with pytest.raises(ValueError, match="request_timeout"):
        provider(fake, request_timeout=0)
    for owner in ("", "x" * 129, "team\x00a"):
        with pytest.raises(ValueError, match="owner"):
            provider(fake, owner=owner)
    with pytest.raises(TypeError):
        BoxdProvider(api_key=API_KEY, page_size=5)  # type: ignore[call-arg]
    assert fake.requests() == [], "nothing was sent"
    built = provider(fake)
    assert (built.name, built.api_url) == ("boxd", fake.url)
    assert API_KEY not in repr(built)
    await built.check_access()
    assert [(r["path"], r["status"]) for r in fake.requests("POST")] == [("/api/v1/auth/token", 200)]


async def test_a_reclaim_destroys_and_a_failed_destroy_reaches_the_ledger_without_the_credential(fake: Fake) -> None:
    fake.seed([machine(0, OWNER), machine(1, OWNER)])
    built = provider(fake)
    store = await store_with(("k0", vm_id(0)), ("k1", vm_id(1)))
    assert await reclaim_sandbox(run("k0"), provider=built, instances=store) is ReclaimOutcome.DESTROYED
    assert fake.state()["destroyed"] == [vm_id(0)]
    fake.faults(failDeleteEvery=1)
    assert await reclaim_sandbox(run("k1"), provider=built, instances=store) is ReclaimOutcome.DESTROY_FAILED
    assert fake.state()["alive"] == [vm_id(1)]
    leaks = await list_leaks(store)
    assert [leak.provider_sandbox_id for leak in leaks] == [vm_id(1)]
    assert "INTERNAL" in (leaks[0].last_error or "")
    assert API_KEY not in repr(leaks) and "Bearer" not in repr(leaks)


async def test_throttled_destroys_and_key_exchanges_wait(fake: Fake) -> None:
    fake.seed([machine(0, OWNER)])
    fake.faults(rateLimitDeletes=1)
    started = time.monotonic()
    await provider(fake).destroy(vm_id(0))
    assert time.monotonic() - started >= 1.0, "boxd's RESOURCE_EXHAUSTED carries no hint: a second"
    assert fake.state()["alive"] == []
    assert destroys_of(fake, vm_id(0)) == 2, "the throttled one, then the one that went"
    fake.faults(rateLimitExchanges=1, retryAfterSeconds=0.3)
    started = time.monotonic()
    await provider(fake).check_access()
    assert time.monotonic() - started >= 0.3
    assert [r["status"] for r in fake.requests("POST")] == [200, 429, 200]


async def test_the_destroy_deadline_cuts_the_call_and_the_machine_reaches_the_ledger(fake: Fake) -> None:
    fake.seed([machine(0, OWNER)])
    fake.faults(hangDeletes=True)
    store = await store_with(("k0", vm_id(0)))
    started = time.monotonic()
    outcome = await reclaim_sandbox(run("k0"), provider=provider(fake), instances=store, destroy_timeout=0.3)
    assert outcome is ReclaimOutcome.DESTROY_FAILED
    assert time.monotonic() - started < 5
    assert wait_abandoned(fake, 1) == 1
    assert [leak.provider_sandbox_id for leak in await list_leaks(store)] == [vm_id(0)]
    assert fake.state()["alive"] == [vm_id(0)]


@pytest.mark.parametrize("credential", ["bxd_wrong_key_value", "wrong-session-token-value"])
async def test_a_wrong_key_or_token_names_both_variables_never_the_credential(fake: Fake, credential: str) -> None:
    fake.seed([machine(0, OWNER)])
    refused = provider(fake, api_key=credential)
    for call in (refused.check_access, refused.list_sandboxes, lambda: refused.destroy(vm_id(0))):
        with pytest.raises(SandboxProviderError) as raised:
            await call()
        message = str(raised.value)
        assert "BOXD_TOKEN" in message and "BOXD_API_KEY" in message
        assert credential not in message and API_KEY not in message and TOKEN not in message
    assert fake.state()["alive"] == [vm_id(0)]
    grpc = [r for r in fake.requests() if r["method"] != "POST"]
    assert all(r["status"] == "UNAUTHENTICATED" for r in grpc)
    assert all(r["status"] == 401 for r in fake.requests("POST"))


async def test_reconcile_sweeps_our_machines_in_the_org_once_repeated_or_lagging(fake: Fake) -> None:
    ours = [vm_id(i) for i in range(6)]
    fake.seed([machine(i, OWNER) for i in range(6)])
    fake.seed([machine(20, "another-team"), machine(21), machine(22, OWNER, org="")])
    # A destroyed machine stays listed a minute as running (a server slow to flip it), and one is listed twice.
    fake.faults(repeatAcrossPages=True, deletedStayListedMs=60_000, destroyingStatus="running")
    built = provider(fake)
    store = await store_with()
    report = await reconcile(providers=[built], instances=store, orphan_grace=60)
    orphans = report.providers[0].orphans
    assert (orphans.status, orphans.listed, orphans.destroyed) == (SweepStatus.SWEPT, 6, 6)
    assert fake.state()["alive"] == sorted([vm_id(20), vm_id(21), vm_id(22)])
    assert [destroys_of(fake, sandbox_id) for sandbox_id in ours] == [1] * 6
    lists = fake.requests("ListVms")
    assert all(r["org"] == ORG and not r["allContexts"] for r in lists)
    assert all(r["labelSelector"] == [f"{OWNER_LABEL}={OWNER}"] for r in lists)
    # Still listed as running: the second pass's destroy is success, nothing fails.
    again = (await reconcile(providers=[built], instances=store, orphan_grace=60)).providers[0].orphans
    assert (again.status, again.failed) == (SweepStatus.SWEPT, 0)
    assert sorted(fake.state()["destroyed"]) == ours, "each machine destroyed once"


async def test_a_malformed_listing_makes_the_sweep_unavailable(fake: Fake) -> None:
    fake.seed([machine(i, OWNER) for i in range(4)])
    fake.faults(malformedPage=1)
    report = await reconcile(providers=[provider(fake)], instances=await store_with(), orphan_grace=60)
    orphans = report.providers[0].orphans
    assert (orphans.status, orphans.destroyed) == (SweepStatus.UNAVAILABLE, 0)
    assert "ListVms" in (orphans.error or "")
    assert len(fake.state()["alive"]) == 4
    assert fake.requests("DestroyVm") == []


async def test_a_registered_unlabelled_machine_is_found_by_get_vm_and_a_stranger_never_touched(fake: Fake) -> None:
    fake.seed([machine(1), machine(2)])
    store = await store_with(("k-reg", vm_id(1)))
    await store.delete("k-reg")
    report = await reconcile(providers=[provider(fake)], instances=store, orphan_grace=60)
    orphans = report.providers[0].orphans
    assert (orphans.status, orphans.destroyed) == (SweepStatus.SWEPT, 1)
    assert fake.state()["alive"] == [vm_id(2)]
    gets = [r["id"] for r in fake.requests("GetVm")]
    assert vm_id(1) in gets and vm_id(2) not in gets
    assert destroys_of(fake, vm_id(2)) == 0
