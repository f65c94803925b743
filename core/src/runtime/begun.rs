//! A future polled once as a host's call is made, before any task runs it.
//!
//! Why: a store write is *issued* when its future is first polled (see
//! `stores/ordered.rs`), and the bindings hand each call's future to a tokio
//! task, which the runtime may poll in any order. Polling it once on the
//! caller's thread (inside the runtime's context) issues the writes in the
//! order the host made the calls: a `delete` called before an `upsert` of the
//! same key commits first, and a task cancelled afterwards cannot reorder it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// A future that has been polled once: done already, or still running.
pub enum Begun<F: Future> {
    Ready(F::Output),
    Pending(Pin<Box<F>>),
}

impl<F: Future> Begun<F> {
    /// Polls `future` once now. Call it inside the runtime's context.
    pub fn now(future: F) -> Self {
        let mut future = Box::pin(future);
        // A no-op waker: the task that finishes it polls it again with its own.
        match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(output) => Self::Ready(output),
            Poll::Pending => Self::Pending(future),
        }
    }

    /// Its output, once it has one.
    pub async fn finish(self) -> F::Output {
        match self {
            Self::Ready(output) => output,
            Self::Pending(future) => future.await,
        }
    }
}
