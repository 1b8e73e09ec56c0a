//! The JSON writer of every output: serde's serializer with one rule for numbers, so that
//! what is printed reads back to the same value and looks the same everywhere.
//!
//! - Integers are written exactly (any width up to 128 bits).
//! - Floats are written in Rust's shortest round-trip form, without an exponent, with `.0`
//!   when integral (`2.5e-7` is `0.00000025`, `3` is `3.0`), and `null` when not finite.
//! - Exact decimals computed as text (a bucket's value divided by a unit: `16.384`) are
//!   written as they are, with [`decimal`]; the percentile tables' statistics as Rust
//!   displays them (no `.0`), with [`displayed`].
//!
//! Objects whose keys are data (parameters, counters by name) keep their order with
//! [`Ordered`].

use std::io;

use serde::{Serialize, Serializer};
use serde_json::ser::Formatter;
use serde_json::value::RawValue;

/// `v` as this tool writes floats: shortest round-trip digits, no exponent, `.0` when
/// integral. For finite `v` only (the serializer writes `null` for the others).
pub(crate) fn float_text(v: f64) -> String {
    let mut s = format!("{v}");
    if !s.contains(['.', 'e', 'E']) {
        s.push_str(".0");
    }
    s
}

/// serde_json's compact output (the trait's defaults), with floats as [`float_text`] writes them.
struct Exact;

impl Formatter for Exact {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(float_text(value).as_bytes())
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(writer, f64::from(value))
    }
}

/// `value` as one line of JSON (no final newline).
pub(crate) fn to_line<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::with_capacity(256);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Exact);
    // Serializing into memory fails only for a map with keys that are not strings, which no
    // type here has.
    value
        .serialize(&mut ser)
        .expect("the output types serialize to JSON");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// A number already written as decimal text (`16.384`, `-0.5`, `12`), kept as it is.
///
/// # Panics
/// When `text` is not a JSON number: it comes from this tool's own formatting.
pub(crate) fn decimal(text: &str) -> Box<RawValue> {
    debug_assert!(text.parse::<f64>().is_ok(), "not a number: {text}");
    RawValue::from_string(text.to_string()).expect("a decimal is valid JSON")
}

/// `v` as Rust displays it (`3`, `0.5`), `null` when none or not finite: the statistics of
/// the percentile tables.
pub(crate) fn displayed(v: Option<f64>) -> Option<Box<RawValue>> {
    v.filter(|v| v.is_finite())
        .map(|v| decimal(&format!("{v}")))
}

/// `(key, value)` pairs written as a JSON object, in their order.
#[derive(Clone, Debug)]
pub(crate) struct Ordered<V>(Vec<(String, V)>);

impl<V> Ordered<V> {
    /// The object of `pairs`.
    pub(crate) fn new(pairs: Vec<(String, V)>) -> Self {
        Ordered(pairs)
    }
}

impl<V: Serialize> Serialize for Ordered<V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Sample<'a> {
        a: u64,
        b: f64,
        c: f64,
        d: (i64, &'a str),
        e: Option<u64>,
        f: Box<RawValue>,
        g: u128,
    }

    #[test]
    fn numbers_are_exact() {
        let s = Sample {
            a: u64::MAX,
            b: 1.0,
            c: f64::NAN,
            d: (-1, "x\"y\n"),
            e: None,
            f: decimal("16.384"),
            g: u128::MAX,
        };
        assert_eq!(
            to_line(&s),
            format!(
                r#"{{"a":18446744073709551615,"b":1.0,"c":null,"d":[-1,"x\"y\n"],"e":null,"f":16.384,"g":{}}}"#,
                u128::MAX
            )
        );
        assert_eq!(to_line(&2.5e-7), "0.00000025");
        assert_eq!(to_line(&1e20), "100000000000000000000.0");
        assert_eq!(to_line(&f64::INFINITY), "null");
    }
}
