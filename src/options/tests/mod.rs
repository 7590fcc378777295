//! Unit tests for the `options` module, one file per topic:
//! - `field_walk`: every crate field reaches the crate; defaults match it.
//! - `effective`: the `effectiveOptions()` JSON and its round trip.
//! - `names`: unknown names, suggestions, the top-level shape.
//! - `scalars`: counts, durations, strings, booleans and binding options.
//! - `structured`: log format/level and supported replay versions.
//! - `tag_filter`: worker tag filter forms and errors.
//! - `leases`: cross-field lock rules.

mod effective;
mod field_walk;
mod leases;
mod names;
mod scalars;
mod structured;
mod tag_filter;

use std::collections::HashSet;

use duroxide::runtime::RuntimeOptions;
use serde_json::Value;

use super::{parse_runtime_options, ParsedOptions};
use crate::errors::{BridgeError, BridgeResult};

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
