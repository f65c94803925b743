//! The TOML config file (`--config`) and how it merges with the flags:
//! a flag (or its environment variable) wins over the file, the file over
//! the defaults. Unknown keys are refused, so a typo never goes unnoticed.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sandbox_reclaim::options::provider as provider_options;
use sandbox_reclaim::options::provider::VendorSpec;
use sandbox_reclaim::options::Name;
use sandbox_reclaim::report::messages;
use serde::Deserialize;

use crate::args::{GlobalArgs, LogFormat, OrphansArgs, ReconcileArgs};
use crate::error::Failure;
use crate::pass_flags::{Pass, PassValues};
use crate::redact::{redact, redact_text};
use crate::time::{parse_duration, parse_positive_duration};

/// The file's shape; every key is optional. See `examples/sandbox-reclaim.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct ConfigFile {
    pub store: Option<String>,
    pub pg_schema: Option<String>,
    pub connect_timeout: Option<String>,
    pub owner: Option<String>,
    pub host: Option<String>,
    pub json: Option<bool>,
    pub log_format: Option<LogFormat>,
    pub metrics_addr: Option<String>,
    pub docker: Option<DockerSection>,
    pub local: Option<LocalSection>,
    /// `[e2b]`, `[sprites]`, ...: one section per row of the core's vendor table.
    #[serde(flatten)]
    pub hosted: HostedSections,
    /// A pass's options by their flags' names (`pass_flags::from_config` reads them).
    pub reconcile: Option<toml::Table>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct DockerSection {
    /// Engine address; absent: `DOCKER_HOST`, else the local socket.
    pub url: Option<String>,
    /// The provider name instance records carry [default: docker].
    pub name: Option<String>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LocalSection {
    pub base_dir: PathBuf,
    /// The provider name instance records carry [default: local].
    pub name: Option<String>,
}

/// The vendors' sections of a config file, by vendor. Read from the keys
/// the typed fields of [`ConfigFile`] do not take (`#[serde(flatten)]`): a
/// vendor's key is its section, any other key is refused, naming it, as
/// `deny_unknown_fields` would (which cannot be combined with `flatten`).
#[derive(Debug, Clone, Default)]
pub struct HostedSections(pub std::collections::BTreeMap<Vendor, HostedSection>);

impl<'de> Deserialize<'de> for HostedSections {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(SectionsVisitor)
    }
}

struct SectionsVisitor;

impl<'de> serde::de::Visitor<'de> for SectionsVisitor {
    type Value = HostedSections;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("the hosted vendors' sections")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error;
        let mut sections = std::collections::BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            let Some(vendor) = Vendor::parse(&key) else {
                let known: Vec<&str> = CONFIG_KEYS.iter().copied().chain(Vendor::keys()).collect();
                return Err(A::Error::custom(messages::command::unknown_config_key(&key, &known)));
            };
            let table: toml::Table = map.next_value()?;
            let section = HostedSection::read(vendor, table)
                .map_err(|error| A::Error::custom(messages::command::bad_vendor_section(&key, &error)))?;
            sections.insert(vendor, section);
        }
        Ok(HostedSections(sections))
    }
}

/// The config file's own keys (every one but the vendors' sections).
const CONFIG_KEYS: &[&str] = &[
    "store",
    "pg-schema",
    "connect-timeout",
    "owner",
    "host",
    "json",
    "log-format",
    "metrics-addr",
    "docker",
    "local",
    "reconcile",
];

/// A hosted vendor's section (`[e2b]`, `[sprites]`, ...): a section alone
/// turns its provider on, as its flag does. Beside the keys every vendor
/// takes, a section takes the vendor's own options (its row's credential
/// parts and scope options, spelled `team-id`, `kubeconfig`, ...), checked
/// against its row in [`resolve`]; any other key is refused, naming it.
#[derive(Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct HostedSection {
    /// The provider name instance records carry [default: the vendor's].
    pub name: Option<String>,
    /// The API key (Vercel: the access token) [default: the vendor's variable].
    pub api_key: Option<String>,
    /// The API base URL [default: the vendor's variable, else its public API].
    pub api_url: Option<String>,
    /// List every sandbox, not only those under our owner label, so an
    /// unlabelled one the store's registry names is swept [default: false].
    pub sweep_unlabelled: Option<bool>,
    /// The vendor's own keys (Vercel's `team-id`, Modal's `token-secret`,
    /// Kubernetes' `namespace`, ...): its row's options, by name.
    #[serde(skip)]
    pub options: Vec<(Name, String)>,
}

/// The keys every vendor's section takes (`api-key` only where the credential is one key).
const SHARED_SECTION_KEYS: [&str; 4] = ["name", "api-key", "api-url", "sweep-unlabelled"];

impl HostedSection {
    /// `vendor`'s section: the shared keys typed, the vendor's own options
    /// (its row says which) as strings; any other key refused, naming it
    /// and the keys the section takes.
    fn read(vendor: Vendor, table: toml::Table) -> Result<Self, String> {
        let spec = vendor.spec();
        let (shared, own): (toml::Table, toml::Table) =
            table.into_iter().partition(|(key, _)| SHARED_SECTION_KEYS.contains(&key.as_str()));
        let mut section = HostedSection::deserialize(toml::Value::Table(shared))
            .map_err(|error| error.to_string().trim_end().to_owned())?;
        for (key, value) in own {
            let Some(option) = spec.own_options().find(|option| kebab(option.name.python) == key) else {
                let known = section_keys(spec);
                let known: Vec<&str> = known.iter().map(String::as_str).collect();
                return Err(messages::command::unknown_config_key(&key, &known));
            };
            let toml::Value::String(value) = value else {
                return Err(messages::command::vendor_key_not_text(&key));
            };
            section.options.push((option.name, value));
        }
        Ok(section)
    }
}

// By hand: the key never reaches a log line or an error through `{:?}`.
impl std::fmt::Debug for HostedSection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostedSection")
            .field("name", &self.name)
            .field("api_url", &self.api_url)
            .field("sweep_unlabelled", &self.sweep_unlabelled)
            .field("options", &self.options.iter().map(|(name, _)| name.node).collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Where the store lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreSpec {
    Sqlite(PathBuf),
    Postgres { url: String, schema: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerSpec {
    /// Explicit engine address (flag or config); `None`: `DOCKER_HOST` or the default socket.
    pub url: Option<String>,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalSpec {
    pub base_dir: PathBuf,
    pub name: String,
}

/// A hosted vendor the command can reclaim on: a row of the core's vendor
/// table (its key is the flag, the section and the default name).
pub use sandbox_reclaim::providers::HostedVendor as Vendor;

/// A hosted provider's settings; `None` fields fall back to the vendor's variables.
#[derive(Clone, PartialEq, Eq)]
pub struct HostedSpec {
    pub vendor: Vendor,
    pub name: String,
    pub api_key: Option<String>,
    pub api_url: Option<String>,
    /// The vendor's own options its section gave (`team-id`, Modal's token
    /// parts, never printed, ...).
    pub options: Vec<(Name, String)>,
    /// `--sweep-unlabelled`, or `sweep-unlabelled` in the vendor's section.
    pub sweep_unlabelled: bool,
}

impl std::fmt::Debug for HostedSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostedSpec")
            .field("vendor", &self.vendor)
            .field("name", &self.name)
            .field("api_url", &self.api_url)
            .field("sweep_unlabelled", &self.sweep_unlabelled)
            .finish_non_exhaustive()
    }
}

/// A pass's tuning after flags and config merged: its option values as the
/// plan carries them (`pass_flags`). `every` is a flag only: a config file
/// never turns a one-off pass into a service.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PassSettings {
    pub every: Option<Duration>,
    pub values: PassValues,
}

/// Everything the command runs with.
#[derive(Debug, Clone)]
pub struct Settings {
    pub store: StoreSpec,
    /// Whether `store` is the built-in default (its directory is created).
    pub default_store: bool,
    pub connect_timeout: Duration,
    pub docker: Option<DockerSpec>,
    pub local: Option<LocalSpec>,
    /// `--e2b`, `--daytona`, `--vercel` (or their sections), in that order.
    pub hosted: Vec<HostedSpec>,
    pub owner: Option<String>,
    pub host: Option<String>,
    pub json: bool,
    pub log_format: LogFormat,
    pub metrics_addr: Option<SocketAddr>,
    /// `[reconcile]` of the config file, parsed (flags are merged per command).
    pub pass: PassSettings,
}

const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads and parses `--config FILE`.
pub fn load(path: &Path) -> Result<ConfigFile, Failure> {
    let flag = format!("--config {}", path.display());
    let text = std::fs::read_to_string(path)
        .map_err(|error| Failure::usage(&flag, messages::command::config_unreadable(&error.to_string())))?;
    parse(&text, path)
}

/// Parses the text of `--config FILE` (`path` names it in errors).
pub fn parse(text: &str, path: &Path) -> Result<ConfigFile, Failure> {
    let flag = format!("--config {}", path.display());
    // Not the error's rendering with its input: that quotes the offending
    // line, which may hold a password. Where, what (and in which key), with
    // any URL in the message redacted.
    toml::from_str(text).map_err(|mut error: toml::de::Error| {
        let span = error.span();
        error.set_input(None);
        let message = redact_text(error.to_string().trim_end()).replace('\n', " ");
        match span {
            Some(span) => {
                let before = text.get(..span.start).unwrap_or(text);
                let line = before.matches('\n').count() + 1;
                let column = before.rsplit('\n').next().map_or(0, |last| last.chars().count()) + 1;
                Failure::usage(&flag, messages::command::config_at(line, column, &message))
            }
            None => Failure::usage(&flag, message),
        }
    })
}

fn config_flag(config: Option<&Path>, key: &str) -> String {
    match config {
        Some(path) => format!("--config {}: {key}", path.display()),
        None => key.to_owned(),
    }
}

/// Merges flags over the config file.
pub fn resolve(global: &GlobalArgs, file: ConfigFile) -> Result<Settings, Failure> {
    let config_path = global.config.as_deref();
    let key = |name: &str| config_flag(config_path, name);
    let config_duration = |name: &str, text: Option<&String>, positive: bool| -> Result<Option<Duration>, Failure> {
        text.map(|text| if positive { parse_positive_duration(text) } else { parse_duration(text) })
            .transpose()
            .map_err(|message| Failure::usage(key(name), message))
    };

    let (store_text, store_flag) = match (&global.store, &file.store) {
        (Some(text), _) => (Some(text.clone()), "--store".to_owned()),
        (None, Some(text)) => (Some(text.clone()), key("store")),
        (None, None) => (None, "--store".to_owned()),
    };
    let pg_schema = global.pg_schema.clone().or(file.pg_schema).unwrap_or_else(|| "public".to_owned());
    let (store, default_store) = match store_text {
        Some(text) => (parse_store(&text, &store_flag, pg_schema)?, false),
        None => (StoreSpec::Sqlite(default_sqlite_path()?), true),
    };

    let connect_timeout = match global.connect_timeout {
        Some(timeout) => timeout,
        None => {
            config_duration("connect-timeout", file.connect_timeout.as_ref(), true)?.unwrap_or(DEFAULT_CONNECT_TIMEOUT)
        }
    };

    let docker = match (&global.docker, &file.docker) {
        (Some(url), section) => {
            // `--docker=` (what a bare `--docker` becomes) names no URL.
            let url = url.clone().filter(|url| !url.is_empty());
            let url = url.or_else(|| section.as_ref().and_then(|section| section.url.clone()));
            Some((url, section.as_ref().and_then(|section| section.name.clone()), "--docker".to_owned()))
        }
        (None, Some(section)) => Some((section.url.clone(), section.name.clone(), key("docker.url"))),
        (None, None) => None,
    };
    let docker = docker
        .map(|(url, name, flag)| {
            if let Some(url) = &url {
                check_docker_url(url, &flag)?;
            }
            let name = name.unwrap_or_else(|| "docker".to_owned());
            check_name(&name, &key("docker.name"))?;
            Ok::<_, Failure>(DockerSpec { url, name })
        })
        .transpose()?;

    let local = match (&global.local, &file.local) {
        (Some(base_dir), section) => Some(LocalSpec {
            base_dir: base_dir.clone(),
            name: section.as_ref().and_then(|section| section.name.clone()).unwrap_or_else(|| "local".to_owned()),
        }),
        (None, Some(section)) => {
            Some(LocalSpec { base_dir: section.base_dir.clone(), name: section.name.clone().unwrap_or("local".into()) })
        }
        (None, None) => None,
    };
    if let Some(local) = &local {
        if local.base_dir.as_os_str().is_empty() {
            let flag = if global.local.is_some() { "--local".to_owned() } else { key("local.base-dir") };
            return Err(Failure::usage(flag, messages::command::EMPTY_DIRECTORY));
        }
        check_name(&local.name, &key("local.name"))?;
    }
    let wanted =
        Vendor::all().map(|vendor| (vendor, global.hosted.contains(vendor), file.hosted.0.get(&vendor).cloned()));
    let mut hosted = Vec::new();
    for (vendor, flag, section) in wanted {
        if !flag && section.is_none() {
            continue;
        }
        let section = section.unwrap_or_default();
        let vendor_key = vendor.spec().key;
        let name = section.name.unwrap_or_else(|| vendor_key.to_owned());
        check_name(&name, &key(&format!("{vendor_key}.name")))?;
        // The vendor's own keys (its row says which); `api-key` only where
        // the credential is one key (Modal's and Kubernetes' are not).
        let spec = vendor.spec();
        if section.api_key.is_some() && !vendor.takes(provider_options::API_KEY) {
            let flag = key(&format!("{vendor_key}.api-key"));
            return Err(Failure::usage(flag, messages::command::not_a_vendor_key(spec.label, &section_keys(spec))));
        }
        let texts = [("api-key", &section.api_key), ("api-url", &section.api_url)];
        let own_keys: Vec<(String, &str)> =
            section.options.iter().map(|(name, value)| (kebab(name.python), value.as_str())).collect();
        let own = own_keys.iter().map(|(field, value)| (field.as_str(), Some(*value)));
        for (field, value) in texts.into_iter().map(|(field, value)| (field, value.as_deref())).chain(own) {
            if value == Some("") {
                let flag = key(&format!("{vendor_key}.{field}"));
                return Err(Failure::usage(flag, messages::command::EMPTY_CREDENTIAL));
            }
        }
        // The flag turns it on for every hosted provider; the key per section.
        let sweep_unlabelled = global.sweep_unlabelled || section.sweep_unlabelled.unwrap_or(false);
        hosted.push(HostedSpec {
            vendor,
            name,
            api_key: section.api_key,
            api_url: section.api_url,
            options: section.options,
            sweep_unlabelled,
        });
    }
    if global.sweep_unlabelled && hosted.is_empty() {
        return Err(Failure::usage("--sweep-unlabelled", messages::command::SWEEP_UNLABELLED_ALONE));
    }
    // Records name their provider: two providers of one name would be one.
    let mut named: Vec<(&str, &str)> = Vec::new();
    if let Some(docker) = &docker {
        named.push((docker.name.as_str(), "docker.name"));
    }
    if let Some(local) = &local {
        named.push((local.name.as_str(), "local.name"));
    }
    let hosted_keys: Vec<String> = hosted.iter().map(|spec| format!("{}.name", spec.vendor.spec().key)).collect();
    for (spec, config_key) in hosted.iter().zip(&hosted_keys) {
        named.push((spec.name.as_str(), config_key.as_str()));
    }
    for (index, (name, config_key)) in named.iter().enumerate() {
        if let Some((_, first)) = named[..index].iter().find(|(other, _)| other == name) {
            return Err(Failure::usage(
                key(config_key),
                messages::command::sections_share_a_name(
                    first.trim_end_matches(".name"),
                    config_key.trim_end_matches(".name"),
                    name,
                ),
            ));
        }
    }

    let owner = global.owner.clone().or(file.owner);
    if let Some(owner) = &owner {
        let flag = if global.owner.is_some() { "--owner".to_owned() } else { key("owner") };
        check_owner(owner, &flag)?;
    }
    let host = global.host.clone().or(file.host);
    if let Some(host) = &host {
        let flag = if global.host.is_some() { "--host".to_owned() } else { key("host") };
        if host.trim().is_empty() || host.contains('\0') {
            return Err(Failure::usage(flag, messages::command::EMPTY_HOST_NAME));
        }
    }
    let metrics_addr = match (global.metrics_addr, &file.metrics_addr) {
        (Some(addr), _) => Some(addr),
        (None, Some(text)) => Some(text.parse::<SocketAddr>().map_err(|error| {
            Failure::usage(key("metrics-addr"), messages::command::not_an_address(text, &error.to_string()))
        })?),
        (None, None) => None,
    };

    let values = crate::pass_flags::from_config(&file.reconcile.unwrap_or_default())
        .map_err(|(name, message)| Failure::usage(key(&format!("reconcile.{name}")), message))?;
    let pass = PassSettings { every: None, values };

    Ok(Settings {
        store,
        default_store,
        connect_timeout,
        docker,
        local,
        hosted,
        owner,
        host,
        json: global.json || file.json.unwrap_or(false),
        log_format: global.log_format.or(file.log_format).unwrap_or(LogFormat::Text),
        metrics_addr,
        pass,
    })
}

impl PassSettings {
    /// `reconcile`'s flags over the config file's `[reconcile]`.
    pub fn with_reconcile(&self, args: &ReconcileArgs) -> Self {
        Self { every: args.every.or(self.every), values: merged(Pass::Reconcile, &self.values, &args.pass.0) }
    }

    /// `orphans`' flags over the config file's `[reconcile]` (what the sweep takes of it).
    pub fn with_orphans(&self, args: &OrphansArgs) -> Self {
        Self { every: self.every, values: merged(Pass::Orphans, &self.values, &args.pass.0) }
    }
}

/// `pass`'s own values of the file, the flags winning.
fn merged(pass: Pass, file: &PassValues, flags: &PassValues) -> PassValues {
    let mut values = pass.only_its_own(file);
    values.extend(flags.iter().map(|(key, value)| (*key, value.clone())));
    values
}

/// `sqlite:PATH` (also `sqlite://PATH`) or `postgres://...` / `postgresql://...`.
pub fn parse_store(text: &str, flag: &str, pg_schema: String) -> Result<StoreSpec, Failure> {
    if let Some(path) = text.strip_prefix("sqlite:") {
        let path = path.strip_prefix("//").unwrap_or(path);
        if path.is_empty() {
            return Err(Failure::usage(flag, messages::command::SQLITE_NEEDS_A_PATH));
        }
        return Ok(StoreSpec::Sqlite(PathBuf::from(path)));
    }
    if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        return Ok(StoreSpec::Postgres { url: text.to_owned(), schema: pg_schema });
    }
    Err(Failure::usage(flag, messages::command::not_a_store_url(&redact(text))))
}

/// The default store: `store.db` in the platform's data directory
/// (`~/.local/share/sandbox-reclaim` on Linux).
pub fn default_sqlite_path() -> Result<PathBuf, Failure> {
    directories::ProjectDirs::from("", "", "sandbox-reclaim")
        .map(|dirs| dirs.data_dir().join("store.db"))
        .ok_or_else(|| Failure::usage("--store", messages::command::NO_HOME_FOR_THE_STORE))
}

fn check_docker_url(url: &str, flag: &str) -> Result<(), Failure> {
    const SCHEMES: [&str; 5] = ["unix://", "tcp://", "http://", "https://", "npipe://"];
    if SCHEMES.iter().any(|scheme| url.starts_with(scheme)) {
        return Ok(());
    }
    Err(Failure::usage(flag, messages::command::not_a_docker_url(&redact(url))))
}

fn check_name(name: &str, flag: &str) -> Result<(), Failure> {
    if name.is_empty() || name.contains('\0') {
        return Err(Failure::usage(flag, messages::command::EMPTY_PROVIDER_NAME));
    }
    Ok(())
}

fn check_owner(owner: &str, flag: &str) -> Result<(), Failure> {
    // The providers' own rule, checked before anything starts.
    sandbox_reclaim::providers::validate_owner(owner).map_err(|invalid| Failure::usage(flag, invalid.reason))
}

/// A config key as the command spells it (`project_id` → `project-id`).
fn kebab(snake: &str) -> String {
    snake.replace('_', "-")
}

/// Every key a vendor's section takes, for the message refusing another.
fn section_keys(spec: &VendorSpec) -> Vec<String> {
    let api_key = spec.credential_options.is_empty().then(|| "api-key".to_owned());
    let shared = ["name", "api-url", "sweep-unlabelled"].map(str::to_owned);
    let own = spec.own_options().map(|option| kebab(option.name.python));
    shared.into_iter().chain(api_key).chain(own).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_urls() {
        assert_eq!(
            parse_store("sqlite:/a/b.db", "--store", "public".into()).unwrap(),
            StoreSpec::Sqlite("/a/b.db".into())
        );
        assert_eq!(
            parse_store("sqlite:///a/b.db", "--store", "public".into()).unwrap(),
            StoreSpec::Sqlite("/a/b.db".into())
        );
        assert_eq!(
            parse_store("sqlite:rel.db", "--store", "public".into()).unwrap(),
            StoreSpec::Sqlite("rel.db".into())
        );
        assert!(matches!(
            parse_store("postgres://u@h:1/d", "--store", "s".into()).unwrap(),
            StoreSpec::Postgres { schema, .. } if schema == "s"
        ));
        let error = parse_store("mysql://x:secret@h/d", "--store", "public".into()).unwrap_err();
        assert!(error.to_string().starts_with("--store: "), "{error}");
        assert!(!error.to_string().contains("secret"), "{error}");
    }

    #[test]
    fn config_keys_are_checked() {
        let file: Result<ConfigFile, _> = toml::from_str("stroe = 'x'");
        assert!(file.unwrap_err().to_string().contains("stroe"));
        let file: ConfigFile = toml::from_str("[reconcile]\nbudget = 'soon'").unwrap();
        let error =
            resolve(&GlobalArgs { store: Some("sqlite:/x".into()), ..GlobalArgs::default() }, file).unwrap_err();
        assert!(error.to_string().starts_with("reconcile.budget: "), "{error}");
    }

    fn sqlite() -> GlobalArgs {
        GlobalArgs { store: Some("sqlite:/x".into()), ..GlobalArgs::default() }
    }

    fn resolved(global: &GlobalArgs, text: &str) -> Result<Settings, Failure> {
        resolve(global, toml::from_str(text).expect("parses"))
    }

    #[test]
    fn pass_options_from_the_config_and_the_flags() {
        use crate::pass_flags::{OrphansFlags, ReconcileFlags};
        use serde_json::json;

        let text = "[reconcile]\nregistry-retention = \"90d\"\naudit-retention = \"7d\"\nmax-idle = \"1h\"\n";
        let settings = resolved(&sqlite(), text).unwrap();
        assert_eq!(settings.pass.values.get("registryRetentionMs"), Some(&json!(90 * 86_400_000_u64)));
        assert_eq!(settings.pass.values.get("auditRetentionMs"), Some(&json!(7 * 86_400_000_u64)));
        assert!(resolved(&sqlite(), "").unwrap().pass.values.is_empty(), "the core's defaults");
        let zero = resolved(&sqlite(), "[reconcile]\nregistry-retention = \"0s\"\n").unwrap();
        assert_eq!(zero.pass.values.get("registryRetentionMs"), Some(&json!(0)));
        // The flag (reconcile and orphans) wins over the file; orphans drops what it does not take.
        let flags = PassValues::from([("registryRetentionMs", json!(3_600_000))]);
        let reconcile = ReconcileArgs { pass: ReconcileFlags(flags.clone()), ..ReconcileArgs::default() };
        let merged = settings.pass.with_reconcile(&reconcile);
        assert_eq!(merged.values.get("registryRetentionMs"), Some(&json!(3_600_000)));
        assert_eq!(merged.values.get("maxIdleMs"), Some(&json!(3_600_000)));
        let orphans = settings.pass.with_orphans(&OrphansArgs { pass: OrphansFlags(flags), ..OrphansArgs::default() });
        assert_eq!(orphans.values.get("registryRetentionMs"), Some(&json!(3_600_000)));
        assert_eq!(orphans.values.get("auditRetentionMs"), Some(&json!(7 * 86_400_000_u64)));
        assert_eq!(orphans.values.get("maxIdleMs"), None, "orphans expire nothing");

        for (key, bad) in [
            ("registry-retention", "\"a month\""),
            ("registry-retention", "\"-1d\""),
            ("audit-retention", "\"\""),
            ("audit-retention", "30"),
            ("concurrency", "0"),
            ("destroy-timeout", "\"0s\""),
        ] {
            let error = resolved(&sqlite(), &format!("[reconcile]\n{key} = {bad}\n")).unwrap_err();
            assert!(error.to_string().starts_with(&format!("reconcile.{key}: ")), "{bad}: {error}");
            assert_eq!(error.exit_code(), crate::error::EXIT_USAGE);
        }
    }

    #[test]
    fn sweep_unlabelled_from_the_sections_and_the_flag() {
        let sweeps = |settings: &Settings| -> Vec<(&'static str, bool)> {
            settings.hosted.iter().map(|spec| (spec.vendor.spec().key, spec.sweep_unlabelled)).collect()
        };
        let text = "[e2b]\nsweep-unlabelled = true\n[daytona]\nsweep-unlabelled = false\n\
                    [vercel]\nsweep-unlabelled = true\nproject-id = \"prj_1\"\n";
        let settings = resolved(&sqlite(), text).unwrap();
        assert_eq!(sweeps(&settings), [("e2b", true), ("daytona", false), ("vercel", true)]);
        let daytona = crate::args::HostedFlags::of(&[Vendor::Daytona]);
        let settings = resolved(&GlobalArgs { hosted: daytona, ..sqlite() }, "").unwrap();
        assert_eq!(sweeps(&settings), [("daytona", false)], "off unless asked");

        // --sweep-unlabelled: every hosted provider, by flag or by section.
        let e2b = crate::args::HostedFlags::of(&[Vendor::E2b]);
        let global = GlobalArgs { sweep_unlabelled: true, hosted: e2b, ..sqlite() };
        let settings = resolved(&global, "[daytona]\nsweep-unlabelled = false\n").unwrap();
        assert_eq!(sweeps(&settings), [("e2b", true), ("daytona", true)]);
        // Docker and local sandboxes carry our label: the flag alone means nothing.
        let global = GlobalArgs { sweep_unlabelled: true, local: Some("/tmp/x".into()), ..sqlite() };
        let error = resolve(&global, ConfigFile::default()).unwrap_err();
        assert!(error.to_string().starts_with("--sweep-unlabelled: "), "{error}");
        assert_eq!(error.exit_code(), crate::error::EXIT_USAGE);

        for section in sandbox_reclaim::providers::VENDORS.iter().map(|spec| spec.key) {
            let file: Result<ConfigFile, _> = toml::from_str(&format!("[{section}]\nsweep-unlabelled = \"yes\"\n"));
            let error = file.unwrap_err().to_string();
            assert!(error.contains("sweep-unlabelled") && error.contains("boolean"), "{section}: {error}");
            let file: Result<ConfigFile, _> = toml::from_str(&format!("[{section}]\nsweep-unlabeled = true\n"));
            assert!(file.unwrap_err().to_string().contains("sweep-unlabeled"), "{section}: a typo is refused");
        }
    }

    #[test]
    fn a_section_takes_its_vendors_own_keys_and_refuses_anothers() {
        let settings = resolved(&sqlite(), "[kubernetes]\nnamespace = \"agents\"\nkind = \"Pod\"\n").unwrap();
        let kubernetes = &settings.hosted[0];
        let own: Vec<(&str, &str)> =
            kubernetes.options.iter().map(|(name, value)| (name.node, value.as_str())).collect();
        assert_eq!(own, [("kind", "Pod"), ("namespace", "agents")]);
        let theirs: Result<ConfigFile, _> = toml::from_str("[e2b]\nnamespace = \"agents\"\n");
        let error = theirs.unwrap_err().to_string();
        assert!(error.contains("unknown field `namespace`") && error.contains("`api-key`"), "{error}");
        let typed: Result<ConfigFile, _> = toml::from_str("[boxd]\norg = 5\n");
        assert!(typed.unwrap_err().to_string().contains("`org` must be a string"));
        let empty = resolved(&sqlite(), "[railway]\nenvironment-id = \"\"\n").unwrap_err();
        assert!(empty.to_string().contains("railway.environment-id"), "{empty}");
    }
}
