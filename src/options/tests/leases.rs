//! Cross-field lock rules: timeouts, renewal buffers, session idle timeout.

use serde_json::json;

use super::{assert_err, parse};

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
