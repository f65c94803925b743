"""E2bProvider through the Python binding, against the E2B fake
(tests/fakes/e2b.mjs, proven by E2B's official SDK in
tests/node/e2b-fake.test.mjs): a reclaim kills for good, a failed kill is
``destroy-failed`` and reaches the ledger, the deadline drops a hanging
request, a wrong key names E2B_API_KEY, and reconcile sweeps every page once.
The fake runs under ``node`` (``make test`` has it; without it these FAIL)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_world import console_script
from cli_world import run as run_command

from hosts import ListingOnly
from sandbox_reclaim import (
    DEFAULT_OWNER,
    E2bProvider,
    InMemoryLeakLedgerStore,
    ReclaimOutcome,
    RunRecord,
    RunStatus,
    SandboxInstanceRecord,
    SandboxProviderError,
    SweepStatus,
    list_leaks,
    owner_labels,
    reclaim_sandbox,
    reconcile,
)

FAKE = Path(__file__).resolve().parents[1] / "fakes" / "e2b.mjs"
KEY = "e2b_test_key"
OWNER_LABEL = "io.sandbox-reclaim.owner"


class Fake:
    def __init__(self, url: str) -> None:
        self.url = url

    def _call(self, method: str, route: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}/_fake/{route}", data=data, method=method)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def seed(self, prefix: str, count: int, metadata: dict[str, str]) -> None:
        sandboxes = [
            {"sandboxID": f"{prefix}{index}", "startedAt": "2026-01-01T00:00:00Z", "metadata": metadata}
            for index in range(count)
        ]
        self._call("POST", "sandboxes", sandboxes)

    def faults(self, **faults: object) -> None:
        self._call("POST", "faults", faults)

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = self._call("GET", "state")
        return state

    def provider(self, **options: Any) -> E2bProvider:
        return E2bProvider(api_key=options.pop("api_key", KEY), api_url=self.url, **options)

    def listing_queries(self) -> list[str]:
        """The query strings of the listing requests so far."""
        return [r["query"] for r in self.state()["requests"] if r["method"] == "GET" and r["path"] == "/v2/sandboxes"]


@pytest.fixture
def fake() -> Iterator[Fake]:
    process = subprocess.Popen(["node", str(FAKE)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        started = json.loads(process.stdout.readline())
        yield Fake(started["url"])
    finally:
        process.kill()
        process.wait()


def run(key: str) -> RunRecord:
    return RunRecord(run_id=f"run-{key}", thread_id="t1", status=RunStatus.COMPLETED, started_at=1, sandbox_key=key)


async def store_with(*records: tuple[str, str]) -> InMemoryLeakLedgerStore:
    store = InMemoryLeakLedgerStore()
    for key, sandbox_id in records:
        await store.upsert(
            SandboxInstanceRecord(key=key, provider="e2b", provider_sandbox_id=sandbox_id, thread_id="t1", updated_at=1)
        )
    return store


def test_bad_options_are_refused_naming_the_field_and_the_key_never_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("E2B_API_KEY", raising=False)
    with pytest.raises(ValueError, match="E2B_API_KEY"):
        E2bProvider()
    with pytest.raises(TypeError, match="api_key"):
        E2bProvider(api_key=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="api_url"):
        E2bProvider(api_key="k", api_url="ftp://x")
    with pytest.raises(ValueError, match="page_size"):
        E2bProvider(api_key="k", page_size=101)
    with pytest.raises(ValueError, match="request_timeout"):
        E2bProvider(api_key="k", request_timeout=0)
    with pytest.raises(ValueError, match="name"):
        E2bProvider(api_key="k", name="")
    with pytest.raises(TypeError, match="sweep_unlabelled"):
        E2bProvider(api_key="k", sweep_unlabelled=None)  # type: ignore[arg-type]
    # The core's ranges and texts: E2B's largest page; a request timeout of at most a day.
    with pytest.raises(ValueError) as page:
        E2bProvider(api_key="k", page_size=101)
    assert str(page.value) == "`page_size` must be a whole number between 1 and 100, got 101"
    with pytest.raises(TypeError) as flag:
        E2bProvider(api_key="k", page_size=True)
    assert str(flag.value) == "`page_size` must be an int, got bool"
    with pytest.raises(ValueError, match="request_timeout"):
        E2bProvider(api_key="k", request_timeout=86_401)
    with pytest.raises(TypeError) as name:
        E2bProvider(api_key="k", name=None)  # type: ignore[arg-type]
    assert str(name.value) == "`name` must be a str, got NoneType"
    with pytest.raises(TypeError, match="lone surrogate"):
        E2bProvider(api_key="k\ud800")
    defaults = E2bProvider(api_key="k", api_url="http://127.0.0.1:9")
    assert (defaults.name, defaults.owner) == ("e2b", DEFAULT_OWNER)
    with pytest.raises(TypeError, match="sweep_unlabelled"):
        E2bProvider(api_key="k", sweep_unlabelled="false")  # type: ignore[arg-type]
    monkeypatch.setenv("E2B_API_KEY", "e2b_from_env_secret")
    monkeypatch.setenv("E2B_DOMAIN", "example.test")
    monkeypatch.delenv("E2B_API_URL", raising=False)
    provider = E2bProvider(owner="team-a")
    assert (provider.name, provider.owner, provider.api_url) == ("e2b", "team-a", "https://api.example.test")
    assert "secret" not in repr(provider)
    assert owner_labels("team-a", "t1:sandbox") == {OWNER_LABEL: "team-a", "io.sandbox-reclaim.key": "t1:sandbox"}
    with pytest.raises(ValueError, match="key"):
        owner_labels("team-a", "")


async def test_a_reclaim_kills_for_good_and_a_failed_kill_reaches_the_ledger(fake: Fake) -> None:
    fake.seed("sbx", 2, {OWNER_LABEL: "sandbox-reclaim"})
    provider = fake.provider()
    store = await store_with(("k0", "sbx0"), ("k1", "sbx1"))
    assert await reclaim_sandbox(run("k0"), provider=provider, instances=store) is ReclaimOutcome.DESTROYED
    assert fake.state()["alive"] == ["sbx1"]
    fake.faults(failDeleteEvery=1)
    assert await reclaim_sandbox(run("k1"), provider=provider, instances=store) is ReclaimOutcome.DESTROY_FAILED
    assert fake.state()["alive"] == ["sbx1"]
    leaks = await list_leaks(store)
    assert [leak.provider_sandbox_id for leak in leaks] == ["sbx1"]
    assert "HTTP 500" in (leaks[0].last_error or "")


async def test_the_destroy_deadline_drops_a_hanging_request(fake: Fake) -> None:
    fake.seed("sbx", 1, {})
    fake.faults(hangDeletes=True)
    store = await store_with(("k0", "sbx0"))
    started = time.monotonic()
    outcome = await reclaim_sandbox(run("k0"), provider=fake.provider(), instances=store, destroy_timeout=0.2)
    assert outcome is ReclaimOutcome.DESTROY_FAILED
    assert time.monotonic() - started < 5
    for _ in range(100):
        if fake.state()["abandoned"] == 1:
            break
        await asyncio.sleep(0.01)
    assert fake.state()["abandoned"] == 1, "the HTTP request itself was cancelled"


async def test_a_wrong_key_names_the_variable_never_the_key(fake: Fake) -> None:
    provider = fake.provider(api_key="e2b_wrong_secret")
    for call in (provider.check_access, provider.list_sandboxes, lambda: provider.destroy("sbx0")):
        with pytest.raises(SandboxProviderError) as raised:
            await call()
        assert "E2B_API_KEY" in str(raised.value) and "e2b_wrong_secret" not in str(raised.value)


async def test_reconcile_sweeps_every_page_once_and_a_malformed_page_sweeps_nothing(fake: Fake) -> None:
    fake.seed("ours", 9, {OWNER_LABEL: "sandbox-reclaim"})
    fake.seed("theirs", 2, {OWNER_LABEL: "someone-else"})
    fake.seed("bare", 2, {})
    fake.faults(repeatAcrossPages=True, malformedPage=2)
    provider = fake.provider(page_size=4)
    store = await store_with()
    refused = await reconcile(providers=[provider], instances=store, orphan_grace=60)
    assert refused.providers[0].orphans.status is SweepStatus.UNAVAILABLE
    assert refused.still_leaking
    assert len(fake.state()["alive"]) == 13
    fake.faults(malformedPage=0)
    report = await reconcile(providers=[provider], instances=store, orphan_grace=60)
    orphans = report.providers[0].orphans
    assert orphans.status is SweepStatus.SWEPT
    assert (orphans.listed, orphans.found, orphans.destroyed) == (9, 9, 9)
    assert fake.state()["alive"] == ["bare0", "bare1", "theirs0", "theirs1"]
    assert len([r for r in fake.state()["requests"] if r["method"] == "DELETE"]) == 9


async def test_sweep_unlabelled_takes_an_unlabelled_sandbox_only_when_the_registry_names_it(fake: Fake) -> None:
    fake.seed("ours", 1, {OWNER_LABEL: "sandbox-reclaim"})
    fake.seed("reg", 1, {})
    fake.seed("bare", 1, {})
    fake.seed("theirs", 1, {OWNER_LABEL: "someone-else"})
    store = InMemoryLeakLedgerStore()
    for key, sandbox_id in (("k-reg", "reg0"), ("k-theirs", "theirs0")):
        await store.upsert(SandboxInstanceRecord(key=key, provider="e2b", provider_sandbox_id=sandbox_id, thread_id="t1", updated_at=1))
        await store.delete(key)
    assert await store.registered_sandboxes("e2b", 0) == ["reg0", "theirs0"]

    # Without sweep_unlabelled the listing is still filtered by owner (the
    # listing alone here: the lookup by id is test_hosted.py's and hosted_lookup.rs's).
    filtered = fake.provider()
    assert [(sandbox.id, sandbox.owner) for sandbox in await filtered.list_sandboxes()] == [("ours0", "sandbox-reclaim")]
    report = await reconcile(providers=[ListingOnly(filtered)], instances=store, orphan_grace=60)
    assert (report.providers[0].orphans.listed, report.providers[0].orphans.destroyed) == (1, 1)
    assert fake.state()["alive"] == ["bare0", "reg0", "theirs0"], "the registered unlabelled one is not even listed"
    queries = fake.listing_queries()
    assert queries and all("metadata=" in query for query in queries)

    sweeping = fake.provider(sweep_unlabelled=True)
    listed = {sandbox.id: sandbox.owner for sandbox in await sweeping.list_sandboxes()}
    assert listed == {"reg0": "", "bare0": "", "theirs0": "someone-else"}, "unlabelled ones are listed with owner ''"
    report = await reconcile(providers=[sweeping], instances=store, orphan_grace=60)
    orphans = report.providers[0].orphans
    assert orphans.status is SweepStatus.SWEPT
    assert (orphans.listed, orphans.foreign, orphans.found, orphans.destroyed) == (3, 2, 1, 1)
    assert fake.state()["alive"] == ["bare0", "theirs0"], "only the registered unlabelled one is destroyed"
    assert not any("metadata=" in query for query in fake.listing_queries()[len(queries) :])


def test_the_hosted_command_sweeps_e2b_beside_the_modules_providers_and_the_key_never_crosses(
    fake: Fake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.seed("old", 1, {OWNER_LABEL: "sandbox-reclaim"})
    (tmp_path / "no_providers.py").write_text("providers = []\n", encoding="utf-8")
    (tmp_path / "named_e2b.py").write_text(
        "class E2bNamed:\n    name = 'e2b'\n\n    async def destroy(self, sandbox_id):\n        pass\n\nproviders = [E2bNamed()]\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("E2B_API_URL", fake.url)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    args = ["--store", f"sqlite:{tmp_path / 'store.db'}", "--e2b", "reconcile", "--json"]

    monkeypatch.setenv("E2B_API_KEY", "e2b_wrong_py")
    refused = run_command([str(console_script())], [*args, "--providers", "no_providers:providers"], cwd=tmp_path)
    assert refused.code == 3, refused
    assert "E2B_API_KEY" in refused.stdout and "e2b_wrong_py" not in refused.stdout + refused.stderr

    monkeypatch.setenv("E2B_API_KEY", KEY)
    ran = run_command([str(console_script())], [*args, "--providers", "no_providers:providers"], cwd=tmp_path)
    assert ran.code == 0, ran
    report = ran.json()["report"]
    assert [provider["name"] for provider in report["providers"]] == ["e2b"]
    assert report["providers"][0]["orphans"]["destroyed"] == 1
    assert fake.state()["alive"] == []
    assert KEY not in ran.stdout + ran.stderr

    clashed = run_command([str(console_script())], [*args, "--providers", "named_e2b:providers"], cwd=tmp_path)
    assert clashed.code == 2, clashed
    assert "--e2b" in clashed.stdout + clashed.stderr


async def test_listing_ceilings_are_options_past_which_the_sweep_fails_closed(fake: Fake) -> None:
    fake.seed("ours", 5, {OWNER_LABEL: "sandbox-reclaim"})
    store = await store_with()
    for options, ceiling in (
        ({"page_size": 2, "max_listing_pages": 2}, "ceiling of 2 pages per listing"),
        ({"page_size": 2, "max_listing_items": 3}, "ceiling of 3 sandboxes per listing"),
    ):
        report = await reconcile(providers=[fake.provider(**options)], instances=store, orphan_grace=60)
        orphans = report.providers[0].orphans
        assert orphans.status is SweepStatus.UNAVAILABLE
        assert ceiling in (orphans.error or "")
        assert len(fake.state()["alive"]) == 5, "nothing swept"
    provider = fake.provider(page_size=2, max_listing_pages=3, max_listing_items=5)
    report = await reconcile(providers=[provider], instances=store, orphan_grace=60)
    assert report.providers[0].orphans.destroyed == 5, "at the ceilings, every page is read and swept"
    with pytest.raises(ValueError, match="max_listing_pages"):
        fake.provider(max_listing_pages=0)
    with pytest.raises(TypeError, match="max_listing_items"):
        fake.provider(max_listing_items="many")
