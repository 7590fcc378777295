//! Single-value options: counts, durations, strings, booleans and the
//! binding's own options.

use std::time::Duration;

use serde_json::json;

use super::{assert_err, err, parse};
use crate::options::fields::show;

#[test]
fn counts_must_be_integers_at_least_one() {
    for name in [
        "orchestrationConcurrency",
        "workerConcurrency",
        "maxSessionsPerRuntime",
        "maxAttempts",
    ] {
        // Concurrencies may be 0 (no dispatcher of that kind, see leases.rs tests).
        let zero_ok = name.ends_with("Concurrency");
        for bad in [
            json!(0),
            json!(-1),
            json!(1.5),
            json!("5"),
            json!(true),
            json!([1]),
            json!({}),
        ] {
            if zero_ok && bad == json!(0) {
                continue;
            }
            assert_err(
                json!({ name: bad.clone() }),
                &[name, &format!("got {}", show(&bad))],
            );
        }
        let p = parse(json!({ name: 3 })).unwrap();
        assert_eq!(p.effective[name], 3);
    }
    assert_eq!(
        err(json!({ "orchestrationConcurrency": -1 })),
        "orchestrationConcurrency must be an integer >= 0, got -1"
    );
    assert_eq!(
        err(json!({ "maxSessionsPerRuntime": 0 })),
        "maxSessionsPerRuntime must be an integer >= 1, got 0"
    );
    assert_err(json!({ "workerConcurrency": "5" }), &["got '5'"]);
}

#[test]
fn max_attempts_is_bounded_by_u32() {
    assert_eq!(
        parse(json!({ "maxAttempts": 4294967295u64 }))
            .unwrap()
            .runtime
            .max_attempts,
        u32::MAX
    );
    assert_err(
        json!({ "maxAttempts": 4294967296u64 }),
        &["maxAttempts", "4294967296"],
    );
    // napi delivers whole numbers above u32::MAX as f64.
    assert_err(json!({ "maxAttempts": 5e9 }), &["maxAttempts"]);
}

#[test]
fn whole_floats_count_as_integers_but_unsafe_ones_do_not() {
    let p =
        parse(json!({ "sessionCleanupIntervalMs": 5e9, "orchestrationConcurrency": 4.0 })).unwrap();
    assert_eq!(
        p.runtime.session_cleanup_interval,
        Duration::from_millis(5_000_000_000)
    );
    assert_eq!(p.runtime.orchestration_concurrency, 4);
    assert_err(
        json!({ "sessionCleanupIntervalMs": 1e300 }),
        &["sessionCleanupIntervalMs"],
    );
    assert_err(
        json!({ "sessionCleanupIntervalMs": 9007199254740992u64 }),
        &["sessionCleanupIntervalMs"],
    );
}

#[test]
fn durations_reject_negative_fractional_and_non_numbers() {
    for name in [
        "dispatcherLongPollTimeoutMs",
        "activityCancellationGracePeriodMs",
        "gaugePollIntervalMs",
    ] {
        for bad in [
            json!(-1),
            json!(2.5),
            json!("100"),
            json!(false),
            json!([null]),
        ] {
            assert_err(
                json!({ name: bad.clone() }),
                &[name, "milliseconds", &format!("got {}", show(&bad))],
            );
        }
    }
}

#[test]
fn zero_durations_rejected_where_they_break_duroxide() {
    for name in [
        "orchestratorLockTimeoutMs",
        "workerLockTimeoutMs",
        "sessionLockTimeoutMs",
        "dispatcherPollIntervalMs",
        "sessionCleanupIntervalMs",
        "gaugePollIntervalMs",
    ] {
        assert_err(
            json!({ name: 0, "allowUnrenewableLocks": true }),
            &[name, ">= 1", "got 0"],
        );
    }
    let p = parse(json!({
        "activityCancellationGracePeriodMs": 0, "orchestratorLockRenewalBufferMs": 0,
        "workerLockRenewalBufferMs": 0, "sessionLockRenewalBufferMs": 0,
        "dispatcherLongPollTimeoutMs": 0,
        "unregisteredBackoff": { "baseDelayMs": 0, "maxDelayMs": 0 },
    }))
    .unwrap();
    assert_eq!(p.runtime.activity_cancellation_grace_period, Duration::ZERO);
    assert_eq!(p.runtime.worker_lock_renewal_buffer, Duration::ZERO);
    assert_eq!(p.runtime.unregistered_backoff.max_delay, Duration::ZERO);
}

#[test]
fn string_options() {
    let p =
        parse(json!({ "serviceName": "a", "serviceVersion": "", "workerNodeId": "w" })).unwrap();
    assert_eq!(p.runtime.observability.service_name, "a");
    assert_eq!(p.runtime.observability.service_version.as_deref(), Some(""));
    assert_eq!(p.runtime.worker_node_id.as_deref(), Some("w"));
    assert_err(
        json!({ "serviceName": "" }),
        &["serviceName must be a non-empty string, got ''"],
    );
    assert_err(
        json!({ "workerNodeId": "" }),
        &["workerNodeId must be a non-empty string"],
    );
    assert_err(json!({ "workerNodeId": 7 }), &["workerNodeId", "got 7"]);
    assert_err(
        json!({ "serviceVersion": 1 }),
        &["serviceVersion must be a string, got 1"],
    );
}

#[test]
fn binding_options() {
    let p = parse(json!({
        "maxConcurrentOrchestrationFetches": 4,
        "maxConcurrentWorkFetches": 2,
        "watchdogIntervalMs": 0,
        "orchestrationCacheSize": 0,
    }))
    .unwrap();
    assert_eq!(p.binding.max_concurrent_orchestration_fetches, 4);
    assert_eq!(p.binding.max_concurrent_work_fetches, 2);
    assert_eq!(p.binding.watchdog_interval_ms, 0);
    assert_eq!(p.binding.orchestration_cache_size, 0);
    assert_err(
        json!({ "maxConcurrentOrchestrationFetches": 0 }),
        &["maxConcurrentOrchestrationFetches must be an integer >= 1, got 0"],
    );
    assert_err(
        json!({ "maxConcurrentWorkFetches": -1 }),
        &["maxConcurrentWorkFetches", "got -1"],
    );
    assert_err(
        json!({ "watchdogIntervalMs": 0.5 }),
        &["watchdogIntervalMs", "got 0.5"],
    );
    assert_err(
        json!({ "orchestrationCacheSize": -1 }),
        &["orchestrationCacheSize must be an integer >= 0, got -1"],
    );
    assert_err(
        json!({ "orchestrationCacheSize": "big" }),
        &["orchestrationCacheSize", "got 'big'"],
    );
    assert_eq!(
        parse(json!({})).unwrap().binding.history_warn_events,
        10_000
    );
    assert_eq!(
        parse(json!({ "historyWarnEvents": 0 }))
            .unwrap()
            .binding
            .history_warn_events,
        0
    );
    assert_err(
        json!({ "historyWarnEvents": -5 }),
        &["historyWarnEvents must be an integer >= 0, got -5"],
    );
    assert_err(
        json!({ "historyWarnEvents": 1.5 }),
        &["historyWarnEvents", "got 1.5"],
    );
    assert_err(
        json!({ "historyWarnEvents": "10k" }),
        &["historyWarnEvents", "got '10k'"],
    );
}

#[test]
fn max_payload_bytes_is_bounded() {
    assert_eq!(
        parse(json!({ "maxPayloadBytes": 134_217_728 }))
            .unwrap()
            .binding
            .max_payload_bytes,
        134_217_728
    );
    for bad in [json!(0), json!(134_217_729), json!(1.5), json!("2MB")] {
        assert_eq!(
            err(json!({ "maxPayloadBytes": bad.clone() })),
            format!(
                "maxPayloadBytes must be an integer between 1 and 134217728 (bytes), got {}",
                show(&bad)
            )
        );
    }
}
