//! The most frequent writing calls on a SQLite file, run on a connection of
//! our own in the calling thread (SQLite).
//!
//! sqlx gives every SQLite connection a thread of its own and hands each
//! statement to it and the result back: two thread wake-ups a statement,
//! and duroxide's orchestration fetch runs eight statements, a turn's ack
//! about fifteen, an activity's fetch four and its ack four. SQLite writes
//! one transaction at a time, so a hello run is the sum of its writes, and
//! those wake-ups were most of each write: the same run pinned to one CPU,
//! where a wake-up costs a context switch instead of waking the other CPU,
//! took 570 ms against 819 ms (`docs/operations.md`). Here those calls run
//! the crate's statements, in its order and with its errors
//! (`turn_fetch.rs`, `turn_ack.rs`, `worker_queue.rs`), on one connection
//! this layer opens on the same file, inside the caller's task: one
//! transaction is a few tens of microseconds of SQLite and no wake-up.
//! Every other call (management, renewals, abandons, reads) stays the
//! crate's.
//!
//! The layer sits under the one-writer layer (`sqlite_writer.rs`), so its
//! writes and the crate's take turns in this process as before. Another
//! process on the file may hold SQLite's write lock: the connection does not
//! wait for it (`busy_timeout` 0, which would block the caller's thread), it
//! reports the crate's "database is locked" error, and the retry layer above
//! runs the call again after a pause (`sqlite_retry.rs`).
//!
//! A turn's fetch reads the whole history as the crate's does unless this
//! process acked the instance's last turn and holds the history it left
//! (`histories.rs`): then it reads only the events after it, and the first
//! event, which must still be the one held (a deleted and re-created
//! instance's is not), so a turn costs the same at step 400 as at step 10
//! (`turn_fetch.rs`, [`Tails`]).
//!
//! In-memory stores keep the crate's calls: their shared-cache database
//! cannot be opened a second time by name. `DUROXIDE_NODE_SQLITE_DIRECT=off`,
//! read when the store opens, leaves every call to the crate (for
//! comparisons).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use duroxide::providers::{
    DispatcherCapabilityFilter, ExecutionMetadata, OrchestrationItem, Provider, ProviderError,
    ScheduledActivityIdentifier, SessionFetchConfig, TagFilter, WorkItem,
};
use duroxide::Event;
use rusqlite::{Connection, Transaction, TransactionBehavior};

use super::histories::{Held, Histories, MAX_IN_FLIGHT};
use super::layer::{Layer, Stacked};

mod turn_ack;
mod turn_fetch;
mod worker_queue;

/// The connection's page cache, KiB (SQLite's default).
const CACHE_KIB: u32 = 2000;

pub(crate) struct DirectSqlite {
    conn: Mutex<Connection>,
    tails: Tails,
    /// Calls this layer ran itself, for tests.
    served: AtomicU64,
}

/// The histories this process's turns acked, and how many fetches read
/// only the events after one of them.
#[derive(Default)]
pub(super) struct Tails {
    histories: Mutex<Histories>,
    read: AtomicU64,
}

impl Tails {
    /// The held history of `instance`, taken out: the turn being fetched
    /// puts it back through its ack.
    fn take(&self, instance: &str) -> Option<Held> {
        self.histories().take(instance)
    }

    /// A fetch read only what followed a held history.
    fn counted(&self) {
        self.read.fetch_add(1, Ordering::Relaxed);
    }

    fn histories(&self) -> MutexGuard<'_, Histories> {
        self.histories.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The turn of `token` was handed `item`'s history.
    fn fetched(&self, token: &str, item: &OrchestrationItem) {
        if item.history_error.is_some() {
            return;
        }
        let mut histories = self.histories();
        if histories.in_flight.len() >= MAX_IN_FLIGHT {
            // Locks lost or abandoned unseen; their turns are not acked.
            histories.in_flight.clear();
        }
        let held = Held {
            instance: item.instance.clone(),
            execution_id: item.execution_id,
            identity: String::new(),
            history: item.history.clone(),
        };
        histories.in_flight.insert(token.to_string(), held);
    }

    /// The history the turn of `token` leaves if its ack commits: what it
    /// was handed and `delta`, while the execution goes on.
    fn acking(
        &self,
        token: &str,
        execution_id: u64,
        delta: &[Event],
        metadata: &ExecutionMetadata,
    ) -> Option<Held> {
        let held = self.histories().in_flight.remove(token)?;
        held.acked(execution_id, delta, metadata)
    }

    /// The ack committed: its history is held for the next turn's fetch.
    fn acked(&self, held: Held) {
        self.histories().put(held);
    }
}

impl DirectSqlite {
    /// Opens `path` with the settings duroxide gives its own connections
    /// (read from one of them, so a later duroxide's choice carries over),
    /// but SQLite's default page cache ([`CACHE_KIB`]) instead of their
    /// 64 MB: a connection's cache is dropped whenever another connection
    /// wrote, which kept the crate's five small, while this one does most
    /// writes and would keep every page it touched: RSS grew ×1.20 over
    /// 10,000 hellos with the crate's setting.
    async fn open(path: &str, pool: &sqlx::SqlitePool) -> Result<Self, String> {
        let mut settings = vec![
            "PRAGMA busy_timeout = 0;".to_string(),
            format!("PRAGMA cache_size = -{CACHE_KIB};"),
        ];
        for pragma in ["synchronous", "wal_autocheckpoint", "foreign_keys"] {
            let value: i64 = sqlx::query_scalar(&format!("PRAGMA {pragma}"))
                .fetch_one(pool)
                .await
                .map_err(|e| format!("cannot read PRAGMA {pragma}: {e}"))?;
            settings.push(format!("PRAGMA {pragma} = {value};"));
        }
        let conn = Connection::open(path).map_err(|e| format!("cannot open '{path}': {e}"))?;
        conn.execute_batch(&settings.join(" "))
            .map_err(|e| format!("cannot configure '{path}': {e}"))?;
        Ok(Self {
            conn: Mutex::new(conn),
            tails: Tails::default(),
            served: AtomicU64::new(0),
        })
    }

    /// A write transaction on the connection, taken at once so that another
    /// process's writer is met at `BEGIN` and nothing ran before it.
    fn write<T>(
        &self,
        op: &'static str,
        body: impl FnOnce(Transaction<'_>) -> Result<T, ProviderError>,
    ) -> Result<T, ProviderError> {
        self.served.fetch_add(1, Ordering::Relaxed);
        let mut conn = self.lock();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| fault(op, e))?;
        // A body that returns without committing rolls back as `tx` drops,
        // as the crate's sqlx transactions do.
        body(tx)
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic inside a transaction rolled it back as it unwound; the
        // connection itself is still sound.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[cfg(test)]
    fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    #[cfg(test)]
    fn tails_read(&self) -> u64 {
        self.tails.read.load(Ordering::Relaxed)
    }
}

/// `store` (duroxide's SQLite store on the file at `path`) with its most
/// frequent writes run here.
pub(crate) async fn over(
    store: Arc<dyn Provider>,
    path: &str,
    pool: &sqlx::SqlitePool,
) -> Result<Arc<dyn Provider>, String> {
    Ok(Stacked::over(DirectSqlite::open(path, pool).await?, store))
}

#[async_trait]
impl Layer for DirectSqlite {
    async fn fetch_orchestration_item(
        &self,
        _next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        _poll_timeout: Duration,
        filter: Option<&DispatcherCapabilityFilter>,
    ) -> Result<Option<(OrchestrationItem, String, u32)>, ProviderError> {
        const OP: &str = "fetch_orchestration_item";
        let fetched = self.write(OP, |tx| {
            turn_fetch::fetch(tx, lock_timeout, filter, &self.tails)
        })?;
        if let Some((item, token, _)) = &fetched {
            self.tails.fetched(token, item);
        }
        Ok(fetched)
    }

    #[allow(clippy::too_many_arguments)] // duroxide's ack, plus `next`
    async fn ack_orchestration_item(
        &self,
        _next: &Arc<dyn Provider>,
        lock_token: &str,
        execution_id: u64,
        history_delta: Vec<Event>,
        worker_items: Vec<WorkItem>,
        orchestrator_items: Vec<WorkItem>,
        metadata: ExecutionMetadata,
        cancelled_activities: Vec<ScheduledActivityIdentifier>,
    ) -> Result<(), ProviderError> {
        let held = self
            .tails
            .acking(lock_token, execution_id, &history_delta, &metadata);
        let ack = turn_ack::Ack {
            lock_token,
            execution_id,
            history_delta,
            worker_items,
            orchestrator_items,
            metadata,
            cancelled_activities,
        };
        // The crate names its failure to begin after another call.
        self.write("list_instances", |tx| turn_ack::ack(tx, ack))?;
        if let Some(held) = held {
            self.tails.acked(held);
        }
        Ok(())
    }

    async fn fetch_work_item(
        &self,
        _next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        _poll_timeout: Duration,
        session: Option<&SessionFetchConfig>,
        tag_filter: &TagFilter,
    ) -> Result<Option<(WorkItem, String, u32)>, ProviderError> {
        if matches!(tag_filter, TagFilter::None) {
            return Ok(None);
        }
        self.write("fetch_work_item", |tx| {
            worker_queue::fetch(tx, lock_timeout, session, tag_filter)
        })
    }

    async fn ack_work_item(
        &self,
        _next: &Arc<dyn Provider>,
        token: &str,
        completion: Option<WorkItem>,
    ) -> Result<(), ProviderError> {
        self.write("ack_work_item", |tx| {
            worker_queue::ack(tx, token, completion)
        })
    }

    async fn enqueue_for_orchestrator(
        &self,
        _next: &Arc<dyn Provider>,
        item: WorkItem,
        delay: Option<Duration>,
    ) -> Result<(), ProviderError> {
        self.write("enqueue_for_orchestrator", |tx| {
            worker_queue::enqueue_for_orchestrator(tx, &item, delay)
        })
    }
}

/// A SQLite error as duroxide's SQLite store classifies sqlx's: busy is
/// retryable (and reads "database is locked", which the retry layer looks
/// for), a constraint is permanent, anything else retryable.
fn fault(op: &str, e: rusqlite::Error) -> ProviderError {
    let msg = e.to_string();
    if let rusqlite::Error::SqliteFailure(f, _) = &e {
        if matches!(
            f.code,
            rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
        ) {
            return ProviderError::retryable(
                op,
                format!(
                    "Database locked: (code: {}) database is locked: {msg}",
                    f.extended_code
                ),
            );
        }
    }
    if msg.contains("UNIQUE constraint") || msg.contains("PRIMARY KEY") {
        return ProviderError::permanent(op, format!("Constraint violation: {msg}"));
    }
    ProviderError::retryable(op, msg)
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("system clock should be after UNIX epoch")
        .as_millis() as i64
}

fn lock_token() -> String {
    format!("lock_{}", uuid::Uuid::new_v4())
}

#[cfg(test)]
mod tests;
