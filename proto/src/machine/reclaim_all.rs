//! `reclaimAll`: many runs reclaimed side by side, each exactly as
//! `reclaimSandbox` reclaims it.
//!
//! The machine runs one [`Reclaim`] machine per record and renumbers their
//! effects into its own, so every per-record store call, provider call, log
//! line and outcome is the single reclaim's; what it adds is scheduling:
//!
//! * at most `concurrency` records in progress, and at most
//!   `per_provider_concurrency` destroys in flight per provider (a destroy
//!   waiting for its provider's slot starts its deadline when it starts);
//! * a record whose destroy settled (or was cancelled at its deadline) is
//!   *finishing*: all it has left is its outcome write (the delete, or the
//!   delete recording its leak), so it gives its slot to the next record
//!   while that write runs: on a durable store a slot would otherwise idle
//!   for a store round trip per record. At most `concurrency` records are
//!   finishing at once, so the store never sees more outcome writes in
//!   flight than before; a record whose write finds them all taken holds
//!   its write, and its slot, until one settles (first come, first
//!   written). At concurrency 1 the calls are thus still the reference's
//!   loop, record after record: the next record starts only once the last
//!   one's write has been issued, and its own write waits for that one;
//! * routing: a record goes to the provider whose name its instance names;
//!   none → `provider-mismatch`, nothing touched, as a single reclaim;
//! * records sharing a `sandboxKey` are reclaimed once (the others are
//!   reported `duplicate`);
//! * after `budget_ms`, or once stopped, no record starts (nor a held
//!   destroy): the rest is reported `deferred`, with nothing touched;
//! * a record whose store call fails is reported `error` on that record;
//!   the pass goes on;
//! * a logger that throws takes only its own record with it: a driver
//!   starts nothing of a batch after a throwing log line (the reference's
//!   unguarded call), so what other records had in that batch is emitted
//!   again, and only the throwing record's own effects are dropped.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::machine::effects::{Completion, Effect, EffectId, Ending, Flow, LogLine, MetaValue, Millis, Misuse, Output};
use crate::machine::outbox::Outbox;
use crate::machine::reclaim::{Reclaim, ReclaimApi, ReclaimInput};
use crate::model::ReclaimOutcome;
use crate::report::{messages, ProgressEvent, RecordProgress};
pub use crate::report::{FleetReclaimReport, OutcomeCounts, RecordOutcome, RecordReport};

/// What a fleet reclaim decides on, read once from the host's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReclaimAllInput {
    /// `(runId, sandboxKey)` of each record, in order.
    pub records: Vec<(String, Option<String>)>,
    /// The providers' names, in order (see [`ReclaimInput::providers`]).
    pub providers: Vec<String>,
    pub store_has_ledger: bool,
    /// Records in progress at once (at least 1).
    pub concurrency: u32,
    /// Destroys in flight per provider (at least 1); `None`: `concurrency`.
    pub per_provider_concurrency: Option<u32>,
    pub destroy_timeout_ms: Option<u64>,
    /// Start nothing after this long.
    pub budget_ms: Option<u64>,
    /// Emit a [`Effect::Progress`] event per finished record.
    pub progress: bool,
    /// Stopped before it started (an already-aborted signal): start nothing.
    pub stopped: bool,
}

/// One record in progress.
#[derive(Debug)]
struct Active {
    machine: Reclaim,
    started_at: Millis,
    /// Its destroy, waiting for a provider slot, or its outcome write,
    /// waiting for a finishing slot: (its own id, the effect).
    held: Option<(EffectId, Effect)>,
    /// Its outcome write was issued: it no longer takes a concurrency slot.
    finishing: bool,
    /// (the record machine's own id, ours) of what it emitted.
    ids: Vec<(EffectId, EffectId)>,
    /// Failure messages of its effects, by its own id.
    failures: Vec<(EffectId, String)>,
    /// Its destroy's failure (or timeout) message, for the report.
    destroy_error: Option<String>,
}

impl Active {
    fn ours(&self, own: EffectId) -> Option<EffectId> {
        self.ids.iter().find(|(mine, _)| *mine == own).map(|(_, ours)| *ours)
    }
}

/// A destroy in flight: its record, provider and sandbox.
#[derive(Debug)]
struct InFlightDestroy {
    record: usize,
    provider: usize,
    sandbox_id: String,
}

/// The fleet-reclaim machine. See the [module docs](self).
#[derive(Debug)]
pub struct ReclaimAll {
    input: ReclaimAllInput,
    out: Outbox,
    started_at: Millis,
    next_record: usize,
    active: HashMap<usize, Active>,
    /// Our effect id → (record, the record machine's own id), until it settles.
    routes: HashMap<EffectId, (usize, EffectId)>,
    destroys: HashMap<EffectId, InFlightDestroy>,
    /// Destroys in flight per provider.
    in_flight: Vec<u32>,
    /// Records whose destroy waits for a provider slot, per provider.
    waiting: Vec<VecDeque<usize>>,
    /// Records finishing: writing their outcome, without a concurrency slot.
    finishing: usize,
    /// Records whose outcome write waits for a finishing slot, in order.
    writes_waiting: VecDeque<usize>,
    /// Providers whose slots were freed since the last release.
    waiting_to_release: Vec<usize>,
    /// Destroys cancelled at their deadline: their late settle is ignored.
    cancelled: HashSet<EffectId>,
    first_of_key: HashSet<String>,
    reports: Vec<Option<RecordReport>>,
    counts: OutcomeCounts,
    concluded: usize,
    stopped: bool,
    finished: bool,
    /// The last batch polled, from its first log line on: what a driver left
    /// unstarted when that log (or a later one) threw.
    after_log: Vec<(EffectId, Effect)>,
    /// The last poll found nothing: the next one starts a new batch.
    batch_ended: bool,
}

impl ReclaimAll {
    pub fn new(input: ReclaimAllInput, now: Millis) -> Self {
        let providers = input.providers.len();
        let records = input.records.len();
        let input_stopped = input.stopped;
        let mut machine = Self {
            input,
            out: Outbox::default(),
            started_at: now,
            next_record: 0,
            active: HashMap::new(),
            routes: HashMap::new(),
            destroys: HashMap::new(),
            in_flight: vec![0; providers],
            waiting: vec![VecDeque::new(); providers],
            finishing: 0,
            writes_waiting: VecDeque::new(),
            waiting_to_release: Vec::new(),
            cancelled: HashSet::new(),
            first_of_key: HashSet::new(),
            reports: vec![None; records],
            counts: OutcomeCounts::default(),
            concluded: 0,
            stopped: input_stopped,
            finished: false,
            after_log: Vec::new(),
            batch_ended: true,
        };
        machine.fill(now);
        machine
    }

    fn concurrency(&self) -> usize {
        self.input.concurrency.max(1) as usize
    }

    fn per_provider(&self) -> u32 {
        self.input.per_provider_concurrency.unwrap_or(self.input.concurrency).max(1)
    }

    /// Records holding a concurrency slot: in progress, not finishing.
    fn running(&self) -> usize {
        self.active.len() - self.finishing
    }

    fn may_start(&self, now: Millis) -> bool {
        !self.stopped && self.input.budget_ms.is_none_or(|budget| now < self.started_at.saturating_add(budget))
    }

    /// Starts records while there is room and time; ends when all are done.
    fn fill(&mut self, now: Millis) {
        while self.running() < self.concurrency() && self.next_record < self.input.records.len() {
            if !self.may_start(now) {
                break;
            }
            let index = self.next_record;
            self.next_record += 1;
            let (run_id, sandbox_key) = self.input.records[index].clone();
            if let Some(key) = &sandbox_key {
                if !self.first_of_key.insert(key.clone()) {
                    self.conclude(index, RecordOutcome::Duplicate, None, 0, now);
                    continue;
                }
            }
            let input = ReclaimInput {
                api: ReclaimApi::ReclaimSandbox,
                run_id,
                sandbox_key,
                providers: self.input.providers.clone(),
                store_has_ledger: self.input.store_has_ledger,
                destroy_timeout_ms: self.input.destroy_timeout_ms,
            };
            let active = Active {
                machine: Reclaim::new(input, now),
                started_at: now,
                held: None,
                finishing: false,
                ids: Vec::new(),
                failures: Vec::new(),
                destroy_error: None,
            };
            self.active.insert(index, active);
            self.pump(index, now);
        }
        if !self.may_start(now) {
            self.defer_rest(now);
        }
        if self.concluded == self.input.records.len() && !self.finished {
            self.finished = true;
            let report = FleetReclaimReport {
                total: self.input.records.len() as u64,
                counts: self.counts,
                records: self.reports.iter_mut().filter_map(Option::take).collect(),
                elapsed_ms: now.saturating_sub(self.started_at),
            };
            self.out.finish(Ending::Resolved(Output::FleetReclaim(Box::new(report))));
        }
    }

    /// Budget spent or stopped: whatever has not started never will.
    fn defer_rest(&mut self, now: Millis) {
        while self.next_record < self.input.records.len() {
            let index = self.next_record;
            self.next_record += 1;
            self.conclude(index, RecordOutcome::Deferred, None, 0, now);
        }
        for provider in 0..self.waiting.len() {
            while let Some(index) = self.waiting[provider].pop_front() {
                // Only its get ran: the record is as it was.
                if let Some(active) = self.active.remove(&index) {
                    let duration = now.saturating_sub(active.started_at);
                    self.conclude(index, RecordOutcome::Deferred, None, duration, now);
                }
            }
        }
    }

    /// Forwards what record `index`'s machine asks for; concludes it when done.
    fn pump(&mut self, index: usize, now: Millis) {
        let limit = self.per_provider();
        let concurrency = self.concurrency();
        loop {
            let Some(active) = self.active.get_mut(&index) else { return };
            let Some((own, effect)) = active.machine.poll_effect() else { break };
            match effect {
                Effect::Destroy { provider, .. } if self.in_flight[provider as usize] >= limit => {
                    active.held = Some((own, effect));
                    self.waiting[provider as usize].push_back(index);
                }
                // Its outcome write: the last thing a record does. Queued behind
                // any write already waiting, so that writes go first come, first
                // served.
                Effect::DeleteInstance { .. } | Effect::DeleteRecordingLeak { .. } => {
                    if self.finishing < concurrency && self.writes_waiting.is_empty() {
                        self.finish_with(index, own, effect);
                    } else {
                        active.held = Some((own, effect));
                        self.writes_waiting.push_back(index);
                    }
                }
                effect => self.forward(index, own, effect),
            }
        }
        let Some(active) = self.active.get_mut(&index) else { return };
        let Some(ending) = active.machine.poll_done() else { return };
        let Some(active) = self.active.remove(&index) else { return };
        for (_, ours) in &active.ids {
            self.routes.remove(ours);
        }
        if active.finishing {
            self.finishing -= 1;
        } else if active.held.is_some() {
            // Its logger threw before its write could start: the write never will.
            self.writes_waiting.retain(|waiting| *waiting != index);
        }
        let duration = now.saturating_sub(active.started_at);
        match ending {
            Ending::Resolved(Output::Outcome(outcome)) => {
                let error = if outcome == ReclaimOutcome::DestroyFailed { active.destroy_error } else { None };
                self.conclude(index, outcome.into(), error, duration, now);
            }
            Ending::HostError(own) => {
                let failure = active.failures.into_iter().find(|(id, _)| *id == own);
                self.conclude(index, RecordOutcome::Error, failure.map(|(_, message)| message), duration, now);
            }
            // A reclaimSandbox machine ends no other way.
            _ => self.conclude(index, RecordOutcome::Error, None, duration, now),
        }
    }

    /// Emits one of record `index`'s effects under our own id.
    fn forward(&mut self, index: usize, own: EffectId, effect: Effect) {
        let Some(active) = self.active.get_mut(&index) else { return };
        let effect = match effect {
            Effect::Cancel { target } => {
                let target = active.ours(target).unwrap_or_default();
                if let Some(destroy) = self.destroys.remove(&target) {
                    let timeout = self.input.destroy_timeout_ms.unwrap_or_default();
                    active.destroy_error = Some(messages::destroy_timeout_message(&destroy.sandbox_id, timeout));
                    self.cancelled.insert(target);
                    self.routes.remove(&target);
                    self.in_flight[destroy.provider] -= 1;
                    self.waiting_to_release.push(destroy.provider);
                }
                Effect::Cancel { target }
            }
            Effect::Log(LogLine { level, message, meta }) => {
                let meta = meta
                    .into_iter()
                    .map(|(key, value)| match value {
                        MetaValue::HostError(own) => (key, MetaValue::HostError(active.ours(own).unwrap_or_default())),
                        value => (key, value),
                    })
                    .collect();
                Effect::Log(LogLine { level, message, meta })
            }
            other => other,
        };
        let destroy = match &effect {
            Effect::Destroy { provider, provider_sandbox_id, .. } => {
                Some((*provider as usize, provider_sandbox_id.clone()))
            }
            _ => None,
        };
        let is_cancel = matches!(effect, Effect::Cancel { .. });
        let ours = self.out.push(effect);
        active.ids.push((own, ours));
        if !is_cancel {
            self.routes.insert(ours, (index, own));
        }
        if let Some((provider, sandbox_id)) = destroy {
            self.in_flight[provider] += 1;
            self.destroys.insert(ours, InFlightDestroy { record: index, provider, sandbox_id });
        }
    }

    /// Issues record `index`'s outcome write, making it finishing: the one
    /// place a record leaves its concurrency slot before it ends.
    fn finish_with(&mut self, index: usize, own: EffectId, write: Effect) {
        let Some(active) = self.active.get_mut(&index) else { return };
        active.finishing = true;
        self.finishing += 1;
        self.forward(index, own, write);
    }

    /// Issues held outcome writes while fewer than `concurrency` are in
    /// flight. Neither the budget nor a stop holds them back: their destroy
    /// ran, and the reference deletes the record whatever it did.
    fn release_writes(&mut self) {
        while self.finishing < self.concurrency() {
            let Some(index) = self.writes_waiting.pop_front() else { return };
            let Some((own, write)) = self.active.get_mut(&index).and_then(|active| active.held.take()) else {
                continue;
            };
            self.finish_with(index, own, write);
        }
    }

    /// Starts held destroys of `provider` while it has free slots.
    fn release(&mut self, provider: usize, now: Millis) {
        while self.in_flight[provider] < self.per_provider() {
            let Some(index) = self.waiting[provider].pop_front() else { return };
            if !self.may_start(now) {
                self.waiting[provider].push_front(index);
                return self.defer_rest(now);
            }
            let Some(active) = self.active.get_mut(&index) else { continue };
            let Some((own, mut effect)) = active.held.take() else { continue };
            if let Effect::Destroy { deadline, .. } = &mut effect {
                *deadline = active.machine.restart_destroy_clock(now);
            }
            self.forward(index, own, effect);
        }
    }

    fn conclude(&mut self, index: usize, outcome: RecordOutcome, error: Option<String>, duration_ms: u64, now: Millis) {
        let (run_id, sandbox_key) = self.input.records[index].clone();
        self.counts.add(outcome);
        self.concluded += 1;
        if self.input.progress {
            let event = ProgressEvent::Record(RecordProgress {
                done: self.concluded as u64,
                total: self.input.records.len() as u64,
                run_id: run_id.clone(),
                sandbox_key: sandbox_key.clone(),
                outcome,
                elapsed_ms: now.saturating_sub(self.started_at),
            });
            self.out.push(Effect::Progress(event.to_json()));
        }
        self.reports[index] = Some(RecordReport { run_id, sandbox_key, outcome, error, duration_ms });
    }

    /// Log `id` threw in the driver, which then started nothing after it in
    /// that batch: the throwing record's later effects are forgotten (it
    /// rejects, as the reference's reclaim does), everyone else's are
    /// emitted again under the same ids, in their order.
    fn log_threw(&mut self, id: EffectId, record: usize) {
        let Some(at) =
            self.after_log.iter().position(|(logged, effect)| *logged == id && matches!(effect, Effect::Log(_)))
        else {
            return;
        };
        let unstarted = self.after_log.split_off(at + 1);
        self.after_log.clear();
        for (ours, effect) in unstarted {
            match self.routes.get(&ours) {
                Some((owner, _)) if *owner == record => {
                    self.routes.remove(&ours);
                    if let Some(destroy) = self.destroys.remove(&ours) {
                        self.in_flight[destroy.provider] -= 1;
                        self.waiting_to_release.push(destroy.provider);
                    }
                }
                _ => self.out.requeue(ours, effect),
            }
        }
    }

    /// After any step: release provider slots freed by cancels, writes
    /// waiting for a finishing slot, then start more.
    fn settle(&mut self, now: Millis) {
        while let Some(provider) = self.waiting_to_release.pop() {
            self.release(provider, now);
        }
        self.release_writes();
        self.fill(now);
    }
}

impl Flow for ReclaimAll {
    fn poll_effect(&mut self) -> Option<(EffectId, Effect)> {
        let next = self.out.poll_effect();
        match &next {
            None => self.batch_ended = true,
            Some((id, effect)) => {
                if std::mem::take(&mut self.batch_ended) {
                    self.after_log.clear();
                }
                // Kept only from a batch's first log on: batches without one cost nothing.
                if !self.after_log.is_empty() || matches!(effect, Effect::Log(_)) {
                    self.after_log.push((*id, effect.clone()));
                }
            }
        }
        next
    }

    fn complete(&mut self, id: EffectId, completion: Completion, now: Millis) -> Result<(), Misuse> {
        let Some((index, own)) = self.routes.remove(&id) else {
            return if self.cancelled.remove(&id) { Ok(()) } else { Err(Misuse(messages::MISUSE_UNKNOWN_EFFECT)) };
        };
        let destroy = self.destroys.remove(&id);
        if let Some(destroy) = &destroy {
            self.in_flight[destroy.provider] -= 1;
            self.waiting_to_release.push(destroy.provider);
            debug_assert_eq!(destroy.record, index);
        }
        if matches!(completion, Completion::Failed { .. }) {
            self.log_threw(id, index);
        }
        if let Some(active) = self.active.get_mut(&index) {
            if let Completion::Failed { message } = &completion {
                active.failures.push((own, message.clone()));
                if destroy.is_some() {
                    active.destroy_error = Some(message.clone());
                }
            }
            active.machine.complete(own, completion, now)?;
            self.pump(index, now);
        }
        self.settle(now);
        Ok(())
    }

    fn poll_timeout(&self) -> Option<Millis> {
        self.active.values().filter_map(|active| active.machine.poll_timeout()).min()
    }

    fn handle_timeout(&mut self, now: Millis) {
        let due: Vec<usize> = self
            .active
            .iter()
            .filter(|(_, active)| active.machine.poll_timeout().is_some_and(|at| at <= now))
            .map(|(index, _)| *index)
            .collect();
        for index in due {
            if let Some(active) = self.active.get_mut(&index) {
                active.machine.handle_timeout(now);
            }
            self.pump(index, now);
        }
        self.settle(now);
    }

    fn poll_done(&mut self) -> Option<Ending> {
        self.out.poll_done()
    }

    fn stop(&mut self, now: Millis) {
        self.stopped = true;
        self.settle(now);
    }
}
