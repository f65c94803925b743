//! Sprites, Runloop and Blaxel (entries that cannot filter a listing by owner:
//! the engine lists everything and keeps ours by label) against their fakes
//! (tests/fakes/{sprites,runloop,blaxel}.mjs): one table of vendors through
//! the same cases, then each vendor's own states.
#![cfg(feature = "hosted")]

mod hosted_support;

use std::time::{Duration, Instant};

use hosted_support::scripted::{self, PageFormat};
use hosted_support::{record, sweep_options, Fake};
use sandbox_reclaim::options::provider::{HostedSettings, ListingCeilings};
use sandbox_reclaim::providers::build_hosted;
use sandbox_reclaim::providers::hosted::blaxel;
use sandbox_reclaim::providers::HostedVendor;
use sandbox_reclaim::{
    reclaim_sandbox, reconcile, HostedError, HostedSandboxProvider, InMemorySandboxInstanceStore, LeakLedger,
    ProviderError, ReclaimOptions, ReclaimOutcome, ReconcileOptions, RunRecord, RunStatus, SandboxInstanceStore,
    SandboxProvider, SweepStatus,
};
use serde_json::{json, Value};

const OWNER: &str = "sandbox-reclaim";
const OWNER_LABEL: &str = "io.sandbox-reclaim.owner";

/// One vendor's row: its fake, its credential and its wire shapes.
struct Vendor {
    kind: HostedVendor,
    /// The provider's default name (records' `provider`) and its fake's script name.
    name: &'static str,
    key: &'static str,
    credential: &'static str,
    /// What the client's `api_url` adds to the fake's origin.
    suffix: &'static str,
    workspace: Option<&'static str>,
    /// A seed item: id, owner label (`None`: unlabelled), status (`None`: the fake's default).
    item: fn(&str, Option<&str>, Option<&str>) -> Value,
    /// The destroy's method and what its path ends with after the id.
    destroy: (&'static str, &'static str),
}

fn sprite(id: &str, owner: Option<&str>, status: Option<&str>) -> Value {
    let labels: Vec<String> = owner.map(|owner| format!("{OWNER_LABEL}={owner}")).into_iter().collect();
    json!({ "name": id, "labels": labels, "status": status.unwrap_or("cold") })
}

fn devbox(id: &str, owner: Option<&str>, status: Option<&str>) -> Value {
    let metadata = owner.map_or(json!({}), |owner| json!({ OWNER_LABEL: owner }));
    json!({ "id": id, "metadata": metadata, "status": status.unwrap_or("running") })
}

fn blaxel_sandbox(id: &str, owner: Option<&str>, status: Option<&str>) -> Value {
    let labels = owner.map_or(json!({}), |owner| json!({ OWNER_LABEL: owner }));
    json!({ "name": id, "labels": labels, "status": status.unwrap_or("DEPLOYED") })
}

fn sprites_page(ids: &[String], next: Option<&str>) -> scripted::Answer {
    let items: Vec<Value> = ids
        .iter()
        .map(|id| json!({ "name": id, "created_at": "2026-01-01T00:00:00Z", "labels": [format!("{OWNER_LABEL}={OWNER}")] }))
        .collect();
    let body = json!({ "sprites": items, "has_more": next.is_some(), "next_continuation_token": next });
    scripted::Answer { headers: vec![], body: body.to_string() }
}

fn blaxel_page_in(ids: &[String], next: Option<&str>, status: &str) -> scripted::Answer {
    let items: Vec<Value> = ids
        .iter()
        .map(|id| {
            json!({ "metadata": { "name": id, "createdAt": "2026-01-01T00:00:00Z", "labels": { OWNER_LABEL: OWNER } },
                    "spec": {}, "status": status })
        })
        .collect();
    let body = json!({ "data": items, "meta": { "hasMore": next.is_some(), "nextCursor": next.unwrap_or("") } });
    scripted::Answer { headers: vec![], body: body.to_string() }
}

fn sprites_pages() -> PageFormat {
    PageFormat { cursor_parameter: "continuation_token", page: sprites_page }
}

fn blaxel_pages() -> PageFormat {
    PageFormat { cursor_parameter: "cursor", page: |ids, next| blaxel_page_in(ids, next, "DEPLOYED") }
}

const SPRITES: Vendor = Vendor {
    kind: HostedVendor::Sprites,
    name: "sprites",
    key: "sprites_test_token",
    credential: "SPRITES_API_KEY",
    suffix: "",
    workspace: None,
    item: sprite,
    destroy: ("DELETE", ""),
};
const RUNLOOP: Vendor = Vendor {
    kind: HostedVendor::Runloop,
    name: "runloop",
    key: "runloop_test_key",
    credential: "RUNLOOP_API_KEY",
    suffix: "",
    workspace: None,
    item: devbox,
    destroy: ("POST", "/shutdown"),
};
const BLAXEL: Vendor = Vendor {
    kind: HostedVendor::Blaxel,
    name: "blaxel",
    key: "bl_test_key",
    credential: "BL_API_KEY",
    suffix: "/v0",
    workspace: Some("ws-test"),
    item: blaxel_sandbox,
    destroy: ("DELETE", ""),
};
const VENDORS: [&Vendor; 3] = [&SPRITES, &RUNLOOP, &BLAXEL];

impl Vendor {
    fn start(&self) -> Fake {
        let mut args = vec!["--key", self.key];
        if let Some(workspace) = self.workspace {
            args.extend(["--workspace", workspace]);
        }
        Fake::start(&format!("{}.mjs", self.name), &args)
    }

    fn settings(&self, url: &str, key: &str, page_size: u32) -> HostedSettings {
        let mut settings = HostedSettings::defaults(self.kind);
        settings.api_key = Some(key.to_owned());
        settings.api_url = Some(url.to_owned());
        settings.set_option(blaxel::WORKSPACE, self.workspace.map(str::to_owned));
        settings.page_size = page_size;
        settings.request_timeout = Duration::from_secs(10);
        settings
    }

    fn build(&self, settings: HostedSettings) -> Box<dyn HostedSandboxProvider> {
        build_hosted(self.kind, settings).unwrap()
    }

    fn provider(&self, fake: &Fake, key: &str, page_size: u32) -> Box<dyn HostedSandboxProvider> {
        self.build(self.settings(&format!("{}{}", fake.url, self.suffix), key, page_size))
    }

    /// `{prefix}{i}` for `i` in `0..count`.
    fn items(&self, prefix: &str, count: usize, owner: Option<&str>, status: Option<&str>) -> Vec<Value> {
        (0..count).map(|index| (self.item)(&format!("{prefix}{index}"), owner, status)).collect()
    }

    /// How many destroy requests reached `id`.
    async fn destroys(&self, fake: &Fake, id: &str) -> usize {
        let (method, tail) = self.destroy;
        let suffix = format!("/{id}{tail}");
        let state = fake.state().await;
        let requests = state["requests"].as_array().unwrap();
        requests.iter().filter(|r| r["method"] == method && r["path"].as_str().unwrap().ends_with(&suffix)).count()
    }
}

#[tokio::test]
async fn destroy_ends_the_sandbox_for_good_and_reads_already_gone_as_success() {
    for vendor in VENDORS {
        let fake = vendor.start();
        fake.seed(vendor.items("box", 2, Some(OWNER), None)).await;
        let provider = vendor.provider(&fake, vendor.key, 50);
        provider.destroy("box0").await.unwrap();
        assert_eq!(fake.alive().await, ["box1"], "{}", vendor.name);
        provider.destroy("box0").await.unwrap_or_else(|error| panic!("{}: again is success: {error}", vendor.name));
        provider.destroy("never-existed").await.unwrap_or_else(|error| panic!("{}: unknown: {error}", vendor.name));
        assert!(provider.destroy("a/b").await.is_err(), "{}: a bad id is refused", vendor.name);
        let listed = provider.list_sandboxes().await.unwrap();
        let ids: Vec<&str> = listed.iter().map(|sandbox| sandbox.id.as_str()).collect();
        assert_eq!(ids, ["box1"], "{}: the destroyed one is never listed to the sweep", vendor.name);
        if vendor.name == "runloop" {
            // Runloop never deletes: the devbox stays listed, shut down for good.
            assert_eq!(fake.state().await["statuses"]["box0"], "shutdown");
        }
    }
}

#[tokio::test]
async fn a_wrong_key_names_the_credential_variable_and_never_the_key() {
    for vendor in VENDORS {
        let fake = vendor.start();
        let secret = format!("{}_wrong_secret", vendor.name);
        let provider = vendor.provider(&fake, &secret, 50);
        for error in [
            provider.destroy("box0").await.unwrap_err(),
            provider.list_sandboxes().await.unwrap_err(),
            provider.check_access().await.unwrap_err(),
        ] {
            let message = error.to_string();
            assert!(message.contains(vendor.credential), "{}: {message}", vendor.name);
            assert!(!message.contains(&secret), "{}: {message}", vendor.name);
            let ProviderError::Backend(inner) = &error else { panic!("{}: {error:?}", vendor.name) };
            let unauthorized = matches!(inner.downcast_ref::<HostedError>(), Some(HostedError::Unauthorized(_)));
            assert!(unauthorized, "{}: {error:?}", vendor.name);
        }
    }
}

#[tokio::test]
async fn server_errors_fail_and_rate_limits_wait_for_retry_after() {
    for vendor in VENDORS {
        let fake = vendor.start();
        fake.seed(vendor.items("box", 1, Some(OWNER), None)).await;
        let provider = vendor.provider(&fake, vendor.key, 50);
        fake.faults(json!({ "failDeleteEvery": 1 })).await;
        let failed = provider.destroy("box0").await.unwrap_err().to_string();
        assert!(failed.contains("HTTP 500"), "{}: {failed}", vendor.name);
        assert_eq!(fake.alive().await, ["box0"], "{}", vendor.name);
        fake.faults(json!({ "failDeleteEvery": 0, "rateLimitDeletes": 1, "retryAfterSeconds": 0.3 })).await;
        let started = Instant::now();
        provider.destroy("box0").await.unwrap_or_else(|error| panic!("{}: {error}", vendor.name));
        assert!(started.elapsed() >= Duration::from_millis(300), "{}: {:?}", vendor.name, started.elapsed());
        assert!(fake.alive().await.is_empty(), "{}", vendor.name);
    }
}

#[tokio::test]
async fn a_hanging_destroy_is_cut_by_the_deadline_and_reaches_the_ledger() {
    for vendor in VENDORS {
        let fake = vendor.start();
        fake.seed(vendor.items("box", 1, Some(OWNER), None)).await;
        fake.faults(json!({ "hangDeletes": true })).await;
        let provider = vendor.provider(&fake, vendor.key, 50);
        let store = InMemorySandboxInstanceStore::with_ledger();
        store.upsert(&record("k1", vendor.name, "box0")).await.unwrap();
        let run = RunRecord::new("run-1", "thread-1", RunStatus::Completed).with_sandbox_key("k1");
        let options = ReclaimOptions::new(provider.as_ref(), &store).with_destroy_timeout(Duration::from_millis(300));
        assert_eq!(reclaim_sandbox(&run, options).await.unwrap(), ReclaimOutcome::DestroyFailed, "{}", vendor.name);
        assert_eq!(fake.abandoned(1).await, 1, "{}: the deadline dropped the request itself", vendor.name);
        assert_eq!(store.list_leaks(Some(vendor.name)).await.unwrap().len(), 1, "{}", vendor.name);
    }
}

#[tokio::test]
async fn the_sweep_reads_every_page_once_and_keeps_only_ours_client_side() {
    for vendor in VENDORS {
        let fake = vendor.start();
        fake.seed(vendor.items("ours", 9, Some(OWNER), None)).await;
        fake.seed(vendor.items("theirs", 2, Some("another-team"), None)).await;
        fake.seed(vendor.items("bare", 2, None, None)).await;
        fake.faults(json!({ "repeatAcrossPages": true })).await;
        let provider = vendor.provider(&fake, vendor.key, 4);
        let listed = provider.list_sandboxes().await.unwrap();
        let mut ids: Vec<&str> = listed.iter().map(|sandbox| sandbox.id.as_str()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!((listed.len(), ids.len()), (9, 9), "{}: ours once each: {ids:?}", vendor.name);
        let store = InMemorySandboxInstanceStore::with_ledger();
        let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
        let orphans = &report.providers[0].orphans;
        assert_eq!(orphans.status, SweepStatus::Swept, "{}: {orphans:?}", vendor.name);
        assert_eq!((orphans.listed, orphans.found, orphans.destroyed), (9, 9, 9), "{}: {orphans:?}", vendor.name);
        assert_eq!(fake.alive().await, ["bare0", "bare1", "theirs0", "theirs1"], "{}", vendor.name);
        for index in 0..9 {
            assert_eq!(vendor.destroys(&fake, &format!("ours{index}")).await, 1, "{}: ours{index}", vendor.name);
        }
    }
}

#[tokio::test]
async fn failed_destroys_reach_the_ledger_and_are_retried_never_twice_after_success() {
    for vendor in VENDORS {
        let fake = vendor.start();
        fake.seed(vendor.items("ours", 6, Some(OWNER), None)).await;
        // Sprites and Blaxel list a deleted one a while (Runloop: forever, shut down).
        fake.faults(json!({ "failDeleteEvery": 2, "deletedStayListedMs": 60_000 })).await;
        let provider = vendor.provider(&fake, vendor.key, 4);
        let store = InMemorySandboxInstanceStore::with_ledger();
        let first = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
        assert_eq!(first.providers[0].orphans.failed, 3, "{}: {:?}", vendor.name, first.providers[0]);
        assert_eq!(store.list_leaks(Some(vendor.name)).await.unwrap().len(), 3, "{}", vendor.name);
        fake.faults(json!({ "failDeleteEvery": 0 })).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        let second = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
        assert_eq!(second.providers[0].leaks.destroyed, 3, "{}: {:?}", vendor.name, second.providers[0]);
        assert_eq!(second.providers[0].orphans.found, 0, "{}: {:?}", vendor.name, second.providers[0]);
        assert!(fake.alive().await.is_empty(), "{}", vendor.name);
        let third = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
        assert_eq!(third.providers[0].orphans.found, 0, "{}: {:?}", vendor.name, third.providers[0]);
        for index in 0..6 {
            let id = format!("ours{index}");
            assert!(vendor.destroys(&fake, &id).await <= 2, "{}: {id}", vendor.name);
        }
    }
}

#[tokio::test]
async fn a_malformed_page_makes_the_sweep_unavailable() {
    for vendor in VENDORS {
        let fake = vendor.start();
        fake.seed(vendor.items("ours", 5, Some(OWNER), None)).await;
        fake.faults(json!({ "malformedPage": 2 })).await;
        let provider = vendor.provider(&fake, vendor.key, 2);
        let store = InMemorySandboxInstanceStore::with_ledger();
        let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
        let orphans = &report.providers[0].orphans;
        assert_eq!((orphans.status, orphans.destroyed), (SweepStatus::Unavailable, 0), "{}: {orphans:?}", vendor.name);
        assert_eq!(fake.alive().await.len(), 5, "{}", vendor.name);
    }
}

#[tokio::test]
async fn sweeping_unlabelled_sandboxes_destroys_only_what_the_registry_names() {
    for vendor in VENDORS {
        let fake = vendor.start();
        fake.seed(vendor.items("tan", 3, None, None)).await;
        fake.seed(vendor.items("theirs", 1, Some("another-team"), None)).await;
        let url = format!("{}{}", fake.url, vendor.suffix);
        let labelled_only = vendor.build(vendor.settings(&url, vendor.key, 2));
        let mut settings = vendor.settings(&url, vendor.key, 2);
        settings.sweep_unlabelled = true;
        let unlabelled = vendor.build(settings);
        let ids =
            hosted_support::Unlabelled { registered: "tan0", stranger: "tan1", referenced: "tan2", theirs: "theirs0" };
        if vendor.destroy.0 == "DELETE" {
            hosted_support::sweeping_unlabelled_destroys_only_what_the_registry_names(
                &fake,
                vendor.name,
                ids,
                labelled_only.as_ref(),
                unlabelled.as_ref(),
            )
            .await;
            continue;
        }
        // Runloop shuts down (a POST): the shared helper counts DELETEs only,
        // so this is its pass with the shutdowns counted instead.
        let store = InMemorySandboxInstanceStore::with_ledger();
        for (key, id) in [("k0", ids.registered), ("k2", ids.referenced), ("kt", ids.theirs)] {
            store.upsert(&record(key, vendor.name, id)).await.unwrap();
        }
        store.delete("k0").await.unwrap();
        store.delete("kt").await.unwrap();
        // The listing alone (the lookup by id is tests/hosted_lookup.rs's).
        let listing_only = hosted_support::ListingOnly(labelled_only.as_ref());
        let report = reconcile(sweep_options(&listing_only, &store)).await.unwrap();
        let orphans = &report.providers[0].orphans;
        assert_eq!((orphans.status, orphans.listed, orphans.destroyed), (SweepStatus::Swept, 0, 0), "{orphans:?}");
        let report = reconcile(sweep_options(unlabelled.as_ref(), &store)).await.unwrap();
        let orphans = &report.providers[0].orphans;
        assert_eq!(orphans.status, SweepStatus::Swept, "{orphans:?}");
        let counts = (orphans.listed, orphans.foreign, orphans.referenced, orphans.found, orphans.destroyed);
        assert_eq!(counts, (4, 2, 1, 1, 1), "{orphans:?}");
        assert_eq!(fake.alive().await, ["tan1", "tan2", "theirs0"]);
        assert_eq!(vendor.destroys(&fake, "tan0").await, 1);
    }
}

fn scripted_maker(vendor: &'static Vendor) -> impl Fn(&str, ListingCeilings) -> Box<dyn SandboxProvider> {
    move |url, ceilings| {
        let mut settings = vendor.settings(url, vendor.key, 3);
        settings.listing_ceilings = ceilings;
        let provider: Box<dyn SandboxProvider> = vendor.build(settings);
        provider
    }
}

#[tokio::test]
async fn a_cursor_cycle_fails_the_listing_closed() {
    for (vendor, pages) in [(&SPRITES, sprites_pages as fn() -> PageFormat), (&BLAXEL, blaxel_pages)] {
        let make = scripted_maker(vendor);
        scripted::a_cursor_cycle_fails_the_listing_closed(pages, &make).await;
        scripted::a_listing_past_a_ceiling_fails_closed(pages, &make).await;
        scripted::a_sandbox_on_several_pages_is_listed_once(pages, &make).await;
    }
    // Runloop's cursor is the last id: the fake's page 2 ends where page 1 did.
    for vendor in VENDORS {
        let fake = vendor.start();
        fake.seed(vendor.items("ours", 9, Some(OWNER), None)).await;
        fake.faults(json!({ "cycleCursor": true })).await;
        let provider = vendor.provider(&fake, vendor.key, 3);
        let error = provider.list_sandboxes().await.expect_err("a cursor cycle fails the listing").to_string();
        assert!(error.contains("cursor cycle"), "{}: {error}", vendor.name);
        let store = InMemorySandboxInstanceStore::with_ledger();
        let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
        let orphans = &report.providers[0].orphans;
        assert_eq!((orphans.status, orphans.destroyed), (SweepStatus::Unavailable, 0), "{}: {orphans:?}", vendor.name);
        assert_eq!(fake.alive().await.len(), 9, "{}", vendor.name);
    }
}

#[tokio::test]
async fn runloop_sweeps_suspended_devboxes_and_never_touches_terminal_ones() {
    let fake = RUNLOOP.start();
    fake.seed(RUNLOOP.items("sus", 2, Some(OWNER), Some("suspended"))).await;
    fake.seed(RUNLOOP.items("down", 2, Some(OWNER), Some("shutdown"))).await;
    fake.seed(RUNLOOP.items("failed", 2, Some(OWNER), Some("failure"))).await;
    let provider = RUNLOOP.provider(&fake, RUNLOOP.key, 2);
    let store = InMemorySandboxInstanceStore::with_ledger();
    let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!(orphans.status, SweepStatus::Swept, "{orphans:?}");
    assert_eq!((orphans.listed, orphans.found, orphans.destroyed), (2, 2, 2), "{orphans:?}");
    let state = fake.state().await;
    for id in ["sus0", "sus1", "down0", "down1"] {
        assert_eq!(state["statuses"][id], "shutdown", "{state}");
    }
    assert_eq!(
        (state["statuses"]["failed0"].as_str(), state["statuses"]["failed1"].as_str()),
        (Some("failure"), Some("failure"))
    );
    for id in ["down0", "down1", "failed0", "failed1"] {
        assert_eq!(RUNLOOP.destroys(&fake, id).await, 0, "{id}");
    }
    let again = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &again.providers[0].orphans;
    assert_eq!((orphans.listed, orphans.found, orphans.destroyed), (0, 0, 0), "{orphans:?}");
}

#[tokio::test]
async fn blaxel_deleting_sandboxes_are_reported_and_tombstones_never_swept() {
    let fake = BLAXEL.start();
    fake.seed(BLAXEL.items("going", 1, Some(OWNER), Some("DELETING"))).await;
    fake.seed(BLAXEL.items("live", 2, Some(OWNER), None)).await;
    fake.faults(json!({ "deletedStayListedMs": 60_000 })).await;
    let provider = BLAXEL.provider(&fake, BLAXEL.key, 2);
    let listed = provider.list_sandboxes().await.unwrap();
    let deleting: Vec<(&str, bool)> = listed.iter().map(|sandbox| (sandbox.id.as_str(), sandbox.deleting)).collect();
    assert!(deleting.contains(&("going0", true)) && deleting.contains(&("live0", false)), "{deleting:?}");
    let store = InMemorySandboxInstanceStore::with_ledger();
    let report = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!((orphans.listed, orphans.deleting, orphans.found, orphans.destroyed), (3, 1, 2, 2), "{orphans:?}");
    assert_eq!(BLAXEL.destroys(&fake, "going0").await, 0);
    // The deleted ones now list `DELETING`: reported, never destroyed again.
    let again = reconcile(sweep_options(provider.as_ref(), &store)).await.unwrap();
    let orphans = &again.providers[0].orphans;
    assert_eq!((orphans.listed, orphans.deleting, orphans.found), (3, 3, 0), "{orphans:?}");
    for id in ["live0", "live1"] {
        assert_eq!(BLAXEL.destroys(&fake, id).await, 1, "{id}");
    }
    // A `TERMINATED` tombstone, were one listed, is gone: left out.
    let tombstones =
        PageFormat { cursor_parameter: "cursor", page: |ids, next| blaxel_page_in(ids, next, "TERMINATED") };
    let vendor = scripted::Scripted::start(tombstones, |_, _| (vec!["dead0".to_owned(), "dead1".to_owned()], None));
    let provider = scripted_maker(&BLAXEL)(&vendor.url, ListingCeilings::default());
    assert!(provider.list_sandboxes().await.unwrap().is_empty());
    let store = InMemorySandboxInstanceStore::with_ledger();
    let mut options = ReconcileOptions::new(vec![provider.as_ref()], &store);
    options.orphan_grace = Duration::from_secs(60);
    let report = reconcile(options).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!((orphans.status, orphans.listed, orphans.found), (SweepStatus::Swept, 0, 0), "{orphans:?}");
    assert!(vendor.requests().iter().all(|request| request.starts_with("GET ")), "{:?}", vendor.requests());
}

#[tokio::test]
async fn a_tanstack_sprite_without_labels_is_reclaimed_by_its_record() {
    let fake = SPRITES.start();
    let id = "0123456789abcdef";
    fake.seed(vec![sprite(id, None, Some("warm")), sprite("other", None, None)]).await;
    let provider = SPRITES.provider(&fake, SPRITES.key, 50);
    let store = InMemorySandboxInstanceStore::with_ledger();
    store.upsert(&record("k1", "sprites", id)).await.unwrap();
    let run = RunRecord::new("run-1", "thread-1", RunStatus::Completed).with_sandbox_key("k1");
    let options = ReclaimOptions::new(provider.as_ref(), &store).with_destroy_timeout(Duration::from_secs(5));
    assert_eq!(reclaim_sandbox(&run, options).await.unwrap(), ReclaimOutcome::Destroyed);
    assert_eq!(fake.alive().await, ["other"]);
    assert_eq!(SPRITES.destroys(&fake, id).await, 1);
    assert!(store.list_leaks(Some("sprites")).await.unwrap().is_empty());
}
