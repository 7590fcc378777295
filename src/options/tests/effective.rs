//! The `effectiveOptions()` JSON: names, defaults, given values, round trip.

use serde_json::json;

use super::{assert_same, parse};
use crate::options::{parse_runtime_options, OPTION_NAMES};

#[test]
fn effective_lists_every_js_name_with_defaults() {
    let e = parse_runtime_options(None).unwrap().effective;
    let obj = e.as_object().unwrap();
    for name in OPTION_NAMES.iter().filter(|n| **n != "workerTagFilterTags") {
        assert!(obj.contains_key(*name), "effective lacks {name}");
    }
    assert_eq!(obj.len(), OPTION_NAMES.len() - 1);
    let expected = json!({
        "orchestrationConcurrency": 2, "workerConcurrency": 2,
        "dispatcherPollIntervalMs": 100, "dispatcherLongPollTimeoutMs": 30000,
        "orchestratorLockTimeoutMs": 5000, "orchestratorLockRenewalBufferMs": 2000,
        "workerLockTimeoutMs": 30000, "workerLockRenewalBufferMs": 5000,
        "lockRenewalIntervalsMs": { "orchestrator": 3000, "worker": 25000, "session": 25000 },
        "maxAttempts": 10, "activityCancellationGracePeriodMs": 10000,
        "unregisteredBackoff": { "baseDelayMs": 1000, "maxDelayMs": 60000 },
        "supportedReplayVersions": null,
        "sessionLockTimeoutMs": 30000, "sessionLockRenewalBufferMs": 5000,
        "sessionIdleTimeoutMs": 300000, "sessionCleanupIntervalMs": 300000,
        "maxSessionsPerRuntime": 10, "workerNodeId": null, "workerTagFilter": "defaultOnly",
        "logFormat": "pretty", "logLevel": "info", "serviceName": "duroxide",
        "serviceVersion": null, "gaugePollIntervalMs": 60000,
        "allowUnrenewableLocks": false, "maxConcurrentOrchestrationFetches": 1,
        "maxConcurrentWorkFetches": 0, "watchdogIntervalMs": 10000,
        "orchestrationCacheSize": 1000, "determinismGuard": "warn", "maxPayloadBytes": 16_777_216,
        "onNondeterminism": "fail", "historyWarnEvents": 10_000,
    });
    assert_eq!(e, expected);
}

#[test]
fn effective_shows_given_values_and_round_trips() {
    let p = parse(json!({
        "workerTagFilter": "tags", "workerTagFilterTags": ["b", "a"],
        "supportedReplayVersions": { "min": "1.0.0", "max": "2.0.0-beta.1" },
        "logLevel": "DEBUG", "workerNodeId": "n1", "allowUnrenewableLocks": true,
        "orchestratorLockTimeoutMs": 1000, "maxConcurrentWorkFetches": 3, "watchdogIntervalMs": 0,
        "orchestrationCacheSize": 0, "determinismGuard": "throw", "maxPayloadBytes": 1024,
        "onNondeterminism": "hold", "historyWarnEvents": 0,
    }))
    .unwrap();
    let e = &p.effective;
    assert_eq!(e["workerTagFilter"], json!({ "tags": ["a", "b"] }));
    assert_eq!(
        e["supportedReplayVersions"],
        json!({ "min": "1.0.0", "max": "2.0.0-beta.1" })
    );
    assert_eq!(e["logLevel"], "debug");
    assert_eq!(e["workerNodeId"], "n1");
    assert_eq!(e["orchestratorLockTimeoutMs"], 1000);
    assert_eq!(e["allowUnrenewableLocks"], true);
    assert_eq!(e["maxConcurrentWorkFetches"], 3);
    assert_eq!(e["watchdogIntervalMs"], 0);
    assert_eq!(e["orchestrationCacheSize"], 0);
    assert_eq!(e["determinismGuard"], "throw");
    assert_eq!(e["maxPayloadBytes"], 1024);
    assert_eq!(p.binding.max_payload_bytes, 1024);
    assert_eq!(e["onNondeterminism"], "hold");
    assert_eq!(e["historyWarnEvents"], 0);
    assert_eq!(p.binding.history_warn_events, 0);
    let again = parse(e.clone()).unwrap();
    assert_eq!(&again.effective, e);
    assert_same(&again.runtime, &p.runtime);
}
