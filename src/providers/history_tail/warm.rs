//! Warming a provider's connections before its first turns (Postgres).
//!
//! A server backend compiles a PL/pgSQL function the first time it calls
//! it, plans each of the function's statements the first time it runs them,
//! and loads each table's catalog entries the first time a statement touches
//! the table. On the bench host a fresh backend took 3.0 ms for its first
//! enqueue and 6.2 ms for its first tail fetch, against 0.23 and 0.55 ms for
//! the next ones; a runtime's first turns run on backends of a pool that has
//! only just opened, so the first 25 of 200 hello orchestrations took 70 to
//! 100 ms against 50 ms for each later 25.
//!
//! So when the layer installs, it runs two synthetic hellos on each of up to
//! [`WARMED`] connections at once, through the statements the provider's
//! calls use, in one transaction that it then rolls back. Each enqueues a
//! start and fetches it. The first then acks the turn with an activity while
//! fetching that activity, acks the activity while fetching the next turn,
//! and acks that turn (completing the instance) while fetching the next:
//! the rides (`ride.rs`). The second acks and fetches in calls of their own.
//! A runtime's start warms as many more as its slots can use at once
//! ([`Warmer`]). What stays cold is our own process.
//!
//! It cannot touch anyone's work: every call passes a store clock of 1 ms
//! after the epoch ([`NOW_MS`]), and its start is visible from the epoch, so
//! its fetches see only the rows it wrote (an item of the store's is visible
//! from a real time, and a lock of the store's looks held); its instance id
//! is new (a UUID), so its advisory locks meet no one; and its rows, never
//! committed, are seen by no other session and leave with the rollback. A
//! warm-up that fails or takes longer than [`TIMEOUT`] is dropped, which
//! rolls it back too; the provider works as it would have, only colder.

use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::{DispatcherCapabilityFilter, ExecutionMetadata, TagFilter, WorkItem};
use duroxide::{Event, EventKind};
use sqlx::postgres::PgArguments;
use sqlx::query::QueryAs;
use sqlx::{Connection, PgConnection, PgPool, Postgres};

use super::calls::fetch_arguments;
use super::ride::{tags, Tags};
use super::row::Row;
use super::{version_range, HistoryTail, Range};
use crate::providers::histories::Known;
use crate::providers::kept_calls::{ack_turn_statement, ack_worker_statement, enqueue_statement};
use crate::providers::pg_packing;

/// The connections a provider's connect warms: enough for a client and a
/// runtime with duroxide's default slots (two of each); a runtime with more
/// warms more when it starts ([`Warmer`]).
pub(super) const WARMED: u32 = 4;

/// The most connections a runtime's start warms.
const MOST_WARMED: u32 = 32;

/// How long a provider's connect waits for its warm-ups.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The store clock of every call a warm-up makes.
const NOW_MS: i64 = 1;

const LOCK_TIMEOUT_MS: i64 = 30_000;

const NAME: &str = "duroxide-node-warm-up";

/// The statements a warm-up runs, as the provider's calls run them (so
/// sqlx has them prepared on the warmed connection too).
struct Calls {
    enqueue: String,
    fetch: String,
    ack_turn: String,
    fetch_work: String,
    ack_worker: String,
    turn_ride: String,
    worker_ride: String,
    next_turn: String,
    relaxed: bool,
    range: Range,
    tags: Tags,
}

impl HistoryTail {
    /// Warms `count` of `pool`'s connections, holding all but one of them
    /// at most; how many it warmed.
    pub(super) async fn warm(&self, pool: &PgPool, schema: &str, ack: &str, count: u32) -> usize {
        let st = &self.statements;
        let calls = Arc::new(Calls {
            enqueue: enqueue_statement(schema),
            fetch: st.fetch_turn.clone(),
            ack_turn: ack_turn_statement(ack),
            fetch_work: st.fetch_work.clone(),
            ack_worker: ack_worker_statement(schema, self.relaxed),
            turn_ride: st.ack_turn_fetch_work.clone(),
            worker_ride: st.ack_worker_fetch_turn.clone(),
            next_turn: st.ack_turn_fetch_turn.clone(),
            relaxed: self.relaxed,
            range: version_range(Some(
                &DispatcherCapabilityFilter::default_for_current_build(),
            ))
            .unwrap_or((None, None)),
            tags: tags(&TagFilter::default()),
        });
        let count = pool
            .options()
            .get_max_connections()
            .saturating_sub(1)
            .min(count);
        // All at once, so that each holds a connection of its own.
        let mut runs = tokio::task::JoinSet::new();
        for _ in 0..count {
            let (calls, pool) = (calls.clone(), pool.clone());
            runs.spawn(async move { calls.run(&pool).await });
        }
        let mut warmed = 0;
        let joined = tokio::time::timeout(TIMEOUT, async {
            while let Some(run) = runs.join_next().await {
                match run {
                    Ok(Ok(())) => warmed += 1,
                    Ok(Err(e)) => {
                        tracing::debug!(target: "duroxide_node::providers", schema, error = %e, "a connection's warm-up failed");
                    }
                    Err(_) => {}
                }
            }
        })
        .await;
        if joined.is_err() {
            tracing::debug!(target: "duroxide_node::providers", schema, "warm-ups still running after {TIMEOUT:?}; dropped");
        }
        warmed
    }
}

/// Warms a provider's connections for a runtime that starts.
///
/// A pool opens connections as calls wait for them. With the default pool
/// of 10, a runtime of four orchestration and eight worker slots opened
/// five more connections during its first 200 hellos, each a TLS set-up and
/// a cold server backend while turns waited: those 200 took 600 to 710 ms in
/// the runs where that happened (about half) and 445 to 480 in the others.
/// Warmed before its dispatchers start: 442 to 523 ms in six of six runs.
/// The start took 240 to 396 ms against 9 to 246 (six alternating runs).
#[derive(Clone)]
pub(crate) struct Warmer {
    tail: Arc<HistoryTail>,
    pool: PgPool,
    schema: String,
    ack: String,
}

impl Warmer {
    pub(super) fn new(tail: Arc<HistoryTail>, pool: &PgPool, schema: &str, ack: &str) -> Self {
        Self {
            tail,
            pool: pool.clone(),
            schema: schema.into(),
            ack: ack.into(),
        }
    }

    /// Warms a connection for each of a runtime's `slots` and one for the
    /// client, up to [`MOST_WARMED`] and all but one of the pool's, unless
    /// the pool has opened that many already. (The pool may open one more
    /// while a connection given back before is on its way into it.)
    pub(crate) async fn for_runtime(&self, slots: usize) {
        let want = u32::try_from(slots + 1)
            .unwrap_or(u32::MAX)
            .min(MOST_WARMED)
            .min(self.pool.options().get_max_connections().saturating_sub(1));
        if self.pool.size() >= want {
            return;
        }
        let warmed = self
            .tail
            .warm(&self.pool, &self.schema, &self.ack, want)
            .await;
        tracing::debug!(target: "duroxide_node::providers", schema = %self.schema, warmed, "connections warmed for a runtime");
    }
}

fn db(e: sqlx::Error) -> String {
    e.to_string()
}

impl Calls {
    /// Both hellos in one transaction, rolled back.
    async fn run(&self, pool: &PgPool) -> Result<(), String> {
        let mut conn = pool.acquire().await.map_err(db)?;
        let mut tx = conn.begin().await.map_err(db)?;
        self.ridden(&mut tx).await?;
        self.plain(&mut tx).await?;
        tx.rollback().await.map_err(db)
    }

    /// A hello whose acks fetch.
    async fn ridden(&self, tx: &mut PgConnection) -> Result<(), String> {
        let hello = Hello::new();
        self.enqueue(tx, &hello).await?;
        let token = self.fetch(tx, &hello).await?;
        let work: Option<(String, String, i32)> =
            sqlx::query_as_with(&self.turn_ride, hello.first_turn(&token)?)
                .bind(LOCK_TIMEOUT_MS)
                .bind(&self.tags.1)
                .bind(self.tags.0)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db)?;
        let worker_token = hello.own_work(work)?;
        let ack = sqlx::query_as(&self.worker_ride)
            .bind(&worker_token)
            .bind(&hello.instance)
            .bind(hello.completion()?)
            .bind(NOW_MS);
        let turn: Option<Row> = self
            .fetching(ack)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?;
        let token = hello.own_turn(turn)?;
        let known = Known::default();
        let next: Option<Row> = sqlx::query_as_with(&self.next_turn, hello.last_turn(&token)?)
            .bind(known.0)
            .bind(known.1)
            .bind(known.2)
            .bind(known.3)
            .bind(LOCK_TIMEOUT_MS)
            .bind(self.range.0)
            .bind(self.range.1)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?;
        match next {
            None => Ok(()),
            Some(_) => Err("the warm-up's last ack fetched a turn".into()),
        }
    }

    /// A hello whose acks and fetches are calls of their own.
    async fn plain(&self, tx: &mut PgConnection) -> Result<(), String> {
        let hello = Hello::new();
        self.enqueue(tx, &hello).await?;
        let token = self.fetch(tx, &hello).await?;
        sqlx::query_with(&self.ack_turn, hello.first_turn(&token)?)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let work: Option<(String, String, i32)> = sqlx::query_as(&self.fetch_work)
            .bind(self.relaxed)
            .bind(NOW_MS)
            .bind(LOCK_TIMEOUT_MS)
            .bind(None::<&str>)
            .bind(None::<i64>)
            .bind(&self.tags.1)
            .bind(self.tags.0)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?;
        let worker_token = hello.own_work(work)?;
        sqlx::query(&self.ack_worker)
            .bind(&worker_token)
            .bind(&hello.instance)
            .bind(hello.completion()?)
            .bind(NOW_MS)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let token = self.fetch(tx, &hello).await?;
        sqlx::query_with(&self.ack_turn, hello.last_turn(&token)?)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn enqueue(&self, tx: &mut PgConnection, hello: &Hello) -> Result<(), String> {
        sqlx::query(&self.enqueue)
            .bind(&hello.instance)
            .bind(hello.start()?)
            .bind(0i64)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        Ok(())
    }

    /// The lock token of `hello`'s next turn.
    async fn fetch(&self, tx: &mut PgConnection, hello: &Hello) -> Result<String, String> {
        let turn: Option<Row> = self
            .fetching(sqlx::query_as(&self.fetch))
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?;
        hello.own_turn(turn)
    }

    /// `query` with a tail fetch's arguments bound, holding nothing.
    fn fetching<'q>(
        &self,
        query: QueryAs<'q, Postgres, Row, PgArguments>,
    ) -> QueryAs<'q, Postgres, Row, PgArguments> {
        fetch_arguments(
            query,
            self.relaxed,
            Known::default(),
            NOW_MS,
            Duration::from_millis(LOCK_TIMEOUT_MS as u64),
            self.range,
        )
    }
}

/// A synthetic instance of one activity: what its calls send.
struct Hello {
    instance: String,
}

impl Hello {
    fn new() -> Self {
        Self {
            instance: format!("{NAME}-{}", uuid::Uuid::new_v4()),
        }
    }

    fn start(&self) -> Result<String, String> {
        serde_json::to_string(&WorkItem::StartOrchestration {
            instance: self.instance.clone(),
            orchestration: NAME.into(),
            input: "null".into(),
            version: Some("1.0.0".into()),
            parent_instance: None,
            parent_id: None,
            parent_execution_id: None,
            execution_id: 1,
        })
        .map_err(|e| e.to_string())
    }

    fn event(&self, id: u64, source: Option<u64>, kind: EventKind) -> Event {
        Event::with_event_id(id, &self.instance, 1, source, kind)
    }

    fn metadata() -> ExecutionMetadata {
        ExecutionMetadata {
            orchestration_name: Some(NAME.into()),
            orchestration_version: Some("1.0.0".into()),
            ..Default::default()
        }
    }

    /// The first turn's ack: started, one activity scheduled.
    fn first_turn(&self, token: &str) -> Result<PgArguments, String> {
        let started = EventKind::OrchestrationStarted {
            name: NAME.into(),
            version: "1.0.0".into(),
            input: "null".into(),
            parent_instance: None,
            parent_id: None,
            parent_execution_id: None,
            carry_forward_events: None,
            initial_custom_status: None,
        };
        let scheduled = EventKind::ActivityScheduled {
            name: NAME.into(),
            input: "null".into(),
            session_id: None,
            tag: None,
        };
        let activity = WorkItem::ActivityExecute {
            instance: self.instance.clone(),
            execution_id: 1,
            id: 2,
            name: NAME.into(),
            input: "null".into(),
            session_id: None,
            tag: None,
        };
        pg_packing::turn_ack(
            &[self.event(1, None, started), self.event(2, None, scheduled)],
            &[activity],
            &[],
            &Self::metadata(),
            &[],
        )
        .and_then(|p| p.arguments_at(token, NOW_MS, 1))
        .ok_or_else(|| "the warm-up's first turn does not pack".into())
    }

    /// The activity's result, as its worker acks it.
    fn completion(&self) -> Result<String, String> {
        serde_json::to_string(&WorkItem::ActivityCompleted {
            instance: self.instance.clone(),
            execution_id: 1,
            id: 2,
            result: "null".into(),
        })
        .map_err(|e| e.to_string())
    }

    /// The last turn's ack: the activity's result, the instance completed.
    fn last_turn(&self, token: &str) -> Result<PgArguments, String> {
        let result = EventKind::ActivityCompleted {
            result: "null".into(),
        };
        let completed = EventKind::OrchestrationCompleted {
            output: "null".into(),
        };
        pg_packing::turn_ack(
            &[
                self.event(3, Some(2), result),
                self.event(4, None, completed),
            ],
            &[],
            &[],
            &ExecutionMetadata {
                status: Some("Completed".into()),
                output: Some("null".into()),
                ..Self::metadata()
            },
            &[],
        )
        .and_then(|p| p.arguments_at(token, NOW_MS, 1))
        .ok_or_else(|| "the warm-up's last turn does not pack".into())
    }

    /// The lock token of a fetched turn, if it is this instance's.
    fn own_turn(&self, turn: Option<Row>) -> Result<String, String> {
        match turn {
            Some(row) if row.0 == self.instance => Ok(row.6),
            Some(_) => Err("a warm-up fetched another instance's turn".into()),
            None => Err("a warm-up fetched no turn".into()),
        }
    }

    /// The lock token of a fetched worker item, if it is this instance's.
    fn own_work(&self, work: Option<(String, String, i32)>) -> Result<String, String> {
        match work {
            Some((item, token, _)) if item.contains(&self.instance) => Ok(token),
            Some(_) => Err("a warm-up fetched another instance's activity".into()),
            None => Err("a warm-up fetched no activity".into()),
        }
    }
}

#[cfg(test)]
mod tests;
