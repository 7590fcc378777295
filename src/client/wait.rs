//! Waiting for an instance's end.
//!
//! A status read (`Client::get_orchestration_status`) is the instance's
//! whole history plus its custom status: a client waiting on a long
//! orchestration read its growing history at every poll, ten times a second,
//! and a fleet's API processes waiting on thousands of instances made that
//! most of the database's work. The instance's info row (one row, the status
//! of its current execution, written by the same ack as the history) says
//! whether the instance is still running; the history is read only when the
//! row does not say so, and whenever the row cannot be read (an instance not
//! started yet, a store without the management capability).

use std::sync::Arc;
use std::time::Duration;

use duroxide::runtime::OrchestrationStatus;
use duroxide::{Client, ClientError};

use crate::providers::wakeup::ended::Endings;

/// Status polls of a wait start this far apart and double up to
/// [`MAX_POLL`], as duroxide's own wait does; an end in this process wakes the
/// wait at once (`providers/wakeup/ended.rs`).
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

/// Whether the instance's info row says it is still running.
async fn still_running(client: &Client, instance_id: &str) -> bool {
    match client.get_instance_info(instance_id).await {
        Ok(info) => matches!(info.status.as_str(), "Running" | "ContinuedAsNew"),
        Err(_) => false,
    }
}

/// Reads the status until it is terminal; the caller bounds the time.
pub(crate) async fn terminal(
    client: &Client,
    endings: &Arc<Endings>,
    instance_id: &str,
) -> Result<OrchestrationStatus, ClientError> {
    let watch = endings.watch(instance_id);
    let mut poll = FIRST_POLL;
    loop {
        let ended = watch.notify().notified();
        tokio::pin!(ended);
        ended.as_mut().enable();
        if !still_running(client, instance_id).await {
            let status = client.get_orchestration_status(instance_id).await?;
            if matches!(
                status,
                OrchestrationStatus::Completed { .. } | OrchestrationStatus::Failed { .. }
            ) {
                return Ok(status);
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
