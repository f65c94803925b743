//! Where a Kubernetes provider's credentials come from, as every Kubernetes
//! tool finds them: the `kubeconfig` option, else `KUBECONFIG` (a path
//! list, merged), else `~/.kube/config`, each with its current context (or
//! the `context` option); else the pod's service account when running in a
//! cluster. Resolved when the provider is built (so a missing or unreadable
//! kubeconfig, or an unknown context, names its option before any
//! request); the client itself is made on first use, inside the runtime
//! (kube's client spawns a task), with kube's own retries off: our
//! throttling waits and deadlines stay in charge.

use std::path::Path;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::{Client, Config};

use crate::providers::InvalidInput;
use crate::report::messages;

/// The service account's namespace file in a pod.
const IN_CLUSTER_NAMESPACE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// Resolved credentials: a kubeconfig and its context, or the service account.
#[derive(Clone)]
pub(super) enum Source {
    Kubeconfig { config: Box<Kubeconfig>, context: String },
    InCluster,
}

/// What a source names before any request: the server, the default namespace.
pub(super) struct Resolved {
    pub source: Source,
    pub server: String,
    pub namespace: String,
}

/// Finds the credentials (no request). `kubeconfig`: the option's path.
pub(super) fn resolve(kubeconfig: Option<&str>, context: Option<&str>) -> Result<Resolved, InvalidInput> {
    let bad = |what: &str, error: KubeconfigError| {
        InvalidInput::new("kubeconfig", messages::kubernetes_bad_config(what, &describe(&error)))
    };
    let config = match kubeconfig {
        Some("") => {
            return Err(InvalidInput::new(
                "kubeconfig",
                messages::kubernetes_no_config(messages::KUBERNETES_EMPTY_KUBECONFIG),
            ))
        }
        Some(path) => {
            Some(Kubeconfig::read_from(path).map_err(|error| bad(&messages::kubernetes_kubeconfig_at(path), error))?)
        }
        None => {
            match Kubeconfig::from_env().map_err(|error| bad(messages::KUBERNETES_KUBECONFIG_IN_VARIABLE, error))? {
                Some(config) => Some(config),
                None => home_config()
                    .map(|path| {
                        Kubeconfig::read_from(&path).map_err(|error| {
                            bad(&messages::kubernetes_kubeconfig_at(&path.display().to_string()), error)
                        })
                    })
                    .transpose()?,
            }
        }
    };
    match config {
        Some(config) => from_kubeconfig(config, context),
        None if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() => {
            if let Some(context) = context {
                return Err(InvalidInput::new(
                    "context",
                    messages::kubernetes_bad_config(
                        "context",
                        &messages::kubernetes_context_without_kubeconfig(context),
                    ),
                ));
            }
            let host = std::env::var("KUBERNETES_SERVICE_HOST").unwrap_or_default();
            let port = std::env::var("KUBERNETES_SERVICE_PORT").unwrap_or_else(|_| "443".to_owned());
            let host = if host.contains(':') { format!("[{host}]") } else { host };
            let namespace =
                std::fs::read_to_string(IN_CLUSTER_NAMESPACE).map(|text| text.trim().to_owned()).unwrap_or_default();
            let namespace = if namespace.is_empty() { "default".to_owned() } else { namespace };
            Ok(Resolved { source: Source::InCluster, server: format!("https://{host}:{port}"), namespace })
        }
        None => {
            Err(InvalidInput::new("kubeconfig", messages::kubernetes_no_config(messages::KUBERNETES_NOTHING_FOUND)))
        }
    }
}

fn home_config() -> Option<std::path::PathBuf> {
    let home = std::env::var_os("HOME").filter(|home| !home.is_empty())?;
    let path = Path::new(&home).join(".kube").join("config");
    path.is_file().then_some(path)
}

/// The context (given, else current), its cluster's server and namespace.
fn from_kubeconfig(config: Kubeconfig, context: Option<&str>) -> Result<Resolved, InvalidInput> {
    let bad_context = |why: String| InvalidInput::new("context", messages::kubernetes_bad_config("context", &why));
    let name = match context.or(config.current_context.as_deref()) {
        Some(name) if !name.is_empty() => name.to_owned(),
        _ => return Err(bad_context(messages::KUBERNETES_NO_CURRENT_CONTEXT.to_owned())),
    };
    let named = config.contexts.iter().find(|named| named.name == name);
    let Some(found) = named.and_then(|named| named.context.as_ref()) else {
        return Err(bad_context(messages::kubernetes_no_context(&name)));
    };
    let cluster =
        config.clusters.iter().find(|cluster| cluster.name == found.cluster).and_then(|named| named.cluster.as_ref());
    let Some(server) = cluster.and_then(|cluster| cluster.server.clone()) else {
        return Err(bad_context(messages::kubernetes_context_without_server(&name, &found.cluster)));
    };
    let namespace =
        found.namespace.clone().filter(|namespace| !namespace.is_empty()).unwrap_or_else(|| "default".to_owned());
    Ok(Resolved { source: Source::Kubeconfig { config: Box::new(config), context: name }, server, namespace })
}

/// A kubeconfig error as a message: never the YAML parser's, which may quote
/// the file (and a token in it).
fn describe(error: &KubeconfigError) -> String {
    match error {
        KubeconfigError::Parse(_) => messages::KUBERNETES_KUBECONFIG_UNPARSED.to_owned(),
        other => other.to_string(),
    }
}

/// The client for `source` (exec plugins and token files are kube's): its
/// own retries off, every request bounded by `timeout`, the server replaced
/// by `api_url` when given.
pub(super) async fn connect(source: &Source, api_url: Option<&str>, timeout: Duration) -> Result<Client, String> {
    let mut config = match source {
        Source::Kubeconfig { config, context } => {
            let options = KubeConfigOptions { context: Some(context.clone()), ..KubeConfigOptions::default() };
            Config::from_custom_kubeconfig((**config).clone(), &options).await.map_err(|error| describe(&error))?
        }
        Source::InCluster => Config::incluster().map_err(|error| error.to_string())?,
    };
    if let Some(url) = api_url {
        config.cluster_url = url.parse().map_err(|error: http::uri::InvalidUri| error.to_string())?;
    }
    config.default_retry = false;
    config.connect_timeout = Some(timeout.min(Duration::from_secs(10)));
    config.read_timeout = Some(timeout);
    config.write_timeout = Some(timeout);
    config.reset_reader_on_write = true;
    Client::try_from(config).map_err(|error| error.to_string())
}
