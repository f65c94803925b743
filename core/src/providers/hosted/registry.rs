//! The one place a vendor key becomes its entry: what the bindings and the
//! command build a provider with.

use super::{
    blaxel, daytona, e2b, railway, runloop, sprites, upstash_box, vercel, HostedConfig, HostedProvider, Vendor,
};
use crate::contract::errors::ProviderError;
use crate::options::provider::{HostedSettings, HostedVendor};
use crate::providers::HostedSandboxProvider;

/// A provider for `vendor` from a host's or the command's settings: the one
/// place a vendor key becomes its entry. Sends nothing.
pub fn build_hosted(
    vendor: HostedVendor,
    settings: HostedSettings,
) -> Result<Box<dyn HostedSandboxProvider>, ProviderError> {
    fn boxed<V: Vendor>(settings: HostedSettings) -> Result<Box<dyn HostedSandboxProvider>, ProviderError> {
        Ok(Box::new(HostedProvider::<V>::new(HostedConfig::from(settings))?))
    }
    match vendor {
        HostedVendor::E2b => boxed::<e2b::E2b>(settings),
        HostedVendor::Daytona => boxed::<daytona::Daytona>(settings),
        HostedVendor::Vercel => boxed::<vercel::Vercel>(settings),
        HostedVendor::Sprites => boxed::<sprites::Sprites>(settings),
        HostedVendor::Runloop => boxed::<runloop::Runloop>(settings),
        HostedVendor::Blaxel => boxed::<blaxel::Blaxel>(settings),
        // Modal speaks gRPC: its own provider beside the engine.
        #[cfg(feature = "modal")]
        HostedVendor::Modal => {
            Ok(Box::new(super::modal::ModalProvider::new(super::modal::ModalConfig::from(settings))?))
        }
        #[cfg(not(feature = "modal"))]
        HostedVendor::Modal => Err(ProviderError::backend(super::HostedError::Failed(
            crate::report::messages::hosted_vendor_not_built("Modal", "modal"),
        ))),
        HostedVendor::UpstashBox => boxed::<upstash_box::UpstashBox>(settings),
        // boxd speaks gRPC: its own provider beside the engine, as Modal's is.
        #[cfg(feature = "boxd")]
        HostedVendor::Boxd => Ok(Box::new(super::boxd::BoxdProvider::new(super::boxd::BoxdConfig::from(settings))?)),
        #[cfg(not(feature = "boxd"))]
        HostedVendor::Boxd => Err(ProviderError::backend(super::HostedError::Failed(
            crate::report::messages::hosted_vendor_not_built("boxd", "boxd"),
        ))),
        HostedVendor::Railway => boxed::<railway::Railway>(settings),
        #[cfg(feature = "kubernetes")]
        HostedVendor::Kubernetes => Ok(Box::new(super::kubernetes::KubernetesProvider::new(
            super::kubernetes::KubernetesConfig::from(settings),
        )?)),
        #[cfg(not(feature = "kubernetes"))]
        HostedVendor::Kubernetes => Err(ProviderError::backend(super::HostedError::Failed(
            crate::report::messages::hosted_vendor_not_built("Kubernetes", "kubernetes"),
        ))),
    }
}
