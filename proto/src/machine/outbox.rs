//! What every machine shares: numbering effects, queueing them in order,
//! and holding the ending until the effects before it have been polled.

use std::collections::VecDeque;

use crate::machine::effects::{Effect, EffectId, Ending, LogLine};

#[derive(Debug, Default)]
pub(crate) struct Outbox {
    last_id: EffectId,
    queue: VecDeque<(EffectId, Effect)>,
    ending: Option<Ending>,
    /// Logs emitted: a driver completes one only when the logger threw.
    logs: Vec<EffectId>,
}

impl Outbox {
    /// Queues `effect` under a fresh id.
    pub fn push(&mut self, effect: Effect) -> EffectId {
        self.last_id += 1;
        if matches!(effect, Effect::Log(_)) {
            self.logs.push(self.last_id);
        }
        self.queue.push_back((self.last_id, effect));
        self.last_id
    }

    /// Queues again, under its own id, an effect a driver never started.
    pub fn requeue(&mut self, id: EffectId, effect: Effect) {
        self.queue.push_back((id, effect));
    }

    pub fn log(&mut self, line: LogLine) {
        self.push(Effect::Log(line));
    }

    /// Ends the flow once the queued effects are polled. The first ending wins.
    pub fn finish(&mut self, ending: Ending) {
        self.ending.get_or_insert(ending);
    }

    pub fn poll_effect(&mut self) -> Option<(EffectId, Effect)> {
        self.queue.pop_front()
    }

    pub fn poll_done(&mut self) -> Option<Ending> {
        if self.queue.is_empty() {
            self.ending.take()
        } else {
            None
        }
    }

    /// A logger threw: like the reference's unguarded logger call, the flow
    /// rejects with that very error, and nothing queued after it starts.
    /// Returns whether `id` was a log.
    pub fn log_threw(&mut self, id: EffectId) -> bool {
        if !self.logs.contains(&id) {
            return false;
        }
        self.queue.clear();
        self.ending = Some(Ending::HostError(id));
        true
    }
}
