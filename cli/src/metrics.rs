//! Prometheus metrics (`--metrics-addr` with `--every`), in the OpenMetrics
//! text format of the `prometheus-client` crate, served at `/metrics`.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};
use sandbox_reclaim::{LeakSummary, ReconcileReport};
use tokio::net::TcpListener;

use crate::error::Failure;

/// Every metric family the command exports: its name as samples carry it
/// (counters with `_total`) and its type. The Grafana dashboard's test checks
/// every query against this list, and a unit test checks the list against
/// what the registry really encodes.
pub const FAMILIES: &[(&str, &str)] = &[
    ("sandbox_reclaim_leaks", "gauge"),
    ("sandbox_reclaim_oldest_leak_age_seconds", "gauge"),
    ("sandbox_reclaim_orphans_found_total", "counter"),
    ("sandbox_reclaim_orphans_destroyed_total", "counter"),
    ("sandbox_reclaim_destroy_duration_seconds", "histogram"),
    ("sandbox_reclaim_pass_duration_seconds", "histogram"),
    ("sandbox_reclaim_last_pass_timestamp_seconds", "gauge"),
    ("sandbox_reclaim_passes_total", "counter"),
    ("sandbox_reclaim_still_leaking", "gauge"),
];

/// The sample names a family of `kind` produces (histograms: `_bucket`,
/// `_sum`, `_count`).
pub fn sample_names(name: &str, kind: &str) -> Vec<String> {
    match kind {
        "histogram" => ["_bucket", "_sum", "_count"].iter().map(|suffix| format!("{name}{suffix}")).collect(),
        _ => vec![name.to_owned()],
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProviderLabels {
    provider: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DestroyLabels {
    provider: String,
    /// `ok`, `error`, or `cancelled` (dropped at its deadline).
    result: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PassLabels {
    /// `ok`, `leaking` (something still leaking after it), or `error`.
    result: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn destroy_histogram() -> Histogram {
    // 5 ms .. ~82 s.
    Histogram::new([0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0])
}

/// The metrics and their registry.
pub struct Metrics {
    registry: Registry,
    leaks: Family<ProviderLabels, Gauge>,
    oldest_leak_age: Family<ProviderLabels, Gauge<f64, AtomicU64>>,
    orphans_found: Family<ProviderLabels, Counter>,
    orphans_destroyed: Family<ProviderLabels, Counter>,
    destroy_duration: HistogramFamily<DestroyLabels>,
    pass_duration: Histogram,
    last_pass: Gauge<f64, AtomicU64>,
    passes: Family<PassLabels, Counter>,
    still_leaking: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("sandbox_reclaim");
        let leaks = Family::<ProviderLabels, Gauge>::default();
        registry.register(
            "leaks",
            "Sandboxes in the leak ledger (a destroy failed; possibly still billing)",
            leaks.clone(),
        );
        let oldest_leak_age = Family::<ProviderLabels, Gauge<f64, AtomicU64>>::default();
        registry.register_with_unit(
            "oldest_leak_age",
            "Age of the provider's oldest leak since its last failed destroy",
            Unit::Seconds,
            oldest_leak_age.clone(),
        );
        let orphans_found = Family::<ProviderLabels, Counter>::default();
        registry.register(
            "orphans_found",
            "Orphans found by sweeps (unreferenced, past the grace period)",
            orphans_found.clone(),
        );
        let orphans_destroyed = Family::<ProviderLabels, Counter>::default();
        registry.register("orphans_destroyed", "Orphans destroyed by sweeps", orphans_destroyed.clone());
        let destroy_duration =
            HistogramFamily::<DestroyLabels>::new_with_constructor(destroy_histogram as fn() -> Histogram);
        registry.register_with_unit(
            "destroy_duration",
            "Provider destroy latency, by provider and result (ok, error, cancelled)",
            Unit::Seconds,
            destroy_duration.clone(),
        );
        let pass_duration = Histogram::new([0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0]);
        registry.register_with_unit("pass_duration", "Reconcile pass duration", Unit::Seconds, pass_duration.clone());
        let last_pass = Gauge::<f64, AtomicU64>::default();
        registry.register_with_unit(
            "last_pass_timestamp",
            "When the last pass ended (Unix time)",
            Unit::Seconds,
            last_pass.clone(),
        );
        let passes = Family::<PassLabels, Counter>::default();
        registry.register("passes", "Reconcile passes, by result (ok, leaking, error)", passes.clone());
        let still_leaking = Gauge::default();
        registry.register(
            "still_leaking",
            "1 when the last pass left something possibly billing",
            still_leaking.clone(),
        );
        Self {
            registry,
            leaks,
            oldest_leak_age,
            orphans_found,
            orphans_destroyed,
            destroy_duration,
            pass_duration,
            last_pass,
            passes,
            still_leaking,
        }
    }

    pub fn observe_destroy(&self, provider: &str, result: &str, elapsed: Duration) {
        let labels = DestroyLabels { provider: provider.to_owned(), result: result.to_owned() };
        self.destroy_duration.get_or_create(&labels).observe(elapsed.as_secs_f64());
    }

    /// A pass's report: orphans, duration, when, and whether it left anything.
    pub fn observe_pass(&self, report: &ReconcileReport, ended_at_ms: u64) {
        for provider in &report.providers {
            let labels = ProviderLabels { provider: provider.name.clone() };
            self.orphans_found.get_or_create(&labels).inc_by(provider.orphans.found);
            self.orphans_destroyed.get_or_create(&labels).inc_by(provider.orphans.destroyed);
        }
        self.pass_duration.observe(report.elapsed_ms as f64 / 1000.0);
        self.last_pass.set(ended_at_ms as f64 / 1000.0);
        let leaking = report.still_leaking();
        self.still_leaking.set(i64::from(leaking));
        let result = if leaking { "leaking" } else { "ok" };
        self.passes.get_or_create(&PassLabels { result: result.to_owned() }).inc();
    }

    /// A pass that could not finish.
    pub fn observe_failed_pass(&self, elapsed: Duration, ended_at_ms: u64) {
        self.pass_duration.observe(elapsed.as_secs_f64());
        self.last_pass.set(ended_at_ms as f64 / 1000.0);
        self.still_leaking.set(1);
        self.passes.get_or_create(&PassLabels { result: "error".to_owned() }).inc();
    }

    /// The ledger as it stands: leaks and the oldest one's age, per
    /// provider; every provider in `providers` is set (0 when it has none).
    pub fn observe_leaks(&self, providers: &[String], leaks: &[LeakSummary], now_ms: u64) {
        let mut by_provider: BTreeMap<&str, (i64, u64)> =
            providers.iter().map(|provider| (provider.as_str(), (0, now_ms))).collect();
        for summary in leaks {
            let entry = by_provider.entry(summary.provider.as_str()).or_insert((0, now_ms));
            entry.0 = i64::try_from(summary.count).unwrap_or(i64::MAX);
            entry.1 = entry.1.min(summary.oldest_failed_at);
        }
        // Providers that had leaks before but have none now read 0, not their old value.
        self.leaks.clear();
        self.oldest_leak_age.clear();
        for (provider, (count, oldest)) in by_provider {
            let labels = ProviderLabels { provider: provider.to_owned() };
            self.leaks.get_or_create(&labels).set(count);
            self.oldest_leak_age.get_or_create(&labels).set(now_ms.saturating_sub(oldest) as f64 / 1000.0);
        }
    }

    /// The exposition text.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// Binds `addr` (a usage error naming `--metrics-addr` when it cannot) and
/// serves `/metrics` until the task is dropped.
pub async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), Failure> {
    let listener = TcpListener::bind(addr).await.map_err(|error| {
        Failure::usage(
            "--metrics-addr",
            sandbox_reclaim::report::messages::command::cannot_listen(&addr.to_string(), &error.to_string()),
        )
    })?;
    let bound = listener.local_addr().unwrap_or(addr);
    let task = tokio::spawn(async move {
        let listener = &listener;
        accept_loop(
            move || async move { listener.accept().await.map(|(stream, _)| stream) },
            |stream| {
                let metrics = metrics.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let metrics = metrics.clone();
                        async move { Ok::<_, Infallible>(respond(&request, &metrics)) }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    if let Err(error) = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await {
                        tracing::debug!(%error, "metrics connection ended");
                    }
                });
            },
        )
        .await;
    });
    Ok((bound, task))
}

/// The pause after `consecutive` failed accepts in a row (1, 2, ...): 50 ms,
/// doubling, at most 1 s. A failing accept (EMFILE: out of file descriptors)
/// fails again at once, so retrying without a pause is a busy loop.
pub fn accept_backoff(consecutive: u32) -> Duration {
    let doublings = consecutive.saturating_sub(1).min(5);
    Duration::from_millis((50_u64 << doublings).min(1000))
}

/// Accepts connections forever, handing each to `serve`; after a failed
/// accept it sleeps [`accept_backoff`] (reset by the next success).
async fn accept_loop<S, E, F, Fut>(mut accept: F, mut serve: impl FnMut(S))
where
    E: std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<S, E>>,
{
    let mut failures: u32 = 0;
    loop {
        match accept().await {
            Ok(stream) => {
                failures = 0;
                serve(stream);
            }
            Err(error) => {
                failures = failures.saturating_add(1);
                let pause = accept_backoff(failures);
                if failures == 1 {
                    tracing::warn!(%error, "metrics server: accept failed; retrying with backoff");
                } else {
                    tracing::debug!(%error, failures, pause_ms = pause.as_millis() as u64, "metrics server: accept failed");
                }
                tokio::time::sleep(pause).await;
            }
        }
    }
}

fn respond(request: &Request<Incoming>, metrics: &Metrics) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, content_type: &str, body: String| {
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        if let Ok(value) = content_type.parse() {
            response.headers_mut().insert(hyper::header::CONTENT_TYPE, value);
        }
        response
    };
    match (request.method(), request.uri().path()) {
        (&Method::GET | &Method::HEAD, "/metrics") => {
            reply(StatusCode::OK, "application/openmetrics-text; version=1.0.0; charset=utf-8", metrics.encode())
        }
        (&Method::GET, "/") => {
            reply(StatusCode::OK, "text/plain; charset=utf-8", "sandbox-reclaim: see /metrics\n".into())
        }
        _ => reply(StatusCode::NOT_FOUND, "text/plain; charset=utf-8", "not found\n".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every family in [`FAMILIES`] is really encoded under that name and
    /// type, and nothing else is.
    #[test]
    fn families_match_the_registry() {
        let metrics = Metrics::new();
        metrics.observe_destroy("local", "ok", Duration::from_millis(12));
        let report = report();
        metrics.observe_pass(&report, 1_700_000_000_000);
        metrics.observe_leaks(&["local".to_owned()], &[], 1_700_000_000_000);
        let text = metrics.encode();
        let mut typed: Vec<(String, String)> = text
            .lines()
            .filter_map(|line| line.strip_prefix("# TYPE "))
            .map(|line| {
                let (name, kind) = line.split_once(' ').unwrap();
                (name.to_owned(), kind.to_owned())
            })
            .collect();
        typed.sort();
        let mut expected: Vec<(String, String)> = FAMILIES
            .iter()
            .map(|(name, kind)| (name.strip_suffix("_total").unwrap_or(name).to_owned(), (*kind).to_owned()))
            .collect();
        expected.sort();
        assert_eq!(typed, expected, "{text}");
        for (name, kind) in FAMILIES {
            for sample in sample_names(name, kind) {
                assert!(text.lines().any(|line| line.starts_with(&sample)), "no sample {sample} in\n{text}");
            }
        }
    }

    #[test]
    fn accept_backoff_doubles_to_a_second() {
        let schedule: Vec<u64> = (1..=8).map(|n| accept_backoff(n).as_millis() as u64).collect();
        assert_eq!(schedule, [50, 100, 200, 400, 800, 1000, 1000, 1000]);
        assert_eq!(accept_backoff(u32::MAX), Duration::from_secs(1));
    }

    /// An accept that always fails (EMFILE) is retried a handful of times
    /// in 400 ms, not spun on; a success resets the pause.
    #[tokio::test]
    async fn a_failing_accept_is_not_a_busy_loop() {
        use std::sync::atomic::{AtomicU32, Ordering};
        let calls = Arc::new(AtomicU32::new(0));
        let counted = calls.clone();
        let looping = accept_loop(
            move || {
                counted.fetch_add(1, Ordering::SeqCst);
                // Pending once, as a real accept may be: without the backoff this
                // loop spins (and the timeout below still ends it).
                async {
                    tokio::task::yield_now().await;
                    Err::<(), _>(std::io::Error::from_raw_os_error(24))
                }
            },
            |()| {},
        );
        let _ = tokio::time::timeout(Duration::from_millis(400), looping).await;
        // 0, 50, 150, 350 ms: four attempts; a busy loop makes millions.
        let attempts = calls.load(Ordering::SeqCst);
        assert!((3..=5).contains(&attempts), "{attempts} accepts in 400 ms");

        // Failures, a success, failures: the pause after the success starts again at 50 ms.
        let calls = Arc::new(AtomicU32::new(0));
        let counted = calls.clone();
        let served = Arc::new(AtomicU32::new(0));
        let serving = served.clone();
        let looping = accept_loop(
            move || {
                let call = counted.fetch_add(1, Ordering::SeqCst);
                // Calls 0-3 fail (0, 50, 150, 350 ms), 4 succeeds (~750 ms), then all fail.
                async move {
                    tokio::task::yield_now().await;
                    if call == 4 {
                        Ok(())
                    } else {
                        Err(std::io::Error::from_raw_os_error(24))
                    }
                }
            },
            move |()| {
                serving.fetch_add(1, Ordering::SeqCst);
            },
        );
        let _ = tokio::time::timeout(Duration::from_millis(1200), looping).await;
        assert_eq!(served.load(Ordering::SeqCst), 1);
        // After the success at ~750 ms: fail at once, then 50, 150, 350 ms later (9 calls by
        // 1.2 s). Without the reset the next try would wait 800 ms (6 calls).
        let attempts = calls.load(Ordering::SeqCst);
        assert!((7..=10).contains(&attempts), "{attempts} accepts in 1.2 s");
    }

    fn report() -> ReconcileReport {
        use sandbox_reclaim::machine::reconcile::{
            ActionCounts, IdleCounts, LeakCounts, OrphanCounts, ProviderReport, SweepStatus,
        };
        ReconcileReport {
            dry_run: false,
            host: "test".into(),
            started_at: 1_700_000_000_000,
            elapsed_ms: 1500,
            cut_short: false,
            idle: IdleCounts::default(),
            providers: vec![ProviderReport {
                name: "local".into(),
                leaks: LeakCounts::default(),
                orphans: OrphanCounts {
                    status: SweepStatus::Swept,
                    error: None,
                    listed: 3,
                    foreign: 0,
                    referenced: 1,
                    young: 0,
                    deleting: 0,
                    found: 2,
                    destroyed: 2,
                    failed: 0,
                    deferred: 0,
                },
            }],
            counts: ActionCounts::default(),
            actions: Vec::new(),
            still_leaking: false,
        }
    }
}
