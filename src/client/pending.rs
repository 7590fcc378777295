//! What waits in the orchestrator queue for an instance that has no history
//! yet: a start nobody has picked up. duroxide makes an instance visible only
//! after its first turn, so `waitForOrchestration` on a start whose
//! orchestration no runtime registers (a misspelt name) used to say "nothing
//! with this id was started", which is false. The queue says what was started.
//!
//! Read-only queries on the store's own pool; the provider trait has no way
//! to peek at a queue.

use std::time::Duration;

use duroxide::providers::WorkItem;
use duroxide::runtime::OrchestrationStatus;
use sqlx::{PgPool, SqlitePool};

use super::NativeClient;
use crate::errors::BridgeError;
use crate::providers::Backend;

/// How long the look into the store may add to a wait that ran out.
const DIAGNOSIS: Duration = Duration::from_secs(3);

/// `StartOrchestration` message waiting for an instance that has not run yet.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct PendingStart {
    /// The orchestration name the start asks for.
    pub orchestration_name: String,
    /// The version it asks for; absent means "the latest registered".
    pub version: Option<String>,
}

/// The first start message among an instance's queued work items.
fn first_start(rows: Vec<String>) -> Option<PendingStart> {
    rows.iter()
        .find_map(|text| match serde_json::from_str::<WorkItem>(text).ok()? {
            WorkItem::StartOrchestration {
                orchestration,
                version,
                ..
            } => Some(PendingStart {
                orchestration_name: orchestration,
                version,
            }),
            _ => None,
        })
}

/// At most this many queued messages are read; a start is the first message
/// of an instance that never ran.
const ROWS: i64 = 20;

async fn queued_postgres(
    pool: &PgPool,
    schema: &str,
    instance_id: &str,
    rows: i64,
) -> Result<Vec<Queued>, sqlx::Error> {
    // `schema` was validated as a plain identifier at connect time.
    let sql = format!(
        "SELECT id, work_item FROM {schema}.orchestrator_queue WHERE instance_id = $1 ORDER BY id LIMIT $2"
    );
    sqlx::query_as(&sql)
        .bind(instance_id)
        .bind(rows)
        .fetch_all(pool)
        .await
}

async fn queued_sqlite(
    pool: &SqlitePool,
    instance_id: &str,
    rows: i64,
) -> Result<Vec<Queued>, sqlx::Error> {
    sqlx::query_as(
        "SELECT id, work_item FROM orchestrator_queue WHERE instance_id = ? ORDER BY id LIMIT ?",
    )
    .bind(instance_id)
    .bind(rows)
    .fetch_all(pool)
    .await
}

/// A queued message: its row id and its work item as stored (JSON text).
pub(super) type Queued = (i64, String);

/// The first `rows` messages queued for `instance_id`.
pub(super) async fn queued(
    backend: &Backend,
    instance_id: &str,
    rows: i64,
) -> Result<Vec<Queued>, sqlx::Error> {
    match backend {
        Backend::Sqlite { pool, .. } => queued_sqlite(pool, instance_id, rows).await,
        Backend::Postgres { pool, schema, .. } => {
            queued_postgres(pool, schema, instance_id, rows).await
        }
    }
}

/// The start waiting in the queue for `instance_id`, if any.
pub(super) async fn pending_start(
    backend: &Backend,
    instance_id: &str,
) -> Result<Option<PendingStart>, sqlx::Error> {
    let rows = queued(backend, instance_id, ROWS).await?;
    Ok(first_start(
        rows.into_iter().map(|(_, text)| text).collect(),
    ))
}

impl NativeClient {
    /// The error of a `waitForOrchestration` that ran out of time. An
    /// instance with no history either was never started (`ERR_NOT_FOUND`)
    /// or has a start waiting that no runtime picked up (`ERR_TIMEOUT`, naming
    /// the orchestration and whether a running runtime here registers it). A
    /// running one's message says what it waits for (`waiting.rs`).
    pub(super) async fn unfinished(&self, instance_id: &str, timeout_ms: f64) -> BridgeError {
        let timed_out = || {
            BridgeError::Timeout(format!(
                "instance '{instance_id}' did not finish within {timeout_ms} ms"
            ))
        };
        let look = async {
            match self.inner.get_orchestration_status(instance_id).await {
                Ok(OrchestrationStatus::NotFound) => {}
                Ok(OrchestrationStatus::Running { .. }) => {
                    let why = self.blocked(instance_id).await?;
                    return Some(BridgeError::Timeout(format!(
                        "instance '{instance_id}' did not finish within {timeout_ms} ms: {why}"
                    )));
                }
                _ => return None,
            }
            if let Ok(Some(start)) = pending_start(&self.backend, instance_id).await {
                return Some(self.waiting_start(instance_id, timeout_ms, &start));
            }
            // The first turn may have committed (taking the start off the
            // queue) between the status read and the queue read: only a
            // second NotFound means nothing was started.
            match self.inner.get_orchestration_status(instance_id).await {
                Ok(OrchestrationStatus::NotFound) => Some(
                    self.missing(
                        instance_id,
                        &format!("waitForOrchestration('{instance_id}')"),
                    )
                    .await,
                ),
                _ => None,
            }
        };
        tokio::time::timeout(DIAGNOSIS, look)
            .await
            .ok()
            .flatten()
            .unwrap_or_else(timed_out)
    }

    fn waiting_start(
        &self,
        instance_id: &str,
        timeout_ms: f64,
        start: &PendingStart,
    ) -> BridgeError {
        let name = &start.orchestration_name;
        let version = start
            .version
            .as_ref()
            .map(|v| format!(" version {v}"))
            .unwrap_or_default();
        let (running, names) = self.local.registered();
        let why = if names.contains(name) {
            format!(
                "a runtime in this process registers '{name}' but has not run it yet (busy, \
                 or{version} not registered)"
            )
        } else if running == 0 {
            "no runtime in this process is running on this provider to pick it up".to_string()
        } else {
            let listed: Vec<&str> = names.iter().map(String::as_str).collect();
            format!(
                "no runtime in this process registers '{name}' (they register: {}); check the \
                 name given to startOrchestration",
                listed.join(", ")
            )
        };
        BridgeError::Timeout(format!(
            "instance '{instance_id}' did not start within {timeout_ms} ms: its start for \
             orchestration '{name}'{version} waits in the queue, and {why}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(name: &str, version: Option<&str>) -> String {
        serde_json::to_string(&WorkItem::StartOrchestration {
            instance: "i".into(),
            orchestration: name.into(),
            input: "null".into(),
            version: version.map(Into::into),
            parent_instance: None,
            parent_id: None,
            parent_execution_id: None,
            execution_id: 1,
        })
        .unwrap()
    }

    #[test]
    fn the_start_message_names_the_orchestration() {
        let raise = serde_json::to_string(&WorkItem::ExternalRaised {
            instance: "i".into(),
            name: "go".into(),
            data: "1".into(),
        })
        .unwrap();
        assert_eq!(
            first_start(vec![raise.clone(), start("Fullfil", None)]),
            Some(PendingStart {
                orchestration_name: "Fullfil".into(),
                version: None
            })
        );
        assert_eq!(first_start(vec![raise]), None);
        assert_eq!(first_start(vec!["not json".into()]), None);
    }
}
