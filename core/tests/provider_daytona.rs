//! `DaytonaProvider` against the local Daytona fake (tests/fakes/daytona.mjs,
//! proven by Daytona's official SDK in tests/node/daytona-fake.test.mjs):
//! honest deletes, every cursor page of a label-filtered listing, sandboxes
//! Daytona is already destroying reported and never destroyed again, and the
//! faults a real fleet meets.
#![cfg(feature = "daytona")]

mod hosted_support;

use std::time::{Duration, Instant};

use hosted_support::scripted::{self, PageFormat};
use hosted_support::Fake;
use sandbox_reclaim::options::provider::ListingCeilings;
use sandbox_reclaim::{
    reclaim_sandbox, reconcile, DaytonaConfig, DaytonaProvider, HostedError, HostedSandboxProvider,
    InMemorySandboxInstanceStore, LeakLedger, ProviderError, ReclaimOptions, ReclaimOutcome, ReconcileOptions,
    RunRecord, RunStatus, SandboxInstanceRecord, SandboxInstanceStore, SandboxProvider, SweepStatus,
};
use serde_json::{json, Value};

const KEY: &str = "dtn_test_key";
const OWNER_LABEL: &str = "io.sandbox-reclaim.owner";
const STATES: [&str; 4] = ["started", "stopped", "archived", "paused"];

fn start() -> Fake {
    Fake::start("daytona.mjs", &["--key", KEY])
}

fn provider(fake: &Fake, key: &str, page_size: u32) -> DaytonaProvider {
    let config = DaytonaConfig {
        api_key: Some(key.to_owned()),
        api_url: Some(fake.url.clone()),
        page_size,
        request_timeout: Duration::from_secs(10),
        ..DaytonaConfig::default()
    };
    DaytonaProvider::new(config).unwrap()
}

/// Sandboxes `{prefix}{i}` created long ago, in turn started, stopped, archived, paused.
fn sandboxes(prefix: &str, count: usize, labels: Value) -> Vec<Value> {
    (0..count)
        .map(|index| {
            json!({ "id": format!("{prefix}{index}"), "labels": labels, "state": STATES[index % STATES.len()],
                    "createdAt": "2026-01-01T00:00:00.000Z" })
        })
        .collect()
}

fn sweep_options<'a>(provider: &'a DaytonaProvider, store: &'a InMemorySandboxInstanceStore) -> ReconcileOptions<'a> {
    let mut options = ReconcileOptions::new(vec![provider as &dyn SandboxProvider], store);
    options.orphan_grace = Duration::from_secs(60);
    options.backoff = Duration::from_millis(1);
    options.max_backoff = Duration::from_millis(1);
    options
}

#[tokio::test]
async fn destroy_deletes_for_good_and_reads_not_found_as_gone() {
    let fake = start();
    fake.seed(sandboxes("s", 2, json!({ OWNER_LABEL: "sandbox-reclaim" }))).await;
    let provider = provider(&fake, KEY, 100);
    provider.destroy("s0").await.unwrap();
    assert_eq!(fake.alive().await, ["s1"]);
    provider.destroy("never-existed").await.expect("unknown is gone");
    assert!(provider.destroy("a/b").await.is_err(), "an id that is not one is refused before any request");
    assert_eq!(fake.deletes_of("s0").await, 1);
}

#[tokio::test]
async fn a_wrong_key_names_daytona_api_key_and_never_the_key() {
    let fake = start();
    let provider = provider(&fake, "dtn_wrong_secret", 100);
    for error in [
        provider.destroy("s0").await.unwrap_err(),
        provider.list_sandboxes().await.unwrap_err(),
        provider.check_access().await.unwrap_err(),
    ] {
        let message = error.to_string();
        assert!(message.contains("DAYTONA_API_KEY") && message.contains("401"), "{message}");
        assert!(!message.contains("dtn_wrong_secret"), "{message}");
        let ProviderError::Backend(inner) = &error else { panic!("{error:?}") };
        assert!(matches!(inner.downcast_ref::<HostedError>(), Some(HostedError::Unauthorized(_))), "{error:?}");
    }
}

#[tokio::test]
async fn server_errors_fail_and_a_named_retry_after_is_waited_out() {
    let fake = start();
    fake.seed(sandboxes("s", 1, json!({}))).await;
    let provider = provider(&fake, KEY, 100);
    fake.faults(json!({ "failDeleteEvery": 1 })).await;
    let failed = provider.destroy("s0").await.unwrap_err().to_string();
    assert!(failed.contains("HTTP 500") && failed.contains("unexpected error"), "{failed}");
    fake.faults(json!({ "failDeleteEvery": 0, "rateLimitDeletes": 1, "retryAfterSeconds": 0.3 })).await;
    let started = Instant::now();
    provider.destroy("s0").await.expect("a 429 with Retry-After-sandbox-lifecycle is waited out");
    assert!(started.elapsed() >= Duration::from_millis(300), "{:?}", started.elapsed());
    assert!(fake.alive().await.is_empty());
}

#[tokio::test]
async fn a_hanging_delete_is_cut_by_the_deadline_and_reaches_the_ledger() {
    let fake = start();
    fake.seed(sandboxes("s", 1, json!({}))).await;
    fake.faults(json!({ "hangDeletes": true })).await;
    let provider = provider(&fake, KEY, 100);
    let store = InMemorySandboxInstanceStore::with_ledger();
    let record = SandboxInstanceRecord {
        key: "k1".into(),
        provider: "daytona".into(),
        provider_sandbox_id: "s0".into(),
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
    assert_eq!(store.list_leaks(Some("daytona")).await.unwrap().len(), 1);
}

#[tokio::test]
async fn the_sweep_reads_every_cursor_page_once_and_spares_destroying_and_foreign_sandboxes() {
    let fake = start();
    fake.seed(sandboxes("ours", 9, json!({ OWNER_LABEL: "sandbox-reclaim" }))).await;
    fake.seed(sandboxes("theirs", 2, json!({ OWNER_LABEL: "another-team" }))).await;
    fake.seed(sandboxes("bare", 2, json!({ "team": "x" }))).await;
    fake.seed(vec![json!({ "id": "going", "labels": { OWNER_LABEL: "sandbox-reclaim" }, "state": "started",
                            "desiredState": "destroyed", "createdAt": "2026-01-01T00:00:00.000Z" })])
        .await;
    fake.faults(json!({ "repeatAcrossPages": true })).await;
    let provider = provider(&fake, KEY, 4);
    let listed = provider.list_sandboxes().await.unwrap();
    let mut ids: Vec<&str> = listed.iter().map(|sandbox| sandbox.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!((listed.len(), ids.len()), (10, 10), "pages repeat an item, listed once: {ids:?}");
    assert!(listed.iter().any(|sandbox| sandbox.id == "going" && sandbox.deleting));

    let store = InMemorySandboxInstanceStore::with_ledger();
    let report = reconcile(sweep_options(&provider, &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.status, SweepStatus::Swept, "{orphans:?}");
    assert_eq!((orphans.listed, orphans.deleting, orphans.found, orphans.destroyed), (10, 1, 9, 9), "{orphans:?}");
    assert_eq!(fake.deletes_of("going").await, 0, "a sandbox Daytona is destroying is never deleted again");
    let mut alive = fake.alive().await;
    alive.sort();
    assert_eq!(alive, ["bare0", "bare1", "going", "theirs0", "theirs1"]);
    for index in 0..9 {
        assert_eq!(fake.deletes_of(&format!("ours{index}")).await, 1);
    }
}

#[tokio::test]
async fn a_lagging_listing_shows_destroying_sandboxes_and_failed_deletes_are_retried() {
    let fake = start();
    fake.seed(sandboxes("ours", 6, json!({ OWNER_LABEL: "sandbox-reclaim" }))).await;
    fake.faults(json!({ "failDeleteEvery": 2, "deletedStayListedMs": 60_000 })).await;
    let provider = provider(&fake, KEY, 4);
    let store = InMemorySandboxInstanceStore::with_ledger();
    let first = reconcile(sweep_options(&provider, &store)).await.unwrap();
    let orphans = &first.providers[0].orphans;
    assert_eq!((orphans.found, orphans.destroyed, orphans.failed), (6, 3, 3));
    assert_eq!(store.list_leaks(Some("daytona")).await.unwrap().len(), 3);

    fake.faults(json!({ "failDeleteEvery": 0 })).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = reconcile(sweep_options(&provider, &store)).await.unwrap();
    assert_eq!(second.providers[0].leaks.destroyed, 3, "the ledger's entries are retried");
    let orphans = &second.providers[0].orphans;
    assert_eq!(orphans.found, 0, "nothing destroyed twice: {orphans:?}");
    assert!(!second.still_leaking);
    assert!(fake.alive().await.is_empty());
}

#[tokio::test]
async fn a_malformed_page_makes_the_sweep_unavailable() {
    let fake = start();
    fake.seed(sandboxes("ours", 5, json!({ OWNER_LABEL: "sandbox-reclaim" }))).await;
    fake.faults(json!({ "malformedPage": 2 })).await;
    let provider = provider(&fake, KEY, 2);
    let store = InMemorySandboxInstanceStore::with_ledger();
    let report = reconcile(sweep_options(&provider, &store)).await.unwrap();
    assert_eq!(report.providers[0].orphans.status, SweepStatus::Unavailable);
    assert!(report.still_leaking);
    assert_eq!(fake.alive().await.len(), 5);
}

#[tokio::test]
async fn sweeping_unlabelled_sandboxes_destroys_only_what_the_registry_names() {
    let fake = start();
    fake.seed(sandboxes("tan", 3, json!({}))).await;
    fake.seed(sandboxes("theirs", 1, json!({ OWNER_LABEL: "another-team" }))).await;
    let labelled_only = provider(&fake, KEY, 2);
    let unlabelled = DaytonaProvider::new(DaytonaConfig {
        api_key: Some(KEY.to_owned()),
        api_url: Some(fake.url.clone()),
        page_size: 2,
        sweep_unlabelled: true,
        ..DaytonaConfig::default()
    })
    .unwrap();
    let ids =
        hosted_support::Unlabelled { registered: "tan0", stranger: "tan1", referenced: "tan2", theirs: "theirs0" };
    hosted_support::sweeping_unlabelled_destroys_only_what_the_registry_names(
        &fake,
        "daytona",
        ids,
        &labelled_only,
        &unlabelled,
    )
    .await;
}

/// Daytona's page (`{items, nextCursor}`) for the scripted vendor.
fn scripted_pages() -> PageFormat {
    PageFormat {
        cursor_parameter: "cursor",
        page: |ids, next| {
            let items: Vec<Value> = ids
                .iter()
                .map(|id| {
                    json!({ "id": id, "state": "started", "createdAt": "2026-01-01T00:00:00.000Z",
                            "labels": { OWNER_LABEL: "sandbox-reclaim" } })
                })
                .collect();
            scripted::Answer { headers: vec![], body: json!({ "items": items, "nextCursor": next }).to_string() }
        },
    }
}

fn scripted_provider(url: &str, listing_ceilings: ListingCeilings) -> Box<dyn SandboxProvider> {
    let config = DaytonaConfig {
        api_key: Some(KEY.to_owned()),
        api_url: Some(url.to_owned()),
        page_size: 3,
        listing_ceilings,
        ..DaytonaConfig::default()
    };
    Box::new(DaytonaProvider::new(config).unwrap())
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
