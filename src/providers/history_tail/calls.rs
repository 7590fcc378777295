//! The statements that call our installed functions (`pg_functions/`), and
//! the plain fetches that run them.

use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::{Provider, ProviderError, SessionFetchConfig, WorkItem};
use sqlx::postgres::PgArguments;
use sqlx::query::QueryAs;
use sqlx::Postgres;

use super::row::Row;
use super::{HistoryTail, Range, Tags};
use crate::providers::histories::Known;
use crate::providers::kept_calls::after_failure;
use crate::providers::pg_functions::FILES;
use crate::providers::pg_packing::now_ms;

/// The statements of one schema's functions.
pub(crate) struct Statements {
    pub(super) fetch_turn: String,
    pub(super) fetch_work: String,
    pub(super) ack_worker_fetch_turn: String,
    pub(super) ack_turn_fetch_turn: String,
    pub(super) ack_turn_fetch_work: String,
}

/// The columns every function that returns a turn returns (`Row`).
const TURN_COLUMNS: &str = "out_instance_id, out_orchestration_name, out_orchestration_version, \
     out_execution_id, out_history, out_messages, out_lock_token, out_attempt_count, \
     out_kv_snapshot, out_history_after, out_identity";

/// The columns of a function that returns a worker item.
const WORK_COLUMNS: &str = "out_work_item, out_lock_token, out_attempt_count";

/// `$1, $2, .., $n`.
fn parameters(n: usize) -> String {
    (1..=n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The qualified name of the function `file` installs in `schema_q`.
fn function(schema_q: &str, file: &str) -> String {
    let f = FILES
        .iter()
        .find(|f| f.file == file)
        .expect("a file of FILES");
    format!("{schema_q}.{}", f.name)
}

impl Statements {
    /// `schema_q`: the schema quoted as Postgres quotes it.
    pub(crate) fn new(schema_q: &str) -> Self {
        let call = |file: &str, columns: &str, args: usize| {
            format!(
                "SELECT {columns} FROM {}({})",
                function(schema_q, file),
                parameters(args)
            )
        };
        Self {
            fetch_turn: call("fetch_turn.sql", TURN_COLUMNS, 9),
            fetch_work: call("fetch_work.sql", WORK_COLUMNS, 7),
            ack_worker_fetch_turn: call("ack_worker_fetch_turn.sql", TURN_COLUMNS, 13),
            ack_turn_fetch_turn: call("ack_turn_fetch_turn.sql", TURN_COLUMNS, 15),
            ack_turn_fetch_work: call("ack_turn_fetch_work.sql", WORK_COLUMNS, 11),
        }
    }
}

/// The qualified name of our turn ack in `schema_q` (`ack_turn.sql`).
pub(crate) fn ack_turn_function(schema_q: &str) -> String {
    function(schema_q, "ack_turn.sql")
}

/// `query` with a turn fetch's arguments bound after what it already has:
/// `relaxed`, what is held, the clock, the lease and the version range.
pub(super) fn fetch_arguments<'q>(
    query: QueryAs<'q, Postgres, Row, PgArguments>,
    relaxed: bool,
    known: Known,
    now_ms: i64,
    lock_timeout: Duration,
    range: Range,
) -> QueryAs<'q, Postgres, Row, PgArguments> {
    query
        .bind(relaxed)
        .bind(known.0)
        .bind(known.1)
        .bind(known.2)
        .bind(known.3)
        .bind(now_ms)
        .bind(lock_timeout.as_millis() as i64)
        .bind(range.0)
        .bind(range.1)
}

impl HistoryTail {
    /// The tail fetch; with `ack` (a worker's token, instance and
    /// serialized completion), the ridden fetch that acks it first.
    pub(super) async fn query(
        &self,
        ack: Option<(&str, &str, &str)>,
        lock_timeout: Duration,
        range: Range,
    ) -> Result<Option<Row>, sqlx::Error> {
        let sql = match ack {
            Some(_) => &self.statements.ack_worker_fetch_turn,
            None => &self.statements.fetch_turn,
        };
        // What is held is read once the call has its connection: a turn
        // that took an instance's copy and acked while this call waited for
        // the pool has put its copy back by then.
        self.kept
            .fetch_optional_built(|| {
                let known = self.histories.lock().expect("histories").known();
                let now_ms = now_ms();
                let mut query = sqlx::query_as(sql);
                if let Some((token, instance, completion)) = ack {
                    query = query
                        .bind(token)
                        .bind(instance)
                        .bind(completion)
                        .bind(now_ms);
                }
                fetch_arguments(query, self.relaxed, known, now_ms, lock_timeout, range)
            })
            .await
    }

    /// The crate's worker fetch through `fetch_work.sql`, parsed as the
    /// crate parses it; `None` when the call certainly did not run or the
    /// item does not parse (the crate's own fetch then reports the store's
    /// state), the crate's error when its outcome is unknown.
    pub(super) async fn fetch_work(
        &self,
        next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        session: Option<&SessionFetchConfig>,
        tags: &Tags,
    ) -> Result<Option<Option<(WorkItem, String, u32)>>, ProviderError> {
        let fetched: Result<Option<(String, String, i32)>, sqlx::Error> = self
            .kept
            .fetch_optional(
                sqlx::query_as(&self.statements.fetch_work)
                    .bind(self.relaxed)
                    .bind(now_ms())
                    .bind(lock_timeout.as_millis() as i64)
                    .bind(session.map(|s| s.owner_id.as_str()))
                    .bind(session.map(|s| s.lock_timeout.as_millis() as i64))
                    .bind(&tags.1)
                    .bind(tags.0),
            )
            .await;
        let row = match fetched {
            Ok(row) => row,
            Err(e) => {
                after_failure("fetch_work_item", e)?;
                return Ok(None);
            }
        };
        let Some((item, token, attempts)) = row else {
            return Ok(Some(None));
        };
        match serde_json::from_str::<WorkItem>(&item) {
            Ok(item) => Ok(Some(Some((item, token, attempts as u32)))),
            // Locked and unreadable: back without an attempt counted, for
            // the crate's own fetch to report what is wrong with it.
            Err(_) => {
                let _ = next.abandon_work_item(&token, None, true).await;
                Ok(None)
            }
        }
    }
}
