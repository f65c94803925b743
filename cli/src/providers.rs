//! The providers `--docker`, `--local` and `--e2b` name, each wrapped so the metrics
//! see every destroy's latency and result.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use sandbox_reclaim::{
    DockerConfig, DockerProvider, E2bConfig, E2bProvider, HostedSandboxProvider, InvalidInput, ListedSandbox,
    ProviderError, SandboxProvider, DEFAULT_OWNER,
};

use crate::config::Settings;
use crate::error::Failure;
use crate::metrics::Metrics;

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

    fn owner(&self) -> Option<&str> {
        self.inner.owner()
    }
}

/// The configured providers, in a fixed order (Docker, local, E2B).
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
            // Destroy and list never create a container, so the image is never pulled.
            let mut config = DockerConfig::new("sandbox-reclaim/unused:latest");
            config.owner = owner.clone();
            config.docker_host = docker.url.clone();
            config.name = docker.name.clone();
            let address = docker
                .url
                .clone()
                .or_else(|| std::env::var("DOCKER_HOST").ok().filter(|host| !host.is_empty()))
                .unwrap_or_else(|| "unix:///var/run/docker.sock".to_owned());
            let provider = DockerProvider::new(config).map_err(|error| provider_error(error, "--docker", &address))?;
            provider.ping().await.map_err(|error| {
                Failure::unavailable(
                    "Docker engine",
                    format!("{address} does not answer (--docker, DOCKER_HOST): {error}"),
                )
            })?;
            list.push(TimedProvider::new(Box::new(provider), metrics.clone()));
        }
        if let Some(local) = &settings.local {
            list.push(TimedProvider::new(local_provider(local, &owner)?, metrics.clone()));
        }
        if let Some(e2b) = &settings.e2b {
            list.push(TimedProvider::new(e2b_provider(e2b, &owner).await?, metrics.clone()));
        }
        if required && list.is_empty() {
            return Err(Failure::usage(
                "--docker/--local/--e2b",
                "no provider to reclaim with: pass --docker, --local BASE_DIR and/or --e2b (or [docker] / [local] / \
                 [e2b] in --config)",
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

#[cfg(unix)]
fn local_provider(local: &crate::config::LocalSpec, owner: &str) -> Result<Box<dyn SandboxProvider>, Failure> {
    let mut config = sandbox_reclaim::LocalConfig::new(&local.base_dir);
    config.owner = owner.to_owned();
    config.name = local.name.clone();
    let provider = sandbox_reclaim::LocalProvider::new(config)
        .map_err(|error| provider_error(error, "--local", &local.base_dir.display().to_string()))?;
    Ok(Box::new(provider))
}

/// The E2B provider, checked against E2B with one small listing: a refused
/// key stops the command before its first pass (exit 3), naming E2B_API_KEY.
async fn e2b_provider(e2b: &crate::config::E2bSpec, owner: &str) -> Result<Box<dyn SandboxProvider>, Failure> {
    let config = E2bConfig {
        name: e2b.name.clone(),
        owner: owner.to_owned(),
        api_key: e2b.api_key.clone(),
        api_url: e2b.api_url.clone(),
        ..E2bConfig::default()
    };
    let provider = E2bProvider::new(config).map_err(|error| match invalid_input(&error) {
        Some(invalid) => Failure::usage(e2b_flag(invalid.field), invalid.to_string()),
        None => Failure::unavailable("E2B", error.to_string()),
    })?;
    provider
        .check_access()
        .await
        .map_err(|error| Failure::unavailable("E2B", format!("{}: {error}", provider.api_url())))?;
    Ok(Box::new(provider))
}

/// Where an E2B setting comes from, for a usage error.
fn e2b_flag(field: &str) -> &'static str {
    match field {
        "apiKey" => "E2B_API_KEY (or [e2b] api-key)",
        "apiUrl" => "E2B_API_URL (or [e2b] api-url)",
        "owner" => "--owner",
        _ => "--e2b",
    }
}

fn invalid_input(error: &ProviderError) -> Option<&InvalidInput> {
    match error {
        ProviderError::Backend(source) => source.downcast_ref::<InvalidInput>(),
        ProviderError::NotOwned { .. } => None,
    }
}

#[cfg(not(unix))]
fn local_provider(_local: &crate::config::LocalSpec, _owner: &str) -> Result<Box<dyn SandboxProvider>, Failure> {
    Err(Failure::usage("--local", "LocalProvider sandboxes need a Unix host"))
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
