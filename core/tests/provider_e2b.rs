//! `E2bProvider` against the local E2B fake (tests/fakes/e2b.mjs, proven by
//! E2B's official SDK in tests/node/e2b-fake.test.mjs): honest destroys,
//! every page of an owner-filtered listing, and the faults a real fleet
//! meets. The fake runs under `node`, which `make test` has; without it these
//! tests FAIL, never pass.
#![cfg(feature = "e2b")]

use std::time::{Duration, Instant};

use sandbox_reclaim::{
    reclaim_sandbox, reconcile, E2bConfig, E2bProvider, HostedError, HostedSandboxProvider,
    InMemorySandboxInstanceStore, LeakLedger, ProviderError, ReclaimOptions, ReclaimOutcome, ReconcileOptions,
    RunRecord, RunStatus, SandboxInstanceRecord, SandboxInstanceStore, SandboxProvider, SweepStatus,
};
use serde_json::json;

const KEY: &str = "e2b_test_key";
const OWNER_LABEL: &str = "io.sandbox-reclaim.owner";

mod hosted_support;

use hosted_support::scripted::{self, PageFormat};
use hosted_support::Fake;
use sandbox_reclaim::options::provider::ListingCeilings;
use serde_json::Value;

fn start() -> Fake {
    Fake::start("e2b.mjs", &["--key", KEY])
}

fn provider(fake: &Fake, page_size: u32) -> E2bProvider {
    provider_with_key(fake, KEY, page_size)
}

fn provider_with_key(fake: &Fake, key: &str, page_size: u32) -> E2bProvider {
    let config = E2bConfig {
        api_key: Some(key.to_owned()),
        api_url: Some(fake.url.clone()),
        page_size,
        request_timeout: Duration::from_secs(10),
        ..E2bConfig::default()
    };
    E2bProvider::new(config).unwrap()
}

/// Seeds sandboxes `{prefix}{i:03}` started long ago, under `owner` (or unlabelled).
async fn seed(fake: &Fake, prefix: &str, count: usize, owner: Option<&str>) {
    let sandboxes = (0..count)
        .map(|index| {
            let metadata = owner.map_or_else(|| json!({}), |owner| json!({ OWNER_LABEL: owner }));
            let state = if index % 2 == 0 { "running" } else { "paused" };
            json!({ "sandboxID": format!("{prefix}{index:03}"), "startedAt": "2026-01-01T00:00:00.000Z",
                    "metadata": metadata, "state": state })
        })
        .collect();
    fake.seed(sandboxes).await;
}

fn sweep_options<'a>(provider: &'a E2bProvider, store: &'a InMemorySandboxInstanceStore) -> ReconcileOptions<'a> {
    let mut options = ReconcileOptions::new(vec![provider as &dyn SandboxProvider], store);
    options.orphan_grace = Duration::from_secs(60);
    options.backoff = Duration::from_millis(1);
    options.max_backoff = Duration::from_millis(1);
    options
}

#[tokio::test]
async fn destroy_kills_permanently_and_reads_not_found_as_gone() {
    let fake = start();
    seed(&fake, "sbx", 2, Some("sandbox-reclaim")).await;
    let provider = provider(&fake, 100);
    provider.destroy("sbx000").await.unwrap();
    assert_eq!(fake.alive().await, ["sbx001"]);
    provider.destroy("sbx000").await.expect("already gone is success");
    provider.destroy("never-existed").await.expect("unknown is gone");
    assert!(provider.destroy("../v2/sandboxes").await.is_err(), "an id that is not one is refused before any request");
    assert_eq!(fake.deletes_of("sbx000").await, 2);
}

#[tokio::test]
async fn a_wrong_key_names_the_variable_to_set_and_never_the_key() {
    let fake = start();
    seed(&fake, "sbx", 1, Some("sandbox-reclaim")).await;
    let refused = provider_with_key(&fake, "e2b_wrong_secret_value", 100);
    for error in [
        refused.destroy("sbx000").await.unwrap_err(),
        refused.list_sandboxes().await.unwrap_err(),
        refused.check_access().await.unwrap_err(),
    ] {
        let message = error.to_string();
        assert!(message.contains("E2B_API_KEY") && message.contains("401"), "{message}");
        assert!(!message.contains("e2b_wrong_secret_value"), "{message}");
        let ProviderError::Backend(inner) = &error else { panic!("{error:?}") };
        assert!(matches!(inner.downcast_ref::<HostedError>(), Some(HostedError::Unauthorized(_))), "{error:?}");
    }
    assert_eq!(fake.alive().await, ["sbx000"]);
    provider(&fake, 100).check_access().await.expect("the right key is accepted");
}

#[tokio::test]
async fn server_errors_fail_the_destroy_and_rate_limits_wait_for_retry_after() {
    let fake = start();
    seed(&fake, "sbx", 2, Some("sandbox-reclaim")).await;
    let provider = provider(&fake, 100);
    fake.faults(json!({ "failDeleteEvery": 1 })).await;
    let failed = provider.destroy("sbx000").await.unwrap_err().to_string();
    assert!(failed.contains("HTTP 500") && failed.contains("internal server error"), "{failed}");
    assert_eq!(fake.alive().await, ["sbx000", "sbx001"]);

    fake.faults(json!({ "failDeleteEvery": 0, "rateLimitDeletes": 2, "retryAfterSeconds": 0.4 })).await;
    let started = Instant::now();
    provider.destroy("sbx000").await.expect("a 429 is waited out");
    assert!(started.elapsed() >= Duration::from_millis(800), "waited {:?}", started.elapsed());
    assert_eq!(fake.alive().await, ["sbx001"]);
}

#[tokio::test]
async fn a_hanging_delete_is_cut_by_the_destroy_deadline_and_reaches_the_ledger() {
    let fake = start();
    seed(&fake, "sbx", 1, Some("sandbox-reclaim")).await;
    fake.faults(json!({ "hangDeletes": true })).await;
    let provider = provider(&fake, 100);
    let store = InMemorySandboxInstanceStore::with_ledger();
    let record = SandboxInstanceRecord {
        key: "k1".into(),
        provider: "e2b".into(),
        provider_sandbox_id: "sbx000".into(),
        latest_snapshot_id: None,
        thread_id: "thread-1".into(),
        latest_run_id: None,
        updated_at: 1,
    };
    store.upsert(&record).await.unwrap();
    let run = RunRecord::new("run-1", "thread-1", RunStatus::Completed).with_sandbox_key("k1");
    let started = Instant::now();
    let options = ReclaimOptions::new(&provider, &store).with_destroy_timeout(Duration::from_millis(300));
    let outcome = reclaim_sandbox(&run, options).await.unwrap();
    assert_eq!(outcome, ReclaimOutcome::DestroyFailed);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(fake.abandoned(1).await, 1, "the deadline dropped the HTTP request itself");
    let leaks = store.list_leaks(Some("e2b")).await.unwrap();
    assert_eq!(leaks.iter().map(|leak| leak.provider_sandbox_id.as_str()).collect::<Vec<_>>(), ["sbx000"]);
}

#[tokio::test]
async fn the_sweep_lists_every_owned_page_once_and_touches_nothing_else() {
    let fake = start();
    seed(&fake, "ours", 10, Some("sandbox-reclaim")).await;
    seed(&fake, "theirs", 3, Some("another-team")).await;
    seed(&fake, "unlabelled", 2, None).await;
    fake.faults(json!({ "repeatAcrossPages": true })).await;
    let provider = provider(&fake, 3);
    let listed = provider.list_sandboxes().await.unwrap();
    let mut ids: Vec<&str> = listed.iter().map(|sandbox| sandbox.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!((listed.len(), ids.len()), (10, 10), "pages repeat an item, listed once: {ids:?}");
    assert!(listed.iter().all(|sandbox| sandbox.owner.as_deref() == Some("sandbox-reclaim")));
    assert!(listed.iter().all(|sandbox| sandbox.created_at == Some(1_767_225_600_000)));

    let store = InMemorySandboxInstanceStore::with_ledger();
    let report = reconcile(sweep_options(&provider, &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.status, SweepStatus::Swept);
    assert_eq!((orphans.listed, orphans.found, orphans.destroyed), (10, 10, 10));
    let mut alive = fake.alive().await;
    alive.sort();
    assert_eq!(alive, ["theirs000", "theirs001", "theirs002", "unlabelled000", "unlabelled001"]);
    for index in 0..10 {
        assert_eq!(fake.deletes_of(&format!("ours{index:03}")).await, 1, "ours{index:03} destroyed once");
    }
    assert!(!report.still_leaking);
}

#[tokio::test]
async fn a_malformed_page_or_a_failing_listing_makes_the_sweep_unavailable() {
    let fake = start();
    seed(&fake, "ours", 5, Some("sandbox-reclaim")).await;
    let provider = provider(&fake, 2);
    let store = InMemorySandboxInstanceStore::with_ledger();
    fake.faults(json!({ "malformedPage": 2 })).await;
    let report = reconcile(sweep_options(&provider, &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.status, SweepStatus::Unavailable);
    assert!(orphans.error.as_deref().unwrap_or_default().contains("cannot vouch for"), "{orphans:?}");
    assert!(report.still_leaking);
    assert_eq!(fake.alive().await.len(), 5, "nothing destroyed");

    fake.faults(json!({ "malformedPage": 0, "hangLists": true })).await;
    let mut options = sweep_options(&provider, &store);
    options.destroy_timeout = Some(Duration::from_millis(300));
    let report = reconcile(options).await.unwrap();
    assert_eq!(report.providers[0].orphans.status, SweepStatus::Unavailable);
    assert_eq!(fake.alive().await.len(), 5, "nothing destroyed");
}

#[tokio::test]
async fn failed_deletes_reach_the_ledger_and_a_lagging_listing_is_never_destroyed_twice() {
    let fake = start();
    seed(&fake, "ours", 6, Some("sandbox-reclaim")).await;
    fake.faults(json!({ "failDeleteEvery": 2, "deletedStayListedMs": 60_000 })).await;
    let provider = provider(&fake, 4);
    let store = InMemorySandboxInstanceStore::with_ledger();

    let first = reconcile(sweep_options(&provider, &store)).await.unwrap();
    let orphans = &first.providers[0].orphans;
    assert_eq!((orphans.found, orphans.destroyed, orphans.failed), (6, 3, 3));
    assert!(first.still_leaking);
    assert_eq!(store.list_leaks(Some("e2b")).await.unwrap().len(), 3, "each failed destroy is in the ledger");

    fake.faults(json!({ "failDeleteEvery": 0 })).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = reconcile(sweep_options(&provider, &store)).await.unwrap();
    assert_eq!(second.providers[0].leaks.destroyed, 3, "the next pass retries the ledger's entries");
    let orphans = &second.providers[0].orphans;
    assert_eq!(orphans.listed, 6, "destroyed sandboxes are still listed");
    assert_eq!(orphans.found, 0, "and never swept again: {orphans:?}");
    assert!(fake.alive().await.is_empty());
    assert!(store.list_leaks(Some("e2b")).await.unwrap().is_empty());
    assert!(!second.still_leaking);
    for index in 0..6 {
        let deletes = fake.deletes_of(&format!("ours{index:03}")).await;
        assert!(deletes <= 2, "ours{index:03}: {deletes} deletes");
    }
}

#[tokio::test]
async fn sweeping_unlabelled_sandboxes_destroys_only_what_the_registry_names() {
    let fake = start();
    seed(&fake, "tan", 3, None).await;
    seed(&fake, "theirs", 1, Some("another-team")).await;
    let labelled_only = provider(&fake, 2);
    let unlabelled = E2bProvider::new(E2bConfig {
        api_key: Some(KEY.to_owned()),
        api_url: Some(fake.url.clone()),
        page_size: 2,
        sweep_unlabelled: true,
        ..E2bConfig::default()
    })
    .unwrap();
    let ids = hosted_support::Unlabelled {
        registered: "tan000",
        stranger: "tan001",
        referenced: "tan002",
        theirs: "theirs000",
    };
    hosted_support::sweeping_unlabelled_destroys_only_what_the_registry_names(
        &fake,
        "e2b",
        ids,
        &labelled_only,
        &unlabelled,
    )
    .await;
}

/// E2B's page (an array, the next token in `X-Next-Token`) for the scripted vendor.
fn scripted_pages() -> PageFormat {
    PageFormat {
        cursor_parameter: "nextToken",
        page: |ids, next| {
            let items: Vec<Value> = ids
                .iter()
                .map(|id| {
                    json!({ "sandboxID": id, "startedAt": "2026-01-01T00:00:00.000Z", "state": "running",
                            "metadata": { OWNER_LABEL: "sandbox-reclaim" } })
                })
                .collect();
            let headers = next.map(|next| vec![("x-next-token".to_owned(), next.to_owned())]).unwrap_or_default();
            scripted::Answer { headers, body: Value::Array(items).to_string() }
        },
    }
}

fn scripted_provider(url: &str, listing_ceilings: ListingCeilings) -> Box<dyn SandboxProvider> {
    let config = E2bConfig {
        api_key: Some(KEY.to_owned()),
        api_url: Some(url.to_owned()),
        page_size: 3,
        listing_ceilings,
        ..E2bConfig::default()
    };
    Box::new(E2bProvider::new(config).unwrap())
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
