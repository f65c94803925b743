//! The one list of hosted vendors. Each vendor is one module beside this
//! file (its row, [`VendorSpec`], with the options only it takes; its typed
//! config; its wire entry or its own provider) and one line below. From the
//! list come [`HostedVendor`], what every host and the command build a
//! provider with ([`build_hosted`]), the options each binding reads, the
//! command's flags and sections, and, through `scripts/gen_declarations.py`
//! (which reads this list and each module's `SPEC`), the TypeScript and
//! Python declarations and README's vendor table.

use crate::contract::errors::ProviderError;
use crate::options::provider::{HostedSettings, VendorSpec};
use crate::options::Name;
use crate::providers::HostedSandboxProvider;

/// A provider from settings: each vendor module's `build`.
type Build = fn(HostedSettings) -> Result<Box<dyn HostedSandboxProvider>, ProviderError>;

/// One line a vendor: its variant and its module (which has `SPEC` and `build`).
macro_rules! vendors {
    ($($variant:ident => $module:ident,)*) => {
        /// A hosted vendor (one per module of `core/src/providers/hosted/`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum HostedVendor {
            $($variant,)*
        }

        /// Every hosted vendor's row, in the command's order.
        pub const VENDORS: &[&VendorSpec] = &[$(&super::$module::SPEC,)*];

        impl HostedVendor {
            /// Its row and its builder.
            const fn entry(self) -> (&'static VendorSpec, Build) {
                match self {
                    $(Self::$variant => (&super::$module::SPEC, super::$module::build),)*
                }
            }

            /// Every vendor, in [`VENDORS`]' order.
            pub fn all() -> impl Iterator<Item = Self> {
                [$(Self::$variant,)*].into_iter()
            }
        }
    };
}

vendors! {
    E2b => e2b,
    Daytona => daytona,
    Vercel => vercel,
    Sprites => sprites,
    Runloop => runloop,
    Blaxel => blaxel,
    Modal => modal,
    Kubernetes => kubernetes,
    UpstashBox => upstash_box,
    Boxd => boxd,
    Railway => railway,
}

impl HostedVendor {
    /// Its row (in its module).
    pub const fn spec(self) -> &'static VendorSpec {
        self.entry().0
    }

    /// Every vendor's key, in [`VENDORS`]' order.
    pub fn keys() -> Vec<&'static str> {
        VENDORS.iter().map(|spec| spec.key).collect()
    }

    /// Parses the vendor by its key (`e2b`, `sprites`, ...).
    pub fn parse(vendor: &str) -> Option<Self> {
        Self::all().find(|known| known.spec().key == vendor)
    }

    /// The options the vendor's provider takes, in the order they are checked.
    pub fn names(self) -> Vec<Name> {
        self.spec().names()
    }

    /// Whether the vendor's provider takes option `name` at all.
    pub fn takes(self, name: Name) -> bool {
        self.spec().takes(name)
    }

    /// Whether the vendor's listing takes a page size (Modal's does not).
    pub const fn takes_page_size(self) -> bool {
        self.spec().takes_page_size()
    }

    /// The vendor's credential variables as a text for messages and docs.
    pub fn credential_doc(self) -> String {
        self.spec().credential_doc()
    }

    /// The provider name instance records carry unless told.
    pub const fn default_name(self) -> &'static str {
        self.spec().key
    }

    /// The largest listing page the vendor serves.
    pub const fn max_page_size(self) -> u32 {
        self.spec().max_page_size
    }

    /// Sandboxes per listing page unless told.
    pub const fn default_page_size(self) -> u32 {
        self.spec().default_page_size
    }

    /// What this vendor's provider uses when told nothing.
    pub fn defaults(self) -> HostedSettings {
        HostedSettings::defaults(self.spec())
    }
}

/// The row, for [`HostedSettings::defaults`] and `from_host`.
impl From<HostedVendor> for &'static VendorSpec {
    fn from(vendor: HostedVendor) -> Self {
        vendor.spec()
    }
}

/// A provider for `vendor` from a host's or the command's settings: the one
/// place a vendor becomes its provider. Sends nothing.
pub fn build_hosted(
    vendor: HostedVendor,
    settings: HostedSettings,
) -> Result<Box<dyn HostedSandboxProvider>, ProviderError> {
    (vendor.entry().1)(settings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::provider::HostedSettings;
    use crate::options::{Dialect, HostOptions};

    #[test]
    fn every_vendor_has_one_row_and_one_module() {
        for (index, vendor) in HostedVendor::all().enumerate() {
            let spec = vendor.spec();
            assert_eq!(spec, VENDORS[index], "{}", spec.key);
            assert_eq!(HostedVendor::parse(spec.key), Some(vendor));
            assert!(VENDORS[..index].iter().all(|other| other.key != spec.key && other.class != spec.class));
            let sized_by_vendor = spec.max_page_size == 0 && spec.default_page_size == 0;
            assert!(sized_by_vendor || (1..=spec.max_page_size).contains(&spec.default_page_size), "{}", spec.key);
            assert!(!spec.credential_variables.is_empty(), "{}", spec.key);
            assert_eq!(HostedSettings::defaults(spec).name, spec.key);
        }
        assert_eq!(HostedVendor::all().count(), VENDORS.len());
    }

    #[test]
    fn each_vendor_reads_its_own_options_and_no_others() {
        let blaxel = HostOptions::parse(r#"{"workspace": "ws1", "kind": "Pod"}"#, Dialect::Node).unwrap();
        let given = HostedSettings::from_host(HostedVendor::Blaxel.spec(), &blaxel).unwrap();
        assert_eq!(given.option(super::super::blaxel::WORKSPACE), Some("ws1"));
        assert_eq!(given.option(super::super::kubernetes::KIND), None, "only Kubernetes reads a kind");
        let modal: Vec<&str> = HostedVendor::Modal.names().iter().map(|name| name.node).collect();
        assert_eq!(&modal[..6], ["name", "owner", "tokenId", "tokenSecret", "appId", "environment"]);
        let kubernetes: Vec<&str> = HostedVendor::Kubernetes.names().iter().map(|name| name.python).collect();
        assert_eq!(&kubernetes[..7], ["name", "owner", "kubeconfig", "context", "namespace", "kind", "api_url"]);
        assert_eq!(HostedVendor::Modal.credential_doc(), "MODAL_TOKEN_ID + MODAL_TOKEN_SECRET");
        assert_eq!(HostedVendor::Sprites.credential_doc(), "SPRITES_API_KEY, else SPRITE_TOKEN");
        assert!(!HostedVendor::UpstashBox.takes_page_size() && HostedVendor::Railway.takes_page_size());
    }
}
