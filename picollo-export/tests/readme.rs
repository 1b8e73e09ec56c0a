//! The README's `picollo-export` example, compiled and run: keep it in sync with README.md.

use picollo_alloc::HistogramBuilder;
use picollo_export::{server::MetricsServer, Labels, Registry};
use std::sync::Arc;
#[test]
fn readme_export() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Arc::new(Registry::new());
    let latency = Arc::new(HistogramBuilder::new().thread_local()?); // 0.1 %, all of u64
    registry.register(
        "rpc_latency_nanoseconds",
        "RPC latency",
        &Labels::new([("route", "/pay")])?,
        latency.clone(),
    )?;
    let _server = MetricsServer::bind("127.0.0.1:0", registry.clone())?; // README: 127.0.0.1:9464
    latency.record(48_213); // about 1.5 ns, from any thread
    Ok(())
}
