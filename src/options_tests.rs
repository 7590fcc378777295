//! Unit tests for `options.rs` (kept apart only for file length).

use super::*;
use serde_json::json;

fn parse(v: Value) -> BridgeResult<ParsedOptions> {
    parse_runtime_options(Some(&v))
}

/// The `InvalidOption` message for `v`; panics if parsing succeeds or fails otherwise.
fn err(v: Value) -> String {
    match parse(v.clone()) {
        Err(BridgeError::InvalidOption(m)) => m,
        other => panic!("expected InvalidOption for {v}, got {other:?}"),
    }
}

fn assert_err(v: Value, needles: &[&str]) {
    let m = err(v);
    for n in needles {
        assert!(m.contains(n), "message {m:?} should contain {n:?}");
    }
}

fn set(tags: &[&str]) -> HashSet<String> {
    tags.iter().map(|s| s.to_string()).collect()
}

fn assert_same(a: &RuntimeOptions, b: &RuntimeOptions) {
    assert_eq!(
        a.dispatcher_min_poll_interval,
        b.dispatcher_min_poll_interval
    );
    assert_eq!(
        a.dispatcher_long_poll_timeout,
        b.dispatcher_long_poll_timeout
    );
    assert_eq!(a.orchestration_concurrency, b.orchestration_concurrency);
    assert_eq!(a.worker_concurrency, b.worker_concurrency);
    assert_eq!(a.orchestrator_lock_timeout, b.orchestrator_lock_timeout);
    assert_eq!(
        a.orchestrator_lock_renewal_buffer,
        b.orchestrator_lock_renewal_buffer
    );
    assert_eq!(a.worker_lock_timeout, b.worker_lock_timeout);
    assert_eq!(a.worker_lock_renewal_buffer, b.worker_lock_renewal_buffer);
    assert_eq!(a.observability.log_format, b.observability.log_format);
    assert_eq!(a.observability.log_level, b.observability.log_level);
    assert_eq!(a.observability.service_name, b.observability.service_name);
    assert_eq!(
        a.observability.service_version,
        b.observability.service_version
    );
    assert_eq!(
        a.observability.gauge_poll_interval,
        b.observability.gauge_poll_interval
    );
    assert_eq!(
        a.unregistered_backoff.base_delay,
        b.unregistered_backoff.base_delay
    );
    assert_eq!(
        a.unregistered_backoff.max_delay,
        b.unregistered_backoff.max_delay
    );
    assert_eq!(a.max_attempts, b.max_attempts);
    assert_eq!(
        a.activity_cancellation_grace_period,
        b.activity_cancellation_grace_period
    );
    let range = |o: &RuntimeOptions| {
        o.supported_replay_versions
            .as_ref()
            .map(|r| (r.min.clone(), r.max.clone()))
    };
    assert_eq!(range(a), range(b));
    assert_eq!(a.session_lock_timeout, b.session_lock_timeout);
    assert_eq!(a.session_lock_renewal_buffer, b.session_lock_renewal_buffer);
    assert_eq!(a.session_idle_timeout, b.session_idle_timeout);
    assert_eq!(a.session_cleanup_interval, b.session_cleanup_interval);
    assert_eq!(a.max_sessions_per_runtime, b.max_sessions_per_runtime);
    assert_eq!(a.worker_node_id, b.worker_node_id);
    assert_eq!(a.worker_tag_filter, b.worker_tag_filter);
}

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
    }
    // null is JS undefined: every key given as null keeps its default.
    let all_null: Map<String, Value> = OPTION_NAMES
        .iter()
        .map(|n| (n.to_string(), Value::Null))
        .collect();
    assert_same(&parse(Value::Object(all_null)).unwrap().runtime, &d);
}

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
    let again = parse(e.clone()).unwrap();
    assert_eq!(&again.effective, e);
    assert_same(&again.runtime, &p.runtime);
}

#[test]
fn top_level_must_be_object_or_null() {
    for v in [json!(1), json!("x"), json!([]), json!(true)] {
        assert_err(v, &["options must be an object"]);
    }
}

#[test]
fn unknown_names_are_rejected_with_a_suggestion() {
    assert_err(
        json!({ "orchestratorLockTimeout": 10000 }),
        &[
            "'orchestratorLockTimeout'",
            "did you mean orchestratorLockTimeoutMs?",
        ],
    );
    assert_err(json!({ "max_attempts": 3 }), &["did you mean maxAttempts?"]);
    assert_err(
        json!({ "OrchestrationConcurrency": 3 }),
        &["did you mean orchestrationConcurrency?"],
    );
    assert_err(
        json!({ "workerConcurency": 3 }),
        &["did you mean workerConcurrency?"],
    );
    let m = err(json!({ "bogus": 1 }));
    assert!(
        m.contains("unknown option 'bogus'") && !m.contains("did you mean"),
        "{m}"
    );
}

#[test]
fn nested_unknown_keys_are_rejected_with_dotted_names() {
    assert_err(
        json!({ "unregisteredBackoff": { "baseDelay": 5 } }),
        &[
            "'unregisteredBackoff.baseDelay'",
            "did you mean unregisteredBackoff.baseDelayMs?",
        ],
    );
    assert_err(
        json!({ "supportedReplayVersions": { "min": "1.0.0", "max": "1.0.0", "maxx": "1" } }),
        &[
            "'supportedReplayVersions.maxx'",
            "did you mean supportedReplayVersions.max?",
        ],
    );
    assert_err(
        json!({ "workerTagFilter": { "tag": ["a"] } }),
        &[
            "'workerTagFilter.tag'",
            "did you mean workerTagFilter.tags?",
        ],
    );
}

#[test]
fn counts_must_be_integers_at_least_one() {
    for name in [
        "orchestrationConcurrency",
        "workerConcurrency",
        "maxSessionsPerRuntime",
        "maxAttempts",
    ] {
        for bad in [
            json!(0),
            json!(-1),
            json!(1.5),
            json!("5"),
            json!(true),
            json!([1]),
            json!({}),
        ] {
            assert_err(
                json!({ name: bad.clone() }),
                &[name, &format!("got {}", show(&bad))],
            );
        }
        let p = parse(json!({ name: 3 })).unwrap();
        assert_eq!(p.effective[name], 3);
    }
    assert_eq!(
        err(json!({ "orchestrationConcurrency": 0 })),
        "orchestrationConcurrency must be an integer >= 1, got 0"
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
fn log_format_and_level() {
    for (s, f) in [
        ("json", LogFormat::Json),
        ("pretty", LogFormat::Pretty),
        ("compact", LogFormat::Compact),
    ] {
        assert_eq!(
            parse(json!({ "logFormat": s }))
                .unwrap()
                .runtime
                .observability
                .log_format,
            f
        );
    }
    assert_eq!(
        err(json!({ "logFormat": "xml" })),
        "logFormat must be one of 'json', 'pretty', 'compact', got 'xml'"
    );
    assert_err(json!({ "logFormat": "JSON" }), &["got 'JSON'"]);
    for l in ["trace", "Debug", "INFO", "warn", "error", "off"] {
        let p = parse(json!({ "logLevel": l })).unwrap();
        assert_eq!(p.runtime.observability.log_level, l.to_lowercase());
    }
    for bad in [
        json!(""),
        json!("verbose"),
        json!("info,foo=debug"),
        json!(3),
    ] {
        assert_err(
            json!({ "logLevel": bad.clone() }),
            &["logLevel", &format!("got {}", show(&bad))],
        );
    }
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
fn supported_replay_versions() {
    let p =
        parse(json!({ "supportedReplayVersions": { "min": "0.0.0", "max": "0.0.0" } })).unwrap();
    let r = p.runtime.supported_replay_versions.unwrap();
    assert_eq!(
        (r.min.to_string(), r.max.to_string()),
        ("0.0.0".into(), "0.0.0".into())
    );
    let srv = |v: Value| json!({ "supportedReplayVersions": v });
    assert_err(
        srv(json!({ "min": "1.0.0" })),
        &["supportedReplayVersions.max is required"],
    );
    assert_err(
        srv(json!({ "max": "1.0.0", "min": null })),
        &["supportedReplayVersions.min is required"],
    );
    assert_err(
        srv(json!({ "min": "1.0", "max": "2.0.0" })),
        &["supportedReplayVersions.min", "got '1.0'"],
    );
    assert_err(
        srv(json!({ "min": "1.0.0", "max": 2 })),
        &["supportedReplayVersions.max", "got 2"],
    );
    assert_err(
        srv(json!({ "min": "2.0.0", "max": "1.0.0" })),
        &[
            "supportedReplayVersions.min must be <= supportedReplayVersions.max",
            "'2.0.0'",
            "'1.0.0'",
        ],
    );
    assert_err(
        srv(json!("1.0.0")),
        &["supportedReplayVersions must be an object", "got '1.0.0'"],
    );
}

#[test]
fn tag_filter_forms() {
    let tf = |v: Value| parse(v).unwrap().runtime.worker_tag_filter;
    assert_eq!(
        tf(json!({ "workerTagFilter": "defaultOnly" })),
        TagFilter::DefaultOnly
    );
    assert_eq!(tf(json!({ "workerTagFilter": "any" })), TagFilter::Any);
    assert_eq!(tf(json!({ "workerTagFilter": "none" })), TagFilter::None);
    assert_eq!(
        tf(json!({ "workerTagFilter": { "tags": ["gpu"] } })),
        TagFilter::Tags(set(&["gpu"]))
    );
    assert_eq!(
        tf(json!({ "workerTagFilter": { "defaultAnd": ["a", "b"], "tags": null } })),
        TagFilter::DefaultAnd(set(&["a", "b"]))
    );
    // Legacy flat form.
    assert_eq!(
        tf(json!({ "workerTagFilter": "tags", "workerTagFilterTags": ["x"] })),
        TagFilter::Tags(set(&["x"]))
    );
    assert_eq!(
        tf(json!({ "workerTagFilter": "defaultAnd", "workerTagFilterTags": ["x", "y"] })),
        TagFilter::DefaultAnd(set(&["x", "y"]))
    );
}

#[test]
fn tag_filter_errors() {
    assert_err(
        json!({ "workerTagFilter": "tags" }),
        &["workerTagFilter 'tags' needs workerTagFilterTags"],
    );
    assert_err(
        json!({ "workerTagFilter": "defaultAnd" }),
        &["needs workerTagFilterTags"],
    );
    assert_err(
        json!({ "workerTagFilter": "any", "workerTagFilterTags": ["a"] }),
        &[
            "workerTagFilterTags is only meaningful",
            "workerTagFilter 'any'",
        ],
    );
    assert_err(
        json!({ "workerTagFilterTags": ["a"] }),
        &["workerTagFilterTags is only meaningful", "unset"],
    );
    assert_err(
        json!({ "workerTagFilter": { "tags": ["a"] }, "workerTagFilterTags": ["a"] }),
        &["workerTagFilterTags is only meaningful"],
    );
    assert_err(
        json!({ "workerTagFilter": "gpu" }),
        &["workerTagFilter must be", "got 'gpu'"],
    );
    assert_err(
        json!({ "workerTagFilter": 1 }),
        &["workerTagFilter must be", "got 1"],
    );
    assert_err(
        json!({ "workerTagFilter": {} }),
        &["workerTagFilter must be", "got {}"],
    );
    assert_err(
        json!({ "workerTagFilter": { "tags": ["a"], "defaultAnd": ["b"] } }),
        &["workerTagFilter must be"],
    );
    let too_many: Vec<String> = (0..=MAX_WORKER_TAGS).map(|i| format!("t{i}")).collect();
    let max: Vec<String> = (0..MAX_WORKER_TAGS).map(|i| format!("t{i}")).collect();
    assert!(parse(json!({ "workerTagFilter": { "tags": max } })).is_ok());
    let long = "x".repeat(MAX_TAG_NAME_BYTES + 1);
    let longest = "é".repeat(MAX_TAG_NAME_BYTES / 2);
    assert!(parse(json!({ "workerTagFilter": { "tags": [longest] } })).is_ok());
    let tags = |v: Value| json!({ "workerTagFilter": { "tags": v } });
    assert_err(
        tags(json!(too_many)),
        &["workerTagFilter.tags must be an array of 1 to"],
    );
    assert_err(
        tags(json!([])),
        &["workerTagFilter.tags must be an array", "got []"],
    );
    assert_err(
        tags(json!("a")),
        &["workerTagFilter.tags must be an array", "got 'a'"],
    );
    assert_err(
        tags(json!(["a", ""])),
        &[
            "workerTagFilter.tags[1] must be a non-empty string",
            "got ''",
        ],
    );
    assert_err(tags(json!([long])), &["workerTagFilter.tags[0]", "bytes"]);
    assert_err(tags(json!(["a", 2])), &["workerTagFilter.tags[1]", "got 2"]);
    assert_err(
        tags(json!(["a", "a"])),
        &["workerTagFilter.tags contains 'a' more than once"],
    );
    assert_err(
        json!({ "workerTagFilter": "tags", "workerTagFilterTags": ["a", "a"] }),
        &["workerTagFilterTags contains 'a'"],
    );
}

#[test]
fn renewal_buffer_must_be_below_its_timeout() {
    for kind in ["orchestrator", "worker", "session"] {
        let (t, b) = (
            format!("{kind}LockTimeoutMs"),
            format!("{kind}LockRenewalBufferMs"),
        );
        assert_err(
            json!({ t.clone(): 20000, b.clone(): 20000, "sessionIdleTimeoutMs": 600000 }),
            &[&format!(
                "{b} must be smaller than {t}, got {b} 20000 with {t} 20000"
            )],
        );
        assert!(parse(
            json!({ t.clone(): 20000, b.clone(): 19999, "sessionIdleTimeoutMs": 600000 })
        )
        .is_ok());
    }
    // A default on one side is called out, since the user never typed it.
    assert_err(
        json!({ "orchestratorLockTimeoutMs": 2000 }),
        &["got orchestratorLockRenewalBufferMs 2000 (the default)"],
    );
}

#[test]
fn lock_timeouts_under_two_seconds_need_the_opt_in() {
    for kind in ["orchestrator", "worker", "session"] {
        let (t, b) = (
            format!("{kind}LockTimeoutMs"),
            format!("{kind}LockRenewalBufferMs"),
        );
        let opts = json!({ t.clone(): 1999, b.clone(): 100 });
        assert_err(
            opts.clone(),
            &[
                &t,
                "must be >= 2000 unless allowUnrenewableLocks is true, got 1999",
                "renews",
            ],
        );
        let mut allowed = opts.clone();
        allowed["allowUnrenewableLocks"] = json!(true);
        assert!(parse(allowed).unwrap().binding.allow_unrenewable_locks);
        assert!(parse(json!({ t.clone(): 2000, b.clone(): 100 })).is_ok());
        // The opt-in waives the buffer rule too.
        assert!(
            parse(json!({ t.clone(): 500, b.clone(): 5000, "allowUnrenewableLocks": true }))
                .is_ok()
        );
    }
    assert_err(
        json!({ "allowUnrenewableLocks": 1 }),
        &["allowUnrenewableLocks must be a boolean, got 1"],
    );
}

#[test]
fn session_idle_timeout_must_exceed_worker_renewal_interval() {
    // Defaults: 30000 - 5000 = 25000.
    assert_err(
        json!({ "sessionIdleTimeoutMs": 25000 }),
        &[
            "sessionIdleTimeoutMs must be greater than",
            "(25000 ms), got 25000",
        ],
    );
    assert!(parse(json!({ "sessionIdleTimeoutMs": 25001 })).is_ok());
    assert_err(
        json!({ "workerLockTimeoutMs": 600000, "workerLockRenewalBufferMs": 1000 }),
        &["(599000 ms), got 300000 (the default)"],
    );
    // Not waived by allowUnrenewableLocks; buffer > timeout falls back to 1 s like duroxide.
    let base = json!({
        "allowUnrenewableLocks": true, "workerLockTimeoutMs": 500, "workerLockRenewalBufferMs": 900,
    });
    let mut bad = base.clone();
    bad["sessionIdleTimeoutMs"] = json!(1000);
    assert_err(bad, &["sessionIdleTimeoutMs", "(1000 ms), got 1000"]);
    let mut ok = base;
    ok["sessionIdleTimeoutMs"] = json!(1001);
    assert!(parse(ok).is_ok());
}

#[test]
fn binding_options() {
    let p = parse(json!({
        "maxConcurrentOrchestrationFetches": 4,
        "maxConcurrentWorkFetches": 2,
        "watchdogIntervalMs": 0,
    }))
    .unwrap();
    assert_eq!(p.binding.max_concurrent_orchestration_fetches, 4);
    assert_eq!(p.binding.max_concurrent_work_fetches, 2);
    assert_eq!(p.binding.watchdog_interval_ms, 0);
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
}

#[test]
fn suggestion_rules() {
    assert_eq!(
        suggest("gaugePollInterval", OPTION_NAMES),
        Some("gaugePollIntervalMs")
    );
    assert_eq!(suggest("maxattemptsms", OPTION_NAMES), Some("maxAttempts"));
    assert_eq!(suggest("xyz", OPTION_NAMES), None);
    assert_eq!(distance("Kitten", "sitting"), 3);
    assert!(show(&json!("x".repeat(200))).ends_with("..."));
}
