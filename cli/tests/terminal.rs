//! On a terminal: the progress bar and the tables, under a real
//! pseudo-terminal (`script` from util-linux), the final screen read
//! through a terminal emulator (vt100).

mod common;

use std::process::Command;

use common::{create_sandboxes, Backend, World};

const ORPHANS: usize = 25;

#[test]
fn progress_bar_and_tables_on_a_pseudo_terminal() {
    let Some(world) = World::new(Backend::Sqlite) else { return };
    let runtime = common::runtime();
    runtime.block_on(create_sandboxes(&world.provider(), "tty", ORPHANS));
    let mut line = format!("stty cols 140 rows 60; SANDBOX_RECLAIM_PROGRESS_DELAY=0s exec {}", common::BIN);
    for arg in world.args(&["orphans", "--orphan-grace=0s", "--concurrency=1"]) {
        line.push(' ');
        line.push('\'');
        line.push_str(&arg);
        line.push('\'');
    }
    let output = Command::new("script")
        .args(["-qfec", &line, "/dev/null"])
        .env_remove("SANDBOX_RECLAIM_STORE")
        .env_remove("RUST_LOG")
        .output()
        .expect("run `script` (util-linux)");
    let transcript = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(0), "{transcript}\n{}", String::from_utf8_lossy(&output.stderr));

    let mut terminal = vt100::Parser::new(60, 140, 0);
    terminal.process(&output.stdout);
    let screen = terminal.screen().contents();
    if std::env::var("SHOW_SCREEN").is_ok() {
        eprintln!("{screen}");
    }
    assert!(
        screen.contains(&format!("{ORPHANS}/{ORPHANS} destroys")),
        "the bar's last state shows done/total:\n{screen}\n--- raw\n{transcript:?}"
    );
    assert!(transcript.contains('\u{1b}'), "the bar is drawn with terminal escapes");
    assert!(
        screen.lines().any(|line| line.starts_with("Orphan sweep on ")),
        "the report starts on its own line:\n{screen}"
    );
    let header = screen.lines().find(|line| line.starts_with("PROVIDER")).unwrap_or_else(|| panic!("{screen}"));
    for column in ["SWEEP", "LISTED", "ORPHANS", "DESTROYED"] {
        assert!(header.contains(column), "{header}");
    }
    let row = screen.lines().find(|line| line.starts_with("local ")).unwrap_or_else(|| panic!("{screen}"));
    assert!(row.split_whitespace().any(|cell| cell == ORPHANS.to_string()), "{row}");
    assert!(screen.contains(&format!("{ORPHANS} destroyed, 0 failed, 0 deferred — nothing left leaking")), "{screen}");
    assert!(screen.contains("REASON") && screen.contains("orphan"), "the actions table: {screen}");
}

/// Runs the command under `script`; answers the exit code and the final screen.
fn on_terminal(world: &World, args: &[&str]) -> (Option<i32>, String) {
    let mut line = format!("stty cols 160 rows 40; exec {}", common::BIN);
    for arg in world.args(args) {
        line.push_str(&format!(" '{arg}'"));
    }
    let output = Command::new("script")
        .args(["-qfec", &line, "/dev/null"])
        .env_remove("SANDBOX_RECLAIM_STORE")
        .env_remove("RUST_LOG")
        .output()
        .expect("run `script` (util-linux)");
    let mut terminal = vt100::Parser::new(40, 160, 0);
    terminal.process(&output.stdout);
    (output.status.code(), terminal.screen().contents())
}

#[test]
fn reconcile_and_status_tables_on_a_terminal() {
    let Some(world) = World::new(Backend::Sqlite) else { return };
    let runtime = common::runtime();
    runtime.block_on(async {
        let ids = create_sandboxes(&world.provider(), "leak", 2).await;
        let store = world.store().await;
        for (n, id) in ids.iter().enumerate() {
            store.add_leak(&format!("leak-{n}"), "local", id, sandbox_reclaim::LeakReason::DestroyFailed, 0).await;
        }
        store.close().await;
    });
    let (code, screen) = on_terminal(&world, &["status"]);
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains("Leaks:          2"), "{screen}");
    let row = screen.lines().find(|line| line.starts_with("local ")).unwrap_or_else(|| panic!("{screen}"));
    assert!(row.contains(" 2 ") && row.ends_with("ago"), "{row}");

    let (code, screen) = on_terminal(&world, &["leaks", "list"]);
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.contains("2 leak(s) in sqlite:"), "{screen}");
    assert_eq!(screen.lines().filter(|line| line.contains("destroy-failed") && line.contains(" due ")).count(), 2);

    let (code, screen) = on_terminal(&world, &["reconcile", "--orphan-grace=1h"]);
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.lines().any(|line| line.starts_with("PROVIDER  LEAKS due/destroyed/failed/deferred")), "{screen}");
    assert!(screen.lines().any(|line| line.starts_with("local ") && line.contains("2/2/0/0")), "{screen}");
    assert!(screen.contains("2 destroyed, 0 failed, 0 deferred — nothing left leaking"), "{screen}");
}

/// Piped, the same command prints plain lines and no bar.
#[test]
fn plain_lines_without_a_terminal() {
    let Some(world) = World::new(Backend::Sqlite) else { return };
    let runtime = common::runtime();
    runtime.block_on(create_sandboxes(&world.provider(), "pipe", 2));
    let mut command = common::command(&world.args(&["orphans", "--orphan-grace=0s"]));
    let output = command.env("SANDBOX_RECLAIM_PROGRESS_DELAY", "0s").output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(!stdout.contains('\u{1b}') && !String::from_utf8_lossy(&output.stderr).contains("destroys"), "{stdout}");
    assert_eq!(stdout.lines().filter(|line| line.starts_with("action reason=orphan")).count(), 2, "{stdout}");
    assert!(stdout.lines().last().unwrap().starts_with("orphans "), "{stdout}");
}
