//! Per-runtime counters of the guard, fetch-latency windows, and the health
//! summary built from them.
//!
//! Counters are cumulative since the runtime was built. Health only looks at
//! what happened within [`HEALTH_WINDOW`], so a runtime that recovered reads
//! `ok` again a minute later.

use crate::providers::fast_paths::FastPathsReport;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use napi_derive::napi;

use crate::runtime_metrics::RuntimeMetrics;

/// How far back latency percentiles and health look.
pub(crate) const HEALTH_WINDOW: Duration = Duration::from_secs(60);
/// A fetch p99 above this makes the runtime `degraded`: acks queue behind
/// fetches on the same advisory locks, and leases start to expire.
pub(crate) const SLOW_FETCH_P99_MS: f64 = 1000.0;
/// Latency samples kept per window, whatever the rate: bounds memory and the
/// sort in [`LatencyWindow::percentiles`].
const MAX_SAMPLES: usize = 4096;
/// Lock losses remembered per instance for the watchdog's rate check.
const MAX_LOSSES_PER_INSTANCE: usize = 16;
/// Instances whose lock losses are remembered; beyond it the oldest are dropped.
const MAX_TRACKED_INSTANCES: usize = 4096;

/// Fetch durations over the last [`HEALTH_WINDOW`].
#[derive(Default)]
pub(crate) struct LatencyWindow {
    samples: Mutex<VecDeque<(Instant, f64)>>,
}

impl LatencyWindow {
    pub(crate) fn record(&self, elapsed: Duration) {
        let now = Instant::now();
        let mut s = self.samples.lock().expect("latency lock");
        if s.len() >= MAX_SAMPLES {
            s.pop_front();
        }
        s.push_back((now, elapsed.as_secs_f64() * 1000.0));
        prune(&mut s, now);
    }

    /// `(p50, p99, samples)` in ms over the window; `None` without samples.
    pub(crate) fn percentiles(&self) -> Option<(f64, f64, usize)> {
        let mut s = self.samples.lock().expect("latency lock");
        prune(&mut s, Instant::now());
        if s.is_empty() {
            return None;
        }
        let mut v: Vec<f64> = s.iter().map(|(_, ms)| *ms).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        let at = |q: f64| v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1];
        Some((at(0.50), at(0.99), v.len()))
    }
}

fn prune(s: &mut VecDeque<(Instant, f64)>, now: Instant) {
    while let Some((t, _)) = s.front() {
        if now.duration_since(*t) > HEALTH_WINDOW {
            s.pop_front();
        } else {
            break;
        }
    }
}

/// Timestamps of one kind of incident, for "how many in the last minute".
#[derive(Default)]
struct Recent(VecDeque<Instant>);

impl Recent {
    fn push(&mut self, now: Instant) {
        if self.0.len() >= MAX_SAMPLES {
            self.0.pop_front();
        }
        self.0.push_back(now);
    }

    fn count_within(&mut self, window: Duration, now: Instant) -> usize {
        while matches!(self.0.front(), Some(t) if now.duration_since(*t) > window) {
            self.0.pop_front();
        }
        self.0.len()
    }
}

#[derive(Default)]
struct Incidents {
    invalid_lock: Recent,
    deadlock: Recent,
    poison: Recent,
    /// instance -> (times its orchestration acks lost the lock, last attempt count)
    losses: HashMap<String, (VecDeque<Instant>, u32)>,
    /// instance -> (when the watchdog last saw its livelock signature, attempt count)
    livelocked: HashMap<String, (Instant, u32)>,
}

/// The guard's counters for one runtime.
#[derive(Default)]
pub(crate) struct GuardStats {
    invalid_lock_acks: AtomicU64,
    work_lock_lost_acks: AtomicU64,
    poison: AtomicU64,
    deadlocks: AtomicU64,
    orphaned_locks_released: AtomicU64,
    livelocks: AtomicU64,
    pub orch_fetch: LatencyWindow,
    pub orch_fetch_wait: LatencyWindow,
    pub work_fetch: LatencyWindow,
    incidents: Mutex<Incidents>,
}

impl GuardStats {
    fn incidents(&self) -> std::sync::MutexGuard<'_, Incidents> {
        self.incidents.lock().expect("incidents lock")
    }

    /// An orchestration ack failed with "Invalid lock token".
    pub(crate) fn invalid_lock_ack(&self, instance: &str, attempt: u32, window: Duration) {
        self.invalid_lock_acks.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        let mut inc = self.incidents();
        inc.invalid_lock.push(now);
        if !inc.losses.contains_key(instance) && inc.losses.len() >= MAX_TRACKED_INSTANCES {
            let oldest = inc
                .losses
                .iter()
                .min_by_key(|(_, (t, _))| t.back().copied())
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                inc.losses.remove(&k);
            }
        }
        let (times, last) = inc.losses.entry(instance.to_string()).or_default();
        if times.len() >= MAX_LOSSES_PER_INSTANCE {
            times.pop_front();
        }
        times.push_back(now);
        *last = attempt;
        while matches!(times.front(), Some(t) if now.duration_since(*t) > window) {
            times.pop_front();
        }
    }

    /// Instances with at least `threshold` lock losses within `window`, with
    /// their loss count and last attempt count.
    pub(crate) fn sustained_lock_losses(
        &self,
        threshold: usize,
        window: Duration,
    ) -> Vec<(String, usize, u32)> {
        let now = Instant::now();
        let mut inc = self.incidents();
        inc.losses.retain(|_, (times, _)| {
            while matches!(times.front(), Some(t) if now.duration_since(*t) > window) {
                times.pop_front();
            }
            !times.is_empty()
        });
        inc.losses
            .iter()
            .filter(|(_, (times, _))| times.len() >= threshold)
            .map(|(k, (times, attempt))| (k.clone(), times.len(), *attempt))
            .collect()
    }

    pub(crate) fn work_lock_lost_ack(&self) {
        self.work_lock_lost_acks.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn poison(&self) {
        self.poison.fetch_add(1, Ordering::Relaxed);
        self.incidents().poison.push(Instant::now());
    }

    pub(crate) fn deadlock(&self) {
        self.deadlocks.fetch_add(1, Ordering::Relaxed);
        self.incidents().deadlock.push(Instant::now());
    }

    pub(crate) fn orphaned_lock_released(&self) {
        self.orphaned_locks_released.fetch_add(1, Ordering::Relaxed);
    }

    /// The watchdog saw the livelock signature on `instance` (again).
    /// `first` says whether this is the first sighting, which counts.
    pub(crate) fn livelock_seen(&self, instance: &str, attempt: u32, first: bool) {
        if first {
            self.livelocks.fetch_add(1, Ordering::Relaxed);
        }
        self.incidents()
            .livelocked
            .insert(instance.to_string(), (Instant::now(), attempt));
    }

    /// `m` with the guard's counters (the fields after `provider_errors`) filled in.
    pub(crate) fn apply(&self, m: RuntimeMetrics) -> RuntimeMetrics {
        let orch = self.orch_fetch.percentiles();
        let wait = self.orch_fetch_wait.percentiles();
        let work = self.work_fetch.percentiles();
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed) as i64;
        RuntimeMetrics {
            invalid_lock_token_acks: n(&self.invalid_lock_acks),
            work_lock_lost_acks: n(&self.work_lock_lost_acks),
            poison_dispositions: n(&self.poison),
            deadlock_retries: n(&self.deadlocks),
            orphaned_locks_released: n(&self.orphaned_locks_released),
            livelocks_detected: n(&self.livelocks),
            orch_fetch_p50_ms: orch.map(|p| p.0),
            orch_fetch_p99_ms: orch.map(|p| p.1),
            orch_fetch_samples: orch.map_or(0, |p| p.2 as i64),
            orch_fetch_wait_p99_ms: wait.map(|p| p.1),
            work_fetch_p50_ms: work.map(|p| p.0),
            work_fetch_p99_ms: work.map(|p| p.1),
            work_fetch_samples: work.map_or(0, |p| p.2 as i64),
            ..m
        }
    }

    /// Why the runtime is degraded, from what happened within [`HEALTH_WINDOW`].
    pub(crate) fn degraded_reasons(&self) -> Vec<String> {
        let now = Instant::now();
        let mut reasons = Vec::new();
        let secs = HEALTH_WINDOW.as_secs();
        if let Some((_, p99, n)) = self.orch_fetch.percentiles() {
            if p99 > SLOW_FETCH_P99_MS {
                reasons.push(format!(
                    "orchestration fetch p99 is {p99:.0} ms over the last {secs} s ({n} fetches): \
                     dispatchers are queueing on the store"
                ));
            }
        }
        let mut inc = self.incidents();
        let lost = inc.invalid_lock.count_within(HEALTH_WINDOW, now);
        if lost > 0 {
            reasons.push(format!(
                "{lost} orchestration ack(s) failed with 'Invalid lock token' in the last {secs} s: \
                 leases expire before turns commit"
            ));
        }
        let deadlocks = inc.deadlock.count_within(HEALTH_WINDOW, now);
        if deadlocks > 0 {
            reasons.push(format!(
                "{deadlocks} store call(s) failed with a Postgres deadlock (40P01) in the last {secs} s"
            ));
        }
        let poison = inc.poison.count_within(HEALTH_WINDOW, now);
        if poison > 0 {
            reasons.push(format!(
                "{poison} message(s) failed as poison (exceeded maxAttempts) in the last {secs} s"
            ));
        }
        inc.livelocked
            .retain(|_, (seen, _)| now.duration_since(*seen) <= HEALTH_WINDOW);
        let mut live: Vec<_> = inc.livelocked.iter().collect();
        live.sort_by(|a, b| a.0.cmp(b.0));
        for (instance, (_, attempt)) in live {
            reasons.push(format!(
                "instance '{instance}' is livelocked (attempt {attempt}): its messages are retried \
                 without ever committing"
            ));
        }
        reasons
    }
}

/// `runtime.health().status`.
#[napi(string_enum = "lowercase")]
#[derive(Debug, PartialEq, Eq)]
pub enum HealthStatus {
    Ok,
    Degraded,
}

/// `runtime.health()`.
#[napi(object)]
pub struct RuntimeHealth {
    pub status: HealthStatus,
    /// Why it is degraded; empty when `ok`.
    pub reasons: Vec<String>,
    /// The provider's fast store paths (`provider.fastPaths()`).
    pub fast_paths: Option<FastPathsReport>,
}

impl RuntimeHealth {
    pub(crate) fn from_reasons(reasons: Vec<String>) -> Self {
        let status = if reasons.is_empty() {
            HealthStatus::Ok
        } else {
            HealthStatus::Degraded
        };
        Self {
            status,
            reasons,
            fast_paths: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_pick_ranks() {
        let w = LatencyWindow::default();
        assert!(w.percentiles().is_none());
        for ms in 1..=100 {
            w.record(Duration::from_millis(ms));
        }
        let (p50, p99, n) = w.percentiles().unwrap();
        assert_eq!(n, 100);
        assert!((p50 - 50.0).abs() < 0.5, "{p50}");
        assert!((p99 - 99.0).abs() < 0.5, "{p99}");
    }

    #[test]
    fn lock_losses_are_counted_per_instance() {
        let s = GuardStats::default();
        let w = Duration::from_secs(60);
        s.invalid_lock_ack("a", 1, w);
        s.invalid_lock_ack("a", 2, w);
        s.invalid_lock_ack("b", 1, w);
        let sustained = s.sustained_lock_losses(2, w);
        assert_eq!(sustained, vec![("a".to_string(), 2, 2)]);
        assert_eq!(
            s.apply(RuntimeMetrics::default()).invalid_lock_token_acks,
            3
        );
        assert!(s.degraded_reasons()[0].contains("Invalid lock token"));
    }

    #[test]
    fn quiet_runtime_is_healthy() {
        let s = GuardStats::default();
        s.orch_fetch.record(Duration::from_millis(3));
        assert!(s.degraded_reasons().is_empty());
        s.deadlock();
        s.livelock_seen("x", 13, true);
        let reasons = s.degraded_reasons();
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        assert!(reasons[1].contains("'x'") && reasons[1].contains("13"));
        assert_eq!(s.apply(RuntimeMetrics::default()).livelocks_detected, 1);
    }
}
