//! Prints a compiled reclaim program as JSON: `cargo run -p sandbox-reclaim
//! --example print_program -- [reclaimSandbox|sandboxReclaimer] [ledger]`.
use sandbox_reclaim::program::{program_json, Api};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let api = match args.first().map(String::as_str) {
        Some("sandboxReclaimer") => Api::SandboxReclaimer,
        _ => Api::ReclaimSandbox,
    };
    let ledger = args.get(1).is_some_and(|arg| arg == "ledger");
    println!("{}", program_json(api, ledger));
}
