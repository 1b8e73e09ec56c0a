//! The README's `picollo-tracing` example, compiled and run: keep it in sync with README.md.

use picollo_tracing::PicolloLayer;
use tracing_subscriber::prelude::*;
#[test]
fn readme_tracing() {
    tracing_subscriber::registry()
        .with(PicolloLayer::builder().report_at_exit(true).build())
        .init();
}
