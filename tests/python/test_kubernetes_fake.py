"""The Kubernetes fake (tests/fakes/kubernetes.mjs) driven by the official
Python client, PyPI ``kubernetes`` (pinned in scripts/test-python.sh), as
tests/node/kubernetes-fake.test.mjs drives it with ``@kubernetes/client-node``:
loaded from the kubeconfigs the fake writes (bearer token, client
certificate, exec plugin), every page of a labelled listing (``limit`` +
``_continue``) in a namespace and across them, a get, a foreground delete
and what follows, not found, an expired continue, refusals and the faults,
each read as the client reads a real cluster's. The client validates every
answer against its (pydantic) models, so a typed listing is a schema check.

Needs only pytest, ``kubernetes``, ``node`` and ``openssl`` (never
``sandbox_reclaim``); a missing one FAILS these tests under CI, never skips
them (:func:`services.needs`)."""

from __future__ import annotations

import json
import shutil
import ssl
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from fake_process import FakeProcess, need_package
from services import needs

if TYPE_CHECKING:
    from kubernetes.client import ApiClient, V1DeleteOptions

KUBERNETES_VERSION = "37.0.3"
FAKE = Path(__file__).resolve().parents[1] / "fakes" / "kubernetes.mjs"
OWNER = "sandbox-reclaim.dev/owner"


@dataclass(frozen=True)
class Kind:
    group: str
    version: str
    plural: str


SANDBOX = Kind("agents.x-k8s.io", "v1beta1", "sandboxes")
CLAIM = Kind("extensions.agents.x-k8s.io", "v1beta1", "sandboxclaims")
CLAIM_UID_LABEL = "agents.x-k8s.io/claim-uid"
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
T0_MS = int(T0.timestamp() * 1000)


@pytest.fixture(autouse=True)
def _tools() -> None:
    need_package(
        "kubernetes",
        KUBERNETES_VERSION,
        f"the Kubernetes fake is proven with the official client (pip install kubernetes=={KUBERNETES_VERSION})",
    )
    needs("node", shutil.which("node") is not None, "the Kubernetes fake runs in node")
    needs("openssl", shutil.which("openssl") is not None, "the Kubernetes fake makes its certificates with it")


class Fake(FakeProcess):
    """The Kubernetes fake in a ``node`` subprocess, serving until its stdin
    closes; its control routes are HTTPS under the CA it made."""

    def __init__(self) -> None:
        super().__init__(["node", str(FAKE)])
        self.token: str = self.started["token"]
        self.kubeconfig_token: str = self.started["kubeconfigToken"]
        self.kubeconfig_cert: str = self.started["kubeconfigCert"]
        self.kubeconfig_exec: str = self.started["kubeconfigExec"]
        self.kubeconfig_foreign: str = self.started["kubeconfigForeign"]
        self.tls = ssl.create_default_context(cafile=self.started["caFile"])

    def requests(self) -> list[dict[str, Any]]:
        requests: list[dict[str, Any]] = self.state()["requests"]
        return requests


@pytest.fixture
def fake() -> Iterator[Fake]:
    fake = Fake()
    try:
        yield fake
    finally:
        fake.close()


def api_client(kubeconfig: str, retries: bool | None = None) -> ApiClient:
    """An ``ApiClient`` configured from ``kubeconfig`` alone (not the
    process-wide default); ``retries=False`` turns urllib3's retries off."""
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)  # type: ignore[no-untyped-call]
    configuration.retries = retries
    return client.ApiClient(configuration)


class Objects:
    """``CustomObjectsApi`` for one kind; its answers are plain dicts."""

    def __init__(self, api: ApiClient, kind: Kind) -> None:
        from kubernetes import client

        self.api = client.CustomObjectsApi(api)
        self.kind = kind

    def list(
        self, namespace: str | None = None, *, label_selector: str | None = None, limit: int | None = None, token: str | None = None
    ) -> dict[str, Any]:
        k = self.kind
        if namespace is None:
            answer = self.api.list_cluster_custom_object(
                k.group, k.version, k.plural, label_selector=label_selector, limit=limit, _continue=token
            )
        else:
            answer = self.api.list_namespaced_custom_object(
                k.group, k.version, namespace, k.plural, label_selector=label_selector, limit=limit, _continue=token
            )
        return cast(dict[str, Any], answer)

    def get(self, namespace: str, name: str) -> dict[str, Any]:
        k = self.kind
        return cast(dict[str, Any], self.api.get_namespaced_custom_object(k.group, k.version, namespace, k.plural, name))

    def delete(
        self, namespace: str, name: str, *, propagation_policy: str | None = None, body: V1DeleteOptions | None = None
    ) -> dict[str, Any]:
        k = self.kind
        answer = self.api.delete_namespaced_custom_object(
            k.group, k.version, namespace, k.plural, name, propagation_policy=propagation_policy, body=body
        )
        return cast(dict[str, Any], answer)


def name(prefix: str, i: int) -> str:
    return f"{prefix}-{i:03d}"


def seed_claims(fake: Fake, count: int, namespace: str = "default") -> None:
    """``count`` claims, the odd ones ours; each brings its Sandbox and Pod."""
    fake.seed(
        [
            {
                "kind": "SandboxClaim",
                "namespace": namespace,
                "name": name("claim", i),
                "labels": {OWNER: "ci", "run": f"r{i}"} if i % 2 else {OWNER: "someone-else"},
                "creationTimestamp": T0_MS + i * 1000,
            }
            for i in range(count)
        ]
    )


def every_page(list_page: Callable[[str | None], dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """Every item of a custom-object listing, page by page."""
    seen: list[dict[str, Any]] = []
    token: str | None = None
    pages = 0
    while True:
        page = list_page(token)
        pages += 1
        seen.extend(page["items"])
        token = page["metadata"].get("continue")
        if not token:
            return seen, pages


def status_of(error: Any) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(error.body)
    assert body["kind"] == "Status" and body["code"] == error.status
    return body


def test_each_kubeconfig_authenticates_the_client(fake: Fake) -> None:
    from kubernetes import client

    fake.seed([{"kind": "Pod", "name": "solo", "labels": {OWNER: "ci"}}])
    for kubeconfig, auth in [
        (fake.kubeconfig_token, "token"),
        (fake.kubeconfig_cert, "cert"),
        (fake.kubeconfig_exec, "token"),
    ]:
        pods = client.CoreV1Api(api_client(kubeconfig)).list_namespaced_pod("default")
        assert [p.metadata.name for p in pods.items if p.metadata] == ["solo"]
        assert fake.requests()[-1]["auth"] == auth, kubeconfig


def test_the_process_wide_default_config_works_too(fake: Fake) -> None:
    from kubernetes import client, config

    seed_claims(fake, 2)
    config.load_kube_config(config_file=fake.kubeconfig_cert)  # type: ignore[no-untyped-call]
    listed = client.CustomObjectsApi().list_namespaced_custom_object(CLAIM.group, CLAIM.version, "default", CLAIM.plural)
    assert [o["metadata"]["name"] for o in cast(dict[str, Any], listed)["items"]] == ["claim-000", "claim-001"]


def test_refusals_answer_401_unauthorized(fake: Fake, tmp_path: Path) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    text = Path(fake.kubeconfig_token).read_text()
    wrong = tmp_path / "wrong"
    wrong.write_text(text.replace(fake.token, "not-the-token"))
    for kubeconfig in [str(wrong), fake.kubeconfig_foreign]:
        with pytest.raises(ApiException) as refused:
            client.CoreV1Api(api_client(kubeconfig)).list_namespaced_pod("default")
        assert refused.value.status == 401
        assert status_of(refused.value)["reason"] == "Unauthorized"
    assert [r["auth"] for r in fake.requests()] == [None, None]


def test_discovery(fake: Fake) -> None:
    from kubernetes import client

    api = api_client(fake.kubeconfig_token)
    assert client.CoreApi(api).get_api_versions().versions == ["v1"]
    core = client.CoreV1Api(api).get_api_resources()
    assert [r.kind for r in core.resources if r.name == "pods"] == ["Pod"]
    groups = client.ApisApi(api).get_api_versions().groups
    assert [(g.name, g.preferred_version.group_version if g.preferred_version else None) for g in groups] == [
        ("agents.x-k8s.io", "agents.x-k8s.io/v1beta1"),
        ("extensions.agents.x-k8s.io", "extensions.agents.x-k8s.io/v1beta1"),
    ]
    resources = client.CustomObjectsApi(api).get_api_resources(group=CLAIM.group, version=CLAIM.version)
    claims = next(r for r in resources.resources if r.name == "sandboxclaims")
    assert (claims.kind, claims.namespaced, "list" in claims.verbs, "delete" in claims.verbs) == ("SandboxClaim", True, True, True)


def test_custom_objects_list_every_labelled_claim_once(fake: Fake) -> None:
    from kubernetes import client

    seed_claims(fake, 57, "team-a")
    seed_claims(fake, 9, "team-b")
    api = api_client(fake.kubeconfig_cert)
    objects = Objects(api, CLAIM)
    selector = f"{OWNER}=ci"
    seen, pages = every_page(lambda token: objects.list("team-a", label_selector=selector, limit=10, token=token))
    assert pages == 3
    assert [o["metadata"]["name"] for o in seen] == [name("claim", 2 * i + 1) for i in range(28)]
    first = seen[0]
    assert (first["apiVersion"], first["kind"]) == ("extensions.agents.x-k8s.io/v1beta1", "SandboxClaim")
    assert first["metadata"]["creationTimestamp"] == "2026-01-01T00:00:01Z"
    lists = fake.requests()
    assert [urllib.parse.parse_qs(r["query"].lstrip("?")).get("limit") for r in lists] == [["10"]] * 3
    assert all(urllib.parse.parse_qs(r["query"].lstrip("?"))["labelSelector"] == [selector] for r in lists)

    across, _ = every_page(
        lambda token: objects.list(label_selector=f"{OWNER} in (ci),run!=r3", limit=7, token=token)
    )
    assert len(across) == 28 + 4 - 2
    assert fake.requests()[-1]["path"] == "/apis/extensions.agents.x-k8s.io/v1beta1/sandboxclaims"

    sandbox = Objects(api, SANDBOX).get("team-a", "claim-001")
    assert sandbox["metadata"]["ownerReferences"][0]["uid"] == first["metadata"]["uid"]
    assert sandbox["metadata"]["labels"][CLAIM_UID_LABEL] == first["metadata"]["uid"]


def test_core_lists_labelled_pods_typed_page_by_page(fake: Fake) -> None:
    from kubernetes import client

    fake.seed(
        [
            {
                "kind": "Pod",
                "namespace": "default" if i < 20 else "other",
                "name": name("pod", i),
                "labels": {OWNER: "ci"} if i % 5 else {},
                "creationTimestamp": T0_MS + i * 1000,
            }
            for i in range(25)
        ]
    )
    core = client.CoreV1Api(api_client(fake.kubeconfig_token))
    seen: list[Any] = []
    token: str | None = None
    pages = 0
    while True:
        page = core.list_namespaced_pod("default", label_selector=OWNER, limit=5, _continue=token)
        pages += 1
        seen.extend(page.items)
        assert page.metadata is not None
        token = page.metadata.var_continue
        if not token:
            break
    assert (pages, len(seen)) == (4, 16)
    assert seen[0].metadata.creation_timestamp == datetime(2026, 1, 1, 0, 0, 1, tzinfo=timezone.utc)
    assert seen[0].spec.containers[0].name == "sandbox"
    everywhere = core.list_pod_for_all_namespaces(label_selector=f"!{OWNER}")
    assert [f"{p.metadata.namespace}/{p.metadata.name}" for p in everywhere.items if p.metadata] == [
        "default/pod-000",
        "default/pod-005",
        "default/pod-010",
        "default/pod-015",
        "other/pod-020",
    ]


def test_an_expired_continue_answers_410_with_a_fresh_token(fake: Fake) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    seed_claims(fake, 12)
    objects = Objects(api_client(fake.kubeconfig_token), CLAIM)
    first = objects.list("default", limit=5)
    token = first["metadata"]["continue"]
    fake.faults(expireContinue=1)
    with pytest.raises(ApiException) as expired:
        objects.list("default", limit=5, token=token)
    assert expired.value.status == 410
    body = status_of(expired.value)
    assert body["reason"] == "Expired"
    assert body["message"].startswith("The provided continue parameter is too old to display a consistent list result")
    fresh = body["metadata"]["continue"]
    assert fresh and fresh != token
    rest = objects.list("default", limit=5, token=fresh)
    assert [o["metadata"]["name"] for o in rest["items"]] == [name("claim", i) for i in range(5, 10)]
    # The typed client reads the same 410 (each claim brought a Pod).
    core = client.CoreV1Api(api_client(fake.kubeconfig_token))
    pods = core.list_namespaced_pod("default", limit=5)
    assert pods.metadata is not None and pods.metadata.var_continue
    fake.faults(expireContinue=1)
    with pytest.raises(ApiException) as typed:
        core.list_namespaced_pod("default", limit=5, _continue=pods.metadata.var_continue)
    assert typed.value.status == 410 and status_of(typed.value)["reason"] == "Expired"


def test_get_and_not_found(fake: Fake) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    seed_claims(fake, 2)
    api = api_client(fake.kubeconfig_cert)
    objects = Objects(api, CLAIM)
    claim = objects.get("default", "claim-001")
    assert claim["spec"]["warmPoolRef"] == {"name": "default"}
    with pytest.raises(ApiException) as missing:
        objects.get("default", "nope")
    assert missing.value.status == 404
    body = status_of(missing.value)
    assert (body["reason"], body["message"]) == ("NotFound", 'sandboxclaims.extensions.agents.x-k8s.io "nope" not found')
    pod = client.CoreV1Api(api).read_namespaced_pod("claim-000", "default")
    assert pod.metadata and pod.metadata.owner_references and pod.metadata.owner_references[0].kind == "Sandbox"
    with pytest.raises(ApiException) as no_pod:
        client.CoreV1Api(api).read_namespaced_pod("nope", "default")
    assert no_pod.value.status == 404


def test_a_foreground_delete_then_gone(fake: Fake) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    fake.faults(deletingMs=800)
    seed_claims(fake, 2)
    api = api_client(fake.kubeconfig_token)
    objects = Objects(api, CLAIM)
    answer = objects.delete("default", "claim-001", body=client.V1DeleteOptions(propagation_policy="Foreground"))
    assert answer["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert answer["metadata"]["deletionTimestamp"]
    sent = fake.requests()[-1]
    assert (sent["method"], sent["propagationPolicy"]) == ("DELETE", "Foreground")
    assert sent["body"]["propagationPolicy"] == "Foreground"
    assert fake.state()["deleting"] == ["Pod/default/claim-001", "SandboxClaim/default/claim-001", "Sandbox/default/claim-001"]
    listed = objects.list("default")
    assert [o["metadata"].get("deletionTimestamp") is not None for o in listed["items"]] == [False, True]
    again = objects.delete("default", "claim-001", propagation_policy="Foreground")
    assert again["metadata"]["deletionTimestamp"] == answer["metadata"]["deletionTimestamp"]
    assert fake.requests()[-1]["query"] == "?propagationPolicy=Foreground"
    time.sleep(0.9)
    with pytest.raises(ApiException) as gone:
        objects.get("default", "claim-001")
    assert gone.value.status == 404
    with pytest.raises(ApiException) as sandbox_gone:
        Objects(api, SANDBOX).get("default", "claim-001")
    assert sandbox_gone.value.status == 404

    fake.seed([{"kind": "Pod", "name": "lone"}])
    core = client.CoreV1Api(api)
    pod = core.delete_namespaced_pod("lone", "default", body=client.V1DeleteOptions(propagation_policy="Foreground"))
    assert pod.metadata and pod.metadata.deletion_timestamp is not None
    assert pod.metadata.finalizers == ["foregroundDeletion"]
    time.sleep(0.9)
    with pytest.raises(ApiException) as pod_gone:
        core.delete_namespaced_pod("lone", "default", body=client.V1DeleteOptions(propagation_policy="Foreground"))
    assert pod_gone.value.status == 404
    assert status_of(pod_gone.value)["details"] == {"name": "lone", "kind": "pods"}


def test_the_faults_read_as_a_clusters(fake: Fake) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    fake.faults(deletingMs=60_000)
    seed_claims(fake, 6)
    # urllib3's default Retry (total 3) honours a 429's Retry-After on a DELETE by itself.
    fake.faults(rateLimitDeletes=1, retryAfterSeconds=1)
    started = time.monotonic()
    Objects(api_client(fake.kubeconfig_cert), CLAIM).delete("default", "claim-005", propagation_policy="Foreground")
    assert time.monotonic() - started >= 0.9
    assert [r["method"] for r in fake.requests()] == ["DELETE", "DELETE"]
    objects = Objects(api_client(fake.kubeconfig_cert, retries=False), CLAIM)
    fake.faults(rateLimitDeletes=1, retryAfterSeconds=3)
    with pytest.raises(ApiException) as limited:
        objects.delete("default", "claim-000", propagation_policy="Foreground")
    assert limited.value.status == 429 and limited.value.headers is not None
    assert limited.value.headers["Retry-After"] == "3"
    assert status_of(limited.value)["details"] == {"retryAfterSeconds": 3}
    fake.faults(failDeleteEvery=2)
    with pytest.raises(ApiException) as failed:
        objects.delete("default", "claim-000", propagation_policy="Foreground")
    assert failed.value.status == 500 and status_of(failed.value)["reason"] == "InternalError"
    fake.faults(failDeleteEvery=0, repeatAcrossPages=True)
    seen, _ = every_page(
        lambda token: objects.list("default", limit=4, token=token)
    )
    assert [o["metadata"]["name"] for o in seen] == [name("claim", i) for i in [0, 1, 2, 3, 3, 4, 5]]
