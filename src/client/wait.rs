//! Waiting for an instance's end.
//!
//! Each look is one status read (`status.rs`): the execution row answers for
//! a running or completed instance, so a client waiting on a long
//! orchestration does not read its growing history at every poll (a fleet's
//! API processes waiting on thousands of instances made that most of the
//! database's work). Looks start [`FIRST_POLL`] apart and double up to
//! [`MAX_POLL`]; an end in this process wakes the wait at once.

use std::sync::Arc;
use std::time::Duration;

use duroxide::runtime::OrchestrationStatus;
use duroxide::{Client, ClientError};

use super::status;
use crate::providers::wakeup::ended::Endings;
use crate::providers::Backend;

/// As duroxide's own wait polls; an end in this process wakes the wait at
/// once (`providers/wakeup/ended.rs`).
const FIRST_POLL: Duration = Duration::from_millis(5);
const MAX_POLL: Duration = Duration::from_millis(100);

/// Ends a wait at its deadline. duroxide's waits sleep between polls without
/// cutting the last sleep at the deadline, and each status read may itself
/// take up to the client's call bound (`bounded.rs`, 10 s) on a slow store, so
/// a wait could run seconds past the timeout its caller gave.
pub(crate) async fn within<T>(
    timeout: Duration,
    wait: impl std::future::Future<Output = Result<T, ClientError>>,
) -> Result<T, ClientError> {
    tokio::time::timeout(timeout, wait)
        .await
        .unwrap_or(Err(ClientError::Timeout))
}

/// Reads the status until it is terminal; the caller bounds the time. When
/// the first read finds no instance, `missing()` says whether it does not
/// exist at all (then `None`: nothing to wait for), so an instance that
/// exists costs no further look.
pub(crate) async fn terminal<M, F>(
    client: &Client,
    backend: &Backend,
    endings: &Arc<Endings>,
    instance_id: &str,
    missing: M,
) -> Result<Option<OrchestrationStatus>, ClientError>
where
    M: FnOnce() -> F,
    F: std::future::Future<Output = bool>,
{
    let watch = endings.watch(instance_id);
    let mut poll = FIRST_POLL;
    let mut missing = Some(missing);
    loop {
        let ended = watch.notify().notified();
        tokio::pin!(ended);
        ended.as_mut().enable();
        let status = status::read(client, backend, instance_id).await?;
        if matches!(
            status,
            OrchestrationStatus::Completed { .. } | OrchestrationStatus::Failed { .. }
        ) {
            return Ok(Some(status));
        }
        if let Some(missing) = missing.take() {
            if matches!(status, OrchestrationStatus::NotFound) && missing().await {
                return Ok(None);
            }
        }
        tokio::select! {
            _ = ended => {}
            _ = tokio::time::sleep(poll) => poll = (poll * 2).min(MAX_POLL),
        }
    }
}

#[cfg(test)]
mod tests;
