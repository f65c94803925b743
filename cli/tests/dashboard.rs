//! The Grafana dashboard (contrib/grafana/sandbox-reclaim.json) queries only
//! metrics the command exports.

use std::collections::HashSet;

use serde_json::Value;

const DASHBOARD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../contrib/grafana/sandbox-reclaim.json");

fn panels(value: &Value, found: &mut Vec<Value>) {
    for panel in value["panels"].as_array().into_iter().flatten() {
        // Rows carry their collapsed panels inside.
        if panel["type"] == "row" {
            panels(panel, found);
        } else {
            found.push(panel.clone());
        }
    }
}

/// Identifiers in a PromQL expression that name our metrics.
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let bytes = expr.as_bytes();
    let mut index = 0;
    while let Some(offset) = expr[index..].find("sandbox_reclaim_") {
        let start = index + offset;
        let boundary = start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        let mut end = start;
        while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_' || bytes[end] == b':') {
            end += 1;
        }
        if boundary {
            names.push(expr[start..end].to_owned());
        }
        index = end;
    }
    names
}

#[test]
fn every_panel_queries_an_exported_metric() {
    let text = std::fs::read_to_string(DASHBOARD).expect("read the dashboard");
    let dashboard: Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let exported: HashSet<String> = sandbox_reclaim_cli::metrics::FAMILIES
        .iter()
        .flat_map(|(name, kind)| sandbox_reclaim_cli::metrics::sample_names(name, kind))
        .collect();
    let mut found = Vec::new();
    panels(&dashboard, &mut found);
    assert!(found.len() >= 5, "the dashboard has its panels");
    let mut titles = Vec::new();
    for panel in &found {
        let title = panel["title"].as_str().expect("every panel has a title").to_owned();
        let targets = panel["targets"].as_array().unwrap_or_else(|| panic!("panel {title} has no targets"));
        assert!(!targets.is_empty(), "panel {title} has no query");
        for target in targets {
            let expr = target["expr"].as_str().unwrap_or_else(|| panic!("a query of {title} has no expr"));
            let names = metric_names(expr);
            assert!(!names.is_empty(), "panel {title}: `{expr}` names no sandbox_reclaim_ metric");
            for name in names {
                assert!(exported.contains(&name), "panel {title}: `{name}` is not exported (exported: {exported:?})");
            }
        }
        titles.push(title.to_lowercase());
    }
    for wanted in ["leaks by provider", "oldest leak age", "destroy latency", "orphans", "pass duration"] {
        assert!(titles.iter().any(|title| title.contains(wanted)), "no panel about {wanted}: {titles:?}");
    }
    let quantiles: Vec<&Value> = found
        .iter()
        .flat_map(|panel| panel["targets"].as_array().into_iter().flatten())
        .filter(|target| target["expr"].as_str().unwrap_or("").contains("histogram_quantile(0.99"))
        .collect();
    assert!(!quantiles.is_empty(), "destroy latency p99 is charted");
}

#[test]
fn metric_names_are_extracted() {
    assert_eq!(
        metric_names("histogram_quantile(0.5, sum by (le, provider) (rate(sandbox_reclaim_destroy_duration_seconds_bucket[5m])))"),
        vec!["sandbox_reclaim_destroy_duration_seconds_bucket"]
    );
    assert_eq!(metric_names("max(sandbox_reclaim_leaks) + x_sandbox_reclaim_no"), vec!["sandbox_reclaim_leaks"]);
}
