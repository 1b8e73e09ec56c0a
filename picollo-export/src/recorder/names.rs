//! Names and labels of `metrics` keys made valid for Prometheus.

use metrics::Key;

use crate::Labels;

/// `name` with every character Prometheus does not allow replaced by `_` (and `_` in front
/// of a leading digit); `colon` allows `:` (metric names) or not (label names).
pub(super) fn sanitize(name: &str, colon: bool) -> String {
    // Most names are valid as they are: one copy (a series' registration sanitizes several).
    if name.chars().all(|c| allowed(c, colon))
        && name.starts_with(|c: char| !c.is_ascii_digit())
        && (colon || !name.starts_with("__"))
    {
        return name.to_owned();
    }
    sanitize_chars(name, colon)
}

/// Whether Prometheus allows `c` in a name; `colon` as in [`sanitize`].
fn allowed(c: char, colon: bool) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':')
}

/// [`sanitize`] character by character.
pub(super) fn sanitize_chars(name: &str, colon: bool) -> String {
    let mut out: String = name
        .chars()
        .map(|c| if allowed(c, colon) { c } else { '_' })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    if !colon {
        while out.starts_with("__") {
            out.remove(0);
        }
    }
    out
}

/// The labels of `key`, their names sanitized (`le` becomes `le_` on a histogram, where it
/// names the classic bucket bounds); a later label with the same sanitized name replaces an
/// earlier one.
pub(super) fn labels(key: &Key, histogram: bool) -> Labels {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for l in key.labels() {
        let mut k = sanitize(l.key(), false);
        if histogram && k == "le" {
            k.push('_');
        }
        pairs.retain(|(existing, _)| *existing != k);
        pairs.push((k, l.value().to_owned()));
    }
    // Sanitized keys are valid and distinct.
    Labels::new(pairs).unwrap_or_default()
}
