//! What a provider is to every flow: a name and a `destroy`, and for the
//! orphan sweep a listing and an owner.

use async_trait::async_trait;

use crate::contract::errors::ProviderError;
use crate::model::fleet::ListedSandbox;

/// The provider side of a reclaim: a name and a `destroy`.
///
/// `name` is compared exactly (case-sensitive) with the instance record's
/// `provider` before anything is destroyed.
#[async_trait]
pub trait SandboxProvider: Send + Sync {
    /// The name instance records carry in `provider`.
    fn name(&self) -> &str;
    /// Destroys the sandbox with this provider-side id. Should succeed when
    /// the sandbox is already gone. Dropping the future cancels it (deadlines).
    async fn destroy(&self, provider_sandbox_id: &str) -> Result<(), ProviderError>;
    /// Whether [`SandboxProvider::list_sandboxes`] is implemented. A provider
    /// that cannot list gets no orphan sweep (reported `unavailable`), never a guess.
    fn can_list(&self) -> bool {
        false
    }
    /// The sandboxes this provider owns, for the orphan sweep.
    async fn list_sandboxes(&self) -> Result<Vec<ListedSandbox>, ProviderError> {
        Ok(Vec::new())
    }
    /// Whether [`SandboxProvider::lookup_sandboxes`] is implemented: the
    /// sweep then reads by id what the store's registry names and the
    /// listing did not show.
    fn can_lookup(&self) -> bool {
        false
    }
    /// The sandboxes of `ids` that still exist, read by id (the vendor's
    /// get), as a listing shows them; an id left out is gone. An answer it
    /// cannot read fails the whole lookup (the sweep is then `unavailable`).
    async fn lookup_sandboxes(&self, _ids: &[String]) -> Result<Vec<ListedSandbox>, ProviderError> {
        Ok(Vec::new())
    }
    /// The owner namespace its sandboxes carry; the orphan sweep destroys
    /// only sandboxes listed under it. `None`: the pass's `owner` option
    /// (default [`crate::options::defaults::OWNER`]).
    fn owner(&self) -> Option<&str> {
        None
    }
}
