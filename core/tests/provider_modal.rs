//! `ModalProvider` against the local Modal fake (tests/fakes/modal_fake.py,
//! proven by Modal's official client in tests/python/test_modal_fake.py):
//! the token pair and the `AuthTokenGet` token, the V1 and V2 calls by id
//! shape, every page of a tag-filtered listing, the lookup by id, and the
//! faults every hosted vendor meets, through `reconcile`. The fake runs
//! under the Python `SANDBOX_RECLAIM_FAKE_PYTHON` names; without it these
//! tests FAIL, never pass.
#![cfg(feature = "modal")]

mod hosted_support;

use std::time::{Duration, Instant};

use hosted_support::{record, sweep_options, Fake};
use sandbox_reclaim::options::provider::HostedSettings;
use sandbox_reclaim::providers::build_hosted;
use sandbox_reclaim::providers::hosted::modal;
use sandbox_reclaim::providers::HostedVendor;
use sandbox_reclaim::{
    reclaim_sandbox, reconcile, HostedError, HostedSandboxProvider, InMemorySandboxInstanceStore, LeakLedger,
    ModalConfig, ModalProvider, ProviderError, ReclaimOptions, ReclaimOutcome, RunRecord, RunStatus,
    SandboxInstanceStore, SweepStatus,
};
use serde_json::{json, Value};

const TOKEN_ID: &str = "ak-test-id";
const TOKEN_SECRET: &str = "as-test-secret";
/// The app the fake puts a sandbox seeded without one in.
const APP: &str = "ap-SandboxReclaimFakeApp0";
const OWNER: &str = "sandbox-reclaim";
const OWNER_LABEL: &str = "io.sandbox-reclaim.owner";
/// 2026-01-01, epoch seconds: long past every grace.
const OLD: u64 = 1_767_225_600;

fn start() -> Fake {
    Fake::start("modal_fake.py", &[])
}

fn settings(fake: &Fake, secret: &str) -> HostedSettings {
    let mut settings = HostedSettings::defaults(HostedVendor::Modal);
    settings.set_option(modal::TOKEN_ID, Some(TOKEN_ID.to_owned()));
    settings.set_option(modal::TOKEN_SECRET, Some(secret.to_owned()));
    settings.api_url = Some(fake.url.clone());
    settings.set_option(modal::APP_ID, Some(APP.to_owned()));
    settings.request_timeout = Duration::from_secs(10);
    settings
}

/// Built as the bindings and the command build it (`build_hosted`).
fn provider(fake: &Fake) -> Box<dyn HostedSandboxProvider> {
    build_hosted(HostedVendor::Modal, settings(fake, TOKEN_SECRET)).unwrap()
}

/// A V2 id (`sb-` and a ULID) minted at 2026-01-01.
fn v2_id(index: u32) -> String {
    const CROCKFORD: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    let millis = OLD * 1000;
    let time: String = (0..10).rev().map(|digit| CROCKFORD[((millis >> (digit * 5)) & 31) as usize] as char).collect();
    format!("sb-{time}{index:016}")
}

/// A V1 id (`sb-` and 22 base62 characters).
fn v1_id(index: u32) -> String {
    format!("sb-{index:022}")
}

/// A seed item: created `index` seconds after [`OLD`], tagged for `owner` (or untagged).
fn sandbox(id: &str, index: u32, owner: Option<&str>) -> Value {
    let tags = owner.map_or_else(|| json!({}), |owner| json!({ OWNER_LABEL: owner }));
    json!({ "id": id, "tags": tags, "createdAt": OLD + u64::from(index) })
}

/// `count` V2 sandboxes from `first` on, for `owner`; their ids.
async fn seed(fake: &Fake, first: u32, count: u32, owner: Option<&str>) -> Vec<String> {
    let ids: Vec<String> = (first..first + count).map(v2_id).collect();
    fake.seed(ids.iter().zip(first..).map(|(id, index)| sandbox(id, index, owner)).collect()).await;
    ids
}

/// The calls the fake saw of `method`.
async fn calls(fake: &Fake, method: &str) -> Vec<Value> {
    let state = fake.state().await;
    state["requests"].as_array().unwrap().iter().filter(|request| request["method"] == method).cloned().collect()
}

#[tokio::test]
async fn a_wrong_token_names_both_variables_and_never_the_secret() {
    let fake = start();
    seed(&fake, 0, 1, Some(OWNER)).await;
    let secret = "as-wrong-secret-value";
    let provider = build_hosted(HostedVendor::Modal, settings(&fake, secret)).unwrap();
    for error in [
        provider.destroy(&v2_id(0)).await.unwrap_err(),
        provider.destroy(&v1_id(0)).await.unwrap_err(),
        provider.list_sandboxes().await.unwrap_err(),
        provider.check_access().await.unwrap_err(),
    ] {
        let message = error.to_string();
        assert!(message.contains("MODAL_TOKEN_ID") && message.contains("MODAL_TOKEN_SECRET"), "{message}");
        assert!(!message.contains(secret) && !format!("{error:?}").contains(secret), "{message}");
        let ProviderError::Backend(inner) = &error else { panic!("{error:?}") };
        assert!(matches!(inner.downcast_ref::<HostedError>(), Some(HostedError::Unauthorized(_))), "{error:?}");
    }
    assert_eq!(fake.alive().await, [v2_id(0)]);
    provider_for_missing_token();
    // The right token passes, by the one exchange V2 calls need.
    provider_of(&fake).check_access().await.unwrap();
    assert_eq!(fake.state().await["tokensIssued"], 1);
}

fn provider_of(fake: &Fake) -> ModalProvider {
    let config = ModalConfig {
        token_id: Some(TOKEN_ID.into()),
        token_secret: Some(TOKEN_SECRET.into()),
        api_url: Some(fake.url.clone()),
        app_id: Some(APP.into()),
        request_timeout: Duration::from_secs(10),
        ..ModalConfig::default()
    };
    ModalProvider::new(config).unwrap()
}

fn provider_for_missing_token() {
    let config = ModalConfig { token_id: Some(String::new()), ..ModalConfig::default() };
    let message = ModalProvider::new(config).unwrap_err().to_string();
    assert!(message.contains("MODAL_TOKEN_ID") && message.contains("tokenId"), "{message}");
}

#[tokio::test]
async fn terminate_takes_the_call_of_the_ids_version_and_reads_finished_and_not_found_as_gone() {
    let fake = start();
    let (v1, v2) = (v1_id(1), v2_id(2));
    fake.seed(vec![sandbox(&v1, 1, Some(OWNER)), sandbox(&v2, 2, Some(OWNER)), sandbox(&v2_id(3), 3, Some(OWNER))])
        .await;
    let provider = provider(&fake);
    provider.destroy(&v1).await.unwrap();
    provider.destroy(&v2).await.unwrap();
    assert_eq!(fake.alive().await, [v2_id(3)]);
    provider.destroy(&v1).await.expect("a finished sandbox: terminate is success");
    provider.destroy(&v2).await.expect("a finished sandbox: terminate is success");
    provider.destroy(&v2_id(99)).await.expect("NOT_FOUND is gone");
    assert!(provider.destroy("sb-a/b").await.is_err(), "an id that is not one is refused before any call");
    let v1_calls: Vec<Value> = calls(&fake, "SandboxTerminate").await;
    let v2_calls: Vec<Value> = calls(&fake, "SandboxTerminateV2").await;
    assert!(v1_calls.iter().all(|call| call["id"] == v1.as_str()) && v1_calls.len() == 2, "{v1_calls:?}");
    assert_eq!(v2_calls.len(), 3, "{v2_calls:?}");
    assert!(v1_calls.iter().chain(&v2_calls).all(|call| call["authorized"] == true));
    // V2 calls carry the AuthTokenGet token: one exchange serves them all.
    assert_eq!(fake.state().await["tokensIssued"], 1);
}

#[tokio::test]
async fn the_listing_reads_every_page_of_our_tagged_live_sandboxes_within_the_app() {
    let fake = start();
    let ours = seed(&fake, 0, 9, Some(OWNER)).await;
    seed(&fake, 20, 2, Some("another-team")).await;
    seed(&fake, 30, 2, None).await;
    // Ours, but with another tag beside: the filter is all-of our one tag.
    let tagged = v2_id(40);
    fake.seed(vec![json!({ "id": tagged, "tags": { OWNER_LABEL: OWNER, "team": "x" }, "createdAt": OLD + 40 })]).await;
    // Ours in another app, and a finished one: neither is listed.
    fake.seed(vec![json!({ "id": v2_id(50), "appId": "ap-Other", "tags": { OWNER_LABEL: OWNER } })]).await;
    fake.seed(vec![json!({ "id": v2_id(60), "tags": { OWNER_LABEL: OWNER }, "finished": true })]).await;
    fake.faults(json!({ "pageSize": 4 })).await;
    let provider = provider(&fake);
    let listed = provider.list_sandboxes().await.unwrap();
    let mut ids: Vec<&str> = listed.iter().map(|sandbox| sandbox.id.as_str()).collect();
    ids.sort();
    let mut expected: Vec<&str> = ours.iter().map(String::as_str).chain([tagged.as_str()]).collect();
    expected.sort();
    assert_eq!(ids, expected);
    assert!(listed.iter().all(|sandbox| sandbox.owner.as_deref() == Some(OWNER)));
    let newest = listed.iter().find(|sandbox| sandbox.id == tagged).unwrap();
    assert_eq!(newest.created_at, Some((OLD + 40) * 1000));
    let pages = calls(&fake, "SandboxListV2").await;
    // 10 sandboxes, 4 a page: 3 pages, then the empty page that ends it.
    assert_eq!(pages.len(), 4, "{pages:?}");
    for page in &pages {
        assert_eq!(page["tags"], json!({ OWNER_LABEL: OWNER }), "{page}");
        assert_eq!((page["appId"].as_str(), page["includeFinished"].as_bool()), (Some(APP), Some(false)), "{page}");
        assert_eq!(page["environmentName"], "", "the client names no environment with an app: {page}");
    }
    let cursors: Vec<f64> = pages.iter().map(|page| page["beforeTimestamp"].as_f64().unwrap()).collect();
    assert_eq!(cursors[0], 0.0);
    assert!(cursors.windows(2).skip(1).all(|pair| pair[1] < pair[0]), "{cursors:?}");
}

#[tokio::test]
async fn without_an_app_it_lists_the_environment_and_with_neither_it_refuses() {
    let fake = start();
    seed(&fake, 0, 2, Some(OWNER)).await;
    fake.seed(vec![
        json!({ "id": v2_id(9), "appId": "ap-DevApp", "environment": "dev", "tags": { OWNER_LABEL: OWNER } }),
    ])
    .await;
    let mut environment = settings(&fake, TOKEN_SECRET);
    environment.set_option(modal::APP_ID, None);
    environment.set_option(modal::ENVIRONMENT, Some("dev".into()));
    let listed = build_hosted(HostedVendor::Modal, environment).unwrap().list_sandboxes().await.unwrap();
    assert_eq!(listed.iter().map(|sandbox| sandbox.id.clone()).collect::<Vec<_>>(), [v2_id(9)]);
    let page = &calls(&fake, "SandboxListV2").await[0];
    assert_eq!((page["appId"].as_str(), page["environmentName"].as_str()), (Some(""), Some("dev")));

    let mut neither = settings(&fake, TOKEN_SECRET);
    neither.set_option(modal::APP_ID, None);
    neither.set_option(modal::ENVIRONMENT, Some(String::new()));
    let provider = build_hosted(HostedVendor::Modal, neither).unwrap();
    let store = InMemorySandboxInstanceStore::with_ledger();
    let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!((orphans.status, orphans.destroyed), (SweepStatus::Unavailable, 0), "{orphans:?}");
    let error = orphans.error.clone().unwrap_or_default();
    assert!(error.contains("appId") && error.contains("deprecates"), "{error}");
    provider.destroy(&v2_id(0)).await.expect("a destroy needs no listing scope");
}

#[tokio::test]
async fn throttled_terminates_wait_for_modals_retry_policy_and_failures_fail() {
    let fake = start();
    let ids = seed(&fake, 0, 1, Some(OWNER)).await;
    let provider = provider(&fake);
    fake.faults(json!({ "failDeleteEvery": 1 })).await;
    let failed = provider.destroy(&ids[0]).await.unwrap_err().to_string();
    assert!(failed.contains("INTERNAL") && failed.contains("SandboxTerminateV2"), "{failed}");
    assert_eq!(fake.alive().await, ids);
    fake.faults(json!({ "failDeleteEvery": 0, "rateLimitDeletes": 2, "retryAfterSeconds": 0.3 })).await;
    let started = Instant::now();
    provider.destroy(&ids[0]).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(600), "{:?}", started.elapsed());
    assert!(fake.alive().await.is_empty());
    // A wait longer than a request is held for fails it (the ledger retries).
    let more = seed(&fake, 1, 1, Some(OWNER)).await;
    fake.faults(json!({ "rateLimitDeletes": 1, "retryAfterSeconds": 3600 })).await;
    let throttled = provider.destroy(&more[0]).await.unwrap_err().to_string();
    assert!(throttled.contains("RESOURCE_EXHAUSTED"), "{throttled}");
}

#[tokio::test]
async fn a_hanging_terminate_is_cut_by_the_deadline_and_reaches_the_ledger() {
    let fake = start();
    let ids = seed(&fake, 0, 1, Some(OWNER)).await;
    fake.faults(json!({ "hangDeletes": true })).await;
    let provider = provider(&fake);
    let store = InMemorySandboxInstanceStore::with_ledger();
    store.upsert(&record("k1", "modal", &ids[0])).await.unwrap();
    let run = RunRecord::new("run-1", "thread-1", RunStatus::Completed).with_sandbox_key("k1");
    let options = ReclaimOptions::new(provider.as_ref(), &store).with_destroy_timeout(Duration::from_millis(300));
    assert_eq!(reclaim_sandbox(&run, options).await.unwrap(), ReclaimOutcome::DestroyFailed);
    assert_eq!(fake.abandoned(1).await, 1, "the deadline dropped the call itself");
    let leaks = store.list_leaks(Some("modal")).await.unwrap();
    assert_eq!(leaks.len(), 1);
    let ledger = format!("{leaks:?}");
    assert!(!ledger.contains(TOKEN_SECRET) && !ledger.contains(TOKEN_ID), "{ledger}");
}

#[tokio::test]
async fn a_hanging_listing_is_cut_by_the_deadline_and_the_sweep_is_unavailable() {
    let fake = start();
    seed(&fake, 0, 2, Some(OWNER)).await;
    fake.faults(json!({ "hangLists": true })).await;
    let provider = provider(&fake);
    let store = InMemorySandboxInstanceStore::with_ledger();
    let mut options = sweep_options(provider.as_ref(), &store);
    options.destroy_timeout = Some(Duration::from_millis(300));
    let started = Instant::now();
    let report = reconcile(options).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let orphans = &report.providers[0].orphans;
    assert_eq!((orphans.status, orphans.destroyed), (SweepStatus::Unavailable, 0), "{orphans:?}");
    assert_eq!(fake.abandoned(1).await, 1);
    assert_eq!(fake.alive().await.len(), 2);
}

#[tokio::test]
async fn the_sweep_reads_repeated_sandboxes_once_and_destroys_each_once() {
    let fake = start();
    let ours = seed(&fake, 0, 9, Some(OWNER)).await;
    seed(&fake, 20, 2, Some("another-team")).await;
    let bare = seed(&fake, 30, 2, None).await;
    fake.faults(json!({ "repeatAcrossPages": true, "pageSize": 4 })).await;
    let provider = provider(&fake);
    let listed = provider.list_sandboxes().await.unwrap();
    let mut ids: Vec<&str> = listed.iter().map(|sandbox| sandbox.id.as_str()).collect();
    ids.dedup();
    assert_eq!((listed.len(), ids.len()), (9, 9), "{ids:?}");
    let store = InMemorySandboxInstanceStore::with_ledger();
    let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.status, SweepStatus::Swept, "{orphans:?}");
    assert_eq!((orphans.listed, orphans.found, orphans.destroyed), (9, 9, 9), "{orphans:?}");
    let mut alive = fake.alive().await;
    alive.sort();
    let mut expected: Vec<String> = seed_ids(20, 2).into_iter().chain(bare).collect();
    expected.sort();
    assert_eq!(alive, expected, "unlabelled and unregistered: never touched");
    for id in &ours {
        assert_eq!(fake.deletes_of(id).await, 1, "{id}");
    }
}

fn seed_ids(first: u32, count: u32) -> Vec<String> {
    (first..first + count).map(v2_id).collect()
}

#[tokio::test]
async fn failed_terminates_reach_the_ledger_and_a_lagging_listing_is_harmless() {
    let fake = start();
    let ours = seed(&fake, 0, 6, Some(OWNER)).await;
    // A terminated sandbox stays listed (as running) a minute: the lagging listing.
    fake.faults(json!({ "failDeleteEvery": 2, "deletedStayListedMs": 60_000, "pageSize": 4 })).await;
    let provider = provider(&fake);
    let store = InMemorySandboxInstanceStore::with_ledger();
    let first = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    assert_eq!(first.providers[0].orphans.failed, 3, "{:?}", first.providers[0]);
    let leaks = store.list_leaks(Some("modal")).await.unwrap();
    assert_eq!(leaks.len(), 3);
    assert!(!format!("{leaks:?}").contains(TOKEN_SECRET));
    fake.faults(json!({ "failDeleteEvery": 0 })).await;
    // The ledger's backoff (1 ms) must pass first: the store's clock is in milliseconds.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    assert_eq!(second.providers[0].leaks.destroyed, 3, "{:?}", second.providers[0]);
    assert!(fake.alive().await.is_empty());
    // Still listed though terminated: destroyed again at most once more, as success.
    let third = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    assert_eq!(third.providers[0].orphans.failed, 0, "{:?}", third.providers[0]);
    for id in &ours {
        assert!(fake.deletes_of(id).await <= 3, "{id}");
    }
    assert_eq!(fake.state().await["terminated"].as_array().unwrap().len(), 6);
}

#[tokio::test]
async fn a_malformed_page_or_a_cursor_cycle_makes_the_sweep_unavailable() {
    for fault in [json!({ "malformedPage": 2, "pageSize": 2 }), json!({ "cycleCursor": true, "pageSize": 3 })] {
        let fake = start();
        seed(&fake, 0, 9, Some(OWNER)).await;
        fake.faults(fault.clone()).await;
        let provider = provider(&fake);
        let store = InMemorySandboxInstanceStore::with_ledger();
        let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
        let orphans = &report.providers[0].orphans;
        assert_eq!((orphans.status, orphans.destroyed), (SweepStatus::Unavailable, 0), "{fault}: {orphans:?}");
        assert_eq!(fake.alive().await.len(), 9, "{fault}");
        let error = orphans.error.clone().unwrap_or_default();
        assert!(error.contains("SandboxListV2"), "{fault}: {error}");
    }
}

#[tokio::test]
async fn sweeping_unlabelled_sandboxes_destroys_only_what_the_registry_names() {
    let fake = start();
    let tan = seed(&fake, 0, 3, None).await;
    let theirs = seed(&fake, 10, 1, Some("another-team")).await;
    let labelled_only = build_hosted(HostedVendor::Modal, settings(&fake, TOKEN_SECRET)).unwrap();
    let mut all = settings(&fake, TOKEN_SECRET);
    all.sweep_unlabelled = true;
    let unlabelled = build_hosted(HostedVendor::Modal, all).unwrap();
    assert!(!unlabelled.can_lookup(), "the listing already takes every sandbox");
    let ids =
        hosted_support::Unlabelled { registered: &tan[0], stranger: &tan[1], referenced: &tan[2], theirs: &theirs[0] };
    hosted_support::sweeping_unlabelled_destroys_only_what_the_registry_names(
        &fake,
        "modal",
        ids,
        labelled_only.as_ref(),
        unlabelled.as_ref(),
    )
    .await;
    let unfiltered = calls(&fake, "SandboxListV2").await;
    assert!(unfiltered.iter().any(|page| page["tags"] == json!({})), "{unfiltered:?}");
}

#[tokio::test]
async fn registered_sandboxes_whose_records_are_gone_are_found_by_id() {
    let fake = start();
    let (registered, stranger, theirs, v1) = (v2_id(1), v2_id(2), v2_id(3), v1_id(4));
    let finished = v2_id(5);
    fake.seed(vec![
        sandbox(&registered, 1, None),
        sandbox(&stranger, 2, None),
        sandbox(&theirs, 3, Some("another-team")),
        json!({ "id": finished, "finished": true }),
    ])
    .await;
    let provider = provider(&fake);
    assert!(provider.can_lookup());
    let store = InMemorySandboxInstanceStore::with_ledger();
    for (key, id) in [("k-reg", &registered), ("k-theirs", &theirs), ("k-gone", &v2_id(6)), ("k-done", &finished)] {
        store.upsert(&record(key, "modal", id)).await.unwrap();
        store.delete(key).await.unwrap();
    }
    let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.status, SweepStatus::Swept, "{orphans:?}");
    assert_eq!((orphans.found, orphans.destroyed, orphans.foreign), (1, 1, 1), "{orphans:?}");
    let mut alive = fake.alive().await;
    alive.sort();
    let mut expected = vec![stranger.clone(), theirs.clone()];
    expected.sort();
    assert_eq!(alive, expected, "only the registered untagged one went");
    let waits = calls(&fake, "SandboxWaitV2").await;
    assert!(waits.iter().any(|call| call["id"] == registered.as_str()), "looked up by id: {waits:?}");
    assert!(!waits.iter().any(|call| call["id"] == stranger.as_str()), "never a stranger: {waits:?}");
    // Found by id directly: gone, finished and impossible ids are left out;
    // a V1 id is asked with the V1 call, and its creation time (its id
    // carries none) comes from one untagged listing of the app.
    fake.seed(vec![sandbox(&v1, 4, None)]).await;
    let lists_before = calls(&fake, "SandboxListV2").await.len();
    let ids = [stranger.clone(), v2_id(6), finished, "a/b".to_owned(), v1.clone()];
    let found = provider.lookup_sandboxes(&ids).await.unwrap();
    let read: Vec<(&str, Option<u64>, Option<&str>)> =
        found.iter().map(|sandbox| (sandbox.id.as_str(), sandbox.created_at, sandbox.owner.as_deref())).collect();
    assert_eq!(read, [(stranger.as_str(), Some(OLD * 1000), None), (v1.as_str(), Some((OLD + 4) * 1000), None)]);
    assert_eq!(calls(&fake, "SandboxWait").await.len(), 1);
    let listings = calls(&fake, "SandboxListV2").await;
    assert!(listings[lists_before..].iter().all(|page| page["tags"] == json!({})), "untagged: {listings:?}");
}

#[tokio::test]
async fn a_registered_untagged_v1_sandbox_whose_record_is_gone_is_destroyed() {
    // What a Modal client before 1.6 created (a V1 id) and an app left
    // unlabelled: the lookup finds it by id, the app's listing dates it.
    let fake = start();
    let (v1, stranger) = (v1_id(7), v1_id(8));
    fake.seed(vec![sandbox(&v1, 7, None), sandbox(&stranger, 8, None)]).await;
    let provider = provider(&fake);
    let store = InMemorySandboxInstanceStore::with_ledger();
    store.upsert(&record("k-v1", "modal", &v1)).await.unwrap();
    store.delete("k-v1").await.unwrap();
    let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.status, SweepStatus::Swept, "{orphans:?}");
    assert_eq!((orphans.found, orphans.destroyed), (1, 1), "{orphans:?}");
    assert_eq!(fake.alive().await, vec![stranger.clone()], "only the registered one went");
    assert_eq!(calls(&fake, "SandboxTerminate").await.len(), 1, "the V1 call for a V1 id");
}
