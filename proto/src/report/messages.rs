//! Every string a flow emits, in one place, so all drivers and bindings
//! print exactly the same (and exactly what the reference prints).

use crate::model::ReclaimOutcome;

/// Warned when the instance record names another provider.
pub const PROVIDER_MISMATCH: &str = "reclaim: instance record belongs to a different provider; refusing to destroy";

/// Warned when the provider's destroy failed, before the record is deleted anyway.
pub const DESTROY_FAILED_DELETING_ANYWAY: &str = "reclaim: provider destroy failed; deleting the record anyway";

/// Logged at `errors` level by the reclaimer on `destroy-failed`.
pub const RECLAIMER_DESTROY_FAILED: &str = "reclaim: destroy failed; sandbox may still be running";

/// The reclaimer's `sandbox`-level line for every outcome but `destroy-failed`:
/// `reclaim: <outcome>`. Static strings, so the hot path allocates nothing.
pub fn reclaimer_outcome_line(outcome: ReclaimOutcome) -> &'static str {
    match outcome {
        ReclaimOutcome::NoSandboxKey => "reclaim: no-sandbox-key",
        ReclaimOutcome::NotFound => "reclaim: not-found",
        ReclaimOutcome::ProviderMismatch => "reclaim: provider-mismatch",
        ReclaimOutcome::Destroyed => "reclaim: destroyed",
        ReclaimOutcome::DestroyFailed => "reclaim: destroy-failed",
    }
}

/// The message of `SandboxReclaimFailedError`, character for character as the
/// reference builds it. Every binding calls this one function.
pub fn reclaim_failed_message(run_id: &str, sandbox_key: Option<&str>) -> String {
    let for_key = match sandbox_key {
        Some(key) => format!(" for \"{key}\""),
        None => String::new(),
    };
    format!(
        "Reclaiming the sandbox for run \"{run_id}\" failed: the provider's destroy rejected and \
         the instance record{for_key} was deleted anyway, so the sandbox may still be running and \
         is no longer reachable from the instance store."
    )
}

/// Name of the error class/exception in every binding.
pub const RECLAIM_FAILED_ERROR_NAME: &str = "SandboxReclaimFailedError";

/// Name of the timeout error class/exception in every binding.
pub const DESTROY_TIMEOUT_ERROR_NAME: &str = "SandboxDestroyTimeoutError";

/// The message of `SandboxDestroyTimeoutError` (the warn line's `error`) and
/// of the leak entry a timed-out destroy leaves.
pub fn destroy_timeout_message(provider_sandbox_id: &str, timeout_ms: u64) -> String {
    format!("destroying sandbox \"{provider_sandbox_id}\" did not settle within {timeout_ms} ms; it was cancelled")
}

/// The leak ledger's text for a thrown value whose message cannot be read
/// (its `message` getter throws, a revoked Proxy, a failing `__str__`).
pub const UNREADABLE_ERROR: &str = "destroy failed with an error whose message could not be read";

/// The ledger text of a sandbox whose idle record a reconcile pass expired.
pub const IDLE_EXPIRED: &str = "idle: the instance record was expired by a reconcile pass";

/// Why a provider without `list` gets no orphan sweep.
pub const PROVIDER_CANNOT_LIST: &str =
    "the provider has no list(): no orphan sweep (nothing guessed, nothing destroyed)";

/// Why a sweep failed closed: a listed sandbox of unknown creation time.
pub fn unknown_created_at(sandbox_id: &str) -> String {
    format!("listed sandbox \"{sandbox_id}\" has no known creation time; the sweep destroys nothing of this provider")
}

/// Why a sweep failed closed: a listed sandbox of unknown owner.
pub fn unknown_owner(sandbox_id: &str) -> String {
    format!("listed sandbox \"{sandbox_id}\" has no known owner; the sweep destroys nothing of this provider")
}

/// Why a sweep failed closed: the listing hung past the deadline.
pub fn list_timeout_message(provider: &str, timeout_ms: u64) -> String {
    format!("listing the sandboxes of provider \"{provider}\" did not settle within {timeout_ms} ms; it was cancelled")
}

pub fn lookup_timeout_message(provider: &str, timeout_ms: u64) -> String {
    format!(
        "looking up the registered sandboxes of provider \"{provider}\" did not settle within {timeout_ms} ms; it was cancelled"
    )
}

/// A host answered a fleet effect with something of the wrong shape.
pub const MALFORMED_ANSWER: &str = "malformed answer";

/// The audit row's `error` when the store refused a leak's outcome: its
/// claim had passed to another pass.
pub const LEASE_LOST: &str =
    "the lease ran out before this outcome was written and another pass holds the entry now; nothing was written";

/// A driver fed a machine something it did not ask for (a bug, never input).
pub const MISUSE: &str = "sandbox-reclaim flow machine misused";
/// ... a completion for an effect the machine is not waiting for.
pub const MISUSE_UNKNOWN_EFFECT: &str = "completion for an effect the machine is not waiting for";
/// ... a completion of the wrong kind for the effect.
pub const MISUSE_WRONG_COMPLETION: &str = "completion of the wrong kind for its effect";
/// ... a ledger effect for a store without a ledger.
pub const MISUSE_NO_LEDGER: &str = "a leak-ledger effect for a store without a ledger";

/// Meta keys, in the order the reference writes them.
pub mod meta_keys {
    pub const RUN_ID: &str = "runId";
    pub const SANDBOX_KEY: &str = "sandboxKey";
    pub const RECORD_PROVIDER: &str = "recordProvider";
    pub const RECLAIMER_PROVIDER: &str = "reclaimerProvider";
    pub const PROVIDER_SANDBOX_ID: &str = "providerSandboxId";
    pub const ERROR: &str = "error";
}

// ---- options (proto/src/options/mod.rs): `field` is spelled as the host names it
// (`options.limit` in Node, `` `limit` `` in Python).

/// The binding handed over something that is not an object of options.
/// A binding asked for the options of a flow the core does not have (a binding bug).
pub fn unknown_flow(flow: &str) -> String {
    format!(
        "{MISUSE}: no flow named {flow:?} (the flows with options are reclaim, reclaimAll, reconcile and retryLeaks)"
    )
}

/// A binding asked for the options of a vendor the core has no hosted provider for.
/// `keys`: every vendor's key (the runtime crate's `providers::VENDORS`).
pub fn unknown_vendor(vendor: &str, keys: &[&str]) -> String {
    format!("{MISUSE}: no hosted provider for {vendor:?} (the vendors are {})", keys.join(", "))
}

/// A `LocalProvider` isolation that is none of the three.
pub fn isolation_choices(field: &str, got: &str) -> String {
    format!("{field} must be 'auto', 'namespaces' or 'process-group', got {got:?}")
}

pub fn option_not_an_object() -> String {
    "options must be an object".to_owned()
}

/// Node: a count or a duration that is not a whole number from `minimum`.
pub fn node_whole_number(field: &str, minimum: impl std::fmt::Display) -> String {
    format!("{field} must be a whole number >= {minimum}")
}

/// Node: a count of 2^32 or more.
pub fn node_count_below_2_32(field: &str, minimum: u32) -> String {
    format!("{field} must be a whole number >= {minimum} and < 2^32")
}

/// Node: a value of the wrong type (`a boolean`, `a string`).
pub fn node_must_be(field: &str, what: &str) -> String {
    format!("{field} must be {what}")
}

/// Python: a value of the wrong type; `got` is its type's name.
pub fn python_must_be(field: &str, what: &str, got: &str) -> String {
    format!("{field} must be {what}, got {got}")
}

/// Python: an int out of range.
pub fn python_whole_number_range(field: &str, minimum: u64, maximum: u64, got: &str) -> String {
    format!("{field} must be a whole number between {minimum} and {maximum}, got {got}")
}

/// Python: seconds out of range (negative, NaN, or beyond what milliseconds hold).
pub fn python_seconds_range(field: &str, maximum: f64, got: &str) -> String {
    format!("{field} must be a number of seconds between 0 and {maximum}, got {got}")
}

/// Python: seconds that round to fewer milliseconds than the option takes.
pub fn python_at_least_seconds(field: &str, minimum_ms: u64, got: &str) -> String {
    let seconds = minimum_ms as f64 / 1000.0;
    format!("{field} must be at least {seconds} seconds, got {got}")
}

/// A string that cannot be carried exactly (`utf16`: the host's strings are UTF-16, as JS's).
pub fn lone_surrogate(field: &str, utf16: bool) -> String {
    let what = if utf16 { "a lone UTF-16 surrogate" } else { "a lone surrogate" };
    format!("{field} must not contain {what} (it cannot be carried exactly)")
}

/// A pass without providers.
pub fn no_provider(field: &str) -> String {
    format!("{field} must name at least one provider")
}

/// Two providers of a pass with one name (`python`: as Python words it, with the name's repr).
pub fn providers_share_a_name(field: &str, name: &str, python: bool) -> String {
    if python {
        format!("{field}: two providers share a name ('{name}')")
    } else {
        format!("{field}: two providers share the name {name:?}")
    }
}

// ---- hosted providers (E2B, ...): never a credential, always what to set ----

/// A hosted provider built without a credential.
/// A hosted provider's `pageSize` outside the vendor's range.
pub fn hosted_page_size(largest: u32, given: u32) -> String {
    format!("must be between 1 and {largest}, got {given}")
}

/// Vercel lists per project, and none was given.
pub const VERCEL_NO_PROJECT: &str = "no Vercel project: set VERCEL_PROJECT_ID or pass the `projectId` option";

/// A required scope option (Blaxel's workspace) neither given nor in its variable.
pub fn hosted_missing_scope(vendor: &str, what: &str, variable: &str, option: &str) -> String {
    format!("no {vendor} {what}: set {variable} or pass the `{option}` option")
}

pub fn hosted_missing_credential(vendor: &str, variable: &str) -> String {
    format!("no {vendor} API key: set {variable} or pass the provider an API key")
}

/// A credential that cannot be sent in an HTTP header.
pub fn hosted_unprintable_credential(vendor: &str) -> String {
    format!("the {vendor} API key contains characters an HTTP header cannot carry")
}

/// An API base URL that is not an `http(s)://host` URL.
pub fn hosted_bad_url(vendor: &str, url: &str) -> String {
    format!("the {vendor} API URL must be an http:// or https:// URL with a host, got {url:?}")
}

/// The vendor refused the credential (401/403).
pub fn hosted_unprintable_header(vendor: &str, header: &str) -> String {
    format!("a {vendor} scope value cannot be sent in the `{header}` header (printable ASCII only)")
}

pub fn hosted_unauthorized(vendor: &str, status: u16, variable: &str) -> String {
    format!("{vendor} refused the API key (HTTP {status}): set {variable} to a valid key (or pass one to the provider)")
}

/// The vendor refused the credential in its answer's own words, under a
/// status that is no refusal (a GraphQL "Not Authorized" under HTTP 200).
pub fn hosted_refused(vendor: &str, detail: &str, variable: &str) -> String {
    format!("{vendor} refused the credential ({detail}): set {variable} to a valid key (or pass one to the provider)")
}

/// The vendor answered an error under a success status (GraphQL's `errors` under HTTP 200).
pub fn hosted_error_answer(vendor: &str, method: &str, request: &str, detail: &str) -> String {
    format!("{vendor} answered {method} {request} with an error: {detail}")
}

/// The vendor answered a status the call does not accept.
pub fn hosted_status(vendor: &str, method: &str, path: &str, status: u16, detail: &str) -> String {
    if detail.is_empty() {
        format!("{vendor} answered HTTP {status} to {method} {path}")
    } else {
        format!("{vendor} answered HTTP {status} to {method} {path}: {detail}")
    }
}

/// A request that got no answer (connection refused, timed out, reset).
pub fn hosted_transport(vendor: &str, method: &str, path: &str, cause: &str) -> String {
    format!("{vendor} request {method} {path} failed: {cause}")
}

/// An answer whose body is not what the vendor documents.
pub fn hosted_malformed(vendor: &str, method: &str, path: &str, why: &str) -> String {
    format!("{vendor} answered {method} {path} with a body we cannot vouch for: {why}")
}

/// A listing whose next-page cursor (E2B's page token) is one this listing
/// already followed: the vendor's pages form a cycle, so the listing would
/// never end. `page` is the page that offered it; `request` the listing's
/// request (`GET /v2/sandboxes`, `SandboxListV2`).
pub fn hosted_listing_cycle(vendor: &str, request: &str, page: u32) -> String {
    format!(
        "{vendor} listing {request} never ends: page {page} points back to a page cursor this listing already \
         followed (a cursor cycle); nothing is swept"
    )
}

/// A listing that offered more pages than a listing follows.
pub fn hosted_listing_page_ceiling(vendor: &str, request: &str, ceiling: u32) -> String {
    format!(
        "{vendor} listing {request} passed the ceiling of {ceiling} pages per listing (more pages were offered); \
         nothing is swept"
    )
}

/// A listing that carried more sandboxes than a listing reads.
pub fn hosted_listing_item_ceiling(vendor: &str, request: &str, ceiling: u64) -> String {
    format!("{vendor} listing {request} passed the ceiling of {ceiling} sandboxes per listing; nothing is swept")
}

/// A hosted vendor this build was compiled without (a cargo feature).
pub fn hosted_vendor_not_built(vendor: &str, feature: &str) -> String {
    format!("this build has no {vendor} provider (build sandbox-reclaim with the `{feature}` feature)")
}

/// A gRPC vendor (Modal) answered a status the call does not accept.
pub fn hosted_grpc_status(vendor: &str, method: &str, code: &str, detail: &str) -> String {
    if detail.is_empty() {
        format!("{vendor} answered gRPC {code} to {method}")
    } else {
        format!("{vendor} answered gRPC {code} to {method}: {detail}")
    }
}

/// Modal built without both parts of its token.
pub fn modal_missing_token(missing: &str) -> String {
    format!(
        "no Modal token {missing}: set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET or pass the provider `tokenId` and \
         `tokenSecret`"
    )
}

/// A token part that cannot be sent in gRPC metadata.
pub const MODAL_UNPRINTABLE_TOKEN: &str = "the Modal token contains characters gRPC metadata cannot carry";

/// Modal refused the token (UNAUTHENTICATED / PERMISSION_DENIED).
pub fn modal_unauthorized(code: &str) -> String {
    format!(
        "Modal refused the token (gRPC {code}): set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET to a valid token (or \
         pass them to the provider)"
    )
}

/// `AuthTokenGet` answered no token.
pub const MODAL_NO_AUTH_TOKEN: &str = "Modal answered AuthTokenGet without a token";

/// The listing has no app and no environment to list within. Modal
/// deprecates listing without an app (it scans a whole environment), so the
/// provider never does it unasked.
pub const MODAL_NO_LISTING_SCOPE: &str = "no Modal app to list sandboxes within: pass the `appId` option (the \
     app the sandboxes were created in). Modal deprecates listing without an app, which scans a whole environment; \
     to do so anyway, pass `environment` or set MODAL_ENVIRONMENT. Nothing is swept";

/// `ownerLabels` for a vendor that is none of the hosted vendors.
pub fn owner_labels_vendor(vendor: &str, keys: &[&str]) -> String {
    format!(
        "no hosted vendor {vendor:?} (the vendors are {}); leave `vendor` out for Docker, local or a provider of \
         your own (name/value labels)",
        keys.join(", ")
    )
}

/// `ownerLabels` for a vendor whose sandboxes carry no labels.
pub fn vendor_unlabelled(vendor: &str) -> String {
    format!(
        "{vendor} sandboxes carry no labels, so there is nothing to set at create: the orphan sweep finds what a \
         deleted record named through the store's registry (write records as usual)"
    )
}

/// An owner that cannot be part of a vendor's owner label (Upstash Box: `sr:<owner>`, labels at most 20 of `[A-Za-z0-9._:-]`).
pub fn hosted_owner_label_unfit(vendor: &str, max_label: usize, prefix: &str, max_owner: usize, owner: &str) -> String {
    format!(
        "{vendor} labels are at most {max_label} characters of letters, digits, '.', '_', '-' and ':', and the owner \
         label is `{prefix}<owner>`: the owner must be 1 to {max_owner} such characters, got {owner:?}"
    )
}

/// boxd built without a credential.
pub fn boxd_missing_credential() -> String {
    "no boxd credential: set BOXD_TOKEN (a token) or BOXD_API_KEY (a `bxd_` API key), or pass the provider \
     `apiKey` (a `bxd_` key is exchanged for a token, anything else is sent as a token)"
        .to_owned()
}

/// A boxd token gRPC metadata cannot carry.
pub fn boxd_unprintable_token() -> String {
    "the boxd token contains characters gRPC metadata cannot carry".to_owned()
}

/// boxd refused the credential on a gRPC call (UNAUTHENTICATED / PERMISSION_DENIED).
pub fn boxd_unauthorized(code: &str) -> String {
    let org = match code {
        "PERMISSION_DENIED" => {
            "; PERMISSION_DENIED also answers a listing of an org the credential's user is not a member of (the \
             `org` option, else BOXD_ORG)"
        }
        _ => "",
    };
    format!(
        "boxd refused the credential (gRPC {code}): set BOXD_TOKEN to a valid token or BOXD_API_KEY to a valid \
         `bxd_` API key (or pass one to the provider as `apiKey`){org}"
    )
}

/// boxd's token exchange refused the API key (HTTP 401 / 403).
pub fn boxd_key_refused(status: u16) -> String {
    format!(
        "boxd refused the API key (HTTP {status} from POST /api/v1/auth/token): set BOXD_API_KEY to a valid `bxd_` \
         API key or BOXD_TOKEN to a valid token (or pass one to the provider as `apiKey`)"
    )
}

/// Kubernetes: no kubeconfig and not inside a cluster.
pub fn kubernetes_no_config(why: &str) -> String {
    format!(
        "no Kubernetes credentials: set KUBECONFIG (or pass the `kubeconfig` option), write ~/.kube/config, or run \
         in a cluster with a service account ({why})"
    )
}

/// Kubernetes: a kubeconfig that does not read, or lacks what it must name.
pub fn kubernetes_bad_config(what: &str, why: &str) -> String {
    format!("the Kubernetes {what} cannot be used: {why}")
}

/// Kubernetes: why no credentials were found (for [`kubernetes_no_config`]).
pub const KUBERNETES_EMPTY_KUBECONFIG: &str = "the `kubeconfig` option is empty";
pub const KUBERNETES_NOTHING_FOUND: &str =
    "KUBECONFIG is not set, ~/.kube/config does not exist, KUBERNETES_SERVICE_HOST is not set";

/// Kubernetes: which kubeconfig did not read (for [`kubernetes_bad_config`]).
pub fn kubernetes_kubeconfig_at(path: &str) -> String {
    format!("kubeconfig {path}")
}
pub const KUBERNETES_KUBECONFIG_IN_VARIABLE: &str = "kubeconfig in KUBECONFIG";
/// A kubeconfig that does not parse: never the YAML parser's text, which may
/// quote the file (and a token in it).
pub const KUBERNETES_KUBECONFIG_UNPARSED: &str = "it does not parse as a kubeconfig (YAML)";

/// Kubernetes: why the context cannot be used (for [`kubernetes_bad_config`]).
pub fn kubernetes_context_without_kubeconfig(context: &str) -> String {
    format!("{context:?} was given, but there is no kubeconfig (in a cluster, the service account is used)")
}
pub const KUBERNETES_NO_CURRENT_CONTEXT: &str = "the kubeconfig has no current-context: pass the `context` option";
pub fn kubernetes_no_context(name: &str) -> String {
    format!("the kubeconfig has no context {name:?}")
}
pub fn kubernetes_context_without_server(name: &str, cluster: &str) -> String {
    format!("context {name:?} names cluster {cluster:?}, which has no server")
}

/// Kubernetes: a listed object that does not read (the listing fails closed).
pub const KUBERNETES_OBJECT_WITHOUT_NAME: &str = "an object without metadata.name";
pub fn kubernetes_object_without(name: &str, field: &str) -> String {
    format!("object {name:?} has no {field}")
}

/// Kubernetes: a `kind` the provider does not sweep.
pub fn kubernetes_kind(given: &str) -> String {
    format!("must be SandboxClaim, Sandbox or Pod, got {given:?}")
}

/// Kubernetes: a namespace that is not a DNS label (nor `*`).
pub fn kubernetes_namespace(given: &str) -> String {
    format!("must be a namespace (a DNS label: lowercase letters, digits and `-`, at most 63) or `*` for every namespace, got {given:?}")
}

/// Kubernetes: an owner that cannot be a label value (our owner label is filtered by a label selector).
pub fn kubernetes_owner(given: &str) -> String {
    format!(
        "must be a Kubernetes label value (at most 63 letters, digits, `-`, `_` or `.`, starting and ending with a \
         letter or digit) to be the owner label, got {given:?}"
    )
}

/// Kubernetes: a sandbox id that is not `<namespace>_<name>`.
pub fn kubernetes_id(given: &str) -> String {
    format!("a Kubernetes sandbox id is `<namespace>_<name>` (e.g. `agents_claim-1`), got {given:?}")
}

/// Kubernetes refused the credentials (401/403).
pub fn kubernetes_unauthorized(status: u16, detail: &str) -> String {
    format!(
        "Kubernetes refused the credentials (HTTP {status}: {detail}): check the kubeconfig's user (KUBECONFIG, the \
         `kubeconfig` and `context` options) or the service account's RBAC (contrib/kubernetes/rbac.yaml)"
    )
}

/// Kubernetes: a continued listing whose token expired twice in a row.
pub const KUBERNETES_LISTING_EXPIRED: &str = "the Kubernetes listing's continue token expired (410 Gone) again after \
     one restart: the cluster compacts faster than the listing reads; nothing is swept";

// ---- store arguments (proto/src/options/arguments.rs): `field` is spelled as the host
// names it (`leaseMs`, `options.limit` in Node; `` `lease` `` in Python).

/// Node: a store argument that is not a whole number from `minimum` to `maximum`.
pub fn node_whole_number_between(field: &str, minimum: u64, maximum: u64) -> String {
    format!("{field} must be a whole number between {minimum} and {maximum}")
}

/// Python: how an error shows an int too big to print (beyond 128 bits).
pub fn python_huge_int(bits: u64) -> String {
    format!("an int of {bits} bits")
}

/// How an error names a record's field: `Owner.field (wire `wireName`)`.
pub fn record_field(owner: &str, field: &str, wire: &str) -> String {
    format!("{owner}.{field} (wire `{wire}`)")
}

/// What the command says of a `--providers` module (checked in the command
/// crate's `providers_module`): Node names a file and its default export
/// (`node_*`), Python `package.module:attribute` (`python_*`). `named` is the
/// module as the user named it; `shown` a host's literal of a value (a JSON
/// or `repr` string, or a type name); `at` a provider's place in the module.
pub mod providers_module {
    pub fn no_such_file(named: &str) -> String {
        format!("{named}: no such file")
    }
    pub fn not_a_file(named: &str) -> String {
        format!("{named}: not a file")
    }
    pub fn node_import_failed(named: &str, error: &str) -> String {
        format!("{named}: cannot be imported: {error}")
    }
    pub fn python_import_failed(module: &str, error: &str) -> String {
        format!("importing '{module}' failed: {error}")
    }
    pub fn not_an_array(named: &str, got: &str) -> String {
        format!("{named}: the default export must be an array of providers ({{ name, destroy, list?, owner? }}); the module has {got}")
    }
    pub fn bad_spec(shown: &str) -> String {
        format!("{shown} is not `package.module:attribute` (a list of providers, or a zero-arg callable returning one)")
    }
    pub fn no_module(module: &str) -> String {
        format!("no module named '{module}' (looked in the current directory and sys.path)")
    }
    pub fn no_attribute(module: &str, attribute: &str) -> String {
        format!("module '{module}' has no attribute '{attribute}'")
    }
    pub fn call_raised(named: &str, error: &str) -> String {
        format!("{named}() raised {error}")
    }
    pub fn call_not_a_list(named: &str, got: &str) -> String {
        format!("{named}() must return a list of providers, got {got}")
    }
    pub fn not_a_list(named: &str, got: &str) -> String {
        format!("{named} must be a list of providers (or a zero-arg callable returning one), got {got}")
    }
    /// No provider in the module, and none of the command's own.
    pub fn none(named: &str, python: bool) -> String {
        let held = if python { "holds" } else { "exports" };
        format!("{named} {held} no provider, and none of --docker, --local, --e2b, --daytona, --vercel is given")
    }
    /// Where provider `index` sits: `named: provider [i]` (Node), `named[i]` (Python).
    pub fn at(named: &str, index: usize, python: bool) -> String {
        if python {
            format!("{named}[{index}]")
        } else {
            format!("{named}: provider [{index}]")
        }
    }
    pub fn node_not_an_object(at: &str) -> String {
        format!("{at} is not an object")
    }
    pub fn node_no_name(at: &str) -> String {
        format!("{at} has no name (a non-empty string)")
    }
    pub fn node_no_destroy(at: &str, shown: &str) -> String {
        format!("{at} ({shown}) has no destroy function")
    }
    pub fn node_bad_list(at: &str, shown: &str) -> String {
        format!("{at} ({shown}): list must be a function")
    }
    pub fn node_bad_owner(at: &str, shown: &str) -> String {
        format!("{at} ({shown}): owner must be a string")
    }
    pub fn node_twice(at: &str, shown: &str) -> String {
        format!("{at} ({shown}): two providers are named {shown}")
    }
    pub fn node_taken(at: &str, shown: &str, flag: &str) -> String {
        format!("{at} is named {shown}, as the {flag} provider")
    }
    pub fn python_no_name(at: &str, shown: &str) -> String {
        format!("{at} has no `name` (a non-empty str), got {shown}")
    }
    pub fn python_no_destroy(at: &str, shown: &str) -> String {
        format!("{at} (provider {shown}) has no `destroy` method")
    }
    pub fn python_bad_list(at: &str, shown: &str) -> String {
        format!("{at} (provider {shown}): `list` must be a method")
    }
    pub fn python_bad_owner(at: &str, shown: &str) -> String {
        format!("{at} (provider {shown}): `owner` must be a str")
    }
    pub fn python_twice(at: &str, shown: &str, first: &str) -> String {
        format!("{at}: provider {shown} is already {first}'s name")
    }
    pub fn python_taken(at: &str, shown: &str, flag: &str) -> String {
        format!("{at}: provider {shown} is already the name of {flag}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_message_matches_reference_with_and_without_key() {
        assert_eq!(
            reclaim_failed_message("r1", Some("k1")),
            "Reclaiming the sandbox for run \"r1\" failed: the provider's destroy rejected and the \
             instance record for \"k1\" was deleted anyway, so the sandbox may still be running and \
             is no longer reachable from the instance store."
        );
        assert_eq!(
            reclaim_failed_message("r1", None),
            "Reclaiming the sandbox for run \"r1\" failed: the provider's destroy rejected and the \
             instance record was deleted anyway, so the sandbox may still be running and is no \
             longer reachable from the instance store."
        );
    }

    #[test]
    fn timeout_message_names_the_sandbox_and_the_deadline() {
        assert_eq!(
            destroy_timeout_message("ctr-1", 250),
            "destroying sandbox \"ctr-1\" did not settle within 250 ms; it was cancelled"
        );
    }

    #[test]
    fn outcome_lines_embed_the_outcome_string() {
        for outcome in ReclaimOutcome::ALL {
            assert_eq!(reclaimer_outcome_line(outcome), format!("reclaim: {outcome}"));
        }
    }
}

/// The command's own texts (`sandbox-reclaim`, also run by `npx` and the pip
/// console script): its configuration, its store and its providers. A
/// refusal of one of the core's options is worded by the checks above.
pub mod command {
    /// `--config FILE` could not be read.
    pub fn config_unreadable(error: &str) -> String {
        format!("cannot read: {error}")
    }
    /// Where in `--config FILE` the TOML is wrong (its own text: never the offending line, which may hold a secret).
    pub fn config_at(line: usize, column: usize, message: &str) -> String {
        format!("line {line}, column {column}: {message}")
    }
    pub const EMPTY_DIRECTORY: &str = "must be a non-empty directory path";
    pub const EMPTY_CREDENTIAL: &str = "must not be empty (leave it out to use the vendor's variable)";

    /// A hosted vendor's flag help (`--sprites`): its variables, API and section.
    pub fn hosted_flag_help(label: &str, credentials: &str, scope: &[&str], api: &str, key: &str) -> String {
        let scope: String = scope.iter().map(|variable| format!(" with {variable}")).collect();
        format!("Reclaim {label} sandboxes (key: {credentials}{scope}; API: {api}; or the [{key}] section)")
    }

    /// A config file key that is neither the file's own nor a vendor's section.
    pub fn unknown_config_key(key: &str, known: &[&str]) -> String {
        let known: Vec<String> = known.iter().map(|name| format!("`{name}`")).collect();
        format!("unknown field `{key}`, expected one of {}", known.join(", "))
    }

    /// A vendor section that does not read (`[sprites]: ...`).
    pub fn bad_vendor_section(key: &str, error: &str) -> String {
        format!("[{key}]: {error}")
    }

    /// A vendor's own key given something other than text.
    pub fn vendor_key_not_text(key: &str) -> String {
        format!("`{key}` must be a string")
    }

    /// A key a vendor's section does not take (another vendor's, or none's).
    pub fn not_a_vendor_key(vendor: &str, keys: &[String]) -> String {
        format!("{vendor} takes no such key (its keys: {})", keys.join(", "))
    }

    pub const SWEEP_UNLABELLED_ALONE: &str =
        "no hosted provider to apply it to: pass --e2b, --daytona and/or --vercel (or their sections in --config)";
    /// Two hosted sections name their providers alike (records name their provider).
    pub fn sections_share_a_name(first: &str, second: &str, name: &str) -> String {
        format!("the providers of [{first}] and [{second}] are both named `{name}`; give one another name")
    }
    pub fn not_an_address(text: &str, error: &str) -> String {
        format!("`{text}` is not an address like 127.0.0.1:9464 ({error})")
    }
    pub const SQLITE_NEEDS_A_PATH: &str = "`sqlite:` needs a file path, e.g. sqlite:/var/lib/sandbox-reclaim/store.db";
    /// `shown` is the text, redacted.
    pub fn not_a_store_url(shown: &str) -> String {
        format!("`{shown}` is not a store URL: write sqlite:PATH or postgres://user@host:port/db")
    }
    pub const NO_HOME_FOR_THE_STORE: &str = "no home directory to keep the default store in; pass --store";
    /// `shown` is the text, redacted.
    pub fn not_a_docker_url(shown: &str) -> String {
        format!(
            "`{shown}` is not a Docker engine URL (unix:///path/docker.sock, tcp://host:2375); before a subcommand \
             write --docker=URL, or --docker alone after it"
        )
    }
    pub const EMPTY_PROVIDER_NAME: &str = "a provider name must be a non-empty string";
    /// A `[reconcile]` key no pass flag has.
    pub fn unknown_pass_key(known: &[String]) -> String {
        format!("unknown key; expected one of {}", known.join(", "))
    }
    pub fn pass_count_range(minimum: u32, got: i64) -> String {
        format!("must be a whole number from {minimum} below 2^32, got {got}")
    }
    pub fn pass_count_type(got: &str) -> String {
        format!("must be a whole number, got {got}")
    }
    pub fn pass_duration_type(got: &str) -> String {
        format!("must be a string like \"10m\", got {got}")
    }
    pub const EMPTY_DURATION: &str = "expected a duration like 30s, 10m, 24h or 1h30m";
    pub fn not_a_duration(text: &str, error: &str) -> String {
        format!("`{text}` is not a duration ({error}); write e.g. 30s, 10m, 24h or 1h30m")
    }
    /// `minimum` as the duration is written (`1ms`).
    pub fn duration_too_short(text: &str, minimum: &str) -> String {
        format!("`{text}` is too short: must be at least {minimum}")
    }
    pub fn cannot_create(directory: &str, error: &str) -> String {
        format!("cannot create {directory}: {error}")
    }
    /// `what` (`the SQLite store`, `PostgreSQL`) did not open within `--connect-timeout`.
    pub fn not_within(verb: &str, what: &str, described: &str, timeout: &str) -> String {
        format!("could not {verb} {what} {described} within {timeout} (--connect-timeout)")
    }
    pub fn postgres_refused(described: &str, error: &str) -> String {
        format!("could not connect to PostgreSQL at {described}: {error}")
    }
    pub fn invalid_store_field(described: &str, field: &str, reason: &str) -> String {
        format!("{described}: invalid `{field}`: {reason}")
    }
    pub const PROVIDERS_NOT_IN_THE_BINARY: &str = "host-language providers are loaded by `npx sandbox-reclaim` (a JS \
                                                   module) or the pip console script (package.module:attribute); \
                                                   this binary has --docker and --local";
    pub const METRICS_ONLY_WITH_EVERY: &str = "metrics are served only by `reconcile --every DURATION`";
    pub const METRICS_NOT_WITH_PROVIDERS: &str =
        "metrics are served by the native command; run without --providers to serve them";
    pub fn cannot_listen(address: &str, error: &str) -> String {
        format!("cannot listen on {address}: {error}")
    }
    pub fn engine_silent(address: &str, error: &str) -> String {
        format!("{address} does not answer (--docker, DOCKER_HOST): {error}")
    }
    pub const NO_PROVIDER: &str = "no provider to reclaim with: pass --docker, --local BASE_DIR, --e2b, --daytona \
                                   and/or --vercel (or their sections in --config)";
    pub const LOCAL_NEEDS_UNIX: &str = "LocalProvider sandboxes need a Unix host";
    pub const EMPTY_HOST_NAME: &str = "must be a non-empty name";
    pub fn cannot_listen_for_signals(error: &str) -> String {
        format!("cannot listen for signals: {error}")
    }
}

/// A store of the host's with some but not all of the scoped sweep's methods
/// (`missing` and `present` as the host names them, `all` in order).
pub fn scoped_reads_partial(missing: &str, present: &str, all: &[&str]) -> String {
    format!("{missing} must be a function when {present} is (a store has all of {} or none)", all.join(", "))
}
