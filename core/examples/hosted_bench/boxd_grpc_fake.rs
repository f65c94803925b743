//! An in-process boxd gRPC fake, for the bench only: tonic's server (Rust
//! HTTP/2) answering exactly the calls `BoxdProvider` makes in a sweep.
//!
//! Why a second fake: tests/fakes/boxd_fake.py is the proven one (the
//! official `boxd` client drives it; every suite tests against it), but it
//! is grpc.aio behind a one-port Python proxy, and it spends four to five
//! times our side's CPU on the pass, more than a core at the ideal's pace,
//! so its row measures the fake. This one costs the server side little, so
//! its row measures our side.
//!
//! Same semantics as boxd_fake.py for what it serves (its header and
//! docs/research/boxd.md): every call waits the latency, then needs
//! `authorization: Bearer <token>` with the fake's session token (what
//! `BOXD_TOKEN` carries; UNAUTHENTICATED `missing bearer token` / `invalid
//! token` otherwise). The bench passes a token, so no key is exchanged: this
//! fake serves no `POST /api/v1/auth/token` and accepts no other bearer.
//! `ListVms` lists one context (`org` "": the caller's personal machines, an
//! org: that org's, PERMISSION_DENIED when the caller is not a member;
//! `all_contexts`: personal and every member org), filtered by the
//! `label_selector` terms `key=value` / `key`, ANDed (INVALID_ARGUMENT on a
//! malformed key), oldest first, in one answer (no paging). `GetVm` /
//! `DestroyVm` take an id or a name (personal first); a machine destroyed
//! through the API, or in an org the caller is not in, is NOT_FOUND
//! `machine <ref> not found`; a destroy is terminal. A machine seeded
//! `destroyed` is listed and read in that status until it is destroyed.
//! Anything else is UNIMPLEMENTED.
//!
//! No codegen: the messages below are written by hand (only the fields
//! served or read; a machine carries the fields boxd_fake.py fills, so an
//! answer is the same size), with the field numbers of the official
//! client's descriptors (`boxd/_generated/api_pb2.py`, PyPI `boxd` 0.2.19),
//! not copied from the core's `wire.rs` (private to the provider); requests
//! are routed by path to `tonic::server::Grpc::unary` with tonic's
//! `ProstCodec`.

// A handler answers what tonic's `UnaryService` does: `Result<_, Status>`.
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tonic::body::Body;
use tonic::codec::ProstCodec;
use tonic::codegen::{http, BoxFuture, Context, Poll, Service};
use tonic::metadata::MetadataMap;
use tonic::server::{Grpc, UnaryService};
use tonic::transport::server::TcpIncoming;
use tonic::transport::Server;
use tonic::{Request, Response, Status};

const SERVICE: &str = "/boxd.api.v1.BoxdApi/";
const USER: &str = "usr-sandbox-reclaim-fake";
const SSH_HOST_KEY: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBoxdFake";

#[derive(Clone, PartialEq, prost::Message)]
struct ListVmsRequest {
    #[prost(string, tag = "1")]
    org: String,
    #[prost(bool, tag = "2")]
    all_contexts: bool,
    #[prost(string, repeated, tag = "3")]
    label_selector: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct ListVmsResponse {
    #[prost(message, repeated, tag = "1")]
    vms: Vec<GetVmResponse>,
    #[prost(string, tag = "2")]
    ssh_host_key: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct GetVmRequest {
    #[prost(string, tag = "1")]
    vm_id: String,
}

/// A machine (what `GetVm` answers and `ListVms` lists).
#[derive(Clone, PartialEq, prost::Message)]
struct GetVmResponse {
    #[prost(string, tag = "1")]
    vm_id: String,
    #[prost(string, tag = "2")]
    name: String,
    #[prost(string, tag = "3")]
    image_ref: String,
    #[prost(string, tag = "5")]
    status: String,
    #[prost(string, tag = "6")]
    restart_policy: String,
    #[prost(uint64, tag = "7")]
    disk_bytes: u64,
    #[prost(string, tag = "10")]
    org: String,
    #[prost(string, tag = "11")]
    billing_org: String,
    #[prost(string, tag = "12")]
    access_domain: String,
    #[prost(uint32, tag = "15")]
    vcpu: u32,
    #[prost(uint64, tag = "16")]
    memory_bytes: u64,
    #[prost(int64, tag = "17")]
    created_at: i64,
    #[prost(string, tag = "22")]
    org_id: String,
    #[prost(string, tag = "23")]
    billing_org_id: String,
    #[prost(btree_map = "string, string", tag = "34")]
    labels: BTreeMap<String, String>,
    #[prost(string, tag = "37")]
    created_by: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct DestroyVmRequest {
    #[prost(string, tag = "1")]
    vm_id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct DestroyVmResponse {}

/// The fake's credential and knobs (boxd_fake.py's flags and faults).
pub struct Config {
    /// The session token accepted as the bearer (`--token`).
    pub token: String,
    /// The orgs the caller belongs to (`--orgs`).
    pub orgs: Vec<String>,
    /// Every answer waits this long (`latencyMs`).
    pub latency: Duration,
}

struct Vm {
    id: String,
    name: String,
    status: String,
    created_at: i64,
    /// "": the caller's personal machines.
    org: String,
    labels: BTreeMap<String, String>,
    shared: bool,
    /// Destroyed through the API: no longer listed or found.
    destroyed: bool,
}

struct Vms {
    /// Oldest first (seeding order among equal times): the listing's order.
    oldest_first: Vec<Vm>,
    index: HashMap<String, usize>,
}

struct State {
    config: Config,
    orgs: BTreeSet<String>,
    vms: Mutex<Vms>,
    destroyed: AtomicU64,
}

/// A running fake: its `url` (what `BOXD_BASE_URL` takes) and counters.
pub struct BoxdGrpcFake {
    pub url: String,
    state: Arc<State>,
}

impl BoxdGrpcFake {
    /// Machines this fake destroyed through `DestroyVm`.
    pub fn destroyed(&self) -> u64 {
        self.state.destroyed.load(Ordering::Relaxed)
    }
}

/// Serves `seed` (boxd_fake.py's `POST /_fake/vms` items: `id`, `name`,
/// `status`, `created_at`, `labels`, `org`, `shared`) on 127.0.0.1, port 0,
/// on a thread and a single-threaded runtime of its own (as the Python fake
/// has one core).
pub fn start(config: Config, seed: &[Value]) -> BoxdGrpcFake {
    let mut oldest_first: Vec<Vm> = seed.iter().enumerate().map(|(at, item)| seeded(at, item)).collect();
    oldest_first.sort_by_key(|vm| vm.created_at); // stable: equal times stay in seeding order
    let mut index = HashMap::with_capacity(oldest_first.len());
    for (at, vm) in oldest_first.iter().enumerate() {
        assert!(index.insert(vm.id.clone(), at).is_none(), "machine id {} is seeded twice", vm.id);
    }
    let orgs = config.orgs.iter().filter(|org| !org.is_empty()).cloned().collect();
    let state =
        Arc::new(State { config, orgs, vms: Mutex::new(Vms { oldest_first, index }), destroyed: AtomicU64::new(0) });
    let (bound, address) = std::sync::mpsc::channel();
    let serving = Routes(Arc::clone(&state));
    std::thread::Builder::new()
        .name("boxd-grpc-fake".into())
        .spawn(move || {
            let runtime =
                tokio::runtime::Builder::new_current_thread().enable_all().build().expect("the fake's runtime");
            runtime.block_on(async move {
                let incoming = TcpIncoming::bind(([127, 0, 0, 1], 0).into()).expect("bind 127.0.0.1:0");
                let incoming = incoming.with_nodelay(Some(true));
                bound.send(incoming.local_addr().expect("the fake's address")).expect("report the address");
                Server::builder().serve_with_incoming(serving, incoming).await.expect("the boxd gRPC fake");
            });
        })
        .expect("start the boxd gRPC fake");
    let address = address.recv().expect("the boxd gRPC fake bound");
    BoxdGrpcFake { url: format!("http://{address}"), state }
}

fn seeded(at: usize, item: &Value) -> Vm {
    let id = item["id"].as_str().filter(|id| !id.trim().is_empty());
    let id = id.unwrap_or_else(|| panic!("a seeded machine needs an id: {item}")).to_owned();
    let text = |field: &str| {
        let text =
            |value: &Value| value.as_str().unwrap_or_else(|| panic!("{id}: {field} must be a string")).to_owned();
        item.get(field).map(text)
    };
    let labels = item.get("labels").map_or(Ok(BTreeMap::new()), |labels| serde_json::from_value(labels.clone()));
    // Unseeded: an hour ago, as boxd_fake.py seeds it.
    let an_hour_ago = || SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_secs() as i64 - 3600;
    let created_at = item.get("created_at").map(|at| at.as_i64().filter(|&at| at >= 0));
    Vm {
        name: text("name").unwrap_or_else(|| format!("vm-{at:012x}")),
        status: text("status").unwrap_or_else(|| "running".to_owned()),
        created_at: created_at
            .unwrap_or_else(|| Some(an_hour_ago()))
            .unwrap_or_else(|| panic!("{id}: created_at must be whole epoch seconds (0 = unset)")),
        org: text("org").unwrap_or_default(),
        labels: labels.unwrap_or_else(|error| panic!("{id}: labels: {error}")),
        shared: item.get("shared").is_some_and(|shared| shared.as_bool() == Some(true)),
        destroyed: false,
        id,
    }
}

/// boxd's label key: 1-63 of `a-z 0-9 . _ / -`, starting and ending with a letter or digit.
fn is_label_key(key: &str) -> bool {
    let bytes = key.as_bytes();
    let edge = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let inner = |b: &u8| edge(b) || b"._/-".contains(b);
    match bytes {
        [] => false,
        [only] => edge(only),
        [first, middle @ .., last] => bytes.len() <= 63 && edge(first) && edge(last) && middle.iter().all(inner),
    }
}

impl State {
    fn authorize(&self, metadata: &MetadataMap) -> Result<(), Status> {
        let value = metadata.get("authorization").and_then(|value| value.to_str().ok()).unwrap_or_default();
        let (scheme, token) = value.split_once(' ').unwrap_or((value, ""));
        let token = token.trim();
        if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
            return Err(Status::unauthenticated("missing bearer token"));
        }
        if token != self.config.token {
            return Err(Status::unauthenticated("invalid token"));
        }
        Ok(())
    }

    /// A machine the caller sees: not destroyed, personal or in a member org.
    fn visible(&self, vm: &Vm) -> bool {
        !vm.destroyed && (vm.org.is_empty() || self.orgs.contains(&vm.org))
    }

    /// A machine by id, else by name (personal first), as `GetVm` / `DestroyVm` take either.
    fn find(&self, vms: &Vms, reference: &str) -> Result<usize, Status> {
        if let Some(&at) = vms.index.get(reference).filter(|&&at| self.visible(&vms.oldest_first[at])) {
            return Ok(at);
        }
        let named = |vm: &Vm| !reference.is_empty() && vm.name == reference && self.visible(vm);
        let personal = vms.oldest_first.iter().position(|vm| named(vm) && vm.org.is_empty());
        let found = personal.or_else(|| vms.oldest_first.iter().position(named));
        found.ok_or_else(|| Status::not_found(format!("machine {reference} not found")))
    }
}

fn message(vm: &Vm) -> GetVmResponse {
    let billing_id = if vm.org.is_empty() { String::new() } else { format!("org-{}", vm.org) };
    GetVmResponse {
        vm_id: vm.id.clone(),
        name: vm.name.clone(),
        image_ref: "ubuntu:24.04".to_owned(),
        status: vm.status.clone(),
        restart_policy: "always".to_owned(),
        disk_bytes: 10 << 30,
        org: if vm.shared { vm.org.clone() } else { String::new() },
        billing_org: vm.org.clone(),
        access_domain: "boxd.sh".to_owned(),
        vcpu: 2,
        memory_bytes: 4 << 30,
        created_at: vm.created_at,
        org_id: if vm.shared { billing_id.clone() } else { String::new() },
        billing_org_id: billing_id,
        labels: vm.labels.clone(),
        created_by: USER.to_owned(),
    }
}

fn list_vms(state: &State, request: ListVmsRequest) -> Result<ListVmsResponse, Status> {
    let mut terms = Vec::with_capacity(request.label_selector.len());
    for term in &request.label_selector {
        let (key, value) = match term.split_once('=') {
            Some((key, value)) => (key, Some(value)),
            None => (term.as_str(), None),
        };
        if !is_label_key(key) {
            return Err(Status::invalid_argument(format!("invalid label selector {term:?}")));
        }
        terms.push((key, value));
    }
    let in_context = |vm: &Vm| match request.all_contexts {
        true => vm.org.is_empty() || state.orgs.contains(&vm.org),
        false => vm.org == request.org,
    };
    if !request.all_contexts && !request.org.is_empty() && !state.orgs.contains(&request.org) {
        return Err(Status::permission_denied(format!("not a member of org {}", request.org)));
    }
    let labelled = |vm: &Vm| {
        terms.iter().all(|(key, value)| vm.labels.get(*key).is_some_and(|have| value.is_none_or(|want| have == want)))
    };
    let vms = state.vms.lock().unwrap();
    let listed = vms.oldest_first.iter().filter(|vm| !vm.destroyed && in_context(vm) && labelled(vm));
    Ok(ListVmsResponse { vms: listed.map(message).collect(), ssh_host_key: SSH_HOST_KEY.to_owned() })
}

fn get_vm(state: &State, request: GetVmRequest) -> Result<GetVmResponse, Status> {
    let vms = state.vms.lock().unwrap();
    let at = state.find(&vms, &request.vm_id)?;
    Ok(message(&vms.oldest_first[at]))
}

fn destroy_vm(state: &State, request: DestroyVmRequest) -> Result<DestroyVmResponse, Status> {
    let mut vms = state.vms.lock().unwrap();
    let at = state.find(&vms, &request.vm_id)?;
    vms.oldest_first[at].destroyed = true;
    state.destroyed.fetch_add(1, Ordering::Relaxed);
    Ok(DestroyVmResponse {})
}

/// One method: wait the latency, check the call's bearer, answer.
struct Unary<Req, Resp> {
    state: Arc<State>,
    answer: fn(&State, Req) -> Result<Resp, Status>,
}

impl<Req: Send + 'static, Resp: Send + 'static> UnaryService<Req> for Unary<Req, Resp> {
    type Response = Resp;
    type Future = BoxFuture<Response<Resp>, Status>;

    fn call(&mut self, request: Request<Req>) -> Self::Future {
        let (state, answer) = (Arc::clone(&self.state), self.answer);
        Box::pin(async move {
            tokio::time::sleep(state.config.latency).await;
            state.authorize(request.metadata())?;
            answer(&state, request.into_inner()).map(Response::new)
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

/// The service: routes `/boxd.api.v1.BoxdApi/<method>` by path.
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
                "ListVms" => serve(request, Unary { state, answer: list_vms }).await,
                "GetVm" => serve(request, Unary { state, answer: get_vm }).await,
                "DestroyVm" => serve(request, Unary { state, answer: destroy_vm }).await,
                _ => Status::unimplemented(format!("{method} is not implemented by the in-process boxd fake"))
                    .into_http(),
            })
        })
    }
}
