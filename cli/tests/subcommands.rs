//! Every subcommand, run as a process against a SQLite file and a PostgreSQL
//! schema, with real LocalProvider sandboxes.

mod common;

use common::{create_sandboxes, exists, Backend, World};
use sandbox_reclaim::LeakReason;
use serde_json::Value;

const FAR_FUTURE: u64 = 4_000_000_000_000;

fn scenario(backend: Backend) {
    let Some(world) = World::new(backend) else { return };
    let runtime = common::runtime();
    let base = world.base_dir();

    // migrate: opening applies the migrations.
    let migrated = world.run(&["migrate", "--json"]);
    migrated.expect_code(0);
    let document = migrated.json();
    assert_eq!(document["version"], 1);
    assert_eq!(document["command"], "migrate");
    assert_eq!(document["schemaVersion"], 5, "{migrated}");
    let plain = world.run(&["migrate"]);
    assert!(plain.expect_code(0).stdout.contains("schema_version=5"), "{plain}");

    // A referenced sandbox, an orphan, a due leak, a leak in backoff, and a
    // leak whose sandbox belongs to another owner (its destroy is refused).
    let (referenced, orphan, due, backoff, stranger) = runtime.block_on(async {
        let provider = world.provider();
        let ids = create_sandboxes(&provider, "run", 4).await;
        let stranger = world.provider_owned_by(&format!("{}-stranger", world.owner));
        let stranger_id = create_sandboxes(&stranger, "foreign", 1).await.remove(0);
        let store = world.store().await;
        store.add_record("run-0", "local", &ids[0]).await;
        store.add_leak("run-2", "local", &ids[2], LeakReason::DestroyFailed, 0).await;
        store.add_leak("run-3", "local", &ids[3], LeakReason::Orphan, FAR_FUTURE).await;
        store.close().await;
        (ids[0].clone(), ids[1].clone(), ids[2].clone(), ids[3].clone(), stranger_id)
    });

    // status
    let status = world.run(&["status", "--json"]);
    let document = status.expect_code(0).json();
    assert_eq!(document["command"], "status");
    assert_eq!(document["schemaVersion"], 5);
    assert_eq!(document["records"], 1, "{status}");
    assert_eq!(document["leaks"]["total"], 2);
    assert_eq!(document["leaks"]["byProvider"][0]["provider"], "local");
    assert_eq!(document["leaks"]["byProvider"][0]["count"], 2);
    assert!(document["leaks"]["byProvider"][0]["oldestAgeMs"].as_u64().unwrap() >= 60_000);
    assert!(document["lastPass"].is_null(), "{status}");

    // leaks list
    let listed = world.run(&["leaks", "list", "--json"]);
    let document = listed.expect_code(0).json();
    assert_eq!(document["total"], 2);
    let leaks = document["leaks"].as_array().unwrap();
    let by_id =
        |id: &str| leaks.iter().find(|leak| leak["providerSandboxId"] == id).unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(by_id(&due)["state"], "due");
    assert_eq!(by_id(&due)["reason"], "destroy-failed");
    assert_eq!(by_id(&backoff)["state"], "backoff");
    assert_eq!(by_id(&backoff)["reason"], "orphan");
    assert_eq!(by_id(&backoff)["nextAttemptAt"], FAR_FUTURE);
    for field in ["key", "provider", "providerSandboxId", "runId", "lastError", "failedAt", "attempts", "ageMs"] {
        assert!(by_id(&due).get(field).is_some(), "leak without {field}: {listed}");
    }
    let plain = world.run(&["leaks", "list"]);
    assert!(plain.expect_code(0).stdout.contains(&format!("sandbox={due}")), "{plain}");

    // orphans --dry-run: plans the one orphan; leaks and records are spared.
    // A planned destroy is a sandbox still billing: exit 1, so an audit-only cron job alerts.
    let planned = world.run(&["orphans", "--dry-run", "--json", "--orphan-grace=0s"]);
    let document = planned.expect_code(1).json();
    assert_eq!(document["command"], "orphans");
    assert_eq!(document["stillLeaking"], true, "{planned}");
    assert_eq!(document["report"]["stillLeaking"], true, "{planned}");
    let report = &document["report"];
    assert_eq!(report["dryRun"], true);
    assert!(report.get("idle").is_none(), "the orphan view has no idle part: {planned}");
    assert!(report["providers"][0].get("leaks").is_none(), "{planned}");
    assert_eq!(report["providers"][0]["orphans"]["found"], 1, "{planned}");
    assert_eq!(report["counts"]["planned"], 1);
    assert_eq!(report["actions"][0]["providerSandboxId"], orphan.as_str());
    assert_eq!(report["actions"][0]["result"], "planned");
    assert!(exists(&base, &orphan));

    // orphans: destroys it.
    let swept = world.run(&["orphans", "--json", "--orphan-grace=0s"]);
    let document = swept.expect_code(0).json();
    assert_eq!(document["report"]["counts"]["destroyed"], 1, "{swept}");
    assert_eq!(document["stillLeaking"], false);
    assert!(!exists(&base, &orphan), "the orphan is gone");
    for id in [&referenced, &due, &backoff] {
        assert!(exists(&base, id), "{id} was spared");
    }

    // reconcile --dry-run: would retry the due leak only (still leaking: exit 1).
    let planned_text = world.run(&["reconcile", "--dry-run", "--orphan-grace=0s"]);
    assert!(planned_text.expect_code(1).stdout.contains("still_leaking=true"), "{planned_text}");
    let planned = world.run(&["reconcile", "--dry-run", "--json", "--orphan-grace=0s"]);
    let document = planned.expect_code(1).json();
    assert_eq!(document["stillLeaking"], true, "{planned}");
    let actions = document["report"]["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 1, "{planned}");
    assert_eq!(actions[0]["providerSandboxId"], due.as_str());
    assert_eq!(actions[0]["reason"], "leak-retry");
    assert!(exists(&base, &due));

    // reconcile: destroys the due leak; the one in backoff waits.
    let reconciled = world.run(&["reconcile", "--orphan-grace=0s"]);
    reconciled.expect_code(0);
    assert!(reconciled.stdout.contains("still_leaking=false"), "{reconciled}");
    assert!(reconciled.stdout.contains(&format!("sandbox={due}")), "{reconciled}");
    assert!(!exists(&base, &due));
    assert!(exists(&base, &backoff));

    // leaks retry: now, whatever the backoff.
    let retried = world.run(&["leaks", "retry", "--limit=10", "--json"]);
    let document = retried.expect_code(0).json();
    assert_eq!(document["providers"][0]["provider"], "local");
    assert_eq!(document["providers"][0]["retried"], 1, "{retried}");
    assert_eq!(document["providers"][0]["destroyed"], 1);
    assert_eq!(document["providers"][0]["remaining"], 0);
    assert!(!exists(&base, &backoff));

    // audit: the passes' destroy attempts (retry_leaks keeps no audit log).
    let audit = world.run(&["audit", "--since=1h", "--json"]);
    let document = audit.expect_code(0).json();
    let entries = document["entries"].as_array().unwrap();
    let rows: Vec<(&str, &str, &str)> = entries
        .iter()
        .map(|entry| {
            (
                entry["providerSandboxId"].as_str().unwrap(),
                entry["reason"].as_str().unwrap(),
                entry["result"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![(orphan.as_str(), "orphan", "destroyed"), (due.as_str(), "leak-retry", "destroyed")],
        "{audit}"
    );
    let future = world.run(&["audit", "--since=2100-01-01T00:00:00Z", "--json"]);
    assert_eq!(future.expect_code(0).json()["total"], 0);
    let epoch = world.run(&["audit", "--since=0", "--limit=1", "--json"]);
    assert_eq!(epoch.expect_code(0).json()["entries"].as_array().unwrap().len(), 1);
    let plain = world.run(&["audit", "--since=1h"]);
    assert!(plain.expect_code(0).stdout.contains("reason=orphan result=destroyed"), "{plain}");

    // status: no leaks; the last pass is the newest audit row.
    let status = world.run(&["status", "--json"]);
    let document = status.expect_code(0).json();
    assert_eq!(document["leaks"]["total"], 0);
    assert!(document["lastPass"]["at"].as_u64().unwrap() > 0, "{status}");

    // --audit-retention: the pass holding the sweep prunes the audit log
    // (0s: every row written before it).
    let pruned = world.run(&["orphans", "--audit-retention=0s", "--orphan-grace=0s"]);
    pruned.expect_code(0);
    let audit = world.run(&["audit", "--since=0", "--json"]);
    assert_eq!(audit.expect_code(0).json()["total"], 0, "{audit}");

    // A leak whose destroy is refused (another owner's sandbox): exit 1.
    runtime.block_on(async {
        let store = world.store().await;
        store.add_leak("foreign-0", "local", &stranger, LeakReason::DestroyFailed, 0).await;
        store.close().await;
    });
    let leaking = world.run(&["reconcile", "--json", "--orphan-grace=0s"]);
    let document = leaking.expect_code(1).json();
    assert_eq!(document["stillLeaking"], true);
    assert_eq!(document["exitCode"], 1);
    assert_eq!(document["report"]["counts"]["failed"], 1, "{leaking}");
    let error = document["report"]["actions"][0]["error"].as_str().unwrap();
    assert!(error.contains("refusing to touch"), "{leaking}");
    assert!(exists(&base, &stranger), "another owner's sandbox is never destroyed");
    let retried = world.run(&["leaks", "retry"]);
    retried.expect_code(1);
    assert!(retried.stdout.contains("still_leaking=true"), "{retried}");
    let listed = world.run(&["leaks", "list", "--json"]);
    let document = listed.expect_code(0).json();
    assert_eq!(document["leaks"][0]["attempts"], 3, "{listed}");
    assert_eq!(document["leaks"][0]["state"], "backoff", "{listed}");
    assert!(exists(&base, &referenced));
}

#[test]
fn sqlite_every_subcommand() {
    scenario(Backend::Sqlite);
}

#[test]
fn postgres_every_subcommand() {
    scenario(Backend::Postgres);
}

/// The documented JSON envelope and the core report's fields.
#[test]
fn json_output_has_the_documented_fields() {
    let Some(world) = World::new(Backend::Sqlite) else { return };
    let run = world.run(&["reconcile", "--dry-run", "--json"]);
    let document = run.expect_code(0).json();
    let keys = |value: &Value| {
        let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        keys
    };
    assert_eq!(keys(&document), ["command", "exitCode", "report", "stillLeaking", "store", "version"]);
    assert_eq!(
        keys(&document["report"]),
        [
            "actions",
            "counts",
            "cutShort",
            "dryRun",
            "elapsedMs",
            "host",
            "idle",
            "providers",
            "startedAt",
            "stillLeaking"
        ]
    );
    assert_eq!(keys(&document["report"]["counts"]), ["deferred", "destroyed", "failed", "planned", "touched"]);
    assert_eq!(keys(&document["report"]["idle"]), ["enabled", "expired", "skipped", "stale", "touched"]);
    let provider = &document["report"]["providers"][0];
    assert_eq!(keys(provider), ["leaks", "name", "orphans"]);
    assert_eq!(keys(&provider["leaks"]), ["deferred", "destroyed", "due", "failed", "leaseLost"]);
    assert_eq!(
        keys(&provider["orphans"]),
        ["deferred", "deleting", "destroyed", "failed", "foreign", "found", "listed", "referenced", "status", "young"]
    );
    assert!(document["store"].as_str().unwrap().starts_with("sqlite:"));
    assert!(document["report"]["host"].is_string());

    // --host names the pass; a config file supplies what flags do not.
    let config = world.dir.path().join("config.toml");
    std::fs::write(&config, "host = \"from-config\"\n[reconcile]\nmax-idle = \"1h\"\n").unwrap();
    let run = world.run(&["reconcile", "--dry-run", "--json", &format!("--config={}", config.display())]);
    let document = run.expect_code(0).json();
    assert_eq!(document["report"]["host"], "from-config");
    assert_eq!(document["report"]["idle"]["enabled"], true);
    let run =
        world.run(&["reconcile", "--dry-run", "--json", "--host=flag-wins", &format!("--config={}", config.display())]);
    assert_eq!(run.expect_code(0).json()["report"]["host"], "flag-wins");
}

/// The example config in the README parses and runs.
#[test]
fn example_config_works() {
    let Some(world) = World::new(Backend::Sqlite) else { return };
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/sandbox-reclaim.toml");
    let text = std::fs::read_to_string(example).unwrap();
    // Point the example at this test's store and directory, keep the rest.
    let text = text
        .lines()
        .filter(|line| !line.starts_with("store ="))
        .map(|line| {
            if line.starts_with("base-dir =") {
                format!("base-dir = \"{}\"", world.base_dir().display())
            } else if line.starts_with("[docker]") {
                "[unused-docker]".to_owned()
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    // The [docker] section needs an engine: drop it (and its keys) for this test.
    let text = drop_section(&text, "[unused-docker]");
    let config = world.dir.path().join("example.toml");
    std::fs::write(&config, text).unwrap();
    let mut args = vec!["reconcile".to_owned(), "--dry-run".to_owned(), "--json".to_owned()];
    args.push(format!("--config={}", config.display()));
    args.extend(world.store_flags.iter().cloned());
    let run = common::run(&args);
    let document = run.expect_code(0).json();
    assert_eq!(document["report"]["providers"][0]["name"], "local", "{run}");
}

fn drop_section(text: &str, header: &str) -> String {
    let mut skipping = false;
    let mut kept = Vec::new();
    for line in text.lines() {
        if line.starts_with('[') {
            skipping = line == header;
        }
        if !skipping {
            kept.push(line);
        }
    }
    kept.join("\n") + "\n"
}
