//! Virtual time for `TestEnv`: a provider layer that holds timers until
//! virtual time reaches them, and that knows when nothing else can run.
//!
//! duroxide computes a timer's `fire_at_ms` from the wall clock when the
//! orchestration schedules it, and the store keeps the `TimerFired` message
//! invisible until then. Here virtual now is wall now plus an offset that only
//! `advance`/`skipTime` grow (`time.rs`). When a turn is acked, every
//! `TimerFired` still in the future is taken out of the ack and held, due at
//! `fire_at_ms + offset` in virtual time; once virtual time reaches it, it is
//! enqueued with `fire_at_ms` set to wall now, so the store shows it at once.
//! duroxide matches a `TimerFired` to its `TimerCreated` by id, never by
//! `fire_at_ms`, and replay matches timers by position, so the changed fire
//! time is accepted (the history's `TimerFired` records the wall time of the
//! release).
//!
//! `ctx.utcNow()` is duroxide's `utc_now_ms` syscall activity: its result
//! (wall ms) is shifted by the offset when it is acked, so orchestrations read
//! virtual time.
//!
//! Idle ("nothing else can run", [`Clock::busy`]): no call that fetches,
//! acks, abandons or enqueues is running in the layer, no fetched message is
//! waiting for its ack or abandon, and neither queue holds an unlocked
//! message (visible or delayed); and no such call started while the queues
//! were counted. Every step of an instance keeps one of these true until the
//! next step is queued (an ack enqueues what follows in its own transaction),
//! so one idle observation is enough. `time.rs` moves the offset only when
//! idle, so it is constant while any message is in flight.
//!
//! The layer sits under the wake-up layer, so it sees every store fetch (the
//! long poll fetches repeatedly); releases by `advance` go through the top of
//! the stack so that waiting dispatchers wake. A fetch also releases what
//! virtual time reached on its own (wall time keeps flowing).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use duroxide::providers::{
    DispatcherCapabilityFilter, ExecutionMetadata, OrchestrationItem, Provider, ProviderError,
    ScheduledActivityIdentifier, SessionFetchConfig, TagFilter, WorkItem,
};
use duroxide::Event;

use crate::providers::layer::Layer;

/// duroxide's `ctx.utc_now()` activity (the crate keeps the constant private).
const UTC_NOW_ACTIVITY: &str = "__duroxide_syscall:utc_now_ms";

pub(crate) fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A message fetched and not yet acked or abandoned.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fetched {
    Message,
    /// A `ctx.utcNow()` activity, whose result gets the offset.
    UtcNow,
}

/// What kept [`Clock::busy`] from seeing idle.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Busy {
    pub(crate) orchestrator_queue: usize,
    pub(crate) worker_queue: usize,
    pub(crate) in_flight: usize,
}

/// The virtual clock of one `TestEnv` store.
#[derive(Default)]
pub(crate) struct Clock {
    offset_ms: AtomicU64,
    /// Held `TimerFired` messages by (virtual due, arrival).
    held: Mutex<BTreeMap<(u64, u64), WorkItem>>,
    arrivals: AtomicU64,
    fetched: Mutex<HashMap<String, Fetched>>,
    /// Calls that fetch, ack, abandon or enqueue, running now.
    calls: AtomicUsize,
    /// Bumped when such a call starts.
    generation: AtomicU64,
}

/// Counts a call as running for as long as it lives.
struct Running<'a>(&'a Clock);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.calls.fetch_sub(1, SeqCst);
    }
}

impl Clock {
    fn running(&self) -> Running<'_> {
        self.calls.fetch_add(1, SeqCst);
        self.generation.fetch_add(1, SeqCst);
        Running(self)
    }

    fn offset(&self) -> u64 {
        self.offset_ms.load(SeqCst)
    }

    /// Virtual now, epoch ms.
    pub(crate) fn now_ms(&self) -> u64 {
        wall_ms().saturating_add(self.offset())
    }

    /// Moves virtual now to `at_ms` if it is not there yet; never back.
    pub(crate) fn reach(&self, at_ms: u64) {
        self.offset_ms
            .fetch_max(at_ms.saturating_sub(wall_ms()), SeqCst);
    }

    /// The virtual due time of the earliest held timer.
    pub(crate) fn next_due(&self) -> Option<u64> {
        let held = self.held.lock().expect("held timers");
        held.keys().next().map(|(due, _)| *due)
    }

    pub(crate) fn held_count(&self) -> usize {
        self.held.lock().expect("held timers").len()
    }

    /// Forgets every held timer (the environment shut down).
    pub(crate) fn clear(&self) {
        self.held.lock().expect("held timers").clear();
    }

    /// Holds `timers`; returns their keys, for [`Clock::unhold`].
    fn hold(&self, timers: Vec<WorkItem>) -> Vec<(u64, u64)> {
        let offset = self.offset();
        let mut held = self.held.lock().expect("held timers");
        let mut keys = Vec::with_capacity(timers.len());
        for timer in timers {
            if let WorkItem::TimerFired { fire_at_ms, .. } = &timer {
                let key = (
                    fire_at_ms.saturating_add(offset),
                    self.arrivals.fetch_add(1, SeqCst),
                );
                held.insert(key, timer);
                keys.push(key);
            }
        }
        keys
    }

    fn unhold(&self, keys: &[(u64, u64)]) {
        let mut held = self.held.lock().expect("held timers");
        for key in keys {
            held.remove(key);
        }
    }

    /// Enqueues, through `via`, every held timer virtual now has reached, in
    /// due order. Returns how many.
    pub(crate) async fn release_due(
        &self,
        via: &Arc<dyn Provider>,
    ) -> Result<usize, ProviderError> {
        let due: Vec<((u64, u64), WorkItem)> = {
            let mut held = self.held.lock().expect("held timers");
            let later = held.split_off(&(self.now_ms().saturating_add(1), 0));
            std::mem::replace(&mut *held, later).into_iter().collect()
        };
        let count = due.len();
        let mut pending = due.into_iter();
        while let Some((key, timer)) = pending.next() {
            let mut visible = timer.clone();
            if let WorkItem::TimerFired { fire_at_ms, .. } = &mut visible {
                *fire_at_ms = (*fire_at_ms).min(wall_ms());
            }
            if let Err(e) = via.enqueue_for_orchestrator(visible, None).await {
                let mut held = self.held.lock().expect("held timers");
                held.insert(key, timer);
                held.extend(pending);
                return Err(e);
            }
        }
        Ok(count)
    }

    fn in_flight(&self) -> usize {
        self.calls.load(SeqCst) + self.fetched.lock().expect("fetched").len()
    }

    /// `None` when nothing can run (see the module docs); `store` is the
    /// stack under this layer.
    pub(crate) async fn busy(
        &self,
        store: &Arc<dyn Provider>,
    ) -> Result<Option<Busy>, ProviderError> {
        let generation = self.generation.load(SeqCst);
        let in_flight = self.in_flight();
        if in_flight > 0 {
            return Ok(Some(Busy {
                in_flight,
                ..Busy::default()
            }));
        }
        let admin = store.as_management_capability().ok_or_else(|| {
            ProviderError::permanent("busy", "the store has no management capability")
        })?;
        let depths = admin.get_queue_depths().await?;
        let busy = Busy {
            orchestrator_queue: depths.orchestrator_queue,
            worker_queue: depths.worker_queue,
            in_flight: self.in_flight(),
        };
        let moved = self.generation.load(SeqCst) != generation;
        if moved || busy != Busy::default() {
            return Ok(Some(busy));
        }
        Ok(None)
    }

    fn fetched(&self, token: &str, kind: Fetched) {
        self.fetched
            .lock()
            .expect("fetched")
            .insert(token.to_string(), kind);
    }

    fn settled(&self, token: &str) -> Option<Fetched> {
        self.fetched.lock().expect("fetched").remove(token)
    }

    /// Runs a store call that acks or abandons `token`, counted as running
    /// until it returns, so the idle check never sees the item in between.
    async fn settling<T>(&self, token: &str, call: impl std::future::Future<Output = T>) -> T {
        let _running = self.running();
        let out = call.await;
        self.settled(token);
        out
    }

    /// A `ctx.utcNow()` result in virtual time.
    fn shifted(&self, completion: Option<WorkItem>) -> Option<WorkItem> {
        match completion {
            Some(WorkItem::ActivityCompleted {
                instance,
                execution_id,
                id,
                result,
            }) => {
                let result = match result.parse::<u64>() {
                    Ok(ms) => ms.saturating_add(self.offset()).to_string(),
                    Err(_) => result,
                };
                Some(WorkItem::ActivityCompleted {
                    instance,
                    execution_id,
                    id,
                    result,
                })
            }
            other => other,
        }
    }
}

#[async_trait]
impl Layer for Clock {
    async fn fetch_orchestration_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        poll_timeout: Duration,
        filter: Option<&DispatcherCapabilityFilter>,
    ) -> Result<Option<(OrchestrationItem, String, u32)>, ProviderError> {
        let _running = self.running();
        self.release_due(next).await?;
        let fetched = next
            .fetch_orchestration_item(lock_timeout, poll_timeout, filter)
            .await?;
        if let Some((_, token, _)) = &fetched {
            self.fetched(token, Fetched::Message);
        }
        Ok(fetched)
    }

    async fn fetch_work_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        poll_timeout: Duration,
        session: Option<&SessionFetchConfig>,
        tag_filter: &TagFilter,
    ) -> Result<Option<(WorkItem, String, u32)>, ProviderError> {
        let _running = self.running();
        let fetched = next
            .fetch_work_item(lock_timeout, poll_timeout, session, tag_filter)
            .await?;
        if let Some((item, token, _)) = &fetched {
            let kind = match item {
                WorkItem::ActivityExecute { name, .. } if name == UTC_NOW_ACTIVITY => {
                    Fetched::UtcNow
                }
                _ => Fetched::Message,
            };
            self.fetched(token, kind);
        }
        Ok(fetched)
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
        let _running = self.running();
        let wall = wall_ms();
        let (timers, now): (Vec<WorkItem>, Vec<WorkItem>) =
            orchestrator_items.into_iter().partition(
                |i| matches!(i, WorkItem::TimerFired { fire_at_ms, .. } if *fire_at_ms > wall),
            );
        // Held before the ack, so they are pending as soon as the turn's
        // other messages can be fetched; dropped again if the ack fails (the
        // turn then runs again and schedules them again).
        let keys = self.hold(timers);
        let acked = next
            .ack_orchestration_item(
                lock_token,
                execution_id,
                history_delta,
                worker_items,
                now,
                metadata,
                cancelled_activities,
            )
            .await;
        if acked.is_err() {
            self.unhold(&keys);
        }
        self.settled(lock_token);
        acked
    }

    async fn ack_work_item(
        &self,
        next: &Arc<dyn Provider>,
        token: &str,
        completion: Option<WorkItem>,
    ) -> Result<(), ProviderError> {
        let completion = match self.fetched.lock().expect("fetched").get(token) {
            Some(Fetched::UtcNow) => self.shifted(completion),
            _ => completion,
        };
        self.settling(token, next.ack_work_item(token, completion))
            .await
    }

    async fn abandon_orchestration_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_token: &str,
        delay: Option<Duration>,
        ignore_attempt: bool,
    ) -> Result<(), ProviderError> {
        self.settling(
            lock_token,
            next.abandon_orchestration_item(lock_token, delay, ignore_attempt),
        )
        .await
    }

    async fn abandon_work_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_token: &str,
        delay: Option<Duration>,
        ignore_attempt: bool,
    ) -> Result<(), ProviderError> {
        self.settling(
            lock_token,
            next.abandon_work_item(lock_token, delay, ignore_attempt),
        )
        .await
    }

    async fn enqueue_for_orchestrator(
        &self,
        next: &Arc<dyn Provider>,
        item: WorkItem,
        delay: Option<Duration>,
    ) -> Result<(), ProviderError> {
        let _running = self.running();
        next.enqueue_for_orchestrator(item, delay).await
    }

    async fn enqueue_for_worker(
        &self,
        next: &Arc<dyn Provider>,
        item: WorkItem,
    ) -> Result<(), ProviderError> {
        let _running = self.running();
        next.enqueue_for_worker(item).await
    }
}

#[cfg(test)]
mod tests;
