//! The wake-up layer over a real SQLite store with a duroxide runtime, and
//! its long poll with store calls whose timing the test controls.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use duroxide::providers::sqlite::SqliteProvider;
use duroxide::providers::{Provider, ProviderError, SessionFetchConfig, TagFilter, WorkItem};
use duroxide::runtime::registry::ActivityRegistry;
use duroxide::runtime::{Runtime, RuntimeOptions};
use duroxide::{ActivityContext, Client, OrchestrationContext, OrchestrationRegistry};

use super::{ended, stacked, with_wakeups, Look, Seen, WakeupOptions, Wakeups};
use crate::providers::layer::{Layer, Stacked};
use crate::providers::Backend;

/// A SQLite file of its own, removed when dropped.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Counts the worker-queue fetches that reach the store.
struct CountWorkFetches(Arc<AtomicUsize>);

#[async_trait]
impl Layer for CountWorkFetches {
    async fn fetch_work_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        poll_timeout: Duration,
        session: Option<&SessionFetchConfig>,
        tag_filter: &TagFilter,
    ) -> Result<Option<(WorkItem, String, u32)>, ProviderError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        next.fetch_work_item(lock_timeout, poll_timeout, session, tag_filter)
            .await
    }
}

/// A SQLite store under its retry and wake-up layers, with a count of the
/// worker fetches that reach the store.
async fn store(
    name: &str,
) -> (
    TempDir,
    Arc<dyn Provider>,
    Arc<ended::Endings>,
    Arc<AtomicUsize>,
) {
    let (dir, backend, counted, fetches) = counted_sqlite(name).await;
    let endings = Arc::new(ended::Endings::default());
    let store = with_wakeups(
        counted,
        &backend,
        endings.clone(),
        WakeupOptions::of(None, None),
    );
    (dir, store, endings, fetches)
}

/// [`store`] with every look made: none is skipped (the layer before
/// `wakeup/signal.rs`).
async fn store_looking_every_time(name: &str) -> (TempDir, Arc<dyn Provider>, Arc<AtomicUsize>) {
    let (dir, backend, counted, fetches) = counted_sqlite(name).await;
    let shared = Arc::new(Wakeups {
        orchestrator: Default::default(),
        worker: Default::default(),
        fallback: super::FALLBACK,
        skip_covered: false,
    });
    let store = stacked(counted, &backend, Default::default(), shared, false);
    (dir, store, fetches)
}

/// A SQLite file store that counts worker-queue fetches, under the busy
/// retry layer as in production.
async fn counted_sqlite(name: &str) -> (TempDir, Backend, Arc<dyn Provider>, Arc<AtomicUsize>) {
    let dir = std::env::temp_dir().join(format!("dxwakeup-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite:{}?mode=rwc", dir.join("t.db").display());
    let sqlite = SqliteProvider::new(&url, None).await.unwrap();
    let backend = Backend::Sqlite {
        pool: sqlite.get_pool().clone(),
        fast_paths: crate::providers::fast_paths::FastPaths::with(
            &crate::providers::fast_paths::SQLITE_PATHS,
        ),
        set_aside: Default::default(),
    };
    let fetches = Arc::new(AtomicUsize::new(0));
    let counted = Stacked::over(CountWorkFetches(fetches.clone()), Arc::new(sqlite));
    let counted = crate::providers::sqlite_retry::with_busy_retry(counted);
    (TempDir(dir), backend, counted, fetches)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_ends_an_instance_wakes_its_watchers() {
    let (_dir, store, endings, _) = store("ended").await;
    let watch = endings.watch("i1");
    let ended = watch.notify().notified();
    tokio::pin!(ended);
    ended.as_mut().enable();
    let orchestrations = OrchestrationRegistry::builder()
        .register(
            "Done",
            |_ctx: OrchestrationContext, input: String| async move { Ok(input) },
        )
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
    let woken = tokio::time::timeout(Duration::from_secs(10), ended).await;
    rt.shutdown(Some(1000)).await;
    assert!(woken.is_ok(), "the ack that completed i1 woke its watcher");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn woken_worker_slots_do_not_each_look_at_the_store() {
    const STEPS: usize = 20;
    const SLOTS: usize = 8;
    let (_dir, store, _, fetches) = store("slots").await;
    let activities = ActivityRegistry::builder()
        .register("Echo", |_ctx: ActivityContext, input: String| async move {
            Ok(input)
        })
        .build();
    let orchestrations = OrchestrationRegistry::builder()
        .register(
            "Chain",
            |ctx: OrchestrationContext, input: String| async move {
                let mut v = input;
                for _ in 0..STEPS {
                    v = ctx.schedule_activity("Echo", v).await?;
                }
                Ok(v)
            },
        )
        .build();
    let options = RuntimeOptions {
        orchestration_concurrency: 1,
        worker_concurrency: SLOTS,
        ..Default::default()
    };
    let rt = Runtime::start_with_options(store.clone(), activities, orchestrations, options).await;
    let client = Client::new(store.clone());
    // Let every slot settle into its wait first.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = fetches.load(Ordering::SeqCst);
    client
        .start_orchestration("c1", "Chain", "x")
        .await
        .unwrap();
    let status = client
        .wait_for_orchestration("c1", Duration::from_secs(30))
        .await;
    let looks = fetches.load(Ordering::SeqCst) - before;
    rt.shutdown(Some(1000)).await;
    assert!(
        matches!(status, Ok(duroxide::OrchestrationStatus::Completed { .. })),
        "{status:?}"
    );
    // Each step wakes all 8 slots. Skipping looks covered by an empty look
    // since the wake-up left three store fetches per step (measured 2.7;
    // 9 keyed by session owner, 12 with every woken slot looking at once):
    // the look that takes the item, one that finds nothing, and the first
    // look of the slot back from the previous step. Counting the announced
    // items off as they are found leaves the one that takes it (measured:
    // exactly 20), plus a fallback tick now and then.
    assert!(
        looks <= STEPS + STEPS / 4,
        "{looks} worker fetches reached the store for {STEPS} steps"
    );
}

/// Holds the second orchestration ack in the store call until the test lets
/// it go, so a message can arrive while the ack is in flight and the turn
/// still holds the instance's lock.
struct HoldSecondAck {
    acks: AtomicUsize,
    entered: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    release: tokio::sync::Mutex<Option<tokio::sync::oneshot::Receiver<()>>>,
}

#[async_trait]
impl Layer for HoldSecondAck {
    #[allow(clippy::too_many_arguments)]
    async fn ack_orchestration_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_token: &str,
        execution_id: u64,
        history_delta: Vec<duroxide::Event>,
        worker_items: Vec<WorkItem>,
        orchestrator_items: Vec<WorkItem>,
        metadata: duroxide::providers::ExecutionMetadata,
        cancelled_activities: Vec<duroxide::providers::ScheduledActivityIdentifier>,
    ) -> Result<(), ProviderError> {
        let second = self.acks.fetch_add(1, Ordering::SeqCst) == 1;
        let entered = match second {
            true => self.entered.lock().unwrap().take(),
            false => None,
        };
        if let Some(entered) = entered {
            let _ = entered.send(());
            if let Some(release) = self.release.lock().await.take() {
                let _ = release.await;
            }
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
}

/// An event raised while the ack of the turn before it is in flight: the
/// woken look finds the instance locked and nothing else, so only the ack's
/// release of the lock can wake a look that takes the event, and the ack
/// must count the wake-ups up to its commit, not up to its start. The
/// fallback tick here is far beyond the test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_that_arrives_during_a_turn_is_taken_when_the_turn_acks() {
    let dir = std::env::temp_dir().join(format!("dxwakeup-during-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _dir = TempDir(dir.clone());
    let url = format!("sqlite:{}?mode=rwc", dir.join("t.db").display());
    let sqlite = SqliteProvider::new(&url, None).await.unwrap();
    let backend = Backend::Sqlite {
        pool: sqlite.get_pool().clone(),
        fast_paths: crate::providers::fast_paths::FastPaths::with(
            &crate::providers::fast_paths::SQLITE_PATHS,
        ),
        set_aside: Default::default(),
    };
    let (entered_tx, entered_rx) = tokio::sync::oneshot::channel();
    let (release_tx, release_rx) = tokio::sync::oneshot::channel();
    let held = Stacked::over(
        HoldSecondAck {
            acks: AtomicUsize::new(0),
            entered: std::sync::Mutex::new(Some(entered_tx)),
            release: tokio::sync::Mutex::new(Some(release_rx)),
        },
        Arc::new(sqlite),
    );
    let held = crate::providers::sqlite_retry::with_busy_retry(held);
    let shared = Arc::new(Wakeups {
        orchestrator: Default::default(),
        worker: Default::default(),
        fallback: Duration::from_secs(600),
        skip_covered: true,
    });
    let endings = Arc::new(ended::Endings::default());
    let store = stacked(held, &backend, endings, shared, false);
    let orchestrations = OrchestrationRegistry::builder()
        .register(
            "Await",
            |ctx: OrchestrationContext, _input: String| async move {
                let one = ctx.schedule_wait("one").await;
                let two = ctx.schedule_wait("two").await;
                Ok(format!("{one} {two}"))
            },
        )
        .build();
    let options = RuntimeOptions {
        orchestration_concurrency: 2,
        ..Default::default()
    };
    let rt = Runtime::start_with_options(
        store.clone(),
        ActivityRegistry::builder().build(),
        orchestrations,
        options,
    )
    .await;
    let client = Client::new(store.clone());
    client.start_orchestration("e1", "Await", "").await.unwrap();
    // The first turn is acked and every slot waits: the turn that takes
    // "one" is fetched by a look woken by its wake-up.
    tokio::time::sleep(Duration::from_millis(300)).await;
    client.raise_event("e1", "one", "1").await.unwrap();
    entered_rx.await.unwrap();
    client.raise_event("e1", "two", "2").await.unwrap();
    // Let the woken looks find the instance locked.
    tokio::time::sleep(Duration::from_millis(200)).await;
    release_tx.send(()).unwrap();
    let status = client
        .wait_for_orchestration("e1", Duration::from_secs(20))
        .await;
    rt.shutdown(Some(1000)).await;
    assert!(
        matches!(&status, Ok(duroxide::OrchestrationStatus::Completed { output, .. }) if output == "1 2"),
        "{status:?}"
    );
}

/// A due time passed while a waiter with another filter was looking: that
/// waiter must still look again for it, not wait for the fallback tick.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_passed_due_time_makes_every_filter_look() {
    use super::signal::Fetcher;
    use super::{epoch_ms_now, Queue, Wakeups};
    use std::time::Instant;

    // A tick far beyond the test, so only the due time can find the message.
    let shared = Arc::new(Wakeups {
        orchestrator: Default::default(),
        worker: Default::default(),
        fallback: Duration::from_secs(30),
        skip_covered: true,
    });
    let delay = Duration::from_millis(100);
    let visible_at = Instant::now() + delay;
    let start = Instant::now();
    // Filter "b" can take the delayed message; its first look starts before
    // the message is visible and ends well after (a slow store call).
    let b_calls = Arc::new(AtomicUsize::new(0));
    let b = {
        let shared = shared.clone();
        let calls = b_calls.clone();
        tokio::spawn(async move {
            let who = Fetcher {
                filter: "b",
                owner: "",
            };
            shared
                .long_poll(
                    Queue::Worker,
                    &who,
                    Look::First,
                    Duration::from_secs(5),
                    || {
                        let calls = calls.clone();
                        async move {
                            let first = calls.fetch_add(1, Ordering::SeqCst) == 0;
                            let found = (Instant::now() >= visible_at).then_some(());
                            if first {
                                tokio::time::sleep(Duration::from_millis(400)).await;
                            }
                            Ok::<_, ProviderError>(found)
                        }
                    },
                )
                .await
        })
    };
    // Filter "a" takes nothing; it wakes at the due time and looks first.
    let a = {
        let shared = shared.clone();
        tokio::spawn(async move {
            let who = Fetcher {
                filter: "a",
                owner: "",
            };
            shared
                .long_poll(
                    Queue::Worker,
                    &who,
                    Look::First,
                    Duration::from_secs(2),
                    || std::future::ready(Ok::<Option<()>, ProviderError>(None)),
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    shared.due_at_epoch_ms(
        Queue::Worker,
        epoch_ms_now() + delay.as_millis() as u64 - 20,
    );
    let found = b.await.unwrap().unwrap();
    let took = start.elapsed();
    a.await.unwrap().unwrap();
    assert!(found.is_some(), "filter b's wait ended without the message");
    assert!(
        took < Duration::from_secs(1),
        "filter b found the message after {took:?}"
    );
}

/// Fallback ticks to count looks over in [`idle_worker_looks`].
const TICKS: u32 = 4;

/// How many worker-queue looks reach `store` (counted by `fetches`) over
/// [`TICKS`] fallback ticks while a runtime with `slots` worker slots idles.
async fn idle_worker_looks(store: Arc<dyn Provider>, fetches: &AtomicUsize, slots: usize) -> usize {
    let options = RuntimeOptions {
        orchestration_concurrency: 1,
        worker_concurrency: slots,
        ..Default::default()
    };
    let rt = Runtime::start_with_options(
        store,
        ActivityRegistry::builder().build(),
        OrchestrationRegistry::builder().build(),
        options,
    )
    .await;
    // Every slot's first look, and its own look of its sessions, done.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = fetches.load(Ordering::SeqCst);
    tokio::time::sleep(super::FALLBACK * TICKS + Duration::from_millis(300)).await;
    let looks = fetches.load(Ordering::SeqCst) - before;
    rt.shutdown(Some(1000)).await;
    looks
}

/// Regression: every waiting slot looked at the store once a fallback tick
/// (an idle process with four runtimes of one provider: 48 looks a second).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_provider_looks_once_a_fallback_tick_not_once_per_slot() {
    const SLOTS: usize = 8;
    let (_dir, store, _, fetches) = store("ticks").await;
    let looks = idle_worker_looks(store, &fetches, SLOTS).await;
    // One look a tick by whichever slot ticks first (ticks drift, so allow
    // one more each); a slot's own look comes every ten ticks.
    assert!(
        looks <= 2 * TICKS as usize,
        "{looks} worker-queue looks in {TICKS} fallback ticks with {SLOTS} slots idle"
    );
}

/// Regression: with every look made (no covered look skipped), the
/// fallback ticks were still shared among slots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_looks_every_each_idle_slot_looks_every_fallback_tick() {
    const SLOTS: usize = 4;
    let (_dir, store, fetches) = store_looking_every_time("every-tick").await;
    let looks = idle_worker_looks(store, &fetches, SLOTS).await;
    assert!(
        looks >= SLOTS * (TICKS as usize - 1),
        "{looks} worker-queue looks in {TICKS} fallback ticks with {SLOTS} slots idle"
    );
}

/// Regression: a turn an ack fetched (`history_tail/ride.rs`) was dated by
/// the look that later took it from the tail layer, so a wake-up that came
/// in between (a message for its instance, which found it locked) was not
/// seen at the turn's ack, and the message waited for the fallback tick:
/// about one Postgres fan-out of 300 in five took 1.2 s instead of 0.25 s.
/// The turn is dated from before the ack that fetched it, less the wake-ups
/// that ack made for its own messages (its fetch saw those).
#[test]
fn a_turn_an_ack_fetched_is_dated_from_before_that_ack() {
    use crate::providers::history_tail::AckMark;
    let mark = Arc::new(AckMark {
        before: 5,
        ..AckMark::default()
    });
    let ridden = Seen {
        look: 9,
        ack: Some(mark.clone()),
    };
    assert_eq!(ridden.locked_at(), 5);
    // The ack's own wake-up, once it happened, is not one the turn missed.
    mark.own_wakes.store(1, Ordering::Relaxed);
    assert_eq!(ridden.locked_at(), 6);
    let fetched = Seen { look: 9, ack: None };
    assert_eq!(fetched.locked_at(), 9);
}
