//! JS `RuntimeOptions` object -> duroxide `RuntimeOptions` (see `spec/options.md`).
//!
//! Validation is strict on purpose: an operator who mistypes the lock timeout
//! must get an error at construction time, not a runtime that quietly keeps
//! the default. Nothing is clamped or coerced.
//!
//! This file holds the public types, the option-name table and the order in
//! which everything is parsed. The submodules:
//! - `fields`: reading and checking single values of one object level
//!   (integers, durations, booleans, strings, unknown-name rejection) and the
//!   error helpers `invalid` / `show`.
//! - `suggest`: edit distance and the "did you mean ...?" rule.
//! - `structured`: enum- and object-valued options (log format and level,
//!   `unregisteredBackoff`, `supportedReplayVersions`, the worker tag filter).
//! - `leases`: cross-field lock timeout / renewal buffer / session idle rules.
//! - `effective`: the JSON behind `runtime.effectiveOptions()`.

mod client;
mod effective;
mod fields;
mod leases;
mod structured;
mod suggest;

#[cfg(test)]
mod tests;

use duroxide::runtime::{ObservabilityConfig, RuntimeOptions};
use serde_json::{Map, Value};

use self::effective::effective_json;
use self::fields::{invalid, show, Fields, MAX_SAFE_INTEGER};
use self::leases::{check_leases, check_renewal_echo};
use self::structured::{
    parse_backoff, parse_determinism_guard, parse_log_format, parse_log_level,
    parse_nondeterminism, parse_replay_versions, parse_tag_filter,
};
pub use self::structured::{DeterminismGuard, NondeterminismPolicy};
pub(crate) use self::suggest::distance;
use crate::errors::BridgeResult;
use crate::rules;

pub(crate) use self::client::{parse_client_options, ClientOptions};

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

impl ParsedOptions {
    /// Store-dependent defaults. The orchestration fetch cap exists for
    /// duroxide-pg's fetch, where every dispatcher queues on one advisory lock.
    /// SQLite has no such convoy, but its fetch sometimes waits 20+ ms for
    /// another connection's write, and with a cap of 1 the other dispatchers
    /// queued behind that one fetch: 200 hello orchestrations took 1.6x as long
    /// as on the crate alone. So on SQLite an unset cap is one slot per
    /// dispatcher, which is no cap.
    pub fn for_store(mut self, store: &str, raw: Option<&Value>) -> Self {
        let set = raw
            .and_then(|v| v.get("maxConcurrentOrchestrationFetches"))
            .is_some_and(|v| !v.is_null());
        if store == "sqlite" && !set {
            self.binding.max_concurrent_orchestration_fetches =
                self.runtime.orchestration_concurrency;
            self.effective = effective_json(&self.runtime, &self.binding);
        }
        self
    }
}

/// Options the binding itself consumes; duroxide never sees them.
#[derive(Debug, Clone)]
pub struct BindingOptions {
    /// `allowUnrenewableLocks` (default false): lets lock timeouts under 2000 ms,
    /// and explicitly set renewal buffers not smaller than a timeout of 15 s or more, through validation
    /// (for tests that want leases to expire). The sessionIdleTimeoutMs rule still holds.
    pub allow_unrenewable_locks: bool,
    /// `maxConcurrentOrchestrationFetches` (integer >= 1; default 1 on
    /// Postgres, `orchestrationConcurrency` (no cap) on SQLite: see
    /// [`ParsedOptions::for_store`]).
    pub max_concurrent_orchestration_fetches: usize,
    /// `maxConcurrentWorkFetches` (default 0 meaning "no cap"; integer >= 0).
    pub max_concurrent_work_fetches: usize,
    /// `watchdogIntervalMs` (default 10000; 0 disables; integer >= 0).
    pub watchdog_interval_ms: u64,
    /// `orchestrationCacheSize` (default [`DEFAULT_ORCHESTRATION_CACHE_SIZE`];
    /// 0 disables the generator cache; integer >= 0).
    pub orchestration_cache_size: usize,
    /// `determinismGuard` (`'warn'` (default), `'throw'` or `'off'`): what
    /// `Date.now()`, `new Date()` and `Math.random()` do while a generator
    /// step runs. Read by the JS runtime from `effectiveOptions()`.
    pub determinism_guard: DeterminismGuard,
    /// `maxPayloadBytes` (default [`rules::DEFAULT_MAX_PAYLOAD_BYTES`]; 1 to
    /// [`rules::MAX_PAYLOAD_BYTES_LIMIT`]): the largest JSON text a task
    /// input, an activity result or an orchestration output may have.
    pub max_payload_bytes: u32,
    /// `onNondeterminism` (`'fail'` (default) or `'hold'`): what the guard
    /// does with a turn whose code does not replay the history
    /// (`guard/nondeterminism.rs`).
    pub on_nondeterminism: NondeterminismPolicy,
    /// `historyWarnEvents` (default [`DEFAULT_HISTORY_WARN_EVENTS`]; 0
    /// disables; integer >= 0): when an execution's history passes this many
    /// events, the runtime logs one WARN per instance naming it and
    /// suggesting `ctx.continueAsNew` (`guard/history_size.rs`).
    pub history_warn_events: usize,
}

/// Default of `orchestrationCacheSize`. A cached generator is one suspended JS
/// generator plus its step log (a few KiB for typical steps), so a thousand
/// cost a few MiB, while a thousand concurrently running orchestrations per
/// process is more than most deployments keep in flight: every instance a
/// runtime is actively driving stays cached, and the oldest idle ones (those
/// waiting on long timers or events) are the ones evicted.
pub const DEFAULT_ORCHESTRATION_CACHE_SIZE: usize = 1000;

/// Default of `historyWarnEvents`: Temporal warns at 10,000 events too. A
/// turn replays (or at least reads) its execution's whole history, so a
/// history that keeps growing makes every turn of the instance slower.
pub const DEFAULT_HISTORY_WARN_EVENTS: usize = 10_000;

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
    "lockRenewalIntervalsMs",
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
    "orchestrationCacheSize",
    "determinismGuard",
    "maxPayloadBytes",
    "onNondeterminism",
    "historyWarnEvents",
];

/// `maxPayloadBytes`, an option of runtimes and clients alike.
fn max_payload_bytes(o: &Fields) -> BridgeResult<u32> {
    Ok(o.int(
        "maxPayloadBytes",
        rules::DEFAULT_MAX_PAYLOAD_BYTES.into(),
        1,
        rules::MAX_PAYLOAD_BYTES_LIMIT.into(),
        " (bytes)",
    )? as u32)
}

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
        // 0 means no dispatcher of that kind (duroxide spawns one per slot):
        // worker-only and orchestrator-only runtimes.
        orchestration_concurrency: o.count(
            "orchestrationConcurrency",
            d.orchestration_concurrency,
            0,
        )?,
        worker_concurrency: o.count("workerConcurrency", d.worker_concurrency, 0)?,
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
        orchestration_cache_size: o.count(
            "orchestrationCacheSize",
            DEFAULT_ORCHESTRATION_CACHE_SIZE,
            0,
        )?,
        determinism_guard: parse_determinism_guard(&o)?,
        max_payload_bytes: max_payload_bytes(&o)?,
        on_nondeterminism: parse_nondeterminism(&o)?,
        history_warn_events: o.count("historyWarnEvents", DEFAULT_HISTORY_WARN_EVENTS, 0)?,
    };
    if runtime.orchestration_concurrency == 0 && runtime.worker_concurrency == 0 {
        return Err(invalid(
            "orchestrationConcurrency and workerConcurrency are both 0: the runtime would \
             dispatch nothing; set at least one of them above 0"
                .to_string(),
        ));
    }
    check_leases(&runtime, &binding, &o)?;
    check_renewal_echo(&runtime, &o)?;
    let effective = effective_json(&runtime, &binding);
    Ok(ParsedOptions {
        runtime,
        binding,
        effective,
    })
}
