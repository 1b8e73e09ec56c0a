//! A small JSON writer for the live and capture outputs (`attach`, `top`, `convert`): objects
//! and arrays built in order, numbers exact (integers as integers, floats finite or
//! `null`), strings escaped by [`crate::output::json_string`].

use core::fmt::Write as _;

use crate::output::json_string;

/// A JSON value, already serialized.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Json(String);

impl Json {
    /// `null`.
    pub(crate) fn null() -> Self {
        Json("null".into())
    }

    /// A string.
    pub(crate) fn str(s: &str) -> Self {
        Json(json_string(s))
    }

    /// An unsigned integer (any width up to 128 bits, exactly).
    pub(crate) fn uint(v: impl Into<u128>) -> Self {
        Json(v.into().to_string())
    }

    /// A signed integer.
    pub(crate) fn int(v: i64) -> Self {
        Json(v.to_string())
    }

    /// A float; `null` when not finite.
    pub(crate) fn float(v: f64) -> Self {
        if v.is_finite() {
            let mut s = format!("{v}");
            if !s.contains(['.', 'e', 'E']) {
                s.push_str(".0");
            }
            Json(s)
        } else {
            Self::null()
        }
    }

    /// A bool.
    pub(crate) fn bool(v: bool) -> Self {
        Json(if v { "true" } else { "false" }.into())
    }

    /// `f(v)` for `Some(v)`, else `null`.
    pub(crate) fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> Json) -> Self {
        v.map_or_else(Self::null, f)
    }

    /// An array of `items`.
    pub(crate) fn array(items: impl IntoIterator<Item = Json>) -> Self {
        let mut s = String::from("[");
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(&item.0);
        }
        s.push(']');
        Json(s)
    }

    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<Object> for Json {
    fn from(o: Object) -> Self {
        o.build()
    }
}

/// A JSON object under construction; keys keep their order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Object {
    text: String,
}

impl Object {
    /// `{}`.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Adds `key: value`.
    pub(crate) fn field(mut self, key: &str, value: impl Into<Json>) -> Self {
        self.push(key, value);
        self
    }

    /// Adds `key: value` in place.
    pub(crate) fn push(&mut self, key: &str, value: impl Into<Json>) {
        if !self.text.is_empty() {
            self.text.push(',');
        }
        let _ = write!(self.text, "{}:{}", json_string(key), value.into().0);
    }

    /// The object.
    pub(crate) fn build(self) -> Json {
        Json(format!("{{{}}}", self.text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        let o = Object::new()
            .field("a", Json::uint(u64::MAX))
            .field("b", Json::float(1.0))
            .field("c", Json::float(f64::NAN))
            .field("d", Json::array([Json::int(-1), Json::str("x\"y")]))
            .field("e", Json::opt(None::<u64>, Json::uint))
            .field("f", Object::new().field("g", Json::bool(true)));
        assert_eq!(
            o.build().as_str(),
            r#"{"a":18446744073709551615,"b":1.0,"c":null,"d":[-1,"x\"y"],"e":null,"f":{"g":true}}"#
        );
        assert_eq!(Json::float(2.5e-7).as_str(), "0.00000025");
        assert_eq!(Object::new().build().as_str(), "{}");
    }
}
