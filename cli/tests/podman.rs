//! The Docker provider against podman's Docker-API socket (`DOCKER_HOST`).

mod common;

use common::{Backend, World};
use sandbox_reclaim::{DockerConfig, DockerProvider, ManagedSandboxProvider, SandboxProvider};

#[test]
fn podman_orphans_and_reconcile() {
    let Some(_host) = common::docker_host() else { return };
    let Some(world) = World::new(Backend::Sqlite) else { return };
    let runtime = common::runtime();
    let image = std::env::var("SANDBOX_RECLAIM_TEST_IMAGE").unwrap_or_else(|_| "sandbox-reclaim/busybox:latest".into());
    let mut config = DockerConfig::new(image);
    config.owner = world.owner.clone();
    let provider = DockerProvider::new(config).expect("docker provider");
    let (kept, orphan) = runtime.block_on(async {
        let kept = provider.create("kept", &Default::default()).await.expect("create kept container").id;
        let orphan = provider.create("orphan", &Default::default()).await.expect("create orphan container").id;
        let store = world.store().await;
        store.add_record("kept", "docker", &kept).await;
        store.close().await;
        (kept, orphan)
    });
    let args = |list: &[&str]| {
        let mut args: Vec<String> = list.iter().map(|arg| (*arg).to_owned()).collect();
        args.extend(world.store_flags.iter().cloned());
        args.push(format!("--owner={}", world.owner));
        args
    };

    let planned = common::run(&args(&["reconcile", "--docker", "--dry-run", "--json", "--orphan-grace=0s"]));
    let document = planned.expect_code(1).json();
    assert_eq!(document["stillLeaking"], true, "a planned destroy still bills: {planned}");
    let actions = document["report"]["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 1, "{planned}");
    assert_eq!(actions[0]["provider"], "docker");
    assert_eq!(actions[0]["providerSandboxId"], orphan.as_str());

    let swept = common::run(&args(&["orphans", "--docker", "--json", "--orphan-grace=0s"]));
    let document = swept.expect_code(0).json();
    assert_eq!(document["report"]["providers"][0]["name"], "docker");
    assert_eq!(document["report"]["counts"]["destroyed"], 1, "{swept}");

    let listed: Vec<String> =
        runtime.block_on(provider.list()).expect("list containers").into_iter().map(|handle| handle.id).collect();
    assert_eq!(listed, vec![kept.clone()], "the orphan is gone, the referenced container stays");
    let status = common::run(&args(&["status", "--docker", "--json"]));
    assert_eq!(status.expect_code(0).json()["records"], 1);
    runtime.block_on(provider.destroy(&kept)).expect("clean up");
}
