"""``KubernetesProvider`` through the Python binding, against the Kubernetes
API fake (tests/fakes/kubernetes.mjs, run by ``node``, proven by the
official ``kubernetes`` client in tests/python/test_kubernetes_fake.py):
kubeconfigs with a token and a client certificate, options checked before
any request, and the fault set every hosted vendor meets: a failed delete
reaches the ledger without the token, throttling waits, a hanging call is cut
by its deadline, an expired continue restarts once, repeated and deleting
objects are handled once, a malformed page makes the sweep unavailable,
unlabelled strangers are never touched and registered ones are found by
name."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]
from cli_world import console_script
from test_kubernetes_fake import Fake

from sandbox_reclaim import (
    InMemoryLeakLedgerStore,
    KubernetesProvider,
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

OWNER_LABEL = "io.sandbox-reclaim.owner"


@pytest.fixture
def fake() -> Iterator[Fake]:
    started = Fake()
    try:
        yield started
    finally:
        started.close()


def claim(name: str, owner: str | None = None, **more: Any) -> dict[str, Any]:
    labels = {OWNER_LABEL: owner} if owner else {}
    return {"kind": "SandboxClaim", "namespace": "default", "name": name, "labels": labels, **more}


def provider(fake: Fake, **options: Any) -> KubernetesProvider:
    given: dict[str, Any] = {"kubeconfig": fake.kubeconfig_token, "request_timeout": 10.0}
    return KubernetesProvider(**{**given, **options})


def live_claims(fake: Fake) -> list[str]:
    state = fake.state()
    prefix = "SandboxClaim/"
    live = [label for label in state["alive"] if label.startswith(prefix) and label not in state["deleting"]]
    return [label[len(prefix) :].replace("/", "_", 1) for label in live]


def deletes_of(fake: Fake, name: str) -> int:
    return len([r for r in fake.requests() if r["method"] == "DELETE" and r["path"].endswith(f"/{name}")])


def run(key: str) -> RunRecord:
    return RunRecord(run_id=f"run-{key}", thread_id="t1", status=RunStatus.COMPLETED, started_at=1, sandbox_key=key)


async def store_with(*records: tuple[str, str]) -> InMemoryLeakLedgerStore:
    store = InMemoryLeakLedgerStore()
    for key, sandbox_id in records:
        record = SandboxInstanceRecord(
            key=key, provider="kubernetes", provider_sandbox_id=sandbox_id, thread_id="t1", updated_at=1
        )
        await store.upsert(record)
    return store


def test_bad_options_name_their_field_before_any_request(fake: Fake) -> None:
    for options, field in [
        ({"kind": "Deployment"}, "kind"),
        ({"namespace": "Team A"}, "namespace"),
        ({"owner": "team/a"}, "owner"),
        ({"context": "nowhere"}, "context"),
        ({"kubeconfig": "/nonexistent/kubeconfig"}, "kubeconfig"),
    ]:
        with pytest.raises(ValueError, match=field):
            provider(fake, **options)
    with pytest.raises(TypeError, match="namespace"):
        provider(fake, namespace=5)
    with pytest.raises(TypeError):
        KubernetesProvider(api_key="x")  # type: ignore[call-arg]
    assert fake.requests() == []
    built = provider(fake)
    assert (built.name, built.api_url) == ("kubernetes", fake.url)


async def test_token_and_certificate_kubeconfigs_list_our_claims_in_one_namespace_or_all(fake: Fake) -> None:
    fake.seed([claim(f"claim-{i}", "sandbox-reclaim") for i in range(5)] + [claim("theirs", "other"), claim("bare")])
    fake.seed([{**claim("far", "sandbox-reclaim"), "namespace": "agents"}])
    for kubeconfig in (fake.kubeconfig_token, fake.kubeconfig_cert):
        listed = await provider(fake, kubeconfig=kubeconfig, page_size=2).list_sandboxes()
        assert [sandbox.id for sandbox in listed] == [f"default_claim-{i}" for i in range(5)]
        assert all(sandbox.owner == "sandbox-reclaim" and not sandbox.deleting for sandbox in listed)
    every = await provider(fake, namespace="*").list_sandboxes()
    assert "agents_far" in [sandbox.id for sandbox in every]


async def test_a_claim_created_with_owner_labels_is_listed_as_ours_with_its_key(fake: Fake) -> None:
    # What an app merges into the claim's metadata at create: the key (no
    # label value) goes in an annotation, and the listing reads it from there.
    marks = owner_labels("team-a", "thread:1/sandbox", "kubernetes")
    fake.seed([{**claim("made"), **marks}, claim("other", "team-b")])
    listed = await provider(fake, owner="team-a").list_sandboxes()
    assert [(sandbox.id, sandbox.owner, sandbox.key) for sandbox in listed] == [
        ("default_made", "team-a", "thread:1/sandbox")
    ]


async def test_a_wrong_token_is_refused_never_printed(fake: Fake, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(Path(fake.kubeconfig_token).read_text().replace(fake.token, "wrong-py-token-value"))
    refused = provider(fake, kubeconfig=str(wrong))
    for call in (refused.check_access, refused.list_sandboxes, lambda: refused.destroy("default_x")):
        with pytest.raises(SandboxProviderError) as raised:
            await call()
        message = str(raised.value)
        assert "401" in message and "wrong-py-token-value" not in message and fake.token not in message


async def test_a_reclaim_deletes_in_the_foreground_and_a_failed_delete_reaches_the_ledger(fake: Fake) -> None:
    fake.seed([claim("claim-0", "sandbox-reclaim"), claim("claim-1", "sandbox-reclaim")])
    built = provider(fake)
    store = await store_with(("k0", "default_claim-0"), ("k1", "default_claim-1"))
    assert await reclaim_sandbox(run("k0"), provider=built, instances=store) is ReclaimOutcome.DESTROYED
    assert "SandboxClaim/default/claim-0" in fake.state()["deleting"]
    fake.faults(failDeleteEvery=1)
    assert await reclaim_sandbox(run("k1"), provider=built, instances=store) is ReclaimOutcome.DESTROY_FAILED
    leaks = await list_leaks(store)
    assert [leak.provider_sandbox_id for leak in leaks] == ["default_claim-1"]
    assert "500" in (leaks[0].last_error or "") and fake.token not in repr(leaks)


async def test_throttling_waits_and_a_hanging_delete_is_cut(fake: Fake) -> None:
    fake.seed([claim("claim-0", "sandbox-reclaim"), claim("claim-1", "sandbox-reclaim")])
    fake.faults(rateLimitDeletes=1, retryAfterSeconds=1)
    started = time.monotonic()
    await provider(fake).destroy("default_claim-0")
    assert time.monotonic() - started >= 1
    fake.faults(hangDeletes=True)
    store = await store_with(("k1", "default_claim-1"))
    outcome = await reclaim_sandbox(run("k1"), provider=provider(fake), instances=store, destroy_timeout=0.2)
    assert outcome is ReclaimOutcome.DESTROY_FAILED
    for _ in range(100):
        if fake.state()["abandoned"] == 1:
            break
        await asyncio.sleep(0.01)
    assert fake.state()["abandoned"] == 1


async def test_reconcile_sweeps_repeats_once_never_a_deleting_claim_and_restarts_an_expired_continue(fake: Fake) -> None:
    fake.seed([claim(f"claim-{i}", "sandbox-reclaim") for i in range(6)])
    fake.seed([claim("bare"), claim("stuck", "sandbox-reclaim", deleting=True)])
    fake.faults(repeatAcrossPages=True, expireContinue=1)
    report = await reconcile(providers=[provider(fake, page_size=3)], instances=await store_with(), orphan_grace=60)
    orphans = report.providers[0].orphans
    assert (orphans.status, orphans.destroyed) == (SweepStatus.SWEPT, 6)
    assert [deletes_of(fake, f"claim-{i}") for i in range(6)] == [1] * 6
    assert deletes_of(fake, "stuck") == 0
    assert live_claims(fake) == ["default_bare"]


@pytest.mark.parametrize("faults", [{"malformedPage": 2}, {"expireContinue": 2}])
async def test_a_malformed_page_or_continues_that_keep_expiring_make_the_sweep_unavailable(
    fake: Fake, faults: dict[str, int]
) -> None:
    fake.seed([claim(f"claim-{i}", "sandbox-reclaim") for i in range(5)])
    fake.faults(**faults)
    report = await reconcile(providers=[provider(fake, page_size=2)], instances=await store_with(), orphan_grace=60)
    orphans = report.providers[0].orphans
    assert (orphans.status, orphans.destroyed) == (SweepStatus.UNAVAILABLE, 0)
    assert len(live_claims(fake)) == 5


async def test_a_registered_unlabelled_claim_is_found_by_name_and_a_stranger_never_touched(fake: Fake) -> None:
    fake.seed([claim("registered"), claim("stranger")])
    store = await store_with(("k-reg", "default_registered"))
    await store.delete("k-reg")
    report = await reconcile(providers=[provider(fake)], instances=store, orphan_grace=60)
    orphans = report.providers[0].orphans
    assert (orphans.status, orphans.destroyed) == (SweepStatus.SWEPT, 1)
    assert live_claims(fake) == ["default_stranger"]
    gets = [r["path"] for r in fake.requests() if r["method"] == "GET" and "/sandboxclaims/" in r["path"]]
    assert any(path.endswith("/registered") for path in gets) and not any(path.endswith("/stranger") for path in gets)


def test_the_contrib_manifests_grant_least_privilege_and_their_pass_runs(fake: Fake, tmp_path: Path) -> None:
    """contrib/kubernetes: the Role allows list, get and delete on claims
    and nothing else; the CronJob runs as its service account, and its
    arguments are a pass the command takes (run dry against the fake)."""
    contrib = Path(__file__).resolve().parents[2] / "contrib" / "kubernetes"
    rbac = list(yaml.safe_load_all((contrib / "rbac.yaml").read_text()))
    kinds = {document["kind"]: document for document in rbac}
    assert set(kinds) == {"ServiceAccount", "Role", "RoleBinding"}
    rules = kinds["Role"]["rules"]
    assert rules == [
        {"apiGroups": ["extensions.agents.x-k8s.io"], "resources": ["sandboxclaims"], "verbs": ["list", "get", "delete"]}
    ]
    assert kinds["RoleBinding"]["subjects"][0]["name"] == kinds["ServiceAccount"]["metadata"]["name"]
    cronjob = yaml.safe_load((contrib / "cronjob.yaml").read_text())
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == kinds["ServiceAccount"]["metadata"]["name"]
    args = pod["containers"][0]["args"]
    assert "--kubernetes" in args
    owner = args[args.index("--owner") + 1]
    fake.seed([claim("old-claim", owner)])
    env = {**os.environ, "KUBECONFIG": fake.kubeconfig_token, "SANDBOX_RECLAIM_STORE": f"sqlite:{tmp_path / 's.db'}"}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    ran = subprocess.run([str(console_script()), *args, "--dry-run"], env=env, capture_output=True, text=True, timeout=60)
    # Exit 1: the plan leaves an orphan still leaking (a dry run destroys nothing).
    assert ran.returncode == 1, ran.stderr
    document = json.loads(ran.stdout)
    assert document["report"]["providers"][0]["name"] == "kubernetes"
    assert document["report"]["providers"][0]["orphans"]["listed"] == 1
    assert '"providerSandboxId":"default_old-claim","result":"planned"' in ran.stdout
    assert live_claims(fake) == ["default_old-claim"], "a dry run deletes nothing"
