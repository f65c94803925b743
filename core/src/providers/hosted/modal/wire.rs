//! The few messages of Modal's API (`modal.client.ModalClient`, the proto
//! the official client `modal` 1.6 ships as `modal_proto/api.proto`) that the
//! provider sends or reads, written by hand with only the fields it needs.
//! A field's number and type are Modal's (protobuf skips the fields a
//! message here leaves out); `docs/research/modal.md` cites each.

/// A method of the service, and whether it is a V2 call (those carry the
/// `AuthTokenGet` token as `x-modal-auth-token`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Method {
    pub name: &'static str,
    pub path: &'static str,
    pub v2: bool,
}

macro_rules! method {
    ($name:literal, $v2:literal) => {
        Method { name: $name, path: concat!("/modal.client.ModalClient/", $name), v2: $v2 }
    };
}

pub(super) const AUTH_TOKEN_GET: Method = method!("AuthTokenGet", false);
/// Lists V1 and V2 sandboxes alike (what the client lists with since 1.6).
pub(super) const SANDBOX_LIST_V2: Method = method!("SandboxListV2", true);

/// The calls on one sandbox: V1 ids take the V1 method, every other id the
/// V2 one, as the client routes them (`_get_sandbox_version`).
pub(super) struct ByVersion {
    pub v1: Method,
    pub v2: Method,
}

impl ByVersion {
    pub fn of(&self, id: &str) -> Method {
        if is_v1_id(id) {
            self.v1
        } else {
            self.v2
        }
    }
}

pub(super) const TERMINATE: ByVersion =
    ByVersion { v1: method!("SandboxTerminate", false), v2: method!("SandboxTerminateV2", true) };
/// `Sandbox.from_id`'s read: `SandboxWait` with `timeout` 0 answers at once.
pub(super) const WAIT: ByVersion = ByVersion { v1: method!("SandboxWait", false), v2: method!("SandboxWaitV2", true) };
pub(super) const TAGS_GET: ByVersion =
    ByVersion { v1: method!("SandboxTagsGet", false), v2: method!("SandboxTagsGetV2", true) };

/// The V1 id shape (`modal/sandbox/_common.py` `_is_v1_sandbox_id`): `sb-`
/// and 22 base62 characters. Every other id is V2.
pub(super) fn is_v1_id(id: &str) -> bool {
    id.strip_prefix("sb-").is_some_and(|rest| rest.len() == 22 && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// Crockford's base32 alphabet (a ULID's).
const CROCKFORD: &[u8] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// When a V2 sandbox was created, in epoch milliseconds: its id is `sb-`
/// and a ULID, whose first ten characters are the 48-bit millisecond time
/// the id was minted at. `None` for any other shape (a V1 id carries no time).
pub(super) fn v2_created_at_millis(id: &str) -> Option<u64> {
    let ulid = id.strip_prefix("sb-").filter(|rest| rest.len() == 26)?;
    let mut millis = 0u64;
    for (index, byte) in ulid.bytes().enumerate() {
        let value = CROCKFORD.iter().position(|&c| c == byte.to_ascii_uppercase())? as u64;
        if index == 0 && value > 7 {
            return None;
        }
        if index < 10 {
            millis = (millis << 5) | value;
        }
    }
    Some(millis)
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct AuthTokenGetRequest {}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct AuthTokenGetResponse {
    #[prost(string, tag = "1")]
    pub token: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct SandboxTag {
    #[prost(string, tag = "1")]
    pub tag_name: String,
    #[prost(string, tag = "2")]
    pub tag_value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct SandboxListRequest {
    #[prost(string, tag = "1")]
    pub app_id: String,
    /// Sandboxes created strictly before this (epoch seconds); 0: from the newest.
    #[prost(double, tag = "2")]
    pub before_timestamp: f64,
    #[prost(string, tag = "3")]
    pub environment_name: String,
    #[prost(bool, tag = "4")]
    pub include_finished: bool,
    /// All of these (the client's `tags`).
    #[prost(message, repeated, tag = "5")]
    pub tags: Vec<SandboxTag>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct SandboxListResponse {
    #[prost(message, repeated, tag = "1")]
    pub sandboxes: Vec<SandboxInfo>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct SandboxInfo {
    #[prost(string, tag = "1")]
    pub id: String,
    /// Epoch seconds.
    #[prost(double, tag = "3")]
    pub created_at: f64,
    #[prost(message, optional, tag = "4")]
    pub task_info: Option<TaskInfo>,
    #[prost(message, repeated, tag = "6")]
    pub tags: Vec<SandboxTag>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct TaskInfo {
    #[prost(message, optional, tag = "4")]
    pub result: Option<GenericResult>,
}

/// A sandbox's result: any status but `GENERIC_STATUS_UNSPECIFIED` (0)
/// means it finished (the client's `poll` answers a return code then).
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct GenericResult {
    #[prost(int32, tag = "1")]
    pub status: i32,
}

/// Whether `result` says the sandbox finished.
pub(super) fn finished(result: Option<&GenericResult>) -> bool {
    result.is_some_and(|result| result.status != 0)
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct SandboxTerminateRequest {
    #[prost(string, tag = "1")]
    pub sandbox_id: String,
}

/// Set when the sandbox had already finished; either way it is ended.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct SandboxTerminateResponse {
    #[prost(message, optional, tag = "1")]
    pub existing_result: Option<GenericResult>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct SandboxWaitRequest {
    #[prost(string, tag = "1")]
    pub sandbox_id: String,
    /// Seconds to wait for the result; 0 answers at once.
    #[prost(float, tag = "2")]
    pub timeout: f32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct SandboxWaitResponse {
    #[prost(message, optional, tag = "1")]
    pub result: Option<GenericResult>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct SandboxTagsGetRequest {
    #[prost(string, tag = "1")]
    pub sandbox_id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct SandboxTagsGetResponse {
    #[prost(message, repeated, tag = "1")]
    pub tags: Vec<SandboxTag>,
}

/// `grpc-status-details-bin` as Modal writes it (`modal.client.RPCStatus`,
/// shaped as `google.rpc.Status`).
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct RpcStatus {
    #[prost(message, repeated, tag = "3")]
    pub details: Vec<Any>,
}

/// `google.protobuf.Any`.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct Any {
    #[prost(string, tag = "1")]
    pub type_url: String,
    #[prost(bytes = "vec", tag = "2")]
    pub value: Vec<u8>,
}

/// The wait Modal asks of a throttled call (`modal.client.RPCRetryPolicy`).
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct RpcRetryPolicy {
    #[prost(float, tag = "1")]
    pub retry_after_secs: f32,
}

/// The seconds a status's retry policy asks to wait, if it carries one.
pub(super) fn retry_after_seconds(details: &[u8]) -> Option<f64> {
    use prost::Message;
    let status = RpcStatus::decode(details).ok()?;
    let policy = status.details.iter().find(|any| any.type_url.ends_with("/modal.client.RPCRetryPolicy"))?;
    RpcRetryPolicy::decode(policy.value.as_slice()).ok().map(|policy| f64::from(policy.retry_after_secs))
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    #[test]
    fn ids_are_v1_by_shape_and_every_other_id_is_v2() {
        assert!(is_v1_id("sb-0123456789abcdefABCDEF"));
        assert!(!is_v1_id("sb-0123456789abcdefABCDE"), "21 characters");
        assert!(!is_v1_id("sb-01KC5W0Q8D8ZP0V8A1X7YQW3RT"), "a ULID: V2");
        assert!(!is_v1_id("sb-0123456789abcdefABCDE_"));
        assert_eq!(TERMINATE.of("sb-01KC5W0Q8D8ZP0V8A1X7YQW3RT").name, "SandboxTerminateV2");
        assert_eq!(TERMINATE.of("sb-0123456789abcdefABCDEF").path, "/modal.client.ModalClient/SandboxTerminate");
    }

    #[test]
    fn a_v2_id_carries_its_creation_millis() {
        // 01ARZ3NDEK: ten base32 digits of the milliseconds, most significant first.
        assert_eq!(v2_created_at_millis("sb-01ARZ3NDEKTSV4RRFFQ69G5FAV"), Some(1_469_922_850_259));
        assert_eq!(v2_created_at_millis("sb-0000000001TSV4RRFFQ69G5FAV"), Some(1));
        assert_eq!(v2_created_at_millis("sb-0123456789abcdefABCDEF"), None);
        assert_eq!(v2_created_at_millis("sb-81ARZ3NDEKTSV4RRFFQ69G5FAV"), None, "past 48 bits");
        assert_eq!(v2_created_at_millis("sb-01ARZ3NDEKTSV4RRFFQ69G5FAU"), None, "U is not Crockford's");
    }

    #[test]
    fn a_retry_policy_reads_from_the_status_details() {
        let policy = RpcRetryPolicy { retry_after_secs: 0.5 }.encode_to_vec();
        let any = Any { type_url: "type.modal.com/modal.client.RPCRetryPolicy".into(), value: policy };
        let status = RpcStatus { details: vec![any] }.encode_to_vec();
        assert_eq!(retry_after_seconds(&status), Some(0.5));
        assert_eq!(retry_after_seconds(b""), None);
    }

    #[test]
    fn the_listing_request_encodes_with_modals_field_numbers() {
        let request = SandboxListRequest {
            app_id: "ap-1".into(),
            before_timestamp: 0.0,
            environment_name: String::new(),
            include_finished: false,
            tags: vec![SandboxTag { tag_name: "k".into(), tag_value: "v".into() }],
        };
        // app_id (1, length-delimited), tags (5) with tag_name (1) and tag_value (2).
        assert_eq!(request.encode_to_vec(), b"\x0a\x04ap-1\x2a\x06\x0a\x01k\x12\x01v");
    }
}
