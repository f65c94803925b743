//! `VercelProvider` against the local Vercel Sandbox fake
//! (tests/fakes/vercel.mjs, proven by Vercel's official SDK in
//! tests/node/vercel-fake.test.mjs): destroy deletes (never only stops),
//! every cursor page of a tag-filtered listing, stopped sandboxes swept, and
//! the faults a real fleet meets.
#![cfg(feature = "vercel")]

mod hosted_support;

use std::time::{Duration, Instant};

use hosted_support::scripted::{self, PageFormat};
use hosted_support::Fake;
use sandbox_reclaim::options::provider::ListingCeilings;
use sandbox_reclaim::providers::vercel;
use sandbox_reclaim::{
    reclaim_sandbox, reconcile, HostedError, HostedSandboxProvider, InMemorySandboxInstanceStore, LeakLedger,
    ProviderError, ReclaimOptions, ReclaimOutcome, ReconcileOptions, RunRecord, RunStatus, SandboxInstanceRecord,
    SandboxInstanceStore, SandboxProvider, SweepStatus, VercelConfig, VercelProvider,
};
use serde_json::{json, Value};

const TOKEN: &str = "vercel_test_token";
const OWNER_LABEL: &str = "io.sandbox-reclaim.owner";
const STATUSES: [&str; 4] = ["running", "stopped", "failed", "pending"];

fn start() -> Fake {
    Fake::start("vercel.mjs", &["--token", TOKEN, "--team", "team_t", "--project", "prj_p"])
}

fn provider(fake: &Fake, token: &str, page_size: u32) -> VercelProvider {
    let config = VercelConfig {
        api_key: Some(token.to_owned()),
        api_url: Some(fake.url.clone()),
        page_size,
        request_timeout: Duration::from_secs(10),
        ..scoped()
    };
    VercelProvider::new(config).unwrap()
}

fn sandboxes(prefix: &str, count: usize, tags: Value) -> Vec<Value> {
    (0..count)
        .map(|index| {
            json!({ "name": format!("{prefix}{index}"), "tags": tags, "status": STATUSES[index % STATUSES.len()],
                    "createdAt": 1_767_225_600_000_u64 + index as u64 })
        })
        .collect()
}

fn sweep_options<'a>(provider: &'a VercelProvider, store: &'a InMemorySandboxInstanceStore) -> ReconcileOptions<'a> {
    let mut options = ReconcileOptions::new(vec![provider as &dyn SandboxProvider], store);
    options.orphan_grace = Duration::from_secs(60);
    options.backoff = Duration::from_millis(1);
    options.max_backoff = Duration::from_millis(1);
    options
}

#[tokio::test]
async fn destroy_deletes_for_good_never_only_stops_and_reads_not_found_as_gone() {
    let fake = start();
    fake.seed(sandboxes("box", 2, json!({}))).await;
    let provider = provider(&fake, TOKEN, 50);
    provider.destroy("box0").await.unwrap();
    assert_eq!(fake.alive().await, ["box1"]);
    let state = fake.state().await;
    assert_eq!(state["deleted"], json!(["box0"]), "deleted, not stopped: {state}");
    assert!(state["requests"].as_array().unwrap().iter().all(|r| !r["path"].as_str().unwrap().ends_with("/stop")));
    provider.destroy("box0").await.expect("already gone is success");
    assert!(provider.destroy("a/b").await.is_err());
}

#[tokio::test]
async fn a_wrong_token_names_vercel_token_and_never_the_token() {
    let fake = start();
    let provider = provider(&fake, "vercel_wrong_secret", 50);
    for error in [
        provider.destroy("box0").await.unwrap_err(),
        provider.list_sandboxes().await.unwrap_err(),
        provider.check_access().await.unwrap_err(),
    ] {
        let message = error.to_string();
        assert!(message.contains("VERCEL_TOKEN") && message.contains("403"), "{message}");
        assert!(!message.contains("vercel_wrong_secret"), "{message}");
        let ProviderError::Backend(inner) = &error else { panic!("{error:?}") };
        assert!(matches!(inner.downcast_ref::<HostedError>(), Some(HostedError::Unauthorized(_))), "{error:?}");
    }
}

#[tokio::test]
async fn server_errors_fail_and_rate_limits_wait_for_retry_after() {
    let fake = start();
    fake.seed(sandboxes("box", 1, json!({}))).await;
    let provider = provider(&fake, TOKEN, 50);
    fake.faults(json!({ "failDeleteEvery": 1 })).await;
    let failed = provider.destroy("box0").await.unwrap_err().to_string();
    assert!(failed.contains("HTTP 500"), "{failed}");
    fake.faults(json!({ "failDeleteEvery": 0, "rateLimitDeletes": 1, "retryAfterSeconds": 0.3 })).await;
    let started = Instant::now();
    provider.destroy("box0").await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(fake.alive().await.is_empty());
}

#[tokio::test]
async fn a_hanging_delete_is_cut_by_the_deadline_and_reaches_the_ledger() {
    let fake = start();
    fake.seed(sandboxes("box", 1, json!({}))).await;
    fake.faults(json!({ "hangDeletes": true })).await;
    let provider = provider(&fake, TOKEN, 50);
    let store = InMemorySandboxInstanceStore::with_ledger();
    let record = SandboxInstanceRecord {
        key: "k1".into(),
        provider: "vercel".into(),
        provider_sandbox_id: "box0".into(),
        latest_snapshot_id: None,
        thread_id: "thread-1".into(),
        latest_run_id: None,
        updated_at: 1,
    };
    store.upsert(&record).await.unwrap();
    let run = RunRecord::new("run-1", "thread-1", RunStatus::Completed).with_sandbox_key("k1");
    let options = ReclaimOptions::new(&provider, &store).with_destroy_timeout(Duration::from_millis(300));
    assert_eq!(reclaim_sandbox(&run, options).await.unwrap(), ReclaimOutcome::DestroyFailed);
    assert_eq!(fake.abandoned(1).await, 1, "the deadline dropped the HTTP request itself");
    assert_eq!(store.list_leaks(Some("vercel")).await.unwrap().len(), 1);
}

#[tokio::test]
async fn the_sweep_reads_every_page_once_sweeps_stopped_boxes_and_spares_strangers() {
    let fake = start();
    fake.seed(sandboxes("ours", 9, json!({ OWNER_LABEL: "sandbox-reclaim" }))).await;
    fake.seed(sandboxes("theirs", 2, json!({ OWNER_LABEL: "another-team" }))).await;
    fake.seed(sandboxes("bare", 2, json!({}))).await;
    fake.faults(json!({ "repeatAcrossPages": true })).await;
    let provider = provider(&fake, TOKEN, 4);
    let listed = provider.list_sandboxes().await.unwrap();
    let mut ids: Vec<&str> = listed.iter().map(|sandbox| sandbox.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!((listed.len(), ids.len()), (9, 9), "pages repeat an item, listed once: {ids:?}");
    let store = InMemorySandboxInstanceStore::with_ledger();
    let report = reconcile(sweep_options(&provider, &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.status, SweepStatus::Swept, "{orphans:?}");
    assert_eq!((orphans.listed, orphans.found, orphans.destroyed), (9, 9, 9), "{orphans:?}");
    let mut alive = fake.alive().await;
    alive.sort();
    assert_eq!(alive, ["bare0", "bare1", "theirs0", "theirs1"]);
    for index in 0..9 {
        assert_eq!(fake.deletes_of(&format!("ours{index}")).await, 1);
    }
}

#[tokio::test]
async fn failed_deletes_are_retried_and_a_lagging_listing_is_never_destroyed_twice() {
    let fake = start();
    fake.seed(sandboxes("ours", 6, json!({ OWNER_LABEL: "sandbox-reclaim" }))).await;
    fake.faults(json!({ "failDeleteEvery": 2, "deletedStayListedMs": 60_000 })).await;
    let provider = provider(&fake, TOKEN, 4);
    let store = InMemorySandboxInstanceStore::with_ledger();
    let first = reconcile(sweep_options(&provider, &store)).await.unwrap();
    assert_eq!(first.providers[0].orphans.failed, 3);
    fake.faults(json!({ "failDeleteEvery": 0 })).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = reconcile(sweep_options(&provider, &store)).await.unwrap();
    assert_eq!(second.providers[0].leaks.destroyed, 3);
    assert_eq!(second.providers[0].orphans.listed, 6, "deleted boxes are still listed (stopped)");
    assert_eq!(second.providers[0].orphans.found, 0, "and never swept again");
    assert!(fake.alive().await.is_empty());
    for index in 0..6 {
        assert!(fake.deletes_of(&format!("ours{index}")).await <= 2);
    }
}

#[tokio::test]
async fn a_malformed_page_makes_the_sweep_unavailable() {
    let fake = start();
    fake.seed(sandboxes("ours", 5, json!({ OWNER_LABEL: "sandbox-reclaim" }))).await;
    fake.faults(json!({ "malformedPage": 2 })).await;
    let provider = provider(&fake, TOKEN, 2);
    let store = InMemorySandboxInstanceStore::with_ledger();
    let report = reconcile(sweep_options(&provider, &store)).await.unwrap();
    assert_eq!(report.providers[0].orphans.status, SweepStatus::Unavailable);
    assert_eq!(fake.alive().await.len(), 5);
}

#[tokio::test]
async fn sweeping_unlabelled_sandboxes_destroys_only_what_the_registry_names() {
    let fake = start();
    fake.seed(sandboxes("tan", 3, json!({}))).await;
    fake.seed(sandboxes("theirs", 1, json!({ OWNER_LABEL: "another-team" }))).await;
    let labelled_only = provider(&fake, TOKEN, 2);
    let unlabelled = VercelProvider::new(VercelConfig {
        api_key: Some(TOKEN.to_owned()),
        api_url: Some(fake.url.clone()),
        page_size: 2,
        sweep_unlabelled: true,
        ..scoped()
    })
    .unwrap();
    let ids =
        hosted_support::Unlabelled { registered: "tan0", stranger: "tan1", referenced: "tan2", theirs: "theirs0" };
    hosted_support::sweeping_unlabelled_destroys_only_what_the_registry_names(
        &fake,
        "vercel",
        ids,
        &labelled_only,
        &unlabelled,
    )
    .await;
}

/// Vercel's page (`{sandboxes, pagination: {next}}`) for the scripted vendor.
fn scripted_pages() -> PageFormat {
    PageFormat {
        cursor_parameter: "cursor",
        page: |ids, next| {
            let items: Vec<Value> = ids
                .iter()
                .map(|id| {
                    json!({ "name": id, "createdAt": 1_767_225_600_000_u64, "status": "running",
                            "tags": { OWNER_LABEL: "sandbox-reclaim" } })
                })
                .collect();
            let body = json!({ "sandboxes": items, "pagination": { "count": ids.len(), "next": next } });
            scripted::Answer { headers: vec![], body: body.to_string() }
        },
    }
}

fn scripted_provider(url: &str, listing_ceilings: ListingCeilings) -> Box<dyn SandboxProvider> {
    let config = VercelConfig {
        api_key: Some(TOKEN.to_owned()),
        api_url: Some(url.to_owned()),
        page_size: 3,
        listing_ceilings,
        ..scoped()
    };
    Box::new(VercelProvider::new(config).unwrap())
}

#[tokio::test]
async fn a_cursor_cycle_ends_the_listing_after_three_pages_and_fails_it_closed() {
    scripted::a_cursor_cycle_fails_the_listing_closed(scripted_pages, &scripted_provider).await;
}

#[tokio::test]
async fn a_listing_past_its_page_or_item_ceiling_fails_closed() {
    scripted::a_listing_past_a_ceiling_fails_closed(scripted_pages, &scripted_provider).await;
}

#[tokio::test]
async fn a_sandbox_on_several_pages_is_listed_once() {
    scripted::a_sandbox_on_several_pages_is_listed_once(scripted_pages, &scripted_provider).await;
}

/// Vercel's defaults in team `team_t`, project `prj_p`.
fn scoped() -> VercelConfig {
    VercelConfig::default().with(vercel::TEAM_ID, "team_t").with(vercel::PROJECT_ID, "prj_p")
}
