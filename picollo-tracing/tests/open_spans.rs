//! `%` while outermost spans are open: a server's connection spans live as long as their
//! connections, and the requests nested in them close all the time. A table taken then must
//! keep every nested row within its outermost spans (the whole counts the open spans'
//! outermost busy time so far), and say which spans are open.

use std::hint::black_box;
use std::time::{Duration, Instant};

use picollo_tracing::PicolloLayer;
use tracing_subscriber::layer::SubscriberExt;

/// Busy for about `d` (the share test needs time outside the nested spans, not a precise
/// duration).
fn spin(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        black_box(0);
    }
}

/// The `%` cell of `name`'s row, as a number.
fn share(table: &picollo_spans::SpanTable, name: &str) -> Option<f64> {
    let cell = table.cell(name, "%")?;
    cell.trim_end_matches('%').parse().ok()
}

/// Connections polled a few times each, with requests (and a lookup in each) closed inside
/// their polls, and time of the connection's own between requests.
fn poll(connection: &tracing::Span, requests: usize) {
    let _poll = connection.enter();
    for _ in 0..requests {
        spin(Duration::from_micros(50));
        let _request = tracing::info_span!("request").entered();
        spin(Duration::from_micros(50));
        let _lookup = tracing::info_span!("lookup").entered();
        spin(Duration::from_micros(50));
    }
}

#[test]
fn nested_rows_stay_within_open_connection_spans() {
    let layer = PicolloLayer::builder().time_only().rings(false).build();
    let handle = layer.handle();
    let subscriber = tracing_subscriber::registry().with(layer);
    tracing::subscriber::with_default(subscriber, || {
        // Ten connections, each polled three times, none closed.
        let connections: Vec<tracing::Span> =
            (0..10).map(|_| tracing::info_span!("connection")).collect();
        for _ in 0..3 {
            for c in &connections {
                poll(c, 4);
            }
        }
        let table = handle.table();
        println!("{table}");
        assert!(
            table.cell("connection", "N").is_none(),
            "no connection closed yet"
        );
        let (request, lookup) = (
            share(&table, "request").unwrap(),
            share(&table, "lookup").unwrap(),
        );
        // Each poll is about 50 µs of the connection's own per 150 µs: the requests about
        // two thirds of it, the lookups one third (generous bounds: a busy machine stretches
        // any of the spins).
        assert!(request > 0.0 && request < 100.0, "request {request} %");
        assert!(
            lookup > 0.0 && lookup < request,
            "lookup {lookup} % within request {request} %"
        );
        let note = table
            .notes
            .iter()
            .find(|n| n.starts_with("open spans:"))
            .unwrap_or_else(|| panic!("a note on the open spans: {:?}", table.notes));
        assert!(note.contains("connection ×10"), "{note}");
        drop(connections);
    });
    // Every connection closed: the outermost row is the whole, and nothing is open.
    let table = handle.table();
    println!("{table}");
    assert_eq!(table.cell("connection", "N"), Some("10"));
    assert_eq!(share(&table, "connection"), Some(100.0));
    assert!(share(&table, "request").unwrap() < 100.0);
    assert!(!table.notes.iter().any(|n| n.starts_with("open spans:")));
}

#[test]
fn some_open_some_closed() {
    let layer = PicolloLayer::builder().time_only().rings(false).build();
    let handle = layer.handle();
    let subscriber = tracing_subscriber::registry().with(layer);
    tracing::subscriber::with_default(subscriber, || {
        let mut connections: Vec<tracing::Span> =
            (0..6).map(|_| tracing::info_span!("connection")).collect();
        for c in &connections {
            poll(c, 3);
        }
        // Four of six close; two stay open, polled again since.
        connections.truncate(2);
        for c in &connections {
            poll(c, 3);
        }
        let table = handle.table();
        println!("{table}");
        assert_eq!(table.cell("connection", "N"), Some("4"));
        let connection = share(&table, "connection").unwrap();
        let request = share(&table, "request").unwrap();
        assert!(
            connection < 100.0,
            "open connections are part of the whole: {connection} %"
        );
        assert!(request < 100.0 && share(&table, "lookup").unwrap() < request);
        let note = table
            .notes
            .iter()
            .find(|n| n.starts_with("open spans:"))
            .unwrap_or_else(|| panic!("a note on the open spans: {:?}", table.notes));
        assert!(note.contains("connection ×2"), "{note}");
    });
}

/// A table taken inside a span still in its first interval (a `main` span around the whole
/// program): its time is in no row and not yet in the whole, and the table says so.
#[test]
fn a_span_still_in_its_first_interval_is_named() {
    let layer = PicolloLayer::builder().time_only().rings(false).build();
    let handle = layer.handle();
    let subscriber = tracing_subscriber::registry().with(layer);
    tracing::subscriber::with_default(subscriber, || {
        let _main = tracing::info_span!("main").entered();
        for _ in 0..3 {
            let _request = tracing::info_span!("request").entered();
            spin(Duration::from_micros(20));
        }
        let table = handle.table();
        println!("{table}");
        assert_eq!(table.cell("request", "N"), Some("3"));
        assert!(table.cell("main", "N").is_none());
        let note = table
            .notes
            .iter()
            .find(|n| n.starts_with("open spans:"))
            .unwrap_or_else(|| panic!("a note on the open spans: {:?}", table.notes));
        assert!(note.contains("main ×1 (no interval ended yet)"), "{note}");
    });
}
