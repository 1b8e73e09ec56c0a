//! Runs the calibrated workload `add_chain_256(n)`, with `n` from the command line.
//!
//! ```text
//! cargo build --release -p picollo-core --example add_chain
//! valgrind --tool=callgrind --toggle-collect='*add_chain_256*' \
//!     target/release/examples/add_chain 1000     # about 258,000 instructions
//! perf stat -e instructions,cycles target/release/examples/add_chain 1000000
//! ```

use picollo_core::workload;
use std::process::ExitCode;

fn main() -> ExitCode {
    let arg = std::env::args().nth(1);
    let n = match arg.as_deref().map(str::parse::<u64>) {
        None => 1000,
        Some(Ok(n)) => n,
        Some(Err(e)) => {
            eprintln!("usage: add_chain [N]   (N units of 256 adds; default 1000): {e}");
            return ExitCode::FAILURE;
        }
    };
    let adds = workload::add_chain_256(n);
    println!("add_chain_256({n}): {adds} dependent adds");
    ExitCode::SUCCESS
}
