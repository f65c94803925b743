//! Tokio futures as asyncio awaitables, safe at interpreter exit.
//!
//! Why not pyo3-async-runtimes' `future_into_py`: it completes the asyncio
//! future from a tokio thread that takes the GIL, and when the main thread
//! wins the GIL midway and finalizes the interpreter (a script returning from
//! `asyncio.run`), that thread's next GIL acquisition kills it mid-Rust-frame:
//! a crash at exit in roughly one run in ten. Here every completion passes a
//! gate that `shutdown` (registered with `atexit`, which runs while threads
//! may still take the GIL) closes: it waits for completions in progress and
//! turns later ones into no-ops. Everything touching Python (result and
//! error conversion) happens inside the gated completion.
//!
//! Cancelling the asyncio future drops the Rust future at its next poll.

use std::future::Future;
use std::sync::{Mutex, OnceLock, PoisonError, RwLock};

use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyCFunction;
use sandbox_reclaim::runtime::begun::Begun;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

use crate::hints::Awaitable;

/// `true` once the interpreter is exiting: completions no longer touch Python.
static EXITING: RwLock<bool> = RwLock::new(false);

/// The runtime every store and provider future runs on.
pub fn runtime() -> PyResult<&'static Runtime> {
    static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_name("sandbox-reclaim")
                .build()
                .map_err(|error| error.to_string())
        })
        .as_ref()
        .map_err(|error| {
            PyRuntimeError::new_err(format!("sandbox_reclaim: could not start its tokio runtime: {error}"))
        })
}

/// Runs `future` on the runtime and returns an asyncio future (of the running
/// loop) resolved with `convert(py, output)`, under the GIL. `H`: what the
/// stub declares it resolves to (the callers' return types say).
pub fn awaitable<'py, H, F, C>(py: Python<'py>, future: F, convert: C) -> PyResult<Awaitable<'py, H>>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    C: FnOnce(Python<'_>, F::Output) -> PyResult<Py<PyAny>> + Send + 'static,
{
    let runtime = runtime()?;
    // Issued in call order (a store write), whatever tokio's task order.
    let future = begin(runtime, future);
    // Raises "no running event loop" when called outside a coroutine.
    let event_loop = py.import(intern!(py, "asyncio"))?.call_method0(intern!(py, "get_running_loop"))?;
    let asyncio_future = event_loop.call_method0(intern!(py, "create_future"))?;
    let (abandon, abandoned) = oneshot::channel::<()>();
    let on_done = AbandonOnDone { abandon: Mutex::new(Some(abandon)) };
    asyncio_future.call_method1(intern!(py, "add_done_callback"), (on_done,))?;
    let target = asyncio_future.clone().unbind();
    #[cfg(unix)]
    if let Some(queue) = wakeups::queue_of(py, &event_loop)? {
        // The completion waits in the loop's queue and the loop converts and
        // settles it itself: no tokio thread ever takes the GIL.
        runtime.spawn(async move {
            let Some(output) = finish(future, abandoned).await else { return };
            queue.push(target, Box::new(move |py| convert(py, output)));
        });
        return Ok(Awaitable::new(asyncio_future));
    }
    let event_loop = event_loop.unbind();
    runtime.spawn(async move {
        // None: cancelled (or otherwise done) on the Python side; stop here.
        let Some(output) = finish(future, abandoned).await else { return };
        let complete = move || complete(event_loop, target, output, convert);
        // Taking the GIL may block: not on a runtime worker.
        drop(tokio::task::spawn_blocking(complete));
    });
    Ok(Awaitable::new(asyncio_future))
}

fn complete<T, C>(event_loop: Py<PyAny>, target: Py<PyAny>, output: T, convert: C)
where
    C: FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>>,
{
    let exiting = EXITING.read().unwrap_or_else(PoisonError::into_inner);
    if *exiting {
        // No GIL may be taken any more; the references leak with the process.
        std::mem::forget((event_loop, target));
        return;
    }
    Python::attach(|py| {
        let (succeeded, value) = match convert(py, output) {
            Ok(value) => (true, value),
            Err(error) => (false, error.into_value(py).into_any()),
        };
        let scheduled = settle_function(py).and_then(|settle| {
            event_loop.call_method1(py, intern!(py, "call_soon_threadsafe"), (settle, &target, succeeded, value))
        });
        // The loop is closed: nobody awaits the result any more.
        if let Err(error) = scheduled {
            error.write_unraisable(py, Some(target.bind(py)));
        }
    });
    drop(exiting);
}

/// `settle(future, succeeded, value)`, run on the loop: resolves `future`
/// unless it was cancelled meanwhile.
fn settle_function(py: Python<'_>) -> PyResult<&Py<PyCFunction>> {
    static SETTLE: PyOnceLock<Py<PyCFunction>> = PyOnceLock::new();
    SETTLE.get_or_try_init(py, || {
        let settle = PyCFunction::new_closure(py, None, None, |args, _kwargs| -> PyResult<()> {
            let (future, succeeded, value): (Bound<'_, PyAny>, bool, Bound<'_, PyAny>) = args.extract()?;
            settle(&future, succeeded, value)
        })?;
        Ok(settle.unbind())
    })
}

/// Resolves `future` with `value` (or fails it), unless it is done already (cancelled).
fn settle(future: &Bound<'_, PyAny>, succeeded: bool, value: Bound<'_, PyAny>) -> PyResult<()> {
    let py = future.py();
    if future.call_method0(intern!(py, "done"))?.is_truthy()? {
        return Ok(());
    }
    let method = if succeeded { intern!(py, "set_result") } else { intern!(py, "set_exception") };
    future.call_method1(method, (value,))?;
    Ok(())
}

/// Completions handed to the event loop without the GIL: each loop gets a
/// queue and a socket pair whose read end it watches (`loop.add_reader`).
/// A tokio task pushes its output and, when the queue was empty, writes one
/// byte; the loop's reader drains the queue, converting and settling each
/// output on the loop's own thread. So completions cost no thread hop and no
/// GIL hand-over per operation (a fleet pass's store calls arrive in bursts),
/// and nothing at interpreter exit can find a tokio thread holding the GIL.
#[cfg(unix)]
mod wakeups {
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    use std::sync::{Arc, Mutex, PoisonError};

    use pyo3::intern;
    use pyo3::prelude::*;
    use pyo3::types::PyCFunction;

    /// Converts a finished output, under the GIL, on the loop's thread.
    pub type Convert = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

    /// One event loop's waiting completions.
    pub struct Queue {
        pending: Mutex<Vec<(Py<PyAny>, Convert)>>,
        wake: UnixStream,
    }

    impl Queue {
        /// Called on a tokio thread: queues the completion; wakes the loop if it is not already woken.
        pub fn push(&self, target: Py<PyAny>, convert: Convert) {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            let was_empty = pending.is_empty();
            pending.push((target, convert));
            drop(pending);
            if was_empty {
                // WouldBlock: the socket is full of wake-ups already; a
                // closed loop: nobody awaits the result any more.
                let _ = (&self.wake).write(&[1]);
            }
        }

        /// On the loop: reads the wake-ups, then settles everything queued.
        fn drain(&self, py: Python<'_>, read: &UnixStream) {
            let mut bytes = [0u8; 256];
            while matches!((&*read).read(&mut bytes), Ok(count) if count > 0) {}
            let pending = std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner));
            for (target, convert) in pending {
                let (succeeded, value) = match convert(py) {
                    Ok(value) => (true, value),
                    Err(error) => (false, error.into_value(py).into_any()),
                };
                let target = target.bind(py);
                if let Err(error) = super::settle(target, succeeded, value.into_bound(py)) {
                    error.write_unraisable(py, Some(target));
                }
            }
        }
    }

    /// The loops with a queue (a closed loop's entry goes when the next one registers).
    static QUEUES: Mutex<Vec<(Py<PyAny>, Arc<Queue>)>> = Mutex::new(Vec::new());

    /// `event_loop`'s queue, registering its reader on first use; `None` when
    /// the loop cannot watch a socket (the caller then settles through
    /// `call_soon_threadsafe`).
    pub fn queue_of(py: Python<'_>, event_loop: &Bound<'_, PyAny>) -> PyResult<Option<Arc<Queue>>> {
        let mut queues = QUEUES.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, queue)) = queues.iter().find(|(known, _)| known.bind(py).is(event_loop)) {
            return Ok(Some(queue.clone()));
        }
        let mut open = Vec::with_capacity(queues.len());
        for (known, queue) in queues.drain(..) {
            if !known.bind(py).call_method0(intern!(py, "is_closed"))?.is_truthy()? {
                open.push((known, queue));
            }
        }
        *queues = open;
        let Ok((read, wake)) = UnixStream::pair() else { return Ok(None) };
        if read.set_nonblocking(true).is_err() || wake.set_nonblocking(true).is_err() {
            return Ok(None);
        }
        let queue = Arc::new(Queue { pending: Mutex::new(Vec::new()), wake });
        let fd = read.as_raw_fd();
        let drained = queue.clone();
        let reader = PyCFunction::new_closure(py, None, None, move |args, _kwargs| -> PyResult<()> {
            drained.drain(args.py(), &read);
            Ok(())
        })?;
        if event_loop.call_method1(intern!(py, "add_reader"), (fd, reader)).is_err() {
            return Ok(None);
        }
        queues.push((event_loop.clone().unbind(), queue.clone()));
        Ok(Some(queue))
    }
}

/// The asyncio future's done callback: tells the tokio task to stop if it
/// has not finished (the future was cancelled).
#[pyclass(module = "sandbox_reclaim._native", frozen)]
struct AbandonOnDone {
    abandon: Mutex<Option<oneshot::Sender<()>>>,
}

#[pymethods]
impl AbandonOnDone {
    fn __call__(&self, _future: &Bound<'_, PyAny>) {
        let sender = self.abandon.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(sender) = sender {
            let _ = sender.send(());
        }
    }
}

/// Registered with `atexit` by the package: waits (without the GIL) for
/// completions in progress, then makes later ones skip Python entirely.
#[pyfunction]
#[pyo3(name = "_shutdown")]
pub fn shutdown(py: Python<'_>) {
    py.detach(|| *EXITING.write().unwrap_or_else(PoisonError::into_inner) = true);
}

/// `future` polled once as the call is made ([`Begun`]), in the runtime's
/// context; `finish` ends it, or drops it when `abandoned` fires first.
fn begin<F: Future>(runtime: &Runtime, future: F) -> Begun<F> {
    let _context = runtime.enter();
    Begun::now(future)
}

/// Its output, or None when `abandoned` fires first (dropping the future).
async fn finish<F: Future>(begun: Begun<F>, abandoned: oneshot::Receiver<()>) -> Option<F::Output> {
    match begun {
        Begun::Ready(output) => Some(output),
        Begun::Pending(future) => tokio::select! {
            output = future => Some(output),
            _ = abandoned => None,
        },
    }
}
