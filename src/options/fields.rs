//! Reading and checking single values: one JS object level, field by field,
//! and the shared error helpers every other submodule reports through.

use std::time::Duration;

use serde_json::{Map, Value};

use super::suggest::suggest;
use crate::errors::{BridgeError, BridgeResult};

/// Largest integer a JS number holds exactly; anything above it was already
/// rounded before it reached us, so accepting it would hide a different value.
pub(super) const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

pub(super) fn invalid(message: String) -> BridgeError {
    BridgeError::InvalidOption(message)
}

/// Renders a received value for an error message; strings in single quotes
/// like the JS docs, long values cut so one bad option can't flood a log.
pub(super) fn show(v: &Value) -> String {
    let s = match v {
        Value::String(s) => format!("'{s}'"),
        other => other.to_string(),
    };
    if s.chars().count() > 80 {
        format!("{}...", s.chars().take(77).collect::<String>())
    } else {
        s
    }
}

/// napi hands over whole JS numbers above u32::MAX as f64, so an integral f64
/// is as much an integer as a u64 is.
fn whole(v: &Value) -> Option<u64> {
    let n = v.as_number()?;
    let u = match n.as_u64() {
        Some(u) => u,
        None => {
            let f = n.as_f64()?;
            if f.fract() != 0.0 || !(0.0..=MAX_SAFE_INTEGER as f64).contains(&f) {
                return None;
            }
            f as u64
        }
    };
    (u <= MAX_SAFE_INTEGER).then_some(u)
}

pub(super) fn ms_of(d: Duration) -> u64 {
    d.as_millis() as u64
}

/// One JS object level; `prefix` makes nested names read `unregisteredBackoff.baseDelayMs`.
pub(super) struct Fields<'a> {
    obj: &'a Map<String, Value>,
    prefix: &'a str,
}

impl<'a> Fields<'a> {
    /// Rejects unknown keys up front so a typo never silently keeps a default.
    pub(super) fn new(
        obj: &'a Map<String, Value>,
        prefix: &'a str,
        valid: &[&str],
    ) -> BridgeResult<Self> {
        if let Some(key) = obj.keys().find(|k| !valid.contains(&k.as_str())) {
            let hint = match suggest(key, valid) {
                Some(s) => format!("; did you mean {prefix}{s}?"),
                None => format!("; valid names are {}", valid.join(", ")),
            };
            return Err(invalid(format!("unknown option '{prefix}{key}'{hint}")));
        }
        Ok(Fields { obj, prefix })
    }

    /// The value of `key`, or `None` when absent or `null` (JS `undefined`).
    pub(super) fn get(&self, key: &str) -> Option<&'a Value> {
        self.obj.get(key).filter(|v| !v.is_null())
    }

    pub(super) fn name(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    pub(super) fn int(
        &self,
        key: &str,
        default: u64,
        min: u64,
        max: u64,
        unit: &str,
    ) -> BridgeResult<u64> {
        let Some(v) = self.get(key) else {
            return Ok(default);
        };
        match whole(v) {
            Some(n) if (min..=max).contains(&n) => Ok(n),
            _ => {
                let range = if max == MAX_SAFE_INTEGER {
                    format!(">= {min}")
                } else {
                    format!("between {min} and {max}")
                };
                Err(invalid(format!(
                    "{} must be an integer {range}{unit}, got {}",
                    self.name(key),
                    show(v)
                )))
            }
        }
    }

    pub(super) fn ms(&self, key: &str, default: Duration, min: u64) -> BridgeResult<Duration> {
        let ms = self.int(
            key,
            default.as_millis() as u64,
            min,
            MAX_SAFE_INTEGER,
            " (milliseconds)",
        )?;
        Ok(Duration::from_millis(ms))
    }

    pub(super) fn count(&self, key: &str, default: usize, min: u64) -> BridgeResult<usize> {
        let max = MAX_SAFE_INTEGER.min(usize::MAX as u64);
        Ok(self.int(key, default as u64, min, max, "")? as usize)
    }

    pub(super) fn boolean(&self, key: &str, default: bool) -> BridgeResult<bool> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(invalid(format!(
                "{} must be a boolean, got {}",
                self.name(key),
                show(v)
            ))),
        }
    }

    /// `None` when not given; the caller supplies the crate default.
    pub(super) fn string(&self, key: &str, allow_empty: bool) -> BridgeResult<Option<String>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) if allow_empty || !s.is_empty() => Ok(Some(s.clone())),
            Some(v) => {
                let what = if allow_empty {
                    "a string"
                } else {
                    "a non-empty string"
                };
                Err(invalid(format!(
                    "{} must be {what}, got {}",
                    self.name(key),
                    show(v)
                )))
            }
        }
    }
}
