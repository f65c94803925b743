//! Registered sandboxes found without listing the whole account, on every
//! hosted vendor's fake: TanStack's providers label nothing, so a sandbox
//! whose destroy was swallowed and whose record was deleted is found only by
//! id. With the default settings (no `sweep_unlabelled`), reconcile looks up
//! what the store's registry names and the listing did not show (the
//! vendor's get) and destroys it; an unlabelled sandbox nobody registered, a
//! registered one labelled for another owner and a registered one already
//! gone are never touched.
#![cfg(feature = "hosted")]

mod hosted_support;

use std::time::Duration;

use hosted_support::Fake;
use sandbox_reclaim::options::provider::HostedSettings;
use sandbox_reclaim::providers::build_hosted;
use sandbox_reclaim::providers::hosted::{blaxel, vercel};
use sandbox_reclaim::providers::HostedVendor;
use sandbox_reclaim::{
    reconcile, InMemorySandboxInstanceStore, ReconcileOptions, SandboxInstanceRecord, SandboxInstanceStore,
    SandboxProvider, SweepStatus,
};
use serde_json::{json, Value};

const OWNER: &str = "io.sandbox-reclaim.owner";
const OLD: &str = "2026-01-01T00:00:00Z";
const OLD_MS: u64 = 1_767_225_600_000;

/// One vendor: its fake, how it starts, its settings, and a sandbox as its fake seeds it.
struct Vendor {
    vendor: HostedVendor,
    script: &'static str,
    args: &'static [&'static str],
    url_suffix: &'static str,
    seed: fn(&str, Option<&str>) -> Value,
}

const VENDORS: &[Vendor] = &[
    Vendor {
        vendor: HostedVendor::E2b,
        script: "e2b.mjs",
        args: &["--key", "k"],
        url_suffix: "",
        seed: |id, owner| json!({ "sandboxID": id, "startedAt": OLD, "metadata": labels(owner) }),
    },
    Vendor {
        vendor: HostedVendor::Daytona,
        script: "daytona.mjs",
        args: &["--key", "k"],
        url_suffix: "",
        seed: |id, owner| json!({ "id": id, "labels": labels(owner), "state": "started", "createdAt": OLD }),
    },
    Vendor {
        vendor: HostedVendor::Vercel,
        script: "vercel.mjs",
        args: &["--token", "k", "--team", "team_t", "--project", "prj_p"],
        url_suffix: "",
        seed: |id, owner| json!({ "name": id, "tags": labels(owner), "status": "running", "createdAt": OLD_MS }),
    },
    Vendor {
        vendor: HostedVendor::Sprites,
        script: "sprites.mjs",
        args: &["--key", "k"],
        url_suffix: "",
        seed: |id, owner| {
            let labels: Vec<String> = owner.map(|owner| format!("{OWNER}={owner}")).into_iter().collect();
            json!({ "name": id, "labels": labels, "status": "warm", "createdAt": OLD_MS })
        },
    },
    Vendor {
        vendor: HostedVendor::Runloop,
        script: "runloop.mjs",
        args: &["--key", "k"],
        url_suffix: "",
        seed: |id, owner| json!({ "id": id, "metadata": labels(owner), "status": "suspended", "createTimeMs": OLD_MS }),
    },
    Vendor {
        vendor: HostedVendor::Blaxel,
        script: "blaxel.mjs",
        args: &["--key", "k", "--workspace", "ws"],
        url_suffix: "/v0",
        seed: |id, owner| json!({ "name": id, "labels": labels(owner), "status": "DEPLOYED", "createdAt": OLD_MS }),
    },
];

fn labels(owner: Option<&str>) -> Value {
    owner.map_or_else(|| json!({}), |owner| json!({ OWNER: owner }))
}

fn provider(vendor: &Vendor, fake: &Fake) -> Box<dyn sandbox_reclaim::HostedSandboxProvider> {
    let mut settings = HostedSettings::defaults(vendor.vendor);
    settings.api_key = Some("k".into());
    settings.api_url = Some(format!("{}{}", fake.url, vendor.url_suffix));
    settings.set_option(vercel::TEAM_ID, Some("team_t".into()));
    settings.set_option(vercel::PROJECT_ID, Some("prj_p".into()));
    settings.set_option(blaxel::WORKSPACE, Some("ws".into()));
    settings.request_timeout = Duration::from_secs(10);
    // Each vendor takes only its own options.
    let spec = vendor.vendor.spec();
    settings.options.retain(|key, _| spec.own_options().any(|option| option.name.node == *key));
    build_hosted(vendor.vendor, settings).unwrap()
}

async fn registered(store: &InMemorySandboxInstanceStore, provider: &str, key: &str, id: &str) {
    let record = SandboxInstanceRecord {
        key: key.to_owned(),
        provider: provider.to_owned(),
        provider_sandbox_id: id.to_owned(),
        latest_snapshot_id: None,
        thread_id: "thread".to_owned(),
        latest_run_id: None,
        updated_at: 1,
    };
    store.upsert(&record).await.unwrap();
    store.delete(key).await.unwrap();
}

#[tokio::test]
async fn registered_sandboxes_whose_records_are_gone_are_found_by_id_and_destroyed_on_every_vendor() {
    for vendor in VENDORS {
        let name = vendor.vendor.spec().key;
        let fake = Fake::start(vendor.script, vendor.args);
        fake.seed(vec![
            (vendor.seed)("reg-1", None),
            (vendor.seed)("stranger-1", None),
            (vendor.seed)("theirs-1", Some("another-team")),
        ])
        .await;
        let provider = provider(vendor, &fake);
        assert!(provider.can_lookup(), "{name}: every vendor here has a get");
        let store = InMemorySandboxInstanceStore::with_ledger();
        registered(&store, name, "k-reg", "reg-1").await;
        registered(&store, name, "k-theirs", "theirs-1").await;
        registered(&store, name, "k-gone", "gone-1").await;
        let mut options = ReconcileOptions::new(vec![provider.as_ref() as &dyn SandboxProvider], &store);
        options.orphan_grace = Duration::from_secs(60);
        let report = reconcile(options).await.unwrap();
        let orphans = &report.providers[0].orphans;
        assert_eq!(orphans.status, SweepStatus::Swept, "{name}: {orphans:?}");
        assert_eq!((orphans.found, orphans.destroyed, orphans.foreign), (1, 1, 1), "{name}: {orphans:?}");
        let mut alive = fake.alive().await;
        alive.sort();
        assert_eq!(alive, ["stranger-1", "theirs-1"], "{name}: only the registered unlabelled one went");
        let state = fake.state().await;
        let gets: Vec<&str> = state["requests"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|request| request["method"] == "GET" && !request["path"].as_str().unwrap().ends_with("sandboxes"))
            .filter_map(|request| request["path"].as_str())
            .filter(|path| path.contains("-1") || path.contains("gone"))
            .collect();
        assert!(gets.iter().any(|path| path.contains("reg-1")), "{name}: looked up by id: {gets:?}");
        assert!(!gets.iter().any(|path| path.contains("stranger-1")), "{name}: never a stranger: {gets:?}");
    }
}

#[tokio::test]
async fn a_failing_get_fails_the_sweep_closed_and_sweeping_unlabelled_needs_no_lookup() {
    let vendor = &VENDORS[3]; // Sprites: its fake answers a wrong key with 401
    let fake = Fake::start(vendor.script, vendor.args);
    fake.seed(vec![(vendor.seed)("reg-1", None)]).await;
    let store = InMemorySandboxInstanceStore::with_ledger();
    registered(&store, "sprites", "k-reg", "reg-1").await;

    let mut settings = HostedSettings::defaults(HostedVendor::Sprites);
    settings.api_key = Some("k".into());
    settings.api_url = Some(fake.url.clone());
    settings.sweep_unlabelled = true;
    let sweeping = build_hosted(HostedVendor::Sprites, settings).unwrap();
    assert!(!sweeping.can_lookup(), "the listing already takes every sandbox");

    let good = provider(vendor, &fake);
    let found = good.lookup_sandboxes(&["reg-1".into(), "gone-1".into(), "a/b".into()]).await.unwrap();
    let ids: Vec<&str> = found.iter().map(|sandbox| sandbox.id.as_str()).collect();
    assert_eq!(ids, ["reg-1"], "gone and impossible ids are left out");
    assert_eq!(found[0].owner, None, "unlabelled: the machine reads it as the registry's");

    let mut settings = HostedSettings::defaults(HostedVendor::Sprites);
    settings.api_key = Some("wrong".into());
    settings.api_url = Some(fake.url.clone());
    let refused = build_hosted(HostedVendor::Sprites, settings).unwrap();
    let error = refused.lookup_sandboxes(&["reg-1".into()]).await.unwrap_err().to_string();
    assert!(error.contains("SPRITES_API_KEY") && !error.contains("wrong"), "{error}");
}
