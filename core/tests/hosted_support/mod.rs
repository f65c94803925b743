//! A vendor fake (tests/fakes/*.mjs under `node`; tests/fakes/*.py, Modal's
//! gRPC fake, under the Python `SANDBOX_RECLAIM_FAKE_PYTHON` names, a venv
//! with `modal` installed) run for a test, serving until dropped, and its
//! `/_fake/` control routes. `make test` has both; without them the
//! hosted-provider tests FAIL, never pass.
// Each test crate uses some of these helpers, none all of them.
#![allow(dead_code)]

pub mod scripted;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use sandbox_reclaim::{
    reconcile, InMemorySandboxInstanceStore, ReconcileOptions, SandboxInstanceRecord, SandboxInstanceStore,
    SandboxProvider, SweepStatus,
};
use serde_json::Value;

pub struct Fake {
    child: Child,
    /// The base URL to point a provider at (`DAYTONA_API_URL`-style for Daytona).
    pub url: String,
    /// Where the control routes are, when not on `url` (a gRPC fake's).
    control: Option<String>,
    /// The line the fake printed when it started (its files: a kubeconfig, ...).
    pub started: Value,
    http: reqwest::Client,
}

/// The variable naming the Python that runs the Python fakes.
const FAKE_PYTHON: &str = "SANDBOX_RECLAIM_FAKE_PYTHON";

impl Fake {
    /// Starts `tests/fakes/{script}` with `args`: a `.py` under the
    /// `SANDBOX_RECLAIM_FAKE_PYTHON` Python, anything else under `node`.
    pub fn start(script: &str, args: &[&str]) -> Self {
        let path = format!("{}/../tests/fakes/{script}", env!("CARGO_MANIFEST_DIR"));
        let (program, need) = if script.ends_with(".py") {
            let python = std::env::var(FAKE_PYTHON).unwrap_or_else(|_| {
                panic!("{FAKE_PYTHON} is not set: these tests need a Python with `modal==1.6.4` and `boxd==0.2.19` to run {script}")
            });
            (python, format!("{FAKE_PYTHON} to name a Python with `modal==1.6.4` and `boxd==0.2.19`"))
        } else {
            ("node".to_owned(), "`node` on PATH".to_owned())
        };
        let mut child = Command::new(&program)
            .arg(path)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("these tests need {need} to run {script} ({program}: {error})"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let started: Value = serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("{script} did not start under {program} (these tests need {need}): {line:?}"));
        let control = started["control"].as_str().map(str::to_owned);
        let url = started["url"].as_str().unwrap().to_owned();
        // An HTTPS fake (Kubernetes) has its own CA: its control routes are ours.
        let http = reqwest::Client::builder().danger_accept_invalid_certs(true).build().unwrap();
        Self { child, url, control, started, http }
    }

    /// Where the `/_fake/` routes are.
    fn control(&self) -> &str {
        self.control.as_deref().unwrap_or(&self.url)
    }

    pub async fn post(&self, route: &str, body: Value) {
        let response = self.http.post(format!("{}/_fake/{route}", self.control())).body(body.to_string()).send().await;
        let response = response.unwrap();
        assert!(response.status().is_success(), "{route}: {}", response.text().await.unwrap_or_default());
    }

    pub async fn seed(&self, sandboxes: Vec<Value>) {
        self.post("sandboxes", Value::Array(sandboxes)).await;
    }

    pub async fn faults(&self, faults: Value) {
        self.post("faults", faults).await;
    }

    pub async fn state(&self) -> Value {
        let response = self.http.get(format!("{}/_fake/state", self.control())).send().await.unwrap();
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
    }

    /// The ids (names, for Vercel) still alive, sorted.
    pub async fn alive(&self) -> Vec<String> {
        let state = self.state().await;
        state["alive"].as_array().unwrap().iter().map(|id| id.as_str().unwrap().to_owned()).collect()
    }

    /// How many destroys reached `id`: DELETEs of a path ending in `/{id}`,
    /// or (a gRPC fake's) `SandboxTerminate[V2]` calls naming it.
    pub async fn deletes_of(&self, id: &str) -> usize {
        let suffix = format!("/{id}");
        let state = self.state().await;
        let requests = state["requests"].as_array().unwrap();
        let delete = |r: &Value| r["method"] == "DELETE" && r["path"].as_str().is_some_and(|p| p.ends_with(&suffix));
        let terminate = |r: &Value| {
            r["method"].as_str().is_some_and(|m| m.starts_with("SandboxTerminate") || m == "DestroyVm") && r["id"] == id
        };
        requests.iter().filter(|r| delete(r) || terminate(r)).count()
    }

    /// Waits (up to a second) until the fake saw `count` requests abandoned.
    pub async fn abandoned(&self, count: u64) -> u64 {
        let mut seen = 0;
        for _ in 0..100 {
            seen = self.state().await["abandoned"].as_u64().unwrap_or(0);
            if seen >= count {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        seen
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The sandboxes of [`sweeping_unlabelled_destroys_only_what_the_registry_names`],
/// as the fake lists them (seeded by the caller, created long ago).
pub struct Unlabelled<'a> {
    /// Unlabelled; its record was written, then deleted.
    pub registered: &'a str,
    /// Unlabelled; no record ever named it.
    pub stranger: &'a str,
    /// Unlabelled; its record still exists.
    pub referenced: &'a str,
    /// Labelled for another owner; a record named it, then was deleted.
    pub theirs: &'a str,
}

/// TanStack's providers label nothing. With `sweep_unlabelled`, the listing
/// takes every sandbox, and an unlabelled one is ours only when the store's
/// registry names it (its record was written, then deleted after a destroy
/// that silently failed): destroyed. An unlabelled one nobody registered, and
/// a registered one labelled for another owner, stay untouched; without
/// `sweep_unlabelled` the listing stays filtered by our label.
pub async fn sweeping_unlabelled_destroys_only_what_the_registry_names(
    fake: &Fake,
    provider_name: &str,
    ids: Unlabelled<'_>,
    labelled_only: &dyn SandboxProvider,
    unlabelled: &dyn SandboxProvider,
) {
    let store = InMemorySandboxInstanceStore::with_ledger();
    for (key, id) in [("k0", ids.registered), ("k2", ids.referenced), ("kt", ids.theirs)] {
        let record = SandboxInstanceRecord {
            key: key.to_owned(),
            provider: provider_name.to_owned(),
            provider_sandbox_id: id.to_owned(),
            latest_snapshot_id: None,
            thread_id: "thread".to_owned(),
            latest_run_id: None,
            updated_at: 1,
        };
        store.upsert(&record).await.unwrap();
    }
    store.delete("k0").await.unwrap();
    store.delete("kt").await.unwrap();
    // The listing alone (a vendor's lookup by id is tests/hosted_lookup.rs's).
    let listing_only = ListingOnly(labelled_only);
    let mut filtered = ReconcileOptions::new(vec![&listing_only as &dyn SandboxProvider], &store);
    filtered.orphan_grace = Duration::from_secs(60);
    let report = reconcile(filtered).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!((orphans.status, orphans.listed, orphans.destroyed), (SweepStatus::Swept, 0, 0), "{orphans:?}");

    let mut all = ReconcileOptions::new(vec![unlabelled], &store);
    all.orphan_grace = Duration::from_secs(60);
    let report = reconcile(all).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.status, SweepStatus::Swept, "{orphans:?}");
    assert_eq!(
        (orphans.listed, orphans.foreign, orphans.referenced, orphans.found, orphans.destroyed),
        (4, 2, 1, 1, 1),
        "{orphans:?}"
    );
    let mut alive = fake.alive().await;
    alive.sort();
    let mut expected = vec![ids.stranger, ids.referenced, ids.theirs];
    expected.sort();
    assert_eq!(alive, expected);
    assert_eq!(fake.deletes_of(ids.registered).await, 1);
}

/// A sweep's options for one provider: orphans past a minute, retries at once.
pub fn sweep_options<'a>(
    provider: &'a dyn SandboxProvider,
    store: &'a InMemorySandboxInstanceStore,
) -> ReconcileOptions<'a> {
    let mut options = ReconcileOptions::new(vec![provider], store);
    options.orphan_grace = Duration::from_secs(60);
    options.backoff = Duration::from_millis(1);
    options.max_backoff = Duration::from_millis(1);
    options
}

/// An instance record of `provider`'s sandbox `id` under `key`.
pub fn record(key: &str, provider: &str, id: &str) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: key.into(),
        provider: provider.into(),
        provider_sandbox_id: id.into(),
        latest_snapshot_id: None,
        thread_id: "thread-1".into(),
        latest_run_id: None,
        updated_at: 1,
    }
}

/// A provider without its lookup by id: what its listing alone finds.
pub struct ListingOnly<'a>(pub &'a dyn SandboxProvider);

#[async_trait::async_trait]
impl SandboxProvider for ListingOnly<'_> {
    fn name(&self) -> &str {
        self.0.name()
    }

    async fn destroy(&self, provider_sandbox_id: &str) -> Result<(), sandbox_reclaim::ProviderError> {
        self.0.destroy(provider_sandbox_id).await
    }

    fn can_list(&self) -> bool {
        self.0.can_list()
    }

    async fn list_sandboxes(&self) -> Result<Vec<sandbox_reclaim::ListedSandbox>, sandbox_reclaim::ProviderError> {
        self.0.list_sandboxes().await
    }

    fn owner(&self) -> Option<&str> {
        self.0.owner()
    }
}
