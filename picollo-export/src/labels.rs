//! Metric and label names checked against Prometheus' rules, and label sets.

use core::fmt;
use std::sync::Arc;

use crate::ExportError;

/// Checks a metric (family) name: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
///
/// ```
/// use picollo_export::check_metric_name;
/// assert!(check_metric_name("http_request_duration_nanoseconds").is_ok());
/// assert!(check_metric_name("9lives").is_err());
/// assert!(check_metric_name("a-b").is_err());
/// ```
pub fn check_metric_name(name: &str) -> Result<(), ExportError> {
    let refuse = |reason| {
        Err(ExportError::InvalidMetricName {
            name: name.to_owned(),
            reason,
        })
    };
    let mut chars = name.chars();
    match chars.next() {
        None => return refuse("it is empty"),
        Some(c) if c.is_ascii_digit() => return refuse("it starts with a digit"),
        Some(_) => {}
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    {
        return refuse("it holds a character other than letters, digits, '_' and ':'");
    }
    Ok(())
}

/// Checks a label name: `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with `__` (reserved).
pub(crate) fn check_label_name(name: &str) -> Result<(), ExportError> {
    let refuse = |reason| {
        Err(ExportError::InvalidLabelName {
            name: name.to_owned(),
            reason,
        })
    };
    match name.chars().next() {
        None => return refuse("it is empty"),
        Some(c) if c.is_ascii_digit() => return refuse("it starts with a digit"),
        Some(_) => {}
    }
    if name.starts_with("__") {
        return refuse("names starting with '__' are reserved for Prometheus");
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return refuse("it holds a character other than letters, digits and '_'");
    }
    Ok(())
}

/// A checked label set: valid, distinct names, in the order given. Values are any UTF-8
/// (the text format escapes them). Cloning shares the pairs (one `Arc`): the registry's
/// series list, its index and the `metrics` recorder hold one copy of a series' labels.
///
/// ```
/// use picollo_export::Labels;
/// let l = Labels::new([("route", "/api"), ("method", "GET")]).unwrap();
/// assert_eq!(l.to_string(), r#"{route="/api",method="GET"}"#);
/// assert!(Labels::new([("a", "1"), ("a", "2")]).is_err());
/// assert!(Labels::new([("__name__", "x")]).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Labels(Arc<[(String, String)]>);

impl Default for Labels {
    fn default() -> Self {
        Self::empty()
    }
}

impl Labels {
    /// No labels.
    pub fn empty() -> Self {
        Labels(Arc::new([]))
    }

    /// A label set from `(name, value)` pairs.
    ///
    /// # Errors
    /// [`ExportError::InvalidLabelName`] or [`ExportError::DuplicateLabel`].
    pub fn new<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self, ExportError> {
        let mut out: Vec<(String, String)> = Vec::new();
        for (k, v) in pairs {
            let k = k.into();
            check_label_name(&k)?;
            if out.iter().any(|(n, _)| *n == k) {
                return Err(ExportError::DuplicateLabel(k));
            }
            out.push((k, v.into()));
        }
        Ok(Labels(out.into()))
    }

    /// The pairs, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Whether the set has a label called `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|(k, _)| k == name)
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The same set in name order: two sets that differ only in order are one series. A set
    /// already in order (one label, or labels given sorted) is shared, not copied.
    pub(crate) fn sorted(&self) -> Labels {
        if self.0.is_sorted() {
            return self.clone();
        }
        let mut s = self.0.to_vec();
        s.sort();
        Labels(s.into())
    }
}

impl fmt::Display for Labels {
    /// The text-format form `{a="x",b="y"}` with escaped values; nothing when empty.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return Ok(());
        }
        f.write_str("{")?;
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{k}=\"{}\"", EscapedValue(v))?;
        }
        f.write_str("}")
    }
}

/// A label value escaped for the text formats: `\` `"` and line feeds.
pub(crate) struct EscapedValue<'a>(pub &'a str);

impl fmt::Display for EscapedValue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            match c {
                '\\' => f.write_str("\\\\")?,
                '"' => f.write_str("\\\"")?,
                '\n' => f.write_str("\\n")?,
                c => fmt::Write::write_char(f, c)?,
            }
        }
        Ok(())
    }
}

/// A help text escaped for the text formats: `\` and line feeds.
pub(crate) struct EscapedHelp<'a>(pub &'a str);

impl fmt::Display for EscapedHelp<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            match c {
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                c => fmt::Write::write_char(f, c)?,
            }
        }
        Ok(())
    }
}
