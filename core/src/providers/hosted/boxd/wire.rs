//! The few messages of boxd's API (service `boxd.api.v1.BoxdApi`, as PyPI
//! `boxd` 0.2.19 ships it in `_generated/api_pb2.py`) that the provider sends
//! or reads, written by hand with only the fields it needs. A field's number
//! and type are boxd's (protobuf skips the fields a message here leaves
//! out); `docs/research/boxd.md` cites each.

/// A method of the service.
#[derive(Debug, Clone, Copy)]
pub(super) struct Method {
    pub name: &'static str,
    pub path: &'static str,
}

macro_rules! method {
    ($name:literal) => {
        Method { name: $name, path: concat!("/boxd.api.v1.BoxdApi/", $name) }
    };
}

/// Every machine of a context matching a label selector, in one answer (no paging).
pub(super) const LIST_VMS: Method = method!("ListVms");
/// One machine by id (or name).
pub(super) const GET_VM: Method = method!("GetVm");
/// Destroys a machine: terminal.
pub(super) const DESTROY_VM: Method = method!("DestroyVm");

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct ListVmsRequest {
    /// The org listed; empty: the caller's personal machines.
    #[prost(string, tag = "1")]
    pub org: String,
    /// Every context the caller belongs to (ignores `org`). Never set by us.
    #[prost(bool, tag = "2")]
    pub all_contexts: bool,
    /// `key=value` (or `key`) terms, all of which must match.
    #[prost(string, repeated, tag = "3")]
    pub label_selector: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct ListVmsResponse {
    #[prost(message, repeated, tag = "1")]
    pub vms: Vec<GetVmResponse>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct GetVmRequest {
    #[prost(string, tag = "1")]
    pub vm_id: String,
}

/// A machine (what `GetVm` answers and `ListVms` lists).
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct GetVmResponse {
    #[prost(string, tag = "1")]
    pub vm_id: String,
    #[prost(string, tag = "2")]
    pub name: String,
    /// One of [`STATUSES`].
    #[prost(string, tag = "5")]
    pub status: String,
    /// Set when the machine is shared in an org.
    #[prost(string, tag = "10")]
    pub org: String,
    /// The org billed (a private machine of an org names it here only).
    #[prost(string, tag = "11")]
    pub billing_org: String,
    /// Epoch seconds; 0: unset.
    #[prost(int64, tag = "17")]
    pub created_at: i64,
    #[prost(map = "string, string", tag = "34")]
    pub labels: std::collections::HashMap<String, String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct DestroyVmRequest {
    #[prost(string, tag = "1")]
    pub vm_id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct DestroyVmResponse {}

/// The statuses the client documents (`boxd/models.py`).
pub(super) const STATUSES: [&str; 9] =
    ["pending", "starting", "running", "suspended", "hibernated", "stopped", "failed", "destroyed", "migrating"];

/// What a status says of a machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    /// It exists (stopped, suspended and failed machines keep their disk: swept too).
    Live,
    /// `destroyed`: a destroyed machine keeps a record a while.
    Gone,
}

/// A status as a [`State`]; `None` for one boxd does not document (the
/// listing then fails closed: it may be a state we must not sweep).
pub(super) fn state(status: &str) -> Option<State> {
    match status {
        "destroyed" => Some(State::Gone),
        known if STATUSES.contains(&known) => Some(State::Live),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    #[test]
    fn the_listing_request_encodes_with_boxds_field_numbers() {
        let request = ListVmsRequest { org: "acme".into(), all_contexts: false, label_selector: vec!["k=v".into()] };
        // org (1, length-delimited), label_selector (3, length-delimited).
        assert_eq!(request.encode_to_vec(), b"\x0a\x04acme\x1a\x03k=v");
    }

    #[test]
    fn a_machine_decodes_from_boxds_field_numbers() {
        let mut labels = std::collections::HashMap::new();
        labels.insert("k".to_owned(), "v".to_owned());
        let vm = GetVmResponse {
            vm_id: "id-1".into(),
            name: "n".into(),
            status: "running".into(),
            org: String::new(),
            billing_org: "acme".into(),
            created_at: 1_767_225_600,
            labels,
        };
        let bytes = vm.encode_to_vec();
        // created_at is field 17 as a varint (tag 0x88 0x01), labels field 34 (tag 0x92 0x02).
        assert!(bytes.windows(2).any(|pair| pair == [0x88, 0x01]), "{bytes:?}");
        assert!(bytes.windows(2).any(|pair| pair == [0x92, 0x02]), "{bytes:?}");
        assert_eq!(GetVmResponse::decode(bytes.as_slice()).unwrap(), vm);
    }

    #[test]
    fn destroyed_is_gone_every_other_documented_status_live_and_the_rest_unknown() {
        assert_eq!(state("destroyed"), Some(State::Gone));
        for live in ["pending", "running", "stopped", "suspended", "hibernated", "failed", "migrating"] {
            assert_eq!(state(live), Some(State::Live), "{live}");
        }
        for unknown in ["", "deleting", "Running", "unknown"] {
            assert_eq!(state(unknown), None, "{unknown}");
        }
    }
}
