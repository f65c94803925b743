//! A scripted vendor for the listings the node fakes cannot serve: pages whose
//! cursors cycle (A → B → A) or never end. A plain HTTP/1.1 server on a
//! thread answers every request from a script of the request's cursor;
//! the vendor's page format is the caller's ([`PageFormat`]).
//!
//! A script that would page forever relents after [`RELENT_AFTER`] requests
//! (a last page, no cursor), so code that follows it fails its test instead
//! of hanging it.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sandbox_reclaim::options::provider::{ListingCeilings, MAX_LISTING_ITEMS, MAX_LISTING_PAGES};
use sandbox_reclaim::{reconcile, InMemorySandboxInstanceStore, ReconcileOptions, SandboxProvider, SweepStatus};

/// Requests a never-ending script answers before it gives a last page.
pub const RELENT_AFTER: usize = 50;

/// One answer: extra headers and a JSON body.
pub struct Answer {
    pub headers: Vec<(String, String)>,
    pub body: String,
}

/// A vendor's page: its sandboxes' ids (each labelled ours, created long
/// ago, in a state the provider accepts) and the next cursor, as the vendor
/// sends them; and the query parameter its next request carries the cursor in.
pub struct PageFormat {
    pub cursor_parameter: &'static str,
    pub page: fn(&[String], Option<&str>) -> Answer,
}

/// A server answering each request with `script(cursor, request number)`
/// (numbers from 1): the page's ids and its next cursor.
pub struct Scripted {
    pub url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Scripted {
    pub fn start(
        format: PageFormat,
        script: impl Fn(Option<&str>, usize) -> (Vec<String>, Option<String>) + Send + 'static,
    ) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        // Lives until the test process ends, blocked in `accept`.
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                loop {
                    let mut header = String::new();
                    match reader.read_line(&mut header) {
                        Ok(0) | Err(_) => break,
                        Ok(_) if header == "\r\n" => break,
                        Ok(_) => {}
                    }
                }
                let mut parts = line.split(' ');
                let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                let number = {
                    let mut seen = seen.lock().unwrap();
                    seen.push(format!("{method} {target}"));
                    seen.len()
                };
                let cursor = query(target, format.cursor_parameter);
                let (ids, next) = script(cursor.as_deref(), number);
                let answer = (format.page)(&ids, next.as_deref());
                let mut head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                    answer.body.len()
                );
                for (name, value) in &answer.headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str("\r\n");
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(answer.body.as_bytes());
            }
        });
        Self { url, requests }
    }

    /// `METHOD target` of every request so far.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// A query parameter's raw value (the scripts' cursors need no decoding).
fn query(target: &str, name: &str) -> Option<String> {
    let query = target.split_once('?')?.1;
    query.split('&').find_map(|pair| pair.strip_prefix(name)?.strip_prefix('=')).map(str::to_owned)
}

/// Builds the vendor's provider against `url` with `ceilings`.
pub type Make<'a> = &'a dyn Fn(&str, ListingCeilings) -> Box<dyn SandboxProvider>;

/// A vendor whose cursors go A → B → A: the listing fails closed after the
/// third page (the first cursor repeated), naming the cycle, and a reconcile
/// pass reports the sweep `unavailable` with that reason and destroys nothing.
pub async fn a_cursor_cycle_fails_the_listing_closed(format: fn() -> PageFormat, make: Make<'_>) {
    let cycle = |cursor: Option<&str>, number: usize| {
        if number > RELENT_AFTER {
            return (vec![], None);
        }
        let (id, next) = match cursor {
            None => ("c0", "A"),
            Some("A") => ("c1", "B"),
            _ => ("c2", "A"),
        };
        (vec![id.to_owned()], Some(next.to_owned()))
    };
    let vendor = Scripted::start(format(), cycle);
    let provider = make(&vendor.url, ListingCeilings::default());
    let started = Instant::now();
    let error = provider.list_sandboxes().await.expect_err("a cursor cycle fails the listing").to_string();
    assert!(error.contains("cursor cycle") && error.contains("page 3"), "{error}");
    assert_eq!(vendor.requests().len(), 3, "A, B, then A again: {:?}", vendor.requests());
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());

    let vendor = Scripted::start(format(), cycle);
    let provider = make(&vendor.url, ListingCeilings::default());
    let store = InMemorySandboxInstanceStore::with_ledger();
    let mut options = ReconcileOptions::new(vec![provider.as_ref()], &store);
    options.orphan_grace = Duration::from_secs(60);
    let report = reconcile(options).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!((orphans.status, orphans.destroyed), (SweepStatus::Unavailable, 0), "{orphans:?}");
    assert!(orphans.error.as_deref().is_some_and(|error| error.contains("cursor cycle")), "{orphans:?}");
    assert!(report.still_leaking);
    let requests = vendor.requests();
    assert!(requests.len() == 3 && requests.iter().all(|request| request.starts_with("GET ")), "{requests:?}");
}

/// A vendor whose cursors are always new and never end: the listing stops at
/// the page ceiling, and a listing of many sandboxes per page at the item
/// ceiling, each failing closed with a message naming its ceiling; a reconcile
/// pass reports the sweep `unavailable` with that reason.
pub async fn a_listing_past_a_ceiling_fails_closed(format: fn() -> PageFormat, make: Make<'_>) {
    let endless = |cursor: Option<&str>, number: usize| {
        if number > RELENT_AFTER {
            return (vec![], None);
        }
        let page: usize = cursor.map_or(0, |cursor| cursor.trim_start_matches('p').parse().unwrap());
        let ids = (0..3).map(|index| format!("s{page}x{index}")).collect();
        (ids, Some(format!("p{}", page + 1)))
    };
    let vendor = Scripted::start(format(), endless);
    let provider = make(&vendor.url, ListingCeilings { pages: 4, items: MAX_LISTING_ITEMS });
    let error = provider.list_sandboxes().await.expect_err("past the page ceiling").to_string();
    assert!(error.contains("ceiling of 4 pages"), "{error}");
    assert_eq!(vendor.requests().len(), 4, "{:?}", vendor.requests());

    let vendor = Scripted::start(format(), endless);
    let provider = make(&vendor.url, ListingCeilings { pages: MAX_LISTING_PAGES, items: 7 });
    let error = provider.list_sandboxes().await.expect_err("past the item ceiling").to_string();
    assert!(error.contains("ceiling of 7 sandboxes"), "{error}");
    assert_eq!(vendor.requests().len(), 3, "3 + 3 + 3 sandboxes pass 7: {:?}", vendor.requests());

    let vendor = Scripted::start(format(), endless);
    let provider = make(&vendor.url, ListingCeilings { pages: 2, items: MAX_LISTING_ITEMS });
    let store = InMemorySandboxInstanceStore::with_ledger();
    let mut options = ReconcileOptions::new(vec![provider.as_ref()], &store);
    options.orphan_grace = Duration::from_secs(60);
    let report = reconcile(options).await.unwrap();
    let orphans = &report.providers[0].orphans;
    assert_eq!((orphans.status, orphans.destroyed), (SweepStatus::Unavailable, 0), "{orphans:?}");
    assert!(orphans.error.as_deref().is_some_and(|error| error.contains("ceiling of 2 pages")), "{orphans:?}");
    let requests = vendor.requests();
    assert!(requests.len() == 2 && requests.iter().all(|request| request.starts_with("GET ")), "{requests:?}");

    // Within both ceilings, a listing that ends is read whole.
    let ending = move |cursor: Option<&str>, number: usize| {
        let (ids, next) = endless(cursor, number);
        (ids, next.filter(|_| number < 3))
    };
    let vendor = Scripted::start(format(), ending);
    let provider = make(&vendor.url, ListingCeilings { pages: 3, items: 9 });
    assert_eq!(provider.list_sandboxes().await.unwrap().len(), 9);
}

/// Pages that repeat sandboxes (an offset listing while the fleet changes):
/// each is listed once.
pub async fn a_sandbox_on_several_pages_is_listed_once(format: fn() -> PageFormat, make: Make<'_>) {
    let overlapping = |cursor: Option<&str>, _: usize| match cursor {
        None => (vec!["a".to_owned(), "b".to_owned()], Some("n1".to_owned())),
        Some("n1") => (vec!["b".to_owned(), "c".to_owned()], Some("n2".to_owned())),
        _ => (vec!["a".to_owned(), "d".to_owned()], None),
    };
    let vendor = Scripted::start(format(), overlapping);
    let provider = make(&vendor.url, ListingCeilings::default());
    let listed = provider.list_sandboxes().await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|sandbox| sandbox.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c", "d"]);
}
