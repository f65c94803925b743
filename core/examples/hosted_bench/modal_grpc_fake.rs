//! An in-process Modal gRPC fake, for the bench only: tonic's server (Rust
//! HTTP/2) answering exactly the calls `ModalProvider` makes in a sweep.
//!
//! Why a second fake: tests/fakes/modal_fake.py is the proven one (the
//! official `modal` client drives it; every suite tests against it), but it
//! is grpclib, pure-Python HTTP/2, and one core of HPACK decoding cannot
//! serve the ~3,200 calls/s the bench's ideal needs, so its row measures the
//! fake. This one costs the server side little, so its row measures our side.
//!
//! Same semantics as modal_fake.py for what it serves (its header and
//! docs/research/modal.md): every call waits the latency, then needs
//! `x-modal-client-type` / `x-modal-client-version` (FAILED_PRECONDITION
//! otherwise) and the `x-modal-token-id` / `x-modal-token-secret` pair
//! (UNAUTHENTICATED otherwise); a V2 call also needs an unexpired
//! `x-modal-auth-token` this fake issued. `AuthTokenGet` answers a
//! JWT-shaped token (`exp` 20 minutes ahead; signed with nothing: the fake
//! accepts only the tokens it keeps). `SandboxListV2` is newest first,
//! `created_at` strictly before `before_timestamp` (0: from the newest), tags
//! all-of, scoped by `app_id` (else by `environment_name`, empty: `main`),
//! finished sandboxes only with `include_finished`, `page_size` a page.
//! `SandboxTerminate` (V1 ids) / `SandboxTerminateV2` (the others) end a
//! running sandbox, answer a finished one its `existing_result`, and an id
//! they do not route NOT_FOUND. Anything else is UNIMPLEMENTED.
//!
//! No codegen: the messages below are written by hand (only the fields
//! served or read), with the field numbers of the official client's
//! descriptors (`modal_proto.api_pb2`, modal 1.6.4), not copied from the
//! core's `wire.rs` (private to the provider); requests are routed by path
//! to `tonic::server::Grpc::unary` with tonic's `ProstCodec`.

// A handler answers what tonic's `UnaryService` does: `Result<_, Status>`.
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde_json::{json, Value};
use tonic::body::Body;
use tonic::codec::ProstCodec;
use tonic::codegen::{http, BoxFuture, Context, Poll, Service};
use tonic::metadata::MetadataMap;
use tonic::server::{Grpc, UnaryService};
use tonic::transport::server::TcpIncoming;
use tonic::transport::Server;
use tonic::{Request, Response, Status};

const SERVICE: &str = "/modal.client.ModalClient/";
const DEFAULT_APP_ID: &str = "ap-SandboxReclaimFakeApp0";
const DEFAULT_ENVIRONMENT: &str = "main";
const TOKEN_TTL_SECONDS: f64 = 1200.0;
/// `GenericResult.GENERIC_STATUS_SUCCESS` / `GENERIC_STATUS_TERMINATED`.
const SUCCESS: i32 = 1;
const TERMINATED: i32 = 3;

#[derive(Clone, PartialEq, prost::Message)]
struct AuthTokenGetRequest {}

#[derive(Clone, PartialEq, prost::Message)]
struct AuthTokenGetResponse {
    #[prost(string, tag = "1")]
    token: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SandboxTag {
    #[prost(string, tag = "1")]
    tag_name: String,
    #[prost(string, tag = "2")]
    tag_value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SandboxListRequest {
    #[prost(string, tag = "1")]
    app_id: String,
    #[prost(double, tag = "2")]
    before_timestamp: f64,
    #[prost(string, tag = "3")]
    environment_name: String,
    #[prost(bool, tag = "4")]
    include_finished: bool,
    #[prost(message, repeated, tag = "5")]
    tags: Vec<SandboxTag>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SandboxListResponse {
    #[prost(message, repeated, tag = "1")]
    sandboxes: Vec<SandboxInfo>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SandboxInfo {
    #[prost(string, tag = "1")]
    id: String,
    #[prost(double, tag = "3")]
    created_at: f64,
    #[prost(message, optional, tag = "4")]
    task_info: Option<TaskInfo>,
    #[prost(string, tag = "5")]
    app_id: String,
    #[prost(message, repeated, tag = "6")]
    tags: Vec<SandboxTag>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct TaskInfo {
    #[prost(string, tag = "1")]
    id: String,
    #[prost(double, tag = "2")]
    started_at: f64,
    #[prost(message, optional, tag = "4")]
    result: Option<GenericResult>,
    #[prost(double, tag = "5")]
    enqueued_at: f64,
    #[prost(string, tag = "7")]
    sandbox_id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct GenericResult {
    #[prost(int32, tag = "1")]
    status: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SandboxTerminateRequest {
    #[prost(string, tag = "1")]
    sandbox_id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SandboxTerminateResponse {
    #[prost(message, optional, tag = "1")]
    existing_result: Option<GenericResult>,
}

/// The fake's credentials and knobs (modal_fake.py's flags and faults).
pub struct Config {
    pub token_id: String,
    pub token_secret: String,
    /// Every answer waits this long (`latencyMs`).
    pub latency: Duration,
    /// Items a listing page (`pageSize`).
    pub page_size: usize,
}

struct Sandbox {
    id: String,
    app_id: String,
    environment: String,
    tags: BTreeMap<String, String>,
    created_at: f64,
    /// `GenericResult.status`: 0 while running.
    status: i32,
}

struct Sandboxes {
    /// By `(created_at, id)`, newest first: the listing's order.
    newest_first: Vec<Sandbox>,
    index: HashMap<String, usize>,
}

struct State {
    config: Config,
    sandboxes: Mutex<Sandboxes>,
    /// Issued tokens and their `exp` (epoch seconds).
    tokens: Mutex<HashMap<String, f64>>,
    issued: AtomicU64,
    terminated: AtomicU64,
}

/// A running fake: its `url` (what `MODAL_SERVER_URL` takes) and counters.
pub struct ModalGrpcFake {
    pub url: String,
    state: Arc<State>,
}

impl ModalGrpcFake {
    /// Sandboxes this fake ended through `SandboxTerminate[V2]`.
    pub fn terminated(&self) -> u64 {
        self.state.terminated.load(Ordering::Relaxed)
    }
}

/// Serves `seed` (modal_fake.py's `POST /_fake/sandboxes` items, each with
/// its `id` and `createdAt`) on 127.0.0.1, port 0, on a thread and a
/// single-threaded runtime of its own (as the Python fake has one core).
pub fn start(config: Config, seed: &[Value]) -> ModalGrpcFake {
    let mut newest_first: Vec<Sandbox> = seed.iter().map(seeded).collect();
    newest_first.sort_by(|a, b| b.created_at.total_cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
    let index = newest_first.iter().enumerate().map(|(at, sandbox)| (sandbox.id.clone(), at)).collect();
    let state = Arc::new(State {
        config,
        sandboxes: Mutex::new(Sandboxes { newest_first, index }),
        tokens: Mutex::new(HashMap::new()),
        issued: AtomicU64::new(0),
        terminated: AtomicU64::new(0),
    });
    let (bound, address) = std::sync::mpsc::channel();
    let serving = Routes(Arc::clone(&state));
    std::thread::Builder::new()
        .name("modal-grpc-fake".into())
        .spawn(move || {
            let runtime =
                tokio::runtime::Builder::new_current_thread().enable_all().build().expect("the fake's runtime");
            runtime.block_on(async move {
                let incoming = TcpIncoming::bind(([127, 0, 0, 1], 0).into()).expect("bind 127.0.0.1:0");
                let incoming = incoming.with_nodelay(Some(true));
                bound.send(incoming.local_addr().expect("the fake's address")).expect("report the address");
                Server::builder().serve_with_incoming(serving, incoming).await.expect("the Modal gRPC fake");
            });
        })
        .expect("start the Modal gRPC fake");
    let address = address.recv().expect("the Modal gRPC fake bound");
    ModalGrpcFake { url: format!("http://{address}"), state }
}

fn seeded(item: &Value) -> Sandbox {
    let text = |field: &str, default: &str| item.get(field).map_or(Some(default), Value::as_str).map(str::to_owned);
    let id = item["id"].as_str().unwrap_or_else(|| panic!("a seeded sandbox needs an id: {item}")).to_owned();
    let created_at = item["createdAt"].as_f64().unwrap_or_else(|| panic!("{id}: createdAt (unix seconds)"));
    let tags = item.get("tags").map_or(Ok(BTreeMap::new()), |tags| serde_json::from_value(tags.clone()));
    Sandbox {
        app_id: text("appId", DEFAULT_APP_ID).unwrap_or_else(|| panic!("{id}: appId")),
        environment: text("environment", DEFAULT_ENVIRONMENT).unwrap_or_else(|| panic!("{id}: environment")),
        tags: tags.unwrap_or_else(|error| panic!("{id}: tags: {error}")),
        status: if item.get("finished") == Some(&json!(true)) { SUCCESS } else { 0 },
        created_at,
        id,
    }
}

/// `modal/sandbox/_common.py` `_is_v1_sandbox_id`: `sb-` and 22 base62.
fn is_v1_id(id: &str) -> bool {
    id.strip_prefix("sb-").is_some_and(|rest| rest.len() == 22 && rest.bytes().all(|b| b.is_ascii_alphanumeric()))
}

fn now_seconds() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_secs_f64()
}

impl State {
    fn issue_token(&self) -> String {
        let jti = self.issued.fetch_add(1, Ordering::Relaxed) + 1;
        let now = now_seconds();
        let exp = (now + TOKEN_TTL_SECONDS).floor();
        let encode = |value: Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string());
        let header = encode(json!({ "alg": "HS256", "typ": "JWT" }));
        let claims = encode(json!({ "sub": self.config.token_id, "iat": now.floor(), "exp": exp, "jti": jti }));
        let token = format!("{header}.{claims}.modal-grpc-fake-{jti}");
        self.tokens.lock().unwrap().insert(token.clone(), exp);
        token
    }

    fn authorize(&self, v2: bool, metadata: &MetadataMap) -> Result<(), Status> {
        let text = |name: &str| metadata.get(name).and_then(|value| value.to_str().ok()).filter(|v| !v.is_empty());
        for header in ["x-modal-client-type", "x-modal-client-version"] {
            if text(header).is_none() {
                return Err(Status::failed_precondition(format!("Missing {header} header")));
            }
        }
        let (Some(id), Some(secret)) = (text("x-modal-token-id"), text("x-modal-token-secret")) else {
            return Err(Status::unauthenticated("Token missing. Could not authenticate client."));
        };
        if !id.starts_with("ak-") {
            return Err(Status::unauthenticated("Token ID is malformed"));
        }
        if !secret.starts_with("as-") {
            return Err(Status::unauthenticated("Token secret is malformed"));
        }
        if id != self.config.token_id || secret != self.config.token_secret {
            return Err(Status::unauthenticated("Invalid token ID or token secret"));
        }
        if v2 {
            let Some(token) = text("x-modal-auth-token") else {
                return Err(Status::unauthenticated(
                    "Missing auth token (x-modal-auth-token); call AuthTokenGet first",
                ));
            };
            match self.tokens.lock().unwrap().get(token) {
                None => return Err(Status::unauthenticated("Invalid auth token")),
                Some(&exp) if now_seconds() >= exp => return Err(Status::unauthenticated("Auth token expired")),
                Some(_) => {}
            }
        }
        Ok(())
    }
}

fn auth_token_get(state: &State, _: &str, _: AuthTokenGetRequest) -> Result<AuthTokenGetResponse, Status> {
    Ok(AuthTokenGetResponse { token: state.issue_token() })
}

fn sandbox_list(state: &State, _: &str, request: SandboxListRequest) -> Result<SandboxListResponse, Status> {
    let environment = match request.environment_name.as_str() {
        "" => DEFAULT_ENVIRONMENT,
        named => named,
    };
    let in_scope = |sandbox: &Sandbox| match request.app_id.as_str() {
        "" => sandbox.environment == environment,
        app => sandbox.app_id == app && (request.environment_name.is_empty() || sandbox.environment == environment),
    };
    let tagged = |sandbox: &Sandbox| {
        request.tags.iter().all(|tag| sandbox.tags.get(&tag.tag_name).is_some_and(|value| *value == tag.tag_value))
    };
    let sandboxes = state.sandboxes.lock().unwrap();
    let before = request.before_timestamp;
    let start = match before > 0.0 {
        true => sandboxes.newest_first.partition_point(|sandbox| sandbox.created_at >= before),
        false => 0,
    };
    let page = sandboxes.newest_first[start..]
        .iter()
        .filter(|sandbox| in_scope(sandbox) && tagged(sandbox) && (sandbox.status == 0 || request.include_finished))
        .take(state.config.page_size)
        .map(|sandbox| SandboxInfo {
            id: sandbox.id.clone(),
            created_at: sandbox.created_at,
            task_info: Some(TaskInfo {
                id: format!("ta-{}", &sandbox.id[3..]),
                started_at: sandbox.created_at + 0.5,
                result: Some(GenericResult { status: sandbox.status }),
                enqueued_at: sandbox.created_at,
                sandbox_id: sandbox.id.clone(),
            }),
            app_id: sandbox.app_id.clone(),
            tags: sandbox
                .tags
                .iter()
                .map(|(name, value)| SandboxTag { tag_name: name.clone(), tag_value: value.clone() })
                .collect(),
        })
        .collect();
    Ok(SandboxListResponse { sandboxes: page })
}

fn sandbox_terminate(
    state: &State,
    method: &str,
    request: SandboxTerminateRequest,
) -> Result<SandboxTerminateResponse, Status> {
    let mut sandboxes = state.sandboxes.lock().unwrap();
    // A V1 call finds only V1-shaped ids and a V2 call the others, as the client routes them.
    let routed = is_v1_id(&request.sandbox_id) != method.ends_with("V2");
    let Some(&at) = sandboxes.index.get(&request.sandbox_id).filter(|_| routed) else {
        return Err(Status::not_found(format!("Sandbox {} not found", request.sandbox_id)));
    };
    let sandbox = &mut sandboxes.newest_first[at];
    if sandbox.status != 0 {
        return Ok(SandboxTerminateResponse { existing_result: Some(GenericResult { status: sandbox.status }) });
    }
    sandbox.status = TERMINATED;
    state.terminated.fetch_add(1, Ordering::Relaxed);
    Ok(SandboxTerminateResponse { existing_result: None })
}

/// One method: wait the latency, check the call's credentials, answer.
struct Unary<Req, Resp> {
    state: Arc<State>,
    method: &'static str,
    answer: fn(&State, &str, Req) -> Result<Resp, Status>,
}

impl<Req: Send + 'static, Resp: Send + 'static> UnaryService<Req> for Unary<Req, Resp> {
    type Response = Resp;
    type Future = BoxFuture<Response<Resp>, Status>;

    fn call(&mut self, request: Request<Req>) -> Self::Future {
        let (state, method, answer) = (Arc::clone(&self.state), self.method, self.answer);
        Box::pin(async move {
            tokio::time::sleep(state.config.latency).await;
            state.authorize(method.ends_with("V2"), request.metadata())?;
            answer(&state, method, request.into_inner()).map(Response::new)
        })
    }
}

async fn serve<Req, Resp>(request: http::Request<Body>, method: Unary<Req, Resp>) -> http::Response<Body>
where
    Req: prost::Message + Default + Send + 'static,
    Resp: prost::Message + Send + 'static,
{
    Grpc::new(ProstCodec::<Resp, Req>::default()).unary(method, request).await
}

/// The service: routes `/modal.client.ModalClient/<method>` by path.
#[derive(Clone)]
struct Routes(Arc<State>);

impl Service<http::Request<Body>> for Routes {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<http::Response<Body>, Infallible>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let state = Arc::clone(&self.0);
        let method = request.uri().path().strip_prefix(SERVICE).unwrap_or_default().to_owned();
        Box::pin(async move {
            Ok(match method.as_str() {
                "AuthTokenGet" => serve(request, Unary { state, method: "AuthTokenGet", answer: auth_token_get }).await,
                "SandboxListV2" => serve(request, Unary { state, method: "SandboxListV2", answer: sandbox_list }).await,
                "SandboxTerminate" => {
                    serve(request, Unary { state, method: "SandboxTerminate", answer: sandbox_terminate }).await
                }
                "SandboxTerminateV2" => {
                    serve(request, Unary { state, method: "SandboxTerminateV2", answer: sandbox_terminate }).await
                }
                _ => Status::unimplemented(format!("{method} is not implemented by the in-process Modal fake"))
                    .into_http(),
            })
        })
    }
}
