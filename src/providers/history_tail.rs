//! Orchestration fetches that read only the history this process does not
//! hold (Postgres).
//!
//! duroxide-pg's fetch aggregates an instance's whole history into one JSON
//! document at every turn, and the provider parses it back, so a turn's
//! cost grew with its history. This layer, one per provider, under the
//! retry layer, keeps the history of instances its turns acked
//! (`histories.rs`: those of at least 16 events, at most 128 instances and
//! 100,000 events, least recently used forgotten first) and fetches through
//! `pg_functions/fetch_turn.sql`, which is told what it holds: for an
//! instance it holds, the store sends the events after the last one it
//! holds, provided the execution is the same and so is its identity (the
//! md5 of its stored first event and that row's `xmin`: a deleted and
//! re-created instance has another). Anything else gets the whole history.
//!
//! The copy is taken out while a turn holds the instance's lock and put back,
//! with the turn's events, when the ack succeeds for the same execution and
//! the execution goes on running; a failed ack, an abandon, an end or a
//! continue-as-new forgets it. A fetch whose tail does not join the copy (it
//! was forgotten in the meantime) reads the whole history from the store.
//! A fetch that certainly did not run falls back to the crate's own fetch,
//! so errors are the crate's (`kept_calls::after_failure`).
//!
//! The layer also runs the acks that carry the next fetch of the queue they
//! feed (`ride.rs`): the worker ack's is this tail fetch.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use duroxide::providers::{
    DispatcherCapabilityFilter, ExecutionMetadata, OrchestrationItem, Provider, ProviderError,
    ScheduledActivityIdentifier, SessionFetchConfig, TagFilter, WorkItem,
};
use duroxide::Event;
use sqlx::PgPool;

use super::contain;
use super::histories::{self, Histories};
use super::kept::KeptConnections;
use super::kept_calls::after_failure;
use super::layer::{Layer, Stacked};
use super::pg_functions::crate_text::Schema;
use super::pg_packing;
use ride::{tags, Tags};

mod calls;
mod ride;
mod row;
mod warm;
pub(crate) use calls::{ack_turn_function, Statements};
pub(crate) use warm::Warmer;
#[cfg(test)]
mod tests;

/// The wake-up layer's mark on an ack (`wakeup.rs`): the orchestrator
/// queue's wake-up generation before the ack ran, and how many wake-ups of
/// that queue the ack made itself once it returned. A turn the ack fetched
/// has held its instance's lock since before those, so any other wake-up
/// since may have found the instance locked, and the turn's own ack must
/// wake the queue for it (`woken_during_turn`); the generation of the look
/// that later took the turn from here is too late to tell. And which queues
/// the ack fetched from (`ride.rs`): only an ack that fetched may have taken
/// an item announced before it out of other fetches' sight
/// (`wakeup/signal.rs`).
#[derive(Debug, Default)]
pub(crate) struct AckMark {
    pub(crate) before: u64,
    pub(crate) own_wakes: AtomicU64,
    pub(crate) fetched_turns: AtomicBool,
    pub(crate) fetched_work: AtomicBool,
}

impl AckMark {
    /// The ack running in this task fetches a turn in its call.
    fn fetches_turn() {
        let _ = ACK_MARK.try_with(|m| m.fetched_turns.store(true, Ordering::Relaxed));
    }

    /// The ack running in this task fetches a worker item in its call.
    fn fetches_work() {
        let _ = ACK_MARK.try_with(|m| m.fetched_work.store(true, Ordering::Relaxed));
    }
}

tokio::task_local! {
    /// Set by the wake-up layer around an ack.
    pub(crate) static ACK_MARK: Arc<AckMark>;
}

pub(crate) struct HistoryTail {
    /// Where the layer's own calls run (`providers/kept.rs`).
    kept: Arc<KeptConnections>,
    /// The calls of our functions in the provider's schema.
    statements: Statements,
    /// The provider's `relaxedDurability`: fetches and activity acks commit
    /// without waiting for their WAL flush.
    relaxed: bool,
    /// Where unreadable messages a fetch locked are set aside
    /// (`contain.rs`), and their count.
    contained: Option<(contain::Store, Arc<contain::Counts>)>,
    turns: ride::Rides<Range, OrchestrationItem>,
    work: ride::Rides<Tags, WorkItem>,
    /// Lock token -> what the fetch that took that turn asked: the slot
    /// asks the same again once the turn is acked.
    asked: Mutex<HashMap<String, ride::Asked<Range>>>,
    /// Lock token of a turn an ack fetched and a fetch took -> that ack's
    /// mark, until the wake-up layer asks.
    locked_at: Mutex<HashMap<String, Arc<AckMark>>>,
    /// Whether the latest orchestration fetch that reached the store (or
    /// rode an ack) found a turn: a turn's ack fetches the next one only
    /// then, so an emptied queue costs one empty ride, not one per ack.
    turns_queued: AtomicBool,
    histories: Arc<Mutex<Histories>>,
    /// Fetches answered with the held copy and a tail.
    tails: AtomicU64,
    /// Fetches that read a whole history long enough to be held.
    wholes: AtomicU64,
    /// Orchestration fetches answered with an item a worker's ack fetched.
    ridden: AtomicU64,
    /// Worker fetches answered with an item a turn's ack fetched.
    ridden_work: AtomicU64,
    /// Turns' acks that fetched the next turn.
    next_turns: AtomicU64,
}

/// A fetched item and its lock token, as the `Provider` fetches return them.
type Fetched<T> = (T, String, u32);

/// A capability filter's packed version range (`version_range`).
type Range = (Option<i64>, Option<i64>);

/// What the tail layer gives the provider's runtimes: the handle to give
/// back what its acks fetched, and the warming of connections at start.
pub(crate) struct ForRuntimes {
    pub(crate) ridden: Ridden,
    pub(crate) warmer: Warmer,
}

/// `store` with tail fetches and rides through our functions in `schema`
/// (installed: `pg_functions/install.rs`), and what its runtimes need of
/// the layer.
pub(crate) async fn over(
    store: Arc<dyn Provider>,
    pool: &PgPool,
    schema: &Schema,
    kept: Arc<KeptConnections>,
    relaxed: bool,
    contained: (contain::Store, Arc<contain::Counts>),
) -> (Arc<dyn Provider>, ForRuntimes) {
    let mut layer = HistoryTail::new(kept, Statements::new(&schema.quoted), relaxed);
    layer.contained = Some(contained);
    let ack = ack_turn_function(&schema.quoted);
    let warmed = layer.warm(pool, &schema.quoted, &ack, warm::WARMED).await;
    tracing::debug!(target: "duroxide_node::providers", schema = %schema.name, warmed, "connections warmed");
    let layer = Arc::new(layer);
    let for_runtimes = ForRuntimes {
        ridden: Ridden(layer.clone()),
        warmer: Warmer::new(layer.clone(), pool, &schema.quoted, &ack),
    };
    (Arc::new(Stacked::new(layer, store)), for_runtimes)
}

/// The items a provider's acks fetched for its slots (`ride.rs`), for a
/// runtime of the provider to give back when it stops: the slot an item
/// was fetched for may have been one of its own, and a stopped process
/// would otherwise keep it locked for a whole lock timeout.
#[derive(Clone)]
pub(crate) struct Ridden(Arc<HistoryTail>);

impl Ridden {
    pub(crate) async fn give_back(&self) {
        self.0.turns.give_back().await;
        self.0.work.give_back().await;
    }

    /// For a turn an ack fetched: that ack's [`AckMark`], once.
    pub(crate) fn locked_at(&self, lock_token: &str) -> Option<Arc<AckMark>> {
        self.0
            .locked_at
            .lock()
            .expect("locked at")
            .remove(lock_token)
    }

    /// Whether an ack fetched a turn that no fetch took yet.
    pub(crate) fn holds_turns(&self) -> bool {
        self.0.turns.waiting() > 0
    }

    /// Whether an ack fetched a worker item that no fetch took yet.
    pub(crate) fn holds_work(&self) -> bool {
        self.0.work.waiting() > 0
    }
}

/// The crate's packing of a capability filter's first version range.
fn version_range(
    filter: Option<&DispatcherCapabilityFilter>,
) -> Option<(Option<i64>, Option<i64>)> {
    let Some(f) = filter else {
        return Some((None, None));
    };
    let range = f.supported_duroxide_versions.first()?;
    let pack = |v: &semver::Version| (v.major * 1_000_000 + v.minor * 1_000 + v.patch) as i64;
    Some((Some(pack(&range.min)), Some(pack(&range.max))))
}

impl HistoryTail {
    /// Remembers what the fetch of the turn holding `token` asked.
    fn asked_by(&self, token: &str, asked: ride::Asked<Range>) {
        let mut by_token = self.asked.lock().expect("asked");
        // More in flight means turns' locks were lost unseen.
        if by_token.len() >= histories::MAX_IN_FLIGHT {
            by_token.clear();
        }
        by_token.insert(token.to_string(), asked);
    }

    pub(super) fn new(kept: Arc<KeptConnections>, statements: Statements, relaxed: bool) -> Self {
        Self {
            kept,
            statements,
            relaxed,
            contained: None,
            turns: ride::Rides::default(),
            work: ride::Rides::default(),
            asked: Mutex::default(),
            locked_at: Mutex::default(),
            turns_queued: AtomicBool::new(false),
            histories: Arc::default(),
            tails: AtomicU64::new(0),
            wholes: AtomicU64::new(0),
            ridden: AtomicU64::new(0),
            ridden_work: AtomicU64::new(0),
            next_turns: AtomicU64::new(0),
        }
    }
}

#[async_trait]
impl Layer for HistoryTail {
    async fn fetch_orchestration_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        poll_timeout: Duration,
        filter: Option<&DispatcherCapabilityFilter>,
    ) -> Result<Option<(OrchestrationItem, String, u32)>, ProviderError> {
        let Some(range) = version_range(filter) else {
            return Ok(None);
        };
        let asked = ride::Asked {
            lock_timeout,
            key: range,
        };
        if let Some((item, mark)) = self.turns.take(lock_timeout, &range) {
            self.ridden.fetch_add(1, Ordering::Relaxed);
            if let Some(mark) = mark {
                let mut locked_at = self.locked_at.lock().expect("locked at");
                if locked_at.len() >= histories::MAX_IN_FLIGHT {
                    locked_at.clear();
                }
                locked_at.insert(item.1.clone(), mark);
            }
            self.asked_by(&item.1, asked);
            return Ok(Some(item));
        }
        let row = match self.query(None, lock_timeout, range).await {
            Ok(row) => row,
            Err(e) => {
                // Nothing was locked: the crate's fetch reports the store's
                // state. A fetch whose outcome is unknown is not run again
                // (it may hold a lock until its lease ends).
                after_failure("fetch_orchestration_item", e)?;
                return next
                    .fetch_orchestration_item(lock_timeout, poll_timeout, filter)
                    .await;
            }
        };
        self.turns.fetched(asked.clone(), row.is_some());
        self.turns_queued.store(row.is_some(), Ordering::Relaxed);
        let Some(row) = row else {
            return Ok(None);
        };
        let item = self.item(next, row).await?;
        if let Some(item) = &item {
            self.asked_by(&item.1, asked);
        }
        Ok(item)
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
        let held = self
            .histories
            .lock()
            .expect("histories")
            .in_flight
            .remove(lock_token);
        let keep = held.and_then(|h| h.acked(execution_id, &history_delta, &metadata));
        let asked = self.asked.lock().expect("asked").remove(lock_token);
        let mut next_turn = None;
        // The crate's packing of the ack, for a call of ours that also fetches.
        let ack = || {
            pg_packing::turn_ack(
                &history_delta,
                &worker_items,
                &orchestrator_items,
                &metadata,
                &cancelled_activities,
            )
            .and_then(|p| p.arguments(lock_token, execution_id))
        };
        let ridden = match (self.work_free(&worker_items), asked) {
            (Some(work), _) => match ack() {
                Some(ack) => self.ride_turn(next, ack, work).await,
                None => Ok(false),
            },
            (None, Some(asked)) if self.turns_queued.load(Ordering::Relaxed) => match ack() {
                Some(ack) => self
                    .ride_next_turn(ack, &asked, keep.as_ref())
                    .await
                    .map(|rode| rode.map(|row| next_turn = Some((asked, row))).is_some()),
                None => Ok(false),
            },
            _ => Ok(false),
        };
        let acked = match ridden {
            Ok(true) => Ok(()),
            Err(e) => Err(e),
            Ok(false) => {
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
        };
        {
            let mut histories = self.histories.lock().expect("histories");
            histories.turning.remove(lock_token);
            if let (Ok(()), Some(held)) = (&acked, keep) {
                histories.put(held);
            }
        }
        acked?;
        match next_turn {
            // This slot's next fetch takes it: the slot is not free.
            Some((asked, row)) => {
                self.turns_queued.store(row.is_some(), Ordering::Relaxed);
                if let Some(row) = row {
                    self.next_turns.fetch_add(1, Ordering::Relaxed);
                    self.hold_turn(next, asked, row).await;
                }
            }
            None => self.turns.acked(),
        }
        Ok(())
    }

    async fn fetch_work_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        poll_timeout: Duration,
        session: Option<&SessionFetchConfig>,
        tag_filter: &TagFilter,
    ) -> Result<Option<(WorkItem, String, u32)>, ProviderError> {
        if matches!(tag_filter, TagFilter::None) {
            return next
                .fetch_work_item(lock_timeout, poll_timeout, session, tag_filter)
                .await;
        }
        let key = tags(tag_filter);
        if let Some((item, _)) = self.work.take(lock_timeout, &key) {
            self.ridden_work.fetch_add(1, Ordering::Relaxed);
            return Ok(Some(item));
        }
        let fetched = match self.fetch_work(next, lock_timeout, session, &key).await? {
            Some(fetched) => fetched,
            None => {
                next.fetch_work_item(lock_timeout, poll_timeout, session, tag_filter)
                    .await?
            }
        };
        let asked = ride::Asked { lock_timeout, key };
        self.work.fetched(asked, fetched.is_some());
        Ok(fetched)
    }

    async fn ack_work_item(
        &self,
        next: &Arc<dyn Provider>,
        token: &str,
        completion: Option<WorkItem>,
    ) -> Result<(), ProviderError> {
        let ridden = match &completion {
            Some(c) => self.ride_worker(next, token, c).await?,
            None => false,
        };
        if !ridden {
            next.ack_work_item(token, completion).await?;
        }
        self.work.acked();
        Ok(())
    }

    async fn abandon_orchestration_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_token: &str,
        delay: Option<Duration>,
        ignore_attempt: bool,
    ) -> Result<(), ProviderError> {
        self.asked.lock().expect("asked").remove(lock_token);
        self.histories
            .lock()
            .expect("histories")
            .in_flight
            .remove(lock_token);
        let abandoned = next
            .abandon_orchestration_item(lock_token, delay, ignore_attempt)
            .await;
        self.histories
            .lock()
            .expect("histories")
            .turning
            .remove(lock_token);
        abandoned
    }
}
