//! `reconcile --every`: SIGTERM mid-pass loses nothing and exits 0; the
//! metrics endpoint, scraped with a real HTTP client and parsed.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use common::{create_sandboxes, exists, Backend, Running, World};
use sandbox_reclaim::LeakReason;
use serde_json::Value;

const SANDBOXES: usize = 80;

fn sigterm_mid_pass(backend: Backend) {
    let Some(world) = World::new(backend) else { return };
    let runtime = common::runtime();
    let base = world.base_dir();
    // Every sandbox is a due leak: one pass destroys them one at a time.
    let ids = runtime.block_on(async {
        let ids = create_sandboxes(&world.provider(), "slow", SANDBOXES).await;
        let store = world.store().await;
        for (n, id) in ids.iter().enumerate() {
            store.add_leak(&format!("slow-{n}"), "local", id, LeakReason::DestroyFailed, 0).await;
        }
        store.close().await;
        ids
    });
    let running =
        Running::spawn(&world.args(&["reconcile", "--every=1s", "--concurrency=1", "--json", "--orphan-grace=1h"]));
    // Mid-pass: some destroyed, most not.
    let started = Instant::now();
    while ids.iter().all(|id| exists(&base, id)) {
        assert!(started.elapsed() < Duration::from_secs(60), "no destroy started within 60 s");
        std::thread::sleep(Duration::from_millis(5));
    }
    running.terminate();
    let run = running.finish(Duration::from_secs(60));
    assert_eq!(run.code, 0, "SIGTERM ends the service with exit 0:\n{run}");

    let lines: Vec<Value> = run.stdout.lines().map(|line| serde_json::from_str(line).expect("a JSON line")).collect();
    assert_eq!(lines.len(), 1, "one pass, cut short, then exit:\n{run}");
    let report = &lines[0]["report"];
    assert_eq!(lines[0]["pass"], 1);
    assert_eq!(report["cutShort"], true, "the pass was stopped mid-way:\n{run}");
    let destroyed = report["counts"]["destroyed"].as_u64().unwrap();
    let deferred = report["counts"]["deferred"].as_u64().unwrap();
    eprintln!("stopped after {destroyed} destroyed, {deferred} deferred");
    assert!(destroyed >= 1 && deferred >= 1, "{run}");
    assert_eq!(destroyed + deferred + report["counts"]["failed"].as_u64().unwrap(), SANDBOXES as u64);

    // Nothing lost: every sandbox still there is still in the ledger, and
    // every sandbox the ledger forgot is destroyed (and audited as such).
    let (ledger, audited) = runtime.block_on(async {
        let store = world.store().await;
        let ledger: HashSet<String> = store
            .ledger()
            .list_leaks(Some("local"))
            .await
            .unwrap()
            .into_iter()
            .map(|leak| leak.provider_sandbox_id)
            .collect();
        let audited: HashSet<String> = store
            .fleet()
            .list_audit(None, 10_000)
            .await
            .unwrap()
            .into_iter()
            .filter(|row| row.result == "destroyed")
            .map(|row| row.provider_sandbox_id)
            .collect();
        store.close().await;
        (ledger, audited)
    });
    for id in &ids {
        if exists(&base, id) {
            assert!(ledger.contains(id), "{id} still exists but left the ledger");
        } else {
            assert!(!ledger.contains(id), "{id} is destroyed but still in the ledger");
            assert!(audited.contains(id), "{id} is destroyed but not audited");
        }
    }
    assert_eq!(ledger.len() as u64, deferred, "every deferred destroy is still in the ledger");
    assert!(run.stderr.contains("SIGTERM"), "the stop is logged:\n{}", run.stderr);
}

#[test]
fn sqlite_sigterm_mid_pass_loses_nothing() {
    sigterm_mid_pass(Backend::Sqlite);
}

#[test]
fn postgres_sigterm_mid_pass_loses_nothing() {
    sigterm_mid_pass(Backend::Postgres);
}

/// One parsed exposition: family → type, and samples (name, labels, value).
struct Exposition {
    types: BTreeMap<String, String>,
    samples: Vec<(String, BTreeMap<String, String>, f64)>,
}

fn parse_exposition(text: &str) -> Exposition {
    let mut types = BTreeMap::new();
    let mut samples = Vec::new();
    assert_eq!(text.lines().last(), Some("# EOF"), "OpenMetrics text ends with # EOF");
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
            types.insert(name.to_owned(), kind.to_owned());
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample line");
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("bad value in {line}"));
        let (name, labels) = match series.split_once('{') {
            Some((name, labels)) => {
                let labels = labels.strip_suffix('}').expect("closing brace");
                let labels = labels
                    .split("\",")
                    .filter(|pair| !pair.is_empty())
                    .map(|pair| {
                        let (key, value) = pair.split_once("=\"").expect("label=\"value\"");
                        (key.to_owned(), value.trim_end_matches('"').to_owned())
                    })
                    .collect();
                (name.to_owned(), labels)
            }
            None => (series.to_owned(), BTreeMap::new()),
        };
        samples.push((name, labels, value));
    }
    Exposition { types, samples }
}

impl Exposition {
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples
            .iter()
            .find(|(sample, sample_labels, _)| {
                sample == name
                    && labels.iter().all(|(key, value)| sample_labels.get(*key).map(String::as_str) == Some(*value))
            })
            .map(|(_, _, value)| *value)
    }
}

async fn get(url: &str) -> (u16, String, String) {
    use http_body_util::{BodyExt, Empty};
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    let client: Client<_, Empty<bytes::Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let response = client.get(url.parse().unwrap()).await.expect("GET");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|value| value.to_str().unwrap_or_default().to_owned())
        .unwrap_or_default();
    let body = response.into_body().collect().await.expect("body").to_bytes();
    (status, content_type, String::from_utf8(body.to_vec()).expect("UTF-8"))
}

#[test]
fn metrics_endpoint_is_scraped_and_parsed() {
    let Some(world) = World::new(Backend::Sqlite) else { return };
    let runtime = common::runtime();
    runtime.block_on(async {
        create_sandboxes(&world.provider(), "orphan", 3).await;
        // A leak whose destroy is refused: the ledger keeps it.
        let stranger = world.provider_owned_by(&format!("{}-stranger", world.owner));
        let id = create_sandboxes(&stranger, "foreign", 1).await.remove(0);
        let store = world.store().await;
        store.add_leak("foreign-0", "local", &id, LeakReason::DestroyFailed, 0).await;
        store.close().await;
    });
    let running = Running::spawn(&world.args(&[
        "reconcile",
        "--every=1s",
        "--orphan-grace=0s",
        "--metrics-addr=127.0.0.1:0",
        "--log-format=json",
    ]));
    let line = running
        .wait_for_stderr(Duration::from_secs(30), |line| line.contains("serving Prometheus metrics"))
        .unwrap_or_else(|| panic!("no metrics address logged: {:?}", running.stderr.lock().unwrap()));
    let log: Value = serde_json::from_str(&line).expect("--log-format json writes JSON lines");
    let addr = log["fields"]["addr"].as_str().expect("addr field").to_owned();
    running.wait_for_stdout(Duration::from_secs(30), |line| line.starts_with("reconcile ")).expect("a first pass");

    let (exposition, content_type) = runtime.block_on(async {
        let started = Instant::now();
        loop {
            let (status, content_type, body) = get(&format!("http://{addr}/metrics")).await;
            assert_eq!(status, 200);
            let exposition = parse_exposition(&body);
            if exposition.value("sandbox_reclaim_leaks", &[("provider", "local")]).is_some() {
                break (exposition, content_type);
            }
            assert!(started.elapsed() < Duration::from_secs(30), "no leak gauge after a pass:\n{body}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    assert!(content_type.starts_with("application/openmetrics-text"), "{content_type}");
    for (name, kind) in sandbox_reclaim_cli::metrics::FAMILIES {
        let family = name.strip_suffix("_total").unwrap_or(name);
        assert_eq!(exposition.types.get(family).map(String::as_str), Some(*kind), "family {family}");
    }
    let local = [("provider", "local")];
    assert_eq!(exposition.value("sandbox_reclaim_leaks", &local), Some(1.0));
    assert!(exposition.value("sandbox_reclaim_oldest_leak_age_seconds", &local).unwrap() >= 0.0);
    assert_eq!(exposition.value("sandbox_reclaim_orphans_found_total", &local), Some(3.0));
    assert_eq!(exposition.value("sandbox_reclaim_orphans_destroyed_total", &local), Some(3.0));
    let ok = [("provider", "local"), ("result", "ok")];
    assert_eq!(exposition.value("sandbox_reclaim_destroy_duration_seconds_count", &ok), Some(3.0));
    let error = [("provider", "local"), ("result", "error")];
    assert!(exposition.value("sandbox_reclaim_destroy_duration_seconds_count", &error).unwrap() >= 1.0);
    assert!(exposition.value("sandbox_reclaim_destroy_duration_seconds_bucket", &[("le", "+Inf")]).is_some());
    assert!(exposition.value("sandbox_reclaim_pass_duration_seconds_count", &[]).unwrap() >= 1.0);
    let last = exposition.value("sandbox_reclaim_last_pass_timestamp_seconds", &[]).unwrap();
    let now = sandbox_reclaim::runtime::clock::now_millis() as f64 / 1000.0;
    assert!(last > now - 60.0 && last <= now + 1.0, "{last} vs {now}");
    assert_eq!(exposition.value("sandbox_reclaim_still_leaking", &[]), Some(1.0));
    assert!(exposition.value("sandbox_reclaim_passes_total", &[("result", "leaking")]).unwrap() >= 1.0);

    let (status, _, _) = runtime.block_on(get(&format!("http://{addr}/nothing-here")));
    assert_eq!(status, 404);

    running.terminate();
    let run = running.finish(Duration::from_secs(30));
    assert_eq!(run.code, 0, "{run}");
}
