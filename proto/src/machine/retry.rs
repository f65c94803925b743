//! `retryLeaks`: destroys the sandboxes a store's leak ledger remembers.
//!
//! The machine claims up to `limit` of the provider's entries under a lease,
//! then works through them one at a time: destroy, then resolve the entry
//! (success) or record the failure (attempts + 1, newest error kept).
//!
//! **A claim protects a destroy only while its lease holds.** Another
//! retrier may take an entry whose lease ran out, so the machine checks the
//! lease before each destroy (measured from when the claim was *asked*, the
//! earliest the store can have started it) and stops when it has run out;
//! a destroy still running then is cancelled and its entry left untouched
//! for whoever holds it next. The last tenth of the lease is kept for the
//! store write that follows a destroy (resolving the entry), so a sandbox
//! destroyed just in time is not claimed again before its entry is gone.
//!
//! **The store fences the writes.** Each claim carries a generation, and a
//! resolve or failure record lands only while it still holds; when the
//! write is late (a slow store, a paused process) and another retrier has
//! taken the entry meanwhile, the store refuses it and the summary counts
//! it in `lease_lost` instead of overwriting the new holder's claim.

use crate::machine::effects::{Completion, Effect, EffectId, Ending, Flow, HostRef, Millis, Misuse, Output};
use crate::machine::outbox::Outbox;
use crate::model::ledger::RetrySummary;
use crate::report::messages;

/// What a leak retry decides on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryInput {
    pub provider_name: String,
    /// Most entries claimed in one call.
    pub limit: u32,
    /// How long a claim holds, in milliseconds (at least 1).
    pub lease_ms: u64,
    /// Cancel a destroy that has not settled after this long.
    pub destroy_timeout_ms: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Claiming(EffectId),
    Destroying { effect: EffectId, deadline: Millis, lease_ends_first: bool },
    Recording { effect: EffectId, destroyed: bool },
    Finished,
}

/// The leak-retry machine. See the [module docs](self).
#[derive(Debug)]
pub struct Retry {
    input: RetryInput,
    out: Outbox,
    phase: Phase,
    claim: EffectId,
    /// When no destroy may run any more: the lease's end less its last tenth.
    lease_ends: Millis,
    sandbox_ids: Vec<String>,
    next: usize,
    summary: RetrySummary,
    cancelled: Vec<EffectId>,
}

impl Retry {
    pub fn new(input: RetryInput, now: Millis) -> Self {
        let mut out = Outbox::default();
        let claim = out.push(Effect::ClaimLeaks {
            provider: input.provider_name.clone(),
            limit: input.limit,
            lease_ms: input.lease_ms,
        });
        let lease_ends = now.saturating_add(input.lease_ms - input.lease_ms / 10);
        Self {
            input,
            out,
            phase: Phase::Claiming(claim),
            claim,
            lease_ends,
            sandbox_ids: Vec::new(),
            next: 0,
            summary: RetrySummary::default(),
            cancelled: Vec::new(),
        }
    }

    fn entry(&self) -> HostRef {
        HostRef { effect: self.claim, index: self.next as u32 }
    }

    /// Starts the next entry's destroy while the lease holds; else ends.
    fn next_entry(&mut self, now: Millis) {
        let Some(sandbox_id) = self.sandbox_ids.get(self.next).cloned() else { return self.finish() };
        if now >= self.lease_ends {
            // The rest may be another retrier's by now.
            return self.finish();
        }
        let timeout_deadline = self.input.destroy_timeout_ms.map(|timeout| now.saturating_add(timeout));
        let deadline = timeout_deadline.map_or(self.lease_ends, |at| at.min(self.lease_ends));
        let lease_ends_first = timeout_deadline.is_none_or(|at| at > self.lease_ends);
        self.summary.retried += 1;
        let effect =
            self.out.push(Effect::Destroy { provider: 0, provider_sandbox_id: sandbox_id, deadline: Some(deadline) });
        self.phase = Phase::Destroying { effect, deadline, lease_ends_first };
    }

    fn record(&mut self, failure: Option<String>, now: Millis) {
        let entry = self.entry();
        let (effect, destroyed) = match failure {
            None => (self.out.push(Effect::ResolveLeak { entry }), true),
            Some(message) => (self.out.push(Effect::RecordRetryFailure { entry, message, failed_at: now }), false),
        };
        self.phase = Phase::Recording { effect, destroyed };
    }

    fn finish(&mut self) {
        self.phase = Phase::Finished;
        self.out.finish(Ending::Resolved(Output::Retry(self.summary)));
    }

    fn awaited(&self) -> Option<EffectId> {
        match self.phase {
            Phase::Claiming(effect) | Phase::Destroying { effect, .. } | Phase::Recording { effect, .. } => {
                Some(effect)
            }
            Phase::Finished => None,
        }
    }
}

impl Flow for Retry {
    fn poll_effect(&mut self) -> Option<(EffectId, Effect)> {
        self.out.poll_effect()
    }

    fn complete(&mut self, id: EffectId, completion: Completion, now: Millis) -> Result<(), Misuse> {
        if self.awaited() != Some(id) {
            return if self.cancelled.contains(&id) { Ok(()) } else { Err(Misuse(messages::MISUSE_UNKNOWN_EFFECT)) };
        }
        match (self.phase, completion) {
            (Phase::Claiming(_), Completion::Leaks(sandbox_ids)) => {
                self.sandbox_ids = sandbox_ids;
                self.next_entry(now);
            }
            (Phase::Destroying { .. }, Completion::Ok) => self.record(None, now),
            (Phase::Destroying { .. }, Completion::Failed { message }) => self.record(Some(message), now),
            (Phase::Recording { destroyed, .. }, completion @ (Completion::Ok | Completion::Flag(_))) => {
                // The store refused the write: another retrier took the
                // claim after the lease ran out, and the entry is its now.
                if completion == Completion::Flag(false) {
                    self.summary.lease_lost += 1;
                }
                if destroyed {
                    self.summary.destroyed += 1;
                } else {
                    self.summary.still_failing += 1;
                }
                self.next += 1;
                self.next_entry(now);
            }
            // A ledger call failed: propagate its error, as a store's always does.
            (Phase::Claiming(_) | Phase::Recording { .. }, Completion::Failed { .. }) => {
                self.phase = Phase::Finished;
                self.out.finish(Ending::HostError(id));
            }
            _ => return Err(Misuse(messages::MISUSE_WRONG_COMPLETION)),
        }
        Ok(())
    }

    fn poll_timeout(&self) -> Option<Millis> {
        match self.phase {
            Phase::Destroying { deadline, .. } => Some(deadline),
            _ => None,
        }
    }

    fn handle_timeout(&mut self, now: Millis) {
        let Phase::Destroying { effect, deadline, lease_ends_first } = self.phase else { return };
        if now < deadline {
            return;
        }
        self.out.push(Effect::Cancel { target: effect });
        self.cancelled.push(effect);
        if lease_ends_first {
            // The claim lapsed mid-destroy: the entry is no longer ours to record.
            self.summary.still_failing += 1;
            return self.finish();
        }
        let timeout_ms = self.input.destroy_timeout_ms.unwrap_or_default();
        let sandbox_id = &self.sandbox_ids[self.next];
        self.record(Some(messages::destroy_timeout_message(sandbox_id, timeout_ms)), now);
    }

    fn poll_done(&mut self) -> Option<Ending> {
        self.out.poll_done()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a retry of `answers.len()` entries whose destroys succeed and
    /// whose resolves the store answers with `answers`, in order.
    fn retry_with(answers: &[Completion]) -> RetrySummary {
        let input =
            RetryInput { provider_name: "docker".into(), limit: 10, lease_ms: 60_000, destroy_timeout_ms: None };
        let mut flow = Retry::new(input, 0);
        let ids: Vec<String> = (0..answers.len()).map(|n| format!("c{n}")).collect();
        let mut answers = answers.iter().cloned();
        while let Some((id, effect)) = flow.poll_effect() {
            let completion = match effect {
                Effect::ClaimLeaks { .. } => Completion::Leaks(ids.clone()),
                Effect::Destroy { .. } => Completion::Ok,
                Effect::ResolveLeak { .. } => answers.next().unwrap(),
                other => panic!("unexpected {other:?}"),
            };
            flow.complete(id, completion, 1).unwrap();
        }
        match flow.poll_done() {
            Some(Ending::Resolved(Output::Retry(summary))) => summary,
            other => panic!("expected a summary, got {other:?}"),
        }
    }

    #[test]
    fn a_resolve_the_store_refuses_is_counted_as_lease_lost() {
        let summary = retry_with(&[Completion::Flag(true), Completion::Flag(false), Completion::Ok]);
        assert_eq!(summary, RetrySummary { retried: 3, destroyed: 3, still_failing: 0, lease_lost: 1 });
    }
}
