//! What a Kubernetes sweep reads and names: the kinds it sweeps, a
//! sandbox's id (`<namespace>_<name>`), and an object as a listed sandbox.
//! No I/O.

use kube::api::{ApiResource, GroupVersionKind, ObjectMeta};
use kube::core::ListMeta;
use serde::Deserialize;

use crate::model::fleet::ListedSandbox;
use crate::providers::{InvalidInput, LABEL_KEY, LABEL_OWNER};
use crate::report::messages;

/// The kind a provider sweeps: one, never two (our owner label is on the
/// object the user created; agent-sandbox does not copy it to the Sandbox a
/// claim makes, so sweeping both would see one sandbox as two).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `extensions.agents.x-k8s.io/v1beta1` (preferred: deleting the claim
    /// lets its controller tear the Sandbox and its Pod down).
    SandboxClaim,
    /// `agents.x-k8s.io/v1beta1`.
    Sandbox,
    /// Core `v1` Pods.
    Pod,
}

impl Kind {
    /// The option's value (`None`: `SandboxClaim`), case-insensitive.
    pub fn parse(given: Option<&str>) -> Result<Self, InvalidInput> {
        match given.map(str::to_ascii_lowercase).as_deref() {
            None | Some("sandboxclaim") => Ok(Self::SandboxClaim),
            Some("sandbox") => Ok(Self::Sandbox),
            Some("pod") => Ok(Self::Pod),
            Some(_) => Err(InvalidInput::new("kind", messages::kubernetes_kind(given.unwrap_or_default()))),
        }
    }

    /// Its API resource, without discovery (the plural is known).
    pub fn resource(self) -> ApiResource {
        let (group, version, kind, plural) = match self {
            Self::SandboxClaim => ("extensions.agents.x-k8s.io", "v1beta1", "SandboxClaim", "sandboxclaims"),
            Self::Sandbox => ("agents.x-k8s.io", "v1beta1", "Sandbox", "sandboxes"),
            Self::Pod => ("", "v1", "Pod", "pods"),
        };
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::SandboxClaim => "SandboxClaim",
            Self::Sandbox => "Sandbox",
            Self::Pod => "Pod",
        }
    }
}

/// The namespaces listed: one, or every namespace (`*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Namespaces {
    One(String),
    All,
}

impl Namespaces {
    /// The option's value; `None`: the context's namespace (`fallback`).
    pub fn parse(given: Option<&str>) -> Result<Option<Self>, InvalidInput> {
        match given {
            None => Ok(None),
            Some("*") => Ok(Some(Self::All)),
            Some(namespace) if is_dns_label(namespace) => Ok(Some(Self::One(namespace.to_owned()))),
            Some(other) => Err(InvalidInput::new("namespace", messages::kubernetes_namespace(other))),
        }
    }
}

/// A sandbox's id: its namespace and name joined by `_`, which neither a
/// namespace (a DNS label) nor an object name (a DNS subdomain) can hold,
/// so the id splits back exactly. (`/` would read better, but an id is a
/// path segment and a file name elsewhere in the project.)
pub fn sandbox_id(namespace: &str, name: &str) -> String {
    format!("{namespace}_{name}")
}

/// The namespace and name an id names, or why it names none.
pub fn split_id(id: &str) -> Result<(&str, &str), InvalidInput> {
    match id.split_once('_') {
        Some((namespace, name)) if is_dns_label(namespace) && is_dns_subdomain(name) => Ok((namespace, name)),
        _ => Err(InvalidInput::new("providerSandboxId", messages::kubernetes_id(id))),
    }
}

/// An owner our label selector can name: a label value.
pub fn check_owner(owner: &str) -> Result<(), InvalidInput> {
    super::super::marks::check_owner(&super::SPEC, owner)
}

/// RFC 1123 label: what a namespace is.
fn is_dns_label(text: &str) -> bool {
    let bytes = text.as_bytes();
    (1..=63).contains(&bytes.len())
        && bytes.iter().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || *byte == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

/// RFC 1123 subdomain: what an object's name is.
fn is_dns_subdomain(text: &str) -> bool {
    (1..=253).contains(&text.len()) && text.split('.').all(is_dns_label)
}

/// What a sweep reads of an object: its metadata. The rest (spec, status,
/// on real clusters often most of it) is skipped while parsing, never held:
/// kube's `DynamicObject` kept it as a JSON tree, and its flattened fields
/// buffered the whole answer once more (most of our CPU on a pass).
#[derive(Debug, Clone, Deserialize)]
pub struct Object {
    #[serde(default)]
    pub metadata: ObjectMeta,
}

/// One listing page, read the same way: the continue token and the objects.
#[derive(Debug, Deserialize)]
pub struct Page {
    #[serde(default)]
    pub metadata: ListMeta,
    /// `null` reads as no objects, as kube reads it.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub items: Vec<Object>,
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<Object>, D::Error> {
    Ok(Option::<Vec<Object>>::deserialize(deserializer)?.unwrap_or_default())
}

/// An object as a listed sandbox: `deleting` once it has a
/// `deletionTimestamp` (never deleted again); its age from
/// `creationTimestamp`; owner and key from its labels (the key also from an
/// annotation, where a key that is no label value goes). An object without
/// a namespace, a name or a creation time does not read (the listing fails
/// closed).
pub fn listed(object: &Object, namespace_fallback: Option<&str>) -> Result<ListedSandbox, String> {
    let meta = &object.metadata;
    let name = meta.name.as_deref().ok_or(messages::KUBERNETES_OBJECT_WITHOUT_NAME)?;
    let namespace = meta
        .namespace
        .as_deref()
        .or(namespace_fallback)
        .ok_or_else(|| messages::kubernetes_object_without(name, "metadata.namespace"))?;
    let created = meta
        .creation_timestamp
        .as_ref()
        .ok_or_else(|| messages::kubernetes_object_without(name, "creationTimestamp"))?;
    let labels = meta.labels.as_ref();
    let label = |key: &str| labels.and_then(|labels| labels.get(key)).cloned();
    let annotation = |key: &str| meta.annotations.as_ref().and_then(|notes| notes.get(key)).cloned();
    Ok(ListedSandbox {
        id: sandbox_id(namespace, name),
        created_at: u64::try_from(created.0.as_millisecond()).ok(),
        owner: label(LABEL_OWNER),
        key: label(LABEL_KEY).or_else(|| annotation(LABEL_KEY)),
        deleting: meta.deletion_timestamp.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_split_back_exactly_and_nothing_else_reads_as_one() {
        assert_eq!(split_id(&sandbox_id("agents", "claim.a-1")).unwrap(), ("agents", "claim.a-1"));
        for bad in ["agents", "_x", "agents_", "Agents_x", "a_b_c", "ns_-x", "ns_x..y", ""] {
            assert!(split_id(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_page_reads_only_metadata_and_fails_on_a_malformed_one() {
        let text = serde_json::json!({"kind": "SandboxClaimList", "metadata": {"continue": "next"},
            "items": [{"kind": "SandboxClaim", "metadata": {"name": "c-1", "namespace": "agents",
                "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {LABEL_OWNER: "o"}},
                "spec": {"big": [1, 2, 3]}, "status": {}}]});
        let page: Page = serde_json::from_str(&text.to_string()).unwrap();
        assert_eq!(page.metadata.continue_.as_deref(), Some("next"));
        let sandbox = listed(&page.items[0], None).unwrap();
        assert_eq!((sandbox.id.as_str(), sandbox.owner.as_deref()), ("agents_c-1", Some("o")));
        assert!(serde_json::from_str::<Page>(r#"{"items":null}"#).unwrap().items.is_empty());
        assert!(serde_json::from_str::<Page>(r#"{"items":"not a list"}"#).is_err());
    }

    #[test]
    fn kinds_namespaces_and_owners_are_checked() {
        assert_eq!(Kind::parse(None).unwrap(), Kind::SandboxClaim);
        assert_eq!(Kind::parse(Some("pod")).unwrap(), Kind::Pod);
        assert_eq!(Kind::parse(Some("Deployment")).unwrap_err().field, "kind");
        assert_eq!(Kind::Pod.resource().plural, "pods");
        assert_eq!(Namespaces::parse(Some("*")).unwrap(), Some(Namespaces::All));
        assert_eq!(Namespaces::parse(Some("Team A")).unwrap_err().field, "namespace");
        assert!(check_owner("sandbox-reclaim").is_ok());
        for bad in ["", "-a", "a b", &"x".repeat(64), "team/a"] {
            assert_eq!(check_owner(bad).unwrap_err().field, "owner", "{bad}");
        }
    }
}
