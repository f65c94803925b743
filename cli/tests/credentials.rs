//! Credentials are never printed: a distinct secret is planted in every
//! credential input (the store's environment variable, `--store`, a config
//! file's `store`, the vendors' key variables), every subcommand (and every
//! `--help`) runs against a store that cannot be reached, and no secret may
//! appear on stdout or stderr, while the error still names the host.

mod common;

use std::path::Path;
use std::process::Stdio;

use common::{command, wait_with_timeout, Run};

/// Every secret planted, each distinct, so a leak names its input.
const SECRETS: &[&str] = &[
    "EnvUrlPw7q",
    "EnvQueryPw3k",
    "EnvSslPw9z",
    "EnvPassfile2m",
    "FlagUrlPw5r",
    "FlagQueryPw1n",
    "DsnPw8x",
    "DsnQuotedPw6w",
    "CfgUrlPw4t",
    "CfgQueryPw6y",
    "E2bKey1a",
    "DaytonaKey2b",
    "VercelTok3c",
];

const ENV_STORE: &str = "postgres://envuser:EnvUrlPw7q@127.0.0.1:1/db?password=EnvQueryPw3k&sslpassword=EnvSslPw9z\
                         &passfile=EnvPassfile2m&sslmode=disable";
const FLAG_STORE: &str = "postgresql://flaguser:FlagUrlPw5r@127.0.0.1:1/db?sslmode=disable&password=FlagQueryPw1n";
const DSN_STORE: &str = "host=127.0.0.1 port=1 user=dsnuser password=DsnPw8x dbname=db";
const QUOTED_DSN_STORE: &str = "host=127.0.0.1 port=1 password='DsnQuotedPw6w x' dbname=db";
const CONFIG_STORE: &str = "postgres://cfguser:CfgUrlPw4t@127.0.0.1:1/db?password=CfgQueryPw6y";

/// The subcommands, as run against each store (a local provider where one is needed).
fn subcommands(local: &Path) -> Vec<Vec<String>> {
    let local = format!("--local={}", local.display());
    let lists: Vec<Vec<&str>> = vec![
        vec!["status"],
        vec!["migrate"],
        vec!["audit"],
        vec!["audit", "--since=2024-05-01T12:00:00+02:00"],
        vec!["leaks", "list"],
        vec!["leaks", "retry", &local],
        vec!["orphans", "--dry-run", &local],
        vec!["reconcile", "--dry-run", &local],
        vec!["reconcile", "--dry-run", "--e2b", "--daytona", &local],
    ];
    lists.into_iter().map(|list| list.into_iter().map(str::to_owned).collect()).collect()
}

fn helps() -> Vec<Vec<String>> {
    let lists: Vec<Vec<&str>> = vec![
        vec!["--help"],
        vec!["-h"],
        vec!["help"],
        vec!["status", "--help"],
        vec!["migrate", "--help"],
        vec!["audit", "--help"],
        vec!["leaks", "--help"],
        vec!["leaks", "list", "--help"],
        vec!["leaks", "retry", "--help"],
        vec!["orphans", "--help"],
        vec!["reconcile", "--help"],
        vec!["help", "reconcile"],
        vec!["--version"],
    ];
    lists.into_iter().map(|list| list.into_iter().map(str::to_owned).collect()).collect()
}

/// Runs the command with every vendor key planted (and their APIs pointed
/// at a closed port, so nothing leaves the machine), plus `env`.
fn run_with(args: &[String], env: &[(&str, &str)]) -> Run {
    let mut command = command(args);
    command
        .env("E2B_API_KEY", "E2bKey1a")
        .env("E2B_API_URL", "http://127.0.0.1:1")
        .env("DAYTONA_API_KEY", "DaytonaKey2b")
        .env("DAYTONA_API_URL", "http://127.0.0.1:1")
        .env("VERCEL_TOKEN", "VercelTok3c");
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let code = wait_with_timeout(&mut child, std::time::Duration::from_secs(60));
    Run { code, stdout: out.join().unwrap(), stderr: err.join().unwrap() }
}

fn assert_no_secret(args: &[String], how: &str, result: &Run) {
    for secret in SECRETS {
        assert!(
            !result.stdout.contains(secret) && !result.stderr.contains(secret),
            "{how} {args:?}: the secret {secret} was printed:\n{result}"
        );
    }
    assert!(!result.stderr.contains("panicked"), "{how} {args:?}:\n{result}");
}

#[test]
fn help_never_prints_the_environment_values() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, format!("store = \"{CONFIG_STORE}\"\n")).unwrap();
    let env = [
        ("SANDBOX_RECLAIM_STORE", ENV_STORE),
        ("SANDBOX_RECLAIM_CONFIG", config.to_str().unwrap()),
        ("SANDBOX_RECLAIM_PG_SCHEMA", "schema_EnvUrlPw7q"),
    ];
    for args in helps() {
        let result = run_with(&args, &env);
        assert_eq!(result.code, 0, "{args:?}:\n{result}");
        assert_no_secret(&args, "help", &result);
        assert!(!result.stdout.contains(&*config.to_string_lossy()), "{args:?}: the config path\n{result}");
        if args != ["--version"] {
            assert!(result.stdout.contains("SANDBOX_RECLAIM_STORE"), "{args:?}: names the variable\n{result}");
        }
    }
}

#[test]
fn an_unreachable_store_is_named_without_its_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let local = dir.path().join("sandboxes");
    std::fs::create_dir_all(&local).unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, format!("store = \"{CONFIG_STORE}\"\nconnect-timeout = \"3s\"\n")).unwrap();
    let config_flag = format!("--config={}", config.display());

    // (how the store is given, extra args, extra env, what the error must name)
    type Case<'a> = (&'a str, Vec<String>, Vec<(&'a str, &'a str)>, &'a str);
    let cases: Vec<Case> = vec![
        ("env", vec![], vec![("SANDBOX_RECLAIM_STORE", ENV_STORE)], "envuser:***@127.0.0.1:1/db"),
        ("--store", vec![format!("--store={FLAG_STORE}")], vec![], "flaguser:***@127.0.0.1:1/db"),
        ("--store DSN", vec!["--store".into(), DSN_STORE.into()], vec![], "host=127.0.0.1 port=1"),
        ("--store quoted DSN", vec![format!("--store={QUOTED_DSN_STORE}")], vec![], "host=127.0.0.1 port=1"),
        ("--config", vec![config_flag.clone()], vec![], "cfguser:***@127.0.0.1:1/db"),
        (
            "SANDBOX_RECLAIM_CONFIG",
            vec![],
            vec![("SANDBOX_RECLAIM_CONFIG", config.to_str().unwrap())],
            "cfguser:***@127.0.0.1:1/db",
        ),
        // The flag wins over the variable; neither is printed.
        (
            "--store over env",
            vec![format!("--store={FLAG_STORE}")],
            vec![("SANDBOX_RECLAIM_STORE", ENV_STORE)],
            "flaguser:***@",
        ),
    ];
    for (how, store_args, env, names) in &cases {
        for subcommand in subcommands(&local) {
            for extra in [&[][..], &["--json"][..], &["--log-format=json"][..]] {
                let args: Vec<String> = subcommand
                    .iter()
                    .cloned()
                    .chain(store_args.iter().cloned())
                    .chain(extra.iter().map(|arg| (*arg).to_owned()))
                    .collect();
                let mut env = env.clone();
                if extra.contains(&"--log-format=json") {
                    env.push(("RUST_LOG", "debug"));
                }
                let result = run_with(&args, &env);
                assert_no_secret(&args, how, &result);
                assert!(
                    result.code == 2 || result.code == 3,
                    "{how} {args:?}: a usage error or an unavailable store:\n{result}"
                );
                assert!(result.stderr.contains(names), "{how} {args:?}: the error names {names}:\n{result}");
            }
        }
    }
}

#[test]
fn an_unreachable_vendor_api_is_named_without_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("--store=sqlite:{}", dir.path().join("store.db").display());
    for vendor in ["--e2b", "--daytona"] {
        for extra in [&[][..], &["--json"][..]] {
            let args: Vec<String> = ["reconcile", "--dry-run", vendor, &store, "--connect-timeout=5s"]
                .iter()
                .chain(extra)
                .map(|arg| (*arg).to_owned())
                .collect();
            let result = run_with(&args, &[("RUST_LOG", "debug")]);
            assert_no_secret(&args, "vendor", &result);
            assert_eq!(result.code, 3, "{args:?}:\n{result}");
            assert!(result.stderr.contains("127.0.0.1:1"), "{args:?}: names the API:\n{result}");
        }
    }
}

#[test]
fn a_config_file_that_does_not_parse_is_not_quoted() {
    let dir = tempfile::tempdir().unwrap();
    let bad = [
        // Unterminated string, unquoted value, wrong type, unknown key next to the store.
        "store = \"postgres://cfguser:CfgUrlPw4t@127.0.0.1:1/db\n",
        "store = postgres://cfguser:CfgUrlPw4t@127.0.0.1:1/db\n",
        "json = \"postgres://cfguser:CfgUrlPw4t@127.0.0.1:1/db?password=CfgQueryPw6y\"\n",
        "store = \"postgres://cfguser:CfgUrlPw4t@127.0.0.1:1/db\"\nstroe = \"CfgQueryPw6y\"\n",
    ];
    for (index, text) in bad.iter().enumerate() {
        let config = dir.path().join(format!("bad{index}.toml"));
        std::fs::write(&config, text).unwrap();
        for extra in [&[][..], &["--json"][..]] {
            let args: Vec<String> = ["status".to_owned(), format!("--config={}", config.display())]
                .into_iter()
                .chain(extra.iter().map(|arg| (*arg).to_owned()))
                .collect();
            let result = run_with(&args, &[]);
            assert_no_secret(&args, "config", &result);
            assert_eq!(result.code, 2, "{args:?}:\n{result}");
            assert!(result.stderr.contains("--config") && result.stderr.contains("line "), "{args:?}:\n{result}");
        }
    }
}

/// A store that opens: what `status`, `migrate`, `audit` and `leaks list`
/// print of it (text and JSON, and debug logs) names it without the
/// credentials planted in its URL (parameters the server never sees, so
/// the test's own login is unchanged).
#[test]
fn a_reachable_store_is_described_without_its_credentials() {
    let Some(world) = common::World::new(common::Backend::Postgres) else { return };
    let (url, schema) = world.pg.clone().unwrap();
    let separator = if url.contains('?') { '&' } else { '?' };
    let store = format!("--store={url}{separator}sslpassword=PgSslPw0s&passfile=PgPassfile1t");
    let schema = format!("--pg-schema={schema}");
    for subcommand in [&["status"][..], &["migrate"], &["audit"], &["leaks", "list"]] {
        for extra in [&[][..], &["--json"][..]] {
            let args: Vec<String> = subcommand
                .iter()
                .chain(extra)
                .map(|arg| (*arg).to_owned())
                .chain([store.clone(), schema.clone()])
                .collect();
            let result = run_with(&args, &[("RUST_LOG", "debug")]);
            for secret in ["PgSslPw0s", "PgPassfile1t"] {
                assert!(!result.stdout.contains(secret) && !result.stderr.contains(secret), "{args:?}:\n{result}");
            }
            assert_eq!(result.code, 0, "{args:?}:\n{result}");
            if extra == ["--json"] || matches!(subcommand[0], "status" | "migrate") {
                assert!(result.stdout.contains("sslpassword=***&passfile=***"), "{args:?}: names the store\n{result}");
            }
            if extra == ["--json"] {
                let store = result.json()["store"].as_str().unwrap_or_default().to_owned();
                assert!(store.contains("sslpassword=***") && store.contains(" (schema cli_"), "{store}");
            }
        }
    }
}
