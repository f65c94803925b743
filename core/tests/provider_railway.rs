//! Railway against its fake (tests/fakes/railway.mjs, proven by the official
//! SDK): GraphQL over POST, both kinds of token, the required environment,
//! and the fault set every hosted vendor meets. Railway sandboxes carry no
//! labels, so ours are only those a record (or the store's registry) names:
//! by get, or with `sweep_unlabelled` by listing the whole environment.
#![cfg(feature = "hosted")]

mod hosted_support;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use hosted_support::{record, sweep_options, Fake, ListingOnly};
use sandbox_reclaim::options::provider::HostedSettings;
use sandbox_reclaim::providers::build_hosted;
use sandbox_reclaim::providers::hosted::railway;
use sandbox_reclaim::providers::HostedVendor;
use sandbox_reclaim::{
    reclaim_sandbox, reconcile, HostedError, HostedSandboxProvider, InMemorySandboxInstanceStore, InvalidInput,
    LeakLedger, ProviderError, ReclaimOptions, ReclaimOutcome, RunRecord, RunStatus, SandboxInstanceStore, SweepStatus,
};
use serde_json::{json, Value};

const TOKEN: &str = "railway_account_secret";
const PROJECT_TOKEN: &str = "railway_project_secret";
const ENVIRONMENT: &str = "env-test";
const OLD: &str = "2026-01-01T00:00:00.123Z";

/// The Railway variables the engine reads: tests that set or clear them hold this.
static VARIABLES: Mutex<()> = Mutex::new(());

fn start() -> Fake {
    Fake::start("railway.mjs", &["--token", TOKEN, "--project-token", PROJECT_TOKEN, "--environment", ENVIRONMENT])
}

/// The GraphQL endpoint (the fake's `url` is its origin, where `/_fake/` lives).
fn endpoint(fake: &Fake) -> String {
    fake.started["endpoint"].as_str().unwrap().to_owned()
}

fn settings(fake: &Fake, token: Option<&str>, page_size: u32) -> HostedSettings {
    let mut settings = HostedSettings::defaults(HostedVendor::Railway);
    settings.api_key = token.map(str::to_owned);
    settings.api_url = Some(endpoint(fake));
    settings.set_option(railway::ENVIRONMENT_ID, Some(ENVIRONMENT.to_owned()));
    settings.page_size = page_size;
    settings.request_timeout = Duration::from_secs(10);
    settings
}

fn build(settings: HostedSettings) -> Box<dyn HostedSandboxProvider> {
    build_hosted(HostedVendor::Railway, settings).unwrap()
}

fn provider(fake: &Fake) -> Box<dyn HostedSandboxProvider> {
    build(settings(fake, Some(TOKEN), 50))
}

/// Lists the whole environment: every sandbox unlabelled, the registry decides.
fn unlabelled(fake: &Fake, page_size: u32) -> Box<dyn HostedSandboxProvider> {
    let mut settings = settings(fake, Some(TOKEN), page_size);
    settings.sweep_unlabelled = true;
    build(settings)
}

/// `{prefix}{i}` for `i` in `0..count`, created long ago, in `status`.
fn items(prefix: &str, count: usize, status: &str) -> Vec<Value> {
    (0..count).map(|index| json!({ "id": format!("{prefix}{index}"), "status": status, "createdAt": OLD })).collect()
}

/// The requests the fake saw for GraphQL root field `field` naming sandbox `id`.
async fn calls(fake: &Fake, field: &str, id: &str) -> usize {
    let state = fake.state().await;
    let requests = state["requests"].as_array().unwrap();
    requests.iter().filter(|r| r["field"] == field && r["variables"]["id"] == id).count()
}

async fn destroys(fake: &Fake, id: &str) -> usize {
    calls(fake, "sandboxDestroy", id).await
}

/// Registers `ids` in `store`'s registry: each record written, then deleted.
async fn registered(store: &InMemorySandboxInstanceStore, ids: &[&str]) {
    for id in ids {
        store.upsert(&record(&format!("k-{id}"), "railway", id)).await.unwrap();
        store.delete(&format!("k-{id}")).await.unwrap();
    }
}

fn is_unauthorized(error: &ProviderError) -> bool {
    let ProviderError::Backend(inner) = error else { return false };
    matches!(inner.downcast_ref::<HostedError>(), Some(HostedError::Unauthorized(_)))
}

/// Sets (or clears) Railway's variables for `body`, restoring them after.
fn with_variables<T>(values: &[(&str, Option<&str>)], body: impl FnOnce() -> T) -> T {
    let _held = VARIABLES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let saved: Vec<(String, Option<String>)> =
        values.iter().map(|(name, _)| (name.to_string(), std::env::var(name).ok())).collect();
    for (name, value) in values {
        match value {
            Some(value) => std::env::set_var(name, value),
            None => std::env::remove_var(name),
        }
    }
    let result = body();
    for (name, value) in saved {
        match value {
            Some(value) => std::env::set_var(&name, value),
            None => std::env::remove_var(&name),
        }
    }
    result
}

#[tokio::test]
async fn an_account_token_goes_as_bearer_and_a_project_token_from_railway_token_as_project_access_token() {
    let fake = start();
    fake.seed(items("sb", 3, "RUNNING")).await;
    let bearer = unlabelled(&fake, 50);
    bearer.check_access().await.unwrap();
    assert_eq!(bearer.list_sandboxes().await.unwrap().len(), 3);
    bearer.destroy("sb0").await.unwrap();
    // RAILWAY_TOKEN is a project token, as the SDK reads it.
    let project = with_variables(&[("RAILWAY_TOKEN", Some(PROJECT_TOKEN)), ("RAILWAY_API_TOKEN", None)], || {
        let mut settings = settings(&fake, None, 50);
        settings.sweep_unlabelled = true;
        build(settings)
    });
    project.check_access().await.unwrap();
    let ids: Vec<String> = project.list_sandboxes().await.unwrap().into_iter().map(|sandbox| sandbox.id).collect();
    assert_eq!(ids, ["sb1", "sb2"]);
    project.destroy("sb1").await.unwrap();
    assert_eq!(fake.alive().await, ["sb2"]);
    let state = fake.state().await;
    let auth: Vec<&str> = state["requests"].as_array().unwrap().iter().map(|r| r["auth"].as_str().unwrap()).collect();
    assert_eq!(auth, ["bearer", "bearer", "bearer", "project-token", "project-token", "project-token"]);
    // Every call is a POST to the one endpoint, with the SDK's operation names.
    let operations: Vec<&str> =
        state["requests"].as_array().unwrap().iter().map(|r| r["operation"].as_str().unwrap()).collect();
    assert_eq!(operations[..3], ["RailwaySandboxes", "RailwaySandboxes", "RailwaySandboxDestroy"]);
    assert_eq!(state["requests"][1]["variables"], json!({ "environmentId": ENVIRONMENT, "first": 50 }));
    assert!(!state.to_string().contains(TOKEN) && !state.to_string().contains(PROJECT_TOKEN));
    // The `apiKey` option is an account token: a project token there is refused.
    let misplaced = build(settings(&fake, Some(PROJECT_TOKEN), 50));
    assert!(is_unauthorized(&misplaced.check_access().await.unwrap_err()));
}

#[tokio::test]
async fn a_wrong_token_is_unauthorized_naming_the_variables_and_never_the_token() {
    let fake = start();
    fake.seed(items("sb", 1, "RUNNING")).await;
    let secret = "railway_wrong_secret";
    let wrong = build(settings(&fake, Some(secret), 50));
    let wrong_project = with_variables(&[("RAILWAY_TOKEN", Some(secret)), ("RAILWAY_API_TOKEN", None)], || {
        build(settings(&fake, None, 50))
    });
    // A right token, an environment it cannot see: refused too.
    let mut elsewhere = settings(&fake, Some(TOKEN), 50);
    elsewhere.set_option(railway::ENVIRONMENT_ID, Some("env-unknown".to_owned()));
    let elsewhere = build(elsewhere);
    for provider in [&wrong, &wrong_project, &elsewhere] {
        for error in [
            provider.destroy("sb0").await.unwrap_err(),
            provider.list_sandboxes().await.unwrap_err(),
            provider.check_access().await.unwrap_err(),
            provider.lookup_sandboxes(&["sb0".to_owned()]).await.unwrap_err(),
        ] {
            let message = error.to_string();
            assert!(is_unauthorized(&error), "{error:?}");
            for variable in ["RAILWAY_TOKEN", "RAILWAY_API_TOKEN", "RAILWAY_ENVIRONMENT_ID"] {
                assert!(message.contains(variable), "{message}");
            }
            assert!(!message.contains(secret) && !message.contains(TOKEN), "{message}");
        }
    }
    let message = wrong_project.check_access().await.unwrap_err().to_string();
    assert!(message.contains("Project Token not found"), "{message}");
    assert_eq!(fake.alive().await, ["sb0"]);
    assert_eq!(fake.state().await["destroys"], json!([]));
}

#[tokio::test]
async fn the_environment_is_required_and_named_before_any_request() {
    let fake = start();
    let error = with_variables(&[("RAILWAY_ENVIRONMENT_ID", None)], || {
        let mut settings = settings(&fake, Some(TOKEN), 50);
        settings.set_option(railway::ENVIRONMENT_ID, None);
        build_hosted(HostedVendor::Railway, settings).err().expect("no environment: refused")
    });
    let ProviderError::Backend(inner) = &error else { panic!("{error:?}") };
    assert_eq!(inner.downcast_ref::<InvalidInput>().map(|invalid| invalid.field), Some("environmentId"), "{error}");
    assert!(error.to_string().contains("RAILWAY_ENVIRONMENT_ID"), "{error}");
    // From the variable when no option gives it.
    let from_variable = with_variables(&[("RAILWAY_ENVIRONMENT_ID", Some(ENVIRONMENT))], || {
        let mut settings = settings(&fake, Some(TOKEN), 50);
        settings.set_option(railway::ENVIRONMENT_ID, None);
        build(settings)
    });
    assert!(fake.state().await["requests"].as_array().unwrap().is_empty(), "nothing sent");
    from_variable.check_access().await.unwrap();
    let error = build_hosted(HostedVendor::Railway, settings(&fake, Some(""), 50))
        .err()
        .expect("no token: refused")
        .to_string();
    assert!(error.contains("RAILWAY_TOKEN or RAILWAY_API_TOKEN"), "{error}");
}

#[tokio::test]
async fn destroy_ends_the_sandbox_and_reads_already_gone_as_success() {
    let fake = start();
    fake.seed(items("sb", 2, "RUNNING")).await;
    fake.seed(items("failed", 1, "FAILED")).await;
    let provider = provider(&fake);
    provider.destroy("sb0").await.unwrap();
    assert_eq!(fake.state().await["statuses"]["sb0"], "DESTROYED");
    // Gone: "Sandbox not found" (a GraphQL error under HTTP 200), or a null sandboxDestroy.
    provider.destroy("sb0").await.unwrap_or_else(|error| panic!("again is success: {error}"));
    provider.destroy("never-existed").await.unwrap_or_else(|error| panic!("unknown: {error}"));
    fake.faults(json!({ "destroyMissing": "null" })).await;
    provider.destroy("sb0").await.unwrap_or_else(|error| panic!("null: {error}"));
    assert!(provider.destroy("a/b").await.is_err(), "a bad id is refused");
    // FAILED is terminal but listed: destroying it is harmless.
    provider.destroy("failed0").await.unwrap();
    assert_eq!(fake.alive().await, ["sb1"]);
    let listed = unlabelled(&fake, 50).list_sandboxes().await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|sandbox| sandbox.id.as_str()).collect();
    assert_eq!(ids, ["sb1"], "destroyed ones are never listed");
    assert_eq!(listed[0].created_at, Some(1_767_225_600_123), "createdAt with its fraction");
    assert_eq!(listed[0].owner.as_deref(), Some(""), "no labels: unlabelled");
}

#[tokio::test]
async fn failed_destroys_reach_the_ledger_without_the_credential_and_are_retried_once() {
    let fake = start();
    fake.seed(items("sb", 4, "RUNNING")).await;
    fake.faults(json!({ "failDestroyEvery": 2 })).await;
    let provider = provider(&fake);
    let store = InMemorySandboxInstanceStore::with_ledger();
    for index in 0..4 {
        let key = format!("k{index}");
        store.upsert(&record(&key, "railway", &format!("sb{index}"))).await.unwrap();
        let run = RunRecord::new(format!("run-{index}"), "thread-1", RunStatus::Completed).with_sandbox_key(&key);
        let options = ReclaimOptions::new(provider.as_ref(), &store).with_destroy_timeout(Duration::from_secs(5));
        let expected = if index % 2 == 1 { ReclaimOutcome::DestroyFailed } else { ReclaimOutcome::Destroyed };
        assert_eq!(reclaim_sandbox(&run, options).await.unwrap(), expected, "sb{index}");
    }
    let leaks = store.list_leaks(Some("railway")).await.unwrap();
    assert_eq!(leaks.len(), 2, "{leaks:?}");
    for leak in &leaks {
        let error = &leak.last_error;
        assert!(error.contains("sandboxDestroy with an error: Problem processing request"), "{error}");
        assert!(!error.contains(TOKEN), "{error}");
    }
    // Under HTTP 500 too.
    fake.faults(json!({ "failDestroyEvery": 1, "failDestroyStatus": 500 })).await;
    let error = provider.destroy("sb1").await.unwrap_err().to_string();
    assert!(error.contains("HTTP 500") && error.contains("Problem processing request"), "{error}");
    fake.faults(json!({ "failDestroyEvery": 0 })).await;
    // The ledger's backoff (1 ms) must pass first: the store's clock is in milliseconds.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    assert_eq!(second.providers[0].leaks.destroyed, 2, "{:?}", second.providers[0]);
    assert!(fake.alive().await.is_empty());
    assert!(store.list_leaks(Some("railway")).await.unwrap().is_empty());
    let third = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    assert_eq!((third.providers[0].leaks.due, third.providers[0].orphans.found), (0, 0), "{:?}", third.providers[0]);
    for (id, count) in [("sb0", 1), ("sb1", 3), ("sb2", 1), ("sb3", 2)] {
        assert_eq!(destroys(&fake, id).await, count, "{id}");
    }
}

#[tokio::test]
async fn rate_limits_wait_for_retry_after() {
    let fake = start();
    fake.seed(items("sb", 1, "RUNNING")).await;
    fake.faults(json!({ "rateLimitDestroys": 1, "retryAfterSeconds": 0.3 })).await;
    let provider = provider(&fake);
    let started = Instant::now();
    provider.destroy("sb0").await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300), "{:?}", started.elapsed());
    assert!(fake.alive().await.is_empty());
    assert_eq!(destroys(&fake, "sb0").await, 2);
}

#[tokio::test]
async fn a_lagging_list_showing_destroying_sandboxes_is_harmless() {
    let fake = start();
    fake.seed(items("sb", 3, "RUNNING")).await;
    fake.seed(items("going", 1, "DESTROYING")).await;
    fake.faults(json!({ "destroyingMs": 60_000 })).await;
    let provider = unlabelled(&fake, 2);
    let store = InMemorySandboxInstanceStore::with_ledger();
    registered(&store, &["sb0", "sb1", "sb2", "going0"]).await;
    let first = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &first.providers[0].orphans;
    assert_eq!(orphans.status, SweepStatus::Swept, "{orphans:?}");
    assert_eq!((orphans.listed, orphans.deleting, orphans.found, orphans.destroyed), (4, 1, 3, 3), "{orphans:?}");
    // The destroyed ones still list, DESTROYING: reported, never destroyed again.
    let second = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &second.providers[0].orphans;
    assert_eq!((orphans.listed, orphans.deleting, orphans.found), (4, 4, 0), "{orphans:?}");
    for id in ["sb0", "sb1", "sb2"] {
        assert_eq!(destroys(&fake, id).await, 1, "{id}");
    }
    assert_eq!(destroys(&fake, "going0").await, 0);
    // Read by get, a DESTROYING one is deleting too.
    let found = provider.lookup_sandboxes(&["sb0".to_owned()]).await.unwrap();
    assert!(found[0].deleting, "{found:?}");
}

#[tokio::test]
async fn repeated_items_are_listed_once() {
    let fake = start();
    fake.seed(items("sb", 9, "RUNNING")).await;
    fake.faults(json!({ "repeatAcrossPages": true })).await;
    let provider = unlabelled(&fake, 4);
    let listed = provider.list_sandboxes().await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|sandbox| sandbox.id.as_str()).collect();
    assert_eq!(ids, ["sb0", "sb1", "sb2", "sb3", "sb4", "sb5", "sb6", "sb7", "sb8"]);
    let state = fake.state().await;
    let pages: Vec<&Value> =
        state["requests"].as_array().unwrap().iter().filter(|r| r["field"] == "sandboxes").collect();
    assert_eq!(pages.len(), 3);
    assert!(pages[1]["variables"]["after"].is_string(), "the next page by pageInfo.endCursor: {:?}", pages[1]);
}

#[tokio::test]
async fn a_cursor_cycle_or_a_malformed_page_makes_the_sweep_unavailable() {
    for (faults, why) in
        [(json!({ "cycleCursor": true }), "cursor cycle"), (json!({ "malformedPage": 2 }), "vouch for")]
    {
        let fake = start();
        fake.seed(items("sb", 9, "RUNNING")).await;
        fake.faults(faults).await;
        let provider = unlabelled(&fake, 3);
        let error = provider.list_sandboxes().await.expect_err("the listing fails").to_string();
        assert!(error.contains(why) && error.contains("POST sandboxes"), "{error}");
        let store = InMemorySandboxInstanceStore::with_ledger();
        registered(&store, &["sb0", "sb4", "sb8"]).await;
        let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
        let orphans = &report.providers[0].orphans;
        assert_eq!((orphans.status, orphans.destroyed), (SweepStatus::Unavailable, 0), "{why}: {orphans:?}");
        assert_eq!(fake.alive().await.len(), 9, "{why}");
    }
}

#[tokio::test]
async fn a_hanging_destroy_is_cut_by_its_deadline_and_reaches_the_ledger() {
    let fake = start();
    fake.seed(items("sb", 1, "RUNNING")).await;
    fake.faults(json!({ "hangDestroys": true })).await;
    let provider = provider(&fake);
    let store = InMemorySandboxInstanceStore::with_ledger();
    store.upsert(&record("k1", "railway", "sb0")).await.unwrap();
    let run = RunRecord::new("run-1", "thread-1", RunStatus::Completed).with_sandbox_key("k1");
    let options = ReclaimOptions::new(provider.as_ref(), &store).with_destroy_timeout(Duration::from_millis(300));
    assert_eq!(reclaim_sandbox(&run, options).await.unwrap(), ReclaimOutcome::DestroyFailed);
    assert_eq!(fake.abandoned(1).await, 1, "the deadline dropped the request itself");
    assert_eq!(store.list_leaks(Some("railway")).await.unwrap().len(), 1);
    assert_eq!(fake.alive().await, ["sb0"]);
}

#[tokio::test]
async fn a_hanging_list_makes_the_sweep_unavailable() {
    let fake = start();
    fake.seed(items("sb", 2, "RUNNING")).await;
    fake.faults(json!({ "hangLists": true })).await;
    let mut settings = settings(&fake, Some(TOKEN), 50);
    settings.sweep_unlabelled = true;
    settings.request_timeout = Duration::from_millis(400);
    let provider = build(settings);
    let store = InMemorySandboxInstanceStore::with_ledger();
    registered(&store, &["sb0"]).await;
    let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!((orphans.status, orphans.destroyed), (SweepStatus::Unavailable, 0), "{orphans:?}");
    let error = orphans.error.as_deref().unwrap_or_default();
    assert!(error.contains("timed out"), "{error}");
    assert_eq!(fake.alive().await, ["sb0", "sb1"]);
}

#[tokio::test]
async fn sweeping_unlabelled_destroys_only_what_the_registry_names() {
    let fake = start();
    fake.seed(vec![
        json!({ "id": "reg-1", "createdAt": OLD }),
        json!({ "id": "stranger-1", "createdAt": OLD }),
        json!({ "id": "referenced-1", "createdAt": OLD }),
    ])
    .await;
    let store = InMemorySandboxInstanceStore::with_ledger();
    registered(&store, &["reg-1"]).await;
    store.upsert(&record("k-referenced", "railway", "referenced-1")).await.unwrap();
    // The default owner filter: nothing listed is ours (no labels).
    let labelled_only = provider(&fake);
    let listing_only = ListingOnly(labelled_only.as_ref());
    let report = reconcile(sweep_options(&listing_only, &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!((orphans.status, orphans.listed, orphans.destroyed), (SweepStatus::Swept, 0, 0), "{orphans:?}");

    let everything = unlabelled(&fake, 2);
    assert!(!everything.can_lookup(), "the listing already takes every sandbox");
    let report = reconcile(sweep_options(everything.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.status, SweepStatus::Swept, "{orphans:?}");
    let counts = (orphans.listed, orphans.foreign, orphans.referenced, orphans.found, orphans.destroyed);
    assert_eq!(counts, (3, 1, 1, 1, 1), "{orphans:?}");
    assert_eq!(fake.alive().await, ["referenced-1", "stranger-1"]);
    assert_eq!(destroys(&fake, "reg-1").await, 1);
    assert_eq!(destroys(&fake, "stranger-1").await + calls(&fake, "sandbox", "stranger-1").await, 0);
}

#[tokio::test]
async fn registered_sandboxes_whose_records_are_gone_are_found_by_get_and_destroyed() {
    let fake = start();
    fake.seed(vec![
        json!({ "id": "reg-1", "createdAt": OLD }),
        json!({ "id": "failed-1", "status": "FAILED", "createdAt": OLD }),
        json!({ "id": "stranger-1", "createdAt": OLD }),
        json!({ "id": "tomb-1", "status": "DESTROYED", "createdAt": OLD }),
    ])
    .await;
    fake.faults(json!({ "tombstones": true })).await;
    let provider = provider(&fake);
    assert!(provider.can_lookup());
    let store = InMemorySandboxInstanceStore::with_ledger();
    registered(&store, &["reg-1", "failed-1", "tomb-1", "gone-1"]).await;
    let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.status, SweepStatus::Swept, "{orphans:?}");
    // Listed: what the (empty) listing and the lookup found.
    assert_eq!((orphans.listed, orphans.found, orphans.destroyed), (2, 2, 2), "{orphans:?}");
    assert_eq!(fake.alive().await, ["stranger-1"]);
    for id in ["reg-1", "failed-1", "tomb-1", "gone-1"] {
        assert_eq!(calls(&fake, "sandbox", id).await, 1, "{id}: looked up by id");
    }
    assert_eq!(destroys(&fake, "tomb-1").await + destroys(&fake, "gone-1").await, 0, "gone: never destroyed");
    assert_eq!(destroys(&fake, "stranger-1").await + calls(&fake, "sandbox", "stranger-1").await, 0);
}
