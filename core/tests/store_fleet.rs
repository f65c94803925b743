//! The fleet store contract (`FleetStore`): the same checks against the
//! in-memory, SQLite and PostgreSQL stores, the upgrade of a version-1
//! database, and concurrent claims of due leaks on PostgreSQL.
#![cfg(all(feature = "sqlite", feature = "postgres"))]

mod store_support;

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use sandbox_reclaim::stores::sqlite::{AUDIT_TABLE, SCHEMA_VERSION_TABLE, SWEEPS_TABLE};
use sandbox_reclaim::{
    AuditEntry, DueLeak, FleetStore, InMemorySandboxInstanceStore, LeakEntry, LeakLedger, LeakReason, LeakSummary,
    NewLeak, PostgresOptions, PostgresSandboxInstanceStore, SandboxInstanceRecord, SandboxInstanceStore,
    SqliteSandboxInstanceStore, StoreError, StoreOpenError,
};
use sqlx::{ConnectOptions, Connection};
use store_support::{drop_schema, pg_exec, pg_options, pg_store, pg_url, remove_db, temp_db_path, unique, Backend};

/// Both faces of a store: instance records and the fleet operations.
trait Store: FleetStore + SandboxInstanceStore {}
impl<T: FleetStore + SandboxInstanceStore> Store for T {}

/// A fresh, empty store of `backend`, and what to clean up afterwards.
struct Fresh {
    backend: Backend,
    store: Arc<dyn Store>,
    cleanup: Option<Cleanup>,
}

enum Cleanup {
    File(std::path::PathBuf),
    Schema(String),
}

impl Fresh {
    async fn new(backend: Backend) -> Self {
        match backend {
            Backend::Memory => {
                Self { backend, store: Arc::new(InMemorySandboxInstanceStore::with_ledger()), cleanup: None }
            }
            Backend::Sqlite => {
                let path = temp_db_path("fleet");
                let store = SqliteSandboxInstanceStore::open(&path).await.expect("open SQLite");
                Self { backend, store: Arc::new(store), cleanup: Some(Cleanup::File(path)) }
            }
            Backend::Postgres => {
                let schema = unique("fleet");
                Self { backend, store: Arc::new(pg_store(&schema).await), cleanup: Some(Cleanup::Schema(schema)) }
            }
        }
    }

    /// Lets `ms` of lease time pass: PostgreSQL takes every lease on the
    /// database's clock (one clock for every host), so its leases run in
    /// real time; the other stores take the caller's `now`.
    async fn lease_time_passes(&self, ms: u64) {
        if self.backend == Backend::Postgres {
            tokio::time::sleep(std::time::Duration::from_millis(ms + 5)).await;
        }
    }

    /// Text as the store keeps it: the SQL stores turn NUL into U+FFFD.
    fn kept(&self, text: &str) -> String {
        match self.backend {
            Backend::Memory => text.to_owned(),
            Backend::Sqlite | Backend::Postgres => text.replace('\0', "\u{FFFD}"),
        }
    }

    async fn cleanup(self) {
        drop(self.store);
        match self.cleanup {
            None => {}
            Some(Cleanup::File(path)) => remove_db(&path),
            Some(Cleanup::Schema(schema)) => drop_schema(&schema).await,
        }
    }
}

fn record(key: &str, provider: &str, id: &str, updated_at: u64) -> SandboxInstanceRecord {
    SandboxInstanceRecord {
        key: key.to_owned(),
        provider: provider.to_owned(),
        provider_sandbox_id: id.to_owned(),
        latest_snapshot_id: None,
        thread_id: "thread".to_owned(),
        latest_run_id: Some("run".to_owned()),
        updated_at,
    }
}

fn leak(key: &str, provider: &str, id: &str, failed_at: u64) -> NewLeak {
    NewLeak {
        key: key.to_owned(),
        provider: provider.to_owned(),
        provider_sandbox_id: id.to_owned(),
        run_id: format!("run-{key}"),
        error_message: format!("destroy of {id} failed"),
        failed_at,
    }
}

fn ids(due: &[DueLeak]) -> Vec<&str> {
    due.iter().map(|leak| leak.entry.provider_sandbox_id.as_str()).collect()
}

fn keys(records: &[SandboxInstanceRecord]) -> Vec<&str> {
    records.iter().map(|record| record.key.as_str()).collect()
}

fn audit(at: u64, id: &str, result: &str, error: Option<&str>) -> AuditEntry {
    AuditEntry {
        at,
        host: "host-a".to_owned(),
        provider: "docker".to_owned(),
        provider_sandbox_id: id.to_owned(),
        key: error.map(|_| format!("key-{id}")),
        reason: "leak-retry".to_owned(),
        result: result.to_owned(),
        error: error.map(str::to_owned),
    }
}

async fn stale_records_oldest_first_below_the_threshold(fresh: &Fresh) {
    let store = &fresh.store;
    for (key, updated_at) in [("k-a", 30), ("k-b", 10), ("k-c", 20), ("k-d", 50), ("k-f", 5), ("k-e", 5)] {
        store.upsert(&record(key, "docker", &format!("ctr-{key}"), updated_at)).await.unwrap();
    }
    let stale = store.list_stale(40, 10).await.unwrap();
    assert_eq!(keys(&stale), ["k-e", "k-f", "k-b", "k-c", "k-a"], "oldest first, ties by key");
    assert_eq!(stale[2], record("k-b", "docker", "ctr-k-b", 10), "whole records come back");
    assert_eq!(keys(&store.list_stale(40, 3).await.unwrap()), ["k-e", "k-f", "k-b"], "at most `limit`");
    assert_eq!(keys(&store.list_stale(10, 10).await.unwrap()), ["k-e", "k-f"], "strictly older than the threshold");
    assert!(store.list_stale(5, 10).await.unwrap().is_empty());
    assert!(store.list_stale(1000, 0).await.unwrap().is_empty(), "limit 0 lists nothing");
    assert_eq!(store.list_stale(u64::MAX, 100).await.unwrap().len(), 6);
}

async fn idle_expiry_only_takes_an_untouched_record(fresh: &Fresh) {
    let store = &fresh.store;
    store.upsert(&record("idle", "docker", "ctr-idle", 100)).await.unwrap();
    assert!(store.expire_idle("idle", 100, leak("idle", "docker", "ctr-idle", 500)).await.unwrap());
    assert!(store.get("idle").await.unwrap().is_none(), "the record is gone");
    let leaks = store.list_leaks(Some("docker")).await.unwrap();
    assert_eq!(leaks, [leak("idle", "docker", "ctr-idle", 500).into_entry()]);
    let due = store.due_leaks("docker", 10, None, 500).await.unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!((due[0].reason, due[0].next_attempt_at), (LeakReason::Idle, 500), "reason idle, due at once");
    assert_eq!(
        store.sandbox_references("docker", u64::MAX).await.unwrap(),
        ["ctr-idle"],
        "the leak still references it"
    );

    // Touched since it was seen: nothing is written.
    store.upsert(&record("busy", "docker", "ctr-busy", 100)).await.unwrap();
    store.upsert(&record("busy", "docker", "ctr-busy", 200)).await.unwrap();
    assert!(!store.expire_idle("busy", 100, leak("busy", "docker", "ctr-busy", 500)).await.unwrap());
    assert_eq!(store.get("busy").await.unwrap(), Some(record("busy", "docker", "ctr-busy", 200)));
    // Gone: nothing is written either.
    assert!(!store.expire_idle("gone", 100, leak("gone", "docker", "ctr-gone", 500)).await.unwrap());
    assert_eq!(store.count_leaks(None).await.unwrap(), 1, "no leak was recorded for a touched or missing record");

    // Expiring a sandbox the ledger already holds bumps its attempts.
    store.upsert(&record("again", "docker", "ctr-idle", 7)).await.unwrap();
    assert!(store.expire_idle("again", 7, leak("again", "docker", "ctr-idle", 600)).await.unwrap());
    let leaks = store.list_leaks(None).await.unwrap();
    assert_eq!((leaks.len(), leaks[0].attempts, leaks[0].key.as_str()), (1, 2, "again"));

    // A key no store can hold is refused before anything is written.
    let refused = store.expire_idle("", 7, leak("x", "docker", "ctr-x", 1)).await;
    assert!(matches!(refused, Err(StoreError::InvalidKey(_))), "{refused:?}");
}

async fn references_cover_records_and_leaks_of_one_provider(fresh: &Fresh) {
    let store = &fresh.store;
    store.upsert(&record("k1", "docker", "c1", 1)).await.unwrap();
    store.upsert(&record("k2", "docker", "c2", 1)).await.unwrap();
    store.upsert(&record("k3", "daytona", "d1", 1)).await.unwrap();
    store.record_leak(leak("k4", "docker", "c3", 1), LeakReason::Orphan, 1).await.unwrap();
    store.record_leak(leak("k1", "docker", "c1", 1), LeakReason::Orphan, 1).await.unwrap();
    store.record_leak(leak("k5", "daytona", "d2", 1), LeakReason::DestroyFailed, 1).await.unwrap();

    let mut docker = store.sandbox_references("docker", u64::MAX).await.unwrap();
    docker.sort();
    assert_eq!(docker, ["c1", "c2", "c3"], "records and leaks, each id once");
    let mut daytona = store.sandbox_references("daytona", u64::MAX).await.unwrap();
    daytona.sort();
    assert_eq!(daytona, ["d1", "d2"]);
    assert!(store.sandbox_references("Docker", u64::MAX).await.unwrap().is_empty(), "providers compare exactly");
    assert!(store.sandbox_references("", u64::MAX).await.unwrap().is_empty());
}

/// A listing lags: what a pass (any host) destroyed since `destroyed_since`
/// is referenced too, by the audit log; failed attempts and older destroys are not.
async fn references_cover_recent_destroys_in_the_audit_log(fresh: &Fresh) {
    let store = &fresh.store;
    let mut daytona = audit(500, "d1", "destroyed", None);
    daytona.provider = "daytona".to_owned();
    let rows = [
        audit(100, "old", "destroyed", None),
        audit(500, "recent", "destroyed", None),
        audit(600, "failed", "failed", Some("busy")),
        audit(700, "timed-out", "timeout", Some("slow")),
        daytona,
    ];
    store.append_audit(&rows).await.unwrap();
    store.upsert(&record("k1", "docker", "c1", 1)).await.unwrap();

    let mut docker = store.sandbox_references("docker", 500).await.unwrap();
    docker.sort();
    assert_eq!(docker, ["c1", "recent"], "destroyed at or after 500, of this provider only");
    let mut since_start = store.sandbox_references("docker", 0).await.unwrap();
    since_start.sort();
    assert_eq!(since_start, ["c1", "old", "recent"]);
    assert_eq!(store.sandbox_references("docker", 501).await.unwrap(), ["c1"]);
}

/// What a leak retry just destroyed is referenced too (its entry resolved
/// within the window), so a sweep within its grace does not destroy it again
/// from a lagging listing; a resolve refused under a lost claim notes nothing.
async fn references_cover_leaks_just_resolved(fresh: &Fresh) {
    let store = &fresh.store;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    store.record_leak(leak("k2", "docker", "retried", 1), LeakReason::Orphan, 0).await.unwrap();
    store.record_leak(leak("k3", "docker", "lost", 1), LeakReason::Orphan, 0).await.unwrap();
    let claimed = store.claim_leaks("docker", 10, std::time::Duration::from_secs(60)).await.unwrap();
    assert!(store.resolve_leak(&claimed[0]).await.unwrap());
    let superseded = LeakEntry { claim: claimed[1].claim.map(|claim| claim + 1), ..claimed[1].clone() };
    assert!(!store.resolve_leak(&superseded).await.unwrap());
    assert!(store.registered_sandboxes("docker", 1).await.unwrap().is_empty(), "a resolve registers nothing");

    let mut recent = store.sandbox_references("docker", now.saturating_sub(60_000)).await.unwrap();
    recent.sort();
    assert_eq!(recent, ["lost", "retried"], "resolved within the window; the other still in the ledger");
    let later = store.sandbox_references("docker", now + 3_600_000).await.unwrap();
    assert_eq!(later, ["lost"], "past the window a resolved one is fair game");
    // Pruning keeps the mark as long as the audit log keeps destroys.
    let window = now.saturating_sub(60_000);
    store.prune("docker", u64::MAX >> 12, window).await.unwrap();
    assert!(store.sandbox_references("docker", window).await.unwrap().contains(&"retried".to_owned()), "kept");
    store.prune("docker", u64::MAX >> 12, now + 3_600_000).await.unwrap();
    let pruned = store.sandbox_references("docker", 0).await.unwrap();
    assert_eq!(pruned, ["lost"], "gone with the audit rows of its time");
    assert!(store.sandbox_references("daytona", 0).await.unwrap().is_empty(), "of this provider only");
}

/// The registry: every sandbox a record named, kept after its record is
/// gone (last seen at the deletion), on every write path.
async fn the_registry_names_what_records_named_after_they_are_gone(fresh: &Fresh) {
    let store = &fresh.store;
    let sorted = |mut ids: Vec<String>| {
        ids.sort();
        ids
    };
    store.upsert(&record("k1", "docker", "c1", 100)).await.unwrap();
    store.upsert(&record("k2", "docker", "c2", 200)).await.unwrap();
    store.upsert(&record("k3", "daytona", "d1", 300)).await.unwrap();
    assert_eq!(sorted(store.registered_sandboxes("docker", 0).await.unwrap()), ["c1", "c2"]);
    assert_eq!(store.registered_sandboxes("daytona", 0).await.unwrap(), ["d1"]);
    assert!(store.registered_sandboxes("Docker", 0).await.unwrap().is_empty(), "providers compare exactly");
    // A record moved to another sandbox: both stay registered.
    store.upsert(&record("k1", "docker", "c1b", 150)).await.unwrap();
    // Every way a record goes: delete, delete recording a leak, idle expiry.
    store.delete("k1").await.unwrap();
    store.leak_ledger().unwrap().delete_recording_leak("k2", leak("k2", "docker", "c2", 250)).await.unwrap();
    assert!(store.expire_idle("k3", 300, leak("k3", "daytona", "d1", 350)).await.unwrap());
    assert!(store.get("k1").await.unwrap().is_none());
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let just_before = now - 60_000;
    assert_eq!(
        sorted(store.registered_sandboxes("docker", just_before).await.unwrap()),
        ["c1b", "c2"],
        "deleted within the retention: kept as last seen at the deletion; c1 was last written at 100"
    );
    assert_eq!(store.registered_sandboxes("daytona", just_before).await.unwrap(), ["d1"]);
    assert_eq!(sorted(store.registered_sandboxes("docker", 0).await.unwrap()), ["c1", "c1b", "c2"]);
    assert!(store.registered_sandboxes("docker", u64::MAX >> 12).await.unwrap().is_empty(), "past the retention");
    // A live record is always registered, however old its last write.
    store.upsert(&record("k4", "docker", "c4", 1)).await.unwrap();
    assert_eq!(store.registered_sandboxes("docker", u64::MAX >> 12).await.unwrap(), ["c4"]);
}

/// Bounded growth: `prune` deletes one provider's registry rows last seen
/// before its bound and audit rows from before its bound; rows at or after
/// a bound, and other providers' rows, stay.
async fn prune_deletes_one_providers_rows_before_the_bounds(fresh: &Fresh) {
    let store = &fresh.store;
    let sorted = |mut ids: Vec<String>| {
        ids.sort();
        ids
    };
    // Records moved to another sandbox: the first sandbox stays registered,
    // last seen at its record's last write naming it.
    for (key, provider, first, at) in
        [("k1", "docker", "c1", 100), ("k2", "docker", "c2", 200), ("k3", "daytona", "d1", 100)]
    {
        store.upsert(&record(key, provider, first, at)).await.unwrap();
        store.upsert(&record(key, provider, &format!("{first}x"), 1000)).await.unwrap();
    }
    let elsewhere = AuditEntry { provider: "daytona".to_owned(), ..audit(100, "d1", "destroyed", None) };
    let rows =
        [audit(100, "a", "destroyed", None), audit(200, "b", "destroyed", None), audit(300, "c", "failed", Some("x"))];
    store.append_audit(&rows).await.unwrap();
    store.append_audit(std::slice::from_ref(&elsewhere)).await.unwrap();

    store.prune("docker", 200, 200).await.unwrap();
    assert_eq!(sorted(store.registered_sandboxes("docker", 0).await.unwrap()), ["c1x", "c2", "c2x"], "c1 (100) goes");
    assert_eq!(
        sorted(store.registered_sandboxes("daytona", 0).await.unwrap()),
        ["d1", "d1x"],
        "another provider's stay"
    );
    let kept: Vec<_> = store.list_audit(None, 10).await.unwrap().into_iter().map(|row| row.at).collect();
    assert_eq!(kept, [200, 300, 100], "docker's row at 100 goes; the one at the bound and daytona's stay");
    assert_eq!(store.list_audit(None, 10).await.unwrap().last(), Some(&elsewhere));

    // A live record's registry row may go: the registry still reads the
    // record, and its next write (here, its deletion) registers it again.
    store.prune("docker", u64::MAX >> 12, 0).await.unwrap();
    assert_eq!(sorted(store.registered_sandboxes("docker", 0).await.unwrap()), ["c1x", "c2x"], "live records count");
    store.delete("k1").await.unwrap();
    assert_eq!(sorted(store.registered_sandboxes("docker", 0).await.unwrap()), ["c1x", "c2x"], "c1x registered again");
    assert_eq!(store.list_audit(None, 10).await.unwrap().len(), 3, "an audit bound of 0 deletes nothing");
    store.prune("docker", 0, u64::MAX >> 12).await.unwrap();
    assert_eq!(store.list_audit(None, 10).await.unwrap(), [elsewhere]);
    store.prune("nobody", u64::MAX >> 12, u64::MAX >> 12).await.unwrap();
    assert_eq!(sorted(store.registered_sandboxes("daytona", 0).await.unwrap()), ["d1", "d1x"]);
}

async fn due_leaks_respect_backoff_and_claims(fresh: &Fresh) {
    let store = &fresh.store;
    store.record_leak(leak("ka", "docker", "a", 50), LeakReason::Orphan, 100).await.unwrap();
    store.record_leak(leak("kb", "docker", "b", 50), LeakReason::DestroyFailed, 300).await.unwrap();
    store.record_leak(leak("kc", "docker", "c", 50), LeakReason::Idle, 100).await.unwrap();
    store.record_leak(leak("kd", "daytona", "d", 50), LeakReason::Orphan, 0).await.unwrap();

    assert!(store.due_leaks("docker", 10, None, 99).await.unwrap().is_empty(), "nothing due before 100");
    // A dry run lists, and claims nothing.
    let listed = store.due_leaks("docker", 10, None, 200).await.unwrap();
    assert_eq!(ids(&listed), ["a", "c"]);
    assert_eq!(
        listed[0],
        DueLeak { entry: leak("ka", "docker", "a", 50).into_entry(), reason: LeakReason::Orphan, next_attempt_at: 100 }
    );
    assert_eq!((listed[1].reason, listed[1].next_attempt_at), (LeakReason::Idle, 100));
    assert_eq!(ids(&store.due_leaks("docker", 10, None, 200).await.unwrap()), ["a", "c"]);
    assert_eq!(ids(&store.due_leaks("docker", 1, None, 200).await.unwrap()), ["a"], "at most `limit`");

    // A claim takes them until now + lease.
    assert_eq!(ids(&store.due_leaks("docker", 10, Some(1000), 200).await.unwrap()), ["a", "c"]);
    assert!(store.due_leaks("docker", 10, Some(1000), 200).await.unwrap().is_empty(), "claimed already");
    assert!(store.due_leaks("docker", 10, None, 200).await.unwrap().is_empty(), "claimed entries are not due");
    // (On PostgreSQL's clock: b is claimed 400 ms after a and c, and checked 700 ms later.)
    fresh.lease_time_passes(400).await;
    assert_eq!(ids(&store.due_leaks("docker", 10, Some(1000), 400).await.unwrap()), ["b"], "b is due from 300");
    assert!(store.due_leaks("docker", 10, Some(1000), 1199).await.unwrap().is_empty(), "leases still running");
    fresh.lease_time_passes(700).await;
    assert_eq!(ids(&store.due_leaks("docker", 10, Some(1000), 1200).await.unwrap()), ["a", "c"], "lease expired");
    fresh.lease_time_passes(1000).await;
    assert_eq!(ids(&store.due_leaks("docker", 10, Some(10), 5000).await.unwrap()), ["a", "b", "c"], "id order");
    fresh.lease_time_passes(10).await;
    assert_eq!(ids(&store.due_leaks("docker", 2, Some(10), 6000).await.unwrap()), ["a", "b"], "at most `limit`");
    assert!(store.due_leaks("docker", 0, Some(10), 9000).await.unwrap().is_empty(), "limit 0 claims nothing");
    assert_eq!(ids(&store.due_leaks("daytona", 10, Some(10), 0).await.unwrap()), ["d"], "per provider");
    assert!(store.due_leaks("nobody", 10, Some(10), 9000).await.unwrap().is_empty());

    // The ledger's own methods ignore the backoff.
    assert_eq!(store.list_leaks(Some("docker")).await.unwrap().len(), 3);
    store.record_leak(leak("kz", "later", "z", 50), LeakReason::Orphan, (1 << 53) - 1).await.unwrap();
    let claimed = store.claim_leaks("later", 10, std::time::Duration::from_secs(60)).await.unwrap();
    assert!(claimed.len() == 1 && claimed[0].claim.is_some(), "a claim hands its generation out");
    let expected = LeakEntry { claim: claimed[0].claim, ..leak("kz", "later", "z", 50).into_entry() };
    assert_eq!(claimed, [expected], "claim_leaks ignores next_attempt_at");
}

/// A claim is fenced by its generation: once another pass took the entry
/// (the first lease ran out), the first holder's late resolve, deferral or
/// failure record writes nothing and says so, whatever the clocks say.
async fn a_late_write_under_a_superseded_claim_is_refused(fresh: &Fresh) {
    let store = &fresh.store;
    store.record_leak(leak("kx", "docker", "x", 10), LeakReason::Orphan, 0).await.unwrap();
    let first = store.due_leaks("docker", 10, Some(1), 100).await.unwrap().remove(0).entry;
    fresh.lease_time_passes(20).await;
    let second = store.due_leaks("docker", 10, Some(60_000), 2000).await.unwrap().remove(0).entry;
    assert!(first.claim.is_some() && second.claim.is_some() && first.claim != second.claim, "{first:?} {second:?}");

    assert!(!store.defer_leak(&first, "late", 3000, 9000).await.unwrap(), "a superseded deferral is refused");
    assert!(!store.resolve_leak(&first).await.unwrap(), "a superseded resolve is refused");
    assert!(!store.record_retry_failure(&first, "late", 3000).await.unwrap(), "a superseded failure is refused");
    let kept = store.list_leaks(None).await.unwrap();
    assert_eq!((kept.len(), kept[0].attempts, kept[0].claim), (1, 1, None), "the entry is untouched");
    assert!(store.due_leaks("docker", 10, Some(60_000), 2500).await.unwrap().is_empty(), "still claimed");

    // The holder's own write lands once, and releases the claim.
    assert!(store.defer_leak(&second, "down", 3000, 0).await.unwrap());
    assert!(!store.resolve_leak(&second).await.unwrap(), "a released claim writes nothing more");
    assert_eq!(store.list_leaks(None).await.unwrap()[0].attempts, 2);
    // The retry API's claims are fenced alike.
    let third = store.claim_leaks("docker", 10, std::time::Duration::from_secs(60)).await.unwrap().remove(0);
    assert!(third.claim > second.claim);
    assert!(!store.record_retry_failure(&second, "late", 1).await.unwrap());
    assert!(store.resolve_leak(&third).await.unwrap());
    assert!(store.list_leaks(None).await.unwrap().is_empty());
    // An entry that was only listed carries no claim: its write is not fenced.
    store.record_leak(leak("ky", "docker", "y", 10), LeakReason::Orphan, 0).await.unwrap();
    let listed = store.list_leaks(None).await.unwrap().remove(0);
    assert_eq!(listed.claim, None);
    assert!(store.resolve_leak(&listed).await.unwrap());
    assert!(store.list_leaks(None).await.unwrap().is_empty());
}

async fn a_deferred_leak_waits_for_its_next_attempt(fresh: &Fresh) {
    let store = &fresh.store;
    store.record_leak(leak("kx", "docker", "x", 10), LeakReason::Orphan, 0).await.unwrap();
    let claimed = store.due_leaks("docker", 10, Some(1000), 100).await.unwrap();
    assert_eq!(ids(&claimed), ["x"]);
    store.defer_leak(&claimed[0].entry, "still down\0!", 150, 5000).await.unwrap();

    let entry = &store.list_leaks(None).await.unwrap()[0];
    assert_eq!((entry.attempts, entry.failed_at), (2, 150));
    assert_eq!(entry.last_error, fresh.kept("still down\0!"));
    assert!(store.due_leaks("docker", 10, Some(1000), 4999).await.unwrap().is_empty(), "not due before 5000");
    let due = store.due_leaks("docker", 10, Some(1000), 5000).await.unwrap();
    assert_eq!(ids(&due), ["x"], "the claim was released with the deferral");
    assert_eq!((due[0].reason, due[0].next_attempt_at, due[0].entry.attempts), (LeakReason::Orphan, 5000, 2));

    // Recording the same sandbox again bumps its attempts.
    store.record_leak(leak("ky", "docker", "x", 6000), LeakReason::Orphan, 7000).await.unwrap();
    let entry = &store.list_leaks(None).await.unwrap()[0];
    assert_eq!((entry.attempts, entry.key.as_str(), entry.failed_at), (3, "ky", 6000));
    // Deferring a sandbox the ledger does not hold changes nothing.
    let stranger = LeakEntry { provider_sandbox_id: "nope".to_owned(), ..entry.clone() };
    store.defer_leak(&stranger, "x", 1, 1).await.unwrap();
    assert_eq!(store.list_leaks(None).await.unwrap().len(), 1);
    // A leak no store can hold is refused.
    let refused = store.record_leak(leak("kz", "docker", "", 1), LeakReason::Orphan, 0).await;
    assert!(matches!(refused, Err(StoreError::InvalidRecord(ref invalid)) if invalid.field == "providerSandboxId"));
}

async fn leak_summaries_count_each_provider(fresh: &Fresh) {
    let store = &fresh.store;
    assert_eq!(store.summarize_leaks().await.unwrap(), [], "an empty ledger");
    store.record_leak(leak("k1", "docker", "a", 50), LeakReason::Orphan, 0).await.unwrap();
    store.record_leak(leak("k2", "docker", "b", 10), LeakReason::Orphan, 0).await.unwrap();
    store.record_leak(leak("k3", "daytona", "c", 30), LeakReason::Orphan, 0).await.unwrap();
    let summary =
        |provider: &str, count, oldest_failed_at| LeakSummary { provider: provider.into(), count, oldest_failed_at };
    assert_eq!(store.summarize_leaks().await.unwrap(), [summary("daytona", 1, 30), summary("docker", 2, 10)]);
    assert_eq!(
        store.summarize_leaks().await.unwrap(),
        sandbox_reclaim::model::ledger::summarize(&store.list_leaks(None).await.unwrap())
    );
}

async fn one_sweeper_per_provider(fresh: &Fresh) {
    let store = &fresh.store;
    assert!(store.claim_sweep("docker", "host-a", 1000, 0).await.unwrap(), "a free sweep is taken");
    assert!(!store.claim_sweep("docker", "host-b", 1000, 500).await.unwrap(), "held by host-a");
    assert!(store.claim_sweep("docker", "host-a", 1000, 900).await.unwrap(), "renewed by its holder until 1900");
    assert!(!store.claim_sweep("docker", "host-b", 1000, 1500).await.unwrap(), "the renewal holds");
    assert!(store.claim_sweep("daytona", "host-b", 1000, 1500).await.unwrap(), "another provider is separate");
    fresh.lease_time_passes(1000).await;
    assert!(store.claim_sweep("docker", "host-b", 1000, 1900).await.unwrap(), "taken over once expired");
    assert!(!store.claim_sweep("docker", "host-a", 1000, 2000).await.unwrap(), "host-b holds it now");
    store.release_sweep("docker", "host-a").await.unwrap();
    assert!(!store.claim_sweep("docker", "host-a", 1000, 2000).await.unwrap(), "only the holder releases");
    store.release_sweep("docker", "host-b").await.unwrap();
    assert!(store.claim_sweep("docker", "host-a", 1000, 2000).await.unwrap(), "free after the release");
    store.release_sweep("nobody", "host-a").await.unwrap();
    let refused = store.claim_sweep("docker", "", 1000, 0).await;
    assert!(matches!(refused, Err(StoreError::InvalidRecord(ref invalid)) if invalid.field == "holder"));
}

async fn audit_rows_in_order(fresh: &Fresh) {
    let store = &fresh.store;
    let first = [
        audit(100, "a", "destroyed", None),
        audit(200, "b", "failed", Some("engine\0down")),
        audit(300, "c", "timeout", Some("took too long")),
    ];
    store.append_audit(&first).await.unwrap();
    store.append_audit(&[]).await.unwrap();
    store.append_audit(&[audit(150, "d", "destroyed", None)]).await.unwrap();
    let mut kept = first[1].clone();
    kept.error = Some(fresh.kept("engine\0down"));

    let all = store.list_audit(None, 10).await.unwrap();
    assert_eq!(all, [first[0].clone(), kept.clone(), first[2].clone(), audit(150, "d", "destroyed", None)]);
    let since = store.list_audit(Some(150), 10).await.unwrap();
    assert_eq!(since, [kept.clone(), first[2].clone(), audit(150, "d", "destroyed", None)], "append order");
    assert_eq!(store.list_audit(Some(150), 2).await.unwrap(), [kept, first[2].clone()], "at most `limit`");
    assert!(store.list_audit(Some(301), 10).await.unwrap().is_empty());
    assert!(store.list_audit(None, 0).await.unwrap().is_empty());
}

async fn facts_count_records_and_name_the_newest_audit_row(fresh: &Fresh) {
    let store = &fresh.store;
    let empty = store.facts().await.unwrap();
    assert_eq!((empty.records, empty.last_audit_at), (0, None));
    let migrated = if matches!(fresh.backend, Backend::Memory) { 0 } else { 5 };
    assert_eq!(empty.schema_version, migrated, "the newest migration applied");
    store.upsert(&record("a", "docker", "ctr-a", 1)).await.unwrap();
    store.upsert(&record("b", "docker", "ctr-b", 1)).await.unwrap();
    store.append_audit(&[audit(300, "a", "destroyed", None), audit(200, "b", "failed", Some("x"))]).await.unwrap();
    let facts = store.facts().await.unwrap();
    assert_eq!((facts.records, facts.last_audit_at), (2, Some(300)), "the newest row, not the last appended");
}

async fn scheduled_leaks_show_reason_next_attempt_and_claim(fresh: &Fresh) {
    let store = &fresh.store;
    store.record_leak(leak("k1", "docker", "s1", 10), LeakReason::DestroyFailed, 100).await.unwrap();
    store.record_leak(leak("k2", "docker", "s2", 20), LeakReason::Orphan, 5_000).await.unwrap();
    let claimed = store.due_leaks("docker", 10, Some(1_000), 200).await.unwrap();
    assert_eq!(ids(&claimed), ["s1"], "only s1 is due at 200");
    let scheduled = store.scheduled_leaks().await.unwrap();
    let seen: Vec<_> = scheduled
        .iter()
        .map(|leak| {
            let id = leak.due.entry.provider_sandbox_id.as_str();
            (id, leak.due.reason, leak.due.next_attempt_at, leak.claimed_until.is_some())
        })
        .collect();
    // (PostgreSQL takes a claim's lease on the database clock, so only its presence is compared.)
    let expected = [("s1", LeakReason::DestroyFailed, 100, true), ("s2", LeakReason::Orphan, 5_000, false)];
    assert_eq!(seen, expected, "oldest first, with the claim");
    assert_eq!(store.scheduled_leaks().await.unwrap(), scheduled, "listing claims nothing");
}

/// Every contract check, each on a fresh store of `backend`.
async fn fleet_contract(backend: Backend) {
    macro_rules! check {
        ($($check:ident),* $(,)?) => {$(
            let fresh = Fresh::new(backend).await;
            $check(&fresh).await;
            fresh.cleanup().await;
        )*};
    }
    check!(
        stale_records_oldest_first_below_the_threshold,
        idle_expiry_only_takes_an_untouched_record,
        references_cover_records_and_leaks_of_one_provider,
        references_cover_recent_destroys_in_the_audit_log,
        references_cover_leaks_just_resolved,
        the_registry_names_what_records_named_after_they_are_gone,
        prune_deletes_one_providers_rows_before_the_bounds,
        due_leaks_respect_backoff_and_claims,
        a_deferred_leak_waits_for_its_next_attempt,
        a_late_write_under_a_superseded_claim_is_refused,
        one_sweeper_per_provider,
        leak_summaries_count_each_provider,
        audit_rows_in_order,
        facts_count_records_and_name_the_newest_audit_row,
        scheduled_leaks_show_reason_next_attempt_and_claim,
    );
}

#[tokio::test]
async fn in_memory_store_keeps_the_fleet_contract() {
    fleet_contract(Backend::Memory).await;
}

#[tokio::test]
async fn sqlite_store_keeps_the_fleet_contract() {
    fleet_contract(Backend::Sqlite).await;
}

#[tokio::test]
async fn postgres_store_keeps_the_fleet_contract() {
    fleet_contract(Backend::Postgres).await;
}

const SQLITE_V1: &str = include_str!("../src/stores/migrations/sqlite/0001_instances_and_leaks.sql");
const POSTGRES_V1: &str = include_str!("../src/stores/migrations/postgres/0001_instances_and_leaks.sql");

/// What an upgraded store must still hold, and be able to do.
async fn check_upgraded(store: &dyn Store) {
    let old = LeakEntry {
        key: "old-key".to_owned(),
        provider: "docker".to_owned(),
        provider_sandbox_id: "ctr-old".to_owned(),
        run_id: "old-run".to_owned(),
        last_error: "engine down".to_owned(),
        failed_at: 42,
        attempts: 3,
        claim: None,
    };
    assert_eq!(store.list_leaks(None).await.unwrap(), std::slice::from_ref(&old), "the version-1 leak survived");
    assert_eq!(store.get("old-key").await.unwrap(), Some(record("old-key", "docker", "ctr-kept", 7)));
    let due = store.due_leaks("docker", 10, Some(1000), 0).await.unwrap();
    let old = LeakEntry { claim: Some(1), ..old };
    assert_eq!(due, [DueLeak { entry: old, reason: LeakReason::DestroyFailed, next_attempt_at: 0 }]);
    let mut references = store.sandbox_references("docker", u64::MAX).await.unwrap();
    references.sort();
    assert_eq!(references, ["ctr-kept", "ctr-old"]);
    assert_eq!(
        store.registered_sandboxes("docker", 7).await.unwrap(),
        ["ctr-kept"],
        "records before version 3 register"
    );
    assert_eq!(keys(&store.list_stale(8, 10).await.unwrap()), ["old-key"]);
    assert!(store.claim_sweep("docker", "host", 1000, 0).await.unwrap());
    store.append_audit(&[audit(1, "ctr-old", "destroyed", None)]).await.unwrap();
    assert_eq!(store.list_audit(None, 10).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_version_1_sqlite_file_upgrades_in_place_keeping_its_leaks() {
    let path = temp_db_path("fleet_v1");
    let v1 = SQLITE_V1.replace("{instances}", "sandbox_instances").replace("{leaks}", "sandbox_leaks");
    let setup = format!(
        "CREATE TABLE {SCHEMA_VERSION_TABLE} (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT;
         {v1}
         INSERT INTO {SCHEMA_VERSION_TABLE} (version, applied_at) VALUES (1, 0);
         INSERT INTO sandbox_instances (sandbox_key, provider, provider_sandbox_id, thread_id, latest_run_id, updated_at)
           VALUES ('old-key', 'docker', 'ctr-kept', 'thread', 'run', 7);
         INSERT INTO sandbox_leaks
           (provider, provider_sandbox_id, sandbox_key, run_id, last_error, failed_at, attempts, claimed_until)
           VALUES ('docker', 'ctr-old', 'old-key', 'old-run', 'engine down', 42, 3, NULL);"
    );
    let mut connection =
        sqlx::sqlite::SqliteConnectOptions::new().filename(&path).create_if_missing(true).connect().await.unwrap();
    sqlx::raw_sql(&setup).execute(&mut connection).await.unwrap();
    connection.close().await.unwrap();

    let store = SqliteSandboxInstanceStore::open(&path).await.expect("a version-1 file upgrades");
    check_upgraded(&store).await;
    store.close().await;
    assert_eq!(sqlite_versions(&path).await, [1, 2, 3, 4, 5]);
    // Opening again finds nothing left to do.
    let store = SqliteSandboxInstanceStore::open(&path).await.expect("reopen");
    assert_eq!(store.list_leaks(None).await.unwrap().len(), 1);
    store.close().await;
    assert_eq!(sqlite_versions(&path).await, [1, 2, 3, 4, 5]);
    remove_db(&path);
}

async fn sqlite_versions(path: &Path) -> Vec<i64> {
    let mut connection = sqlx::sqlite::SqliteConnectOptions::new().filename(path).connect().await.unwrap();
    let sql = format!("SELECT version FROM {SCHEMA_VERSION_TABLE} ORDER BY version");
    let versions = sqlx::query_scalar(&sql).fetch_all(&mut connection).await.unwrap();
    connection.close().await.unwrap();
    versions
}

#[tokio::test]
async fn a_sqlite_schema_newer_than_version_5_is_refused() {
    let path = temp_db_path("fleet_v6");
    SqliteSandboxInstanceStore::open(&path).await.unwrap().close().await;
    assert_eq!(sqlite_versions(&path).await, [1, 2, 3, 4, 5]);
    store_support::sqlite_exec(
        &path,
        &format!("INSERT INTO {SCHEMA_VERSION_TABLE} (version, applied_at) VALUES (6, 0)"),
    )
    .await;
    match SqliteSandboxInstanceStore::open(&path).await {
        Err(StoreOpenError::SchemaTooNew { found: 6, supported: 5 }) => {}
        other => panic!("expected SchemaTooNew {{ found: 6, supported: 5 }}, got {other:?}"),
    }
    remove_db(&path);
}

#[tokio::test]
async fn a_sqlite_file_with_a_stray_fleet_table_is_refused() {
    // A table with one of the version-2 names, which no schema version of
    // ours vouches for, is someone else's: refused before anything is written.
    for table in [SWEEPS_TABLE, AUDIT_TABLE] {
        let path = temp_db_path("fleet_stray");
        let mut connection =
            sqlx::sqlite::SqliteConnectOptions::new().filename(&path).create_if_missing(true).connect().await.unwrap();
        sqlx::raw_sql(&format!("CREATE TABLE {table} (id INTEGER PRIMARY KEY, note TEXT)"))
            .execute(&mut connection)
            .await
            .unwrap();
        connection.close().await.unwrap();
        match SqliteSandboxInstanceStore::open(&path).await {
            Err(StoreOpenError::IncompatibleSchema { table: refused, reason, .. }) => {
                assert_eq!(refused, table);
                assert!(reason.contains("id, note"), "{reason}");
            }
            other => panic!("expected IncompatibleSchema for {table}, got {other:?}"),
        }
        remove_db(&path);
    }
}

#[tokio::test]
async fn a_version_1_postgres_schema_upgrades_in_place_keeping_its_leaks() {
    let schema = unique("fleet_v1");
    let qualified = |table: &str| format!("\"{schema}\".\"{table}\"");
    let v1 = POSTGRES_V1
        .replace("{instances}", &qualified("sandbox_instances"))
        .replace("{leaks}", &qualified("sandbox_leaks"));
    let instances = qualified("sandbox_instances");
    let leaks = qualified("sandbox_leaks");
    let versions = qualified("sandbox_reclaim_schema_version");
    pg_exec(&format!(
        "CREATE SCHEMA \"{schema}\";
         CREATE TABLE {versions} (version BIGINT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now());
         {v1}
         INSERT INTO {versions} (version) VALUES (1);
         INSERT INTO {instances}
           (key_hash, sandbox_key, provider, provider_sandbox_id, thread_id, latest_run_id, updated_at)
           VALUES (sha256(convert_to('old-key', 'UTF8')), 'old-key', 'docker', 'ctr-kept', 'thread', 'run', 7);
         INSERT INTO {leaks}
           (sandbox_hash, provider, provider_sandbox_id, sandbox_key, run_id, last_error, failed_at, attempts)
           VALUES (sha256(convert_to(length('docker')::text || ':' || 'docker' || 'ctr-old', 'UTF8')),
                   'docker', 'ctr-old', 'old-key', 'old-run', 'engine down', 42, 3);"
    ))
    .await;

    let store = pg_store(&schema).await;
    check_upgraded(&store).await;
    store.close().await;
    let store = pg_store(&schema).await;
    assert_eq!(store.list_leaks(None).await.unwrap().len(), 1, "reconnecting finds nothing left to do");
    store.close().await;
    let pool = sqlx::postgres::PgPoolOptions::new().max_connections(1).connect(&pg_url()).await.unwrap();
    let applied: Vec<i64> =
        sqlx::query_scalar(&format!("SELECT version FROM {versions} ORDER BY version")).fetch_all(&pool).await.unwrap();
    pool.close().await;
    assert_eq!(applied, [1, 2, 3, 4, 5]);
    drop_schema(&schema).await;
}

#[tokio::test]
async fn postgres_fleet_tables_are_named_after_the_leaks_table_unless_set() {
    let defaults = PostgresOptions::default();
    assert_eq!(
        (defaults.sweeps_table_name(), defaults.audit_table_name()),
        ("sandbox_sweeps".into(), "sandbox_audit".into())
    );
    let custom = PostgresOptions { leaks_table: "ledger".into(), ..PostgresOptions::default() };
    assert_eq!(
        (custom.sweeps_table_name(), custom.audit_table_name()),
        ("ledger_sweeps".into(), "ledger_audit".into())
    );
    assert_eq!(custom.registry_table_name(), "ledger_registry");
    let registry_clash = PostgresOptions {
        instances_table: "x_registry".into(),
        leaks_table: "x_leaks".into(),
        ..PostgresOptions::default()
    };
    assert!(registry_clash.validate().is_err(), "the registry table needs its own name too");
    let long = PostgresOptions { leaks_table: "l".repeat(63), ..PostgresOptions::default() };
    assert_eq!(long.sweeps_table_name().len(), 63);
    long.validate().expect("a long leaks table name still derives valid names");
    let set = PostgresOptions { sweeps_table: Some("mine".into()), ..PostgresOptions::default() };
    assert_eq!(set.sweeps_table_name(), "mine");
    let clash = PostgresOptions {
        instances_table: "x_sweeps".into(),
        leaks_table: "x_leaks".into(),
        ..PostgresOptions::default()
    };
    match clash.validate() {
        Err(StoreOpenError::InvalidOption { field: "sweepsTable", .. }) => {}
        other => panic!("expected InvalidOption sweepsTable, got {other:?}"),
    }
    let bad = PostgresOptions { audit_table: Some("bad name".into()), ..PostgresOptions::default() };
    assert!(matches!(bad.validate(), Err(StoreOpenError::InvalidOption { field: "auditTable", .. })));

    // Two stores with their own tables share one schema without clashing.
    let schema = unique("fleet_names");
    let first = pg_store(&schema).await;
    let other_options = PostgresOptions {
        instances_table: "b_instances".into(),
        leaks_table: "b_leaks".into(),
        schema_version_table: "b_version".into(),
        ..pg_options(&schema)
    };
    let second = PostgresSandboxInstanceStore::connect(&pg_url(), other_options).await.expect("second store");
    assert!(first.claim_sweep("docker", "host-a", 1000, 0).await.unwrap());
    assert!(second.claim_sweep("docker", "host-b", 1000, 0).await.unwrap(), "b_sweeps is its own table");
    second.append_audit(&[audit(1, "x", "destroyed", None)]).await.unwrap();
    assert!(first.list_audit(None, 10).await.unwrap().is_empty());
    first.close().await;
    second.close().await;
    drop_schema(&schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_concurrent_due_leak_claims_take_every_entry_exactly_once() {
    const ENTRIES: usize = 200;
    const TASKS: usize = 4;
    let schema = unique("fleet_claims");
    let options = PostgresOptions { max_connections: TASKS as u32, ..pg_options(&schema) };
    let store = Arc::new(PostgresSandboxInstanceStore::connect(&pg_url(), options).await.unwrap());
    for index in 0..ENTRIES {
        let id = format!("ctr-{index:03}");
        store.record_leak(leak(&format!("key-{index}"), "docker", &id, 1), LeakReason::Orphan, 0).await.unwrap();
    }
    let barrier = Arc::new(tokio::sync::Barrier::new(TASKS));
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let (store, barrier) = (store.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                let mut claimed = Vec::new();
                loop {
                    let batch = store.due_leaks("docker", 7, Some(600_000), 1_000).await.unwrap();
                    if batch.is_empty() {
                        return claimed;
                    }
                    claimed.extend(batch.into_iter().map(|due| due.entry.provider_sandbox_id));
                }
            })
        })
        .collect();
    let mut all = Vec::new();
    let mut per_task = Vec::new();
    for task in tasks {
        let claimed = task.await.unwrap();
        per_task.push(claimed.len());
        all.extend(claimed);
    }
    let unique_ids: HashSet<_> = all.iter().cloned().collect();
    assert_eq!(all.len(), ENTRIES, "every entry claimed exactly once (per task: {per_task:?})");
    assert_eq!(unique_ids.len(), ENTRIES, "no entry claimed twice (per task: {per_task:?})");
    assert!(store.due_leaks("docker", 10, None, 1_000).await.unwrap().is_empty(), "all are claimed");
    store.close().await;
    drop_schema(&schema).await;
}

/// Hosts whose clocks disagree by minutes still see one holder per lease on
/// PostgreSQL: every lease is taken, and judged, on the database's clock.
#[tokio::test]
async fn postgres_leases_hold_against_a_host_whose_clock_runs_ahead() {
    let fresh = Fresh::new(Backend::Postgres).await;
    let store = &fresh.store;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    let ahead = now + 120_000;
    assert!(store.claim_sweep("docker", "host-a", 60_000, now).await.unwrap());
    assert!(!store.claim_sweep("docker", "host-b", 60_000, ahead).await.unwrap(), "host-a's lease is still running");
    store.record_leak(leak("k1", "docker", "s1", 10), LeakReason::Orphan, 0).await.unwrap();
    assert_eq!(ids(&store.due_leaks("docker", 10, Some(60_000), now).await.unwrap()), ["s1"]);
    assert!(store.due_leaks("docker", 10, Some(60_000), ahead).await.unwrap().is_empty(), "claimed by host-a");
    assert!(store.due_leaks("docker", 10, None, ahead).await.unwrap().is_empty(), "not due while claimed");
    fresh.cleanup().await;
}
