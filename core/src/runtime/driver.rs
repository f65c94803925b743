//! The tokio driver: runs any [flow](crate::machine) against native providers,
//! stores and loggers (the public async API on it is [`super::api`]).
//!
//! It knows effects, never rules: it starts what the machine asks for (several
//! at once if asked), feeds back how each settled, sleeps until the machine's
//! next deadline, and aborts what the machine cancels. Host values (the error a
//! destroy failed with, the entries a claim returned) stay here, by effect id.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures_util::future::{AbortHandle, Abortable};
use futures_util::stream::{FuturesUnordered, StreamExt};

use crate::contract::errors::{DestroyTimeout, ProviderError, ReclaimError, StoreError};
use crate::contract::{FleetStore, LeakLedger, LogValue, ReclaimLogger, SandboxInstanceStore, SandboxProvider};
use crate::machine::effects::{
    Completion, DueFields, Effect, EffectId, Ending, Flow, HostRef, InstanceFields, LogLevel, LogLine, MetaValue,
    Misuse, Output, SandboxReclaimFailed, StaleRecord,
};
use crate::model::fleet::{DueLeak, ListedSandbox};
use crate::model::ledger::LeakEntry;
use crate::model::SandboxInstanceRecord;
use crate::report::messages;
use crate::runtime::clock::now_millis;

/// The host objects effects run against.
#[derive(Default)]
pub(crate) struct Host<'a> {
    pub providers: Vec<&'a dyn SandboxProvider>,
    pub instances: Option<&'a dyn SandboxInstanceStore>,
    pub ledger: Option<&'a dyn LeakLedger>,
    pub fleet: Option<&'a dyn FleetStore>,
    pub logger: Option<&'a dyn ReclaimLogger>,
    pub progress: Option<ProgressCallback<'a>>,
    pub stop: Option<&'a StopSignal>,
}

/// Called with each progress event of a fleet pass (a JSON object; see the
/// reports' docs). Never awaited; it cannot change the pass.
pub type ProgressCallback<'a> = &'a (dyn Fn(&serde_json::Value) + Send + Sync);

/// Stops a fleet pass from another task: nothing new starts, what runs
/// settles (or reaches its deadline) and is written down, then the pass
/// answers its report. Cloning shares the signal.
#[derive(Debug, Clone, Default)]
pub struct StopSignal(std::sync::Arc<(std::sync::atomic::AtomicBool, tokio::sync::Notify)>);

impl StopSignal {
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks every pass given this signal to stop.
    pub fn stop(&self) {
        self.0 .0.store(true, std::sync::atomic::Ordering::SeqCst);
        self.0 .1.notify_waiters();
    }

    pub fn is_stopped(&self) -> bool {
        self.0 .0.load(std::sync::atomic::Ordering::SeqCst)
    }

    async fn stopped(&self) {
        loop {
            let notified = self.0 .1.notified();
            if self.is_stopped() {
                return;
            }
            notified.await;
        }
    }
}

/// How an effect settled, with the host values the driver keeps.
enum Settled {
    Ok,
    Instance(Option<SandboxInstanceRecord>),
    Leaks(Vec<LeakEntry>),
    Due(Vec<DueLeak>),
    Stale(Vec<SandboxInstanceRecord>),
    Ids(Vec<String>),
    Mark(u64),
    Sandboxes(Vec<ListedSandbox>),
    Flag(bool),
    StoreFailed(StoreError),
    DestroyFailed(ProviderError),
}

type EffectFuture<'a> = Pin<Box<dyn Future<Output = Settled> + Send + 'a>>;

/// Runs `flow` to its ending. `Ok(Err(_))` is the reclaimer's own failure.
pub(crate) async fn run(
    flow: &mut (dyn Flow + Send),
    host: Host<'_>,
) -> Result<Result<Output, SandboxReclaimFailed>, ReclaimError> {
    let mut stop_seen = false;
    let mut in_flight = FuturesUnordered::new();
    let mut aborts: HashMap<EffectId, AbortHandle> = HashMap::new();
    let mut destroy_errors: HashMap<EffectId, ProviderError> = HashMap::new();
    let mut store_errors: HashMap<EffectId, StoreError> = HashMap::new();
    let mut claimed: HashMap<EffectId, Vec<LeakEntry>> = HashMap::new();
    loop {
        while let Some((id, effect)) = flow.poll_effect() {
            match effect {
                Effect::Log(line) => log(host.logger, &line, &destroy_errors),
                Effect::Progress(event) => {
                    if let (Some(progress), Ok(event)) = (host.progress, serde_json::from_str(&event)) {
                        progress(&event);
                    }
                }
                Effect::Cancel { target } => {
                    if let Some(handle) = aborts.remove(&target) {
                        handle.abort();
                    }
                }
                effect => {
                    let future = start(&host, effect, &claimed)?;
                    let (handle, registration) = AbortHandle::new_pair();
                    aborts.insert(id, handle);
                    in_flight.push(async move { (id, Abortable::new(future, registration).await) });
                }
            }
        }
        if let Some(ending) = flow.poll_done() {
            return match ending {
                Ending::Resolved(output) => Ok(Ok(output)),
                Ending::ReclaimFailed(failure) => Ok(Err(failure)),
                Ending::HostError(id) => {
                    Err(store_errors.remove(&id).map_or(Misuse(messages::MISUSE_UNKNOWN_EFFECT).into(), Into::into))
                }
            };
        }
        let deadline = flow.poll_timeout();
        let sleep = async {
            match deadline {
                Some(at) => tokio::time::sleep(Duration::from_millis(at.saturating_sub(now_millis()))).await,
                None => std::future::pending().await,
            }
        };
        let stop = async {
            match host.stop {
                Some(signal) if !stop_seen => signal.stopped().await,
                _ => std::future::pending().await,
            }
        };
        tokio::select! {
            () = stop => {
                stop_seen = true;
                flow.stop(now_millis());
            }
            settled = in_flight.next(), if !in_flight.is_empty() => {
                let Some((id, Ok(settled))) = settled else { continue }; // aborted: the machine moved on
                aborts.remove(&id);
                let completion = match settled {
                    Settled::Ok => Completion::Ok,
                    Settled::Instance(record) => Completion::Instance(record.map(|found| InstanceFields {
                        provider: found.provider,
                        provider_sandbox_id: found.provider_sandbox_id,
                    })),
                    Settled::Leaks(entries) => {
                        let ids = entries.iter().map(|entry| entry.provider_sandbox_id.clone()).collect();
                        claimed.insert(id, entries);
                        Completion::Leaks(ids)
                    }
                    Settled::Due(entries) => {
                        let fields = entries.iter().map(|due| DueFields {
                            provider_sandbox_id: due.entry.provider_sandbox_id.clone(),
                            key: due.entry.key.clone(),
                            attempts: due.entry.attempts,
                            reason: due.reason,
                        }).collect();
                        claimed.insert(id, entries.into_iter().map(|due| due.entry).collect());
                        Completion::Due(fields)
                    }
                    Settled::Stale(records) => Completion::Stale(records.into_iter().map(|record| StaleRecord {
                        key: record.key,
                        provider: record.provider,
                        provider_sandbox_id: record.provider_sandbox_id,
                        updated_at: record.updated_at,
                    }).collect()),
                    Settled::Ids(ids) => Completion::Ids(ids),
                    Settled::Mark(mark) => Completion::Mark(mark),
                    Settled::Sandboxes(sandboxes) => Completion::Sandboxes(sandboxes),
                    Settled::Flag(flag) => Completion::Flag(flag),
                    Settled::StoreFailed(error) => {
                        let message = error.to_string();
                        store_errors.insert(id, error);
                        Completion::Failed { message }
                    }
                    Settled::DestroyFailed(error) => {
                        let message = error.to_string();
                        destroy_errors.insert(id, error);
                        Completion::Failed { message }
                    }
                };
                flow.complete(id, completion, now_millis())?;
            }
            () = sleep => flow.handle_timeout(now_millis()),
        }
    }
}

/// Starts one asynchronous effect against the host objects.
fn start<'a>(
    host: &Host<'a>,
    effect: Effect,
    claimed: &HashMap<EffectId, Vec<LeakEntry>>,
) -> Result<EffectFuture<'a>, Misuse> {
    let store_result = |result: Result<(), StoreError>| result.map_or_else(Settled::StoreFailed, |()| Settled::Ok);
    let ledger = || host.ledger.ok_or(Misuse(messages::MISUSE_NO_LEDGER));
    let entry = |entry: HostRef| {
        let entries = claimed.get(&entry.effect);
        entries
            .and_then(|entries| entries.get(entry.index as usize))
            .cloned()
            .ok_or(Misuse(messages::MISUSE_UNKNOWN_EFFECT))
    };
    let instances = || host.instances.ok_or(Misuse(messages::MISUSE_WRONG_COMPLETION));
    let fleet = || host.fleet.ok_or(Misuse(messages::MISUSE_NO_LEDGER));
    let providers = host.providers.clone();
    let provider_at =
        move |index: u32| providers.get(index as usize).copied().ok_or(Misuse(messages::MISUSE_WRONG_COMPLETION));
    Ok(match effect {
        Effect::GetInstance { key } => {
            let store = instances()?;
            Box::pin(async move { store.get(&key).await.map_or_else(Settled::StoreFailed, Settled::Instance) })
        }
        Effect::DeleteInstance { key } => {
            let store = instances()?;
            Box::pin(async move { store_result(store.delete(&key).await) })
        }
        Effect::DeleteRecordingLeak { key, leak } => {
            let ledger = ledger()?;
            Box::pin(async move { store_result(ledger.delete_recording_leak(&key, leak).await) })
        }
        Effect::Destroy { provider, provider_sandbox_id, .. } => {
            let provider = provider_at(provider)?;
            Box::pin(async move {
                provider.destroy(&provider_sandbox_id).await.map_or_else(Settled::DestroyFailed, |()| Settled::Ok)
            })
        }
        Effect::ListSandboxes { provider, .. } => {
            let provider = provider_at(provider)?;
            Box::pin(
                async move { provider.list_sandboxes().await.map_or_else(Settled::DestroyFailed, Settled::Sandboxes) },
            )
        }
        Effect::LookupSandboxes { provider, ids, .. } => {
            let provider = provider_at(provider)?;
            Box::pin(async move {
                provider.lookup_sandboxes(&ids).await.map_or_else(Settled::DestroyFailed, Settled::Sandboxes)
            })
        }
        Effect::SandboxReferences { provider, destroyed_since } => {
            let fleet = fleet()?;
            Box::pin(async move {
                let references = fleet.sandbox_references(&provider, destroyed_since).await;
                references.map_or_else(Settled::StoreFailed, Settled::Ids)
            })
        }
        Effect::RegisteredSandboxes { provider, since } => {
            let fleet = fleet()?;
            Box::pin(async move {
                let registered = fleet.registered_sandboxes(&provider, since).await;
                registered.map_or_else(Settled::StoreFailed, Settled::Ids)
            })
        }
        Effect::SweepMark { provider } => {
            let fleet = fleet()?;
            Box::pin(async move { fleet.sweep_mark(&provider).await.map_or_else(Settled::StoreFailed, Settled::Mark) })
        }
        Effect::ReferencedAmong { provider, ids, destroyed_since, mark } => {
            let fleet = fleet()?;
            Box::pin(async move {
                let referenced = fleet.referenced_among(&provider, &ids, destroyed_since, mark).await;
                referenced.map_or_else(Settled::StoreFailed, Settled::Ids)
            })
        }
        Effect::RegisteredAmong { provider, ids, since } => {
            let fleet = fleet()?;
            Box::pin(async move {
                fleet.registered_among(&provider, &ids, since).await.map_or_else(Settled::StoreFailed, Settled::Ids)
            })
        }
        Effect::LookupCandidates { provider, since, limit } => {
            let fleet = fleet()?;
            Box::pin(async move {
                let candidates = fleet.lookup_candidates(&provider, since, limit as usize).await;
                candidates.map_or_else(Settled::StoreFailed, Settled::Ids)
            })
        }
        Effect::LookupChecked { provider, gone, checked, now } => {
            let fleet = fleet()?;
            Box::pin(async move { store_result(fleet.lookup_checked(&provider, &gone, &checked, now).await) })
        }
        Effect::ListStale { older_than, limit } => {
            let fleet = fleet()?;
            Box::pin(async move {
                fleet.list_stale(older_than, limit as usize).await.map_or_else(Settled::StoreFailed, Settled::Stale)
            })
        }
        Effect::ExpireIdle { key, updated_at, leak } => {
            let fleet = fleet()?;
            Box::pin(async move {
                fleet.expire_idle(&key, updated_at, leak).await.map_or_else(Settled::StoreFailed, Settled::Flag)
            })
        }
        Effect::RecordLeak { leak, reason, next_attempt_at } => {
            let fleet = fleet()?;
            Box::pin(async move { store_result(fleet.record_leak(leak, reason, next_attempt_at).await) })
        }
        Effect::DueLeaks { provider, limit, lease_ms, now } => {
            let fleet = fleet()?;
            Box::pin(async move {
                fleet
                    .due_leaks(&provider, limit as usize, lease_ms, now)
                    .await
                    .map_or_else(Settled::StoreFailed, Settled::Due)
            })
        }
        Effect::DeferLeak { entry: reference, message, failed_at, next_attempt_at } => {
            let (fleet, entry) = (fleet()?, entry(reference)?);
            Box::pin(async move {
                fleet
                    .defer_leak(&entry, &message, failed_at, next_attempt_at)
                    .await
                    .map_or_else(Settled::StoreFailed, Settled::Flag)
            })
        }
        Effect::ClaimSweep { provider, holder, lease_ms, now } => {
            let fleet = fleet()?;
            Box::pin(async move {
                fleet
                    .claim_sweep(&provider, &holder, lease_ms, now)
                    .await
                    .map_or_else(Settled::StoreFailed, Settled::Flag)
            })
        }
        Effect::ReleaseSweep { provider, holder } => {
            let fleet = fleet()?;
            Box::pin(async move { store_result(fleet.release_sweep(&provider, &holder).await) })
        }
        Effect::AppendAudit(entries) => {
            let fleet = fleet()?;
            Box::pin(async move { store_result(fleet.append_audit(&entries).await) })
        }
        Effect::Prune { provider, registry_before, audit_before } => {
            let fleet = fleet()?;
            Box::pin(async move { store_result(fleet.prune(&provider, registry_before, audit_before).await) })
        }
        Effect::ClaimLeaks { provider, limit, lease_ms } => {
            let ledger = ledger()?;
            let lease = Duration::from_millis(lease_ms);
            Box::pin(async move {
                ledger
                    .claim_leaks(&provider, limit as usize, lease)
                    .await
                    .map_or_else(Settled::StoreFailed, Settled::Leaks)
            })
        }
        Effect::ResolveLeak { entry: reference } => {
            let ledger = match host.fleet {
                Some(fleet) => fleet as &dyn LeakLedger,
                None => ledger()?,
            };
            let entry = entry(reference)?;
            Box::pin(async move { ledger.resolve_leak(&entry).await.map_or_else(Settled::StoreFailed, Settled::Flag) })
        }
        Effect::RecordRetryFailure { entry: reference, message, failed_at } => {
            let (ledger, entry) = (ledger()?, entry(reference)?);
            Box::pin(async move {
                ledger
                    .record_retry_failure(&entry, &message, failed_at)
                    .await
                    .map_or_else(Settled::StoreFailed, Settled::Flag)
            })
        }
        // Immediate effects are run by the loop itself.
        Effect::Log(_) | Effect::Cancel { .. } | Effect::Progress(_) => {
            return Err(Misuse(messages::MISUSE_WRONG_COMPLETION))
        }
    })
}

fn log(logger: Option<&dyn ReclaimLogger>, line: &LogLine, destroy_errors: &HashMap<EffectId, ProviderError>) {
    let Some(logger) = logger else { return };
    let timeouts: Vec<DestroyTimeout> = line
        .meta
        .iter()
        .filter_map(|(_, value)| match value {
            MetaValue::DestroyTimeout { provider_sandbox_id, timeout_ms } => {
                Some(DestroyTimeout { provider_sandbox_id: provider_sandbox_id.clone(), timeout_ms: *timeout_ms })
            }
            _ => None,
        })
        .collect();
    let mut timeouts = timeouts.iter();
    let meta: Vec<(&'static str, LogValue<'_>)> = line
        .meta
        .iter()
        .map(|(key, value)| {
            let value = match value {
                MetaValue::Text(text) => LogValue::Text(text),
                MetaValue::HostError(id) => match destroy_errors.get(id) {
                    Some(error) => LogValue::Error(error),
                    None => LogValue::Text(""),
                },
                MetaValue::DestroyTimeout { .. } => match timeouts.next() {
                    Some(timeout) => LogValue::Error(timeout),
                    None => LogValue::Text(""),
                },
            };
            (*key, value)
        })
        .collect();
    match line.level {
        LogLevel::Warn => logger.warn(line.message, &meta),
        LogLevel::Errors => logger.errors(line.message, &meta),
        LogLevel::Sandbox => logger.sandbox(line.message, &meta),
    }
}
