//! What a `--providers` host found in the module it loaded, checked and
//! checked here for npx and pip alike. Loading the module stays in the host
//! language (a file `import()` in Node, `package.module:attribute` in
//! Python); the host reads each exported provider once and hands over what
//! it saw ([`Found`], as JSON). Every rule (an array or list of providers,
//! each with a name and a destroy, no name twice, none taken by `--docker`,
//! `--local` or a hosted flag, at least one provider) is here; every
//! message is the core's (`messages::providers_module`). A refusal is a
//! usage error naming `--providers`, printed as the binary prints one.
//! Imports the core's messages, the command's `Failure` and its printer.

use serde::Deserialize;
use serde_json::{json, Value};

use sandbox_reclaim::report::messages::providers_module as text;

use crate::error::Failure;

/// Which host loaded the module: its words for what it found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Host {
    Node,
    Python,
}

/// What the host found: the module as the user named it (Node: the path,
/// with the file it resolved to; Python: `package.module:attribute`), what
/// stopped it from reading the providers, else each provider as it saw it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Found {
    pub host: Host,
    pub named: String,
    #[serde(default)]
    pub problem: Option<Problem>,
    #[serde(default)]
    pub providers: Vec<Seen>,
}

/// Why the host could not read a list of providers. `error` is the host's
/// own description of what was raised; `got` the host's name of a type.
#[derive(Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Problem {
    /// Node: nothing at the resolved path.
    NoSuchFile,
    /// Node: the path is a directory or the like.
    NotAFile,
    /// Node: `import()` threw; Python: importing `module` raised.
    ImportFailed {
        #[serde(default)]
        module: Option<String>,
        error: String,
    },
    /// Node: the default export is no array (`got`: what it is).
    NotAnArray { got: String },
    /// Python: no `package.module:attribute` (`shown`: the host's literal of it).
    BadSpec { shown: String },
    /// Python: no such module.
    NoModule { module: String },
    /// Python: the module lacks the attribute.
    NoAttribute { module: String, attribute: String },
    /// Python: the zero-arg callable raised.
    CallRaised { error: String },
    /// Python: the callable returned no list.
    CallNotAList { got: String },
    /// Python: the attribute is neither a list nor a callable.
    NotAList { got: String },
}

/// One exported provider as the host read it (each property once).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Seen {
    /// An object (Node: not `null`, of type `object`; Python: always).
    pub object: bool,
    /// Its `name`, when a non-empty string.
    pub name: Option<String>,
    /// The host's literal of the name (`JSON.stringify`, `repr`), or the
    /// type name of what `name` held.
    pub shown: String,
    /// `destroy` is callable.
    pub destroy: bool,
    /// `list` is absent or callable.
    pub list: bool,
    /// `owner` is absent or a string.
    pub owner: bool,
}

/// The providers the command itself builds, by name, with the flag behind each.
fn managed(plan: &Value) -> Vec<(String, String)> {
    let mut names = Vec::new();
    for flag in ["docker", "local"] {
        if let Some(name) = plan[flag]["name"].as_str() {
            names.push((name.to_owned(), format!("--{flag}")));
        }
    }
    for hosted in plan["hosted"].as_array().into_iter().flatten() {
        if let (Some(name), Some(flag)) = (hosted["name"].as_str(), hosted["flag"].as_str()) {
            names.push((name.to_owned(), flag.to_owned()));
        }
    }
    names
}

/// Checks what the host found against the plan's own providers.
pub fn check(plan: &Value, found: &Found) -> Result<(), Failure> {
    let refuse = |message: String| Err(Failure::usage("--providers", message));
    if let Some(problem) = &found.problem {
        return refuse(problem_message(found.host, &found.named, problem));
    }
    let managed = managed(plan);
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for (index, provider) in found.providers.iter().enumerate() {
        if let Some(message) = provider_message(found, index, provider, &seen, &managed) {
            return refuse(message);
        }
        seen.push((provider.name.as_deref().unwrap_or_default(), index));
    }
    if found.providers.is_empty() && managed.is_empty() {
        return refuse(text::none(&found.named, found.host == Host::Python));
    }
    Ok(())
}

fn problem_message(host: Host, named: &str, problem: &Problem) -> String {
    match problem {
        Problem::NoSuchFile => text::no_such_file(named),
        Problem::NotAFile => text::not_a_file(named),
        Problem::ImportFailed { module: Some(module), error } if host == Host::Python => {
            text::python_import_failed(module, error)
        }
        Problem::ImportFailed { error, .. } => text::node_import_failed(named, error),
        Problem::NotAnArray { got } => text::not_an_array(named, got),
        Problem::BadSpec { shown } => text::bad_spec(shown),
        Problem::NoModule { module } => text::no_module(module),
        Problem::NoAttribute { module, attribute } => text::no_attribute(module, attribute),
        Problem::CallRaised { error } => text::call_raised(named, error),
        Problem::CallNotAList { got } => text::call_not_a_list(named, got),
        Problem::NotAList { got } => text::not_a_list(named, got),
    }
}

/// What is wrong with provider `index`, if anything, in the host's words.
fn provider_message(
    found: &Found,
    index: usize,
    provider: &Seen,
    seen: &[(&str, usize)],
    managed: &[(String, String)],
) -> Option<String> {
    let python = found.host == Host::Python;
    let (at, shown) = (text::at(&found.named, index, python), provider.shown.as_str());
    let twin = provider.name.as_deref().and_then(|name| seen.iter().find(|(other, _)| *other == name));
    let taken = provider.name.as_deref().and_then(|name| managed.iter().find(|(other, _)| other == name));
    if python {
        return if provider.name.is_none() {
            Some(text::python_no_name(&at, shown))
        } else if !provider.destroy {
            Some(text::python_no_destroy(&at, shown))
        } else if !provider.list {
            Some(text::python_bad_list(&at, shown))
        } else if !provider.owner {
            Some(text::python_bad_owner(&at, shown))
        } else if let Some((_, first)) = twin {
            Some(text::python_twice(&at, shown, &text::at(&found.named, *first, true)))
        } else {
            taken.map(|(_, flag)| text::python_taken(&at, shown, flag))
        };
    }
    if !provider.object {
        Some(text::node_not_an_object(&at))
    } else if provider.name.is_none() {
        Some(text::node_no_name(&at))
    } else if !provider.destroy {
        Some(text::node_no_destroy(&at, shown))
    } else if !provider.list {
        Some(text::node_bad_list(&at, shown))
    } else if !provider.owner {
        Some(text::node_bad_owner(&at, shown))
    } else if twin.is_some() {
        Some(text::node_twice(&at, shown))
    } else {
        taken.map(|(_, flag)| text::node_taken(&at, shown, flag))
    }
}

/// Checks what a `--providers` host found in the module it loaded
/// ([`Found`], as JSON) against `plan`: `Ok(None)`
/// when the pass may run, `Ok(Some(code))` when it may not (the refusal
/// printed as the binary prints a usage error), `Err` for a malformed document.
pub fn host_check_module(plan: &str, found: &str) -> Result<Option<i32>, String> {
    let plan: Value = serde_json::from_str(plan).map_err(|error| format!("malformed plan: {error}"))?;
    let found: Found = serde_json::from_str(found).map_err(|error| format!("malformed module description: {error}"))?;
    Ok(check(&plan, &found).err().map(|failure| {
        let command = plan["command"].as_str().unwrap_or("reconcile");
        crate::hosted::print_failure(command, plan["json"] == json!(true), &failure, None)
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn seen(name: &str) -> Seen {
        Seen {
            object: true,
            name: Some(name.to_owned()),
            shown: format!("\"{name}\""),
            destroy: true,
            list: true,
            owner: true,
        }
    }

    fn refusal(plan: &Value, found: &Found) -> String {
        match check(plan, found) {
            Err(Failure::Usage { flag, message }) => {
                assert_eq!(flag, "--providers");
                message
            }
            other => panic!("expected a usage failure, got {other:?}"),
        }
    }

    #[test]
    fn a_name_the_command_builds_or_a_second_provider_takes_is_refused() {
        let plan = json!({ "local": { "name": "local" }, "hosted": [{ "flag": "--e2b", "name": "e2b" }] });
        let found = |providers| Found { host: Host::Node, named: "p.mjs".into(), problem: None, providers };
        assert!(check(&plan, &found(vec![seen("mine")])).is_ok());
        assert_eq!(
            refusal(&plan, &found(vec![seen("e2b")])),
            "p.mjs: provider [0] is named \"e2b\", as the --e2b provider"
        );
        assert_eq!(
            refusal(&plan, &found(vec![seen("a"), seen("a")])),
            "p.mjs: provider [1] (\"a\"): two providers are named \"a\""
        );
        let python = Found { host: Host::Python, named: "m:p".into(), problem: None, providers: vec![seen("local")] };
        assert_eq!(refusal(&plan, &python), "m:p[0]: provider \"local\" is already the name of --local");
    }

    #[test]
    fn no_provider_at_all_is_refused_but_the_command_s_own_suffice() {
        let none = Found { host: Host::Python, named: "m:p".into(), problem: None, providers: Vec::new() };
        assert!(refusal(&json!({}), &none).starts_with("m:p holds no provider"));
        assert!(check(&json!({ "docker": { "name": "docker" } }), &none).is_ok());
    }

    #[test]
    fn each_rule_is_checked_in_order_and_a_host_problem_worded_here() {
        let mut nameless = seen("x");
        nameless.name = None;
        nameless.shown = "int".into();
        nameless.destroy = false;
        let found = Found { host: Host::Python, named: "m:p".into(), problem: None, providers: vec![nameless] };
        assert_eq!(refusal(&json!({}), &found), "m:p[0] has no `name` (a non-empty str), got int");
        let found = Found {
            host: Host::Node,
            named: "p.mjs".into(),
            problem: Some(Problem::NotAnArray { got: "no default export".into() }),
            providers: Vec::new(),
        };
        assert!(refusal(&json!({}), &found).ends_with("the module has no default export"));
    }
}
