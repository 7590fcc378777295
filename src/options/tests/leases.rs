//! Cross-field lock rules: timeouts, renewal buffers, session idle timeout.

use serde_json::json;

use super::{assert_err, parse};

#[test]
fn an_explicit_buffer_must_be_below_a_timeout_of_15_s_or_more() {
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
}

/// Regression: `workerLockTimeoutMs: 2000` (and any lease under the default
/// buffer) was refused although duroxide ignores the buffer under 15 s.
#[test]
fn short_leases_with_the_default_buffer_are_valid() {
    for (key, ms) in [
        ("workerLockTimeoutMs", 2000),
        ("workerLockTimeoutMs", 3000),
        ("orchestratorLockTimeoutMs", 2000),
        ("sessionLockTimeoutMs", 4000),
    ] {
        assert!(parse(json!({ key: ms })).is_ok(), "{key}: {ms}");
    }
    // Under 15 s even an explicit buffer >= timeout is ignored by duroxide.
    assert!(parse(
        json!({ "orchestratorLockTimeoutMs": 3000, "orchestratorLockRenewalBufferMs": 5000 })
    )
    .is_ok());
}

#[test]
fn effective_options_show_the_renewal_interval_in_force() {
    let p = parse(json!({
        "orchestratorLockTimeoutMs": 3000,
        "workerLockTimeoutMs": 20000,
        "workerLockRenewalBufferMs": 4000,
    }))
    .unwrap();
    assert_eq!(
        p.effective["lockRenewalIntervalsMs"],
        json!({ "orchestrator": 2000, "worker": 16000, "session": 25000 })
    );
    // Echoed back unchanged it is accepted; changed, it is refused.
    assert!(parse(p.effective.clone()).is_ok());
    let mut changed = p.effective.clone();
    changed["lockRenewalIntervalsMs"]["worker"] = json!(1000);
    assert_err(
        changed,
        &["lockRenewalIntervalsMs is derived", "cannot be set"],
    );
}

#[test]
fn zero_concurrency_means_no_dispatcher_of_that_kind_but_not_both() {
    let worker_only =
        parse(json!({ "orchestrationConcurrency": 0, "workerTagFilter": { "tags": ["gpu"] } }))
            .unwrap();
    assert_eq!(worker_only.runtime.orchestration_concurrency, 0);
    let orch_only = parse(json!({ "workerConcurrency": 0 })).unwrap();
    assert_eq!(orch_only.runtime.worker_concurrency, 0);
    assert_err(
        json!({ "orchestrationConcurrency": 0, "workerConcurrency": 0 }),
        &["orchestrationConcurrency and workerConcurrency are both 0"],
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
        assert!(parse(json!({
            t.clone(): 20000, b.clone(): 20000, "allowUnrenewableLocks": true,
            "sessionIdleTimeoutMs": 600000,
        }))
        .is_ok());
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
