//! Usage errors exit 2 naming the flag; an unreachable store or engine exits 3
//! with a clear message.

mod common;

use common::{run, Backend, World};

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|arg| (*arg).to_owned()).collect()
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    let Some(world) = World::new(Backend::Sqlite) else { return };
    let store = world.store_flags[0].clone();
    let local = format!("--local={}", world.base_dir().display());
    let missing_config = format!("--config={}", world.dir.path().join("missing.toml").display());
    let typo_config = world.dir.path().join("typo.toml");
    std::fs::write(&typo_config, "[reconcile]\nconcurrensy = 4\n").unwrap();
    let typo_config = format!("--config={}", typo_config.display());
    let bad_duration_config = world.dir.path().join("duration.toml");
    std::fs::write(&bad_duration_config, "[reconcile]\norphan-grace = \"a while\"\n").unwrap();
    let bad_duration_config = format!("--config={}", bad_duration_config.display());
    let bad_retention_config = world.dir.path().join("retention.toml");
    std::fs::write(&bad_retention_config, "[reconcile]\nregistry-retention = \"forever\"\n").unwrap();
    let bad_retention_config = format!("--config={}", bad_retention_config.display());
    let bad_audit_config = world.dir.path().join("audit.toml");
    std::fs::write(&bad_audit_config, "[reconcile]\naudit-retention = \"forever\"\n").unwrap();
    let bad_audit_config = format!("--config={}", bad_audit_config.display());
    let bad_sweep_config = world.dir.path().join("sweep.toml");
    std::fs::write(&bad_sweep_config, "[daytona]\nsweep-unlabelled = \"yes\"\n").unwrap();
    let bad_sweep_config = format!("--config={}", bad_sweep_config.display());
    let cases: Vec<(Vec<String>, &str)> = vec![
        (args(&["reconcile", "--concurrency", "0", &store, &local]), "--concurrency"),
        (args(&["reconcile", "--concurrency", "many", &store, &local]), "--concurrency"),
        (args(&["reconcile", "--every", "soon", &store, &local]), "--every"),
        (args(&["reconcile", "--every", "0s", &store, &local]), "--every"),
        (args(&["reconcile", "--destroy-timeout", "0s", &store, &local]), "--destroy-timeout"),
        (args(&["reconcile", "--budget", "1x", &store, &local]), "--budget"),
        (args(&["reconcile", "--max-idle", "", &store, &local]), "--max-idle"),
        (args(&["reconcile", "--orphan-grace", "-5m", &store, &local]), "--orphan-grace"),
        (args(&["reconcile", "--metrics-addr", "not-an-address", "--every", "1m", &store, &local]), "--metrics-addr"),
        (args(&["reconcile", "--metrics-addr", "127.0.0.1:9464", &store, &local]), "--metrics-addr"),
        (args(&["reconcile", "--log-format", "xml", &store, &local]), "--log-format"),
        (args(&["reconcile", &store]), "--docker/--local/--e2b/--daytona/--vercel"),
        (args(&["reconcile", "--store", "mysql://db/x", &local]), "--store"),
        (args(&["reconcile", "--store", "sqlite:", &local]), "--store"),
        (args(&["--docker=reconcile", "reconcile", &store]), "--docker"),
        (args(&["reconcile", "--owner", "", &store, &local]), "--owner"),
        (args(&["reconcile", &missing_config, &store, &local]), "--config"),
        (args(&["reconcile", &typo_config, &store, &local]), "concurrensy"),
        (args(&["reconcile", &bad_duration_config, &store, &local]), "reconcile.orphan-grace"),
        (args(&["reconcile", "--registry-retention", "a month", &store, &local]), "--registry-retention"),
        (args(&["orphans", "--registry-retention=-1d", &store, &local]), "--registry-retention"),
        // Parsed, but too long for the core (beyond 2^53 ms): refused as --providers refuses it.
        (args(&["reconcile", "--registry-retention", "9999999999d", &store, &local]), "--registry-retention"),
        (args(&["orphans", "--audit-retention", "9999999999d", &store, &local]), "--audit-retention"),
        (args(&["reconcile", "--max-idle", "9999999999d", &store, &local]), "--max-idle"),
        (args(&["reconcile", &bad_retention_config, &store, &local]), "reconcile.registry-retention"),
        (args(&["reconcile", "--audit-retention", "a quarter", &store, &local]), "--audit-retention"),
        (args(&["orphans", "--audit-retention=-1d", &store, &local]), "--audit-retention"),
        (args(&["reconcile", &bad_audit_config, &store, &local]), "reconcile.audit-retention"),
        (args(&["reconcile", &bad_sweep_config, &store, &local]), "sweep-unlabelled"),
        (args(&["reconcile", "--sweep-unlabelled", &store, &local]), "--sweep-unlabelled"),
        (args(&["reconcile", "--sweep-unlabelled=true", &store, &local]), "--sweep-unlabelled"),
        (args(&["leaks", "retry", "--limit", "0", &store, &local]), "--limit"),
        (args(&["audit", "--since", "yesterday", &store]), "--since"),
        (args(&["audit", "--limit", "-1", &store]), "--limit"),
        (args(&["status", "--pg-schema", "bad name", "--store", "postgres://127.0.0.1:1/x"]), "--pg-schema"),
        (args(&["reconcile", "--no-such-flag", &store, &local]), "--no-such-flag"),
        (args(&["frobnicate"]), "frobnicate"),
    ];
    for (args, flag) in cases {
        let result = run(&args);
        assert_eq!(result.code, 2, "{args:?} should exit 2:\n{result}");
        assert!(result.stderr.contains(flag), "{args:?}: the message should name {flag}:\n{result}");
        assert!(!result.stderr.contains("panicked"), "{result}");
    }
    // --json answers a usage error as a JSON document too (clap's own errors aside).
    let result = run(&args(&["audit", "--since", "yesterday", "--json", &store]));
    assert_eq!(result.code, 2);
    let document = result.json();
    assert_eq!(document["error"]["kind"], "usage");
    assert_eq!(document["error"]["flag"], "--since");
    assert_eq!(document["exitCode"], 2);
}

#[test]
fn unreachable_store_exits_3_with_a_clear_message() {
    let started = std::time::Instant::now();
    let result = run(&args(&["status", "--store", "postgres://127.0.0.1:1/x"]));
    assert_eq!(result.code, 3, "{result}");
    assert!(result.stderr.contains("could not connect to PostgreSQL at postgres://127.0.0.1:1/x"), "{result}");
    assert!(result.stderr.contains("refused"), "{result}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "a refused connection fails fast");

    // The same through the environment variable, with --json.
    let mut command = common::command(&args(&["reconcile", "--json", "--local", "/tmp/unused-by-this-test"]));
    let output = command.env("SANDBOX_RECLAIM_STORE", "postgres://user:secret@127.0.0.1:1/x").output().unwrap();
    assert_eq!(output.status.code(), Some(3));
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["error"]["kind"], "unavailable");
    assert_eq!(document["exitCode"], 3);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("secret") && !document.to_string().contains("secret"), "passwords are never printed");

    // A SQLite file that cannot be created.
    let result = run(&args(&["status", "--store", "sqlite:/proc/no-such-dir/store.db"]));
    assert_eq!(result.code, 3, "{result}");
    assert!(result.stderr.contains("/proc/no-such-dir/store.db"), "{result}");

    // A file that is not a store of ours is refused, and left alone.
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("notes.txt");
    std::fs::write(&foreign, "not a database, just notes\n".repeat(100)).unwrap();
    let result = run(&args(&["status", &format!("--store=sqlite:{}", foreign.display())]));
    assert_eq!(result.code, 3, "{result}");
    assert_eq!(std::fs::read_to_string(&foreign).unwrap(), "not a database, just notes\n".repeat(100));
}

#[test]
fn unreachable_docker_exits_3() {
    let Some(world) = World::new(Backend::Sqlite) else { return };
    let socket = world.dir.path().join("no-engine.sock");
    let mut args = vec!["reconcile".to_owned(), format!("--docker=unix://{}", socket.display())];
    args.push(world.store_flags[0].clone());
    let result = run(&args);
    assert_eq!(result.code, 3, "{result}");
    assert!(result.stderr.contains("Docker engine unavailable"), "{result}");
    assert!(result.stderr.contains("no-engine.sock"), "{result}");
}
