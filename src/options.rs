//! JS `RuntimeOptions` object -> duroxide `RuntimeOptions` (see `spec/options.md`).
//!
//! Validation is strict on purpose: an operator who mistypes the lock timeout
//! must get an error at construction time, not a runtime that quietly keeps
//! the default. Nothing is clamped or coerced.

use std::collections::HashSet;
use std::time::Duration;

use duroxide::runtime::limits::{MAX_TAG_NAME_BYTES, MAX_WORKER_TAGS};
use duroxide::runtime::{
    LogFormat, ObservabilityConfig, RuntimeOptions, UnregisteredBackoffConfig,
};
use duroxide::{SemverRange, TagFilter};
use serde_json::{json, Map, Value};

use crate::errors::{BridgeError, BridgeResult};

/// The result of [`parse_runtime_options`]: crate options, binding options and
/// the JS-facing view of both.
#[derive(Debug, Clone)]
pub struct ParsedOptions {
    /// What goes to duroxide::runtime::Runtime::start_with_options.
    pub runtime: RuntimeOptions,
    /// Options that are ours, not the crate's.
    pub binding: BindingOptions,
    /// Every option (crate ones and binding ones) under its JS name, defaults filled in,
    /// as returned by runtime.effectiveOptions(): durations as integer ms, tag filter as
    /// 'defaultOnly'|'any'|'none'|{tags:[...]}|{defaultAnd:[...]}, supportedReplayVersions
    /// as {min,max} strings or null, workerNodeId/serviceVersion null when unset,
    /// unregisteredBackoff as {baseDelayMs, maxDelayMs}, logFormat 'json'|'pretty'|'compact'.
    /// The legacy alias `workerTagFilterTags` is folded into `workerTagFilter`, so
    /// this value can be passed back to [`parse_runtime_options`] unchanged.
    pub effective: Value,
}

/// Options the binding itself consumes; duroxide never sees them.
#[derive(Debug, Clone)]
pub struct BindingOptions {
    /// `allowUnrenewableLocks` (default false): lets lock timeouts under 2000 ms,
    /// and renewal buffers not smaller than their timeout, through validation
    /// (for tests that want leases to expire). The sessionIdleTimeoutMs rule still holds.
    pub allow_unrenewable_locks: bool,
    /// `maxConcurrentOrchestrationFetches` (default 1, integer >= 1).
    pub max_concurrent_orchestration_fetches: usize,
    /// `maxConcurrentWorkFetches` (default 0 meaning "no cap"; integer >= 0).
    pub max_concurrent_work_fetches: usize,
    /// `watchdogIntervalMs` (default 10000; 0 disables; integer >= 0).
    pub watchdog_interval_ms: u64,
}

/// Every top-level JS option name, in the order of `spec/options.md`.
const OPTION_NAMES: &[&str] = &[
    "orchestrationConcurrency",
    "workerConcurrency",
    "dispatcherPollIntervalMs",
    "dispatcherLongPollTimeoutMs",
    "orchestratorLockTimeoutMs",
    "orchestratorLockRenewalBufferMs",
    "workerLockTimeoutMs",
    "workerLockRenewalBufferMs",
    "maxAttempts",
    "activityCancellationGracePeriodMs",
    "unregisteredBackoff",
    "supportedReplayVersions",
    "sessionLockTimeoutMs",
    "sessionLockRenewalBufferMs",
    "sessionIdleTimeoutMs",
    "sessionCleanupIntervalMs",
    "maxSessionsPerRuntime",
    "workerNodeId",
    "workerTagFilter",
    "workerTagFilterTags",
    "logFormat",
    "logLevel",
    "serviceName",
    "serviceVersion",
    "gaugePollIntervalMs",
    "allowUnrenewableLocks",
    "maxConcurrentOrchestrationFetches",
    "maxConcurrentWorkFetches",
    "watchdogIntervalMs",
];

/// Largest integer a JS number holds exactly; anything above it was already
/// rounded before it reached us, so accepting it would hide a different value.
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// Below this, duroxide's renewal cadence (every ceil(timeout_s / 2) s, at least
/// 1 s, for timeouts under 15 s) leaves no usable margin before the lock expires.
const MIN_RENEWABLE_LOCK: Duration = Duration::from_millis(2000);

const LOG_LEVELS: &[&str] = &["trace", "debug", "info", "warn", "error", "off"];

/// Parses the JS options object (`None`, `null` or an object) into crate and
/// binding options, validating every field; all failures are `InvalidOption`.
pub fn parse_runtime_options(value: Option<&Value>) -> BridgeResult<ParsedOptions> {
    let empty = Map::new();
    let obj = match value {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(invalid(format!(
                "options must be an object, got {}",
                show(other)
            )))
        }
    };
    let o = Fields::new(obj, "", OPTION_NAMES)?;
    let d = RuntimeOptions::default();
    let dob = &d.observability;
    // A struct literal without `..` so a new crate field fails the build here too.
    let runtime = RuntimeOptions {
        dispatcher_min_poll_interval: o.ms(
            "dispatcherPollIntervalMs",
            d.dispatcher_min_poll_interval,
            1,
        )?,
        dispatcher_long_poll_timeout: o.ms(
            "dispatcherLongPollTimeoutMs",
            d.dispatcher_long_poll_timeout,
            0,
        )?,
        orchestration_concurrency: o.count(
            "orchestrationConcurrency",
            d.orchestration_concurrency,
            1,
        )?,
        worker_concurrency: o.count("workerConcurrency", d.worker_concurrency, 1)?,
        orchestrator_lock_timeout: o.ms(
            "orchestratorLockTimeoutMs",
            d.orchestrator_lock_timeout,
            1,
        )?,
        orchestrator_lock_renewal_buffer: o.ms(
            "orchestratorLockRenewalBufferMs",
            d.orchestrator_lock_renewal_buffer,
            0,
        )?,
        worker_lock_timeout: o.ms("workerLockTimeoutMs", d.worker_lock_timeout, 1)?,
        worker_lock_renewal_buffer: o.ms(
            "workerLockRenewalBufferMs",
            d.worker_lock_renewal_buffer,
            0,
        )?,
        observability: ObservabilityConfig {
            log_format: parse_log_format(&o, &dob.log_format)?,
            log_level: parse_log_level(&o, &dob.log_level)?,
            service_name: o
                .string("serviceName", false)?
                .unwrap_or_else(|| dob.service_name.clone()),
            service_version: o
                .string("serviceVersion", true)?
                .or_else(|| dob.service_version.clone()),
            // 0 would make the gauge poller query the provider in a tight loop.
            gauge_poll_interval: o.ms("gaugePollIntervalMs", dob.gauge_poll_interval, 1)?,
        },
        unregistered_backoff: parse_backoff(&o, &d.unregistered_backoff)?,
        max_attempts: o.int("maxAttempts", d.max_attempts.into(), 1, u32::MAX.into(), "")? as u32,
        activity_cancellation_grace_period: o.ms(
            "activityCancellationGracePeriodMs",
            d.activity_cancellation_grace_period,
            0,
        )?,
        supported_replay_versions: parse_replay_versions(&o)?.or(d.supported_replay_versions),
        session_lock_timeout: o.ms("sessionLockTimeoutMs", d.session_lock_timeout, 1)?,
        session_lock_renewal_buffer: o.ms(
            "sessionLockRenewalBufferMs",
            d.session_lock_renewal_buffer,
            0,
        )?,
        session_idle_timeout: o.ms("sessionIdleTimeoutMs", d.session_idle_timeout, 0)?,
        // 0 makes tokio::time::interval panic inside duroxide's session manager.
        session_cleanup_interval: o.ms(
            "sessionCleanupIntervalMs",
            d.session_cleanup_interval,
            1,
        )?,
        max_sessions_per_runtime: o.count(
            "maxSessionsPerRuntime",
            d.max_sessions_per_runtime,
            1,
        )?,
        worker_node_id: o.string("workerNodeId", false)?.or(d.worker_node_id),
        worker_tag_filter: parse_tag_filter(&o)?.unwrap_or(d.worker_tag_filter),
    };
    let binding = BindingOptions {
        allow_unrenewable_locks: o.boolean("allowUnrenewableLocks", false)?,
        max_concurrent_orchestration_fetches: o.count("maxConcurrentOrchestrationFetches", 1, 1)?,
        max_concurrent_work_fetches: o.count("maxConcurrentWorkFetches", 0, 0)?,
        watchdog_interval_ms: o.int(
            "watchdogIntervalMs",
            10_000,
            0,
            MAX_SAFE_INTEGER,
            " (milliseconds)",
        )?,
    };
    check_leases(&runtime, &binding, &o)?;
    let effective = effective_json(&runtime, &binding);
    Ok(ParsedOptions {
        runtime,
        binding,
        effective,
    })
}

fn invalid(message: String) -> BridgeError {
    BridgeError::InvalidOption(message)
}

/// Renders a received value for an error message; strings in single quotes
/// like the JS docs, long values cut so one bad option can't flood a log.
fn show(v: &Value) -> String {
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

/// Case-insensitive Levenshtein distance.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The valid name an unknown one most likely meant, if it is close enough
/// that suggesting it helps rather than confuses.
fn suggest<'a>(name: &str, valid: &[&'a str]) -> Option<&'a str> {
    let lower = name.to_lowercase();
    let ms_variant = valid.iter().find(|v| {
        let v = v.to_lowercase();
        v == format!("{lower}ms") || lower == format!("{v}ms")
    });
    if let Some(v) = ms_variant {
        return Some(v);
    }
    let (best, dist) = valid
        .iter()
        .map(|v| (*v, distance(name, v)))
        .min_by_key(|(_, d)| *d)?;
    (dist * 3 <= name.chars().count()).then_some(best)
}

/// One JS object level; `prefix` makes nested names read `unregisteredBackoff.baseDelayMs`.
struct Fields<'a> {
    obj: &'a Map<String, Value>,
    prefix: &'a str,
}

impl<'a> Fields<'a> {
    /// Rejects unknown keys up front so a typo never silently keeps a default.
    fn new(obj: &'a Map<String, Value>, prefix: &'a str, valid: &[&str]) -> BridgeResult<Self> {
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
    fn get(&self, key: &str) -> Option<&'a Value> {
        self.obj.get(key).filter(|v| !v.is_null())
    }

    fn name(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    fn int(&self, key: &str, default: u64, min: u64, max: u64, unit: &str) -> BridgeResult<u64> {
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

    fn ms(&self, key: &str, default: Duration, min: u64) -> BridgeResult<Duration> {
        let ms = self.int(
            key,
            default.as_millis() as u64,
            min,
            MAX_SAFE_INTEGER,
            " (milliseconds)",
        )?;
        Ok(Duration::from_millis(ms))
    }

    fn count(&self, key: &str, default: usize, min: u64) -> BridgeResult<usize> {
        let max = MAX_SAFE_INTEGER.min(usize::MAX as u64);
        Ok(self.int(key, default as u64, min, max, "")? as usize)
    }

    fn boolean(&self, key: &str, default: bool) -> BridgeResult<bool> {
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
    fn string(&self, key: &str, allow_empty: bool) -> BridgeResult<Option<String>> {
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

fn parse_log_format(o: &Fields, default: &LogFormat) -> BridgeResult<LogFormat> {
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
fn parse_log_level(o: &Fields, default: &str) -> BridgeResult<String> {
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

fn parse_backoff(
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

fn parse_replay_versions(o: &Fields) -> BridgeResult<Option<SemverRange>> {
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
fn parse_tag_filter(o: &Fields) -> BridgeResult<Option<TagFilter>> {
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

fn ms_of(d: Duration) -> u64 {
    d.as_millis() as u64
}

/// Cross-field lease rules; run after every field parsed so messages can cite both sides.
fn check_leases(rt: &RuntimeOptions, b: &BindingOptions, o: &Fields) -> BridgeResult<()> {
    // Say when a value was not typed by the user, or the message reads as nonsense.
    let given = |key: &str| {
        if o.get(key).is_some() {
            ""
        } else {
            " (the default)"
        }
    };
    let pairs = [
        (
            "orchestrator",
            rt.orchestrator_lock_timeout,
            rt.orchestrator_lock_renewal_buffer,
        ),
        (
            "worker",
            rt.worker_lock_timeout,
            rt.worker_lock_renewal_buffer,
        ),
        (
            "session",
            rt.session_lock_timeout,
            rt.session_lock_renewal_buffer,
        ),
    ];
    for (kind, timeout, buffer) in pairs.into_iter().filter(|_| !b.allow_unrenewable_locks) {
        let (t, bf) = (
            format!("{kind}LockTimeoutMs"),
            format!("{kind}LockRenewalBufferMs"),
        );
        let (t_ms, b_ms, min) = (ms_of(timeout), ms_of(buffer), ms_of(MIN_RENEWABLE_LOCK));
        if timeout < MIN_RENEWABLE_LOCK {
            return Err(invalid(format!(
                "{t} must be >= {min} unless allowUnrenewableLocks is true, got {t_ms}: \
                 duroxide renews a lock every ceil(timeout_s / 2) seconds, at least 1 s apart, \
                 for timeouts under 15 s, so a lock under {min} ms expires before (or less \
                 than a second after) its first renewal"
            )));
        }
        if buffer >= timeout {
            let (gb, gt) = (given(&bf), given(&t));
            return Err(invalid(format!(
                "{bf} must be smaller than {t}, got {bf} {b_ms}{gb} with {t} {t_ms}{gt}: \
                 a renewal buffer not smaller than its lock timeout is meaningless"
            )));
        }
    }
    // Mirrors the check that makes Runtime::start_with_options panic.
    let one_s = Duration::from_secs(1);
    let floor = rt
        .worker_lock_timeout
        .checked_sub(rt.worker_lock_renewal_buffer)
        .unwrap_or(one_s);
    if rt.session_idle_timeout <= floor {
        let (f, idle, g) = (
            ms_of(floor),
            ms_of(rt.session_idle_timeout),
            given("sessionIdleTimeoutMs"),
        );
        return Err(invalid(format!(
            "sessionIdleTimeoutMs must be greater than workerLockTimeoutMs - \
             workerLockRenewalBufferMs ({f} ms), got {idle}{g}: otherwise sessions unpin while \
             their activities still run, and duroxide refuses to start"
        )));
    }
    Ok(())
}

fn tag_filter_json(f: &TagFilter) -> Value {
    let sorted = |set: &HashSet<String>| {
        let mut v: Vec<&String> = set.iter().collect();
        v.sort();
        json!(v)
    };
    match f {
        TagFilter::DefaultOnly => json!("defaultOnly"),
        TagFilter::Any => json!("any"),
        TagFilter::None => json!("none"),
        TagFilter::Tags(set) => json!({ "tags": sorted(set) }),
        TagFilter::DefaultAnd(set) => json!({ "defaultAnd": sorted(set) }),
    }
}

fn effective_json(rt: &RuntimeOptions, b: &BindingOptions) -> Value {
    let ob = &rt.observability;
    json!({
        "orchestrationConcurrency": rt.orchestration_concurrency,
        "workerConcurrency": rt.worker_concurrency,
        "dispatcherPollIntervalMs": ms_of(rt.dispatcher_min_poll_interval),
        "dispatcherLongPollTimeoutMs": ms_of(rt.dispatcher_long_poll_timeout),
        "orchestratorLockTimeoutMs": ms_of(rt.orchestrator_lock_timeout),
        "orchestratorLockRenewalBufferMs": ms_of(rt.orchestrator_lock_renewal_buffer),
        "workerLockTimeoutMs": ms_of(rt.worker_lock_timeout),
        "workerLockRenewalBufferMs": ms_of(rt.worker_lock_renewal_buffer),
        "maxAttempts": rt.max_attempts,
        "activityCancellationGracePeriodMs": ms_of(rt.activity_cancellation_grace_period),
        "unregisteredBackoff": {
            "baseDelayMs": ms_of(rt.unregistered_backoff.base_delay),
            "maxDelayMs": ms_of(rt.unregistered_backoff.max_delay),
        },
        "supportedReplayVersions": rt.supported_replay_versions.as_ref()
            .map(|r| json!({ "min": r.min.to_string(), "max": r.max.to_string() })),
        "sessionLockTimeoutMs": ms_of(rt.session_lock_timeout),
        "sessionLockRenewalBufferMs": ms_of(rt.session_lock_renewal_buffer),
        "sessionIdleTimeoutMs": ms_of(rt.session_idle_timeout),
        "sessionCleanupIntervalMs": ms_of(rt.session_cleanup_interval),
        "maxSessionsPerRuntime": rt.max_sessions_per_runtime,
        "workerNodeId": rt.worker_node_id,
        "workerTagFilter": tag_filter_json(&rt.worker_tag_filter),
        "logFormat": match ob.log_format {
            LogFormat::Json => "json",
            LogFormat::Pretty => "pretty",
            LogFormat::Compact => "compact",
        },
        "logLevel": ob.log_level,
        "serviceName": ob.service_name,
        "serviceVersion": ob.service_version,
        "gaugePollIntervalMs": ms_of(ob.gauge_poll_interval),
        "allowUnrenewableLocks": b.allow_unrenewable_locks,
        "maxConcurrentOrchestrationFetches": b.max_concurrent_orchestration_fetches,
        "maxConcurrentWorkFetches": b.max_concurrent_work_fetches,
        "watchdogIntervalMs": b.watchdog_interval_ms,
    })
}

#[cfg(test)]
#[path = "options_tests.rs"]
mod tests;
