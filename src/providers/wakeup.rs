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
//!   expires), so the store is looked at again at least this often. A lost
//!   notification costs latency, never work.
//!
//! A wake-up wakes every waiter of its queue (a waiter cannot tell whether
//! it is the one that can take the message: runtimes of one provider may
//! register different orchestrations or filter different tags), but the
//! woken waiters look at the store one at a time, and a waiter skips its
//! look when a look that began after the latest wake-up already found
//! nothing with the same filter. Every wake-up counts a generation; a look
//! that reads generation `g` before it starts sees everything committed
//! before wake-up `g`. So a wake-up costs one look that finds the message
//! and one that finds nothing, not one per waiter: on SQLite each look takes
//! the write lock, on Postgres a pool connection. Looks for a time (the
//! fallback tick, a due time) and a dispatcher's first look after work
//! always run.
//!
//! `DUROXIDE_NODE_WAKEUP` (read when the provider connects) switches it, for
//! tests and comparisons: `on` (default), `local` (no LISTEN/NOTIFY: a
//! Postgres process then behaves as one on SQLite, and learns of other
//! processes' work from the fallback tick only), `off` (no layer: plain
//! polling every `dispatcherPollIntervalMs`).
//! `DUROXIDE_NODE_WAKEUP_FALLBACK_MS` sets the fallback tick.

pub(crate) mod ended;
mod listen;

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use duroxide::providers::{
    DispatcherCapabilityFilter, ExecutionMetadata, OrchestrationItem, Provider, ProviderError,
    ScheduledActivityIdentifier, SessionFetchConfig, TagFilter, WorkItem,
};
use duroxide::Event;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::layer::{Layer, Stacked};
use super::Backend;

/// How often a waiting fetch looks at the store even without a wake-up.
pub(crate) const FALLBACK: Duration = Duration::from_secs(1);
/// Due times remembered per queue; later ones are found by the fallback tick.
const MAX_DUE: usize = 4096;

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

/// Waiters of one queue and the due times of its delayed messages.
#[derive(Default)]
struct Signal {
    notify: Notify,
    due: Mutex<BTreeSet<Instant>>,
    /// Counts wake-ups; bumped before the waiters are notified.
    generation: AtomicU64,
    /// Per fetch filter: the generation read before the latest look that
    /// found nothing.
    looked_empty: Mutex<HashMap<String, u64>>,
    /// Woken waiters look one at a time.
    turn: tokio::sync::Mutex<()>,
}

/// Why a waiter looks at the store.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Look {
    /// The first look of a fetch, or one for a time: always runs.
    Always,
    /// After a wake-up: skipped if a later look found nothing.
    IfNew,
}

impl Signal {
    fn wake(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Runs `fetch` unless `look` allows skipping it and nothing was woken
    /// since a look with the same `filter` found nothing.
    async fn look<T, F, Fut>(
        &self,
        look: Look,
        filter: &str,
        fetch: &F,
    ) -> Result<Option<T>, ProviderError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<Option<T>, ProviderError>>,
    {
        let _turn = match look {
            Look::Always => None,
            Look::IfNew => Some(self.turn.lock().await),
        };
        let generation = self.generation.load(Ordering::SeqCst);
        if look == Look::IfNew {
            let empty = self.looked_empty.lock().expect("looks");
            if empty.get(filter).is_some_and(|g| *g >= generation) {
                return Ok(None);
            }
        }
        let r = fetch().await;
        if let Ok(None) = r {
            let mut empty = self.looked_empty.lock().expect("looks");
            let g = empty.entry(filter.to_string()).or_default();
            *g = (*g).max(generation);
        }
        r
    }

    fn due_at(&self, at: Instant) {
        let mut due = self.due.lock().expect("due times");
        due.insert(at);
        if due.len() > MAX_DUE {
            due.pop_last();
        }
        drop(due);
        // Waiters recompute their deadline.
        self.notify.notify_waiters();
    }

    /// The earliest due time still ahead; passed ones are forgotten (the
    /// fetch that follows finds their messages).
    fn next_due(&self, now: Instant) -> Option<Instant> {
        let mut due = self.due.lock().expect("due times");
        while matches!(due.first(), Some(t) if *t <= now) {
            due.pop_first();
        }
        due.first().copied()
    }
}

/// The shared state of the layer; the listen task holds it weakly.
pub(crate) struct Wakeups {
    orchestrator: Signal,
    worker: Signal,
    fallback: Duration,
}

impl Wakeups {
    fn signal(&self, queue: Queue) -> &Signal {
        match queue {
            Queue::Orchestrator => &self.orchestrator,
            Queue::Worker => &self.worker,
        }
    }

    /// A wake-up from this process or another.
    pub(crate) fn wake(&self, queue: Queue) {
        self.signal(queue).wake();
    }

    /// A message of `queue` becomes visible at epoch ms `at_ms`.
    pub(crate) fn due_at_epoch_ms(&self, queue: Queue, at_ms: u64) {
        self.signal(queue).due_at(instant_of(at_ms));
    }

    /// Runs `fetch` (a store fetch that does not wait) until it finds
    /// something, `poll_timeout` passed, or the caller gave up. `filter`
    /// names what the fetch can take (its filter arguments): a look that
    /// found nothing lets only waiters with the same filter skip theirs.
    async fn long_poll<T, F, Fut>(
        &self,
        queue: Queue,
        filter: &str,
        poll_timeout: Duration,
        fetch: F,
    ) -> Result<Option<T>, ProviderError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<Option<T>, ProviderError>>,
    {
        let end = Instant::now() + poll_timeout;
        let give_up = GIVE_UP.try_with(CancellationToken::clone).ok();
        let signal = self.signal(queue);
        let mut look = Look::Always;
        loop {
            // Registered before the fetch, so a wake-up during it is not missed.
            let woken = signal.notify.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            match signal.look(look, filter, &fetch).await {
                Ok(None) => {}
                other => return other,
            }
            let now = Instant::now();
            if now >= end {
                return Ok(None);
            }
            let mut until = end.min(now + self.fallback);
            if let Some(due) = signal.next_due(now) {
                until = until.min(due);
            }
            let given_up = async {
                match &give_up {
                    Some(t) => t.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            look = tokio::select! {
                _ = &mut woken => Look::IfNew,
                _ = tokio::time::sleep_until(until.into()) => Look::Always,
                _ = given_up => return Ok(None),
            };
        }
    }
}

fn epoch_ms_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn instant_of(epoch_ms: u64) -> Instant {
    Instant::now() + Duration::from_millis(epoch_ms.saturating_sub(epoch_ms_now()))
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
}

impl Wakeup {
    fn fetching(&self) {
        if let Some(l) = &self.listening {
            l.ensure_started(&self.shared);
        }
    }

    fn wake(&self, queue: Queue) {
        self.shared.wake(queue);
        if let Some(a) = &self.announce {
            a.announce(queue, None);
        }
    }

    /// An abandoned item is visible again at once, or after its delay.
    fn abandoned(&self, queue: Queue, delay: Option<Duration>) {
        match delay {
            Some(d) if !d.is_zero() => self.due_in(queue, d),
            _ => self.wake(queue),
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

    /// What an orchestrator-queue message becomes visible: now, or at its timer.
    fn enqueued_for_orchestrator(&self, item: &WorkItem, delay: Option<Duration>) {
        match (item, delay) {
            (WorkItem::TimerFired { fire_at_ms, .. }, _) if *fire_at_ms > epoch_ms_now() => {
                self.due(Queue::Orchestrator, *fire_at_ms)
            }
            (_, Some(d)) if !d.is_zero() => self.due_in(Queue::Orchestrator, d),
            _ => self.wake(Queue::Orchestrator),
        }
    }
}

/// `next` under the wake-up layer, as `DUROXIDE_NODE_WAKEUP` says; turns
/// that end an instance wake its waiters in `endings`.
pub(crate) fn with_wakeups(
    next: Arc<dyn Provider>,
    backend: &Backend,
    endings: Arc<ended::Endings>,
) -> Arc<dyn Provider> {
    let across_processes = match std::env::var("DUROXIDE_NODE_WAKEUP").as_deref() {
        Ok("off") => return next,
        Ok("local") => false,
        _ => true,
    };
    let fallback = std::env::var("DUROXIDE_NODE_WAKEUP_FALLBACK_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|ms| *ms > 0)
        .map_or(FALLBACK, Duration::from_millis);
    let shared = Arc::new(Wakeups {
        orchestrator: Signal::default(),
        worker: Signal::default(),
        fallback,
    });
    let (announce, listening) = match backend {
        Backend::Postgres { pool, schema } if across_processes => {
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
        let key = format!("{filter:?}");
        self.shared
            .long_poll(Queue::Orchestrator, &key, poll_timeout, || {
                next.fetch_orchestration_item(lock_timeout, Duration::ZERO, filter)
            })
            .await
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
        let key = format!("{session:?} {tag_filter:?}");
        self.shared
            .long_poll(Queue::Worker, &key, poll_timeout, || {
                next.fetch_work_item(lock_timeout, Duration::ZERO, session, tag_filter)
            })
            .await
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
        let work = !worker_items.is_empty();
        let ends = match metadata.status.as_deref() {
            Some("Completed" | "Failed" | "ContinuedAsNew") => {
                history_delta.first().map(|e| e.instance_id.clone())
            }
            _ => None,
        };
        let timers: Vec<u64> = orchestrator_items
            .iter()
            .filter_map(|i| match i {
                WorkItem::TimerFired { fire_at_ms, .. } => Some(*fire_at_ms),
                _ => None,
            })
            .collect();
        next.ack_orchestration_item(
            lock_token,
            execution_id,
            history_delta,
            worker_items,
            orchestrator_items,
            metadata,
            cancelled_activities,
        )
        .await?;
        if work {
            self.wake(Queue::Worker);
        }
        // Always: releasing the instance's lock makes messages that arrived
        // during the turn fetchable.
        self.wake(Queue::Orchestrator);
        let now = epoch_ms_now();
        if let Some(at) = timers.into_iter().filter(|t| *t > now).min() {
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
        let completes = completion.is_some();
        next.ack_work_item(token, completion).await?;
        if completes {
            self.wake(Queue::Orchestrator);
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
        next.enqueue_for_orchestrator(item, delay).await?;
        self.enqueued_for_orchestrator(&visible, delay);
        Ok(())
    }

    async fn enqueue_for_worker(
        &self,
        next: &Arc<dyn Provider>,
        item: WorkItem,
    ) -> Result<(), ProviderError> {
        next.enqueue_for_worker(item).await?;
        self.wake(Queue::Worker);
        Ok(())
    }

    async fn abandon_orchestration_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_token: &str,
        delay: Option<Duration>,
        ignore_attempt: bool,
    ) -> Result<(), ProviderError> {
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
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// A store fetch that finds nothing and counts its calls.
    fn counting(
        calls: &AtomicUsize,
    ) -> impl Fn() -> std::future::Ready<Result<Option<()>, ProviderError>> + '_ {
        move || {
            calls.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Ok(None))
        }
    }

    #[tokio::test]
    async fn a_woken_look_is_skipped_until_a_new_wake_up() {
        let signal = Signal::default();
        let calls = AtomicUsize::new(0);
        let fetch = counting(&calls);
        signal.wake();
        signal.look(Look::IfNew, "f", &fetch).await.unwrap();
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "the first look after a wake-up runs"
        );
        for _ in 0..3 {
            signal.look(Look::IfNew, "f", &fetch).await.unwrap();
        }
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "looks covered by an empty one are skipped"
        );
        signal.wake();
        signal.look(Look::IfNew, "f", &fetch).await.unwrap();
        assert_eq!(
            calls.load(Ordering::SeqCst),
            2,
            "a new wake-up makes the next look run"
        );
    }

    #[tokio::test]
    async fn looks_for_a_time_and_other_filters_always_run() {
        let signal = Signal::default();
        let calls = AtomicUsize::new(0);
        let fetch = counting(&calls);
        signal.look(Look::IfNew, "f", &fetch).await.unwrap();
        signal.look(Look::Always, "f", &fetch).await.unwrap();
        assert_eq!(
            calls.load(Ordering::SeqCst),
            2,
            "an Always look runs though covered"
        );
        signal
            .look(Look::IfNew, "other tags", &fetch)
            .await
            .unwrap();
        assert_eq!(
            calls.load(Ordering::SeqCst),
            3,
            "another filter's empty look covers nothing"
        );
    }

    /// A SQLite file of its own, removed when dropped.
    struct TempDir(std::path::PathBuf);

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_turn_that_ends_an_instance_wakes_its_watchers() {
        use duroxide::providers::sqlite::SqliteProvider;
        use duroxide::runtime::registry::ActivityRegistry;
        use duroxide::runtime::Runtime;
        use duroxide::{Client, OrchestrationContext, OrchestrationRegistry};

        let dir = std::env::temp_dir().join(format!("dxended-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let _cleanup = TempDir(dir.clone());
        let url = format!("sqlite:{}?mode=rwc", dir.join("t.db").display());
        let sqlite = SqliteProvider::new(&url, None).await.unwrap();
        let backend = Backend::Sqlite {
            pool: sqlite.get_pool().clone(),
        };
        let endings = Arc::new(ended::Endings::default());
        let store = with_wakeups(Arc::new(sqlite), &backend, endings.clone());
        let watch = endings.watch("i1");
        let ended = watch.notify().notified();
        tokio::pin!(ended);
        ended.as_mut().enable();
        let orchestrations = OrchestrationRegistry::builder()
            .register("Done", |_ctx: OrchestrationContext, input: String| async move { Ok(input) })
            .build();
        let rt = Runtime::start_with_store(
            store.clone(),
            ActivityRegistry::builder().build(),
            orchestrations,
        )
        .await;
        Client::new(store.clone())
            .start_orchestration("i1", "Done", "x")
            .await
            .unwrap();
        let woken = tokio::time::timeout(Duration::from_secs(30), ended).await;
        rt.shutdown(Some(1000)).await;
        assert!(woken.is_ok(), "the ack that completed i1 woke its watcher");
    }

    #[tokio::test]
    async fn a_look_that_found_something_covers_nothing() {
        let signal = Signal::default();
        signal.wake();
        let found = || std::future::ready(Ok::<_, ProviderError>(Some(())));
        assert!(signal
            .look(Look::IfNew, "f", &found)
            .await
            .unwrap()
            .is_some());
        let calls = AtomicUsize::new(0);
        signal
            .look(Look::IfNew, "f", &counting(&calls))
            .await
            .unwrap();
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "there may be more: the next waiter looks"
        );
    }
}
