//! Polls a future that a native store completes without waiting.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

/// A native store's future was still pending after one poll.
#[derive(Debug, Clone, Copy)]
pub struct NotReady;

impl std::fmt::Display for NotReady {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("native store answered asynchronously; only immediately-ready stores run inside a native step")
    }
}

/// Runs `future` to completion if it completes on its first poll. The
/// in-memory store never waits (its futures only take a mutex), so this needs
/// no runtime and costs one poll.
pub fn now_or_never<T>(future: impl Future<Output = T>) -> Result<T, NotReady> {
    let mut future = pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(value) => Ok(value),
        Poll::Pending => Err(NotReady),
    }
}
