//! Whether an instance exists: it is stored (a runtime ran its first turn),
//! or its start waits in the orchestrator queue (duroxide stores an instance
//! only at its first turn, so right after `startOrchestration` the queue is
//! the only place it is), or neither.
//!
//! A call on an instance that is neither (a misspelt id) rejects
//! `ERR_NOT_FOUND` at once, naming the stored or queued ids closest to the
//! one given. The ids a client started itself are remembered
//! ([`Started`]), so waiting on an instance just started costs no look into
//! the queue.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

use napi_derive::napi;
use sqlx::{PgPool, SqlitePool};

use super::{pending, NativeClient};
use crate::errors::{BridgeError, BridgeResult, Settled};
use crate::options::distance;
use crate::providers::Backend;
use crate::rules;
use crate::trace_context::TraceContext;

/// Where an instance is.
#[napi(string_enum = "lowercase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstanceStateName {
    /// It has a history (running or ended).
    Stored,
    /// Its start waits for a runtime's first turn.
    Queued,
    /// Nothing with this id was started.
    Missing,
}

/// `instanceState()`: where the instance is, and the orchestration it runs
/// or its queued start asks for.
#[napi(object)]
pub struct InstanceState {
    pub state: InstanceStateName,
    pub orchestration_name: Option<String>,
}

/// What a typed start does when the instance already exists.
#[napi(string_enum = "camelCase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IfExists {
    /// Reject with `ERR_ALREADY_EXISTS`.
    Reject,
    /// Keep the existing instance when it runs the same orchestration (an
    /// idempotent start); reject when it runs another one.
    UseExisting,
}

/// Ids a client started, at most [`Started::CAPACITY`], oldest forgotten first.
#[derive(Default)]
pub(crate) struct Started(Mutex<(HashSet<String>, VecDeque<String>)>);

impl Started {
    const CAPACITY: usize = 4096;

    pub(crate) fn add(&self, id: &str) {
        let mut s = self.0.lock().expect("started ids");
        if s.0.insert(id.to_string()) {
            s.1.push_back(id.to_string());
            if s.1.len() > Self::CAPACITY {
                if let Some(old) = s.1.pop_front() {
                    s.0.remove(&old);
                }
            }
        }
    }

    pub(crate) fn forget(&self, id: &str) {
        let mut s = self.0.lock().expect("started ids");
        if s.0.remove(id) {
            s.1.retain(|x| x != id);
        }
    }

    pub(crate) fn contains(&self, id: &str) -> bool {
        self.0.lock().expect("started ids").0.contains(id)
    }
}

/// Ids compared at most for "did you mean": the most recently created ones.
const CANDIDATES: i64 = 10_000;
/// Close ids named at most.
const SUGGESTED: usize = 3;

async fn candidates_postgres(
    pool: &PgPool,
    schema: &str,
    len: i64,
) -> Result<Vec<String>, sqlx::Error> {
    // `schema` was validated as a plain identifier at connect time.
    let sql = format!(
        "(SELECT instance_id FROM {schema}.instances \
          WHERE length(instance_id) BETWEEN $1 - 3 AND $1 + 3 \
          ORDER BY created_at DESC LIMIT $2) \
         UNION \
         (SELECT instance_id FROM {schema}.orchestrator_queue \
          WHERE length(instance_id) BETWEEN $1 - 3 AND $1 + 3 LIMIT $2)"
    );
    let rows: Vec<(String,)> = sqlx::query_as(&sql)
        .bind(len as i32)
        .bind(CANDIDATES)
        .fetch_all(pool)
        .await?;
    Ok(rows.into_iter().map(|r| r.0).collect())
}

async fn candidates_sqlite(pool: &SqlitePool, len: i64) -> Result<Vec<String>, sqlx::Error> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT instance_id FROM (SELECT instance_id FROM instances \
           WHERE length(instance_id) BETWEEN ?1 - 3 AND ?1 + 3 \
           ORDER BY created_at DESC LIMIT ?2) \
         UNION \
         SELECT instance_id FROM (SELECT instance_id FROM orchestrator_queue \
           WHERE length(instance_id) BETWEEN ?1 - 3 AND ?1 + 3 LIMIT ?2)",
    )
    .bind(len)
    .bind(CANDIDATES)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|r| r.0).collect())
}

/// The ids among `candidates` close enough to `id` to be what was meant,
/// closest first.
pub(crate) fn closest(id: &str, candidates: Vec<String>) -> Vec<String> {
    let allowed = (id.chars().count().max(8) / 4).max(1);
    let mut close: Vec<(usize, String)> = candidates
        .into_iter()
        .filter(|c| c != id)
        .map(|c| (distance(id, &c), c))
        .filter(|(d, _)| *d <= allowed)
        .collect();
    close.sort();
    close.dedup_by(|a, b| a.1 == b.1);
    close.into_iter().take(SUGGESTED).map(|(_, c)| c).collect()
}

impl NativeClient {
    /// The stored or queued ids closest to `id`.
    async fn close_ids(&self, id: &str) -> Vec<String> {
        let len = id.chars().count() as i64;
        let found = match &self.backend {
            Backend::Sqlite { pool, .. } => candidates_sqlite(pool, len).await,
            Backend::Postgres { pool, schema, .. } => candidates_postgres(pool, schema, len).await,
        };
        closest(id, found.unwrap_or_default())
    }

    /// `ERR_NOT_FOUND` for `id`, which is neither stored nor queued; `what`
    /// names the call.
    pub(crate) async fn missing(&self, id: &str, what: &str) -> BridgeError {
        let close = self.close_ids(id).await;
        let hint = match close.as_slice() {
            [] => String::new(),
            [one] => format!(" (did you mean '{one}'?)"),
            many => format!(
                " (did you mean one of {}?)",
                many.iter()
                    .map(|c| format!("'{c}'"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        BridgeError::NotFound(format!(
            "{what}: instance '{id}' not found: nothing with this id is stored or waiting to \
             start{hint}"
        ))
    }

    /// Where `id` is; with `what`, a missing instance is `ERR_NOT_FOUND`.
    pub(crate) async fn state_of(
        &self,
        id: &str,
        what: Option<&str>,
    ) -> BridgeResult<InstanceStateName> {
        Ok(self.state(id, what).await?.state)
    }

    async fn state(&self, id: &str, what: Option<&str>) -> BridgeResult<InstanceState> {
        let stored = |name| InstanceState {
            state: InstanceStateName::Stored,
            orchestration_name: Some(name),
        };
        match self.inner.get_instance_info(id).await {
            Ok(info) => return Ok(stored(info.orchestration_name)),
            Err(e) => match super::management::not_found(e, String::new) {
                BridgeError::NotFound(_) => {}
                other => return Err(other),
            },
        }
        if let Ok(Some(start)) = pending::pending_start(&self.backend, id).await {
            return Ok(InstanceState {
                state: InstanceStateName::Queued,
                orchestration_name: Some(start.orchestration_name),
            });
        }
        // The first turn may have committed (taking the start off the queue)
        // between the two reads: only a second miss means nothing was started.
        match self.inner.get_instance_info(id).await {
            Ok(info) => Ok(stored(info.orchestration_name)),
            Err(_) => match what {
                Some(what) => Err(self.missing(id, what).await),
                None => Ok(InstanceState {
                    state: InstanceStateName::Missing,
                    orchestration_name: None,
                }),
            },
        }
    }

    /// Whether `id`, which has no status, neither was started by this client
    /// nor waits in the queue; false when the store cannot say.
    pub(crate) async fn absent(&self, id: &str) -> bool {
        !self.started.contains(id)
            && matches!(
                self.state(id, None).await,
                Ok(InstanceState {
                    state: InstanceStateName::Missing,
                    ..
                })
            )
    }
}

#[napi]
impl NativeClient {
    /// Starts `name` as `instance_id` unless the id exists. Resolves `true`
    /// when it started, `false` when `ifExists` is `'useExisting'` and an
    /// instance of the same orchestration was kept; rejects
    /// `ERR_ALREADY_EXISTS` otherwise. Two starts racing on one new id can
    /// both pass the check; duroxide then keeps the first and drops the
    /// second (logged by the runtime, `guard/duplicates.rs`).
    #[allow(clippy::too_many_arguments)]
    #[napi(ts_return_type = "Promise<boolean>")]
    pub async fn start_new(
        &self,
        instance_id: String,
        name: String,
        input: String,
        version: Option<String>,
        trace: Option<TraceContext>,
        if_exists: IfExists,
    ) -> Settled<bool> {
        Settled::of(async {
            rules::root_instance_id("instanceId", &instance_id)?;
            rules::name("orchestrationName", &name)?;
            if let Some(v) = &version {
                rules::version("version", v)?;
            }
            rules::payload("input", &input, self.options.max_payload_bytes)?;
            let input = super::traced_input(input, trace)?;
            let existing = self.state(&instance_id, None).await?;
            if let Some(running) = existing.orchestration_name {
                let where_ = match existing.state {
                    InstanceStateName::Queued => "its start waits in the queue",
                    _ => "it is stored",
                };
                if running == name && if_exists == IfExists::UseExisting {
                    return Ok(false);
                }
                let what = if running == name {
                    format!(
                        "already exists ({where_}); pass {{ ifExists: 'useExisting' }} to get its \
                         handle instead, or start it under a new id"
                    )
                } else {
                    format!(
                        "already exists and runs orchestration '{running}' ({where_}), not \
                         '{name}'; start it under a new id"
                    )
                };
                return Err(BridgeError::AlreadyExists(format!(
                    "start('{name}'): instance '{instance_id}' {what}"
                )));
            }
            match version {
                Some(v) => {
                    self.inner
                        .start_orchestration_versioned(&instance_id, name, v, input)
                        .await?
                }
                None => {
                    self.inner
                        .start_orchestration(&instance_id, name, input)
                        .await?
                }
            }
            self.started.add(&instance_id);
            Ok(true)
        })
        .await
    }

    /// Where the instance is. With `what` (the call, for the message), an
    /// instance that is neither stored nor queued rejects `ERR_NOT_FOUND`.
    #[napi(ts_return_type = "Promise<InstanceState>")]
    pub async fn instance_state(
        &self,
        instance_id: String,
        what: Option<String>,
    ) -> Settled<InstanceState> {
        Settled::of(async {
            rules::instance_id("instanceId", &instance_id)?;
            self.state(&instance_id, what.as_deref()).await
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_ids_are_few_and_near() {
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            closest(
                "order-1243",
                ids(&["order-1234", "order-9999", "order-1243", "refund-1"])
            ),
            ids(&["order-1234"])
        );
        assert_eq!(
            closest("cli-3", ids(&["cli-30", "cli-4", "zzz"])),
            ids(&["cli-30", "cli-4"])
        );
        assert!(closest("a", ids(&["bcdef"])).is_empty());
    }
}
