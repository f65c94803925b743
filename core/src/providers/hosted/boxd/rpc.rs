//! boxd's gRPC client, on the shared [`grpc`] client: the bearer
//! ([`Auth`]) on every call and nothing else (the official client's
//! `x-boxd-py-sdk-version` only asks boxd for an update notice, and we are
//! not that client), answers up to 64 MiB as the client takes them (a
//! listing is one answer), and boxd's rules: its gRPC answers carry no
//! retry hint, so a `RESOURCE_EXHAUSTED` waits a second, a bounded number
//! of times.

use std::time::Duration;

use tonic::metadata::MetadataMap;

use super::auth::{Auth, Credential, LABEL};
use super::wire::Method;
use crate::providers::hosted::grpc::{self, GrpcClient, Refusal, Rules};
use crate::providers::InvalidInput;
use crate::report::messages;

/// The largest answer read (the client's own limit, `_transport.py`).
const MAX_ANSWER_BYTES: usize = 64 << 20;

const RULES: Rules = Rules { label: LABEL, unauthorized: messages::boxd_unauthorized, retry_after_seconds: |_| None };

/// One boxd server's client.
pub(super) struct Rpc {
    grpc: GrpcClient,
    auth: Auth,
}

impl Rpc {
    /// A client for `url` (checked: `http(s)://host`) with `credential`.
    pub fn new(url: &str, credential: Credential, request_timeout: Duration) -> Result<Self, InvalidInput> {
        let grpc = GrpcClient::new(RULES, url, request_timeout)?.with_max_answer_bytes(MAX_ANSWER_BYTES);
        let auth = Auth::new(credential, url, request_timeout)?;
        Ok(Self { grpc, auth })
    }

    /// `method` with `request`, under the bearer (a key exchanged first when due).
    pub async fn call<Req, Resp>(&self, method: Method, request: Req) -> Result<Resp, Refusal>
    where
        Req: prost::Message + Clone + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let mut metadata = MetadataMap::new();
        metadata.insert("authorization", self.auth.bearer().await?);
        let answer = self.grpc.unary(method.name, method.path, request, &metadata).await;
        if let Err(Refusal::Failed(error)) = &answer {
            if grpc::is_unauthorized(error) {
                self.auth.refused().await;
            }
        }
        answer
    }

    #[cfg(test)]
    pub fn auth(&self) -> &Auth {
        &self.auth
    }
}
