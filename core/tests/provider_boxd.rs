//! `BoxdProvider` against the local boxd fake (tests/fakes/boxd_fake.py,
//! proven by boxd's official client in tests/python/test_boxd_fake.py): the
//! API key's exchange and a token sent as is, the org-scoped label-filtered
//! listing (one answer, no paging), the lookup by `GetVm`, and the faults
//! every hosted vendor meets, through `reconcile`. The fake runs under the
//! Python `SANDBOX_RECLAIM_FAKE_PYTHON` names (a venv with `boxd==0.2.19`);
//! without it these tests FAIL, never pass.
#![cfg(feature = "boxd")]

mod hosted_support;

use std::time::{Duration, Instant};

use hosted_support::{record, sweep_options, Fake};
use sandbox_reclaim::options::provider::HostedSettings;
use sandbox_reclaim::providers::build_hosted;
use sandbox_reclaim::providers::hosted::boxd;
use sandbox_reclaim::providers::HostedVendor;
use sandbox_reclaim::{
    reclaim_sandbox, reconcile, HostedError, HostedSandboxProvider, InMemorySandboxInstanceStore, LeakLedger,
    ProviderError, ReclaimOptions, ReclaimOutcome, RunRecord, RunStatus, SandboxInstanceStore, SweepStatus,
};
use serde_json::{json, Value};

/// What the fake exchanges, and the session token it takes as is.
const API_KEY: &str = "bxd_test_key";
const TOKEN: &str = "boxd-test-session-token";
/// The org the fake's caller belongs to.
const ORG: &str = "acme";
const OWNER: &str = "sandbox-reclaim";
const OWNER_LABEL: &str = "io.sandbox-reclaim.owner";
/// 2026-01-01, epoch seconds: long past every grace.
const OLD: u64 = 1_767_225_600;

fn start() -> Fake {
    Fake::start("boxd_fake.py", &[])
}

fn settings(fake: &Fake, credential: &str) -> HostedSettings {
    let mut settings = HostedSettings::defaults(HostedVendor::Boxd);
    settings.api_key = Some(credential.to_owned());
    settings.api_url = Some(fake.url.clone());
    settings.set_option(boxd::ORG, Some(ORG.to_owned()));
    settings.request_timeout = Duration::from_secs(10);
    settings
}

/// Built as the bindings and the command build it (`build_hosted`), with the API key.
fn provider(fake: &Fake) -> Box<dyn HostedSandboxProvider> {
    build_hosted(HostedVendor::Boxd, settings(fake, API_KEY)).unwrap()
}

/// A machine id (a UUID, as the fake mints them).
fn vm_id(index: u32) -> String {
    format!("0c0ffee0-0000-4000-8000-{index:012}")
}

/// A seed item in `org`: created `index` seconds after [`OLD`], labelled for `owner` (or unlabelled).
fn machine(id: &str, index: u32, org: &str, owner: Option<&str>) -> Value {
    let labels = owner.map_or_else(|| json!({}), |owner| json!({ OWNER_LABEL: owner }));
    json!({ "id": id, "labels": labels, "org": org, "created_at": OLD + u64::from(index) })
}

/// `count` machines in [`ORG`] from `first` on, for `owner`; their ids.
async fn seed(fake: &Fake, first: u32, count: u32, owner: Option<&str>) -> Vec<String> {
    let ids: Vec<String> = (first..first + count).map(vm_id).collect();
    fake.seed(ids.iter().zip(first..).map(|(id, index)| machine(id, index, ORG, owner)).collect()).await;
    ids
}

/// The calls the fake saw of `method` (`POST` for the key exchange).
async fn calls(fake: &Fake, method: &str) -> Vec<Value> {
    let state = fake.state().await;
    state["requests"].as_array().unwrap().iter().filter(|request| request["method"] == method).cloned().collect()
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

fn is_unauthorized(error: &ProviderError) -> bool {
    let ProviderError::Backend(inner) = error else { return false };
    matches!(inner.downcast_ref::<HostedError>(), Some(HostedError::Unauthorized(_)))
}

#[tokio::test]
async fn an_api_key_is_exchanged_once_and_a_token_is_sent_as_is() {
    let fake = start();
    let ids = seed(&fake, 0, 3, Some(OWNER)).await;
    let provider = provider(&fake);
    provider.check_access().await.unwrap();
    assert_eq!(provider.list_sandboxes().await.unwrap().len(), 3);
    provider.destroy(&ids[0]).await.unwrap();
    provider.destroy(&ids[0]).await.expect("destroyed already: NOT_FOUND is gone");
    provider.destroy(&vm_id(99)).await.expect("never existed: NOT_FOUND is gone");
    assert!(provider.destroy("a/b").await.is_err(), "an id that is not one is refused before any call");
    assert_eq!(fake.alive().await, ids[1..]);
    // One exchange (HTTP/1.1 on the gRPC port), then every call under its token.
    let exchanges = calls(&fake, "POST").await;
    assert_eq!(exchanges, [json!({ "method": "POST", "path": "/api/v1/auth/token", "status": 200 })]);
    let state = fake.state().await;
    let grpc: Vec<&Value> = state["requests"].as_array().unwrap().iter().filter(|r| r["method"] != "POST").collect();
    assert_eq!(grpc.len(), 5, "{grpc:?}");
    assert!(grpc.iter().all(|r| r["authorized"] == true && r["auth"] == "bearer"), "{grpc:?}");
    assert!(grpc.iter().all(|r| r["sdkVersion"].is_null()), "we are not the Python client: {grpc:?}");
    assert_eq!(state["tokensIssued"], 1);

    // A token (BOXD_TOKEN's kind: an `apiKey` not starting `bxd_`) is sent as is, never exchanged.
    let direct = build_hosted(HostedVendor::Boxd, settings(&fake, TOKEN)).unwrap();
    direct.check_access().await.unwrap();
    direct.destroy(&ids[1]).await.unwrap();
    assert_eq!(fake.alive().await, ids[2..]);
    assert_eq!(calls(&fake, "POST").await.len(), 1);
    assert_eq!(fake.state().await["tokensIssued"], 1);

    // A throttled exchange waits its Retry-After.
    fake.faults(json!({ "rateLimitExchanges": 1, "retryAfterSeconds": 0.3 })).await;
    let started = Instant::now();
    build_hosted(HostedVendor::Boxd, settings(&fake, API_KEY)).unwrap().check_access().await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300), "{:?}", started.elapsed());
    let statuses: Vec<Value> = calls(&fake, "POST").await.iter().map(|r| r["status"].clone()).collect();
    assert_eq!(statuses, [json!(200), json!(429), json!(200)]);
}

#[tokio::test]
async fn an_exchanged_token_is_exchanged_again_before_it_expires() {
    let fake = start();
    seed(&fake, 0, 1, Some(OWNER)).await;
    // A 4 s token: used for about half its lifetime, then exchanged again.
    fake.faults(json!({ "authTokenTtlSeconds": 4 })).await;
    let provider = provider(&fake);
    provider.list_sandboxes().await.unwrap();
    provider.list_sandboxes().await.unwrap();
    assert_eq!(fake.state().await["tokensIssued"], 1);
    tokio::time::sleep(Duration::from_millis(2_200)).await;
    provider.list_sandboxes().await.unwrap();
    assert_eq!(fake.state().await["tokensIssued"], 2);
    let lists = calls(&fake, "ListVms").await;
    assert!(lists.iter().all(|r| r["authorized"] == true), "never sent an expired token: {lists:?}");
}

#[tokio::test]
async fn a_wrong_credential_is_unauthorized_naming_both_variables_and_never_itself() {
    let fake = start();
    let ids = seed(&fake, 0, 1, Some(OWNER)).await;
    for credential in ["bxd_wrong_key_value", "wrong-session-token-value"] {
        let provider = build_hosted(HostedVendor::Boxd, settings(&fake, credential)).unwrap();
        for error in [
            provider.destroy(&ids[0]).await.unwrap_err(),
            provider.list_sandboxes().await.unwrap_err(),
            provider.lookup_sandboxes(&ids).await.unwrap_err(),
            provider.check_access().await.unwrap_err(),
        ] {
            let message = error.to_string();
            assert!(message.contains("BOXD_TOKEN") && message.contains("BOXD_API_KEY"), "{message}");
            assert!(!message.contains(credential) && !format!("{error:?}").contains(credential), "{message}");
            assert!(is_unauthorized(&error), "{error:?}");
        }
    }
    // The key was refused by the exchange (no gRPC call carried it); the token by every call.
    let refused: Vec<Value> = calls(&fake, "POST").await.iter().map(|r| r["status"].clone()).collect();
    assert_eq!(refused, vec![json!(401); 4]);
    let state = fake.state().await;
    let grpc: Vec<&Value> = state["requests"].as_array().unwrap().iter().filter(|r| r["method"] != "POST").collect();
    assert!(grpc.iter().all(|r| r["status"] == "UNAUTHENTICATED"), "{grpc:?}");
    assert_eq!(fake.alive().await, ids);
    // None at all: refused before any call, naming what to set.
    let mut none = settings(&fake, "");
    none.api_key = Some(String::new());
    let message = build_hosted(HostedVendor::Boxd, none).err().unwrap().to_string();
    assert!(message.contains("BOXD_TOKEN") && message.contains("BOXD_API_KEY") && message.contains("apiKey"));
}

#[tokio::test]
async fn the_listing_is_scoped_to_the_org_and_filtered_by_our_label() {
    let fake = start();
    let ours = seed(&fake, 0, 3, Some(OWNER)).await;
    seed(&fake, 10, 2, Some("another-team")).await;
    seed(&fake, 20, 2, None).await;
    let (personal, elsewhere, stopped, destroyed, tagged) = (vm_id(30), vm_id(31), vm_id(32), vm_id(33), vm_id(34));
    fake.seed(vec![
        machine(&personal, 30, "", Some(OWNER)),
        machine(&elsewhere, 31, "other-org", Some(OWNER)),
        json!({ "id": stopped, "org": ORG, "labels": { OWNER_LABEL: OWNER }, "status": "stopped", "created_at": OLD }),
        json!({ "id": destroyed, "org": ORG, "labels": { OWNER_LABEL: OWNER }, "status": "destroyed" }),
        json!({ "id": tagged, "org": ORG, "labels": { OWNER_LABEL: OWNER, "team": "x" }, "created_at": OLD + 34 }),
    ])
    .await;
    let provider = provider(&fake);
    let listed = provider.list_sandboxes().await.unwrap();
    let expected: Vec<String> = ours.iter().cloned().chain([stopped, tagged.clone()]).collect();
    assert_eq!(sorted(listed.iter().map(|m| m.id.clone()).collect()), sorted(expected));
    assert!(listed.iter().all(|machine| machine.owner.as_deref() == Some(OWNER)));
    let newest = listed.iter().find(|machine| machine.id == tagged).unwrap();
    assert_eq!(newest.created_at, Some((OLD + 34) * 1000));
    let lists = calls(&fake, "ListVms").await;
    assert_eq!(lists.len(), 1, "one answer, no paging: {lists:?}");
    assert_eq!((&lists[0]["org"], &lists[0]["allContexts"]), (&json!(ORG), &json!(false)));
    assert_eq!(lists[0]["labelSelector"], json!([format!("{OWNER_LABEL}={OWNER}")]));

    // No org: the credential's personal machines.
    let mut personal_settings = settings(&fake, TOKEN);
    personal_settings.set_option(boxd::ORG, Some(String::new()));
    let mine = build_hosted(HostedVendor::Boxd, personal_settings).unwrap().list_sandboxes().await.unwrap();
    assert_eq!(mine.iter().map(|m| m.id.clone()).collect::<Vec<_>>(), [personal]);

    // An org the credential's user is not in: refused, saying the org may be why.
    let mut other = settings(&fake, TOKEN);
    other.set_option(boxd::ORG, Some("other-org".into()));
    let provider = build_hosted(HostedVendor::Boxd, other).unwrap();
    for error in [provider.list_sandboxes().await.unwrap_err(), provider.check_access().await.unwrap_err()] {
        assert!(is_unauthorized(&error), "{error:?}");
        assert!(error.to_string().contains("PERMISSION_DENIED") && error.to_string().contains("BOXD_ORG"), "{error}");
    }
    provider.destroy(&ours[0]).await.expect("a destroy by id needs no org");
    assert!(!fake.alive().await.contains(&ours[0]));
    assert!(fake.alive().await.contains(&elsewhere), "never visible, never touched");
}

#[tokio::test]
async fn throttled_destroys_are_waited_out_a_bounded_number_of_times_and_failures_fail() {
    let fake = start();
    let ids = seed(&fake, 0, 2, Some(OWNER)).await;
    let provider = provider(&fake);
    fake.faults(json!({ "failDeleteEvery": 1 })).await;
    let failed = provider.destroy(&ids[0]).await.unwrap_err().to_string();
    assert!(failed.contains("INTERNAL") && failed.contains("DestroyVm"), "{failed}");
    assert_eq!(fake.alive().await, ids);
    // boxd's RESOURCE_EXHAUSTED carries no retry hint: a second each.
    fake.faults(json!({ "failDeleteEvery": 0, "rateLimitDeletes": 2 })).await;
    let started = Instant::now();
    provider.destroy(&ids[0]).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(2), "{:?}", started.elapsed());
    assert_eq!(fake.deletes_of(&ids[0]).await, 4, "the failure, two throttled, the one that went");
    // Throttled past the retries a call takes: it fails (the ledger retries it later).
    fake.faults(json!({ "rateLimitDeletes": 6 })).await;
    let throttled = provider.destroy(&ids[1]).await.unwrap_err().to_string();
    assert!(throttled.contains("RESOURCE_EXHAUSTED"), "{throttled}");
    assert_eq!(fake.deletes_of(&ids[1]).await, 6, "one call and five retries");
    assert_eq!(fake.alive().await, ids[1..]);
}

#[tokio::test]
async fn failed_destroys_reach_the_ledger_and_a_lagging_listing_is_harmless() {
    let fake = start();
    let ours = seed(&fake, 0, 6, Some(OWNER)).await;
    // A destroyed machine stays listed (as `destroyed`) a minute: the lagging listing.
    fake.faults(json!({ "failDeleteEvery": 2, "deletedStayListedMs": 60_000 })).await;
    let provider = provider(&fake);
    let store = InMemorySandboxInstanceStore::with_ledger();
    let first = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    assert_eq!(first.providers[0].orphans.failed, 3, "{:?}", first.providers[0]);
    let leaks = store.list_leaks(Some("boxd")).await.unwrap();
    assert_eq!(leaks.len(), 3);
    let ledger = format!("{leaks:?}");
    assert!(!ledger.contains(API_KEY) && !ledger.contains("Bearer"), "{ledger}");
    fake.faults(json!({ "failDeleteEvery": 0 })).await;
    // The ledger's backoff (1 ms) must pass first: the store's clock is in milliseconds.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    assert_eq!(second.providers[0].leaks.destroyed, 3, "{:?}", second.providers[0]);
    assert!(fake.alive().await.is_empty());
    // Still listed, as `destroyed`: gone, not destroyed again.
    let before: Vec<usize> = destroys_of(&fake, &ours).await;
    let third = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &third.providers[0].orphans;
    assert_eq!((orphans.status, orphans.listed, orphans.failed), (SweepStatus::Swept, 0, 0), "{orphans:?}");
    assert_eq!(destroys_of(&fake, &ours).await, before);
    // Still listed as running (a server slower to flip it): destroyed again, as success.
    fake.faults(json!({ "destroyingStatus": "running" })).await;
    let fourth = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &fourth.providers[0].orphans;
    assert_eq!((orphans.status, orphans.failed), (SweepStatus::Swept, 0), "{orphans:?}");
    for id in &ours {
        assert!(fake.deletes_of(id).await <= 4, "{id}");
    }
    assert_eq!(fake.state().await["destroyed"].as_array().unwrap().len(), 6);
}

/// How many destroys reached each of `ids`.
async fn destroys_of(fake: &Fake, ids: &[String]) -> Vec<usize> {
    let mut counts = Vec::new();
    for id in ids {
        counts.push(fake.deletes_of(id).await);
    }
    counts
}

#[tokio::test]
async fn a_hanging_destroy_is_cut_by_the_deadline_and_reaches_the_ledger() {
    let fake = start();
    let ids = seed(&fake, 0, 1, Some(OWNER)).await;
    fake.faults(json!({ "hangDeletes": true })).await;
    let provider = provider(&fake);
    let store = InMemorySandboxInstanceStore::with_ledger();
    store.upsert(&record("k1", "boxd", &ids[0])).await.unwrap();
    let run = RunRecord::new("run-1", "thread-1", RunStatus::Completed).with_sandbox_key("k1");
    let options = ReclaimOptions::new(provider.as_ref(), &store).with_destroy_timeout(Duration::from_millis(300));
    assert_eq!(reclaim_sandbox(&run, options).await.unwrap(), ReclaimOutcome::DestroyFailed);
    assert_eq!(fake.abandoned(1).await, 1, "the deadline dropped the call itself");
    let leaks = store.list_leaks(Some("boxd")).await.unwrap();
    assert_eq!(leaks.len(), 1);
    let ledger = format!("{leaks:?}");
    assert!(!ledger.contains(API_KEY) && !ledger.contains("Bearer"), "{ledger}");
    assert_eq!(fake.alive().await, ids);
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
async fn the_sweep_reads_repeated_machines_once_and_destroys_each_once() {
    let fake = start();
    let ours = seed(&fake, 0, 9, Some(OWNER)).await;
    let theirs = seed(&fake, 20, 2, Some("another-team")).await;
    let bare = seed(&fake, 30, 2, None).await;
    fake.faults(json!({ "repeatAcrossPages": true })).await;
    let provider = provider(&fake);
    let listed = provider.list_sandboxes().await.unwrap();
    let mut ids: Vec<&str> = listed.iter().map(|machine| machine.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!((listed.len(), ids.len()), (9, 9), "{ids:?}");
    let store = InMemorySandboxInstanceStore::with_ledger();
    let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.status, SweepStatus::Swept, "{orphans:?}");
    assert_eq!((orphans.listed, orphans.found, orphans.destroyed), (9, 9, 9), "{orphans:?}");
    let expected: Vec<String> = theirs.into_iter().chain(bare).collect();
    assert_eq!(sorted(fake.alive().await), sorted(expected), "unlabelled and unregistered: never touched");
    for id in &ours {
        assert_eq!(fake.deletes_of(id).await, 1, "{id}");
    }
}

#[tokio::test]
async fn a_malformed_listing_makes_the_sweep_unavailable() {
    let odd = json!({ "id": vm_id(50), "org": ORG, "labels": { OWNER_LABEL: OWNER }, "status": "hatching" });
    let undated = json!({ "id": vm_id(51), "org": ORG, "labels": { OWNER_LABEL: OWNER }, "created_at": 0 });
    let cases = [(json!({ "malformedPage": 1 }), None), (json!({}), Some(odd)), (json!({}), Some(undated))];
    for (fault, extra) in cases {
        let fake = start();
        seed(&fake, 0, 4, Some(OWNER)).await;
        fake.faults(fault.clone()).await;
        let alive = fake.alive().await.len() + usize::from(extra.is_some());
        if let Some(extra) = extra.clone() {
            fake.seed(vec![extra]).await;
        }
        let provider = provider(&fake);
        let store = InMemorySandboxInstanceStore::with_ledger();
        let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
        let orphans = &report.providers[0].orphans;
        let case = format!("{fault} {extra:?}");
        assert_eq!((orphans.status, orphans.destroyed), (SweepStatus::Unavailable, 0), "{case}: {orphans:?}");
        assert_eq!(fake.alive().await.len(), alive, "{case}");
        let error = orphans.error.clone().unwrap_or_default();
        assert!(error.contains("ListVms"), "{case}: {error}");
    }
}

#[tokio::test]
async fn sweeping_unlabelled_machines_destroys_only_what_the_registry_names() {
    let fake = start();
    let tan = seed(&fake, 0, 3, None).await;
    let theirs = seed(&fake, 10, 1, Some("another-team")).await;
    let labelled_only = build_hosted(HostedVendor::Boxd, settings(&fake, API_KEY)).unwrap();
    let mut all = settings(&fake, API_KEY);
    all.sweep_unlabelled = true;
    let unlabelled = build_hosted(HostedVendor::Boxd, all).unwrap();
    assert!(!unlabelled.can_lookup(), "the listing already takes every machine");
    let ids =
        hosted_support::Unlabelled { registered: &tan[0], stranger: &tan[1], referenced: &tan[2], theirs: &theirs[0] };
    hosted_support::sweeping_unlabelled_destroys_only_what_the_registry_names(
        &fake,
        "boxd",
        ids,
        labelled_only.as_ref(),
        unlabelled.as_ref(),
    )
    .await;
    let lists = calls(&fake, "ListVms").await;
    assert!(lists.iter().any(|list| list["labelSelector"] == json!([])), "{lists:?}");
    assert!(lists.iter().all(|list| list["org"] == ORG), "{lists:?}");
}

#[tokio::test]
async fn registered_machines_whose_records_are_gone_are_found_by_get_vm() {
    let fake = start();
    let (registered, stranger, theirs, destroyed) = (vm_id(1), vm_id(2), vm_id(3), vm_id(5));
    fake.seed(vec![
        machine(&registered, 1, ORG, None),
        machine(&stranger, 2, ORG, None),
        machine(&theirs, 3, ORG, Some("another-team")),
        json!({ "id": destroyed, "org": ORG, "status": "destroyed" }),
    ])
    .await;
    let provider = provider(&fake);
    assert!(provider.can_lookup());
    let store = InMemorySandboxInstanceStore::with_ledger();
    for (key, id) in [("k-reg", &registered), ("k-theirs", &theirs), ("k-gone", &vm_id(6)), ("k-done", &destroyed)] {
        store.upsert(&record(key, "boxd", id)).await.unwrap();
        store.delete(key).await.unwrap();
    }
    let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.status, SweepStatus::Swept, "{orphans:?}");
    assert_eq!((orphans.found, orphans.destroyed, orphans.foreign), (1, 1, 1), "{orphans:?}");
    assert_eq!(sorted(fake.alive().await), sorted(vec![stranger.clone(), theirs.clone()]), "only the registered one");
    let gets = calls(&fake, "GetVm").await;
    assert!(gets.iter().any(|call| call["id"] == registered.as_str()), "looked up by id: {gets:?}");
    assert!(!gets.iter().any(|call| call["id"] == stranger.as_str()), "never a stranger: {gets:?}");
    // Found by id directly: gone (NOT_FOUND), destroyed and impossible ids are left out.
    let ids = [stranger.clone(), vm_id(6), destroyed, "a/b".to_owned()];
    let found = provider.lookup_sandboxes(&ids).await.unwrap();
    let read: Vec<(&str, Option<u64>, Option<&str>)> =
        found.iter().map(|machine| (machine.id.as_str(), machine.created_at, machine.owner.as_deref())).collect();
    assert_eq!(read, [(stranger.as_str(), Some((OLD + 2) * 1000), None)]);
}
