//! What a sandbox carries, set at create, for the sweep to know it as ours
//! and for which key: `ownerLabels(owner, key, vendor)` in every host, in
//! the shape the vendor's create call takes (its row's [`Marks`]), and the
//! owner rule that shape imposes (checked here and when a provider is built).

use serde::Serialize;

use super::HostedVendor;
use crate::options::provider::{Marks, VendorSpec};
use crate::providers::{owner_labels, validate_key, validate_owner, InvalidInput, Labels, LABEL_KEY, LABEL_OWNER};
use crate::report::messages;

/// What to set at create, as the vendor takes it (JSON as hosts see it:
/// an object of labels, an array of strings, or `{labels, annotations}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum OwnerMarks {
    /// Name/value labels: the owner and the key.
    Labels(Labels),
    /// Plain string labels (Sprites' `name=value`, Upstash Box's `sr:<owner>`).
    Strings(Vec<String>),
    /// Kubernetes object metadata: the owner a label, the key an annotation.
    Metadata { labels: Labels, annotations: Labels },
}

/// What a sandbox of `vendor` (its key: `e2b`, `upstash-box`, ...) created
/// for `key` carries so the sweep knows it as `owner`'s. Refused, naming the
/// field: an unknown vendor, a bad owner or key, an owner the vendor's
/// labels cannot hold, and a vendor whose sandboxes carry no labels
/// (`vendor`: Railway's are found through the registry).
pub fn vendor_owner_labels(vendor: &str, owner: &str, key: &str) -> Result<OwnerMarks, InvalidInput> {
    let Some(vendor) = HostedVendor::parse(vendor) else {
        return Err(InvalidInput::new("vendor", messages::owner_labels_vendor(vendor, &HostedVendor::keys())));
    };
    let spec = vendor.spec();
    validate_owner(owner)?;
    validate_key(key)?;
    check_owner(spec, owner)?;
    let one = |name: &str, value: &str| Labels::from([(name.to_owned(), value.to_owned())]);
    Ok(match spec.marks {
        Marks::Labels { .. } => OwnerMarks::Labels(owner_labels(owner, key)?),
        Marks::Pairs { .. } => {
            OwnerMarks::Strings(vec![format!("{LABEL_OWNER}={owner}"), format!("{LABEL_KEY}={key}")])
        }
        Marks::OwnerTag { prefix, .. } => OwnerMarks::Strings(vec![format!("{prefix}{owner}")]),
        Marks::Metadata => OwnerMarks::Metadata { labels: one(LABEL_OWNER, owner), annotations: one(LABEL_KEY, key) },
        Marks::Unlabelled => return Err(InvalidInput::new("vendor", messages::vendor_unlabelled(spec.label))),
    })
}

/// Refuses an owner the vendor's marks cannot hold, naming `owner` (the
/// same rule a provider of that vendor is built with).
pub(crate) fn check_owner(spec: &VendorSpec, owner: &str) -> Result<(), InvalidInput> {
    if spec.marks.owner_fits(owner) {
        return Ok(());
    }
    let reason = match spec.marks {
        Marks::OwnerTag { prefix, max_chars, .. } => {
            messages::hosted_owner_label_unfit(spec.label, max_chars, prefix, max_chars - prefix.len(), owner)
        }
        _ => messages::kubernetes_owner(owner),
    };
    Err(InvalidInput::new("owner", reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marks(vendor: HostedVendor, owner: &str, key: &str) -> serde_json::Value {
        serde_json::to_value(vendor_owner_labels(vendor.spec().key, owner, key).unwrap()).unwrap()
    }

    #[test]
    fn each_vendor_gets_its_own_shape() {
        let labels = serde_json::json!({ LABEL_OWNER: "team-a", LABEL_KEY: "thread-1:sandbox" });
        for vendor in [HostedVendor::E2b, HostedVendor::Daytona, HostedVendor::Modal, HostedVendor::Boxd] {
            assert_eq!(marks(vendor, "team-a", "thread-1:sandbox"), labels, "{vendor:?}");
        }
        assert_eq!(
            marks(HostedVendor::Sprites, "team-a", "0123"),
            serde_json::json!(["io.sandbox-reclaim.owner=team-a", "io.sandbox-reclaim.key=0123"])
        );
        assert_eq!(marks(HostedVendor::UpstashBox, "team-a", "k:1"), serde_json::json!(["sr:team-a"]));
        assert_eq!(
            marks(HostedVendor::Kubernetes, "team-a", "thread:1"),
            serde_json::json!({ "labels": { LABEL_OWNER: "team-a" }, "annotations": { LABEL_KEY: "thread:1" } })
        );
    }

    #[test]
    fn what_a_vendor_cannot_hold_is_refused_naming_the_field() {
        let refused =
            |vendor: HostedVendor, owner, key| vendor_owner_labels(vendor.spec().key, owner, key).unwrap_err();
        assert_eq!(refused(HostedVendor::Railway, "team-a", "k").field, "vendor");
        assert!(refused(HostedVendor::Railway, "team-a", "k").reason.contains("Railway"));
        assert_eq!(refused(HostedVendor::UpstashBox, "an-owner-far-too-long", "k").field, "owner");
        assert_eq!(refused(HostedVendor::UpstashBox, "team a", "k").field, "owner");
        assert_eq!(refused(HostedVendor::Kubernetes, "team:a", "k").field, "owner");
        assert_eq!(refused(HostedVendor::Kubernetes, "-team", "k").field, "owner");
        assert_eq!(refused(HostedVendor::E2b, "team-a", "").field, "key");
        assert_eq!(refused(HostedVendor::E2b, "", "k").field, "owner");
        let unknown = vendor_owner_labels("nimbus", "team-a", "k").unwrap_err();
        assert!(unknown.field == "vendor" && unknown.reason.contains("upstash-box"), "{unknown}");
        // The longest owner Upstash Box holds: 20 less `sr:`.
        assert!(vendor_owner_labels("upstash-box", &"o".repeat(17), "k").is_ok());
        assert!(vendor_owner_labels("upstash-box", &"o".repeat(18), "k").is_err());
        assert!(vendor_owner_labels("kubernetes", &"o".repeat(63), "k").is_ok());
        assert!(vendor_owner_labels("kubernetes", &"o".repeat(64), "k").is_err());
    }
}
