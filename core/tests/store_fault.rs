//! Fault: a process killed (SIGKILL) in the middle of a destroy-failed
//! reclaim leaves, for every sandbox, its record or its leak entry — never
//! neither. The child is this test binary re-run on its ignored `fault_child`.
#![cfg(all(feature = "sqlite", feature = "postgres"))]

mod store_support;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use async_trait::async_trait;
use sandbox_reclaim::{
    reclaim_sandbox, LeakLedger, ProviderError, ReclaimOptions, RunRecord, RunStatus, SandboxInstanceRecord,
    SandboxInstanceStore, SandboxProvider, SqliteSandboxInstanceStore,
};
use store_support::{remove_db, temp_db_path};

const DB_VAR: &str = "STORE_FAULT_DB";
const MODE_VAR: &str = "STORE_FAULT_MODE";
const COUNT_VAR: &str = "STORE_FAULT_COUNT";

fn instance(index: usize) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: format!("k{index}"),
        provider: "docker".to_owned(),
        provider_sandbox_id: format!("ctr-{index}"),
        latest_snapshot_id: None,
        thread_id: "thread".to_owned(),
        latest_run_id: None,
        updated_at: 1,
    }
}

/// Destroy fails at once, or ("block") announces itself and hangs so the
/// parent can kill the process between the provider call and the commit.
struct ChildProvider {
    block: bool,
}

#[async_trait]
impl SandboxProvider for ChildProvider {
    fn name(&self) -> &str {
        "docker"
    }
    async fn destroy(&self, provider_sandbox_id: &str) -> Result<(), ProviderError> {
        if self.block {
            println!("DESTROYING {provider_sandbox_id}");
            std::io::stdout().flush().unwrap();
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        Err(ProviderError::backend(format!("destroy of {provider_sandbox_id} failed")))
    }
}

/// The child process: reclaims `k0..kN` with a failing provider.
#[test]
#[ignore = "child process of the fault tests, run by them"]
fn fault_child() {
    let path = std::env::var(DB_VAR).expect("run by the fault tests only");
    let block = std::env::var(MODE_VAR).unwrap() == "block";
    let count: usize = std::env::var(COUNT_VAR).unwrap().parse().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let store = SqliteSandboxInstanceStore::open(&path).await.unwrap();
        let provider = ChildProvider { block };
        println!("READY");
        std::io::stdout().flush().unwrap();
        for index in 0..count {
            let run = RunRecord::new(format!("run-{index}"), "thread", RunStatus::Failed)
                .with_sandbox_key(format!("k{index}"));
            let options =
                ReclaimOptions { provider: &provider, instances: &store, logger: None, destroy_timeout: None };
            reclaim_sandbox(&run, options).await.unwrap();
        }
        println!("DONE");
    });
}

fn spawn_child(path: &Path, mode: &str, count: usize) -> (Child, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "fault_child", "--nocapture", "--test-threads=1"])
        .env(DB_VAR, path)
        .env(MODE_VAR, mode)
        .env(COUNT_VAR, count.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

fn wait_for_line(stdout: &mut BufReader<std::process::ChildStdout>, prefix: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "child exited before printing {prefix}");
        // libtest may print `test fault_child ... ` on the same line first.
        if let Some(start) = line.find(prefix) {
            return line[start..].to_owned();
        }
    }
}

/// For every sandbox: record present xor leak present. Returns how many
/// were reclaimed into the ledger.
async fn assert_never_neither(path: &Path, count: usize) -> usize {
    let store = SqliteSandboxInstanceStore::open(path).await.unwrap();
    let leaks = store.list_leaks(None).await.unwrap();
    for index in 0..count {
        let record = store.get(&format!("k{index}")).await.unwrap();
        let leaked = leaks.iter().any(|leak| leak.provider_sandbox_id == format!("ctr-{index}"));
        assert!(record.is_some() != leaked, "k{index}: record present {}, leak present {leaked}", record.is_some());
    }
    store.close().await;
    leaks.len()
}

async fn seed(path: &Path, count: usize) {
    let store = SqliteSandboxInstanceStore::open(path).await.unwrap();
    for index in 0..count {
        store.upsert(&instance(index)).await.unwrap();
    }
    store.close().await;
}

#[tokio::test]
async fn killed_during_destroy_keeps_the_record() {
    let path = temp_db_path("fault-block");
    seed(&path, 1).await;
    let (mut child, mut stdout) = spawn_child(&path, "block", 1);
    assert_eq!(wait_for_line(&mut stdout, "DESTROYING").trim(), "DESTROYING ctr-0");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_eq!(assert_never_neither(&path, 1).await, 0, "nothing was committed");
    let store = SqliteSandboxInstanceStore::open(&path).await.unwrap();
    assert_eq!(store.get("k0").await.unwrap(), Some(instance(0)));
    remove_db(&path);
}

/// Kills a child reclaiming many sandboxes at staggered moments, so kills
/// land before, inside and after the delete-and-record transactions.
#[tokio::test]
async fn killed_at_random_moments_never_loses_a_sandbox() {
    const COUNT: usize = 400;
    let mut some_partial = false;
    for round in 0..8u64 {
        let path = temp_db_path("fault-loop");
        seed(&path, COUNT).await;
        let (mut child, mut stdout) = spawn_child(&path, "loop", COUNT);
        wait_for_line(&mut stdout, "READY");
        tokio::time::sleep(Duration::from_millis(3 + round * 7)).await;
        child.kill().unwrap();
        child.wait().unwrap();
        let leaked = assert_never_neither(&path, COUNT).await;
        some_partial |= leaked > 0 && leaked < COUNT;
        remove_db(&path);
    }
    assert!(some_partial, "at least one kill landed mid-run (else the test proves nothing)");
}
