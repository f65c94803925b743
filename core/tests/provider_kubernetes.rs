//! `KubernetesProvider` against the local Kubernetes API fake
//! (tests/fakes/kubernetes.mjs, proven by `@kubernetes/client-node` and the
//! Python `kubernetes` client): kubeconfigs with a token, a client
//! certificate and an exec plugin; every page of a label-selected listing;
//! an expired `continue` restarted once; foreground deletes; the lookup by
//! name; and the faults every hosted vendor meets, through `reconcile`.
#![cfg(feature = "kubernetes")]

mod hosted_support;

use std::time::{Duration, Instant};

use hosted_support::{record, sweep_options, Fake};
use sandbox_reclaim::options::provider::HostedSettings;
use sandbox_reclaim::providers::build_hosted;
use sandbox_reclaim::providers::hosted::kubernetes;
use sandbox_reclaim::providers::HostedVendor;
use sandbox_reclaim::{
    reclaim_sandbox, reconcile, HostedError, HostedSandboxProvider, InMemorySandboxInstanceStore, InvalidInput,
    KubernetesConfig, KubernetesProvider, LeakLedger, ProviderError, ReclaimOptions, ReclaimOutcome, RunRecord,
    RunStatus, SandboxInstanceStore, SweepStatus,
};
use serde_json::{json, Value};

const OWNER: &str = "sandbox-reclaim";
const OWNER_LABEL: &str = "io.sandbox-reclaim.owner";
const NS: &str = "default";

fn start() -> Fake {
    Fake::start("kubernetes.mjs", &[])
}

fn file(fake: &Fake, which: &str) -> String {
    fake.started[which].as_str().unwrap().to_owned()
}

fn settings(fake: &Fake) -> HostedSettings {
    let mut settings = HostedSettings::defaults(HostedVendor::Kubernetes);
    settings.set_option(kubernetes::KUBECONFIG, Some(file(fake, "kubeconfigToken")));
    settings.request_timeout = Duration::from_secs(10);
    settings
}

/// Built as the bindings and the command build it (`build_hosted`).
fn provider_with(settings: HostedSettings) -> Box<dyn HostedSandboxProvider> {
    build_hosted(HostedVendor::Kubernetes, settings).unwrap()
}

fn provider(fake: &Fake) -> Box<dyn HostedSandboxProvider> {
    provider_with(settings(fake))
}

/// A seed item of `kind` in `namespace`, an hour old, labelled for `owner` (or not).
fn object(kind: &str, namespace: &str, name: &str, owner: Option<&str>) -> Value {
    let labels = owner.map_or_else(|| json!({}), |owner| json!({ OWNER_LABEL: owner }));
    json!({ "kind": kind, "namespace": namespace, "name": name, "labels": labels })
}

/// `count` claims `claim-{first}`… for `owner` in the default namespace; their ids.
async fn claims(fake: &Fake, first: u32, count: u32, owner: Option<&str>) -> Vec<String> {
    let names: Vec<String> = (first..first + count).map(|index| format!("claim-{index:03}")).collect();
    fake.seed(names.iter().map(|name| object("SandboxClaim", NS, name, owner)).collect()).await;
    names.iter().map(|name| format!("{NS}_{name}")).collect()
}

/// The API requests the fake saw with `method` on `plural`.
async fn requests(fake: &Fake, method: &str, plural: &str) -> Vec<Value> {
    let state = fake.state().await;
    let of = |request: &&Value| {
        request["method"] == method && request["path"].as_str().is_some_and(|path| path.contains(plural))
    };
    state["requests"].as_array().unwrap().iter().filter(of).cloned().collect()
}

/// The claims still alive (not deleting), by id.
async fn live_claims(fake: &Fake) -> Vec<String> {
    let state = fake.state().await;
    let deleting: Vec<&Value> = state["deleting"].as_array().unwrap().iter().collect();
    let mut live: Vec<String> = state["alive"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|label| !deleting.contains(label))
        .filter_map(|label| label.as_str().unwrap().strip_prefix("SandboxClaim/"))
        .map(|rest| rest.replacen('/', "_", 1))
        .collect();
    live.sort();
    live
}

fn field_of(error: &ProviderError) -> Option<&'static str> {
    let ProviderError::Backend(inner) = error else { return None };
    inner.downcast_ref::<InvalidInput>().map(|invalid| invalid.field)
}

fn unauthorized(error: &ProviderError) -> bool {
    let ProviderError::Backend(inner) = error else { return false };
    matches!(inner.downcast_ref::<HostedError>(), Some(HostedError::Unauthorized(_)))
}

#[tokio::test]
async fn token_certificate_and_exec_kubeconfigs_all_reach_the_cluster() {
    let fake = start();
    let ours = claims(&fake, 0, 2, Some(OWNER)).await;
    for which in ["kubeconfigToken", "kubeconfigCert", "kubeconfigExec"] {
        let mut given = settings(&fake);
        given.set_option(kubernetes::KUBECONFIG, Some(file(&fake, which)));
        let provider = provider_with(given);
        provider.check_access().await.unwrap_or_else(|error| panic!("{which}: {error}"));
        let listed = provider.list_sandboxes().await.unwrap();
        let ids: Vec<&str> = listed.iter().map(|sandbox| sandbox.id.as_str()).collect();
        assert_eq!(ids, ours, "{which}");
        assert_eq!(provider.api_url(), fake.url, "{which}");
    }
    let auths: Vec<String> =
        fake.state().await["requests"].as_array().unwrap().iter().map(|request| request["auth"].to_string()).collect();
    assert!(auths.iter().all(|auth| !auth.contains("anonymous") && auth != "null"), "{auths:?}");
}

#[tokio::test]
async fn refused_credentials_are_unauthorized_and_never_print_the_token() {
    let fake = start();
    let ours = claims(&fake, 0, 1, Some(OWNER)).await;
    let token = fake.started["token"].as_str().unwrap().to_owned();
    let wrong = "wrong-kubernetes-token-value";
    let text = std::fs::read_to_string(file(&fake, "kubeconfigToken")).unwrap();
    assert!(text.contains(&token));
    let path = format!("{}/kubeconfig-wrong.yaml", file(&fake, "dir"));
    std::fs::write(&path, text.replace(&token, wrong)).unwrap();
    for kubeconfig in [path, file(&fake, "kubeconfigForeign")] {
        let mut given = settings(&fake);
        given.set_option(kubernetes::KUBECONFIG, Some(kubeconfig.clone()));
        let provider = provider_with(given);
        for error in [
            provider.destroy(&ours[0]).await.unwrap_err(),
            provider.list_sandboxes().await.unwrap_err(),
            provider.check_access().await.unwrap_err(),
        ] {
            let message = format!("{error} {error:?}");
            assert!(unauthorized(&error), "{kubeconfig}: {message}");
            assert!(message.contains("401") && message.contains("kubeconfig"), "{message}");
            assert!(!message.contains(wrong) && !message.contains(&token), "{message}");
        }
    }
    assert_eq!(live_claims(&fake).await, ours);
}

#[tokio::test]
async fn bad_options_name_their_field_before_any_request() {
    let fake = start();
    type Change = Box<dyn Fn(&mut HostedSettings)>;
    let cases: Vec<(Change, &str)> = vec![
        (Box::new(|s| s.set_option(kubernetes::KIND, Some("Deployment".into()))), "kind"),
        (Box::new(|s| s.set_option(kubernetes::NAMESPACE, Some("Team A".into()))), "namespace"),
        (Box::new(|s| s.owner = "team/a".into()), "owner"),
        (Box::new(|s| s.set_option(kubernetes::CONTEXT, Some("nowhere".into()))), "context"),
        (Box::new(|s| s.set_option(kubernetes::KUBECONFIG, Some("/nonexistent/kubeconfig".into()))), "kubeconfig"),
        (Box::new(|s| s.api_url = Some("ftp://x".into())), "apiUrl"),
        (Box::new(|s| s.page_size = 501), "pageSize"),
    ];
    for (change, field) in cases {
        let mut given = settings(&fake);
        change(&mut given);
        let Err(error) = build_hosted(HostedVendor::Kubernetes, given) else { panic!("{field} was taken") };
        assert_eq!(field_of(&error), Some(field), "{error}");
    }
    let garbage = format!("{}/garbage.yaml", file(&fake, "dir"));
    std::fs::write(&garbage, "token: sekret-in-a-broken-file\n  - : [").unwrap();
    let error = KubernetesProvider::new(KubernetesConfig { kubeconfig: Some(garbage), ..KubernetesConfig::default() })
        .unwrap_err();
    assert_eq!(field_of(&error), Some("kubeconfig"));
    assert!(!error.to_string().contains("sekret"), "{error}");
    assert!(fake.state().await["requests"].as_array().unwrap().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn the_listing_reads_every_page_of_our_labelled_claims_and_nothing_else() {
    let fake = start();
    let ours = claims(&fake, 0, 7, Some(OWNER)).await;
    claims(&fake, 20, 2, Some("another-team")).await;
    claims(&fake, 30, 2, None).await;
    fake.seed(vec![object("SandboxClaim", "agents", "claim-900", Some(OWNER))]).await;
    fake.seed(vec![object("Pod", NS, "pod-1", Some(OWNER))]).await;
    let mut given = settings(&fake);
    given.page_size = 3;
    let provider = provider_with(given);
    let listed = provider.list_sandboxes().await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|sandbox| sandbox.id.as_str()).collect();
    assert_eq!(ids, ours, "the claims of our owner in the context's namespace only");
    assert!(listed.iter().all(|sandbox| sandbox.owner.as_deref() == Some(OWNER) && !sandbox.deleting));
    let created = listed[0].created_at.unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    assert!(now - created > 3_000_000 && now - created < 4_000_000, "an hour old: {created}");
    let pages = requests(&fake, "GET", "sandboxclaims").await;
    assert_eq!(pages.len(), 3, "{pages:?}");
    for page in &pages {
        let query = page["query"].as_str().unwrap();
        assert!(query.contains("labelSelector=io.sandbox-reclaim.owner%3Dsandbox-reclaim"), "{query}");
        assert!(query.contains("limit=3"), "{query}");
    }
    assert!(pages[1]["query"].as_str().unwrap().contains("continue="), "{pages:?}");

    let mut every = settings(&fake);
    every.set_option(kubernetes::NAMESPACE, Some("*".into()));
    let listed = provider_with(every).list_sandboxes().await.unwrap();
    assert!(listed.iter().any(|sandbox| sandbox.id == "agents_claim-900"), "{listed:?}");
    let mut pods = settings(&fake);
    pods.set_option(kubernetes::KIND, Some("Pod".into()));
    let listed = provider_with(pods).list_sandboxes().await.unwrap();
    assert_eq!(listed.iter().map(|sandbox| sandbox.id.as_str()).collect::<Vec<_>>(), ["default_pod-1"]);
}

#[tokio::test]
async fn destroy_deletes_in_the_foreground_and_gone_or_deleting_is_success() {
    let fake = start();
    let ours = claims(&fake, 0, 2, Some(OWNER)).await;
    let provider = provider(&fake);
    provider.destroy(&ours[0]).await.unwrap();
    assert_eq!(live_claims(&fake).await, [ours[1].clone()]);
    let deletes = requests(&fake, "DELETE", "sandboxclaims").await;
    assert!(deletes[0]["path"].as_str().unwrap().ends_with("/namespaces/default/sandboxclaims/claim-000"));
    let state = fake.state().await;
    let deleting = state["deleting"].to_string();
    assert!(deleting.contains("SandboxClaim/default/claim-000"), "foreground: the claim waits for its dependents");
    provider.destroy(&ours[0]).await.expect("deleting again is harmless");
    tokio::time::sleep(Duration::from_millis(400)).await;
    provider.destroy(&ours[0]).await.expect("404 is gone");
    let alive = fake.state().await["alive"].to_string();
    assert!(!alive.contains("claim-000"), "the claim, its Sandbox and Pod are gone: {alive}");
    for bad in ["claim-001", "default/claim-001", "Default_claim-001"] {
        let error = provider.destroy(bad).await.unwrap_err();
        assert_eq!(field_of(&error), Some("providerSandboxId"), "{bad}: {error}");
    }
    assert_eq!(requests(&fake, "DELETE", "sandboxclaims").await.len(), 3);
}

#[tokio::test]
async fn an_expired_continue_restarts_the_listing_once_then_fails_closed() {
    let fake = start();
    let ours = claims(&fake, 0, 5, Some(OWNER)).await;
    let mut given = settings(&fake);
    given.page_size = 2;
    let provider = provider_with(given);
    fake.faults(json!({ "expireContinue": 1 })).await;
    let listed = provider.list_sandboxes().await.unwrap();
    assert_eq!(listed.iter().map(|sandbox| sandbox.id.clone()).collect::<Vec<_>>(), ours);
    let firsts = requests(&fake, "GET", "sandboxclaims").await;
    let restarts = firsts.iter().filter(|page| !page["query"].as_str().unwrap().contains("continue=")).count();
    assert_eq!(restarts, 2, "one restart: {firsts:?}");

    fake.faults(json!({ "expireContinue": 2 })).await;
    let store = InMemorySandboxInstanceStore::with_ledger();
    let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!((orphans.status, orphans.destroyed), (SweepStatus::Unavailable, 0), "{orphans:?}");
    assert!(orphans.error.clone().unwrap_or_default().contains("410"), "{orphans:?}");
    assert_eq!(live_claims(&fake).await, ours);
}

#[tokio::test]
async fn throttled_deletes_wait_their_retry_after_and_failures_reach_the_ledger_without_the_token() {
    let fake = start();
    let ours = claims(&fake, 0, 4, Some(OWNER)).await;
    let provider = provider(&fake);
    fake.faults(json!({ "rateLimitDeletes": 2, "retryAfterSeconds": 1 })).await;
    let started = Instant::now();
    provider.destroy(&ours[0]).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(2), "{:?}", started.elapsed());
    fake.faults(json!({ "rateLimitDeletes": 1, "retryAfterSeconds": 3600 })).await;
    let throttled = provider.destroy(&ours[1]).await.unwrap_err().to_string();
    assert!(throttled.contains("429"), "{throttled}");

    fake.faults(json!({ "rateLimitDeletes": 0, "failDeleteEvery": 1 })).await;
    let store = InMemorySandboxInstanceStore::with_ledger();
    let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    assert_eq!(report.providers[0].orphans.failed, 3, "{:?}", report.providers[0]);
    let leaks = store.list_leaks(Some("kubernetes")).await.unwrap();
    let token = fake.started["token"].as_str().unwrap();
    assert_eq!(leaks.len(), 3);
    let ledger = format!("{leaks:?}");
    assert!(ledger.contains("500") && !ledger.contains(token), "{ledger}");
    fake.faults(json!({ "failDeleteEvery": 0 })).await;
    // The ledger's backoff (1 ms) must pass first: the store's clock is in milliseconds.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let again = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    assert_eq!(again.providers[0].leaks.destroyed, 3, "{:?}", again.providers[0]);
    assert!(live_claims(&fake).await.is_empty());
}

#[tokio::test]
async fn hanging_calls_are_cut_by_their_deadlines() {
    let fake = start();
    let ours = claims(&fake, 0, 2, Some(OWNER)).await;
    fake.faults(json!({ "hangDeletes": true })).await;
    let provider = provider(&fake);
    let store = InMemorySandboxInstanceStore::with_ledger();
    store.upsert(&record("k1", "kubernetes", &ours[0])).await.unwrap();
    let run = RunRecord::new("run-1", "thread-1", RunStatus::Completed).with_sandbox_key("k1");
    let options = ReclaimOptions::new(provider.as_ref(), &store).with_destroy_timeout(Duration::from_millis(300));
    assert_eq!(reclaim_sandbox(&run, options).await.unwrap(), ReclaimOutcome::DestroyFailed);
    assert_eq!(fake.abandoned(1).await, 1, "the deadline dropped the request itself");
    assert_eq!(store.list_leaks(Some("kubernetes")).await.unwrap().len(), 1);

    fake.faults(json!({ "hangDeletes": false, "hangLists": true })).await;
    let mut options = sweep_options(provider.as_ref(), &store);
    options.destroy_timeout = Some(Duration::from_millis(300));
    let started = Instant::now();
    let report = reconcile(options).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let orphans = &report.providers[0].orphans;
    assert_eq!((orphans.status, orphans.destroyed), (SweepStatus::Unavailable, 0), "{orphans:?}");
}

#[tokio::test]
async fn repeated_items_are_destroyed_once_and_deleting_ones_never() {
    let fake = start();
    let ours = claims(&fake, 0, 7, Some(OWNER)).await;
    let bare = claims(&fake, 30, 2, None).await;
    let mut stuck = object("SandboxClaim", NS, "claim-050", Some(OWNER));
    stuck["deleting"] = json!(true);
    fake.seed(vec![stuck]).await;
    fake.faults(json!({ "repeatAcrossPages": true })).await;
    let mut given = settings(&fake);
    given.page_size = 3;
    let provider = provider_with(given);
    let listed = provider.list_sandboxes().await.unwrap();
    assert_eq!(listed.len(), 8, "{listed:?}");
    assert!(listed.iter().find(|sandbox| sandbox.id == "default_claim-050").unwrap().deleting);
    let store = InMemorySandboxInstanceStore::with_ledger();
    let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.status, SweepStatus::Swept, "{orphans:?}");
    assert_eq!(orphans.destroyed, 7, "{orphans:?}");
    for id in &ours {
        let name = id.split_once('_').unwrap().1;
        assert_eq!(fake.deletes_of(name).await, 1, "{id}");
    }
    assert_eq!(fake.deletes_of("claim-050").await, 0, "a deleting object is never deleted again");
    let mut live = live_claims(&fake).await;
    live.retain(|id| !id.ends_with("claim-050"));
    assert_eq!(live, bare, "unlabelled and unregistered: never touched");
}

#[tokio::test]
async fn a_malformed_page_makes_the_sweep_unavailable() {
    let fake = start();
    let ours = claims(&fake, 0, 5, Some(OWNER)).await;
    fake.faults(json!({ "malformedPage": 2 })).await;
    let mut given = settings(&fake);
    given.page_size = 2;
    let provider = provider_with(given);
    let store = InMemorySandboxInstanceStore::with_ledger();
    let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!((orphans.status, orphans.destroyed), (SweepStatus::Unavailable, 0), "{orphans:?}");
    assert!(orphans.error.clone().unwrap_or_default().contains("sandboxclaims"), "{orphans:?}");
    assert_eq!(live_claims(&fake).await, ours);
}

#[tokio::test]
async fn sweeping_unlabelled_claims_destroys_only_what_the_registry_names() {
    let fake = start();
    let bare = claims(&fake, 0, 3, None).await;
    let theirs = claims(&fake, 10, 1, Some("another-team")).await;
    let labelled_only = provider(&fake);
    let mut all = settings(&fake);
    all.sweep_unlabelled = true;
    let unlabelled = provider_with(all);
    assert!(!unlabelled.can_lookup(), "the listing already takes every object");
    let ids = hosted_support::Unlabelled {
        registered: &bare[0],
        stranger: &bare[1],
        referenced: &bare[2],
        theirs: &theirs[0],
    };
    // As hosted_support's shared sweep, read through the fake's `Kind/ns/name` names.
    let store = InMemorySandboxInstanceStore::with_ledger();
    for (key, id) in [("k0", ids.registered), ("k2", ids.referenced), ("kt", ids.theirs)] {
        store.upsert(&record(key, "kubernetes", id)).await.unwrap();
    }
    store.delete("k0").await.unwrap();
    store.delete("kt").await.unwrap();
    let report = reconcile(sweep_options(unlabelled.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!(
        (orphans.status, orphans.listed, orphans.foreign, orphans.referenced, orphans.destroyed),
        (SweepStatus::Swept, 4, 2, 1, 1),
        "{orphans:?}"
    );
    let mut expected = vec![ids.stranger.to_owned(), ids.referenced.to_owned(), ids.theirs.to_owned()];
    expected.sort();
    assert_eq!(live_claims(&fake).await, expected);
    let report = reconcile(sweep_options(labelled_only.as_ref(), &store)).await.unwrap();
    assert_eq!(report.providers[0].orphans.destroyed, 0, "{:?}", report.providers[0]);
}

#[tokio::test]
async fn registered_objects_whose_records_are_gone_are_found_by_name() {
    let fake = start();
    let bare = claims(&fake, 0, 2, None).await;
    let provider = provider(&fake);
    assert!(provider.can_lookup());
    let store = InMemorySandboxInstanceStore::with_ledger();
    for (key, id) in [("k-reg", &bare[0]), ("k-gone", &"default_claim-999".to_owned())] {
        store.upsert(&record(key, "kubernetes", id)).await.unwrap();
        store.delete(key).await.unwrap();
    }
    let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!((orphans.status, orphans.found, orphans.destroyed), (SweepStatus::Swept, 1, 1), "{orphans:?}");
    assert_eq!(live_claims(&fake).await, [bare[1].clone()]);
    let gets = requests(&fake, "GET", "sandboxclaims/claim-").await;
    assert!(gets.iter().any(|get| get["path"].as_str().unwrap().ends_with("/claim-000")), "{gets:?}");
    let found = provider.lookup_sandboxes(&[bare[1].clone(), "not an id".into(), "default_claim-999".into()]).await;
    let found = found.unwrap();
    assert_eq!(found.iter().map(|sandbox| sandbox.id.as_str()).collect::<Vec<_>>(), [bare[1].as_str()]);
}
