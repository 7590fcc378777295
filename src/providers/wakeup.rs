//! The wake-up layer: an idle dispatcher waits in its fetch instead of
//! polling the store.
//!
//! duroxide's dispatchers pass `dispatcherLongPollTimeoutMs` as the fetch's
//! `poll_timeout` and fetch again at once after a fetch that took longer than
//! `dispatcherPollIntervalMs`; neither store waits (both ignore
//! `poll_timeout`), so an idle runtime polls every `dispatcherPollIntervalMs`
//! per dispatcher slot. Here a fetch that finds nothing waits, up to
//! `poll_timeout`, for one of:
//! - a wake-up of its queue: an enqueue, ack or abandon through this provider
//!   (clients and runtimes of this process), or, on Postgres, a notification
//!   from another process (`wakeup/listen.rs`: one LISTEN connection per
//!   provider);
//! - the due time of a message that becomes visible later (a timer, a delayed
//!   abandon), learned from this process's acks or from a notification;
//! - the fallback tick ([`FALLBACK`]): notifications can be lost (the listen
//!   connection drops, another process crashes after committing, a lease
//!   expires), so the store is looked at again at least this often. One
//!   slot's empty look covers the others' ticks for items any slot may
//!   take; a session owner looks for the items only it may take at least
//!   every [`OWNER_TICKS`] ticks. A lost notification costs latency, never
//!   work.
//!
//! A wake-up wakes every waiter of its queue, but woken waiters look one
//! at a time and skip looks that empty looks since the wake-up cover
//! (`wakeup/signal.rs`). Looks for a due time always run; a dispatcher's
//! first look after work runs unless covered (a worker slot's waits first
//! for the looks running when they may be taking what is left).
//!
//! A provider's options set it ([`WakeupOptions`]): `listen: false` turns
//! off LISTEN/NOTIFY (a Postgres process then behaves as one on SQLite, and
//! learns of other processes' work from the fallback tick only, as behind a
//! connection pooler without LISTEN), `fallbackPollMs` sets the fallback
//! tick.

pub(crate) mod ended;
mod listen;
mod signal;
mod waiters;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use duroxide::providers::{
    DispatcherCapabilityFilter, ExecutionMetadata, OrchestrationItem, Provider, ProviderError,
    ScheduledActivityIdentifier, SessionFetchConfig, TagFilter, WorkItem,
};
use duroxide::Event;
use tokio_util::sync::CancellationToken;

use super::history_tail::{AckMark, ACK_MARK};
use super::layer::{Layer, Stacked};
use super::Backend;
pub(crate) use signal::Reach;
use signal::{Expected, Fetched, Fetcher, Look, Signal};
use waiters::epoch_ms_now;
pub(crate) use waiters::Wakeups;

/// How often a waiting fetch looks at the store even without a wake-up.
pub(crate) const FALLBACK: Duration = Duration::from_secs(1);

tokio::task_local! {
    /// Set by a caller that can give up on a fetch (the guard, when the
    /// dispatcher dropped it): a waiting fetch then returns empty at once. The
    /// store call itself is never cut short, so no lock is taken and lost.
    pub(crate) static GIVE_UP: CancellationToken;
}

/// Which queue a wake-up is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Queue {
    Orchestrator,
    Worker,
}

/// The wake-up layer of one provider.
pub(crate) struct Wakeup {
    shared: Arc<Wakeups>,
    /// Clients of this process waiting on instances to end.
    endings: Arc<ended::Endings>,
    /// Postgres: tells other processes; `None` on SQLite.
    announce: Option<listen::Announcer>,
    /// Postgres: hears other processes, from the first fetch on.
    listening: Option<listen::Listening>,
    /// Turns in flight: lock token -> when their instance was locked.
    turns: Mutex<HashMap<String, Seen>>,
    /// Postgres: what acks fetched for the next fetch of their queue
    /// (`history_tail/ride.rs`). A turn's ack fetches the next turn for
    /// its own slot without announcing anything, so that slot's first
    /// look must reach the store layer even when empty looks cover it.
    ridden: Option<crate::providers::history_tail::Ridden>,
}

/// When a turn in flight locked its instance, in orchestrator-queue wake-up
/// generations: before the look that fetched it, or, for a turn an ack
/// fetched (`history_tail/ride.rs`), before that ack, not counting the
/// wake-ups the ack made itself (for its own messages, which the fetch in
/// the same transaction saw).
struct Seen {
    look: u64,
    ack: Option<Arc<AckMark>>,
}

impl Seen {
    fn locked_at(&self) -> u64 {
        match &self.ack {
            Some(m) => self
                .look
                .min(m.before + m.own_wakes.load(Ordering::Relaxed)),
            None => self.look,
        }
    }
}

/// Turns in flight remembered; past this all are forgotten, and their acks
/// wake the orchestrator queue as if something had arrived meanwhile.
const MAX_TURNS: usize = 4096;

impl Wakeup {
    fn fetching(&self) {
        if let Some(l) = &self.listening {
            l.ensure_started(&self.shared);
        }
    }

    /// A fetch's first look: always, while an ack's fetched item for
    /// `queue` waits below (covered looks would leave it there until the
    /// hold gives it back).
    fn first_look(&self, queue: Queue) -> Look {
        let held = self.ridden.as_ref().is_some_and(|r| match queue {
            Queue::Orchestrator => r.holds_turns(),
            Queue::Worker => r.holds_work(),
        });
        match held {
            true => Look::Always,
            false => Look::First,
        }
    }

    fn wake(&self, queue: Queue, reach: Reach, announced: Option<u64>) {
        self.shared.wake(queue, reach, announced);
        if let Some(a) = &self.announce {
            a.announce(queue, None);
        }
    }

    /// Counts what a call is about to commit to `queue`, before the call
    /// (`signal.rs`); [`Self::woke`] after its commit.
    fn expect(&self, queue: Queue, reach: Reach, n: u64) -> Expected<'_> {
        self.shared.signal(queue).expect(reach, n)
    }

    fn woke(&self, queue: Queue, expected: Expected<'_>, fetched: Fetched) {
        expected.woke(fetched);
        if let Some(a) = &self.announce {
            a.announce(queue, None);
        }
    }

    /// An abandoned item is visible again at once, or after its delay.
    fn abandoned(&self, queue: Queue, delay: Option<Duration>) {
        match delay {
            Some(d) if !d.is_zero() => self.due_in(queue, d),
            // The item is unknown here: it may be a session's.
            _ => self.wake(queue, Reach::Owned, None),
        }
    }

    fn due_in(&self, queue: Queue, delay: Duration) {
        let at_ms = epoch_ms_now().saturating_add(delay.as_millis() as u64);
        self.due(queue, at_ms);
    }

    fn due(&self, queue: Queue, at_ms: u64) {
        self.shared.due_at_epoch_ms(queue, at_ms);
        if let Some(a) = &self.announce {
            a.announce(queue, Some(at_ms));
        }
    }

    /// When an orchestrator-queue message that is not visible now becomes
    /// visible: at its timer, or after its delay.
    fn enqueued_for_orchestrator(&self, item: &WorkItem, delay: Option<Duration>) {
        match (item, delay) {
            (WorkItem::TimerFired { fire_at_ms, .. }, _) if *fire_at_ms > epoch_ms_now() => {
                self.due(Queue::Orchestrator, *fire_at_ms)
            }
            (_, Some(d)) if !d.is_zero() => self.due_in(Queue::Orchestrator, d),
            _ => self.wake(Queue::Orchestrator, Reach::Any, Some(1)),
        }
    }

    /// Whether the orchestrator queue was woken since the fetch of the turn
    /// holding `lock_token`, up to now (and forgets the turn). Unknown turns
    /// count as woken.
    fn woken_during_turn(&self, lock_token: &str) -> bool {
        let seen = self.turns.lock().expect("turns").remove(lock_token);
        seen.is_none_or(|s| self.shared.orchestrator.generation() > s.locked_at())
    }

    /// An ack's mark, for a turn it may fetch (`history_tail/ride.rs`).
    fn mark(&self) -> Arc<AckMark> {
        Arc::new(AckMark {
            before: self.shared.orchestrator.generation(),
            ..AckMark::default()
        })
    }
}

/// What an ack's call fetched from a queue, as its mark says.
fn fetched(flag: &AtomicBool) -> Fetched {
    match flag.load(Ordering::Relaxed) {
        true => Fetched::Maybe,
        false => Fetched::Nothing,
    }
}

/// Whether an orchestrator-queue message is visible as soon as it commits.
fn visible_now(item: &WorkItem, delay: Option<Duration>) -> bool {
    match (item, delay) {
        (WorkItem::TimerFired { fire_at_ms, .. }, _) if *fire_at_ms > epoch_ms_now() => false,
        (_, Some(d)) => d.is_zero(),
        _ => true,
    }
}

/// Who can take worker items: any slot, unless one is a session's.
fn reach_of(items: &[WorkItem]) -> Reach {
    let outside_sessions = |i: &WorkItem| {
        matches!(
            i,
            WorkItem::ActivityExecute {
                session_id: None,
                ..
            }
        )
    };
    if items.iter().all(outside_sessions) {
        Reach::Any
    } else {
        Reach::Owned
    }
}

/// How a provider's idle dispatchers learn of work: its `listen` and
/// `fallbackPollMs` options.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WakeupOptions {
    /// Postgres LISTEN/NOTIFY across processes.
    pub(crate) listen: bool,
    pub(crate) fallback: Duration,
}

impl WakeupOptions {
    pub(crate) fn of(listen: Option<bool>, fallback_ms: Option<u32>) -> Self {
        Self {
            listen: listen.unwrap_or(true),
            fallback: fallback_ms.map_or(FALLBACK, |ms| Duration::from_millis(ms.into())),
        }
    }
}

/// `next` under the wake-up layer; turns that end an instance wake its
/// waiters in `endings`.
pub(crate) fn with_wakeups(
    next: Arc<dyn Provider>,
    backend: &Backend,
    endings: Arc<ended::Endings>,
    options: WakeupOptions,
) -> Arc<dyn Provider> {
    let shared = Arc::new(Wakeups {
        orchestrator: Signal::default(),
        worker: Signal::taking_turns(),
        fallback: options.fallback,
        skip_covered: true,
    });
    stacked(next, backend, endings, shared, options.listen)
}

fn stacked(
    next: Arc<dyn Provider>,
    backend: &Backend,
    endings: Arc<ended::Endings>,
    shared: Arc<Wakeups>,
    across_processes: bool,
) -> Arc<dyn Provider> {
    let (announce, listening) = match backend {
        Backend::Postgres { pool, schema, .. } if across_processes => {
            let (a, l) = listen::start(pool.clone(), schema);
            (Some(a), Some(l))
        }
        _ => (None, None),
    };
    Stacked::over(
        Wakeup {
            shared,
            endings,
            announce,
            listening,
            turns: Mutex::default(),
            ridden: backend.ridden(),
        },
        next,
    )
}

#[async_trait]
impl Layer for Wakeup {
    async fn fetch_orchestration_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        poll_timeout: Duration,
        filter: Option<&DispatcherCapabilityFilter>,
    ) -> Result<Option<(OrchestrationItem, String, u32)>, ProviderError> {
        self.fetching();
        let filter_key = format!("{filter:?}");
        let who = Fetcher {
            filter: &filter_key,
            owner: "",
        };
        let fetched = self
            .shared
            .long_poll(
                Queue::Orchestrator,
                &who,
                self.first_look(Queue::Orchestrator),
                poll_timeout,
                || next.fetch_orchestration_item(lock_timeout, Duration::ZERO, filter),
            )
            .await?;
        Ok(fetched.map(|(item, generation)| {
            let seen = Seen {
                look: generation,
                ack: self.ridden.as_ref().and_then(|r| r.locked_at(&item.1)),
            };
            let mut turns = self.turns.lock().expect("turns");
            if turns.len() >= MAX_TURNS {
                turns.clear();
            }
            turns.insert(item.1.clone(), seen);
            item
        }))
    }

    async fn fetch_work_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        poll_timeout: Duration,
        session: Option<&SessionFetchConfig>,
        tag_filter: &TagFilter,
    ) -> Result<Option<(WorkItem, String, u32)>, ProviderError> {
        self.fetching();
        // duroxide fetches without a session config only while its runtime is
        // at `maxSessionsPerRuntime`, and learns that a session ended only
        // between fetches: such a fetch waits no longer than the fallback
        // tick, or a queued session item would wait out the whole long poll.
        let poll_timeout = match session {
            None => poll_timeout.min(self.shared.fallback),
            Some(_) => poll_timeout,
        };
        let filter_key = format!("sessions: {} {tag_filter:?}", session.is_some());
        let who = Fetcher {
            filter: &filter_key,
            owner: session.map_or("", |s| &s.owner_id),
        };
        let fetched = self
            .shared
            .long_poll(
                Queue::Worker,
                &who,
                self.first_look(Queue::Worker),
                poll_timeout,
                || next.fetch_work_item(lock_timeout, Duration::ZERO, session, tag_filter),
            )
            .await?;
        Ok(fetched.map(|(item, _)| item))
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
        let work = (!worker_items.is_empty())
            .then(|| (reach_of(&worker_items), worker_items.len() as u64));
        let ends = match metadata.status.as_deref() {
            Some("Completed" | "Failed" | "ContinuedAsNew") => {
                history_delta.first().map(|e| e.instance_id.clone())
            }
            _ => None,
        };
        let now = epoch_ms_now();
        let timers: Vec<u64> = orchestrator_items
            .iter()
            .filter_map(|i| match i {
                WorkItem::TimerFired { fire_at_ms, .. } if *fire_at_ms > now => Some(*fire_at_ms),
                _ => None,
            })
            .collect();
        let visible = (orchestrator_items.len() - timers.len()) as u64;
        let work = work.map(|(reach, count)| self.expect(Queue::Worker, reach, count));
        let orchestrations =
            (visible > 0).then(|| self.expect(Queue::Orchestrator, Reach::Any, visible));
        let mark = self.mark();
        let acked = ACK_MARK
            .scope(
                mark.clone(),
                next.ack_orchestration_item(
                    lock_token,
                    execution_id,
                    history_delta,
                    worker_items,
                    orchestrator_items,
                    metadata,
                    cancelled_activities,
                ),
            )
            .await;
        // After the commit: a message that arrived while the ack was in
        // flight also found the instance locked.
        let woken = self.woken_during_turn(lock_token);
        acked?;
        if let Some(work) = work {
            self.woke(Queue::Worker, work, fetched(&mark.fetched_work));
        }
        let own_wake = match orchestrations {
            // Releasing the instance's lock makes fetchable what arrived for
            // it during the turn: its wake-up found the instance locked.
            _ if woken => {
                self.wake(Queue::Orchestrator, Reach::Any, None);
                true
            }
            Some(expected) => {
                self.woke(Queue::Orchestrator, expected, fetched(&mark.fetched_turns));
                true
            }
            None => false,
        };
        // After the wake-up, so a turn this ack fetched counts it as this
        // ack's own only once it happened.
        mark.own_wakes.store(own_wake.into(), Ordering::Relaxed);
        if let Some(at) = timers.into_iter().min() {
            self.due(Queue::Orchestrator, at);
        }
        if let Some(instance) = ends {
            self.endings.ended(&instance);
        }
        Ok(())
    }

    async fn ack_work_item(
        &self,
        next: &Arc<dyn Provider>,
        token: &str,
        completion: Option<WorkItem>,
    ) -> Result<(), ProviderError> {
        let completes = completion
            .is_some()
            .then(|| self.expect(Queue::Orchestrator, Reach::Any, 1));
        let mark = self.mark();
        ACK_MARK
            .scope(mark.clone(), next.ack_work_item(token, completion))
            .await?;
        if let Some(expected) = completes {
            self.woke(Queue::Orchestrator, expected, fetched(&mark.fetched_turns));
            mark.own_wakes.store(1, Ordering::Relaxed);
        }
        Ok(())
    }

    async fn enqueue_for_orchestrator(
        &self,
        next: &Arc<dyn Provider>,
        item: WorkItem,
        delay: Option<Duration>,
    ) -> Result<(), ProviderError> {
        let visible = item.clone();
        let now =
            visible_now(&visible, delay).then(|| self.expect(Queue::Orchestrator, Reach::Any, 1));
        next.enqueue_for_orchestrator(item, delay).await?;
        match now {
            Some(expected) => self.woke(Queue::Orchestrator, expected, Fetched::Nothing),
            None => self.enqueued_for_orchestrator(&visible, delay),
        }
        Ok(())
    }

    async fn enqueue_for_worker(
        &self,
        next: &Arc<dyn Provider>,
        item: WorkItem,
    ) -> Result<(), ProviderError> {
        let expected = self.expect(Queue::Worker, reach_of(std::slice::from_ref(&item)), 1);
        next.enqueue_for_worker(item).await?;
        self.woke(Queue::Worker, expected, Fetched::Nothing);
        Ok(())
    }

    async fn abandon_orchestration_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_token: &str,
        delay: Option<Duration>,
        ignore_attempt: bool,
    ) -> Result<(), ProviderError> {
        self.turns.lock().expect("turns").remove(lock_token);
        next.abandon_orchestration_item(lock_token, delay, ignore_attempt)
            .await?;
        self.abandoned(Queue::Orchestrator, delay);
        Ok(())
    }

    async fn abandon_work_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_token: &str,
        delay: Option<Duration>,
        ignore_attempt: bool,
    ) -> Result<(), ProviderError> {
        next.abandon_work_item(lock_token, delay, ignore_attempt)
            .await?;
        self.abandoned(Queue::Worker, delay);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
