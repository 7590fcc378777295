//! Options whose value is not a plain number, string or boolean: the log
//! format and level enums, `determinismGuard`, `onNondeterminism`, the nested `unregisteredBackoff` and
//! `supportedReplayVersions` objects, and the worker tag filter in both its
//! object form and its legacy flat form.

use std::collections::HashSet;

use duroxide::runtime::limits::{MAX_TAG_NAME_BYTES, MAX_WORKER_TAGS};
use duroxide::runtime::{LogFormat, UnregisteredBackoffConfig};
use duroxide::{SemverRange, TagFilter};
use serde_json::Value;

use super::fields::{invalid, show, Fields};
use crate::errors::{BridgeError, BridgeResult};

/// What `Date.now()`, `new Date()` and `Math.random()` do while a generator
/// step runs (`determinismGuard`; `lib/determinism.js`).
#[napi_derive::napi(string_enum = "lowercase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeterminismGuard {
    /// Log a warning once per orchestration name and call, naming the
    /// instance and the replacement; the call returns its usual value.
    Warn,
    /// Throw an `ERR_NONDETERMINISTIC` error at the call.
    Throw,
    /// Do nothing.
    Off,
}

impl DeterminismGuard {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            DeterminismGuard::Warn => "warn",
            DeterminismGuard::Throw => "throw",
            DeterminismGuard::Off => "off",
        }
    }
}

pub(super) fn parse_determinism_guard(o: &Fields) -> BridgeResult<DeterminismGuard> {
    match o.get("determinismGuard") {
        None => Ok(DeterminismGuard::Warn),
        Some(Value::String(s)) if s == "warn" => Ok(DeterminismGuard::Warn),
        Some(Value::String(s)) if s == "throw" => Ok(DeterminismGuard::Throw),
        Some(Value::String(s)) if s == "off" => Ok(DeterminismGuard::Off),
        Some(v) => Err(invalid(format!(
            "determinismGuard must be one of 'warn', 'throw', 'off', got {}",
            show(v)
        ))),
    }
}

/// What a runtime does with a turn whose code does not replay the
/// instance's history (`onNondeterminism`; `guard/nondeterminism.rs`).
#[napi_derive::napi(string_enum = "lowercase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NondeterminismPolicy {
    /// Fail the instance, as duroxide does.
    Fail,
    /// Commit nothing: the instance stays `Running` and the turn is retried
    /// with back-off until code that replays it runs.
    Hold,
}

impl NondeterminismPolicy {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            NondeterminismPolicy::Fail => "fail",
            NondeterminismPolicy::Hold => "hold",
        }
    }
}

pub(super) fn parse_nondeterminism(o: &Fields) -> BridgeResult<NondeterminismPolicy> {
    match o.get("onNondeterminism") {
        None => Ok(NondeterminismPolicy::Fail),
        Some(Value::String(s)) if s == "fail" => Ok(NondeterminismPolicy::Fail),
        Some(Value::String(s)) if s == "hold" => Ok(NondeterminismPolicy::Hold),
        Some(v) => Err(invalid(format!(
            "onNondeterminism must be one of 'fail', 'hold', got {}",
            show(v)
        ))),
    }
}

const LOG_LEVELS: &[&str] = &["trace", "debug", "info", "warn", "error", "off"];

pub(super) fn parse_log_format(o: &Fields, default: &LogFormat) -> BridgeResult<LogFormat> {
    match o.get("logFormat") {
        None => Ok(default.clone()),
        Some(Value::String(s)) if s == "json" => Ok(LogFormat::Json),
        Some(Value::String(s)) if s == "pretty" => Ok(LogFormat::Pretty),
        Some(Value::String(s)) if s == "compact" => Ok(LogFormat::Compact),
        Some(v) => Err(invalid(format!(
            "logFormat must be one of 'json', 'pretty', 'compact', got {}",
            show(v)
        ))),
    }
}

/// Lower-cased so `effectiveOptions()` shows one spelling per level.
pub(super) fn parse_log_level(o: &Fields, default: &str) -> BridgeResult<String> {
    match o.get("logLevel") {
        None => Ok(default.to_string()),
        Some(Value::String(s)) if LOG_LEVELS.contains(&s.to_lowercase().as_str()) => {
            Ok(s.to_lowercase())
        }
        Some(v) => Err(invalid(format!(
            "logLevel must be one of 'trace', 'debug', 'info', 'warn', 'error', 'off', got {}",
            show(v)
        ))),
    }
}

/// A nested object option, or `None` when not given.
fn nested<'a>(
    o: &Fields<'a>,
    key: &'a str,
    prefix: &'a str,
    valid: &[&str],
) -> BridgeResult<Option<Fields<'a>>> {
    match o.get(key) {
        None => Ok(None),
        Some(Value::Object(map)) => Fields::new(map, prefix, valid).map(Some),
        Some(v) => Err(invalid(format!(
            "{key} must be an object {{ {} }}, got {}",
            valid.join(", "),
            show(v)
        ))),
    }
}

pub(super) fn parse_backoff(
    o: &Fields,
    d: &UnregisteredBackoffConfig,
) -> BridgeResult<UnregisteredBackoffConfig> {
    let valid = ["baseDelayMs", "maxDelayMs"];
    let Some(b) = nested(o, "unregisteredBackoff", "unregisteredBackoff.", &valid)? else {
        return Ok(d.clone());
    };
    Ok(UnregisteredBackoffConfig {
        base_delay: b.ms("baseDelayMs", d.base_delay, 0)?,
        max_delay: b.ms("maxDelayMs", d.max_delay, 0)?,
    })
}

pub(super) fn parse_replay_versions(o: &Fields) -> BridgeResult<Option<SemverRange>> {
    let Some(r) = nested(
        o,
        "supportedReplayVersions",
        "supportedReplayVersions.",
        &["min", "max"],
    )?
    else {
        return Ok(None);
    };
    let version = |key: &str| -> BridgeResult<semver::Version> {
        let name = r.name(key);
        match r.get(key) {
            None => Err(invalid(format!(
                "{name} is required (a semver string like '1.2.3')"
            ))),
            Some(Value::String(s)) => semver::Version::parse(s).map_err(|e| {
                invalid(format!(
                    "{name} must be a semver string like '1.2.3', got '{s}' ({e})"
                ))
            }),
            Some(v) => Err(invalid(format!(
                "{name} must be a semver string like '1.2.3', got {}",
                show(v)
            ))),
        }
    };
    let (min, max) = (version("min")?, version("max")?);
    if min > max {
        return Err(invalid(format!(
            "supportedReplayVersions.min must be <= supportedReplayVersions.max, \
             got min '{min}' and max '{max}'"
        )));
    }
    Ok(Some(SemverRange::new(min, max)))
}

/// Validates a tag list by hand because `TagFilter::tags()` panics on bad input.
fn tag_set(name: &str, v: &Value) -> BridgeResult<HashSet<String>> {
    let Some(items) = v
        .as_array()
        .filter(|a| (1..=MAX_WORKER_TAGS).contains(&a.len()))
    else {
        return Err(invalid(format!(
            "{name} must be an array of 1 to {MAX_WORKER_TAGS} tag strings, got {}",
            show(v)
        )));
    };
    let mut set = HashSet::new();
    for (i, item) in items.iter().enumerate() {
        match item {
            Value::String(s) if !s.is_empty() && s.len() <= MAX_TAG_NAME_BYTES => {
                if !set.insert(s.clone()) {
                    return Err(invalid(format!("{name} contains '{s}' more than once")));
                }
            }
            other => {
                return Err(invalid(format!(
                    "{name}[{i}] must be a non-empty string of at most \
                     {MAX_TAG_NAME_BYTES} bytes, got {}",
                    show(other)
                )))
            }
        }
    }
    Ok(set)
}

/// `None` when neither `workerTagFilter` nor `workerTagFilterTags` is given.
pub(super) fn parse_tag_filter(o: &Fields) -> BridgeResult<Option<TagFilter>> {
    let flat = o.get("workerTagFilterTags");
    let Some(filter) = o.get("workerTagFilter") else {
        return match flat {
            None => Ok(None),
            Some(tags) => Err(flat_tags_misused(tags, "unset")),
        };
    };
    let from_flat = |kind: &str| -> BridgeResult<HashSet<String>> {
        let Some(tags) = flat else {
            return Err(invalid(format!(
                "workerTagFilter '{kind}' needs workerTagFilterTags: string[] \
                 (or use workerTagFilter: {{ {kind}: [...] }})"
            )));
        };
        tag_set("workerTagFilterTags", tags)
    };
    match filter.as_str() {
        Some("tags") => return Ok(Some(TagFilter::Tags(from_flat("tags")?))),
        Some("defaultAnd") => return Ok(Some(TagFilter::DefaultAnd(from_flat("defaultAnd")?))),
        _ => {}
    }
    if let Some(tags) = flat {
        return Err(flat_tags_misused(tags, &show(filter)));
    }
    let bad = || {
        invalid(format!(
            "workerTagFilter must be 'defaultOnly', 'any', 'none', {{ tags: string[] }} \
             or {{ defaultAnd: string[] }}, got {}",
            show(filter)
        ))
    };
    let parsed = match filter {
        Value::String(s) if s == "defaultOnly" => TagFilter::DefaultOnly,
        Value::String(s) if s == "any" => TagFilter::Any,
        Value::String(s) if s == "none" => TagFilter::None,
        Value::Object(map) => {
            let f = Fields::new(map, "workerTagFilter.", &["tags", "defaultAnd"])?;
            match (f.get("tags"), f.get("defaultAnd")) {
                (Some(t), None) => TagFilter::Tags(tag_set("workerTagFilter.tags", t)?),
                (None, Some(t)) => TagFilter::DefaultAnd(tag_set("workerTagFilter.defaultAnd", t)?),
                _ => return Err(bad()),
            }
        }
        _ => return Err(bad()),
    };
    Ok(Some(parsed))
}

/// The flat tag list only has a meaning next to `workerTagFilter: 'tags' | 'defaultAnd'`.
fn flat_tags_misused(tags: &Value, filter: &str) -> BridgeError {
    invalid(format!(
        "workerTagFilterTags is only meaningful with workerTagFilter 'tags' or 'defaultAnd', \
         got {} with workerTagFilter {filter}",
        show(tags)
    ))
}
