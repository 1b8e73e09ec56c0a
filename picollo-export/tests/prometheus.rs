//! Against a real Prometheus server: exporters serve known data, Prometheus scrapes them every
//! second, and its HTTP API must return exactly the buckets, counts and sums Picollo computes,
//! quantiles within the stated bound, and fleet aggregation (`sum`) equal to Picollo's merge.
//!
//! Needs `prometheus` on the PATH (Debian's package). Without it the tests print why and
//! return; with `CI` set they fail instead.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use picollo_alloc::HistogramBuilder;
use picollo_core::{EquivalentValue, HistogramRead, Layout, ReadExt, Window};
use picollo_export::server::MetricsServer;
use picollo_export::{
    ClassicBuckets, ClassicHistogram, ExportOptions, Labels, Mapping, NativeHistogram, Registry,
};
use serde_json::Value;

/// A Prometheus server on 127.0.0.1 with a temporary data directory, killed on drop.
struct Prometheus {
    child: Child,
    dir: PathBuf,
    port: u16,
}

/// `(major, minor)` of the installed Prometheus, `None` when it is not installed.
fn prometheus_version() -> Option<(u32, u32)> {
    let out = Command::new("prometheus").arg("--version").output().ok()?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    // "prometheus, version 2.42.0+ds (branch: …"
    let v = text.split("version ").nth(1)?;
    let mut parts = v
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty());
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Whether the tests can run; panics under `CI` when Prometheus is missing.
fn available() -> Option<(u32, u32)> {
    match prometheus_version() {
        Some(v) => Some(v),
        None if std::env::var_os("CI").is_some() => {
            panic!(
                "prometheus is not installed (CI must install it: .ci/install.d/30-prometheus.sh)"
            )
        }
        None => {
            eprintln!("skip: prometheus is not on the PATH (apt-get install prometheus)");
            None
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Prometheus {
    /// Starts Prometheus scraping `targets` every second, with native histograms on when
    /// `native` (2.40 to 3.7 need the feature flag; later servers a scrape setting).
    fn start(version: (u32, u32), targets: &[std::net::SocketAddr], native: bool) -> Prometheus {
        let dir = std::env::temp_dir().join(format!(
            "picollo-prometheus-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let flag_era = version < (3, 8);
        let targets: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: picollo\n{}    static_configs:\n      - targets: [{}]\n",
            if native && !flag_era { "    scrape_native_histograms: true\n" } else { "" },
            targets.join(", ")
        );
        std::fs::write(dir.join("prometheus.yml"), config).expect("config");
        let port = free_port();
        let mut cmd = Command::new("prometheus");
        cmd.arg(format!(
            "--config.file={}",
            dir.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--log.level=warn")
        .stdout(Stdio::null())
        .stderr(
            std::fs::File::create(dir.join("stderr.log"))
                .map(Stdio::from)
                .unwrap_or(Stdio::null()),
        );
        if native && flag_era {
            cmd.arg("--enable-feature=native-histograms");
        }
        let child = cmd.spawn().expect("prometheus starts");
        let p = Prometheus { child, dir, port };
        p.wait_until(Duration::from_secs(60), "ready", || {
            ureq::get(format!("http://127.0.0.1:{}/-/ready", p.port))
                .call()
                .is_ok()
                .then_some(())
        });
        p
    }

    fn wait_until<T>(&self, limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            if let Some(v) = f() {
                return v;
            }
            if start.elapsed() > limit {
                let log = std::fs::read_to_string(self.dir.join("stderr.log")).unwrap_or_default();
                panic!("prometheus: not {what} after {limit:?}; its log:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// An instant query's `data.result`.
    fn query(&self, q: &str) -> Vec<Value> {
        let body = ureq::get(format!("http://127.0.0.1:{}/api/v1/query", self.port))
            .query("query", q)
            .call()
            .and_then(|mut r| r.body_mut().read_to_string())
            .unwrap_or_else(|e| panic!("query {q}: {e}"));
        let v: Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(v["status"], "success", "{q}: {body}");
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// Waits until `q` returns a series whose float value (or native count) is `expected`.
    fn wait_for_count(&self, q: &str, expected: f64) {
        self.wait_until(
            Duration::from_secs(30),
            &format!("{q} == {expected}"),
            || {
                let r = self.query(q);
                let v = r.first()?["value"][1].as_str()?.parse::<f64>().ok()?;
                (v == expected).then_some(())
            },
        );
    }

    fn scalar(&self, q: &str) -> f64 {
        let r = self.query(q);
        assert_eq!(r.len(), 1, "{q}: {r:?}");
        r[0]["value"][1]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{q}: {r:?}"))
    }

    /// The native histogram of a query: `(count, sum, [(lower, upper, count)], zero count)`.
    fn native(&self, q: &str) -> (u64, f64, Vec<(f64, f64, u64)>, u64) {
        let r = self.query(q);
        assert_eq!(r.len(), 1, "{q}: {r:?}");
        let h = &r[0]["histogram"][1];
        let num = |v: &Value| {
            v.as_str()
                .and_then(|s| s.parse::<f64>().ok())
                .expect("number")
        };
        let mut buckets = Vec::new();
        let mut zero = 0;
        for b in h["buckets"].as_array().cloned().unwrap_or_default() {
            let (lower, upper, count) = (num(&b[1]), num(&b[2]), num(&b[3]) as u64);
            if lower <= 0.0 {
                zero += count; // [-threshold, threshold]
            } else {
                buckets.push((lower, upper, count));
            }
        }
        (num(&h["count"]) as u64, num(&h["sum"]), buckets, zero)
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Values spread over six decades, deterministic.
fn data(seed: u64, n: usize) -> Vec<u64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let decade = 10u64.pow((s % 6) as u32 + 2);
            decade + (s >> 20) % (9 * decade)
        })
        .collect()
}

/// Our buckets as Prometheus reports them (bounds as f64), compared with a relative
/// tolerance for the bounds (Prometheus computes them with its own float math) and exactly
/// for the counts.
fn assert_same_buckets(ours: &NativeHistogram, theirs: &[(f64, f64, u64)]) {
    let s = ours.schema();
    let expected: Vec<(f64, f64, u64)> = ours
        .buckets()
        .map(|(i, n)| (s.lower_bound(i), s.upper_bound(i), n))
        .collect();
    assert_eq!(
        expected.len(),
        theirs.len(),
        "bucket count: {expected:?} vs {theirs:?}"
    );
    for (e, t) in expected.iter().zip(theirs) {
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(b.abs());
        assert!(close(e.0, t.0) && close(e.1, t.1), "bounds {e:?} vs {t:?}");
        assert_eq!(e.2, t.2, "count of ({}, {}]", e.0, e.1);
    }
}

#[test]
fn native_histograms_arrive_exactly() {
    let Some(version) = available() else { return };
    let registry = Arc::new(Registry::new());
    // The default layout (schema 8) and a coarse one whose buckets straddle native edges.
    let fine = Layout::DEFAULT;
    let tl = Arc::new(HistogramBuilder::new().layout(fine).thread_local().unwrap());
    let coarse = Layout::from_block_scale(3).unwrap();
    let atomic = Arc::new(
        HistogramBuilder::new()
            .layout(coarse)
            .dense()
            .atomic()
            .unwrap(),
    );
    let values = data(1, 20_000);
    std::thread::scope(|s| {
        for chunk in values.chunks(5_000) {
            let tl = &tl;
            s.spawn(move || chunk.iter().for_each(|&v| tl.record(v)));
        }
    });
    values.iter().for_each(|&v| atomic.record(v));
    atomic.record(0);
    let labels = |k: &str| Labels::new([("layout", k)]).unwrap();
    registry
        .register(
            "picollo_test_latency",
            "test data",
            &labels("fine"),
            tl.clone(),
        )
        .unwrap();
    registry
        .register(
            "picollo_test_latency",
            "test data",
            &labels("coarse"),
            atomic.clone(),
        )
        .unwrap();
    let server = MetricsServer::bind("127.0.0.1:0", registry.clone()).unwrap();
    let prom = Prometheus::start(version, &[server.local_addr().expect("TCP")], true);

    for (k, h, n) in [
        ("fine", &*tl as &dyn HistogramRead, 20_000u64),
        ("coarse", &*atomic, 20_001),
    ] {
        let series = format!("picollo_test_latency{{layout=\"{k}\"}}");
        prom.wait_for_count(&format!("histogram_count({series})"), n as f64);
        let ours = NativeHistogram::from_histogram(h);
        let (count, sum, buckets, zero) = prom.native(&series);
        assert_eq!((count, zero), (ours.count(), ours.zero_count()), "{k}");
        assert_eq!(sum, ours.sum(), "{k}: sums are exact (integers below 2^53)");
        assert_eq!(prom.scalar(&format!("histogram_sum({series})")), ours.sum());
        assert_same_buckets(&ours, &buckets);
        eprintln!(
            "{k}: {} native buckets, count {count}, sum {sum}, {} values in straddling buckets",
            buckets.len(),
            ours.straddling_count()
        );
        if k == "coarse" {
            assert!(
                ours.straddling_count() > 0,
                "the coarse layout exercises the rule"
            );
        }

        // Quantiles: Prometheus interpolates inside the native bucket j that holds the rank;
        // Picollo's percentile bucket maps to j. So the estimate lies in j's bounds, and
        // within base·(1 + 2^-k) of Picollo's own value.
        let mapping = Mapping::for_layout(h.layout());
        let s = mapping.schema();
        let factor = s.base() * mapping.relative_bound_factor();
        for q in [0.1, 0.5, 0.9, 0.99, 0.999] {
            let theirs = prom.scalar(&format!("histogram_quantile({q}, {series})"));
            let p = h.percentile(q * 100.0, EquivalentValue::Midpoint).unwrap();
            let j = mapping.native_index(p.logical_index).unwrap();
            let (lo, hi) = (s.lower_bound(j), s.upper_bound(j));
            assert!(
                theirs >= lo * (1.0 - 1e-12) && theirs <= hi * (1.0 + 1e-12),
                "{k} q={q}: {theirs} outside ({lo}, {hi}]"
            );
            eprintln!(
                "{k} q={q}: Prometheus {theirs}, Picollo {} in ({lo}, {hi}]",
                p.value
            );
            let ratio = theirs / p.value as f64;
            assert!(
                ratio < factor && ratio > 1.0 / factor,
                "{k} q={q}: {theirs} vs Picollo's {} (bound factor {factor})",
                p.value
            );
        }
    }
    drop(prom);
    server.shutdown();
}

#[test]
fn fleet_sum_equals_picollo_merge() {
    let Some(version) = available() else { return };
    let layout = Layout::from_block_scale(7).unwrap();
    let mut merged = HistogramBuilder::new()
        .layout(layout)
        .dense()
        .plain()
        .unwrap();
    let mut servers = Vec::new();
    let mut total = 0u64;
    for machine in 0..3u64 {
        let h = Arc::new(
            HistogramBuilder::new()
                .layout(layout)
                .thread_local()
                .unwrap(),
        );
        let values = data(100 + machine, 3_000 + 1_000 * machine as usize);
        values.iter().for_each(|&v| h.record(v));
        total += values.len() as u64;
        merged.add(&*h);
        let registry = Arc::new(Registry::new());
        registry
            .register("fleet_latency", "fleet test", &Labels::empty(), h)
            .unwrap();
        servers.push((
            MetricsServer::bind("127.0.0.1:0", registry).unwrap(),
            values,
        ));
    }
    let addrs: Vec<_> = servers
        .iter()
        .map(|(s, _)| s.local_addr().expect("TCP"))
        .collect();
    let prom = Prometheus::start(version, &addrs, true);
    // Every target scraped: three series, then their sum.
    prom.wait_until(Duration::from_secs(30), "scraping three targets", || {
        (prom.query("histogram_count(fleet_latency)").len() == 3).then_some(())
    });
    prom.wait_for_count("histogram_count(sum(fleet_latency))", total as f64);
    let ours = NativeHistogram::from_histogram(&merged);
    let (count, sum, buckets, zero) = prom.native("sum by (job) (fleet_latency)");
    assert_eq!((count, zero), (ours.count(), 0));
    assert_eq!(sum, ours.sum());
    assert_same_buckets(&ours, &buckets);
}

#[test]
fn classic_text_histograms_arrive_exactly() {
    let Some(version) = available() else { return };
    let layout = Layout::from_block_scale(6).unwrap();
    let h = Arc::new(
        HistogramBuilder::new()
            .layout(layout)
            .window(Window::new(layout, 0, 1 << 34).unwrap())
            .thread_local()
            .unwrap(),
    );
    data(7, 5_000).iter().for_each(|&v| h.record(v));
    h.record(1 << 40); // overflow: only in +Inf
    let buckets = ClassicBuckets::explicit(vec![127, 1_023, 100_000, 10_000_000]).unwrap();
    let registry = Arc::new(Registry::with_options(
        ExportOptions::new().classic(buckets.clone()),
    ));
    registry
        .register("classic_latency", "text test", &Labels::empty(), h.clone())
        .unwrap();
    let server = MetricsServer::bind("127.0.0.1:0", registry).unwrap();
    // Without native histograms Prometheus asks for text (OpenMetrics first).
    let prom = Prometheus::start(version, &[server.local_addr().expect("TCP")], false);
    prom.wait_for_count("classic_latency_count", 5_001.0);
    let ours = ClassicHistogram::from_histogram(&*h, &buckets);
    for (le, n) in ours.buckets() {
        let v = prom.scalar(&format!("classic_latency_bucket{{le=\"{le}\"}}"));
        assert_eq!(v, n as f64, "le={le}");
    }
    assert_eq!(prom.scalar("classic_latency_bucket{le=\"+Inf\"}"), 5_001.0);
    assert_eq!(prom.scalar("classic_latency_sum"), ours.sum());
    assert!(!ours.is_exact(), "100,000 is not a bucket edge at k = 6");
}
