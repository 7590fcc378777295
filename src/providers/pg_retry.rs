//! Retries Postgres calls whose connection was terminated under them.
//!
//! When a backend is terminated (`pg_terminate_backend`, a fast or immediate
//! shutdown, a crash of another backend), Postgres answers the statement in
//! flight with SQLSTATE 57P01/57P02, and refuses new sessions with 57P03
//! while it shuts down or starts. duroxide-pg classifies these as permanent
//! database errors, and the runtime answers a permanent error from an
//! orchestration ack by committing an infrastructure failure for the
//! instance, on another pooled connection that is still alive: one killed
//! connection failed an orchestration for good (seen in the fault suite's
//! Postgres restart test).
//!
//! Such a statement did not commit (the transaction aborts with its session),
//! so running the call again on a fresh connection is safe, with one
//! exception: an immediate shutdown or a crash may end a session after its
//! commit reached the disk and before the answer was sent. A call whose
//! repetition is harmless (a fetch, an ack: its lock token is gone once it
//! committed) runs again; an enqueue, which would deliver its message twice,
//! runs again only when the session was refused before it ran anything
//! (the server starting or stopping, a failed TLS handshake), and otherwise
//! returns the error as the crate does. We retry for up to [`BUDGET`], then
//! hand the error to the runtime. A new session that fails
//! its TLS handshake during a restart counts too: nothing was sent on it.
//! I/O errors are left alone:
//! duroxide-pg already marks them retryable and the runtime retries them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::{Provider, ProviderError};

use super::call_policy::{backoff, CallPolicy};
use super::layer::{Policy, Stacked};
use crate::provider_errors::ProviderFault;

const BUDGET: Duration = Duration::from_secs(10);
const FIRST_PAUSE: Duration = Duration::from_millis(20);
const MAX_PAUSE: Duration = Duration::from_millis(500);

#[derive(Default)]
pub(crate) struct TerminatedRetry {
    retries: AtomicU64,
}

#[cfg(test)]
impl TerminatedRetry {
    fn retries(&self) -> u64 {
        self.retries.load(Ordering::Relaxed)
    }
}

impl CallPolicy for TerminatedRetry {
    fn is_transient(&self, op: &'static str, err: &ProviderError) -> bool {
        match op {
            "enqueue_for_orchestrator" | "enqueue_for_worker" => ProviderFault::never_ran(err),
            _ => ProviderFault::is(err, ProviderFault::Terminated),
        }
    }

    fn budget(&self) -> Duration {
        BUDGET
    }

    fn pause(&self, retry: u32) -> Duration {
        backoff(FIRST_PAUSE, MAX_PAUSE, retry)
    }

    fn retrying(&self, op: &'static str, err: &ProviderError, retry: u32) {
        self.retries.fetch_add(1, Ordering::Relaxed);
        // Once per call: a restart would otherwise log every pause.
        if retry == 0 {
            tracing::warn!(
                target: "duroxide_node::postgres",
                operation = op,
                error = %err,
                "the Postgres session running {op} was terminated; running it again on another connection"
            );
        }
    }
}

/// Wraps a Postgres store so that calls cut off by a terminated session run again.
pub(crate) fn with_terminated_retry(inner: Arc<dyn Provider>) -> Arc<dyn Provider> {
    Stacked::over(Policy(TerminatedRetry::default()), inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::call_policy::run;
    use std::sync::atomic::AtomicU32;

    #[tokio::test]
    async fn a_terminated_statement_runs_again() {
        let policy = TerminatedRetry::default();
        let calls = AtomicU32::new(0);
        let r: Result<u32, ProviderError> = run(&policy, "ack_orchestration_item", || async {
            if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                Err(ProviderError::permanent(
                    "ack_orchestration_item",
                    "Database error: error returned from database: terminating connection \
                         due to administrator command",
                ))
            } else {
                Ok(7)
            }
        })
        .await;
        assert_eq!(r.unwrap(), 7);
        assert_eq!(policy.retries(), 1);
    }

    #[tokio::test]
    async fn other_errors_are_not_retried() {
        let policy = TerminatedRetry::default();
        let calls = AtomicU32::new(0);
        let r: Result<(), ProviderError> = run(&policy, "ack_orchestration_item", || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err(ProviderError::permanent(
                "ack_orchestration_item",
                "Invalid lock token",
            ))
        })
        .await;
        assert!(r.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}
