//! An instance's status in one query.
//!
//! duroxide's `Client::get_orchestration_status` is two store calls: the
//! current execution's whole history (scanned from its end for a terminal
//! event), then the custom status. The waits of a client that starts and
//! awaits orchestrations made those two calls, plus an info read, for every
//! instance: a third of all the store calls of a hello orchestration.
//!
//! The current execution's row says the same in one row, because the ack
//! that appends a terminal event writes the execution's status from that
//! same event in the same transaction: `Completed` with the
//! `OrchestrationCompleted` output, `Running` or `ContinuedAsNew` (whose
//! history ends without a terminal event) for an instance that runs.
//! Everything else goes to duroxide's read, so the answer stays exactly its
//! own: a failure (the row keeps only the display message, and a poisoned
//! execution may be marked failed with no failure event in its history), a
//! status this module does not know, an instance without an execution row,
//! and any error of the query.

use duroxide::providers::ProviderError;
use duroxide::runtime::OrchestrationStatus;
use duroxide::{Client, ClientError};
use sqlx::SqlitePool;

use super::bounded::CALL_TIMEOUT;
use crate::providers::fast_paths::FastPath;
use crate::providers::kept::KeptConnections;
use crate::providers::Backend;

/// The current execution's status and output, and the instance's custom
/// status with its version.
type Row = (String, Option<String>, Option<String>, Option<i64>);

async fn row_postgres(
    kept: &KeptConnections,
    schema: &str,
    instance_id: &str,
) -> Result<Option<Row>, sqlx::Error> {
    // `schema` was validated as a plain identifier at connect time. The
    // current execution is the highest one, as duroxide-pg's history read
    // takes it.
    let sql = format!(
        "SELECT e.status, e.output, i.custom_status, i.custom_status_version::BIGINT \
         FROM {schema}.executions e \
         LEFT JOIN {schema}.instances i ON i.instance_id = e.instance_id \
         WHERE e.instance_id = $1 \
         ORDER BY e.execution_id DESC LIMIT 1"
    );
    kept.fetch_optional(sqlx::query_as(&sql).bind(instance_id))
        .await
}

async fn row_sqlite(pool: &SqlitePool, instance_id: &str) -> Result<Option<Row>, sqlx::Error> {
    sqlx::query_as(
        "SELECT e.status, e.output, i.custom_status, i.custom_status_version \
         FROM executions e \
         LEFT JOIN instances i ON i.instance_id = e.instance_id \
         WHERE e.instance_id = ? \
         ORDER BY e.execution_id DESC LIMIT 1",
    )
    .bind(instance_id)
    .fetch_optional(pool)
    .await
}

/// What the row says, or `None` when duroxide's read must answer.
fn from_row(row: Row) -> Option<OrchestrationStatus> {
    let (status, output, custom_status, version) = row;
    // duroxide's status read takes the custom status only once it was set
    // (version above 0).
    let (custom_status, custom_status_version) = match version {
        Some(v) if v > 0 => (custom_status, v as u64),
        _ => (None, 0),
    };
    match status.as_str() {
        "Completed" => Some(OrchestrationStatus::Completed {
            output: output?,
            custom_status,
            custom_status_version,
        }),
        "Running" | "ContinuedAsNew" => Some(OrchestrationStatus::Running {
            custom_status,
            custom_status_version,
        }),
        _ => None,
    }
}

/// The row's answer; `Ok(None)` when duroxide's read must answer.
async fn quick(
    backend: &Backend,
    instance_id: &str,
) -> Result<Option<OrchestrationStatus>, ClientError> {
    if !backend.uses(FastPath::StatusRead) {
        return Ok(None);
    }
    let query = async {
        match backend {
            Backend::Sqlite { pool, .. } => row_sqlite(pool, instance_id).await,
            Backend::Postgres {
                client_kept,
                schema,
                ..
            } => row_postgres(client_kept, schema, instance_id).await,
        }
    };
    match tokio::time::timeout(CALL_TIMEOUT, query).await {
        Ok(Ok(row)) => Ok(row.and_then(from_row)),
        // duroxide's read reports the store's errors as its own calls do,
        // through the retry layers.
        Ok(Err(_)) => Ok(None),
        Err(_) => Err(ClientError::Provider(ProviderError::retryable(
            "get_orchestration_status",
            format!(
                "the store did not answer within {} ms: the database is unreachable or its \
                 connection pool is exhausted",
                CALL_TIMEOUT.as_millis()
            ),
        ))),
    }
}

/// The instance's status as `Client::get_orchestration_status` reads it.
pub(crate) async fn read(
    client: &Client,
    backend: &Backend,
    instance_id: &str,
) -> Result<OrchestrationStatus, ClientError> {
    match quick(backend, instance_id).await? {
        Some(status) => Ok(status),
        None => client.get_orchestration_status(instance_id).await,
    }
}

#[cfg(test)]
mod tests;
