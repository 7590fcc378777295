//! `client.listSetAside()`: the queue messages set aside as unreadable
//! (`providers/contain.rs`), for the CLI and the dashboard.

use napi_derive::napi;

use super::NativeClient;
use crate::errors::{BridgeError, Settled};
use crate::providers::contain;
use crate::providers::Backend;

/// A message set aside: still in its queue, never fetched.
#[napi(object)]
pub struct SetAsideMessage {
    /// `'orchestrator'` or `'worker'`.
    pub queue: String,
    /// The message's row id in its queue.
    pub id: i64,
    pub instance_id: String,
    /// Why no fetch can read it (or that it reads now, after an upgrade).
    pub reason: String,
    /// The stored text, at most 4,096 characters.
    pub text: String,
}

const SHOWN: usize = 4096;

/// Rows of one queue whose `visible_at` is the end of time.
async fn rows(
    backend: &Backend,
    queue: contain::Queue,
) -> Result<Vec<SetAsideMessage>, sqlx::Error> {
    let table = match queue {
        contain::Queue::Orchestrator => "orchestrator_queue",
        contain::Queue::Worker => "worker_queue",
    };
    let (found, postgres): (Vec<(i64, Option<String>, String)>, bool) = match backend {
        Backend::Postgres { pool, schema, .. } => (
            sqlx::query_as(&format!(
                "SELECT id, instance_id, work_item FROM {schema}.{table} \
                 WHERE visible_at = 'infinity' ORDER BY id"
            ))
            .fetch_all(pool)
            .await?,
            true,
        ),
        Backend::Sqlite { pool, .. } => (
            sqlx::query_as(&format!(
                "SELECT id, instance_id, work_item FROM {table} WHERE visible_at = ?1 ORDER BY id"
            ))
            .bind(i64::MAX)
            .fetch_all(pool)
            .await?,
            false,
        ),
    };
    Ok(found
        .into_iter()
        .map(|(id, instance, text)| SetAsideMessage {
            queue: queue.as_str().to_string(),
            id,
            instance_id: instance.unwrap_or_default(),
            reason: contain::unreadable(&text, postgres)
                .unwrap_or_else(|| "it reads now (set aside by an earlier version?)".into()),
            text: text.chars().take(SHOWN).collect(),
        })
        .collect())
}

#[napi]
impl NativeClient {
    /// Every message set aside as unreadable, orchestrator queue first.
    #[napi(ts_return_type = "Promise<SetAsideMessage[]>")]
    pub async fn list_set_aside(&self) -> Settled<Vec<SetAsideMessage>> {
        Settled::of(async {
            let mut all = Vec::new();
            for queue in [contain::Queue::Orchestrator, contain::Queue::Worker] {
                all.extend(rows(&self.backend, queue).await.map_err(|e| {
                    BridgeError::Provider(format!("cannot list set-aside messages: {e}"))
                })?);
            }
            Ok(all)
        })
        .await
    }
}
