//! How each call through a layer of the stack (`layer.rs`) runs: [`run`] is
//! the one loop, and a [`CallPolicy`] states only what differs between
//! layers: which lock an attempt holds, how long one attempt may wait, which
//! errors are transient, how long they are retried, the pauses between
//! tries, and who is told of failures.

use std::future::Future;
use std::time::{Duration, Instant};

use duroxide::providers::ProviderError;

/// Every hook defaults to "no lock, no limit, no retry, nobody told".
pub(crate) trait CallPolicy: Send + Sync + 'static {
    /// A lock each attempt of `op` holds while it runs, taken in turn
    /// (first come, first served) and counted in its deadline.
    fn exclusive(&self, _op: &'static str) -> Option<&tokio::sync::Mutex<()>> {
        None
    }

    /// How long one attempt of `op` may wait for the store; `None` waits for
    /// as long as the store takes.
    fn deadline(&self, _op: &'static str) -> Option<Duration> {
        None
    }

    /// Errors of `op` after which running the call again is safe and
    /// worthwhile (the failed attempt did not commit).
    fn is_transient(&self, _op: &'static str, _err: &ProviderError) -> bool {
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

    /// Told of every failed attempt, transient or not (the guard counts
    /// deadlocks here).
    fn failed(&self, _op: &'static str, _err: &ProviderError) {}

    /// Told before each retry.
    fn retrying(&self, _op: &'static str, _err: &ProviderError, _retry: u32) {}

    /// Told when a transient error outlasted the budget, after `retries` retries.
    fn giving_up(&self, _op: &'static str, _err: &ProviderError, _retries: u32) {}
}

/// The policy of a layer that changes nothing about how calls run.
pub(crate) struct Once;

impl CallPolicy for Once {}

/// Runs `call` under `policy`. `call` may be invoked more than once (a
/// retry), so it clones its owned arguments each time.
///
/// The first attempt is created before this returns, not when the returned
/// future is first polled: a layer whose method starts its work when called
/// (the guard's abandons) still starts it if the caller drops the future.
pub(crate) fn run<'a, P, T, F, Fut>(
    policy: &'a P,
    op: &'static str,
    call: F,
) -> impl Future<Output = Result<T, ProviderError>> + 'a
where
    P: CallPolicy + ?Sized,
    F: Fn() -> Fut + 'a,
    Fut: Future<Output = Result<T, ProviderError>> + 'a,
    T: 'a,
{
    let first = call();
    async move {
        let started = Instant::now();
        let mut retry = 0u32;
        let mut attempt = Some(first);
        loop {
            let next = match attempt.take() {
                Some(f) => f,
                None => call(),
            };
            let err = match bounded(policy, op, next).await {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
            policy.failed(op, &err);
            if !policy.is_transient(op, &err) {
                return Err(err);
            }
            if started.elapsed() >= policy.budget() {
                policy.giving_up(op, &err, retry);
                return Err(err);
            }
            policy.retrying(op, &err, retry);
            tokio::time::sleep(policy.pause(retry)).await;
            retry = retry.saturating_add(1);
        }
    }
}

/// [`run`] for a policy that never retries (no budget): `call` is the one
/// attempt, so its arguments were moved into it rather than cloned.
pub(crate) async fn run_once<P, T, Fut>(
    policy: &P,
    op: &'static str,
    call: Fut,
) -> Result<T, ProviderError>
where
    P: CallPolicy + ?Sized,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let r = bounded(policy, op, call).await;
    if let Err(e) = &r {
        policy.failed(op, e);
    }
    r
}

async fn bounded<P, T, Fut>(policy: &P, op: &'static str, call: Fut) -> Result<T, ProviderError>
where
    P: CallPolicy + ?Sized,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let call = async {
        let _held = match policy.exclusive(op) {
            Some(lock) => Some(lock.lock().await),
            None => None,
        };
        call.await
    };
    match policy.deadline(op) {
        None => call.await,
        Some(limit) => match tokio::time::timeout(limit, call).await {
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
    }
}

/// `first`, doubled on each retry, at most `max`.
pub(crate) fn backoff(first: Duration, max: Duration, retry: u32) -> Duration {
    first.saturating_mul(1 << retry.min(16)).min(max)
}
