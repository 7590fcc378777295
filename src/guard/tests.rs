//! The guard's lock hygiene against a real SQLite store. Postgres behaviour is
//! covered end to end by `__test__/guard.*.test.js`.

use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::instrumented::InstrumentedProvider;
use duroxide::providers::sqlite::SqliteProvider;
use duroxide::providers::Provider;
use duroxide::Client;

use super::GuardedProvider;
use crate::options::{parse_runtime_options, ParsedOptions};

const LEASE: Duration = Duration::from_secs(60);
const NO_WAIT: Duration = Duration::ZERO;

/// Defaults, with a 60 s lease.
fn options() -> ParsedOptions {
    parse_runtime_options(Some(
        &serde_json::json!({ "orchestratorLockTimeoutMs": 60000 }),
    ))
    .unwrap()
}

/// A store with one pending orchestration start, `i1`.
async fn store_with_one_start() -> Arc<dyn Provider> {
    let store: Arc<dyn Provider> = Arc::new(SqliteProvider::new_in_memory().await.unwrap());
    Client::new(store.clone())
        .start_orchestration("i1", "Orch", "")
        .await
        .unwrap();
    store
}

/// Fetches `i1` straight from the store, waiting up to 10 s for it to become
/// free; the lease is 60 s, so getting it means it was released, not expired.
async fn refetch(store: &Arc<dyn Provider>) -> Option<(String, u32)> {
    for _ in 0..500 {
        if let Some((item, _, attempt)) = store
            .fetch_orchestration_item(LEASE, NO_WAIT, None)
            .await
            .unwrap()
        {
            return Some((item.instance, attempt));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

async fn is_locked(store: &Arc<dyn Provider>) -> bool {
    store
        .fetch_orchestration_item(LEASE, NO_WAIT, None)
        .await
        .unwrap()
        .is_none()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandon_dropped_unpolled_still_releases_the_lock() {
    let store = store_with_one_start().await;
    let guard = GuardedProvider::new(store.clone(), &options());
    let (_, token, _) = guard
        .fetch_orchestration_item(LEASE, NO_WAIT, None)
        .await
        .unwrap()
        .expect("the start is fetchable");
    assert!(is_locked(&store).await);

    drop(guard.abandon_orchestration_item(&token, None, false));

    assert_eq!(refetch(&store).await, Some(("i1".to_string(), 2)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_guard_a_dropped_abandon_leaves_the_lock_held() {
    let store = store_with_one_start().await;
    let (_, token, _) = store
        .fetch_orchestration_item(LEASE, NO_WAIT, None)
        .await
        .unwrap()
        .unwrap();
    drop(store.abandon_orchestration_item(&token, None, false));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(is_locked(&store).await, "nothing ran the abandon");
}

/// What duroxide 0.1.32 actually does: it wraps our provider in its
/// `InstrumentedProvider` (lazy `async fn`s) and drops the abandon future, so
/// the guard never sees that abandon. The guard releases the lock when the
/// same dispatcher task asks for its next item.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_dropped_through_the_runtime_wrapper_is_released_at_the_next_fetch() {
    let store = store_with_one_start().await;
    let guard = GuardedProvider::new(store.clone(), &options());
    let outer: Arc<dyn Provider> = Arc::new(InstrumentedProvider::new(guard.clone(), None));
    let probe = store.clone();
    // One task plays one dispatcher worker, as in the runtime.
    tokio::spawn(async move {
        let (_, token, _) = outer
            .fetch_orchestration_item(LEASE, NO_WAIT, None)
            .await
            .unwrap()
            .unwrap();
        drop(outer.abandon_orchestration_item(&token, Some(Duration::from_millis(50)), false));
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(
            is_locked(&probe).await,
            "the wrapper's lazy future never reached the guard"
        );
        let next = outer
            .fetch_orchestration_item(LEASE, NO_WAIT, None)
            .await
            .unwrap();
        assert!(
            next.is_none(),
            "the released item is delayed by 50 ms, like the dropped abandon"
        );
    })
    .await
    .unwrap();
    assert_eq!(refetch(&store).await, Some(("i1".to_string(), 2)));
    assert_eq!(guard.snapshot().orphaned_locks_released, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_dropped_in_flight_hands_its_item_back_without_counting_an_attempt() {
    let store = store_with_one_start().await;
    let guard = GuardedProvider::new(store.clone(), &options());
    // Polled once (which starts the store call), then dropped, as the
    // dispatcher drops its fetch when the runtime shuts down.
    let polled_once = tokio::time::timeout(
        Duration::ZERO,
        guard.fetch_orchestration_item(LEASE, NO_WAIT, None),
    )
    .await;
    assert!(
        polled_once.is_err(),
        "the store call cannot finish within one poll"
    );
    assert_eq!(refetch(&store).await, Some(("i1".to_string(), 1)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_releases_locks_still_held() {
    let store = store_with_one_start().await;
    let guard = GuardedProvider::new(store.clone(), &options());
    guard
        .fetch_orchestration_item(LEASE, NO_WAIT, None)
        .await
        .unwrap()
        .unwrap();
    assert!(is_locked(&store).await);
    guard.stopped().await;
    assert_eq!(refetch(&store).await, Some(("i1".to_string(), 2)));
    assert_eq!(guard.snapshot().orphaned_locks_released, 1);
}
