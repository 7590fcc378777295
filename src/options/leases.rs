//! Cross-field lock (lease) rules, checked after every field is parsed so a
//! message can cite both sides of a pair and say which side was defaulted.
//!
//! Why each rule exists, all three for the same reason: a configuration that
//! duroxide accepts but that cannot work should fail at construction, with
//! the option names the user typed, instead of failing later at run time.
//! - A lock timeout under 2000 ms: duroxide renews a lock every
//!   ceil(timeout_s / 2) s, at least 1 s apart, for timeouts under 15 s, so
//!   such a lock expires before (or barely after) its first renewal and every
//!   long turn or activity loses its lease. Tests that want leases to expire
//!   opt in with `allowUnrenewableLocks`.
//! - A renewal buffer not smaller than its timeout: for timeouts of 15 s and
//!   more duroxide renews at `timeout - buffer`, which is then zero or less
//!   and silently becomes 1 s (under 15 s the buffer is ignored), so the value
//!   cannot mean what was typed. Waived by `allowUnrenewableLocks` too.
//! - `sessionIdleTimeoutMs` not above `workerLockTimeoutMs -
//!   workerLockRenewalBufferMs`: a session would unpin while its activity
//!   still runs, and `Runtime::start_with_options` panics on it. Never waived,
//!   since a panic is never what a test wants.

use std::time::Duration;

use duroxide::runtime::RuntimeOptions;

use super::fields::{invalid, ms_of, Fields};
use super::BindingOptions;
use crate::errors::BridgeResult;

/// Below this, duroxide's renewal cadence (every ceil(timeout_s / 2) s, at least
/// 1 s, for timeouts under 15 s) leaves no usable margin before the lock expires.
const MIN_RENEWABLE_LOCK: Duration = Duration::from_millis(2000);

/// Cross-field lease rules; run after every field parsed so messages can cite both sides.
pub(super) fn check_leases(
    rt: &RuntimeOptions,
    b: &BindingOptions,
    o: &Fields,
) -> BridgeResult<()> {
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
