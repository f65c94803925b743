"""The hosted providers (Daytona, Vercel, Sprites, Runloop, Blaxel) through
the Python binding, against their fakes (tests/fakes/daytona.mjs, vercel.mjs,
sprites.mjs, runloop.mjs and blaxel.mjs, proven by the vendors' official
SDKs), one table of vendors: a reclaim
destroys for good, a failed destroy is ``destroy-failed`` and reaches the
ledger, the deadline drops the request, a wrong key names the variable, and
reconcile sweeps every page once (never what the vendor is already deleting).
The fakes run under ``node`` (``make test`` has it; without it these FAIL)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hosts import ListingOnly
from sandbox_reclaim import (
    BlaxelProvider,
    DaytonaProvider,
    InMemoryLeakLedgerStore,
    ReclaimOutcome,
    RunRecord,
    RunloopProvider,
    RunStatus,
    SandboxInstanceRecord,
    SandboxProviderError,
    SpritesProvider,
    SweepStatus,
    VercelProvider,
    list_leaks,
    reclaim_sandbox,
    reconcile,
)

FAKES = Path(__file__).resolve().parents[1] / "fakes"
OWNER_LABEL = "io.sandbox-reclaim.owner"
CREATED_MS = 1_767_225_600_000


HostedProvider = DaytonaProvider | VercelProvider | SpritesProvider | RunloopProvider | BlaxelProvider


def _is_delete(request: dict[str, Any]) -> bool:
    return bool(request["method"] == "DELETE")


@dataclass(frozen=True)
class Vendor:
    name: str
    script: str
    args: list[str]
    variable: str
    make: Callable[..., HostedProvider]
    sandbox: Callable[[str, dict[str, str]], dict[str, Any]]
    deleting: Callable[[str, dict[str, str]], dict[str, Any]] | None
    owner_filter: str | None
    """The listing's query parameter that filters by our owner label; None
    when the vendor cannot filter by label (the engine filters client-side)."""
    is_delete: Callable[[dict[str, Any]], bool] = _is_delete
    """Whether a recorded fake request is a destroy."""
    gone: Callable[[str, dict[str, str]], dict[str, Any]] | None = None
    """A sandbox the vendor still lists but counts gone (never destroyed again)."""


def _daytona(url: str, key: str, sweep_unlabelled: bool = False) -> DaytonaProvider:
    return DaytonaProvider(api_key=key, api_url=url, page_size=3, sweep_unlabelled=sweep_unlabelled)


def _vercel(url: str, key: str, sweep_unlabelled: bool = False) -> VercelProvider:
    return VercelProvider(
        api_key=key, team_id="team_t", project_id="prj_p", api_url=url, page_size=3, sweep_unlabelled=sweep_unlabelled
    )


def _sprites(url: str, key: str, sweep_unlabelled: bool = False) -> SpritesProvider:
    return SpritesProvider(api_key=key, api_url=url, page_size=3, sweep_unlabelled=sweep_unlabelled)


def _runloop(url: str, key: str, sweep_unlabelled: bool = False) -> RunloopProvider:
    return RunloopProvider(api_key=key, api_url=url, page_size=3, sweep_unlabelled=sweep_unlabelled)


def _blaxel(url: str, key: str, sweep_unlabelled: bool = False) -> BlaxelProvider:
    return BlaxelProvider(
        api_key=key, workspace="ws_w", api_url=f"{url}/v0", page_size=3, sweep_unlabelled=sweep_unlabelled
    )


def _sprite_labels(labels: dict[str, str]) -> list[str]:
    """Sprites labels are free strings: ``key=value``."""
    return [f"{key}={value}" for key, value in labels.items()]


def _runloop_shutdown(request: dict[str, Any]) -> bool:
    """Runloop never deletes: a destroy is POST /v1/devboxes/{id}/shutdown."""
    return request["method"] == "POST" and str(request["path"]).endswith("/shutdown")


VENDORS = [
    Vendor(
        "daytona",
        "daytona.mjs",
        ["--key", "dtn_key"],
        "DAYTONA_API_KEY",
        _daytona,
        lambda id, labels: {"id": id, "labels": labels, "state": "stopped", "createdAt": "2026-01-01T00:00:00Z"},
        lambda id, labels: {
            "id": id,
            "labels": labels,
            "state": "started",
            "desiredState": "destroyed",
            "createdAt": "2026-01-01T00:00:00Z",
        },
        "labels",
    ),
    Vendor(
        "vercel",
        "vercel.mjs",
        ["--token", "vcl_key", "--team", "team_t", "--project", "prj_p"],
        "VERCEL_TOKEN",
        _vercel,
        lambda name, tags: {"name": name, "tags": tags, "status": "stopped", "createdAt": CREATED_MS},
        None,
        "tags",
    ),
    Vendor(
        "sprites",
        "sprites.mjs",
        ["--key", "spr_key"],
        "SPRITES_API_KEY",
        _sprites,
        lambda name, labels: {"name": name, "labels": _sprite_labels(labels), "status": "cold", "createdAt": CREATED_MS},
        None,  # no deleting status
        None,
    ),
    Vendor(
        "runloop",
        "runloop.mjs",
        ["--key", "rl_key"],
        "RUNLOOP_API_KEY",
        _runloop,
        lambda id, metadata: {"id": id, "metadata": metadata, "status": "suspended", "createTimeMs": CREATED_MS},
        None,
        None,
        is_delete=_runloop_shutdown,
        # A shut-down devbox stays listed, `shutdown`, forever.
        gone=lambda id, metadata: {"id": id, "metadata": metadata, "status": "shutdown", "createTimeMs": CREATED_MS},
    ),
    Vendor(
        "blaxel",
        "blaxel.mjs",
        ["--key", "bl_key", "--workspace", "ws_w"],
        "BL_API_KEY",
        _blaxel,
        lambda name, labels: {"name": name, "labels": labels, "status": "DEPLOYED", "createdAt": CREATED_MS},
        lambda name, labels: {"name": name, "labels": labels, "status": "DELETING", "createdAt": CREATED_MS},
        None,
    ),
]
KEYS = {"daytona": "dtn_key", "vercel": "vcl_key", "sprites": "spr_key", "runloop": "rl_key", "blaxel": "bl_key"}


class Fake:
    def __init__(self, vendor: Vendor, url: str) -> None:
        self.vendor = vendor
        self.url = url

    def _call(self, method: str, route: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}/_fake/{route}", data=data, method=method)
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def seed(self, sandboxes: list[dict[str, Any]]) -> None:
        self._call("POST", "sandboxes", sandboxes)

    def faults(self, **faults: object) -> None:
        self._call("POST", "faults", faults)

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = self._call("GET", "state")
        return state

    def provider(self, key: str | None = None, sweep_unlabelled: bool = False) -> HostedProvider:
        return self.vendor.make(self.url, key or KEYS[self.vendor.name], sweep_unlabelled)

    def listing_queries(self) -> list[str]:
        """The query strings of the listing requests so far."""
        return [r["query"] for r in self.state()["requests"] if r["method"] == "GET" and "_fake" not in r["path"]]


@pytest.fixture(params=VENDORS, ids=lambda vendor: vendor.name)
def fake(request: pytest.FixtureRequest) -> Iterator[Fake]:
    vendor: Vendor = request.param
    command = ["node", str(FAKES / vendor.script), *vendor.args]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield Fake(vendor, json.loads(process.stdout.readline())["url"])
    finally:
        process.kill()
        process.wait()


def run(key: str) -> RunRecord:
    return RunRecord(run_id=f"run-{key}", thread_id="t1", status=RunStatus.COMPLETED, started_at=1, sandbox_key=key)


async def store_with(provider: str, *records: tuple[str, str]) -> InMemoryLeakLedgerStore:
    store = InMemoryLeakLedgerStore()
    for key, sandbox_id in records:
        record = SandboxInstanceRecord(key=key, provider=provider, provider_sandbox_id=sandbox_id, thread_id="t1", updated_at=1)
        await store.upsert(record)
    return store


def test_bad_options_are_refused_naming_the_field(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("DAYTONA_API_KEY", "VERCEL_TOKEN", "VERCEL_PROJECT_ID"):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(ValueError, match="DAYTONA_API_KEY"):
        DaytonaProvider()
    with pytest.raises(ValueError, match="VERCEL_PROJECT_ID"):
        VercelProvider(api_key="k")
    with pytest.raises(ValueError, match="VERCEL_TOKEN"):
        VercelProvider(project_id="p")
    with pytest.raises(ValueError, match="page_size"):
        DaytonaProvider(api_key="k", page_size=201)
    with pytest.raises(ValueError, match="page_size"):
        VercelProvider(api_key="k", project_id="p", page_size=51)
    # Each vendor's largest page, and its defaults, are the core's.
    assert DaytonaProvider(api_key="k", page_size=200).name == "daytona"
    with pytest.raises(ValueError) as page:
        VercelProvider(api_key="k", project_id="p", page_size=0)
    assert str(page.value) == "`page_size` must be a whole number between 1 and 50, got 0"
    assert VercelProvider(api_key="k", project_id="p").name == "vercel"
    with pytest.raises(TypeError, match="team_id"):
        VercelProvider(api_key="k", project_id="p", team_id=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="sweep_unlabelled"):
        DaytonaProvider(api_key="k", sweep_unlabelled=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="sweep_unlabelled"):
        VercelProvider(api_key="k", project_id="p", sweep_unlabelled="yes")  # type: ignore[arg-type]
    assert DaytonaProvider(api_key="k", sweep_unlabelled=True).name == "daytona"
    provider = VercelProvider(api_key="vcl_secret_value", project_id="p")
    assert (provider.name, provider.api_url) == ("vercel", "https://api.vercel.com")
    assert "secret" not in repr(provider)
    assert DaytonaProvider(api_key="k").api_url == "https://app.daytona.io/api"
    # The client-filtering vendors' largest pages: Sprites 50, Runloop 5000, Blaxel 200.
    largest: list[tuple[Callable[[int], HostedProvider], int]] = [
        (lambda size: SpritesProvider(api_key="k", page_size=size), 50),
        (lambda size: RunloopProvider(api_key="k", page_size=size), 5000),
        (lambda size: BlaxelProvider(api_key="k", workspace="w", page_size=size), 200),
    ]
    for make, most in largest:
        make(most)
        with pytest.raises(ValueError, match="page_size"):
            make(most + 1)


async def test_a_reclaim_destroys_for_good_and_a_failed_destroy_reaches_the_ledger(fake: Fake) -> None:
    fake.seed([fake.vendor.sandbox("a0", {}), fake.vendor.sandbox("a1", {})])
    provider = fake.provider()
    store = await store_with(fake.vendor.name, ("k0", "a0"), ("k1", "a1"))
    assert await reclaim_sandbox(run("k0"), provider=provider, instances=store) is ReclaimOutcome.DESTROYED
    assert fake.state()["alive"] == ["a1"]
    fake.faults(failDeleteEvery=1)
    assert await reclaim_sandbox(run("k1"), provider=provider, instances=store) is ReclaimOutcome.DESTROY_FAILED
    assert fake.state()["alive"] == ["a1"]
    leaks = await list_leaks(store)
    assert [leak.provider_sandbox_id for leak in leaks] == ["a1"]
    assert "HTTP 500" in (leaks[0].last_error or "")


async def test_the_destroy_deadline_drops_the_request(fake: Fake) -> None:
    fake.seed([fake.vendor.sandbox("a0", {})])
    fake.faults(hangDeletes=True)
    store = await store_with(fake.vendor.name, ("k0", "a0"))
    outcome = await reclaim_sandbox(run("k0"), provider=fake.provider(), instances=store, destroy_timeout=0.2)
    assert outcome is ReclaimOutcome.DESTROY_FAILED
    for _ in range(100):
        if fake.state()["abandoned"] == 1:
            break
        await asyncio.sleep(0.01)
    assert fake.state()["abandoned"] == 1


async def test_a_wrong_key_names_the_variable_never_the_key(fake: Fake) -> None:
    provider = fake.provider("wrong_secret_value")
    for call in (provider.check_access, provider.list_sandboxes, lambda: provider.destroy("a0")):
        with pytest.raises(SandboxProviderError) as raised:
            await call()
        assert fake.vendor.variable in str(raised.value)
        assert "wrong_secret_value" not in str(raised.value)


async def test_reconcile_sweeps_every_page_once_and_spares_the_rest(fake: Fake) -> None:
    ours = [fake.vendor.sandbox(f"ours{i}", {OWNER_LABEL: "sandbox-reclaim"}) for i in range(7)]
    fake.seed([*ours, fake.vendor.sandbox("theirs", {OWNER_LABEL: "other"}), fake.vendor.sandbox("bare", {})])
    if fake.vendor.deleting is not None:
        fake.seed([fake.vendor.deleting("going", {OWNER_LABEL: "sandbox-reclaim"})])
    if fake.vendor.gone is not None:
        fake.seed([fake.vendor.gone("gone", {OWNER_LABEL: "sandbox-reclaim"})])
    fake.faults(repeatAcrossPages=True)
    store = await store_with(fake.vendor.name)
    report = await reconcile(providers=[fake.provider()], instances=store, orphan_grace=60)
    orphans = report.providers[0].orphans
    assert orphans.status is SweepStatus.SWEPT
    assert orphans.destroyed == 7
    assert orphans.deleting == (1 if fake.vendor.deleting else 0)
    expected = sorted(["bare", "theirs", *(["going"] if fake.vendor.deleting else []), *(["gone"] if fake.vendor.gone else [])])
    assert fake.state()["alive"] == expected
    deletes = [r for r in fake.state()["requests"] if fake.vendor.is_delete(r)]
    assert len(deletes) == 7
    assert not any(f"/{spared}" in r["path"] for r in deletes for spared in ("going", "gone"))


async def test_sweep_unlabelled_takes_an_unlabelled_sandbox_only_when_the_registry_names_it(fake: Fake) -> None:
    ours = {OWNER_LABEL: "sandbox-reclaim"}
    fake.seed(
        [
            fake.vendor.sandbox("ours", ours),
            fake.vendor.sandbox("reg", {}),
            fake.vendor.sandbox("bare", {}),
            fake.vendor.sandbox("theirs", {OWNER_LABEL: "other"}),
        ]
    )
    name = fake.vendor.name
    store = InMemoryLeakLedgerStore()
    for key, sandbox_id in (("k-reg", "reg"), ("k-theirs", "theirs")):
        await store.upsert(SandboxInstanceRecord(key=key, provider=name, provider_sandbox_id=sandbox_id, thread_id="t1", updated_at=1))
        await store.delete(key)
    assert await store.registered_sandboxes(name, 0) == ["reg", "theirs"]

    # Without sweep_unlabelled the listing is still filtered by owner (the
    # listing alone here: the lookup by id is test_a_registered_sandbox_is_looked_up_by_id's).
    filtered = fake.provider()
    assert [(sandbox.id, sandbox.owner) for sandbox in await filtered.list_sandboxes()] == [("ours", "sandbox-reclaim")]
    report = await reconcile(providers=[ListingOnly(filtered)], instances=store, orphan_grace=60)
    assert (report.providers[0].orphans.listed, report.providers[0].orphans.destroyed) == (1, 1)
    assert fake.state()["alive"] == ["bare", "reg", "theirs"], "the registered unlabelled one is not even listed"
    queries = fake.listing_queries()
    assert queries
    owner_filter = fake.vendor.owner_filter
    if owner_filter is not None:  # None: the vendor cannot filter by label; the engine keeps ours client-side
        assert all(f"{owner_filter}=" in query for query in queries)

    sweeping = fake.provider(sweep_unlabelled=True)
    listed = {sandbox.id: sandbox.owner for sandbox in await sweeping.list_sandboxes()}
    assert listed == {"reg": "", "bare": "", "theirs": "other"}, "unlabelled ones are listed with owner ''"
    report = await reconcile(providers=[sweeping], instances=store, orphan_grace=60)
    orphans = report.providers[0].orphans
    assert orphans.status is SweepStatus.SWEPT
    assert (orphans.listed, orphans.foreign, orphans.found, orphans.destroyed) == (3, 2, 1, 1)
    assert fake.state()["alive"] == ["bare", "theirs"], "only the registered unlabelled one is destroyed"
    if owner_filter is not None:
        assert not any(f"{owner_filter}=" in query for query in fake.listing_queries()[len(queries) :])


async def test_a_registered_sandbox_is_looked_up_by_id_without_listing_every_sandbox(fake: Fake) -> None:
    """The default: what the registry names and the listing did not show is
    read by id (the vendor's get); the unlabelled one a deleted record named
    is destroyed; a stranger, another owner's and a gone one stay."""
    fake.seed([fake.vendor.sandbox("reg", {}), fake.vendor.sandbox("bare", {}), fake.vendor.sandbox("theirs", {OWNER_LABEL: "other"})])
    name = fake.vendor.name
    store = InMemoryLeakLedgerStore()
    for key, sandbox_id in (("k-reg", "reg"), ("k-theirs", "theirs"), ("k-gone", "gone")):
        await store.upsert(SandboxInstanceRecord(key=key, provider=name, provider_sandbox_id=sandbox_id, thread_id="t1", updated_at=1))
        await store.delete(key)
    provider = fake.provider()
    assert provider.lookup is not None
    assert fake.provider(sweep_unlabelled=True).lookup is None, "the listing takes every sandbox"
    report = await reconcile(providers=[provider], instances=store, orphan_grace=60)
    orphans = report.providers[0].orphans
    assert orphans.status is SweepStatus.SWEPT
    assert (orphans.found, orphans.destroyed, orphans.foreign) == (1, 1, 1)
    assert fake.state()["alive"] == ["bare", "theirs"]
    found = await provider.lookup(["bare", "gone"])
    assert [sandbox.id for sandbox in found] == ["bare"]
    with pytest.raises(TypeError, match="ids"):
        await provider.lookup("bare")
