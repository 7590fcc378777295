//! Kept connections, on a real Postgres pool.

use std::time::{Duration, Instant};

use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;

use super::{KeptConnections, LINGER, MIN_POOL_FOR_LANES};
use crate::providers::scratch::database_url as url;

async fn pool(max: u32) -> PgPool {
    PgPoolOptions::new()
        .max_connections(max)
        .connect(&url())
        .await
        .unwrap()
}

/// The server backend a call through `kept` ran on.
async fn backend_of(kept: &KeptConnections) -> i32 {
    let (pid,): (i32,) = kept
        .fetch_optional(sqlx::query_as("SELECT pg_backend_pid()"))
        .await
        .unwrap()
        .unwrap();
    pid
}

/// Opens `n` connections, so that the pool has idle ones to go round.
async fn open_all(pool: &PgPool, n: u32) {
    let mut held = Vec::new();
    for _ in 0..n {
        held.push(pool.acquire().await.unwrap());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn back_to_back_calls_run_on_one_backend() {
    let pool = pool(4).await;
    open_all(&pool, 4).await;
    let kept = KeptConnections::new(pool.clone());
    let first = backend_of(&kept).await;
    for _ in 0..5 {
        assert_eq!(
            backend_of(&kept).await,
            first,
            "a call within the linger went elsewhere"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_connection_goes_back_to_the_pool_after_the_linger() {
    let pool = pool(4).await;
    open_all(&pool, 4).await;
    let kept = KeptConnections::new(pool.clone());
    backend_of(&kept).await;
    let until = Instant::now() + LINGER * 50;
    // sqlx's idle count can read as usize::MAX for a moment while a
    // connection moves between its counters: wait for exactly four.
    while pool.num_idle() != 4 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(pool.num_idle(), 4, "the kept connection is still held");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_kept_from_a_pool_of_two() {
    let pool = pool(2).await;
    open_all(&pool, 2).await;
    let kept = KeptConnections::new(pool.clone());
    backend_of(&kept).await;
    tokio::time::sleep(Duration::from_millis(1)).await;
    let a = pool.acquire().await.unwrap();
    let b = tokio::time::timeout(Duration::from_millis(5), pool.acquire()).await;
    assert!(b.is_ok(), "a connection was kept back from a pool of two");
    drop(a);
}

/// Regression: the provider holding a kept connection was dropped by Node's
/// exit after the runtime stopped, and sqlx's return of the connection to its
/// pool panicked there for want of a Tokio runtime, aborting the process.
#[test]
fn a_kept_connection_dropped_after_its_runtime_stopped_does_not_panic() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let kept = rt.block_on(async {
        let pool = pool(4).await;
        open_all(&pool, 4).await;
        let kept = KeptConnections::new(pool);
        backend_of(&kept).await;
        kept
    });
    // The linger task goes with the runtime; the connection is still kept.
    drop(rt);
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(kept)));
    assert!(dropped.is_ok(), "dropping the kept connection panicked");
}

/// A call that takes `ms` on the server, reporting its backend.
async fn slow_backend_of(kept: &KeptConnections, ms: u32) -> i32 {
    let (pid,): (i32,) = kept
        .fetch_optional(sqlx::query_as(&format!(
            "SELECT pg_backend_pid() FROM pg_sleep({ms} / 1000.0)"
        )))
        .await
        .unwrap()
        .unwrap();
    pid
}

/// Calls that run at the same time each keep their connection, and the
/// next calls run on those backends, not on ones the pool hands out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_at_the_same_time_keep_a_connection_each() {
    let pool = pool(4).await;
    open_all(&pool, 4).await;
    let kept = KeptConnections::new(pool.clone());
    let (a, b, c) = tokio::join!(
        slow_backend_of(&kept, 30),
        slow_backend_of(&kept, 30),
        slow_backend_of(&kept, 30)
    );
    assert_eq!(kept.held(), 3);
    let mut first = vec![a, b, c];
    first.sort();
    let (x, y, z) = tokio::join!(
        slow_backend_of(&kept, 1),
        slow_backend_of(&kept, 1),
        slow_backend_of(&kept, 1)
    );
    let mut next = vec![x, y, z];
    next.sort();
    assert_eq!(next, first, "the next calls ran elsewhere");
}

/// However many calls run at once, one connection of the pool is left for
/// the crate's own calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_keeps_a_connection_for_other_calls() {
    let pool = pool(4).await;
    open_all(&pool, 4).await;
    let kept = KeptConnections::new(pool.clone());
    tokio::join!(
        slow_backend_of(&kept, 30),
        slow_backend_of(&kept, 30),
        slow_backend_of(&kept, 30),
        slow_backend_of(&kept, 30)
    );
    assert_eq!(
        kept.held(),
        3,
        "every connection was kept back from the pool"
    );
    // And the one not kept went back to the pool (sqlx pings it first). This
    // was an acquire within 5 ms, less than the linger after which kept
    // connections go back too; a loaded CI machine missed it.
    let idle = async {
        while pool.num_idle() == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), idle)
        .await
        .expect("no connection went back to the pool");
}

/// Regression: a call waiting for the pool got a connection only once the
/// calls that kept one paused for the linger (40 to 90 ms waits in a hello
/// run). One caller makes call after call on the one connection the pool
/// has left; another's call must get that connection when the first gives
/// it back next, not once the first caller stops. (Run as two futures of
/// one task, the first caller could make all its calls before the second
/// was first polled on a loaded machine; here it runs as a task of its own
/// and the second call starts once it is under way.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_for_the_pool_gets_the_next_connection_given_back() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    let pool = pool(3).await;
    open_all(&pool, 3).await;
    let kept = Arc::new(KeptConnections::new(pool.clone()));
    let _others = (pool.acquire().await.unwrap(), pool.acquire().await.unwrap());
    const CALLS: usize = 2000;
    let done = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let busy = tokio::spawn({
        let (kept, done, stop) = (kept.clone(), done.clone(), stop.clone());
        async move {
            for _ in 0..CALLS {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                backend_of(&kept).await;
                done.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    while done.load(Ordering::SeqCst) < 5 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let before = done.load(Ordering::SeqCst);
    backend_of(&kept).await;
    let waited_for = done.load(Ordering::SeqCst) - before;
    stop.store(true, Ordering::SeqCst);
    busy.await.unwrap();
    assert!(
        waited_for < CALLS / 4,
        "a call waiting for the pool returned after {waited_for} of the other caller's calls"
    );
}

/// A client call does not take the connection the runtime's lane keeps,
/// and each lane's next call runs on the backend its last one did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_call_runs_on_its_own_lanes_backend() {
    let pool = pool(5).await;
    open_all(&pool, 5).await;
    let lanes = KeptConnections::lanes(pool.clone(), true);
    let runtime = backend_of(&lanes.runtime).await;
    let client = backend_of(&lanes.client).await;
    assert_ne!(
        client, runtime,
        "the client call took the runtime's connection"
    );
    for _ in 0..3 {
        assert_eq!(backend_of(&lanes.runtime).await, runtime);
        assert_eq!(backend_of(&lanes.client).await, client);
    }
}

/// With both lanes busy, one connection of the pool is still left for the
/// crate's own calls; a pool too small for two lanes has one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lanes_keep_one_connection_of_the_pool_free() {
    let pool = pool(5).await;
    open_all(&pool, 5).await;
    let lanes = KeptConnections::lanes(pool.clone(), true);
    tokio::join!(
        slow_backend_of(&lanes.runtime, 30),
        slow_backend_of(&lanes.runtime, 30),
        slow_backend_of(&lanes.runtime, 30),
        slow_backend_of(&lanes.runtime, 30),
        slow_backend_of(&lanes.client, 30),
    );
    assert_eq!(lanes.runtime.held() + lanes.client.held(), 4);
    assert_eq!(lanes.client.held(), 1);

    let small = self::pool(MIN_POOL_FOR_LANES - 1).await;
    let one = KeptConnections::lanes(small, true);
    assert!(
        std::sync::Arc::ptr_eq(&one.runtime, &one.client),
        "a pool of {} has two lanes",
        MIN_POOL_FOR_LANES - 1
    );
}

/// Regression: a client call gave its lane's connection to the pool
/// whenever a runtime call was waiting for one, so under load the next
/// client call waited for the pool behind the dispatchers (in one run of
/// 200 hellos on a pool of 5, 75 of the 193 starts took their connection
/// from the pool, with sqlx's two pings). While runtime calls wait, the
/// client's calls keep running on their lane's one connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_lane_keeps_its_connection_while_runtime_calls_wait() {
    use std::sync::atomic::Ordering;
    let pool = pool(5).await;
    open_all(&pool, 5).await;
    let lanes = KeptConnections::lanes(pool.clone(), true);
    let client = backend_of(&lanes.client).await;
    // Six slow runtime calls on the four connections the client leaves.
    let slow: Vec<_> = (0..6)
        .map(|_| {
            let runtime = lanes.runtime.clone();
            tokio::spawn(async move { slow_backend_of(&runtime, 400).await })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut while_waiting = 0;
    while while_waiting < 5 {
        assert!(
            Instant::now() < deadline,
            "no runtime call waited for the pool"
        );
        assert_eq!(
            backend_of(&lanes.client).await,
            client,
            "a client call ran on another backend after {while_waiting} calls while runtime calls waited"
        );
        if lanes.runtime.waiting.load(Ordering::SeqCst) > 0 {
            while_waiting += 1;
        }
    }
    for call in slow {
        call.await.unwrap();
    }
}

/// The runtime's lane still gives a connection back to the pool when a
/// client call waits there: a client call that finds the pool taken runs
/// once a runtime call ends, not once the runtime's calls pause.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_client_call_gets_the_runtime_lanes_next_connection() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let pool = pool(5).await;
    open_all(&pool, 5).await;
    let lanes = KeptConnections::lanes(pool.clone(), true);
    // Calls outside the lanes hold two connections; three runtime callers,
    // call after call, keep the other three (all the runtime's lane keeps).
    let _others = (pool.acquire().await.unwrap(), pool.acquire().await.unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = (0..3)
        .map(|_| {
            let (runtime, stop) = (lanes.runtime.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    slow_backend_of(&runtime, 5).await;
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let got = tokio::time::timeout(Duration::from_secs(10), backend_of(&lanes.client)).await;
    stop.store(true, Ordering::SeqCst);
    for caller in busy {
        caller.await.unwrap();
    }
    assert!(
        got.is_ok(),
        "the client call waited while the runtime's calls went on"
    );
}
