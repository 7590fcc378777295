//! The descriptor read against a real SQLite file: which reads this layer
//! answers and which reach the store (counted by a layer below it).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::{ExecutionMetadata, Provider, TagFilter, WorkItem};
use duroxide::{Event, EventKind};

use super::{with_descriptors, CALLER};
use crate::providers::scratch::{self, Scratch};

const LEASE: Duration = Duration::from_secs(60);

struct Fixture {
    /// The layer over a read counter over the store.
    stack: Arc<dyn Provider>,
    store: Arc<dyn Provider>,
    store_reads: Arc<AtomicUsize>,
    _scratch: Scratch,
}

/// A store with instance `i1` started, under a read counter and the layer.
async fn fixture() -> Fixture {
    let scratch = scratch::one_start("dxdesc", "a large input").await;
    let (counted, store_reads) = scratch::counting_reads(scratch.store.clone());
    Fixture {
        stack: with_descriptors(counted),
        store: scratch.store.clone(),
        store_reads,
        _scratch: scratch,
    }
}

fn activity(id: u64) -> WorkItem {
    WorkItem::ActivityExecute {
        instance: "i1".into(),
        execution_id: 1,
        id,
        name: "A".into(),
        input: String::new(),
        session_id: None,
        tag: None,
    }
}

/// The first turn of `i1`, through `through`: starts the execution and
/// schedules activity 2.
async fn first_turn(through: &Arc<dyn Provider>) {
    let (item, token, _) = through
        .fetch_orchestration_item(LEASE, Duration::ZERO, None)
        .await
        .unwrap()
        .expect("the start of i1");
    assert!(item.history.is_empty());
    let started = scratch::started("2.1.0", "a large input");
    let scheduled = EventKind::ActivityScheduled {
        name: "A".into(),
        input: String::new(),
        session_id: None,
        tag: None,
    };
    let metadata = ExecutionMetadata {
        orchestration_name: Some("Orch".into()),
        orchestration_version: Some("2.1.0".into()),
        ..Default::default()
    };
    through
        .ack_orchestration_item(
            &token,
            1,
            vec![
                Event::with_event_id(1, "i1", 1, None, started),
                Event::with_event_id(2, "i1", 1, None, scheduled),
            ],
            vec![activity(2)],
            vec![],
            metadata,
            vec![],
        )
        .await
        .unwrap();
}

async fn fetch_activity(through: &Arc<dyn Provider>) -> WorkItem {
    let (item, _, _) = through
        .fetch_work_item(LEASE, Duration::ZERO, None, &TagFilter::Any)
        .await
        .unwrap()
        .expect("activity 2");
    item
}

fn descriptor(history: &[Event]) -> Option<(String, String, String)> {
    history.iter().rev().find_map(|e| match &e.kind {
        EventKind::OrchestrationStarted {
            name,
            version,
            input,
            ..
        } => Some((name.clone(), version.clone(), input.clone())),
        _ => None,
    })
}

/// Runs `f` on a task of its own, as duroxide runs each worker slot (the
/// test's own future is not a task).
async fn on_a_task<T: Send + 'static>(
    f: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    tokio::spawn(f).await.unwrap()
}

#[tokio::test]
async fn the_slot_that_fetched_an_activity_of_this_runtime_reads_its_descriptor_without_the_store()
{
    let f = fixture().await;
    first_turn(&f.stack).await;
    let stack = f.stack.clone();
    let (item, history, again) = on_a_task(async move {
        let item = fetch_activity(&stack).await;
        let history = stack.read("i1").await.unwrap();
        let again = stack.read("i1").await.unwrap();
        (item, history, again)
    })
    .await;
    assert_eq!(item, activity(2));
    assert_eq!(history.len(), 1, "only the OrchestrationStarted event");
    assert_eq!(
        descriptor(&history),
        Some(("Orch".into(), "2.1.0".into(), String::new())),
        "name and version, without the input"
    );
    assert_eq!(again.len(), 2, "a second read is the store's whole history");
    assert_eq!(descriptor(&again).unwrap().2, "a large input");
    assert_eq!(
        f.store_reads.load(Ordering::Relaxed),
        1,
        "only the second read"
    );
}

#[tokio::test]
async fn a_read_on_another_task_goes_to_the_store() {
    let f = fixture().await;
    first_turn(&f.stack).await;
    let stack = f.stack.clone();
    on_a_task(async move { fetch_activity(&stack).await }).await;
    let stack = f.stack.clone();
    let history = on_a_task(async move { stack.read("i1").await.unwrap() }).await;
    assert_eq!(history.len(), 2);
    assert_eq!(f.store_reads.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn an_activity_another_runtime_scheduled_is_read_from_the_store() {
    let f = fixture().await;
    // The turn runs on the store directly: this layer never saw it.
    first_turn(&f.store).await;
    let stack = f.stack.clone();
    let history = on_a_task(async move {
        fetch_activity(&stack).await;
        stack.read("i1").await.unwrap()
    })
    .await;
    assert_eq!(history.len(), 2);
    assert_eq!(f.store_reads.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn a_fetch_run_on_the_guards_task_counts_for_the_slot_named_in_caller() {
    let f = fixture().await;
    first_turn(&f.stack).await;
    let stack = f.stack.clone();
    let history = on_a_task(async move {
        // The guard runs the fetch on a task of its own, naming the slot.
        let slot = tokio::task::try_id();
        let fetching = stack.clone();
        tokio::spawn(CALLER.scope(slot, async move { fetch_activity(&fetching).await }))
            .await
            .unwrap();
        stack.read("i1").await.unwrap()
    })
    .await;
    assert_eq!(history.len(), 1);
    assert_eq!(f.store_reads.load(Ordering::Relaxed), 0);
}

fn started_event() -> Arc<Event> {
    Arc::new(Event::with_event_id(
        1,
        "i1",
        1,
        None,
        scratch::started("2.1.0", ""),
    ))
}

/// The remembered activities of instance `i1`, execution 1, ids `ids`, as
/// one turn schedules them.
fn remember(scheduled: &mut super::Scheduled, ids: std::ops::Range<u64>, at: std::time::Instant) {
    let started = started_event();
    for id in ids {
        scheduled.insert_at(("i1".into(), 1, id), started.clone(), at);
    }
}

// Regression: the order of remembered activities kept every key until 10,000
// newer ones pushed it out, so a process that had run 10,000 activities held
// 10,000 keys it would never be asked for (RSS growth in the memory bench).
#[test]
fn remembered_activities_leave_once_taken() {
    let mut scheduled = super::Scheduled::default();
    remember(&mut scheduled, 0..3000, std::time::Instant::now());
    assert_eq!(scheduled.remembered(), (3000, 1));
    assert_eq!(scheduled.runs, 1);
    for id in 0..3000 {
        assert!(scheduled.take(&("i1".into(), 1, id)).is_some());
    }
    assert_eq!(scheduled.remembered(), (0, 0));
    assert_eq!((scheduled.runs, scheduled.order.len()), (0, 0));
}

#[test]
fn remembered_activities_taken_out_of_order_leave_when_the_older_ones_do() {
    let mut scheduled = super::Scheduled::default();
    remember(&mut scheduled, 0..5, std::time::Instant::now());
    assert!(scheduled.take(&("i1".into(), 1, 2)).is_some());
    assert_eq!(scheduled.runs, 2);
    assert!(scheduled.take(&("i1".into(), 1, 1)).is_some());
    assert_eq!(scheduled.remembered(), (3, 1));
    // Taken once: a second fetch of the same activity reads the store.
    assert!(scheduled.take(&("i1".into(), 1, 1)).is_none());
    for id in [4, 0, 3] {
        assert!(scheduled.take(&("i1".into(), 1, id)).is_some());
    }
    assert_eq!(scheduled.remembered(), (0, 0));
    assert_eq!((scheduled.runs, scheduled.order.len()), (0, 0));
}

#[test]
fn only_the_ids_a_turn_scheduled_are_answered() {
    let mut scheduled = super::Scheduled::default();
    let t0 = std::time::Instant::now();
    remember(&mut scheduled, 2..4, t0);
    remember(
        &mut scheduled,
        6..7,
        t0 + std::time::Duration::from_millis(1),
    );
    for id in [0, 1, 4, 5, 7] {
        assert!(scheduled.take(&("i1".into(), 1, id)).is_none(), "{id}");
    }
    assert!(scheduled.take(&("i1".into(), 2, 2)).is_none());
    assert!(scheduled.take(&("i2".into(), 1, 2)).is_none());
    for id in [6, 3, 2] {
        assert!(scheduled.take(&("i1".into(), 1, id)).is_some(), "{id}");
    }
    assert_eq!(scheduled.remembered(), (0, 0));
}

// Regression: remembered activities were bounded at 10,000, so a fan-out of
// 20,000 had its first 10,000 activities each read the whole history from
// the store (a fan-out of 20,000 took 80 times as long as one of 10,000).
#[test]
fn a_fan_out_past_the_capacity_is_remembered_whole_as_one_run() {
    let mut scheduled = super::Scheduled::default();
    let n = 3 * super::CAPACITY as u64;
    remember(&mut scheduled, 0..n, std::time::Instant::now());
    assert_eq!(scheduled.remembered(), (n as usize, 1));
    assert_eq!(scheduled.runs, 1);
    for id in 0..n {
        assert!(scheduled.take(&("i1".into(), 1, id)).is_some(), "{id}");
    }
    assert_eq!(scheduled.remembered(), (0, 0));
}

/// Activities another process runs are never taken here: they are forgotten
/// once too old to be answered, not only when 10,000 newer ones arrive.
#[test]
fn remembered_activities_nobody_takes_are_forgotten_after_max_age() {
    let mut scheduled = super::Scheduled::default();
    let t0 = std::time::Instant::now();
    remember(&mut scheduled, 0..10, t0);
    assert!(scheduled
        .take_at(&("i1".into(), 1, 3), t0 + super::MAX_AGE)
        .is_none());
    let other = ("i2".to_string(), 1, 0);
    scheduled.insert_at(other.clone(), started_event(), t0 + super::MAX_AGE);
    assert_eq!(scheduled.remembered(), (1, 1));
    assert!(scheduled.take(&other).is_some());
}

#[test]
fn remembered_runs_are_bounded_by_count() {
    let mut scheduled = super::Scheduled::default();
    let now = std::time::Instant::now();
    for i in 0..(super::CAPACITY + 5) {
        scheduled.insert_at((format!("i{i}"), 1, 2), started_event(), now);
    }
    assert_eq!(scheduled.remembered(), (super::CAPACITY, super::CAPACITY));
    assert!(scheduled.take(&("i4".into(), 1, 2)).is_none());
    assert!(scheduled.take(&("i5".into(), 1, 2)).is_some());
}

#[test]
fn remembered_activities_give_their_memory_back_after_a_burst() {
    let mut scheduled = super::Scheduled::default();
    let now = std::time::Instant::now();
    for i in 0..5000 {
        scheduled.insert_at((format!("i{i}"), 1, 2), started_event(), now);
    }
    assert!(scheduled.order_capacity() >= 5000);
    for i in 0..5000 {
        scheduled.take(&(format!("i{i}"), 1, 2));
    }
    assert!(scheduled.order_capacity() <= super::SHRINK_ABOVE);
}
