//! A vendor fake (tests/fakes/*.mjs) run under `node` for a test, serving
//! until dropped, and its `/_fake/` control routes. `make test` has node;
//! without it the hosted-provider tests FAIL, never pass.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

pub struct Fake {
    child: Child,
    /// The base URL to point a provider at (`DAYTONA_API_URL`-style for Daytona).
    pub url: String,
    http: reqwest::Client,
}

impl Fake {
    /// Starts `tests/fakes/{script}` with `args`.
    pub fn start(script: &str, args: &[&str]) -> Self {
        let path = format!("{}/../tests/fakes/{script}", env!("CARGO_MANIFEST_DIR"));
        let mut child = Command::new("node")
            .arg(path)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("these tests need `node` on PATH to run the vendor fakes");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let started: Value = serde_json::from_str(&line).expect("a fake prints {\"url\": ...}");
        Self { child, url: started["url"].as_str().unwrap().to_owned(), http: reqwest::Client::new() }
    }

    pub async fn post(&self, route: &str, body: Value) {
        let response = self.http.post(format!("{}/_fake/{route}", self.url)).body(body.to_string()).send().await;
        let response = response.unwrap();
        assert!(response.status().is_success(), "{route}: {}", response.text().await.unwrap_or_default());
    }

    pub async fn seed(&self, sandboxes: Vec<Value>) {
        self.post("sandboxes", Value::Array(sandboxes)).await;
    }

    pub async fn faults(&self, faults: Value) {
        self.post("faults", faults).await;
    }

    pub async fn state(&self) -> Value {
        let response = self.http.get(format!("{}/_fake/state", self.url)).send().await.unwrap();
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
    }

    /// The ids (names, for Vercel) still alive, sorted.
    pub async fn alive(&self) -> Vec<String> {
        let state = self.state().await;
        state["alive"].as_array().unwrap().iter().map(|id| id.as_str().unwrap().to_owned()).collect()
    }

    /// How many DELETEs reached a path ending in `/{id}`.
    pub async fn deletes_of(&self, id: &str) -> usize {
        let suffix = format!("/{id}");
        let state = self.state().await;
        let requests = state["requests"].as_array().unwrap();
        requests.iter().filter(|r| r["method"] == "DELETE" && r["path"].as_str().unwrap().ends_with(&suffix)).count()
    }

    /// Waits (up to a second) until the fake saw `count` requests abandoned.
    pub async fn abandoned(&self, count: u64) -> u64 {
        let mut seen = 0;
        for _ in 0..100 {
            seen = self.state().await["abandoned"].as_u64().unwrap_or(0);
            if seen >= count {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        seen
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
