//! Runs a future that completes without waiting, such as every method of the
//! core's in-memory store (a mutex, no I/O), from synchronous code.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use pyo3::exceptions::PyRuntimeError;
use pyo3::PyResult;

/// Polls `future` once; a future that would wait is a bug in the caller.
pub fn ready<F: Future>(future: F) -> PyResult<F::Output> {
    let mut future = pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => Ok(output),
        Poll::Pending => Err(PyRuntimeError::new_err("sandbox_reclaim: an in-memory store operation did not complete")),
    }
}
