//! The wake-up layer over a real SQLite store with a duroxide runtime.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use duroxide::providers::sqlite::SqliteProvider;
use duroxide::providers::{Provider, ProviderError, SessionFetchConfig, TagFilter, WorkItem};
use duroxide::runtime::registry::ActivityRegistry;
use duroxide::runtime::{Runtime, RuntimeOptions};
use duroxide::{ActivityContext, Client, OrchestrationContext, OrchestrationRegistry};

use super::{ended, with_wakeups};
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
    let dir = std::env::temp_dir().join(format!("dxwakeup-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite:{}?mode=rwc", dir.join("t.db").display());
    let sqlite = SqliteProvider::new(&url, None).await.unwrap();
    let backend = Backend::Sqlite {
        pool: sqlite.get_pool().clone(),
    };
    let fetches = Arc::new(AtomicUsize::new(0));
    let counted = Stacked::over(CountWorkFetches(fetches.clone()), Arc::new(sqlite));
    // The production stack: busy errors are retried, not handed to duroxide.
    let counted = crate::providers::sqlite_retry::with_busy_retry(counted);
    let endings = Arc::new(ended::Endings::default());
    let store = with_wakeups(counted, &backend, endings.clone());
    (TempDir(dir), store, endings, fetches)
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
    // Each step wakes all 8 slots; without skipping that is at least 8
    // looks per step (measured: 9 keyed by session owner, 12 with every
    // woken slot looking at once, SQLite busy retries included). With it: the look that takes the item, one that finds
    // nothing, and the first look of the slot that ran the previous step
    // (and a fallback tick now and then).
    assert!(
        looks <= STEPS * 5,
        "{looks} worker fetches reached the store for {STEPS} steps"
    );
}
