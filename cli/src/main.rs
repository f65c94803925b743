//! `sandbox-reclaim`: see the crate's README.

use clap::Parser;

fn main() {
    // clap prints usage errors itself and exits 2.
    let cli = sandbox_reclaim_cli::args::Cli::parse_from(sandbox_reclaim_cli::args::bare_docker(std::env::args_os()));
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("sandbox-reclaim: error: cannot start the async runtime: {error}");
            std::process::exit(sandbox_reclaim_cli::error::EXIT_UNAVAILABLE);
        }
    };
    let code = runtime.block_on(sandbox_reclaim_cli::run(cli));
    // Do not wait for lingering tasks (the metrics server, a signal listener).
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    std::process::exit(code);
}
