//! The indexed families against a naive model (the linear scans the indices replaced, with
//! the same rules for what may join a family), and many series of one family.

use super::*;
use crate::registry::{Counter, Gauge};
use crate::source::Exported;
use picollo_alloc::HistogramBuilder;
use picollo_core::Layout;
use proptest::prelude::*;
use std::sync::Arc;

/// The registry's families as they were kept before the indices: every lookup a linear
/// scan, a series' sorted labels beside it.
#[derive(Default)]
struct Naive {
    list: Vec<(Family, Vec<Labels>)>,
    next_id: u64,
}

impl Naive {
    fn insert(
        &mut self,
        (name, help, kind): (&str, &str, MetricKind),
        labels: &Labels,
        key: Labels,
        value: Value,
    ) -> Result<Value, ExportError> {
        let index = match self.list.iter().position(|(f, _)| f.name == name) {
            Some(i) => {
                self.list[i].0.admits(kind, help)?;
                i
            }
            None => {
                let candidate = Family::new(name, help, kind);
                let mine = candidate.sample_names();
                for (f, _) in &self.list {
                    let theirs = f.sample_names();
                    if let Some(sample) = mine.iter().find(|n| theirs.contains(n)) {
                        return Err(clash(name, sample, f));
                    }
                }
                self.list.push((candidate, Vec::new()));
                self.list.len() - 1
            }
        };
        let (family, keys) = &mut self.list[index];
        if let Some(s) = keys.iter().position(|k| *k == key) {
            return existing(&family.series[s].value, name, labels);
        }
        keys.push(key);
        family.series.push(Series {
            id: self.next_id,
            labels: labels.clone(),
            value: value.clone(),
        });
        self.next_id += 1;
        Ok(value)
    }

    fn remove(&mut self, name: &str, key: &Labels) -> bool {
        let Some(fi) = self.list.iter().position(|(f, _)| f.name == name) else {
            return false;
        };
        let (family, keys) = &mut self.list[fi];
        let Some(si) = keys.iter().position(|k| k == key) else {
            return false;
        };
        keys.remove(si);
        family.series.remove(si);
        if family.series.is_empty() {
            self.list.remove(fi);
        }
        true
    }

    fn families(&self) -> Vec<&Family> {
        self.list.iter().map(|(f, _)| f).collect()
    }
}

/// What a family list looks like from outside: names, help texts, kinds, series ids and
/// labels, in order.
fn shape<'a>(families: impl IntoIterator<Item = &'a Family>) -> Vec<String> {
    families
        .into_iter()
        .map(|f| {
            let series: Vec<String> = f
                .series
                .iter()
                .map(|s| format!("{}{}", s.id, s.labels))
                .collect();
            format!(
                "{} {:?} {:?} [{}]",
                f.name,
                f.help,
                f.kind,
                series.join(" ")
            )
        })
        .collect()
}

/// Where a returned value lives: (family name, series position), found by identity.
fn locate<'a>(families: impl IntoIterator<Item = &'a Family>, value: &Value) -> (String, usize) {
    let same = |a: &Value| match (a, value) {
        (Value::Counter(Counter(a)), Value::Counter(Counter(b)))
        | (Value::Gauge(Gauge(a)), Value::Gauge(Gauge(b))) => Arc::ptr_eq(a, b),
        (Value::Histogram(a), Value::Histogram(b)) => Arc::ptr_eq(a, b),
        _ => false,
    };
    families
        .into_iter()
        .find_map(|f| {
            let s = f.series.iter().position(|s| same(&s.value))?;
            Some((f.name.clone(), s))
        })
        .expect("a returned value is registered")
}

fn value(kind: MetricKind) -> Value {
    match kind {
        MetricKind::Counter => Value::Counter(Counter::default()),
        MetricKind::Gauge => Value::Gauge(Gauge::default()),
        MetricKind::Histogram => {
            let layout = Layout::from_block_scale(2).unwrap();
            let h: Arc<dyn Exported> = Arc::new(
                HistogramBuilder::new()
                    .layout(layout)
                    .dense()
                    .plain()
                    .unwrap(),
            );
            Value::Histogram(h)
        }
    }
}

/// Names whose sample names clash in many ways (`a` and `a_total` as counters, `a_count`
/// and `a_bucket` beside a histogram `a`).
const NAMES: &[&str] = &["a", "a_total", "a_count", "a_bucket", "b", "b_sum"];
const HELPS: &[&str] = &["", "help"];
const KINDS: &[MetricKind] = &[
    MetricKind::Counter,
    MetricKind::Gauge,
    MetricKind::Histogram,
];
/// Label sets, two of them the same set in another order.
fn label_sets() -> Vec<Labels> {
    vec![
        Labels::empty(),
        Labels::new([("x", "1")]).unwrap(),
        Labels::new([("x", "2")]).unwrap(),
        Labels::new([("x", "1"), ("y", "1")]).unwrap(),
        Labels::new([("y", "1"), ("x", "1")]).unwrap(),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    Insert {
        name: usize,
        help: usize,
        kind: usize,
        labels: usize,
    },
    Remove {
        name: usize,
        labels: usize,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..NAMES.len(), 0..HELPS.len(), 0..KINDS.len(), 0..5usize).prop_map(
            |(name, help, kind, labels)| Op::Insert { name, help, kind, labels }
        ),
        1 => (0..NAMES.len(), 0..5usize).prop_map(|(name, labels)| Op::Remove { name, labels }),
    ]
}

proptest! {
    /// Every insert and removal gives the naive model's answer (the same value, the same
    /// error text) and leaves the same families, series, ids and order.
    #[test]
    fn indices_answer_as_linear_scans(ops in proptest::collection::vec(op(), 1..120)) {
        let sets = label_sets();
        let mut families = Families::default();
        let mut naive = Naive::default();
        let mut next_id = 0u64;
        for op in ops {
            match op {
                Op::Insert { name, help, kind, labels } => {
                    let family = (NAMES[name], HELPS[help], KINDS[kind]);
                    let labels = &sets[labels];
                    let got = families.insert(family, labels, labels.sorted(), value(KINDS[kind]), || {
                        next_id += 1;
                        next_id - 1
                    });
                    let want = naive.insert(family, labels, labels.sorted(), value(KINDS[kind]));
                    match (got, want) {
                        (Ok(got), Ok(want)) => prop_assert_eq!(
                            locate(families.list(), &got),
                            locate(naive.families(), &want)
                        ),
                        (Err(got), Err(want)) => prop_assert_eq!(got.to_string(), want.to_string()),
                        (got, want) => prop_assert!(false, "{:?} against {:?}", got.err(), want.err()),
                    }
                }
                Op::Remove { name, labels } => {
                    let key = sets[labels].sorted();
                    prop_assert_eq!(families.remove(NAMES[name], &key), naive.remove(NAMES[name], &key));
                }
            }
            prop_assert_eq!(shape(families.list()), shape(naive.families()));
        }
    }
}

/// Ten thousand series of one family: each found again by its labels in any order, removed
/// from the middle with the rest still found at their new places, in registration order.
#[test]
fn many_series_are_found_and_removed() {
    const N: usize = 10_000;
    let mut families = Families::default();
    let labels: Vec<Labels> = (0..N)
        .map(|i| Labels::new([("route", format!("/r/{i}")), ("method", "GET".into())]).unwrap())
        .collect();
    let family = ("requests_total", "", MetricKind::Counter);
    let mut id = 0;
    let mut counters = Vec::new();
    for l in &labels {
        let made = families
            .insert(family, l, l.sorted(), value(MetricKind::Counter), || {
                id += 1;
                id
            })
            .unwrap();
        let Value::Counter(c) = made else {
            panic!("a counter")
        };
        counters.push(c);
    }
    // Get-or-create finds each counter, whatever the label order.
    for (i, l) in labels.iter().enumerate() {
        let reversed = Labels::new(l.iter().collect::<Vec<_>>().into_iter().rev()).unwrap();
        let found = families
            .insert(
                family,
                &reversed,
                reversed.sorted(),
                value(MetricKind::Counter),
                || unreachable!("no new series"),
            )
            .unwrap();
        let Value::Counter(c) = found else {
            panic!("a counter")
        };
        assert!(Arc::ptr_eq(&c.0, &counters[i].0), "series {i}");
    }
    // Remove every third series, from the front, the middle and the back.
    for (i, l) in labels.iter().enumerate() {
        if i % 3 == 0 {
            assert!(families.remove(family.0, &l.sorted()), "series {i}");
            assert!(!families.remove(family.0, &l.sorted()), "series {i} again");
        }
    }
    let kept: Vec<&Labels> = labels
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 3 != 0)
        .map(|(_, l)| l)
        .collect();
    let list = families.list();
    assert_eq!(list.len(), 1);
    let order: Vec<&Labels> = list[0].series.iter().map(|s| &s.labels).collect();
    assert_eq!(order, kept);
    for (i, l) in labels.iter().enumerate() {
        let found = families
            .insert(family, l, l.sorted(), value(MetricKind::Counter), || 0)
            .unwrap();
        let Value::Counter(c) = found else {
            panic!("a counter")
        };
        // Removed series come back as new ones, at the end; the others are the same.
        assert_eq!(Arc::ptr_eq(&c.0, &counters[i].0), i % 3 != 0, "series {i}");
    }
    assert_eq!(families.list()[0].series.len(), N);
}

/// A histogram series registered twice is a duplicate error, also for its labels in
/// another order, and registers again once removed; the family goes with its last series
/// and frees its sample names for another family.
#[test]
fn duplicate_histograms_and_freed_names() {
    let mut families = Families::default();
    let ab = Labels::new([("a", "1"), ("b", "2")]).unwrap();
    let ba = Labels::new([("b", "2"), ("a", "1")]).unwrap();
    let family = ("lat", "", MetricKind::Histogram);
    let h = || value(MetricKind::Histogram);
    families
        .insert(family, &ab, ab.sorted(), h(), || 0)
        .unwrap();
    let dup = families.insert(family, &ba, ba.sorted(), h(), || 1);
    assert!(
        matches!(dup, Err(ExportError::DuplicateSeries { ref labels, .. }) if labels == "{b=\"2\",a=\"1\"}")
    );
    // `lat_count` is a sample name of `lat`.
    let clash = refused(families.insert(
        ("lat_count", "", MetricKind::Gauge),
        &ab,
        ab.sorted(),
        value(MetricKind::Gauge),
        || 1,
    ));
    assert!(
        clash
            .to_string()
            .contains("(lat_count) that family \"lat\""),
        "{clash}"
    );
    assert!(families.remove("lat", &ba.sorted()));
    assert!(families.list().is_empty());
    families
        .insert(
            ("lat_count", "", MetricKind::Gauge),
            &ab,
            ab.sorted(),
            value(MetricKind::Gauge),
            || 2,
        )
        .unwrap();
    refused(families.insert(family, &ab, ab.sorted(), h(), || 3));
    assert!(families.remove("lat_count", &ab.sorted()));
    families
        .insert(family, &ab, ab.sorted(), h(), || 4)
        .unwrap();
    assert_eq!(families.list()[0].series[0].id, 4);
}

/// The error of a registration that must be refused.
fn refused(result: Result<Value, ExportError>) -> ExportError {
    match result {
        Ok(_) => panic!("registered what should be refused"),
        Err(e) => e,
    }
}
