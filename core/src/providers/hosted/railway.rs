//! [`RailwayProvider`]: Railway sandboxes through Railway's public GraphQL API.
//!
//! **Railway sandboxes carry no labels, names or metadata**, so nothing a
//! listing shows says whose a sandbox is: with the default owner filter
//! nothing listed is ever ours (the engine keeps only sandboxes labelled
//! with our owner). The provider is useful in two ways:
//! - reclaiming records (a run's sandbox, a leak ledger entry): destroy by id;
//! - the orphan sweep, which finds what the store's registry names: by
//!   default each registered id the listing did not show is read by its get
//!   (`sandbox`) and destroyed when it still exists; with `sweep_unlabelled`
//!   the whole environment is listed, every sandbox unlabelled, and only the
//!   ones the registry names are destroyed. An unregistered sandbox (another
//!   tool's, in the same environment) is never touched either way.
//!
//! The wire calls are the official SDK's (npm `railway` 3.11.0;
//! `docs/research/railway.md`, the fake `tests/fakes/railway.mjs` proven by
//! that SDK): every call is a `POST` of `{query, variables}` as JSON to the
//! GraphQL endpoint itself, with the SDK's operation names, selecting only
//! the fields read here:
//! - the listing is `sandboxes(environmentId, first, after)`, a Relay
//!   connection read page after page by `pageInfo.endCursor` while
//!   `pageInfo.hasNextPage` (the SDK drops `pageInfo`; we read it).
//!   `CREATING`, `RUNNING` and `FAILED` (terminal, still listed: destroying
//!   it is harmless) are listed; `DESTROYING` is listed `deleting`
//!   (reported, never destroyed again); `DESTROYED` is gone (left out).
//!   `createdAt` is RFC 3339 with fractions. An unknown status fails the
//!   listing closed.
//! - the get is `sandbox(environmentId, id)`: `null` or `DESTROYED` is gone.
//! - destroy is the mutation `sandboxDestroy(id, environmentId)`, answered
//!   with the sandbox `DESTROYING`; permanent. A sandbox already gone
//!   answers the GraphQL error "Sandbox not found" (as the fake does; the
//!   real wording is unverified, and any other error fails the destroy, to
//!   the ledger) or `sandboxDestroy: null`: both are gone, success.
//!
//! Errors come under HTTP 200 as GraphQL `errors` beside a `data` of nulls,
//! so `errors` is read before `data` (the entry's verdict): "Not Authorized"
//! (a wrong token, or an environment the token cannot see) and "Project
//! Token not found" are a refused credential (`HostedError::Unauthorized`,
//! naming the variables to set, never the token); anything else fails the
//! call with Railway's message, as does any other status. `429` with
//! `Retry-After` is waited out by the engine.
//!
//! Auth follows the SDK: the `apiKey` option is an account or workspace
//! token, sent as `Authorization: Bearer`; else `RAILWAY_TOKEN`, a project
//! token, sent as `project-access-token`; else `RAILWAY_API_TOKEN`, as
//! Bearer. (The engine reads the variables in the vendor row's order, which
//! must be the SDK's for `RAILWAY_TOKEN` to win when both are set.) The
//! environment is `environmentId`, else `RAILWAY_ENVIRONMENT_ID`, required
//! (records do not carry it: configure the one TanStack's provider created
//! in). The endpoint is the option, else `RAILWAY_GRAPHQL_ENDPOINT`, else
//! [`RAILWAY_PUBLIC_API_URL`].

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use super::client::{parse_rfc3339_millis, Answer, Verdict};
use super::{
    listed, variable, Bodies, Body, Entry, Extras, Get, HostedConfig, HostedProvider, Listing, Page, Scope,
    ScopeOptions, Vendor, Verb,
};
use crate::contract::errors::ProviderError;
use crate::model::fleet::ListedSandbox;
use crate::options::provider::{vendor_option, HostedSettings, Marks, OwnerFilter, ScopeOption, VendorSpec};
use crate::options::Name;
use crate::providers::HostedSandboxProvider;
use crate::providers::InvalidInput;
use crate::report::messages;

/// Railway's public GraphQL endpoint.
pub const RAILWAY_PUBLIC_API_URL: &str = "https://backboard.railway.com/graphql/v2";

/// The variable holding a project token (sent as `project-access-token`).
const PROJECT_TOKEN_VARIABLE: &str = "RAILWAY_TOKEN";

/// The listing (and the check, with `first: 1`), as the SDK's `RailwaySandboxes`.
const LIST: &str = "query RailwaySandboxes($environmentId: String!, $first: Int, $after: String) {
  sandboxes(environmentId: $environmentId, first: $first, after: $after) {
    edges { node { id status createdAt } }
    pageInfo { hasNextPage endCursor }
  }
}";

/// One sandbox, as the SDK's `RailwaySandbox` (`Sandbox.connect`).
const GET: &str = "query RailwaySandbox($environmentId: String!, $id: String!) {
  sandbox(environmentId: $environmentId, id: $id) { id status createdAt }
}";

/// The destroy, as the SDK's `RailwaySandboxDestroy` (`sandbox.destroy()`).
const DESTROY: &str = "mutation RailwaySandboxDestroy($id: String!, $environmentId: String!) {
  sandboxDestroy(id: $id, environmentId: $environmentId) { id status }
}";

/// What Railway answers a credential it refuses (or an environment the token cannot see).
const REFUSALS: &[&str] = &["Not Authorized", "Project Token not found"];

/// What Railway answers a destroy of a sandbox already gone.
const NOT_FOUND: &str = "Sandbox not found";

/// `environmentId` / `environment_id`: one of Railway's own options.
pub const ENVIRONMENT_ID: Name = vendor_option("environmentId", "environment_id");
/// Railway as hosts, the command and the docs see it: its row of the one
/// vendor list (`hosted/vendors.rs`), from which the options, the Node and
/// Python classes, the command's flag and section and README's row come.
pub const SPEC: VendorSpec = VendorSpec {
    key: "railway",
    label: "Railway",
    class: "RailwayProvider",
    credential_variables: &["RAILWAY_TOKEN", "RAILWAY_API_TOKEN"],
    credential_options: &[],
    api_url_variable: Some("RAILWAY_GRAPHQL_ENDPOINT"),
    api_url_doc: "RAILWAY_GRAPHQL_ENDPOINT, else https://backboard.railway.com/graphql/v2 (GraphQL)",
    scope_options: &[ScopeOption { name: ENVIRONMENT_ID, variable: Some("RAILWAY_ENVIRONMENT_ID"), required: true }],
    default_page_size: 100,
    max_page_size: 100,
    owner_filter: OwnerFilter::Client,
    marks: Marks::Unlabelled,
    destroy_doc: "sandboxDestroy(id, environmentId)",
    gone_doc: "`sandbox: null` and `DESTROYED`; `DESTROYING` is deleting",
};

/// A provider from a host's or the command's settings (sends nothing).
pub(crate) fn build(settings: HostedSettings) -> Result<Box<dyn HostedSandboxProvider>, ProviderError> {
    super::build_entry::<Railway>(settings)
}

/// Railway (the marker of [`RailwayConfig`] and [`RailwayProvider`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Railway;

impl Vendor for Railway {
    // Every call is a POST of its body to the endpoint itself: the paths are empty.
    const ENTRY: &'static Entry = &Entry {
        spec: &SPEC,
        credential_hint: "RAILWAY_TOKEN or RAILWAY_API_TOKEN (with RAILWAY_ENVIRONMENT_ID)",
        auth: ("authorization", "Bearer "),
        headers: &[("accept", "application/json")],
        default_api_url,
        scope,
        check_path: |_| String::new(),
        list_path: |_, _| String::new(),
        read_page,
        destroy: (Verb::Post, |_, _| String::new()),
        get: Some(Get { path: |_, _| String::new(), read: read_one }),
    };
    const EXTRAS: &'static Extras = &Extras {
        bodies: Some(Bodies { check: check_body, list: list_body, get: get_body, destroy: destroy_body }),
        verdict: Some(verdict),
        auth_for: Some(auth_for),
        check_owner: None,
    };
}

/// How a [`RailwayProvider`] reaches Railway.
pub type RailwayConfig = HostedConfig<Railway>;

/// Railway sandboxes: destroy by `sandboxDestroy`; no labels, so ours are
/// only those a record names.
pub type RailwayProvider = HostedProvider<Railway>;

/// `RAILWAY_GRAPHQL_ENDPOINT`, else the public endpoint.
fn default_api_url() -> String {
    variable("RAILWAY_GRAPHQL_ENDPOINT").unwrap_or_else(|| RAILWAY_PUBLIC_API_URL.to_owned())
}

/// Every call names the environment (`RAILWAY_ENVIRONMENT_ID`, required),
/// kept in the scope's `project`.
fn scope(options: &ScopeOptions<'_>) -> Result<Scope, InvalidInput> {
    let environment = options.get(ENVIRONMENT_ID).map(str::to_owned).or_else(|| variable("RAILWAY_ENVIRONMENT_ID"));
    let missing =
        || messages::hosted_missing_scope("Railway", "environment", "RAILWAY_ENVIRONMENT_ID", "environmentId");
    let environment =
        environment.filter(|id| !id.is_empty()).ok_or_else(|| InvalidInput::new("environmentId", missing()))?;
    Ok(Scope { project: environment, ..Scope::default() })
}

/// The SDK's headers: a project token (from `RAILWAY_TOKEN`) as
/// `project-access-token`; any other (the option, `RAILWAY_API_TOKEN`) as Bearer.
fn auth_for(variable: Option<&str>) -> (&'static str, &'static str) {
    if variable == Some(PROJECT_TOKEN_VARIABLE) {
        ("project-access-token", "")
    } else {
        Railway::ENTRY.auth
    }
}

fn check_body(scope: &Scope) -> Body {
    let variables = json!({ "environmentId": scope.project, "first": 1 });
    Body { json: json!({ "query": LIST, "variables": variables }), name: "sandboxes" }
}

fn list_body(listing: &Listing<'_>, cursor: Option<&str>) -> Body {
    let mut variables = json!({ "environmentId": listing.scope.project, "first": listing.page_size });
    if let Some(cursor) = cursor {
        variables["after"] = json!(cursor);
    }
    Body { json: json!({ "query": LIST, "variables": variables }), name: "sandboxes" }
}

fn get_body(scope: &Scope, id: &str) -> Body {
    let variables = json!({ "environmentId": scope.project, "id": id });
    Body { json: json!({ "query": GET, "variables": variables }), name: "sandbox" }
}

fn destroy_body(scope: &Scope, id: &str) -> Body {
    let variables = json!({ "id": id, "environmentId": scope.project });
    Body { json: json!({ "query": DESTROY, "variables": variables }), name: "sandboxDestroy" }
}

/// `errors` before `data`: a refusal is unauthorized, "Sandbox not found"
/// (every error) is gone, any other error fails with Railway's message;
/// without errors a 2xx is done and any other status failed.
fn verdict(answer: &Answer) -> Verdict {
    let errors = answer.json::<Errors>().map(|body| body.errors).unwrap_or_default();
    let messages: Vec<&str> = errors.iter().map(|error| error.message.trim()).collect();
    let is = |message: &str, known: &str| message.eq_ignore_ascii_case(known);
    if let Some(refusal) = messages.iter().find(|message| REFUSALS.iter().any(|known| is(message, known))) {
        return Verdict::Unauthorized((*refusal).to_owned());
    }
    match messages.first() {
        None if answer.status.is_success() => Verdict::Done,
        None => Verdict::Failed(String::new()),
        Some(_) if messages.iter().all(|message| is(message, NOT_FOUND)) => Verdict::Gone,
        Some(_) => {
            let message = messages.iter().find(|message| !is(message, NOT_FOUND)).copied().unwrap_or_default();
            let message = if message.is_empty() { "a GraphQL error without a message" } else { message };
            Verdict::Failed(message.to_owned())
        }
    }
}

/// A page of `sandboxes`, the next by `pageInfo.endCursor`.
fn read_page(answer: &Answer) -> Result<Page, String> {
    let Sandboxes { sandboxes } = data(answer)?;
    let next = match (sandboxes.page_info.has_next_page, sandboxes.page_info.end_cursor) {
        (false, _) => None,
        (true, Some(cursor)) if !cursor.is_empty() => Some(cursor),
        (true, _) => return Err("`pageInfo.hasNextPage` without a `pageInfo.endCursor`".to_owned()),
    };
    let nodes = sandboxes.edges.into_iter().map(|edge| edge.node.checked()).collect::<Result<Vec<_>, _>>()?;
    let live = nodes.into_iter().filter(|sandbox| sandbox.status != "DESTROYED").collect();
    Ok((listed(live, RailwaySandbox::into_listed)?, next))
}

/// `sandbox(environmentId, id)`: the sandbox; `null` or `DESTROYED` is gone.
fn read_one(answer: &Answer) -> Result<Option<ListedSandbox>, String> {
    let Some(sandbox) = data::<OneSandbox>(answer)?.sandbox else { return Ok(None) };
    let sandbox = sandbox.checked()?;
    if sandbox.status == "DESTROYED" {
        return Ok(None);
    }
    sandbox.into_listed().map(Some)
}

/// A GraphQL answer's `data`, refused when it comes with `errors`.
fn data<T: DeserializeOwned>(answer: &Answer) -> Result<T, String> {
    let body: Response<T> = answer.json()?;
    if !body.errors.is_empty() {
        return Err(format!("{} GraphQL error(s) beside the data", body.errors.len()));
    }
    body.data.ok_or_else(|| "no `data`".to_owned())
}

#[derive(Deserialize)]
struct Response<T> {
    data: Option<T>,
    #[serde(default)]
    errors: Vec<Value>,
}

#[derive(Deserialize)]
struct Errors {
    #[serde(default)]
    errors: Vec<GraphqlError>,
}

#[derive(Deserialize)]
struct GraphqlError {
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
struct Sandboxes {
    sandboxes: Connection,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Connection {
    edges: Vec<Edge>,
    page_info: PageInfo,
}

#[derive(Deserialize)]
struct Edge {
    node: RailwaySandbox,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageInfo {
    has_next_page: bool,
    end_cursor: Option<String>,
}

#[derive(Deserialize)]
struct OneSandbox {
    sandbox: Option<RailwaySandbox>,
}

/// A sandbox as the listing and the get show it (the fields the sweep reads).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RailwaySandbox {
    id: String,
    status: String,
    created_at: String,
}

impl RailwaySandbox {
    /// Every status Railway's schema declares; anything else fails closed.
    fn checked(self) -> Result<Self, String> {
        if ["CREATING", "RUNNING", "DESTROYING", "DESTROYED", "FAILED"].contains(&self.status.as_str()) {
            Ok(self)
        } else {
            Err(format!("sandbox {:?} has unknown status {:?}", self.id, self.status))
        }
    }

    fn into_listed(self) -> Result<ListedSandbox, String> {
        Ok(ListedSandbox {
            created_at: parse_rfc3339_millis(&self.created_at),
            // No labels: unlabelled (the registry decides, with `sweep_unlabelled`).
            owner: None,
            key: None,
            deleting: self.status == "DESTROYING",
            id: self.id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(body: &str) -> Result<Page, String> {
        read_page(&Answer::for_test(200, body))
    }

    fn node(id: &str, status: &str) -> String {
        format!(r#"{{"node":{{"id":"{id}","status":"{status}","createdAt":"2026-01-01T00:00:00.250Z","region":"x"}}}}"#)
    }

    #[test]
    fn destroyed_is_gone_destroying_is_deleting_and_failed_is_listed() {
        let edges = ["a", "b", "c", "d", "e"]
            .iter()
            .zip(["RUNNING", "CREATING", "FAILED", "DESTROYING", "DESTROYED"])
            .map(|(id, status)| node(id, status))
            .collect::<Vec<_>>()
            .join(",");
        let body = format!(
            r#"{{"data":{{"sandboxes":{{"edges":[{edges}],"pageInfo":{{"hasNextPage":true,"endCursor":"T2Zm"}}}}}}}}"#
        );
        let (listed, next) = page(&body).unwrap();
        let seen: Vec<(&str, bool)> = listed.iter().map(|sandbox| (sandbox.id.as_str(), sandbox.deleting)).collect();
        assert_eq!(seen, [("a", false), ("b", false), ("c", false), ("d", true)]);
        assert_eq!(next.as_deref(), Some("T2Zm"));
        assert_eq!((listed[0].owner.as_deref(), listed[0].key.as_deref()), (None, None), "no labels");
        assert_eq!(listed[0].created_at, Some(1_767_225_600_250));
        let last = r#"{"data":{"sandboxes":{"edges":[],"pageInfo":{"hasNextPage":false,"endCursor":null}}}}"#;
        assert_eq!(page(last).unwrap(), (Vec::new(), None));
    }

    #[test]
    fn pages_that_do_not_read_as_documented_fail_closed() {
        let odd = format!(
            r#"{{"data":{{"sandboxes":{{"edges":[{}],"pageInfo":{{"hasNextPage":false}}}}}}}}"#,
            node("a", "PAUSED")
        );
        for bad in [
            odd.as_str(),
            r#"{"data":{"sandboxes":{"edges":[],"pageInfo":{"hasNextPage":true,"endCursor":""}}}}"#,
            r#"{"data":{"sandboxes":{"edges":"not a list","pageInfo":{"hasNextPage":false}}}}"#,
            r#"{"data":null,"errors":[{"message":"Problem processing request"}]}"#,
            r#"{"data":{"sandboxes":{"edges":[],"pageInfo":{"hasNextPage":false}}},"errors":[{"message":"x"}]}"#,
            r#"{"data":{"sandboxes":{"edges":[{"node":{"id":"a","status":"RUNNING"}}],"pageInfo":{"hasNextPage":false}}}}"#,
        ] {
            assert!(page(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_get_reads_null_and_destroyed_as_gone() {
        let one = |body: &str| read_one(&Answer::for_test(200, body));
        assert_eq!(one(r#"{"data":{"sandbox":null}}"#), Ok(None));
        let tomb = r#"{"data":{"sandbox":{"id":"a","status":"DESTROYED","createdAt":"2026-01-01T00:00:00Z"}}}"#;
        assert_eq!(one(tomb), Ok(None));
        let live = r#"{"data":{"sandbox":{"id":"a","status":"FAILED","createdAt":"2026-01-01T00:00:00Z"}}}"#;
        assert_eq!(one(live).unwrap().map(|sandbox| sandbox.id), Some("a".to_owned()));
        assert!(one(r#"{"data":{"sandbox":{"id":"a","status":"GONE","createdAt":"x"}}}"#).is_err());
    }

    #[test]
    fn errors_are_read_before_data() {
        let judge = |status: u16, body: &str| verdict(&Answer::for_test(status, body));
        let error = |message: &str| format!(r#"{{"errors":[{{"message":"{message}","path":["x"]}}],"data":null}}"#);
        assert_eq!(judge(200, &error("Not Authorized")), Verdict::Unauthorized("Not Authorized".into()));
        assert_eq!(
            judge(200, &error("Project Token not found")),
            Verdict::Unauthorized("Project Token not found".into())
        );
        assert_eq!(judge(200, &error("Sandbox not found")), Verdict::Gone);
        assert_eq!(
            judge(200, &error("Problem processing request")),
            Verdict::Failed("Problem processing request".into())
        );
        assert_eq!(
            judge(500, &error("Problem processing request")),
            Verdict::Failed("Problem processing request".into())
        );
        assert_eq!(judge(200, r#"{"data":{"sandboxDestroy":null}}"#), Verdict::Done);
        assert_eq!(judge(200, r#"{"data":{"x":1},"errors":[]}"#), Verdict::Done);
        // A 404 is a wrong endpoint here, never a sandbox gone.
        assert_eq!(judge(404, "<html>not found</html>"), Verdict::Failed(String::new()));
    }

    #[test]
    fn a_project_token_goes_in_its_own_header_and_every_other_as_bearer() {
        assert_eq!(auth_for(Some("RAILWAY_TOKEN")), ("project-access-token", ""));
        assert_eq!(auth_for(Some("RAILWAY_API_TOKEN")), ("authorization", "Bearer "));
        assert_eq!(auth_for(None), ("authorization", "Bearer "), "the apiKey option");
    }

    #[test]
    fn the_environment_is_required_and_named_by_every_body() {
        if std::env::var("RAILWAY_ENVIRONMENT_ID").is_err() {
            let error = scope(&ScopeOptions { options: &std::collections::BTreeMap::new() }).unwrap_err();
            assert_eq!(error.field, "environmentId");
            assert!(error.to_string().contains("RAILWAY_ENVIRONMENT_ID"), "{error}");
        }
        let given = std::collections::BTreeMap::from([(ENVIRONMENT_ID.node, "env-1".to_owned())]);
        let scope = scope(&ScopeOptions { options: &given }).unwrap();
        let listing = Listing { scope: &scope, owner: None, page_size: 50 };
        let first = list_body(&listing, None);
        assert_eq!(
            (first.name, &first.json["variables"]),
            ("sandboxes", &json!({ "environmentId": "env-1", "first": 50 }))
        );
        let next = list_body(&listing, Some("c1"));
        assert_eq!(next.json["variables"]["after"], "c1");
        assert_eq!(check_body(&scope).json["variables"], json!({ "environmentId": "env-1", "first": 1 }));
        assert_eq!(get_body(&scope, "s1").json["variables"], json!({ "environmentId": "env-1", "id": "s1" }));
        let destroy = destroy_body(&scope, "s1");
        assert_eq!(destroy.json["variables"], json!({ "id": "s1", "environmentId": "env-1" }));
        assert!(destroy.json["query"].as_str().unwrap().starts_with("mutation RailwaySandboxDestroy"));
    }
}
