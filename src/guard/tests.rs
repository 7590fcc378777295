//! The guard's lock hygiene against a real SQLite file. Postgres behaviour is
//! covered end to end by `__test__/guard.*.test.js`.

use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::instrumented::InstrumentedProvider;
use duroxide::providers::Provider;

use super::Guard;
use crate::options::{parse_runtime_options, ParsedOptions};
use crate::providers::scratch::{self, Scratch};
use crate::providers::Backend;

const LEASE: Duration = Duration::from_secs(60);
const NO_WAIT: Duration = Duration::ZERO;

/// Defaults, with a 60 s lease.
fn options() -> ParsedOptions {
    parse_runtime_options(Some(
        &serde_json::json!({ "orchestratorLockTimeoutMs": 60000 }),
    ))
    .unwrap()
}

/// The guard needs a pool only on Postgres.
fn sqlite_backend() -> Backend {
    Backend::Sqlite {
        pool: sqlx::SqlitePool::connect_lazy("sqlite::memory:").unwrap(),
        fast_paths: crate::providers::fast_paths::FastPaths::with(
            &crate::providers::fast_paths::SQLITE_PATHS,
        ),
        set_aside: Default::default(),
    }
}

/// A store with one pending orchestration start, `i1`.
async fn store_with_one_start() -> (Arc<dyn Provider>, Scratch) {
    let scratch = scratch::one_start("dxguard", "").await;
    (scratch.store.clone(), scratch)
}

/// A fetch straight from the store; a busy SQLite file (the guard's own
/// background writes) is retried, as the runtime retries it.
async fn fetch_raw(store: &Arc<dyn Provider>) -> Option<(String, u32)> {
    loop {
        match store.fetch_orchestration_item(LEASE, NO_WAIT, None).await {
            Ok(item) => return item.map(|(item, _, attempt)| (item.instance, attempt)),
            Err(e) if e.is_retryable() => tokio::time::sleep(Duration::from_millis(10)).await,
            Err(e) => panic!("{e}"),
        }
    }
}

/// Fetches `i1` straight from the store, waiting up to 10 s for it to become
/// free; the lease is 60 s, so getting it means it was released, not expired.
async fn refetch(store: &Arc<dyn Provider>) -> Option<(String, u32)> {
    for _ in 0..500 {
        if let Some(found) = fetch_raw(store).await {
            return Some(found);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

async fn is_locked(store: &Arc<dyn Provider>) -> bool {
    fetch_raw(store).await.is_none()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandon_dropped_unpolled_still_releases_the_lock() {
    let (store, _db) = store_with_one_start().await;
    let (_guard, stack) = Guard::stack(
        store.clone(),
        &sqlite_backend(),
        &options(),
        Default::default(),
    );
    let (_, token, _) = stack
        .fetch_orchestration_item(LEASE, NO_WAIT, None)
        .await
        .unwrap()
        .expect("the start is fetchable");
    assert!(is_locked(&store).await);

    drop(stack.abandon_orchestration_item(&token, None, false));

    assert_eq!(refetch(&store).await, Some(("i1".to_string(), 2)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_guard_a_dropped_abandon_leaves_the_lock_held() {
    let (store, _db) = store_with_one_start().await;
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
    let (store, _db) = store_with_one_start().await;
    let (guard, stack) = Guard::stack(
        store.clone(),
        &sqlite_backend(),
        &options(),
        Default::default(),
    );
    let outer: Arc<dyn Provider> = Arc::new(InstrumentedProvider::new(stack.clone(), None));
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
        // Normally the item is still delayed (the hand-back asks for the
        // dropped abandon's 50 ms); a slow machine may let this very fetch
        // take it again, which also proves the lock was released.
        if let Some((item, token, attempt)) = next {
            assert_eq!((item.instance.as_str(), attempt), ("i1", 2));
            outer
                .abandon_orchestration_item(&token, None, true)
                .await
                .unwrap();
        }
    })
    .await
    .unwrap();
    assert_eq!(refetch(&store).await, Some(("i1".to_string(), 2)));
    assert_eq!(guard.metrics(Default::default()).orphaned_locks_released, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_dropped_in_flight_hands_its_item_back_without_counting_an_attempt() {
    let (store, _db) = store_with_one_start().await;
    let (_guard, stack) = Guard::stack(
        store.clone(),
        &sqlite_backend(),
        &options(),
        Default::default(),
    );
    // Polled once (which starts the store call), then dropped, as the
    // dispatcher drops its fetch when the runtime shuts down. On a loaded
    // machine the store call may finish within that one poll; then the item
    // was simply fetched: hand it back uncounted and try again.
    let mut dropped_in_flight = false;
    for _ in 0..20 {
        let polled_once = tokio::time::timeout(
            Duration::ZERO,
            stack.fetch_orchestration_item(LEASE, NO_WAIT, None),
        )
        .await;
        match polled_once {
            Err(_) => {
                dropped_in_flight = true;
                break;
            }
            Ok(fetched) => {
                let (_, token, _) = fetched.unwrap().expect("nothing else holds i1");
                stack
                    .abandon_orchestration_item(&token, None, true)
                    .await
                    .unwrap();
            }
        }
    }
    assert!(dropped_in_flight, "a fetch was dropped while in flight");
    assert_eq!(refetch(&store).await, Some(("i1".to_string(), 1)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_releases_locks_still_held() {
    let (store, _db) = store_with_one_start().await;
    let (guard, stack) = Guard::stack(
        store.clone(),
        &sqlite_backend(),
        &options(),
        Default::default(),
    );
    stack
        .fetch_orchestration_item(LEASE, NO_WAIT, None)
        .await
        .unwrap()
        .unwrap();
    assert!(is_locked(&store).await);
    guard.stopped().await;
    assert_eq!(refetch(&store).await, Some(("i1".to_string(), 2)));
    assert_eq!(guard.metrics(Default::default()).orphaned_locks_released, 1);
}
