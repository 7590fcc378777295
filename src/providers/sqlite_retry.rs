//! Retries SQLite's transient "database is locked" errors below the runtime.
//!
//! duroxide's SQLite provider opens five pooled connections in WAL mode and
//! starts its transactions deferred. When two of them try to turn a read into
//! a write at once, SQLite answers `SQLITE_BUSY` (code 5) at once instead of
//! waiting out `busy_timeout` (waiting could deadlock), or `SQLITE_BUSY_SNAPSHOT`
//! (code 517) when another writer committed since the read began. Neither is
//! retried inside the provider. The runtime backs fetches off for up to 3 s
//! and retries an ack five times within about 300 ms; under load (4 orchestration
//! and 8 worker slots, thousands of instances) an ack can exhaust those
//! retries and its instance fails with an infrastructure error (measured: 1 in
//! 2,000 orchestrations).
//!
//! A busy error means the transaction did not commit (it is rolled back when
//! sqlx drops it), so running the whole call again is safe. We retry for up to
//! [`BUDGET`], with short jittered pauses, then hand the error to the runtime.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::{Provider, ProviderError};

use super::call_policy::{backoff, CallPolicy};
use super::layer::{Policy, Stacked};
use crate::provider_errors::ProviderFault;

/// How long one call keeps retrying busy errors before the runtime sees one.
const BUDGET: Duration = Duration::from_secs(5);
const FIRST_PAUSE: Duration = Duration::from_millis(2);
const MAX_PAUSE: Duration = Duration::from_millis(50);

#[derive(Default)]
pub(crate) struct BusyRetry {
    /// Retries made, for tests and diagnostics.
    retries: AtomicU64,
    /// Cheap jitter source, so colliding callers do not retry in lockstep.
    seed: AtomicU64,
}

#[cfg(test)]
impl BusyRetry {
    fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }
}

impl CallPolicy for BusyRetry {
    fn is_transient(&self, _op: &'static str, err: &ProviderError) -> bool {
        ProviderFault::is(err, ProviderFault::SqliteBusy)
    }

    fn budget(&self) -> Duration {
        BUDGET
    }

    fn pause(&self, retry: u32) -> Duration {
        let base = backoff(FIRST_PAUSE, MAX_PAUSE, retry);
        let x = self
            .seed
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_mul(0xBF58_476D_1CE4_E5B9);
        let jitter = (x >> 40) % (base.as_micros() as u64 + 1);
        base / 2 + Duration::from_micros(jitter / 2)
    }

    fn retrying(&self, _op: &'static str, _err: &ProviderError, _retry: u32) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }

    fn giving_up(&self, op: &'static str, _err: &ProviderError, retries: u32) {
        tracing::warn!(
            target: "duroxide_node::sqlite",
            operation = op,
            retries,
            "SQLite stayed busy for {} ms; handing the error to the runtime",
            BUDGET.as_millis()
        );
    }
}

/// Wraps a SQLite store so that busy errors are retried.
pub(crate) fn with_busy_retry(inner: Arc<dyn Provider>) -> Arc<dyn Provider> {
    Stacked::over(Policy(BusyRetry::default()), inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::call_policy::run;
    use std::sync::atomic::AtomicU32;

    fn busy() -> ProviderError {
        ProviderError::retryable(
            "ack_orchestration_item",
            "Database locked: error returned from database: (code: 517) database is locked",
        )
    }

    #[tokio::test]
    async fn busy_errors_are_retried_until_the_call_succeeds() {
        let policy = BusyRetry::default();
        let calls = AtomicU32::new(0);
        let r: Result<u32, ProviderError> = run(&policy, "ack_orchestration_item", || async {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            if n < 3 {
                Err(busy())
            } else {
                Ok(n)
            }
        })
        .await;
        assert_eq!(r.unwrap(), 3);
        assert_eq!(policy.retries(), 3);
    }

    #[tokio::test]
    async fn other_errors_are_returned_at_once() {
        let policy = BusyRetry::default();
        let calls = AtomicU32::new(0);
        let r: Result<(), ProviderError> = run(&policy, "read", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(ProviderError::permanent("read", "no such table"))
        })
        .await;
        assert!(r.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn pauses_stay_short() {
        let policy = BusyRetry::default();
        for attempt in 0..20 {
            assert!(policy.pause(attempt) <= MAX_PAUSE);
        }
    }
}
