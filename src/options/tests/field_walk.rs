//! The struct-literal field walk: every duroxide option field is set from JS,
//! and nothing given means the crate's defaults.

use std::time::Duration;

use duroxide::runtime::{
    LogFormat, ObservabilityConfig, RuntimeOptions, UnregisteredBackoffConfig,
};
use duroxide::{SemverRange, TagFilter};
use serde_json::{json, Map, Value};

use super::{assert_same, parse, set};
use crate::options::{parse_runtime_options, OPTION_NAMES};

#[test]
fn field_walk_every_crate_field_reaches_the_crate() {
    let ms = Duration::from_millis;
    // No `..`: a new crate field must break this test's build.
    let expected = RuntimeOptions {
        dispatcher_min_poll_interval: ms(25),
        dispatcher_long_poll_timeout: ms(12_000),
        orchestration_concurrency: 7,
        worker_concurrency: 9,
        orchestrator_lock_timeout: ms(7_000),
        orchestrator_lock_renewal_buffer: ms(1_500),
        worker_lock_timeout: ms(40_000),
        worker_lock_renewal_buffer: ms(6_000),
        observability: ObservabilityConfig {
            log_format: LogFormat::Json,
            log_level: "debug".to_string(),
            service_name: "svc".to_string(),
            service_version: Some("9.9.9".to_string()),
            gauge_poll_interval: ms(4_321),
        },
        unregistered_backoff: UnregisteredBackoffConfig {
            base_delay: ms(250),
            max_delay: ms(9_000),
        },
        max_attempts: 3,
        activity_cancellation_grace_period: ms(1_234),
        supported_replay_versions: Some(SemverRange::new(
            semver::Version::new(0, 1, 0),
            semver::Version::new(0, 1, 30),
        )),
        session_lock_timeout: ms(45_000),
        session_lock_renewal_buffer: ms(7_000),
        session_idle_timeout: ms(400_000),
        session_cleanup_interval: ms(123_000),
        max_sessions_per_runtime: 4,
        worker_node_id: Some("pod-0".to_string()),
        worker_tag_filter: TagFilter::DefaultAnd(set(&["gpu", "fast"])),
    };
    let js = json!({
        "dispatcherPollIntervalMs": 25,
        "dispatcherLongPollTimeoutMs": 12000,
        "orchestrationConcurrency": 7,
        "workerConcurrency": 9,
        "orchestratorLockTimeoutMs": 7000,
        "orchestratorLockRenewalBufferMs": 1500,
        "workerLockTimeoutMs": 40000,
        "workerLockRenewalBufferMs": 6000,
        "logFormat": "json",
        "logLevel": "debug",
        "serviceName": "svc",
        "serviceVersion": "9.9.9",
        "gaugePollIntervalMs": 4321,
        "unregisteredBackoff": { "baseDelayMs": 250, "maxDelayMs": 9000 },
        "maxAttempts": 3,
        "activityCancellationGracePeriodMs": 1234,
        "supportedReplayVersions": { "min": "0.1.0", "max": "0.1.30" },
        "sessionLockTimeoutMs": 45000,
        "sessionLockRenewalBufferMs": 7000,
        "sessionIdleTimeoutMs": 400000,
        "sessionCleanupIntervalMs": 123000,
        "maxSessionsPerRuntime": 4,
        "workerNodeId": "pod-0",
        "workerTagFilter": { "defaultAnd": ["gpu", "fast"] },
    });
    let parsed = parse(js).unwrap();
    assert_same(&parsed.runtime, &expected);
    // Every value differs from the crate default, so a dropped mapping would show.
    let d = RuntimeOptions::default();
    assert_ne!(
        d.observability.log_format,
        expected.observability.log_format
    );
    assert_ne!(d.max_attempts, expected.max_attempts);
    assert_ne!(d.worker_tag_filter, expected.worker_tag_filter);
}

#[test]
fn defaults_when_nothing_given_match_the_crate() {
    let d = RuntimeOptions::default();
    for v in [None, Some(Value::Null), Some(json!({}))] {
        let p = parse_runtime_options(v.as_ref()).unwrap();
        assert_same(&p.runtime, &d);
        assert!(!p.binding.allow_unrenewable_locks);
        assert_eq!(p.binding.max_concurrent_orchestration_fetches, 1);
        assert_eq!(p.binding.max_concurrent_work_fetches, 0);
        assert_eq!(p.binding.watchdog_interval_ms, 10_000);
        assert_eq!(p.binding.orchestration_cache_size, 1000);
    }
    // null is JS undefined: every key given as null keeps its default.
    let all_null: Map<String, Value> = OPTION_NAMES
        .iter()
        .map(|n| (n.to_string(), Value::Null))
        .collect();
    assert_same(&parse(Value::Object(all_null)).unwrap().runtime, &d);
}
