//! `--e2b`, `--daytona`, `--vercel`, `--sprites`, `--blaxel` and their config sections against the
//! local vendor fakes (tests/fakes/*.mjs, which the vendors' official SDKs
//! accept in tests/node/*-fake.test.mjs): a pass sweeps the owner's old
//! sandboxes page by page; a refused key exits 3 naming the variable and
//! never printing the key. Needs `node` (FAILS without it), and for
//! `--modal` its gRPC fake (tests/fakes/modal_fake.py) under the Python
//! `SANDBOX_RECLAIM_FAKE_PYTHON` names (FAILS without it). `--kubernetes`
//! against the Kubernetes API fake (tests/fakes/kubernetes.mjs) through the
//! kubeconfigs it writes.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

const KEY: &str = "e2b_cli_test_key";

struct Fake {
    child: Child,
    url: String,
    /// Where the control routes are, when not on `url` (the gRPC fake's).
    control: Option<String>,
    /// The line the fake printed when it started (the Kubernetes fake's kubeconfigs).
    started: Value,
}

impl Fake {
    fn start() -> Self {
        Self::start_vendor("e2b.mjs", &["--key", KEY])
    }

    fn start_vendor(script: &str, args: &[&str]) -> Self {
        let path = format!("{}/../tests/fakes/{script}", env!("CARGO_MANIFEST_DIR"));
        let program = match script.ends_with(".py") {
            true => std::env::var("SANDBOX_RECLAIM_FAKE_PYTHON").unwrap_or_else(|_| {
                panic!("SANDBOX_RECLAIM_FAKE_PYTHON is not set: this test needs a Python with `modal==1.6.4`")
            }),
            false => "node".to_owned(),
        };
        let mut child = Command::new(&program)
            .arg(path)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("this test needs {program} to run the {script} fake: {error}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let started: Value = serde_json::from_str(&line)
            .unwrap_or_else(|_| panic!("the {script} fake did not start under {program}: {line:?}"));
        let control = started["control"].as_str().map(str::to_owned);
        Self { child, url: started["url"].as_str().unwrap().to_owned(), control, started }
    }

    fn call(&self, method: reqwest::Method, route: &str, body: Option<Value>) -> Value {
        let base = self.control.as_deref().unwrap_or(&self.url);
        common::runtime().block_on(async {
            // The Kubernetes fake serves HTTPS under its own CA.
            let client = reqwest::Client::builder().danger_accept_invalid_certs(true).build().unwrap();
            let mut request = client.request(method, format!("{base}/_fake/{route}"));
            if let Some(body) = body {
                request = request.body(body.to_string());
            }
            let response = request.send().await.unwrap();
            serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
        })
    }

    fn alive(&self) -> Vec<Value> {
        self.call(reqwest::Method::GET, "state", None)["alive"].as_array().unwrap().clone()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn e2b_run(fake: &Fake, key: &str, args: &[String]) -> common::Run {
    let mut command = common::command(args);
    command.env("E2B_API_KEY", key).env("E2B_API_URL", &fake.url).env_remove("E2B_DOMAIN");
    let output = command.stdin(Stdio::null()).output().expect("spawn sandbox-reclaim");
    common::Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn reconcile_sweeps_every_page_of_the_owners_e2b_sandboxes() {
    let fake = Fake::start();
    let dir = tempfile::tempdir().unwrap();
    let store = format!("--store=sqlite:{}", dir.path().join("store.db").display());
    let ours: Vec<Value> = (0..7)
        .map(|i| {
            json!({ "sandboxID": format!("ours{i}"), "startedAt": "2026-01-01T00:00:00Z",
                         "metadata": { "io.sandbox-reclaim.owner": "cli-e2b" } })
        })
        .collect();
    fake.call(reqwest::Method::POST, "sandboxes", Some(Value::Array(ours)));
    fake.call(reqwest::Method::POST, "sandboxes", Some(json!([{ "sandboxID": "stranger", "metadata": {} }])));

    let args: Vec<String> = ["reconcile", "--e2b", "--owner=cli-e2b", "--json", &store].map(String::from).to_vec();
    let run = e2b_run(&fake, KEY, &args);
    run.expect_code(0);
    let report = run.json();
    let e2b = &report["report"]["providers"][0];
    assert_eq!(e2b["name"], "e2b", "{run}");
    assert_eq!(e2b["orphans"]["status"], "swept", "{run}");
    assert_eq!(e2b["orphans"]["destroyed"], 7, "{run}");
    assert_eq!(fake.alive(), [json!("stranger")]);
    assert!(!run.stdout.contains(KEY) && !run.stderr.contains(KEY));
}

#[test]
fn a_refused_key_exits_3_naming_the_variable_and_never_the_key() {
    let fake = Fake::start();
    let dir = tempfile::tempdir().unwrap();
    let store = format!("--store=sqlite:{}", dir.path().join("store.db").display());
    for json_flag in [true, false] {
        let mut args: Vec<String> = ["reconcile", "--e2b", &store].map(String::from).to_vec();
        if json_flag {
            args.push("--json".into());
        }
        let run = e2b_run(&fake, "e2b_wrong_secret", &args);
        run.expect_code(3);
        let printed = format!("{}{}", run.stdout, run.stderr);
        assert!(printed.contains("E2B_API_KEY") && printed.contains("401"), "{run}");
        assert!(!printed.contains("e2b_wrong_secret"), "{run}");
    }
}

#[test]
fn the_e2b_section_of_the_config_turns_the_provider_on_with_its_own_key_and_url() {
    let fake = Fake::start();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("sandbox-reclaim.toml");
    let mut file = std::fs::File::create(&config).unwrap();
    writeln!(file, "[e2b]\nname = \"e2b-prod\"\napi-key = \"{KEY}\"\napi-url = \"{}\"", fake.url).unwrap();
    fake.call(
        reqwest::Method::POST,
        "sandboxes",
        Some(json!([{ "sandboxID": "old", "startedAt": "2026-01-01T00:00:00Z",
                       "metadata": { "io.sandbox-reclaim.owner": "sandbox-reclaim" } }])),
    );
    let store = format!("--store=sqlite:{}", dir.path().join("store.db").display());
    let args: Vec<String> =
        ["orphans", "--json", &store, &format!("--config={}", config.display())].map(String::from).to_vec();
    let mut command = common::command(&args);
    command.env_remove("E2B_API_KEY").env("E2B_API_URL", "http://127.0.0.1:9");
    let output = command.stdin(Stdio::null()).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(report["report"]["providers"][0]["name"], "e2b-prod", "{report}");
    assert!(fake.alive().is_empty());
    assert!(!stdout.contains(KEY));

    let empty_key = dir.path().join("empty.toml");
    std::fs::write(&empty_key, "[e2b]\napi-key = \"\"\n").unwrap();
    let run = common::run(&["reconcile".into(), store, format!("--config={}", empty_key.display())]);
    run.expect_code(2);
    assert!(run.stderr.contains("e2b.api-key"), "{run}");
}

#[test]
fn every_rest_vendor_pass_sweeps_its_owners_sandboxes_retries_a_failed_destroy_and_refuses_a_wrong_key() {
    let vendors = [
        (
            "daytona.mjs",
            vec!["--key", "dtn_cli_key"],
            "--daytona",
            vec![("DAYTONA_API_KEY", "dtn_cli_key")],
            "DAYTONA_API_URL",
            "DAYTONA_API_KEY",
            json!({ "id": "old", "labels": { "io.sandbox-reclaim.owner": "cli-hosted" }, "state": "archived",
                    "createdAt": "2026-01-01T00:00:00Z" }),
        ),
        (
            "vercel.mjs",
            vec!["--token", "vcl_cli_key", "--team", "team_c", "--project", "prj_c"],
            "--vercel",
            vec![("VERCEL_TOKEN", "vcl_cli_key"), ("VERCEL_TEAM_ID", "team_c"), ("VERCEL_PROJECT_ID", "prj_c")],
            "",
            "VERCEL_TOKEN",
            json!({ "name": "old", "tags": { "io.sandbox-reclaim.owner": "cli-hosted" }, "status": "stopped",
                    "createdAt": 1_767_225_600_000_u64 }),
        ),
        (
            "sprites.mjs",
            vec!["--key", "spr_cli_key"],
            "--sprites",
            vec![("SPRITES_API_KEY", "spr_cli_key")],
            "SPRITES_API_URL",
            "SPRITES_API_KEY",
            json!({ "name": "old", "labels": ["io.sandbox-reclaim.owner=cli-hosted"], "status": "cold",
                    "createdAt": 1_767_225_600_000_u64 }),
        ),
        (
            "runloop.mjs",
            vec!["--key", "rl_cli_key"],
            "--runloop",
            vec![("RUNLOOP_API_KEY", "rl_cli_key")],
            "RUNLOOP_BASE_URL",
            "RUNLOOP_API_KEY",
            json!({ "id": "old", "metadata": { "io.sandbox-reclaim.owner": "cli-hosted" }, "status": "suspended",
                    "createTimeMs": 1_767_225_600_000_u64 }),
        ),
        (
            "blaxel.mjs",
            vec!["--key", "bl_cli_key", "--workspace", "ws_c"],
            "--blaxel",
            vec![("BL_API_KEY", "bl_cli_key"), ("BL_WORKSPACE", "ws_c")],
            "BL_API_URL",
            "BL_API_KEY",
            json!({ "name": "old", "labels": { "io.sandbox-reclaim.owner": "cli-hosted" }, "status": "DEPLOYED",
                    "createdAt": 1_767_225_600_000_u64 }),
        ),
    ];
    for (script, fake_args, flag, env, url_variable, key_variable, sandbox) in vendors {
        let fake = Fake::start_vendor(script, &fake_args);
        fake.call(reqwest::Method::POST, "sandboxes", Some(json!([sandbox])));
        let dir = tempfile::tempdir().unwrap();
        let store = format!("--store=sqlite:{}", dir.path().join("store.db").display());
        let config = dir.path().join("c.toml");
        let section = flag.trim_start_matches("--");
        let base = if section == "blaxel" { format!("{}/v0", fake.url) } else { fake.url.clone() };
        std::fs::write(&config, format!("[{section}]\napi-url = \"{base}\"\n")).unwrap();
        let args: Vec<String> = [
            "reconcile",
            flag,
            "--owner=cli-hosted",
            "--json",
            "--backoff=0s",
            &store,
            &format!("--config={}", config.display()),
        ]
        .map(String::from)
        .to_vec();
        let run_with = |key: &str| {
            let mut command = common::command(&args);
            for (name, value) in &env {
                command.env(name, if *name == key_variable { key } else { value });
            }
            if !url_variable.is_empty() {
                command.env_remove(url_variable);
            }
            let output = command.stdin(Stdio::null()).output().unwrap();
            common::Run {
                code: output.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            }
        };
        let refused = run_with("wrong_cli_secret");
        refused.expect_code(3);
        assert!(refused.stdout.contains(key_variable), "{refused}");
        assert!(!format!("{}{}", refused.stdout, refused.stderr).contains("wrong_cli_secret"), "{refused}");

        // A failed destroy is still leaking (exit 1) and reaches the ledger; the next pass retries it.
        let right_key = env.iter().find(|(name, _)| *name == key_variable).unwrap().1;
        fake.call(reqwest::Method::POST, "faults", Some(json!({ "failDeleteEvery": 1 })));
        let failed = run_with(right_key);
        failed.expect_code(1);
        assert_eq!(failed.json()["report"]["providers"][0]["orphans"]["failed"], 1, "{script}: {failed}");
        fake.call(reqwest::Method::POST, "faults", Some(json!({ "failDeleteEvery": 0 })));
        let run = run_with(right_key);
        run.expect_code(0);
        let report = run.json();
        assert_eq!(report["report"]["providers"][0]["name"], section, "{run}");
        assert_eq!(report["report"]["providers"][0]["leaks"]["destroyed"], 1, "the ledger's retry: {run}");
        assert!(fake.alive().is_empty(), "{script}: {run}");
    }
}

/// The registry: with sweep-unlabelled, Daytona is listed without the owner
/// filter; an unlabelled sandbox whose record was written then deleted (a
/// destroy TanStack's provider swallowed) is destroyed, an unlabelled one no
/// record ever named is left running, and so is one labelled for another
/// owner even though a record named it.
#[test]
fn sweep_unlabelled_destroys_what_the_registry_names_and_nothing_else() {
    use sandbox_reclaim::{SandboxInstanceRecord, SandboxInstanceStore, SqliteSandboxInstanceStore};

    const DAYTONA_KEY: &str = "dtn_registry_key";
    let fake = Fake::start_vendor("daytona.mjs", &["--key", DAYTONA_KEY]);
    let labelled = |owner: &str| json!({ "io.sandbox-reclaim.owner": owner });
    fake.call(
        reqwest::Method::POST,
        "sandboxes",
        Some(json!([
            { "id": "ours-labelled", "labels": labelled("cli-registry") },
            { "id": "leftover", "labels": {} },
            { "id": "live", "labels": {} },
            { "id": "unregistered", "labels": {} },
            { "id": "stranger", "labels": labelled("someone-else") },
        ])),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    // What a TanStack app's store holds: `leftover`'s and `stranger`'s records
    // were deleted after a destroy that silently failed; `live`'s is current.
    common::runtime().block_on(async {
        let store = SqliteSandboxInstanceStore::open(&path).await.unwrap();
        for (key, id) in [("t-leftover", "leftover"), ("t-stranger", "stranger"), ("t-live", "live")] {
            let record = SandboxInstanceRecord {
                key: key.to_owned(),
                provider: "daytona".to_owned(),
                provider_sandbox_id: id.to_owned(),
                latest_snapshot_id: None,
                thread_id: format!("thread-{key}"),
                latest_run_id: None,
                updated_at: sandbox_reclaim::runtime::clock::now_millis(),
            };
            store.upsert(&record).await.unwrap();
        }
        store.delete("t-leftover").await.unwrap();
        store.delete("t-stranger").await.unwrap();
        store.close().await;
    });
    let store = format!("--store=sqlite:{}", path.display());
    let run = |args: &[&str]| {
        let mut all: Vec<String> = args.iter().map(|arg| (*arg).to_owned()).collect();
        all.extend(["--daytona".to_owned(), "--owner=cli-registry".to_owned(), "--json".to_owned(), store.clone()]);
        let mut command = common::command(&all);
        command.env("DAYTONA_API_KEY", DAYTONA_KEY).env("DAYTONA_API_URL", &fake.url);
        let output = command.stdin(Stdio::null()).output().unwrap();
        common::Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    };
    let planned_ids = |run: &common::Run| -> Vec<String> {
        let document = run.json();
        let actions = document["report"]["actions"].as_array().cloned().unwrap_or_default();
        let mut ids: Vec<String> =
            actions.iter().map(|action| action["providerSandboxId"].as_str().unwrap().to_owned()).collect();
        ids.sort();
        ids
    };
    let everything = ["leftover", "live", "ours-labelled", "stranger", "unregistered"].map(String::from).to_vec();

    // Without it, the listing is filtered by our label, and what the registry
    // names is looked up by id: `leftover` is found (unlabelled, so the
    // registry's), `stranger` stays another owner's; `unregistered` is never seen.
    let labelled_only = run(&["reconcile", "--dry-run"]);
    labelled_only.expect_code(1);
    let orphans = &labelled_only.json()["report"]["providers"][0]["orphans"];
    assert_eq!((orphans["listed"].as_u64(), orphans["foreign"].as_u64()), (Some(3), Some(1)), "{labelled_only}");
    assert_eq!(planned_ids(&labelled_only), ["leftover", "ours-labelled"], "{labelled_only}");

    // The flag lists everything; a retention of 0s counts only live records,
    // so the deleted record's sandbox is not (yet) taken for ours.
    let no_retention = run(&["--sweep-unlabelled", "orphans", "--dry-run", "--registry-retention=0s"]);
    no_retention.expect_code(1);
    let orphans = &no_retention.json()["report"]["providers"][0]["orphans"];
    assert_eq!(orphans["listed"], 5, "{no_retention}");
    assert_eq!(planned_ids(&no_retention), ["ours-labelled"], "{no_retention}");
    assert_eq!(fake.alive(), everything);

    // The config keys: the registry names `leftover` (deleted within 1h).
    let config = dir.path().join("registry.toml");
    std::fs::write(&config, "[daytona]\nsweep-unlabelled = true\n[reconcile]\nregistry-retention = \"1h\"\n").unwrap();
    let swept = run(&["reconcile", &format!("--config={}", config.display())]);
    swept.expect_code(0);
    let document = swept.json();
    let orphans = &document["report"]["providers"][0]["orphans"];
    assert_eq!(orphans["status"], "swept", "{swept}");
    assert_eq!(orphans["listed"], 5, "{swept}");
    assert_eq!(orphans["destroyed"], 2, "{swept}");
    assert_eq!(orphans["referenced"], 1, "{swept}");
    assert_eq!(orphans["foreign"], 2, "unregistered and stranger: {swept}");
    assert_eq!(planned_ids(&swept), ["leftover", "ours-labelled"], "{swept}");
    assert_eq!(fake.alive(), ["live", "stranger", "unregistered"]);
    assert!(!format!("{}{}", swept.stdout, swept.stderr).contains(DAYTONA_KEY));
}

/// Sprites cannot filter by label: every sprite is listed and the engine keeps
/// those labelled (the string `io.sandbox-reclaim.owner=<owner>`) for ours, so
/// `orphans --sprites` destroys the labelled old one and leaves the unlabelled
/// one and another owner's running.
#[test]
fn a_sprites_orphans_pass_destroys_the_owners_labelled_sprite_and_leaves_the_rest() {
    const SPRITES_KEY: &str = "spr_cli_key";
    let fake = Fake::start_vendor("sprites.mjs", &["--key", SPRITES_KEY]);
    fake.call(
        reqwest::Method::POST,
        "sandboxes",
        Some(json!([
            { "name": "orphan", "labels": ["io.sandbox-reclaim.owner=cli-sprites"], "createdAt": 1_767_225_600_000_u64 },
            { "name": "unlabelled", "labels": [], "createdAt": 1_767_225_600_000_u64 },
            { "name": "theirs", "labels": ["io.sandbox-reclaim.owner=someone-else"], "createdAt": 1_767_225_600_000_u64 },
        ])),
    );
    let dir = tempfile::tempdir().unwrap();
    let store = format!("--store=sqlite:{}", dir.path().join("store.db").display());
    let args: Vec<String> =
        ["orphans", "--sprites", "--owner=cli-sprites", "--json", &store].map(String::from).to_vec();
    let mut command = common::command(&args);
    command.env("SPRITES_API_KEY", SPRITES_KEY).env("SPRITES_API_URL", &fake.url).env_remove("SPRITE_TOKEN");
    let output = command.stdin(Stdio::null()).output().expect("spawn sandbox-reclaim");
    let run = common::Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    run.expect_code(0);
    let report = run.json();
    let sprites = &report["report"]["providers"][0];
    assert_eq!(sprites["name"], "sprites", "{run}");
    assert_eq!(sprites["orphans"]["status"], "swept", "{run}");
    assert_eq!(sprites["orphans"]["destroyed"], 1, "{run}");
    assert_eq!(fake.alive(), [json!("theirs"), json!("unlabelled")], "{run}");
    assert!(!format!("{}{}", run.stdout, run.stderr).contains(SPRITES_KEY), "{run}");
}

/// Blaxel needs a workspace: `--blaxel` with a key but no BL_WORKSPACE (nor
/// `[blaxel] workspace`) is a usage error naming where to set it.
#[test]
fn blaxel_without_a_workspace_is_a_usage_error_naming_bl_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("--store=sqlite:{}", dir.path().join("store.db").display());
    let args: Vec<String> = ["orphans", "--blaxel", "--json", &store].map(String::from).to_vec();
    let mut command = common::command(&args);
    command.env("BL_API_KEY", "bl_cli_secret").env("BL_API_URL", "http://127.0.0.1:9/v0").env_remove("BL_WORKSPACE");
    let output = command.stdin(Stdio::null()).output().expect("spawn sandbox-reclaim");
    let run = common::Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    run.expect_code(2);
    let printed = format!("{}{}", run.stdout, run.stderr);
    assert!(printed.contains("BL_WORKSPACE") || printed.contains("[blaxel] workspace"), "{run}");
    assert!(!printed.contains("bl_cli_secret"), "{run}");
}

/// `--modal` over gRPC: a refused token exits 3 naming both variables and
/// never the secret; a pass lists within `[modal] app-id` by our owner tag,
/// a failed terminate is still leaking (exit 1) and reaches the ledger, and
/// the next pass's retry ends it; an untagged stranger is never touched.
/// Without an app or an environment the sweep is unavailable, saying why.
#[test]
fn a_modal_pass_sweeps_the_owners_tagged_sandboxes_within_its_app_and_retries_a_failed_terminate() {
    const APP: &str = "ap-SandboxReclaimFakeApp0";
    let fake = Fake::start_vendor("modal_fake.py", &["--token-id", "ak-cli-id", "--token-secret", "as-cli-secret"]);
    let ours = "sb-01KDVDNA000000000000000001";
    let stranger = "sb-01KDVDNA000000000000000002";
    let tags = json!({ "io.sandbox-reclaim.owner": "cli-modal" });
    let seeds = json!([{ "id": ours, "tags": tags, "createdAt": 1_767_225_600 }, { "id": stranger, "createdAt": 1_767_225_600 }]);
    fake.call(reqwest::Method::POST, "sandboxes", Some(seeds));
    let dir = tempfile::tempdir().unwrap();
    let store = format!("--store=sqlite:{}", dir.path().join("store.db").display());
    let config = dir.path().join("c.toml");
    let run_with = |secret: &str, section: &str| {
        std::fs::write(&config, format!("[modal]\n{section}")).unwrap();
        let args = ["reconcile", "--modal", "--owner=cli-modal", "--json", "--backoff=0s", &store];
        let mut args: Vec<String> = args.map(String::from).to_vec();
        args.push(format!("--config={}", config.display()));
        let mut command = common::command(&args);
        command.env("MODAL_TOKEN_ID", "ak-cli-id").env("MODAL_TOKEN_SECRET", secret);
        command.env("MODAL_SERVER_URL", &fake.url).env_remove("MODAL_ENVIRONMENT");
        let output = command.stdin(Stdio::null()).output().unwrap();
        common::Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    };
    let app = format!("app-id = \"{APP}\"\n");
    let refused = run_with("as-wrong-cli-secret", &app);
    refused.expect_code(3);
    assert!(refused.stdout.contains("MODAL_TOKEN_ID") && refused.stdout.contains("MODAL_TOKEN_SECRET"), "{refused}");
    assert!(!format!("{}{}", refused.stdout, refused.stderr).contains("as-wrong-cli-secret"), "{refused}");

    let api_key = run_with("as-cli-secret", "api-key = \"k\"\n");
    api_key.expect_code(2);
    assert!(api_key.stderr.contains("modal.api-key"), "Modal takes a token pair, not an api-key: {api_key}");

    let unscoped = run_with("as-cli-secret", "");
    let orphans = &unscoped.json()["report"]["providers"][0]["orphans"];
    assert_eq!(orphans["status"], "unavailable", "{unscoped}");
    assert!(orphans["error"].as_str().unwrap().contains("appId"), "{unscoped}");

    fake.call(reqwest::Method::POST, "faults", Some(json!({ "failDeleteEvery": 1 })));
    let failed = run_with("as-cli-secret", &app);
    failed.expect_code(1);
    assert_eq!(failed.json()["report"]["providers"][0]["orphans"]["failed"], 1, "{failed}");
    fake.call(reqwest::Method::POST, "faults", Some(json!({ "failDeleteEvery": 0 })));
    let run = run_with("as-cli-secret", &app);
    run.expect_code(0);
    let report = run.json();
    assert_eq!(report["report"]["providers"][0]["name"], "modal", "{run}");
    assert_eq!(report["report"]["providers"][0]["leaks"]["destroyed"], 1, "the ledger's retry: {run}");
    assert_eq!(fake.alive(), [json!(stranger)]);
    for printed in [&run.stdout, &run.stderr, &failed.stdout, &failed.stderr] {
        assert!(!printed.contains("as-cli-secret") && !printed.contains("ak-cli-id"), "{printed}");
    }
}

/// `--kubernetes` finds its credentials as every Kubernetes tool does
/// (`KUBECONFIG`): a pass deletes the owner's claims in the context's
/// namespace and spares the rest; `[kubernetes]` picks the kind and the
/// namespace; a refused token exits 3 never printing it; a kind it does not
/// sweep is a usage error naming the key.
#[test]
fn a_kubernetes_pass_deletes_the_owners_claims_and_its_section_picks_kind_and_namespace() {
    let fake = Fake::start_vendor("kubernetes.mjs", &[]);
    let owned = |kind: &str, namespace: &str, name: &str, owner: Option<&str>| {
        let labels = owner.map_or_else(|| json!({}), |owner| json!({ "io.sandbox-reclaim.owner": owner }));
        json!({ "kind": kind, "namespace": namespace, "name": name, "labels": labels })
    };
    let seeds = json!([
        owned("SandboxClaim", "default", "ours", Some("cli-k8s")),
        owned("SandboxClaim", "default", "theirs", Some("other")),
        owned("SandboxClaim", "agents", "far", Some("cli-k8s")),
        owned("Pod", "agents", "pod-ours", Some("cli-k8s")),
    ]);
    fake.call(reqwest::Method::POST, "sandboxes", Some(seeds));
    let dir = tempfile::tempdir().unwrap();
    let store = format!("--store=sqlite:{}", dir.path().join("store.db").display());
    let config = dir.path().join("c.toml");
    let token = fake.started["token"].as_str().unwrap().to_owned();
    let run_with = |kubeconfig: &str, section: &str| {
        std::fs::write(&config, format!("[kubernetes]\n{section}")).unwrap();
        let args = ["reconcile", "--kubernetes", "--owner=cli-k8s", "--json", "--orphan-grace=1m", &store];
        let mut args: Vec<String> = args.map(String::from).to_vec();
        args.push(format!("--config={}", config.display()));
        let mut command = common::command(&args);
        command.env("KUBECONFIG", kubeconfig).env_remove("KUBERNETES_SERVICE_HOST");
        let output = command.stdin(Stdio::null()).output().unwrap();
        common::Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    };
    let kubeconfig = fake.started["kubeconfigToken"].as_str().unwrap().to_owned();
    let wrong = dir.path().join("wrong.yaml");
    let text = std::fs::read_to_string(&kubeconfig).unwrap().replace(&token, "wrong-cli-token-value");
    std::fs::write(&wrong, text).unwrap();
    let refused = run_with(wrong.to_str().unwrap(), "");
    refused.expect_code(3);
    assert!(!format!("{}{}", refused.stdout, refused.stderr).contains("wrong-cli-token-value"), "{refused}");

    let bad_kind = run_with(&kubeconfig, "kind = \"Deployment\"\n");
    bad_kind.expect_code(2);
    assert!(bad_kind.stderr.contains("[kubernetes] kind"), "{bad_kind}");

    let run = run_with(&kubeconfig, "");
    run.expect_code(0);
    let report = run.json();
    assert_eq!(report["report"]["providers"][0]["name"], "kubernetes", "{run}");
    assert_eq!(report["report"]["providers"][0]["orphans"]["destroyed"], 1, "{run}");
    let pods = run_with(&kubeconfig, "kind = \"Pod\"\nnamespace = \"*\"\n");
    pods.expect_code(0);
    assert_eq!(pods.json()["report"]["providers"][0]["orphans"]["destroyed"], 1, "{pods}");
    let state = fake.call(reqwest::Method::GET, "state", None);
    let deleted: Vec<String> = state["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|request| request["method"] == "DELETE")
        .map(|request| request["path"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        deleted,
        [
            "/apis/extensions.agents.x-k8s.io/v1beta1/namespaces/default/sandboxclaims/ours",
            "/api/v1/namespaces/agents/pods/pod-ours"
        ],
        "{run}"
    );
    for printed in [&run.stdout, &run.stderr, &pods.stdout, &pods.stderr] {
        assert!(!printed.contains(&token), "{printed}");
    }
}

/// `--upstash-box`: a refused key exits 3 naming `UPSTASH_BOX_API_KEY` and
/// never printing the key; a pass lists by our `sr:<owner>` label and deletes
/// the owner's boxes, sparing another owner's and an unlabelled one; a failed
/// delete is still leaking (exit 1) and reaches the ledger, and the next
/// pass's retry ends it.
#[test]
fn an_upstash_box_pass_deletes_the_owners_labelled_boxes_and_retries_a_failed_delete() {
    const BOX_KEY: &str = "box_cli_secret_key";
    let fake = Fake::start_vendor("upstash-box.mjs", &["--key", BOX_KEY]);
    let boxed = |id: &str, status: &str, labels: Value| json!({ "id": id, "status": status, "labels": labels, "created_at": 1_767_225_600 });
    let seeds = json!([
        boxed("box_ours", "idle", json!(["sr:cli-box"])),
        boxed("box_paused", "paused", json!(["team", "sr:cli-box"])),
        boxed("box_theirs", "running", json!(["sr:other"])),
        boxed("box_bare", "idle", json!([])),
    ]);
    fake.call(reqwest::Method::POST, "boxes", Some(seeds));
    let dir = tempfile::tempdir().unwrap();
    let store = format!("--store=sqlite:{}", dir.path().join("store.db").display());
    let config = dir.path().join("c.toml");
    std::fs::write(&config, format!("[upstash-box]\napi-url = \"{}\"\n", fake.url)).unwrap();
    let run_with = |key: &str| {
        let args = ["reconcile", "--upstash-box", "--owner=cli-box", "--json", "--backoff=0s", &store];
        let mut args: Vec<String> = args.map(String::from).to_vec();
        args.push(format!("--config={}", config.display()));
        let mut command = common::command(&args);
        command.env("UPSTASH_BOX_API_KEY", key).env_remove("UPSTASH_BOX_BASE_URL");
        let output = command.stdin(Stdio::null()).output().unwrap();
        common::Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    };
    let refused = run_with("box_wrong_cli_secret");
    refused.expect_code(3);
    assert!(refused.stdout.contains("UPSTASH_BOX_API_KEY"), "{refused}");
    assert!(!format!("{}{}", refused.stdout, refused.stderr).contains("box_wrong_cli_secret"), "{refused}");
    assert_eq!(fake.alive().len(), 4, "{refused}");

    fake.call(reqwest::Method::POST, "faults", Some(json!({ "failDeleteEvery": 1 })));
    let failed = run_with(BOX_KEY);
    failed.expect_code(1);
    assert_eq!(failed.json()["report"]["providers"][0]["orphans"]["failed"], 2, "{failed}");
    fake.call(reqwest::Method::POST, "faults", Some(json!({ "failDeleteEvery": 0 })));
    let run = run_with(BOX_KEY);
    run.expect_code(0);
    let report = run.json();
    assert_eq!(report["report"]["providers"][0]["name"], "upstash-box", "{run}");
    assert_eq!(report["report"]["providers"][0]["leaks"]["destroyed"], 2, "the ledger's retry: {run}");
    assert_eq!(fake.alive(), [json!("box_theirs"), json!("box_bare")], "{run}");
    let state = fake.call(reqwest::Method::GET, "state", None);
    let requests = state["requests"].as_array().unwrap();
    // The access check lists under the bare prefix (a label no box carries); every listing under ours.
    let queries: Vec<&str> = requests
        .iter()
        .filter(|r| r["method"] == "GET" && r["path"] == "/v2/box")
        .map(|r| r["query"].as_str().unwrap())
        .collect();
    assert!(queries.contains(&"?label=sr%3Acli-box"), "{queries:?}");
    assert!(queries.iter().all(|query| ["?label=sr%3Acli-box", "?label=sr%3A"].contains(query)), "{queries:?}");
    let mut deletes: Vec<&str> = state["deletes"].as_array().unwrap().iter().map(|id| id.as_str().unwrap()).collect();
    deletes.sort_unstable();
    assert_eq!(deletes, ["box_ours", "box_paused"], "each deleted once");
    for printed in [&run.stdout, &run.stderr, &failed.stdout, &failed.stderr] {
        assert!(!printed.contains(BOX_KEY), "{printed}");
    }
}

/// `--railway` in the environment `[railway] environment-id` names (else
/// `RAILWAY_ENVIRONMENT_ID`, required: a usage error without it). Railway
/// sandboxes carry no labels, so with `--sweep-unlabelled` the pass lists the
/// environment and destroys only what the store's registry names (a record
/// written, then deleted), sparing one whose record is live and one no record
/// ever named; a refused token exits 3 never printing it; a failed destroy is
/// still leaking (exit 1) and the next pass's retry ends it.
#[test]
fn a_railway_pass_destroys_what_the_registry_names_in_its_environment_and_retries_a_failed_destroy() {
    use sandbox_reclaim::{SandboxInstanceRecord, SandboxInstanceStore, SqliteSandboxInstanceStore};

    const TOKEN: &str = "railway_cli_account_secret";
    const ENVIRONMENT: &str = "env-cli";
    let fake = Fake::start_vendor("railway.mjs", &["--token", TOKEN, "--environment", ENVIRONMENT]);
    let endpoint = fake.started["endpoint"].as_str().unwrap().to_owned();
    let old = "2026-01-01T00:00:00.000Z";
    let seeds = json!([
        { "id": "reg-1", "createdAt": old },
        { "id": "live-1", "createdAt": old },
        { "id": "stranger-1", "createdAt": old },
    ]);
    fake.call(reqwest::Method::POST, "sandboxes", Some(seeds));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    // `reg-1`'s record was deleted after a destroy that silently failed; `live-1`'s is current.
    common::runtime().block_on(async {
        let store = SqliteSandboxInstanceStore::open(&path).await.unwrap();
        for (key, id) in [("t-reg", "reg-1"), ("t-live", "live-1")] {
            let record = SandboxInstanceRecord {
                key: key.to_owned(),
                provider: "railway".to_owned(),
                provider_sandbox_id: id.to_owned(),
                latest_snapshot_id: None,
                thread_id: format!("thread-{key}"),
                latest_run_id: None,
                updated_at: sandbox_reclaim::runtime::clock::now_millis(),
            };
            store.upsert(&record).await.unwrap();
        }
        store.delete("t-reg").await.unwrap();
        store.close().await;
    });
    let store = format!("--store=sqlite:{}", path.display());
    let config = dir.path().join("c.toml");
    let run_with = |token: &str, section: &str| {
        std::fs::write(&config, format!("[railway]\napi-url = \"{endpoint}\"\n{section}")).unwrap();
        let args = ["reconcile", "--railway", "--sweep-unlabelled", "--owner=cli-railway", "--json", "--backoff=0s"];
        let mut args: Vec<String> = args.map(String::from).to_vec();
        args.extend([store.clone(), format!("--config={}", config.display())]);
        let mut command = common::command(&args);
        command.env("RAILWAY_API_TOKEN", token);
        for variable in ["RAILWAY_TOKEN", "RAILWAY_ENVIRONMENT_ID", "RAILWAY_GRAPHQL_ENDPOINT"] {
            command.env_remove(variable);
        }
        let output = command.stdin(Stdio::null()).output().unwrap();
        common::Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    };
    let environment = format!("environment-id = \"{ENVIRONMENT}\"\n");
    let refused = run_with("railway_wrong_cli_secret", &environment);
    refused.expect_code(3);
    assert!(
        refused.stdout.contains("RAILWAY_API_TOKEN") && refused.stdout.contains("RAILWAY_ENVIRONMENT_ID"),
        "{refused}"
    );
    assert!(!format!("{}{}", refused.stdout, refused.stderr).contains("railway_wrong_cli_secret"), "{refused}");

    let unscoped = run_with(TOKEN, "");
    unscoped.expect_code(2);
    assert!(unscoped.stderr.contains("RAILWAY_ENVIRONMENT_ID"), "{unscoped}");
    assert!(!format!("{}{}", unscoped.stdout, unscoped.stderr).contains(TOKEN), "{unscoped}");

    fake.call(reqwest::Method::POST, "faults", Some(json!({ "failDestroyEvery": 1 })));
    let failed = run_with(TOKEN, &environment);
    failed.expect_code(1);
    assert_eq!(failed.json()["report"]["providers"][0]["orphans"]["failed"], 1, "{failed}");
    fake.call(reqwest::Method::POST, "faults", Some(json!({ "failDestroyEvery": 0 })));
    let run = run_with(TOKEN, &environment);
    run.expect_code(0);
    let report = run.json();
    let railway = &report["report"]["providers"][0];
    assert_eq!(railway["name"], "railway", "{run}");
    assert_eq!(railway["leaks"]["destroyed"], 1, "the ledger's retry: {run}");
    // The leak retry and the listing run side by side: the listing may still
    // show `reg-1` (then it counts as referenced, never swept again) or not.
    let orphans = &railway["orphans"];
    let listed = orphans["listed"].as_u64().unwrap();
    assert!(listed == 2 || listed == 3, "{run}");
    assert_eq!(
        (orphans["referenced"].as_u64(), orphans["foreign"].as_u64(), orphans["destroyed"].as_u64()),
        (Some(listed - 1), Some(1), Some(0)),
        "{run}"
    );
    assert_eq!(fake.alive(), [json!("live-1"), json!("stranger-1")], "{run}");
    let state = fake.call(reqwest::Method::GET, "state", None);
    let requests = state["requests"].as_array().unwrap();
    assert!(requests.iter().all(|r| r["variables"]["environmentId"] == ENVIRONMENT), "{requests:?}");
    assert!(!requests.iter().any(|r| r["variables"]["id"] == "stranger-1"), "never the stranger: {requests:?}");
    for printed in [&run.stdout, &run.stderr, &failed.stdout, &failed.stderr] {
        assert!(!printed.contains(TOKEN), "{printed}");
    }
}

/// `--boxd` over gRPC within `[boxd] org`: a refused API key exits 3 naming
/// `BOXD_TOKEN` and `BOXD_API_KEY` and never printing the key; a pass lists
/// the org by our owner label and destroys the owner's machines, sparing
/// another owner's, an unlabelled one and the owner's personal one (outside
/// the org); a failed destroy is still leaking (exit 1) and reaches the
/// ledger, and the next pass's retry ends it. Runs the fake under the Python
/// `SANDBOX_RECLAIM_FAKE_PYTHON` names (with `boxd==0.2.19`).
#[test]
fn a_boxd_pass_destroys_the_owners_labelled_machines_in_its_org_and_retries_a_failed_destroy() {
    const BOXD_KEY: &str = "bxd_cli_secret_key";
    let fake = Fake::start_vendor("boxd_fake.py", &["--api-key", BOXD_KEY, "--orgs", "acme"]);
    let id = |index: u32| format!("0c0ffee0-0000-4000-8000-{index:012}");
    let machine = |index: u32, org: &str, owner: Option<&str>| {
        let labels = owner.map_or_else(|| json!({}), |owner| json!({ "io.sandbox-reclaim.owner": owner }));
        json!({ "id": id(index), "org": org, "labels": labels, "created_at": 1_767_225_600 + u64::from(index) })
    };
    let seeds = json!([
        machine(1, "acme", Some("cli-boxd")),
        machine(2, "acme", Some("other")),
        machine(3, "acme", None),
        machine(4, "", Some("cli-boxd")),
    ]);
    fake.call(reqwest::Method::POST, "vms", Some(seeds));
    let dir = tempfile::tempdir().unwrap();
    let store = format!("--store=sqlite:{}", dir.path().join("store.db").display());
    let config = dir.path().join("c.toml");
    std::fs::write(&config, format!("[boxd]\napi-url = \"{}\"\norg = \"acme\"\n", fake.url)).unwrap();
    let run_with = |key: &str| {
        let args = ["reconcile", "--boxd", "--owner=cli-boxd", "--json", "--backoff=0s", &store];
        let mut args: Vec<String> = args.map(String::from).to_vec();
        args.push(format!("--config={}", config.display()));
        let mut command = common::command(&args);
        command.env("BOXD_API_KEY", key);
        for variable in ["BOXD_TOKEN", "BOXD_ORG", "BOXD_BASE_URL", "BOXD_API_URL"] {
            command.env_remove(variable);
        }
        let output = command.stdin(Stdio::null()).output().unwrap();
        common::Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    };
    let refused = run_with("bxd_wrong_cli_secret");
    refused.expect_code(3);
    assert!(refused.stdout.contains("BOXD_TOKEN") && refused.stdout.contains("BOXD_API_KEY"), "{refused}");
    assert!(!format!("{}{}", refused.stdout, refused.stderr).contains("bxd_wrong_cli_secret"), "{refused}");
    assert_eq!(fake.alive().len(), 4, "{refused}");

    fake.call(reqwest::Method::POST, "faults", Some(json!({ "failDeleteEvery": 1 })));
    let failed = run_with(BOXD_KEY);
    failed.expect_code(1);
    assert_eq!(failed.json()["report"]["providers"][0]["orphans"]["failed"], 1, "{failed}");
    fake.call(reqwest::Method::POST, "faults", Some(json!({ "failDeleteEvery": 0 })));
    let run = run_with(BOXD_KEY);
    run.expect_code(0);
    let report = run.json();
    assert_eq!(report["report"]["providers"][0]["name"], "boxd", "{run}");
    assert_eq!(report["report"]["providers"][0]["leaks"]["destroyed"], 1, "the ledger's retry: {run}");
    let mut alive: Vec<String> = fake.alive().iter().map(|id| id.as_str().unwrap().to_owned()).collect();
    alive.sort();
    assert_eq!(alive, [id(2), id(3), id(4)], "{run}");
    let state = fake.call(reqwest::Method::GET, "state", None);
    let lists: Vec<&Value> =
        state["requests"].as_array().unwrap().iter().filter(|r| r["method"] == "ListVms").collect();
    assert!(!lists.is_empty(), "{state}");
    for list in &lists {
        assert_eq!(
            (&list["org"], &list["labelSelector"]),
            (&json!("acme"), &json!(["io.sandbox-reclaim.owner=cli-boxd"]))
        );
    }
    for printed in [&run.stdout, &run.stderr, &failed.stdout, &failed.stderr] {
        assert!(!printed.contains(BOXD_KEY), "{printed}");
    }
}
