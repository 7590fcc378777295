//! How each call of a decorated store (`decorator.rs`) runs: [`run`] is the
//! one loop, and a [`CallPolicy`] states only what differs between stores:
//! how long one attempt may wait, which errors are transient, how long they
//! are retried, the pauses between tries, and what is logged.

use std::future::Future;
use std::time::{Duration, Instant};

use duroxide::providers::ProviderError;

/// Every hook defaults to "no limit, no retry".
pub trait CallPolicy: Send + Sync + 'static {
    /// How long one attempt of `op` may wait for the store; `None` waits for
    /// as long as the store takes.
    fn deadline(&self, _op: &'static str) -> Option<Duration> {
        None
    }

    /// Errors after which running the call again is safe and worthwhile
    /// (the failed attempt did not commit).
    fn is_transient(&self, _err: &ProviderError) -> bool {
        false
    }

    /// How long after the first attempt began a transient error is still
    /// retried; after that the caller gets it.
    fn budget(&self) -> Duration {
        Duration::ZERO
    }

    /// The wait before retry number `retry` (counted from 0).
    fn pause(&self, _retry: u32) -> Duration {
        Duration::ZERO
    }

    /// Told before each retry.
    fn retrying(&self, _op: &'static str, _err: &ProviderError, _retry: u32) {}

    /// Told when a transient error outlasted the budget, after `retries` retries.
    fn giving_up(&self, _op: &'static str, _err: &ProviderError, _retries: u32) {}
}

/// Runs `call` under `policy`. `call` may be invoked more than once (a
/// retry), so it clones its owned arguments each time.
pub async fn run<P, T, F, Fut>(policy: &P, op: &'static str, call: F) -> Result<T, ProviderError>
where
    P: CallPolicy + ?Sized,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let started = Instant::now();
    let mut retry = 0u32;
    loop {
        let result = match policy.deadline(op) {
            None => call().await,
            Some(limit) => match tokio::time::timeout(limit, call()).await {
                Ok(r) => r,
                Err(_) => Err(ProviderError::retryable(
                    op,
                    format!(
                        "the store did not answer within {} ms: the database is unreachable \
                         or its connection pool is exhausted",
                        limit.as_millis()
                    ),
                )),
            },
        };
        let err = match result {
            Err(e) if policy.is_transient(&e) => e,
            other => return other,
        };
        if started.elapsed() >= policy.budget() {
            policy.giving_up(op, &err, retry);
            return Err(err);
        }
        policy.retrying(op, &err, retry);
        tokio::time::sleep(policy.pause(retry)).await;
        retry = retry.saturating_add(1);
    }
}

/// `first`, doubled on each retry, at most `max`.
pub fn backoff(first: Duration, max: Duration, retry: u32) -> Duration {
    first.saturating_mul(1 << retry.min(16)).min(max)
}
