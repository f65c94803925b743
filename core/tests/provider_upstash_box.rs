//! `UpstashBoxProvider` (the `upstash-box` entry on the hosted engine)
//! against the local Upstash Box fake (tests/fakes/upstash-box.mjs, proven by
//! the official SDKs in tests/node/upstash-box-fake.test.mjs and
//! tests/python/test_upstash_box_fake.py), built as the bindings and the
//! command build it (`build_hosted`): the delete and its "already gone"
//! answers, the listing filtered by our `sr:<owner>` label (no paging), the
//! lookup by id, and the faults every hosted vendor meets, through
//! `reconcile`. The fake runs under `node`; without it these tests FAIL,
//! never pass.
#![cfg(feature = "hosted")]

mod hosted_support;

use std::time::{Duration, Instant};

use hosted_support::{record, sweep_options, Fake};
use sandbox_reclaim::options::provider::HostedSettings;
use sandbox_reclaim::providers::build_hosted;
use sandbox_reclaim::providers::hosted::upstash_box::UPSTASH_BOX_OWNER_LABEL_PREFIX;
use sandbox_reclaim::providers::HostedVendor;
use sandbox_reclaim::{
    reclaim_sandbox, reconcile, HostedError, HostedSandboxProvider, InMemorySandboxInstanceStore, InvalidInput,
    LeakLedger, ProviderError, ReclaimOptions, ReclaimOutcome, RunRecord, RunStatus, SandboxInstanceStore, SweepStatus,
};
use serde_json::{json, Value};

/// The fake's key (its `DEFAULT_KEY`).
const KEY: &str = "box_test_key";
const OWNER: &str = "sandbox-reclaim";
/// Our owner label on a box: `sr:<owner>`.
const OWNER_LABEL: &str = "sr:sandbox-reclaim";
/// 2026-01-01, epoch seconds (the unit the SDKs' tests use): long past every grace.
const OLD: u64 = 1_767_225_600;

fn start() -> Fake {
    Fake::start("upstash-box.mjs", &[])
}

fn settings(fake: &Fake, key: &str) -> HostedSettings {
    let mut settings = HostedSettings::defaults(HostedVendor::UpstashBox);
    settings.api_key = Some(key.to_owned());
    settings.api_url = Some(fake.url.clone());
    settings.request_timeout = Duration::from_secs(10);
    settings
}

/// Built as the bindings and the command build it.
fn provider(fake: &Fake) -> Box<dyn HostedSandboxProvider> {
    build_hosted(HostedVendor::UpstashBox, settings(fake, KEY)).unwrap()
}

/// A seed box: `id`, labelled for `owner` (or unlabelled), created at [`OLD`].
fn boxed(id: &str, owner: Option<&str>) -> Value {
    let labels: Vec<String> =
        owner.map(|owner| format!("{UPSTASH_BOX_OWNER_LABEL_PREFIX}{owner}")).into_iter().collect();
    json!({ "id": id, "labels": labels, "status": "idle", "created_at": OLD })
}

/// Seeds boxes (the fake's `/_fake/boxes`).
async fn seed(fake: &Fake, boxes: Vec<Value>) {
    fake.post("boxes", Value::Array(boxes)).await;
}

/// `{prefix}{i}` for `i` in `0..count`, labelled for `owner`; their ids.
async fn seed_many(fake: &Fake, prefix: &str, count: usize, owner: Option<&str>) -> Vec<String> {
    let ids: Vec<String> = (0..count).map(|index| format!("{prefix}{index}")).collect();
    seed(fake, ids.iter().map(|id| boxed(id, owner)).collect()).await;
    ids
}

/// The API calls the fake saw with `method` on `path`.
async fn requests(fake: &Fake, method: &str, path: &str) -> Vec<Value> {
    let state = fake.state().await;
    let all = state["requests"].as_array().unwrap();
    all.iter().filter(|request| request["method"] == method && request["path"] == path).cloned().collect()
}

#[tokio::test]
async fn destroy_deletes_for_good_and_reads_already_gone_as_success() {
    let fake = start();
    seed_many(&fake, "box_", 2, Some(OWNER)).await;
    let provider = provider(&fake);
    provider.destroy("box_0").await.unwrap();
    assert_eq!(fake.alive().await, ["box_1"]);
    provider.destroy("box_0").await.expect("404 `Box has been deleted` is gone");
    provider.destroy("box_never").await.expect("404 `Box not found` is gone");
    assert!(provider.destroy("box/0").await.is_err(), "an id that is not one is refused before any call");
    let listed = provider.list_sandboxes().await.unwrap();
    assert_eq!(listed.iter().map(|sandbox| sandbox.id.as_str()).collect::<Vec<_>>(), ["box_1"]);
    let deletes = requests(&fake, "DELETE", "/v2/box/box_0").await;
    assert_eq!(deletes.len(), 2);
    for request in &deletes {
        assert_eq!(request["authorized"], true, "the key rides in X-Box-Api-Key: {request}");
        assert!(request["headers"].get("authorization").is_none(), "no Authorization header: {request}");
    }
    assert!(requests(&fake, "DELETE", "/v2/box").await.is_empty(), "never the bulk delete");
    assert_eq!(fake.state().await["deletes"], json!(["box_0"]));
}

#[tokio::test]
async fn the_listing_asks_for_our_label_as_the_sdk_encodes_it_and_reads_each_box_once() {
    let fake = start();
    seed_many(&fake, "ours_", 3, Some(OWNER)).await;
    seed_many(&fake, "theirs_", 2, Some("another-team")).await;
    seed_many(&fake, "bare_", 2, None).await;
    seed(
        &fake,
        vec![
            // Ours among other labels, created_at in milliseconds (the CLI's `>= 1e12`).
            json!({ "id": "ours_ms", "labels": ["team", OWNER_LABEL], "status": "paused", "created_at": OLD * 1000 + 5 }),
            json!({ "id": "ours_error", "labels": [OWNER_LABEL], "status": "error", "created_at": OLD }),
            json!({ "id": "ours_deleted", "labels": [OWNER_LABEL], "status": "deleted", "created_at": OLD }),
        ],
    )
    .await;
    fake.faults(json!({ "repeatItems": true })).await;
    let provider = provider(&fake);
    let listed = provider.list_sandboxes().await.unwrap();
    let mut ids: Vec<&str> = listed.iter().map(|sandbox| sandbox.id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, ["ours_0", "ours_1", "ours_2", "ours_error", "ours_ms"], "each once, never a deleted one");
    assert!(listed.iter().all(|sandbox| sandbox.owner.as_deref() == Some(OWNER) && sandbox.key.is_none()));
    let created = |id: &str| listed.iter().find(|sandbox| sandbox.id == id).unwrap().created_at;
    assert_eq!((created("ours_0"), created("ours_ms")), (Some(OLD * 1000), Some(OLD * 1000 + 5)));
    let lists = requests(&fake, "GET", "/v2/box").await;
    assert_eq!(lists.len(), 1, "no paging: one request is the whole listing");
    assert_eq!(lists[0]["query"], "?label=sr%3Asandbox-reclaim", "as encodeURIComponent writes it");

    let store = InMemorySandboxInstanceStore::with_ledger();
    let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.status, SweepStatus::Swept, "{orphans:?}");
    assert_eq!((orphans.listed, orphans.found, orphans.destroyed), (5, 5, 5), "{orphans:?}");
    assert_eq!(fake.alive().await, ["theirs_0", "theirs_1", "bare_0", "bare_1"], "nothing else is touched");
    for id in ["ours_0", "ours_1", "ours_2", "ours_error", "ours_ms"] {
        assert_eq!(fake.deletes_of(id).await, 1, "{id}: the repeated one too, once");
    }
    assert_eq!(fake.deletes_of("ours_deleted").await, 0);
}

#[tokio::test]
async fn a_wrong_key_names_the_variable_to_set_and_never_the_key() {
    let fake = start();
    seed_many(&fake, "box_", 1, Some(OWNER)).await;
    let secret = "box_wrong_secret_value";
    let provider = build_hosted(HostedVendor::UpstashBox, settings(&fake, secret)).unwrap();
    for error in [
        provider.destroy("box_0").await.unwrap_err(),
        provider.list_sandboxes().await.unwrap_err(),
        provider.lookup_sandboxes(&["box_0".to_owned()]).await.unwrap_err(),
        provider.check_access().await.unwrap_err(),
    ] {
        let message = error.to_string();
        assert!(message.contains("UPSTASH_BOX_API_KEY") && message.contains("Upstash Box"), "{message}");
        assert!(!message.contains(secret) && !format!("{error:?}").contains(secret), "{message}");
        let ProviderError::Backend(inner) = &error else { panic!("{error:?}") };
        assert!(matches!(inner.downcast_ref::<HostedError>(), Some(HostedError::Unauthorized(_))), "{error:?}");
    }
    assert_eq!(fake.alive().await, ["box_0"]);
    // The right key passes the one small call, which lists nothing of ours.
    crate::provider(&fake).check_access().await.unwrap();
    let checks = requests(&fake, "GET", "/v2/box").await;
    assert_eq!(checks.last().unwrap()["query"], "?label=sr%3A", "{checks:?}");
}

#[tokio::test]
async fn bad_config_names_its_field_before_any_request() {
    let fake = start();
    let mut no_key = settings(&fake, "");
    no_key.api_key = Some(String::new());
    let mut bad_url = settings(&fake, KEY);
    bad_url.api_url = Some("ftp://box.example".into());
    let mut no_name = settings(&fake, KEY);
    no_name.name = String::new();
    for (settings, field) in [(no_key, "apiKey"), (bad_url, "apiUrl"), (no_name, "name")] {
        let error = build_hosted(HostedVendor::UpstashBox, settings).err().expect("refused");
        let ProviderError::Backend(inner) = &error else { panic!("{error:?}") };
        assert_eq!(inner.downcast_ref::<InvalidInput>().map(|invalid| invalid.field), Some(field), "{error}");
        if field == "apiKey" {
            assert!(error.to_string().contains("UPSTASH_BOX_API_KEY"), "{error}");
        }
    }
    assert!(fake.state().await["requests"].as_array().unwrap().is_empty(), "nothing was sent");
}

/// Needs the engine's owner hook (`Entry.check_owner`, wired to
/// `upstash_box::check_owner`): until then the provider is built.
#[tokio::test]
async fn an_owner_that_cannot_be_a_box_label_is_refused_when_the_provider_is_built() {
    let fake = start();
    for owner in ["an-owner-of-18-chr", "team a", "team/a", "équipe"] {
        let mut settings = settings(&fake, KEY);
        settings.owner = owner.to_owned();
        let error = build_hosted(HostedVendor::UpstashBox, settings).err().expect("refused");
        let ProviderError::Backend(inner) = &error else { panic!("{error:?}") };
        assert_eq!(inner.downcast_ref::<InvalidInput>().map(|invalid| invalid.field), Some("owner"), "{error}");
        assert!(error.to_string().contains("Upstash Box"), "{error}");
    }
    let mut fits = settings(&fake, KEY);
    fits.owner = "an-owner-of-17chr".to_owned();
    build_hosted(HostedVendor::UpstashBox, fits).expect("17 characters fit `sr:<owner>`");
    assert!(fake.state().await["requests"].as_array().unwrap().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn server_errors_fail_and_rate_limits_wait_for_retry_after_up_to_a_minute() {
    let fake = start();
    let ids = seed_many(&fake, "box_", 2, Some(OWNER)).await;
    let provider = provider(&fake);
    fake.faults(json!({ "failDeleteEvery": 1 })).await;
    let failed = provider.destroy(&ids[0]).await.unwrap_err().to_string();
    assert!(failed.contains("HTTP 500") && failed.contains("DELETE /v2/box/box_0"), "{failed}");
    assert!(failed.contains("Internal server error") && !failed.contains(KEY), "{failed}");
    assert_eq!(fake.alive().await, ids);
    fake.faults(json!({ "failDeleteEvery": 0, "rateLimitDeletes": 2, "retryAfterSeconds": 0.3 })).await;
    let started = Instant::now();
    provider.destroy(&ids[0]).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(600), "{:?}", started.elapsed());
    assert_eq!(fake.alive().await, [ids[1].clone()]);
    // A wait longer than a request is held for (60 s) fails it at once (the ledger retries).
    fake.faults(json!({ "rateLimitDeletes": 1, "retryAfterSeconds": 3600 })).await;
    let started = Instant::now();
    let throttled = provider.destroy(&ids[1]).await.unwrap_err().to_string();
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert!(throttled.contains("HTTP 429"), "{throttled}");
    assert_eq!(fake.alive().await, [ids[1].clone()]);
}

#[tokio::test]
async fn a_hanging_delete_is_cut_by_the_destroy_deadline_and_reaches_the_ledger() {
    let fake = start();
    let ids = seed_many(&fake, "box_", 1, Some(OWNER)).await;
    fake.faults(json!({ "hangDeletes": true })).await;
    let provider = provider(&fake);
    let store = InMemorySandboxInstanceStore::with_ledger();
    store.upsert(&record("k1", "upstash-box", &ids[0])).await.unwrap();
    let run = RunRecord::new("run-1", "thread-1", RunStatus::Completed).with_sandbox_key("k1");
    let options = ReclaimOptions::new(provider.as_ref(), &store).with_destroy_timeout(Duration::from_millis(300));
    assert_eq!(reclaim_sandbox(&run, options).await.unwrap(), ReclaimOutcome::DestroyFailed);
    assert_eq!(fake.abandoned(1).await, 1, "the deadline dropped the request itself");
    let leaks = store.list_leaks(Some("upstash-box")).await.unwrap();
    assert_eq!(leaks.len(), 1);
    assert!(!format!("{leaks:?}").contains(KEY), "{leaks:?}");
    assert_eq!(fake.alive().await, ids);
}

#[tokio::test]
async fn a_hanging_listing_is_cut_and_the_sweep_is_unavailable() {
    let fake = start();
    seed_many(&fake, "box_", 2, Some(OWNER)).await;
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
async fn a_malformed_listing_makes_the_sweep_unavailable_and_destroys_nothing() {
    let fake = start();
    seed_many(&fake, "box_", 3, Some(OWNER)).await;
    fake.faults(json!({ "malformedPage": true })).await;
    let provider = provider(&fake);
    let store = InMemorySandboxInstanceStore::with_ledger();
    let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!((orphans.status, orphans.destroyed), (SweepStatus::Unavailable, 0), "{orphans:?}");
    let error = orphans.error.clone().unwrap_or_default();
    assert!(error.contains("GET /v2/box") && error.contains("cannot vouch for"), "{error}");
    assert!(report.still_leaking);
    assert_eq!(fake.alive().await.len(), 3);
    assert!(fake.state().await["deletes"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn failed_deletes_reach_the_ledger_without_the_key_and_a_lagging_listing_is_harmless() {
    let fake = start();
    let ours = seed_many(&fake, "ours_", 6, Some(OWNER)).await;
    // A deleted box stays listed, with its old status, a minute: the lagging listing.
    fake.faults(json!({ "failDeleteEvery": 2, "deletedStayListedMs": 60_000 })).await;
    let provider = provider(&fake);
    let store = InMemorySandboxInstanceStore::with_ledger();
    let first = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &first.providers[0].orphans;
    assert_eq!((orphans.found, orphans.destroyed, orphans.failed), (6, 3, 3), "{orphans:?}");
    assert!(first.still_leaking);
    let leaks = store.list_leaks(Some("upstash-box")).await.unwrap();
    assert_eq!(leaks.len(), 3, "each failed delete is in the ledger");
    assert!(!format!("{leaks:?}").contains(KEY) && !format!("{first:?}").contains(KEY), "{leaks:?}");
    assert!(leaks.iter().all(|leak| format!("{leak:?}").contains("HTTP 500")), "{leaks:?}");

    fake.faults(json!({ "failDeleteEvery": 0 })).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    // The ledger's backoff (1 ms) must pass first: the store's clock is in milliseconds.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    assert_eq!(second.providers[0].leaks.destroyed, 3, "the next pass retries the ledger's entries");
    let orphans = &second.providers[0].orphans;
    assert_eq!(orphans.listed, 6, "deleted boxes are still listed: {orphans:?}");
    assert_eq!(orphans.found, 0, "and never swept again: {orphans:?}");
    assert!(fake.alive().await.is_empty());
    assert!(store.list_leaks(Some("upstash-box")).await.unwrap().is_empty());
    let third = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    assert_eq!(third.providers[0].orphans.failed, 0, "{:?}", third.providers[0]);
    for id in &ours {
        let deletes = fake.deletes_of(id).await;
        assert!(deletes <= 2, "{id}: {deletes} deletes");
    }
    assert_eq!(fake.state().await["deletes"].as_array().unwrap().len(), 6, "each box deleted once");
}

#[tokio::test]
async fn sweeping_unlabelled_boxes_destroys_only_what_the_registry_names() {
    let fake = start();
    let tan = seed_many(&fake, "tan_", 3, None).await;
    let theirs = seed_many(&fake, "theirs_", 1, Some("another-team")).await;
    let labelled_only = provider(&fake);
    let mut all = settings(&fake, KEY);
    all.sweep_unlabelled = true;
    let unlabelled = build_hosted(HostedVendor::UpstashBox, all).unwrap();
    assert!(!unlabelled.can_lookup(), "the listing already takes every box");
    let ids =
        hosted_support::Unlabelled { registered: &tan[0], stranger: &tan[1], referenced: &tan[2], theirs: &theirs[0] };
    hosted_support::sweeping_unlabelled_destroys_only_what_the_registry_names(
        &fake,
        "upstash-box",
        ids,
        labelled_only.as_ref(),
        unlabelled.as_ref(),
    )
    .await;
    let lists: Vec<String> =
        requests(&fake, "GET", "/v2/box").await.iter().map(|list| list["query"].as_str().unwrap().to_owned()).collect();
    assert!(lists.contains(&String::new()), "sweeping unlabelled sends no label: {lists:?}");
    assert!(lists.contains(&"?label=sr%3Asandbox-reclaim".to_owned()), "{lists:?}");
}

#[tokio::test]
async fn registered_boxes_whose_records_are_gone_are_found_by_id_and_destroyed() {
    let fake = start();
    seed(
        &fake,
        vec![
            boxed("box_reg", None),
            boxed("box_stranger", None),
            boxed("box_theirs", Some("another-team")),
            json!({ "id": "box_deleted", "labels": [], "status": "deleted", "created_at": OLD }),
        ],
    )
    .await;
    let provider = provider(&fake);
    assert!(provider.can_lookup());
    let store = InMemorySandboxInstanceStore::with_ledger();
    for (key, id) in
        [("k-reg", "box_reg"), ("k-theirs", "box_theirs"), ("k-deleted", "box_deleted"), ("k-gone", "box_gone")]
    {
        store.upsert(&record(key, "upstash-box", id)).await.unwrap();
        store.delete(key).await.unwrap();
    }
    let asked: Vec<String> = ["box_reg", "box_deleted", "box_gone", "a/b"].map(str::to_owned).into();
    let found = provider.lookup_sandboxes(&asked).await.unwrap();
    assert_eq!(
        found.iter().map(|sandbox| sandbox.id.as_str()).collect::<Vec<_>>(),
        ["box_reg"],
        "deleted and 404: gone"
    );
    assert_eq!((found[0].owner.as_deref(), found[0].created_at), (None, Some(OLD * 1000)));

    let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.status, SweepStatus::Swept, "{orphans:?}");
    assert_eq!((orphans.found, orphans.destroyed, orphans.foreign), (1, 1, 1), "{orphans:?}");
    assert_eq!(fake.alive().await, ["box_stranger", "box_theirs"], "only the registered unlabelled one went");
    assert_eq!(fake.deletes_of("box_reg").await, 1);
    assert_eq!(fake.deletes_of("box_deleted").await, 0, "a deleted box reads as gone: never deleted again");
    assert!(!requests(&fake, "GET", "/v2/box/box_reg").await.is_empty(), "looked up by id");
    assert!(requests(&fake, "GET", "/v2/box/box_stranger").await.is_empty(), "never a stranger");
}
