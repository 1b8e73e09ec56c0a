//! A small async line server (tokio, no HTTP framework) instrumented with `tracing` spans
//! only, set up as a real server sets up its subscriber: the application's own log
//! (`fmt::layer()`) with its own filter (`EnvFilter`, from `RUST_LOG`), and the Picollo layer,
//! which then times every span whatever `RUST_LOG` says.
//!
//! ```text
//! # 2,000 requests over 8 connections from its own clients, then the table:
//! PICOLLO_COUNTERS=page-faults,cycles,instructions \
//!     cargo run --release -p picollo-tracing --example server -- 2000
//! # serve on 127.0.0.1 until SIGTERM, an .hlog interval every second, the table at the end:
//! cargo run --release -p picollo-tracing --example server -- --listen --hlog spans.hlog
//! kill -TERM <PID>                  # the last interval and the table, then exit
//! picollo top <PID>                 # meanwhile: the live table of the busy intervals
//! ```
//!
//! Spans: `connection` (one per client connection, entered at every poll: its busy time is
//! the time it ran, its wall time the connection's life), `request` inside it, and `parse`,
//! `lookup` (touches 4 fresh pages: exactly 4 page faults) and `respond` inside that.

use std::time::Duration;

use picollo_tracing::PicolloLayer;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tracing::Instrument;
use tracing_subscriber::prelude::*;
use tracing_subscriber::{fmt, EnvFilter};

const CONNECTIONS: usize = 8;

struct Args {
    requests: usize,
    listen: bool,
    hlog: Option<String>,
    period: f64,
}

fn args() -> Args {
    let mut a = Args {
        requests: 2000,
        listen: false,
        hlog: None,
        period: 1.0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--listen" => a.listen = true,
            "--hlog" => a.hlog = it.next(),
            "--period" => a.period = it.next().and_then(|s| s.parse().ok()).unwrap_or(1.0),
            n => match n.parse() {
                Ok(n) => a.requests = n,
                Err(_) => {
                    eprintln!(
                        "usage: server [REQUESTS] | --listen [--hlog FILE] [--period SECONDS]"
                    );
                    std::process::exit(2);
                }
            },
        }
    }
    a
}

/// The server's work for one request: a lookup that allocates fresh memory (4 fresh pages,
/// not from the allocator's cache: exactly 4 page faults).
fn lookup(key: &str) -> usize {
    // The example exists to show these faults: without them the table would be wrong.
    // (Counters are Linux only: elsewhere the example shows times alone.)
    #[cfg(target_os = "linux")]
    let _ = picollo_linux::workload::touch_fresh_pages(4);
    key.bytes().map(usize::from).sum()
}

async fn serve(stream: TcpStream) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    while let Some(line) = lines.next_line().await? {
        let reply = async {
            let key = tracing::info_span!("parse").in_scope(|| line.trim().to_owned());
            let value = tracing::info_span!("lookup").in_scope(|| lookup(&key));
            tracing::info_span!("respond").in_scope(|| format!("{key}={value}\n"))
        }
        .instrument(tracing::info_span!("request"))
        .await;
        write.write_all(reply.as_bytes()).await?;
    }
    tracing::debug!("connection closed");
    Ok(())
}

async fn accept(listener: TcpListener) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(async move {
            if let Err(e) = serve(stream)
                .instrument(tracing::info_span!("connection"))
                .await
            {
                tracing::warn!("connection failed: {e}");
            }
        });
    }
}

async fn client(addr: std::net::SocketAddr, requests: usize, id: usize) -> std::io::Result<()> {
    let stream = TcpStream::connect(addr).await?;
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();
    for r in 0..requests {
        write
            .write_all(format!("key-{id}-{r}\n").as_bytes())
            .await?;
        if lines.next_line().await?.is_none() {
            break;
        }
    }
    Ok(())
}

fn main() -> std::io::Result<()> {
    let args = args();
    let mut builder = PicolloLayer::builder();
    if let Some(path) = &args.hlog {
        builder = builder.hlog(
            std::fs::File::create(path)?,
            Duration::from_secs_f64(args.period),
        );
    }
    if args.listen {
        // A server stopped by SIGTERM: the last interval and the table on the way out.
        builder = builder.report_at_exit(true).finish_on_sigterm(true);
    }
    let layer = builder.build();
    let handle = layer.handle();
    // The application's log keeps its own filter (RUST_LOG); the Picollo layer has none, so
    // it sees every span. A filter on the whole registry would disable the spans for it too.
    tracing_subscriber::registry()
        .with(fmt::layer().with_filter(EnvFilter::from_default_env()))
        .with(layer)
        .init();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()?;
    if args.listen {
        return rt.block_on(async {
            let listener = TcpListener::bind("127.0.0.1:0").await?;
            println!(
                "pid {}; listening on {}",
                std::process::id(),
                listener.local_addr()?
            );
            accept(listener).await;
            Ok(())
        });
    }
    let started = std::time::Instant::now();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        tokio::spawn(accept(listener));
        let per_client = args.requests.div_ceil(CONNECTIONS);
        let clients: Vec<_> = (0..CONNECTIONS)
            .map(|id| tokio::spawn(client(addr, per_client, id)))
            .collect();
        for c in clients {
            c.await.map_err(std::io::Error::other)??;
        }
        // Let the connection tasks see their clients' end of stream and close their spans.
        tokio::time::sleep(Duration::from_millis(50)).await;
        Ok::<_, std::io::Error>(())
    })?;
    drop(rt);
    // The last .hlog interval, if any.
    handle.finish();
    println!(
        "{} requests in {:.2} s\n\n{}",
        handle.span("request").map_or(0, |r| r.count()),
        started.elapsed().as_secs_f64(),
        handle.table()
    );
    Ok(())
}
