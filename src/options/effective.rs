//! The `effective` JSON behind `runtime.effectiveOptions()`: every option under
//! its JS name with defaults filled in, in a shape that
//! [`parse_runtime_options`](super::parse_runtime_options) accepts back unchanged.

use std::collections::HashSet;

use duroxide::runtime::{LogFormat, RuntimeOptions};
use duroxide::TagFilter;
use serde_json::{json, Value};

use super::fields::ms_of;
use super::leases::renewal_intervals_json;
use super::BindingOptions;

/// Tags sorted so the same set always renders the same way.
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

pub(super) fn effective_json(rt: &RuntimeOptions, b: &BindingOptions) -> Value {
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
        "lockRenewalIntervalsMs": renewal_intervals_json(rt),
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
        "orchestrationCacheSize": b.orchestration_cache_size,
        "determinismGuard": b.determinism_guard.as_str(),
        "maxPayloadBytes": b.max_payload_bytes,
        "onNondeterminism": b.on_nondeterminism.as_str(),
        "historyWarnEvents": b.history_warn_events,
    })
}
