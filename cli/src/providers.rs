//! The providers `--docker`, `--local` and the hosted vendors' flags (`--e2b`,
//! `--sprites`, ...) name, each wrapped so the metrics see every destroy's
//! latency and result.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use sandbox_reclaim::options::provider::HostedSettings;
use sandbox_reclaim::{
    DockerConfig, DockerProvider, HostedSandboxProvider, InvalidInput, ListedSandbox, ProviderError, SandboxProvider,
    DEFAULT_OWNER,
};

use crate::config::{HostedSpec, Settings, Vendor};
use crate::error::Failure;
use crate::metrics::Metrics;
use crate::redact::redact;

/// The image of the command's Docker provider (and of a `--providers` host's,
/// built from [`docker_config`]): destroy and list never create a container,
/// so it is never pulled.
pub const UNUSED_IMAGE: &str = "sandbox-reclaim/unused:latest";

/// A provider the command runs a pass with: the real one, timed.
pub struct TimedProvider {
    inner: Box<dyn SandboxProvider>,
    metrics: Option<Arc<Metrics>>,
}

impl TimedProvider {
    pub fn new(inner: Box<dyn SandboxProvider>, metrics: Option<Arc<Metrics>>) -> Self {
        Self { inner, metrics }
    }
}

/// Records a destroy's latency when dropped: `ok`, `error`, or `cancelled`
/// when the pass dropped the destroy at its deadline.
struct DestroyTimer<'a> {
    provider: &'a str,
    metrics: Option<&'a Metrics>,
    started: Instant,
    result: &'static str,
}

impl Drop for DestroyTimer<'_> {
    fn drop(&mut self) {
        let elapsed = self.started.elapsed();
        if let Some(metrics) = self.metrics {
            metrics.observe_destroy(self.provider, self.result, elapsed);
        }
        tracing::debug!(
            provider = self.provider,
            result = self.result,
            elapsed_ms = elapsed.as_millis() as u64,
            "destroy"
        );
    }
}

#[async_trait]
impl SandboxProvider for TimedProvider {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn destroy(&self, provider_sandbox_id: &str) -> Result<(), ProviderError> {
        let mut timer = DestroyTimer {
            provider: self.inner.name(),
            metrics: self.metrics.as_deref(),
            started: Instant::now(),
            result: "cancelled",
        };
        let result = self.inner.destroy(provider_sandbox_id).await;
        timer.result = if result.is_ok() { "ok" } else { "error" };
        if let Err(error) = &result {
            tracing::warn!(provider = self.inner.name(), id = provider_sandbox_id, error = %error, "destroy failed");
        }
        result
    }

    fn can_list(&self) -> bool {
        self.inner.can_list()
    }

    async fn list_sandboxes(&self) -> Result<Vec<ListedSandbox>, ProviderError> {
        self.inner.list_sandboxes().await
    }

    fn can_lookup(&self) -> bool {
        self.inner.can_lookup()
    }

    async fn lookup_sandboxes(&self, ids: &[String]) -> Result<Vec<ListedSandbox>, ProviderError> {
        self.inner.lookup_sandboxes(ids).await
    }

    fn owner(&self) -> Option<&str> {
        self.inner.owner()
    }
}

/// The configured providers, in a fixed order (Docker, local, then the hosted vendors in the table's order).
pub struct Providers {
    pub list: Vec<TimedProvider>,
}

impl Providers {
    /// Builds every configured provider and checks it answers: an engine
    /// that does not answer its ping is unavailable (exit 3). `required`:
    /// having none is a usage error.
    pub async fn build(settings: &Settings, metrics: Option<Arc<Metrics>>, required: bool) -> Result<Self, Failure> {
        let owner = settings.owner.clone().unwrap_or_else(|| DEFAULT_OWNER.to_owned());
        let mut list = Vec::new();
        if let Some(docker) = &settings.docker {
            let config = docker_config(docker, &owner);
            let address = docker
                .url
                .clone()
                .or_else(|| std::env::var("DOCKER_HOST").ok().filter(|host| !host.is_empty()))
                .unwrap_or_else(|| "unix:///var/run/docker.sock".to_owned());
            let provider =
                DockerProvider::new(config).map_err(|error| provider_error(error, "--docker", &redact(&address)))?;
            provider.ping().await.map_err(|error| {
                Failure::unavailable(
                    "Docker engine",
                    sandbox_reclaim::report::messages::command::engine_silent(&redact(&address), &error.to_string()),
                )
            })?;
            list.push(TimedProvider::new(Box::new(provider), metrics.clone()));
        }
        if let Some(local) = &settings.local {
            list.push(TimedProvider::new(local_provider(local, &owner)?, metrics.clone()));
        }
        for spec in &settings.hosted {
            list.push(TimedProvider::new(hosted_provider(spec, &owner).await?, metrics.clone()));
        }
        if required && list.is_empty() {
            return Err(Failure::usage(
                crate::error::provider_flags(),
                sandbox_reclaim::report::messages::command::NO_PROVIDER,
            ));
        }
        Ok(Self { list })
    }

    pub fn as_dyn(&self) -> Vec<&dyn SandboxProvider> {
        self.list.iter().map(|provider| provider as &dyn SandboxProvider).collect()
    }

    pub fn names(&self) -> Vec<String> {
        self.list.iter().map(|provider| provider.name().to_owned()).collect()
    }
}

/// `--docker` as the command configures it (the binary and a `--providers` host alike).
pub fn docker_config(docker: &crate::config::DockerSpec, owner: &str) -> DockerConfig {
    let mut config = DockerConfig::new(UNUSED_IMAGE);
    config.owner = owner.to_owned();
    config.docker_host = docker.url.clone();
    config.name = docker.name.clone();
    config
}

/// `--local` as the command configures it (the binary and a `--providers` host alike).
#[cfg(unix)]
pub fn local_config(local: &crate::config::LocalSpec, owner: &str) -> sandbox_reclaim::LocalConfig {
    let mut config = sandbox_reclaim::LocalConfig::new(&local.base_dir);
    config.owner = owner.to_owned();
    config.name = local.name.clone();
    config
}

#[cfg(unix)]
fn local_provider(local: &crate::config::LocalSpec, owner: &str) -> Result<Box<dyn SandboxProvider>, Failure> {
    let config = local_config(local, owner);
    let provider = sandbox_reclaim::LocalProvider::new(config)
        .map_err(|error| provider_error(error, "--local", &local.base_dir.display().to_string()))?;
    Ok(Box::new(provider))
}

/// A hosted provider, checked with one small authenticated call: a refused
/// key stops the command before its first pass (exit 3), naming the
/// variable to set.
async fn hosted_provider(spec: &HostedSpec, owner: &str) -> Result<Box<dyn SandboxProvider>, Failure> {
    let provider = build_hosted(spec, owner)?;
    provider.check_access().await.map_err(|error| {
        Failure::unavailable(vendor_label(spec.vendor), format!("{}: {error}", redact(provider.api_url())))
    })?;
    // A hosted provider is a `SandboxProvider` (trait upcasting).
    Ok(provider)
}

/// A hosted provider as `spec` and `--owner` configure it (nothing sent).
pub fn build_hosted(spec: &HostedSpec, owner: &str) -> Result<Box<dyn HostedSandboxProvider>, Failure> {
    let mut settings = HostedSettings::defaults(spec.vendor);
    settings.name = spec.name.clone();
    settings.owner = owner.to_owned();
    settings.api_key = spec.api_key.clone();
    settings.api_url = spec.api_url.clone();
    for (name, value) in &spec.options {
        settings.set_option(*name, Some(value.clone()));
    }
    settings.sweep_unlabelled = spec.sweep_unlabelled;
    let built = sandbox_reclaim::providers::build_hosted(spec.vendor, settings);
    built.map_err(|error| match invalid_input(&error) {
        Some(invalid) => Failure::usage(hosted_flag(spec.vendor, invalid.field), invalid.to_string()),
        None => Failure::unavailable(vendor_label(spec.vendor), error.to_string()),
    })
}

fn vendor_label(vendor: Vendor) -> &'static str {
    vendor.spec().label
}

/// Where a hosted setting comes from, for a usage error: the vendor's
/// variable (from its table row) or its section's key.
fn hosted_flag(vendor: Vendor, field: &str) -> String {
    let spec = vendor.spec();
    let section = |key: &str| format!("[{}] {key}", spec.key);
    match field {
        "owner" => "--owner".to_owned(),
        "apiKey" => format!("{} (or {})", spec.credential_variables.join(" or "), section("api-key")),
        "apiUrl" => match spec.api_url_variable {
            Some(variable) => format!("{variable} (or {})", section("api-url")),
            None => section("api-url"),
        },
        _ => match spec.credential_options.iter().chain(spec.scope_options).find(|option| option.name.node == field) {
            Some(option) => match option.variable {
                Some(variable) => format!("{variable} (or {})", section(&kebab(option.name.python))),
                None => section(&kebab(option.name.python)),
            },
            None => format!("--{}", spec.key),
        },
    }
}

/// A Python-spelled option name as a config key (`project_id` → `project-id`).
fn kebab(snake: &str) -> String {
    snake.replace('_', "-")
}

fn invalid_input(error: &ProviderError) -> Option<&InvalidInput> {
    match error {
        ProviderError::Backend(source) => source.downcast_ref::<InvalidInput>(),
        ProviderError::NotOwned { .. } => None,
    }
}

#[cfg(not(unix))]
fn local_provider(_local: &crate::config::LocalSpec, _owner: &str) -> Result<Box<dyn SandboxProvider>, Failure> {
    Err(Failure::usage("--local", sandbox_reclaim::report::messages::command::LOCAL_NEEDS_UNIX))
}

/// Bad config is a usage error naming the flag; anything else means the
/// provider is unavailable.
fn provider_error(error: ProviderError, flag: &str, target: &str) -> Failure {
    if let ProviderError::Backend(source) = &error {
        if let Some(invalid) = source.downcast_ref::<InvalidInput>() {
            let flag = match invalid.field {
                "owner" => "--owner",
                _ => flag,
            };
            return Failure::usage(flag, invalid.to_string());
        }
    }
    Failure::unavailable(
        if flag == "--docker" { "Docker engine" } else { "local provider" },
        format!("{target}: {error}"),
    )
}
