//! A minimal async line server (tokio, no HTTP framework) instrumented with `tracing` spans
//! only; the Picollo layer turns them into the per-phase table.
//!
//! ```text
//! # 2,000 requests over 8 connections, then the table (and an .hlog interval log):
//! PICOLLO_COUNTERS=page-faults,cycles,instructions \
//!     cargo run --release -p picollo-tracing --example server -- 2000 --hlog spans.hlog
//! # keep serving for 30 s so that another terminal can attach:
//! cargo run --release -p picollo-tracing --example server -- 100000 --hold 30
//! picollo top <PID>                 # the live table of the busy intervals
//! picollo attach <PID> --spans      # the table when the server exits
//! ```
//!
//! Spans: `connection` (one per client connection, entered at every poll: its busy time is
//! the time it ran, its wall time the connection's life), `request` inside it, and `parse`,
//! `lookup` (touches 4 fresh pages: exactly 4 page faults) and `respond` inside that.

use std::time::{Duration, Instant};

use picollo_tracing::PicolloLayer;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

const CONNECTIONS: usize = 8;

struct Args {
    requests: usize,
    hold: Option<f64>,
    hlog: Option<String>,
}

fn args() -> Args {
    let mut a = Args {
        requests: 2000,
        hold: None,
        hlog: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--hold" => a.hold = it.next().and_then(|s| s.parse().ok()),
            "--hlog" => a.hlog = it.next(),
            n => match n.parse() {
                Ok(n) => a.requests = n,
                Err(_) => {
                    eprintln!("usage: server [REQUESTS] [--hold SECONDS] [--hlog FILE]");
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
    Ok(())
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
    let layer = PicolloLayer::new();
    let handle = layer.handle();
    tracing_subscriber::registry().with(layer).init();
    println!(
        "pid {}; counters: {:?}",
        std::process::id(),
        handle.counters()
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()?;
    let mut log = match &args.hlog {
        Some(path) => Some(
            handle
                .hlog(std::fs::File::create(path)?)
                .map_err(std::io::Error::other)?,
        ),
        None => None,
    };
    let started = Instant::now();
    rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let hold = args.hold.map(Duration::from_secs_f64);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let _ = serve(stream)
                        .instrument(tracing::info_span!("connection"))
                        .await;
                });
            }
        });
        let per_client = args.requests.div_ceil(CONNECTIONS);
        loop {
            let clients: Vec<_> = (0..CONNECTIONS)
                .map(|id| tokio::spawn(client(addr, per_client, id)))
                .collect();
            for c in clients {
                c.await.map_err(std::io::Error::other)??;
            }
            if let Some(log) = &mut log {
                log.write_interval().map_err(std::io::Error::other)?;
            }
            match hold {
                Some(h) if started.elapsed() < h => continue,
                _ => break,
            }
        }
        Ok::<_, std::io::Error>(())
    })?;
    // Let the connection tasks see their clients' end of stream and close their spans.
    rt.block_on(async { tokio::time::sleep(Duration::from_millis(50)).await });
    drop(rt);
    if let Some(log) = &mut log {
        log.write_interval().map_err(std::io::Error::other)?;
        println!("wrote {}", args.hlog.as_deref().unwrap_or_default());
    }
    println!(
        "{} requests in {:.2} s\n\n{}",
        handle.span("request").map_or(0, |r| r.count()),
        started.elapsed().as_secs_f64(),
        handle.table()
    );
    Ok(())
}
