//! The crate's acks and enqueues on kept connections (Postgres).
//!
//! duroxide-pg runs each call on a connection from its pool, and sqlx pings
//! the connection on the way out of the pool and again on the way back
//! (`kept.rs`): three round trips for every ack and every client start. This
//! layer, one per provider, under the tail-fetch layer, calls the same stored
//! functions with the same arguments (`pg_packing.rs`) on the provider's kept
//! connections: `enqueue_orchestrator_work` for items bound for the
//! orchestrator queue, `ack_orchestration_item` for turns (or ours derived
//! from it, `pg_functions/ack_turn.sql`), `ack_worker` for activity
//! results. The queue and lock logic stays the crate's.
//!
//! Errors come out as the crate's own call would give them: a lock that is
//! gone is the crate's permanent "Invalid lock token" / "Worker queue item
//! not found" error; a terminated session goes to the retry layer above; a
//! call that may have committed before its connection failed (an I/O
//! error) is never run again: its error is returned, retryable, as the
//! crate returns it (running it again could deliver an event twice). Only
//! a call that certainly did not run (no connection from the pool, or the
//! server's own error) runs the crate's call, which reports the store's
//! state in its own words. What this layer does not pack runs the crate's
//! call.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use duroxide::providers::{
    ExecutionMetadata, Provider, ProviderError, ScheduledActivityIdentifier, WorkItem,
};
use duroxide::Event;
use sqlx::postgres::PgArguments;
use sqlx::query::Query;
use sqlx::Postgres;

use super::kept::{KeptConnections, Lanes};
use super::layer::{Layer, Stacked};
use super::pg_packing::{self, now_ms};
use crate::provider_errors::ProviderFault;

pub(crate) struct KeptCalls {
    /// The runtime's lane, for acks.
    kept: Arc<KeptConnections>,
    /// The client's lane, for enqueues (`kept.rs`, [`Lanes`]).
    client_kept: Arc<KeptConnections>,
    enqueue: String,
    ack_turn: String,
    ack_worker: String,
    /// Calls that ran the crate's own call instead (not packed, or failed).
    crate_calls: AtomicU64,
}

impl KeptCalls {
    /// `schema` is the store's, quoted as Postgres quotes it; `ack` the
    /// qualified name of the turn ack to call (the crate's, or ours,
    /// `pg_functions/ack_turn.sql`); `relaxed` the provider's
    /// `relaxedDurability`.
    fn new(lanes: &Lanes, schema: &str, ack: &str, relaxed: bool) -> Self {
        Self {
            kept: lanes.runtime.clone(),
            client_kept: lanes.client.clone(),
            enqueue: enqueue_statement(schema),
            ack_turn: ack_turn_statement(ack),
            ack_worker: ack_worker_statement(schema, relaxed),
            crate_calls: AtomicU64::new(0),
        }
    }

    /// What this layer does not pack runs the crate's call.
    fn crate_call(&self) {
        self.crate_calls.fetch_add(1, Ordering::Relaxed);
    }
}

/// The turn ack `ack` on a turn's packed arguments (`pg_packing.rs`).
pub(crate) fn ack_turn_statement(ack: &str) -> String {
    format!("SELECT {ack}($1, $2, $3, $4, $5, $6, $7, $8)")
}

/// The crate's `enqueue_orchestrator_work` on (instance, item, visible at
/// in ms since the epoch).
pub(crate) fn enqueue_statement(schema: &str) -> String {
    format!(
        "SELECT {schema}.enqueue_orchestrator_work($1, $2, TO_TIMESTAMP($3 / 1000.0), \
         NULL, NULL, NULL)"
    )
}

/// The crate's `ack_worker`; with `relaxed` (the provider's
/// `relaxedDurability`), committing without waiting for its WAL flush: the
/// result reaches the instance only through a turn's ack, which waits for
/// its flush, and Postgres flushes in order; a crash before that runs the
/// activity again.
pub(crate) fn ack_worker_statement(schema: &str, relaxed: bool) -> String {
    let prelude = if relaxed {
        "set_config('synchronous_commit', 'off', true), "
    } else {
        ""
    };
    format!("SELECT {prelude}{schema}.ack_worker($1, $2, $3, $4)")
}

/// `store` with its acks on the runtime's lane of `lanes` and its enqueues
/// on the client's, turns acked by `ack`.
pub(crate) fn over(
    store: Arc<dyn Provider>,
    lanes: &Lanes,
    schema: &str,
    ack: &str,
    relaxed: bool,
) -> Arc<dyn Provider> {
    Stacked::over(KeptCalls::new(lanes, schema, ack, relaxed), store)
}

/// How a call of ours that failed ends: `Ok` when the crate's own call
/// should run because this one certainly did not commit (no connection
/// from the pool; an error the server returned, which rolled its
/// transaction back), so the crate's reports the store's state in its own
/// words; `Err` otherwise. A terminated session is the retry layer's
/// (`pg_retry.rs`); an I/O error may have come after the server committed,
/// so the call is not run again and its error is the crate's for that case
/// (duroxide-pg marks I/O errors retryable).
pub(crate) fn after_failure(op: &'static str, e: sqlx::Error) -> Result<(), ProviderError> {
    let permanent = ProviderError::permanent(op, format!("Database error: {e}"));
    if ProviderFault::is(&permanent, ProviderFault::Terminated) {
        return Err(permanent);
    }
    match e {
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Database(_) => Ok(()),
        // duroxide-pg's words for each (`sqlx_to_provider_error`).
        sqlx::Error::Io(_) => Err(ProviderError::retryable(op, format!("I/O error: {e}"))),
        other => Err(ProviderError::permanent(
            op,
            format!("Unexpected error: {other}"),
        )),
    }
}

/// The server's message of a store function's `RAISE`, if `e` is one.
fn raised(e: &sqlx::Error) -> Option<&str> {
    match e {
        sqlx::Error::Database(db) => Some(db.message()),
        _ => None,
    }
}

/// How the crate words a call whose lock is gone: the text its store
/// function raises, and the operation and message of its permanent error.
struct Gone {
    raises: &'static str,
    op: &'static str,
    message: &'static str,
}

impl KeptCalls {
    /// Runs one of the crate's store functions on a connection kept in
    /// `lane`: `Ok(true)` once it committed, `Ok(false)` when the crate's own
    /// call should run instead (`after_failure`), and the crate's error for a
    /// lock that is `gone`.
    async fn run(
        &self,
        lane: &KeptConnections,
        op: &'static str,
        query: Query<'_, Postgres, PgArguments>,
        gone: Option<Gone>,
    ) -> Result<bool, ProviderError> {
        match lane.execute(query).await {
            Ok(_) => Ok(true),
            Err(e) => match gone {
                Some(g) if raised(&e).is_some_and(|m| m.contains(g.raises)) => {
                    Err(ProviderError::permanent(g.op, g.message))
                }
                _ => {
                    after_failure(op, e)?;
                    self.crate_call();
                    Ok(false)
                }
            },
        }
    }
}

#[async_trait]
impl Layer for KeptCalls {
    async fn enqueue_for_orchestrator(
        &self,
        next: &Arc<dyn Provider>,
        item: WorkItem,
        delay: Option<Duration>,
    ) -> Result<(), ProviderError> {
        let packed = pg_packing::enqueue(&item, delay, now_ms())
            .and_then(|(instance, at)| Some((instance, at, serde_json::to_string(&item).ok()?)));
        let Some((instance, visible_at, json)) = packed else {
            self.crate_call();
            return next.enqueue_for_orchestrator(item, delay).await;
        };
        let query = sqlx::query(&self.enqueue)
            .bind(instance)
            .bind(&json)
            .bind(visible_at);
        if self
            .run(&self.client_kept, "enqueue_orchestrator_work", query, None)
            .await?
        {
            return Ok(());
        }
        next.enqueue_for_orchestrator(item, delay).await
    }

    async fn ack_orchestration_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_token: &str,
        execution_id: u64,
        history_delta: Vec<Event>,
        worker_items: Vec<WorkItem>,
        orchestrator_items: Vec<WorkItem>,
        metadata: ExecutionMetadata,
        cancelled_activities: Vec<ScheduledActivityIdentifier>,
    ) -> Result<(), ProviderError> {
        let packed = pg_packing::turn_ack(
            &history_delta,
            &worker_items,
            &orchestrator_items,
            &metadata,
            &cancelled_activities,
        );
        match packed.and_then(|p| p.arguments(lock_token, execution_id)) {
            Some(args) => {
                let query = sqlx::query_with(&self.ack_turn, args);
                let gone = Gone {
                    raises: "Invalid lock token",
                    op: "ack_orchestration_item",
                    message: "Invalid lock token",
                };
                if self
                    .run(&self.kept, "ack_orchestration_item", query, Some(gone))
                    .await?
                {
                    return Ok(());
                }
            }
            None => self.crate_call(),
        }
        next.ack_orchestration_item(
            lock_token,
            execution_id,
            history_delta,
            worker_items,
            orchestrator_items,
            metadata,
            cancelled_activities,
        )
        .await
    }

    async fn ack_work_item(
        &self,
        next: &Arc<dyn Provider>,
        token: &str,
        completion: Option<WorkItem>,
    ) -> Result<(), ProviderError> {
        let packed = completion.as_ref().and_then(|c| {
            Some((
                pg_packing::completion_instance(c)?,
                serde_json::to_string(c).ok()?,
            ))
        });
        match packed {
            Some((instance, json)) => {
                let query = sqlx::query(&self.ack_worker)
                    .bind(token)
                    .bind(instance)
                    .bind(&json)
                    .bind(now_ms());
                let gone = Gone {
                    raises: "Worker queue item not found",
                    op: "ack_worker",
                    message: "Worker queue item not found or already processed",
                };
                if self
                    .run(&self.kept, "ack_worker", query, Some(gone))
                    .await?
                {
                    return Ok(());
                }
            }
            None => self.crate_call(),
        }
        next.ack_work_item(token, completion).await
    }
}

#[cfg(test)]
mod tests;
