use std::sync::Arc;

use duroxide::providers::sqlite::SqliteProvider;
use duroxide::providers::{Provider, WorkItem};

use super::{wall_ms, Busy, Clock};

const HOUR: u64 = 3_600_000;

fn timer(id: u64, fire_at_ms: u64) -> WorkItem {
    WorkItem::TimerFired {
        instance: "i".into(),
        execution_id: 1,
        id,
        fire_at_ms,
    }
}

async fn store() -> (Arc<SqliteProvider>, Arc<dyn Provider>) {
    let sqlite = Arc::new(
        SqliteProvider::new_in_memory()
            .await
            .expect("in-memory store"),
    );
    (sqlite.clone(), sqlite)
}

#[tokio::test]
async fn held_timers_are_released_in_due_order_once_virtual_time_reaches_them() {
    let clock = Clock::default();
    let (sqlite, store) = store().await;
    let wall = wall_ms();
    clock.hold(vec![
        timer(3, wall + 3 * HOUR),
        timer(1, wall + HOUR),
        timer(2, wall + 2 * HOUR),
    ]);
    assert_eq!(clock.held_count(), 3);
    assert_eq!(
        clock.release_due(&store).await.unwrap(),
        0,
        "nothing due yet"
    );
    assert_eq!(
        clock.busy(&store).await.unwrap(),
        None,
        "held timers are not work"
    );

    clock.reach(clock.next_due().unwrap());
    assert!(clock.now_ms() >= wall + HOUR);
    assert_eq!(clock.release_due(&store).await.unwrap(), 1);
    assert_eq!(
        clock.next_due(),
        Some(wall + 2 * HOUR),
        "the 2 h timer is next"
    );
    assert_eq!(
        clock.busy(&store).await.unwrap(),
        Some(Busy {
            orchestrator_queue: 1,
            worker_queue: 0,
            in_flight: 0
        })
    );

    // The released message is visible now: the store's `visible_at` is its
    // `fire_at_ms`, set to the wall time of the release.
    let (visible_at,): (i64,) = sqlx::query_as("SELECT visible_at FROM orchestrator_queue")
        .fetch_one(sqlite.get_pool())
        .await
        .unwrap();
    assert!(visible_at as u64 <= wall_ms());
}

#[tokio::test]
async fn virtual_time_only_moves_forward_and_shifts_held_due_times() {
    let clock = Clock::default();
    let before = clock.now_ms();
    clock.reach(before + 10 * HOUR);
    let later = clock.now_ms();
    assert!(later >= before + 10 * HOUR);
    clock.reach(before); // not back
    assert!(clock.now_ms() >= later);
    // A timer scheduled now for 1 h is due 1 h after virtual now, not wall now.
    let wall = wall_ms();
    clock.hold(vec![timer(1, wall + HOUR)]);
    let due = clock.next_due().unwrap();
    assert!(due >= later + HOUR && due < later + HOUR + 60_000);
    clock.clear();
    assert_eq!(clock.held_count(), 0);
}
