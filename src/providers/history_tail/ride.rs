//! Fetches that ride on an ack (Postgres).
//!
//! In a chain, an activity's completion is followed a moment later by an
//! orchestration fetch of the same process, and a turn that schedules an
//! activity by a worker fetch (the wake-up layer wakes an idle slot as soon
//! as the ack commits): two round trips and two commits, back to back, each
//! way. When a slot of the queue the ack feeds is free (its last fetch that
//! reached the store found nothing, or its own ack just ran, so its next
//! fetch is coming; free slots are counted, one ride each, `Rides::free`),
//! the ack and that queue's fetch run as one SQL call
//! (`pg_functions/*_fetch_*.sql`), and the item it locked waits here for the next fetch that
//! asks the same (version range; tag filter). An item no fetch takes within
//! [`HOLD`] goes back to the queue, its attempt not counted, so work this
//! process does not get to soon is not kept from other processes for a
//! whole lock timeout. (The wake-up layer above answers a free slot's
//! fetches without calling down while nothing was announced, so "found
//! nothing" alone is not seen here; hence the acks.)
//!
//! A turn's ack that feeds no free worker slot fetches the next turn for
//! its own slot instead ([`HistoryTail::ride_next_turn`]): duroxide's
//! orchestration slot fetches again, with the same arguments, as soon as
//! its ack returns. Nothing announces that turn, so the wake-up layer lets
//! a fetch's first look through while one waits here (`Ridden::holds_turns`).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use duroxide::providers::{Provider, ProviderError, TagFilter, WorkItem};
use sqlx::postgres::PgArguments;

use super::row::Row;
use super::{AckMark, Fetched, HistoryTail, Range};
use crate::providers::histories::{Held, MIN_EVENTS};
use crate::providers::kept_calls::after_failure;

/// How long a ridden item waits for a fetch before it is abandoned. A woken
/// slot takes it within milliseconds; a runtime that polls without
/// wake-ups, within its poll interval. Never more than half the lock it was
/// fetched with: a short lease must not expire while the item waits here.
pub(super) const HOLD: Duration = Duration::from_secs(1);

/// A bound on the free slots counted, so a count that ran ahead of the
/// slots (acks of a runtime that then stopped) cannot grow without end; an
/// item ridden for a slot that is not there is given back after [`HOLD`].
const MAX_FREE: usize = 256;

/// What a fetch asked for: `K` is what must match for another fetch to
/// take its item (version range; tag filter), with the lock timeout.
#[derive(Clone)]
pub(super) struct Asked<K> {
    pub(super) lock_timeout: Duration,
    pub(super) key: K,
}

/// Gives a ridden item back to the queue, by its lock token.
pub(super) type Abandon =
    Box<dyn FnOnce(String) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

struct Ridden<K, T> {
    asked: Asked<K>,
    item: Fetched<T>,
    abandon: Abandon,
    /// The mark of the ack that fetched it ([`super::ACK_MARK`]).
    mark: Option<Arc<AckMark>>,
}

/// One queue's ridden items and how many of its slots are free.
pub(super) struct Rides<K, T> {
    /// What the last fetch that reached the store asked for, and how many
    /// slots are free with no item ridden for them: a slot's ack adds one
    /// (its fetch comes next), a fetch that found nothing makes it at least
    /// one, and a fetch that found an item in the store and the ack that
    /// rides for a slot take one (a slot that takes a ridden item was
    /// taken when the ride was). Counted, not a flag: with one flag, a
    /// runtime whose eight worker slots were idle rode one turn's activity
    /// and then none until a slot acked or found nothing, because the
    /// wake-up layer answers idle slots' looks without calling down (176
    /// rides for 400 activities in 400 hellos).
    free: Mutex<(Option<Asked<K>>, usize)>,
    waiting: Arc<Mutex<Vec<Ridden<K, T>>>>,
    /// Items given back because no fetch took them within the hold.
    untaken: Arc<AtomicU64>,
}

impl<K, T> Default for Rides<K, T> {
    fn default() -> Self {
        Self {
            free: Mutex::new((None, 0)),
            waiting: Arc::default(),
            untaken: Arc::default(),
        }
    }
}

impl<K: Clone + PartialEq + Send + 'static, T: Send + 'static> Rides<K, T> {
    /// Records what a fetch that reached the store found.
    pub(super) fn fetched(&self, asked: Asked<K>, found: bool) {
        let mut free = self.free.lock().expect("rides");
        free.0 = Some(asked);
        free.1 = if found {
            free.1.saturating_sub(1)
        } else {
            free.1.max(1)
        };
    }

    /// A slot of this queue acked: it fetches next.
    pub(super) fn acked(&self) {
        let mut free = self.free.lock().expect("rides");
        free.1 = (free.1 + 1).min(MAX_FREE);
    }

    /// What a free slot would ask for, if one is free; a ride takes it.
    pub(super) fn take_free(&self) -> Option<Asked<K>> {
        let mut free = self.free.lock().expect("rides");
        let asked = free.0.clone().filter(|_| free.1 > 0)?;
        free.1 -= 1;
        Some(asked)
    }

    /// A ridden item for a fetch that asks the same: `key`, and the lock
    /// timeout its runtime renews the lock by; with the mark of the ack that
    /// fetched it, under the wake-up layer.
    pub(super) fn take(
        &self,
        lock_timeout: Duration,
        key: &K,
    ) -> Option<(Fetched<T>, Option<Arc<AckMark>>)> {
        let mut waiting = self.waiting.lock().expect("rides");
        let at = waiting
            .iter()
            .position(|r| r.asked.key == *key && r.asked.lock_timeout == lock_timeout)?;
        let r = waiting.remove(at);
        Some((r.item, r.mark))
    }

    /// Keeps `item` for the next fetch that asks the same; gives it back
    /// with `abandon` if none takes it within [`HOLD`] (or half the lock).
    pub(super) fn hold(&self, asked: Asked<K>, item: Fetched<T>, abandon: Abandon) {
        let hold = HOLD.min(asked.lock_timeout / 2);
        let token = item.1.clone();
        self.waiting.lock().expect("rides").push(Ridden {
            asked,
            item,
            abandon,
            mark: super::ACK_MARK.try_with(Arc::clone).ok(),
        });
        let waiting = Arc::downgrade(&self.waiting);
        let untaken_count = self.untaken.clone();
        tokio::spawn(async move {
            tokio::time::sleep(hold).await;
            let Some(waiting) = waiting.upgrade() else {
                return;
            };
            let untaken = {
                let mut waiting = waiting.lock().expect("rides");
                let at = waiting.iter().position(|r| r.item.1 == token);
                at.map(|at| waiting.remove(at))
            };
            if let Some(r) = untaken {
                untaken_count.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(target: "duroxide_node::providers", held_ms = hold.as_millis() as u64, "no fetch took an item an ack fetched; giving it back");
                (r.abandon)(token).await;
            }
        });
    }

    /// Gives every waiting item back now: a runtime stopped, and the slot
    /// it was fetched for may have been one of its own. Its slots are not
    /// free either: the count starts again from the acks and fetches of
    /// the runtimes left.
    pub(super) async fn give_back(&self) {
        self.free.lock().expect("rides").1 = 0;
        let untaken = std::mem::take(&mut *self.waiting.lock().expect("rides"));
        for r in untaken {
            (r.abandon)(r.item.1).await;
        }
    }

    /// Items waiting for a fetch.
    pub(super) fn waiting(&self) -> usize {
        self.waiting.lock().expect("rides").len()
    }

    /// Whether a slot of this queue is free (see `free`).
    #[cfg(test)]
    pub(super) fn has_free_slot(&self) -> bool {
        self.free_slots() > 0
    }

    /// How many slots of this queue are counted free (see `free`).
    #[cfg(test)]
    pub(super) fn free_slots(&self) -> usize {
        self.free.lock().expect("rides").1
    }

    /// Items given back because no fetch took them within the hold.
    #[cfg(test)]
    pub(super) fn untaken(&self) -> u64 {
        self.untaken.load(Ordering::Relaxed)
    }
}

/// A combined call that failed rolled back its ack and its fetch alike:
/// `Ok(false)` runs the crate's ack (`kept_calls::after_failure`).
fn failed(op: &'static str, e: sqlx::Error) -> Result<bool, ProviderError> {
    after_failure(op, e).map(|()| false)
}

/// A tag filter as duroxide-pg's `fetch_work_item` takes it: mode, names.
pub(super) type Tags = (&'static str, Vec<String>);

/// duroxide-pg's packing of a tag filter (`tag_filter_to_sql`).
pub(super) fn tags(filter: &TagFilter) -> Tags {
    let sorted = |set: &std::collections::HashSet<String>| {
        let mut tags: Vec<String> = set.iter().cloned().collect();
        tags.sort();
        tags
    };
    match filter {
        TagFilter::DefaultOnly => ("default_only", vec![]),
        TagFilter::Tags(set) => ("tags", sorted(set)),
        TagFilter::DefaultAnd(set) => ("default_and", sorted(set)),
        TagFilter::Any => ("any", vec![]),
        TagFilter::None => ("none", vec![]),
    }
}

impl HistoryTail {
    /// Acks a worker's item and fetches the next turn in one call; the
    /// turn waits for this provider's next orchestration fetch. `false`
    /// when nothing was committed (the caller acks the crate's way).
    pub(super) async fn ride_worker(
        &self,
        next: &Arc<dyn Provider>,
        token: &str,
        completion: &WorkItem,
    ) -> Result<bool, ProviderError> {
        let (WorkItem::ActivityCompleted { instance, .. }
        | WorkItem::ActivityFailed { instance, .. }) = completion
        else {
            return Ok(false);
        };
        // A turn of the instance holds its lock here: the fetch would find
        // its completion locked, and the turn's slot fetches it next anyway.
        let in_turn = self
            .histories
            .lock()
            .expect("histories")
            .turning
            .values()
            .any(|i| i == instance);
        if in_turn {
            return Ok(false);
        }
        let (Some(asked), Ok(serialized)) =
            (self.turns.take_free(), serde_json::to_string(completion))
        else {
            return Ok(false);
        };
        let ack = Some((token, instance.as_str(), serialized.as_str()));
        AckMark::fetches_turn();
        // An error rolled back ack and fetch alike.
        let row = match self.query(ack, asked.lock_timeout, asked.key).await {
            Ok(row) => row,
            Err(e) => return failed("ack_work_item", e),
        };
        self.turns_queued.store(row.is_some(), Ordering::Relaxed);
        let Some(row) = row else {
            return Ok(true);
        };
        self.hold_turn(next, asked, row).await;
        Ok(true)
    }

    /// Keeps a turn an ack fetched for the next orchestration fetch that
    /// asks the same.
    pub(super) async fn hold_turn(&self, next: &Arc<dyn Provider>, asked: Asked<Range>, row: Row) {
        let lock_token = row.6.clone();
        match self.item(next, row).await {
            Ok(Some(item)) => {
                let store = next.clone();
                let histories = self.histories.clone();
                let abandon: Abandon = Box::new(move |token| {
                    Box::pin(async move {
                        // If this fails, its lock expires instead.
                        let _ = store.abandon_orchestration_item(&token, None, true).await;
                        histories.lock().expect("histories").ended(&token);
                    })
                });
                self.turns.hold(asked, item, abandon);
            }
            Ok(None) => {}
            // The ack stands; the turn goes back to the queue.
            Err(_) => {
                let _ = next
                    .abandon_orchestration_item(&lock_token, None, true)
                    .await;
                self.histories.lock().expect("histories").ended(&lock_token);
            }
        }
    }

    /// Acks a turn (`ack`: the crate's ack arguments, `pg_packing.rs`) and
    /// fetches the next turn in one call, for the slot that acked: duroxide's orchestration slot fetches again as soon as
    /// its ack returns, with the same arguments (`asked`). `None` when
    /// nothing was committed (the caller acks the crate's way); otherwise
    /// the row it fetched, for the caller to hold once its own bookkeeping
    /// of the acked turn is done (the row may be the same instance's next
    /// turn).
    pub(super) async fn ride_next_turn(
        &self,
        ack: PgArguments,
        asked: &Asked<Range>,
        acked: Option<&Held>,
    ) -> Result<Option<Option<Row>>, ProviderError> {
        let sql = &self.statements.ack_turn_fetch_turn;
        AckMark::fetches_turn();
        // What is held is read once the call has its connection (see
        // `HistoryTail::query`).
        let row: Result<Option<Row>, sqlx::Error> = self
            .kept
            .fetch_optional_built(|| {
                let mut known = self.histories.lock().expect("histories").known();
                // The fetch may lock the acked instance again (a fan-out's
                // next completions): it then sends only what follows the
                // acked turn, which the caller puts back before it holds
                // the fetched turn.
                if let Some(h) = acked.filter(|h| h.history.len() >= MIN_EVENTS) {
                    let at = match known.0.iter().position(|i| *i == h.instance) {
                        Some(at) => at,
                        None => {
                            known.0.push(h.instance.clone());
                            known.1.push(0);
                            known.2.push(0);
                            known.3.push(String::new());
                            known.0.len() - 1
                        }
                    };
                    known.1[at] = h.execution_id as i64;
                    known.2[at] = h.last_event_id() as i64;
                    known.3[at] = h.identity.clone();
                }
                sqlx::query_as_with(sql, ack)
                    .bind(known.0)
                    .bind(known.1)
                    .bind(known.2)
                    .bind(known.3)
                    .bind(asked.lock_timeout.as_millis() as i64)
                    .bind(asked.key.0)
                    .bind(asked.key.1)
            })
            .await;
        // An error rolled back ack and fetch alike.
        match row {
            Ok(row) => Ok(Some(row)),
            Err(e) => failed("ack_orchestration_item", e).map(|_| None),
        }
    }

    /// What a free worker slot would ask for, when this turn's worker items
    /// are worth a ride.
    pub(super) fn work_free(&self, worker_items: &[WorkItem]) -> Option<Asked<Tags>> {
        if worker_items.is_empty() {
            return None;
        }
        self.work.take_free()
    }

    /// Acks a turn (`ack` as above) and fetches a worker item in one call; the item waits
    /// for this provider's next worker fetch. `false` when nothing was
    /// committed (the caller acks the crate's way).
    pub(super) async fn ride_turn(
        &self,
        next: &Arc<dyn Provider>,
        ack: PgArguments,
        asked: Asked<Tags>,
    ) -> Result<bool, ProviderError> {
        let sql = &self.statements.ack_turn_fetch_work;
        AckMark::fetches_work();
        let row: Result<Option<(String, String, i32)>, sqlx::Error> = self
            .kept
            .fetch_optional(
                sqlx::query_as_with(sql, ack)
                    .bind(asked.lock_timeout.as_millis() as i64)
                    .bind(&asked.key.1)
                    .bind(asked.key.0),
            )
            .await;
        // An error rolled back ack and fetch alike.
        let row = match row {
            Ok(row) => row,
            Err(e) => return failed("ack_orchestration_item", e),
        };
        if let Some((item, token, attempts)) = row {
            let store = next.clone();
            match serde_json::from_str::<WorkItem>(&item) {
                Ok(item) => {
                    let abandon: Abandon = Box::new(move |token| {
                        Box::pin(async move {
                            // If this fails, its lock expires instead.
                            let _ = store.abandon_work_item(&token, None, true).await;
                        })
                    });
                    self.work
                        .hold(asked, (item, token, attempts as u32), abandon);
                }
                // The crate's own fetch of it reports what is wrong with it.
                Err(_) => {
                    let _ = store.abandon_work_item(&token, None, true).await;
                }
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked() -> Asked<u8> {
        Asked {
            lock_timeout: Duration::from_secs(5),
            key: 1,
        }
    }

    fn rides_taken(rides: &Rides<u8, ()>) -> usize {
        std::iter::from_fn(|| rides.take_free()).count()
    }

    #[test]
    fn each_free_slot_is_ridden_for_once() {
        let rides: Rides<u8, ()> = Rides::default();
        rides.acked();
        assert_eq!(rides_taken(&rides), 0, "no fetch has said what it asks");
        // Looks that found nothing may be one slot's: one ride.
        rides.fetched(asked(), false);
        rides.fetched(asked(), false);
        assert_eq!(rides_taken(&rides), 1);
        // Three slots acked: each fetches next.
        for _ in 0..3 {
            rides.acked();
        }
        assert_eq!(rides_taken(&rides), 3);
        // One of two acked slots found an item in the store.
        rides.acked();
        rides.acked();
        rides.fetched(asked(), true);
        assert_eq!(rides_taken(&rides), 1);
        for _ in 0..2 * MAX_FREE {
            rides.acked();
        }
        assert_eq!(rides.free_slots(), MAX_FREE);
    }

    #[tokio::test]
    async fn a_stopped_runtimes_slots_are_not_counted_free() {
        let rides: Rides<u8, ()> = Rides::default();
        rides.fetched(asked(), false);
        rides.acked();
        rides.acked();
        rides.give_back().await;
        assert_eq!(rides_taken(&rides), 0);
    }
}
