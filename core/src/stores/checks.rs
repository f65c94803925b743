//! What every store checks and computes alike (in memory, SQLite,
//! PostgreSQL): which keys and names are storable, where a lease ends, and
//! how the bindings call an in-memory store without a runtime.

use crate::contract::errors::StoreError;
use crate::model::ledger::NewLeak;
use crate::model::InvalidRecord;

/// Runs a future that completes on its first poll, which every in-memory
/// store future does (they only take a mutex), without a runtime: how the
/// bindings call this store synchronously. `None` if it was still pending.
pub fn now_or_never<T>(future: impl std::future::Future<Output = T>) -> Option<T> {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(value) => Some(value),
        std::task::Poll::Pending => None,
    }
}

/// A lease's end: `now + lease_ms`, the lease capped (at ~35,000 years) as
/// the SQL stores cap it, so the sum cannot overflow.
pub(crate) fn lease_end(now: u64, lease_ms: u64) -> u64 {
    now.saturating_add(lease_ms.min(1 << 50))
}

/// Checks what a ledger write needs before anything is written: the key and
/// the sandbox identity must be storable.
pub(crate) fn validate_leak(key: &str, leak: &NewLeak) -> Result<(), StoreError> {
    validate_key(key)?;
    validate_key(&leak.key)?;
    validate_name("provider", &leak.provider)?;
    validate_name("providerSandboxId", &leak.provider_sandbox_id)
}

/// Checks a name a store indexes (provider, sandbox id, sweep holder): a
/// non-empty string without NUL.
pub(crate) fn validate_name(field: &'static str, value: &str) -> Result<(), StoreError> {
    if value.is_empty() || value.contains('\0') {
        return Err(InvalidRecord { field, reason: "must be a non-empty string without NUL" }.into());
    }
    Ok(())
}

/// Checks a key the way every store does.
pub fn validate_key(key: &str) -> Result<(), StoreError> {
    if key.is_empty() {
        return Err(StoreError::InvalidKey("must be a non-empty string"));
    }
    if key.contains('\0') {
        return Err(StoreError::InvalidKey("must not contain NUL characters"));
    }
    Ok(())
}
