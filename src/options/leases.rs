//! Cross-field lock (lease) rules, checked after every field is parsed so a
//! message can cite both sides of a pair and say which side was defaulted.
//!
//! Why each rule exists: a configuration that duroxide accepts but that
//! cannot work should fail at construction, with the option names the user
//! typed, instead of failing later at run time. Nothing else is refused: what
//! the crate honours stays valid, however unusual.
//! - A lock timeout under 2000 ms: duroxide renews a lock every
//!   ceil(timeout_s / 2) s, at least 1 s apart, for timeouts under 15 s, so
//!   such a lock expires before (or barely after) its first renewal and every
//!   long turn or activity loses its lease. Tests that want leases to expire
//!   opt in with `allowUnrenewableLocks`.
//! - An explicitly set renewal buffer not smaller than a timeout of 15 s or
//!   more: duroxide then renews at `timeout - buffer`, which is zero or less
//!   and silently becomes 1 s, so the value cannot mean what was typed. Under
//!   15 s duroxide ignores the buffer (it renews at half the timeout), so a
//!   short lease with the default buffer is valid, and common in tests and
//!   fleets. Waived by `allowUnrenewableLocks` too.
//! - `sessionIdleTimeoutMs` not above `workerLockTimeoutMs -
//!   workerLockRenewalBufferMs`: a session would unpin while its activity
//!   still runs, and `Runtime::start_with_options` panics on it. Never waived,
//!   since a panic is never what a test wants.

use std::time::Duration;

use duroxide::runtime::RuntimeOptions;

use serde_json::{json, Value};

use super::fields::{invalid, ms_of, show, Fields};
use super::BindingOptions;
use crate::errors::BridgeResult;

/// From this timeout on duroxide renews at `timeout - buffer`; below it, at
/// half the timeout and the buffer is ignored.
const BUFFER_APPLIES_FROM: Duration = Duration::from_secs(15);

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
        if timeout >= BUFFER_APPLIES_FROM && buffer >= timeout && o.get(&bf).is_some() {
            let gt = given(&t);
            return Err(invalid(format!(
                "{bf} must be smaller than {t}, got {bf} {b_ms} with {t} {t_ms}{gt}: \
                 for timeouts of 15 s and more duroxide renews at timeout - buffer, which \
                 would be zero or less"
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

/// The renewal interval duroxide uses for a lock (`calculate_renewal_interval`
/// in both of its dispatchers), shown by `effectiveOptions()` so an operator
/// sees when a buffer is ignored.
pub(super) fn renewal_interval(timeout: Duration, buffer: Duration) -> Duration {
    let one_s = Duration::from_secs(1);
    if timeout >= BUFFER_APPLIES_FROM {
        timeout
            .checked_sub(buffer.min(timeout))
            .unwrap_or(one_s)
            .max(one_s)
    } else {
        Duration::from_secs_f64((timeout.as_secs_f64() * 0.5).ceil().max(1.0))
    }
}

/// `effectiveOptions().lockRenewalIntervalsMs`: the renewal cadence in force
/// for each kind of lock.
pub(super) fn renewal_intervals_json(rt: &RuntimeOptions) -> Value {
    let ms = |t, b| ms_of(renewal_interval(t, b));
    json!({
        "orchestrator": ms(rt.orchestrator_lock_timeout, rt.orchestrator_lock_renewal_buffer),
        "worker": ms(rt.worker_lock_timeout, rt.worker_lock_renewal_buffer),
        "session": ms(rt.session_lock_timeout, rt.session_lock_renewal_buffer),
    })
}

/// `lockRenewalIntervalsMs` is derived, not settable; it is accepted back only
/// unchanged, so `new Runtime(p, rt.effectiveOptions())` keeps working.
pub(super) fn check_renewal_echo(rt: &RuntimeOptions, o: &Fields) -> BridgeResult<()> {
    let key = "lockRenewalIntervalsMs";
    match o.get(key) {
        None => Ok(()),
        Some(v) if *v == renewal_intervals_json(rt) => Ok(()),
        Some(v) => Err(invalid(format!(
            "{key} is derived from the lock timeouts and renewal buffers and cannot be set, \
             got {}; with these options it is {}",
            show(v),
            renewal_intervals_json(rt)
        ))),
    }
}
