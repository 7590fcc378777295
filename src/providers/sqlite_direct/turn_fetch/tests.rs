//! The tail read of a turn's fetch on real SQLite files: the same turns
//! through duroxide's store and through this layer are handed the same
//! histories, while the layer reads only the events its last ack did not
//! leave it (another process's turns among them), and reads the whole
//! history of an instance that was deleted and created again.

use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::sqlite::SqliteProvider;
use duroxide::providers::{ExecutionMetadata, Provider, WorkItem};
use duroxide::{Event, EventKind};

use super::super::tests::{file_store, rows, scheduled, shown, start, Store, LOCK};
use crate::providers::histories::MIN_EVENTS;
use crate::providers::scratch;

/// Turns of `instance` through `by`, each fetched, logged and acked with
/// the result of the activity the last one scheduled and a new schedule;
/// the ack queues that result, so the next turn has a message. `input`
/// is the instance's start input (its first event differs with it).
async fn turns(by: &Arc<dyn Provider>, instance: &str, input: &str, n: usize) -> Vec<String> {
    let mut log = Vec::new();
    for _ in 0..n {
        let fetched = by
            .fetch_orchestration_item(LOCK, Duration::ZERO, None)
            .await;
        log.push(shown(&fetched));
        let (item, token, _) = fetched.unwrap().unwrap();
        assert_eq!(item.instance, instance);
        let next_id = item.history.last().map_or(0, |e| e.event_id) + 1;
        let mut delta = Vec::new();
        let mut id = next_id;
        if item.history.is_empty() {
            delta.push(Event::with_event_id(
                id,
                instance,
                1,
                None,
                scratch::started("1.0.0", input),
            ));
            id += 1;
        } else {
            let scheduled_id = next_id - 1;
            delta.push(Event::with_event_id(
                id,
                instance,
                1,
                Some(scheduled_id),
                EventKind::ActivityCompleted {
                    result: format!("r{scheduled_id}"),
                },
            ));
            id += 1;
        }
        delta.push(scheduled(instance, id, None, None));
        let result = WorkItem::ActivityCompleted {
            instance: instance.into(),
            execution_id: 1,
            id,
            result: format!("r{id}"),
        };
        let metadata = ExecutionMetadata {
            orchestration_name: Some("Orch".into()),
            orchestration_version: Some("1.0.0".into()),
            ..Default::default()
        };
        by.ack_orchestration_item(&token, 1, delta, vec![], vec![result], metadata, vec![])
            .await
            .unwrap();
    }
    log
}

/// The crate's own store on `s`'s file: another process's runtime.
async fn other_process(s: &Store) -> Arc<dyn Provider> {
    let url = format!("sqlite:{}", s.path.display());
    Arc::new(SqliteProvider::new(&url, None).await.unwrap())
}

/// Deletes every row of `instance`, as a management call of another process would.
async fn delete(s: &Store, instance: &str) {
    for table in [
        "history",
        "executions",
        "orchestrator_queue",
        "worker_queue",
        "instance_locks",
        "kv_store",
        "instances",
    ] {
        sqlx::query(&format!("DELETE FROM {table} WHERE instance_id = ?"))
            .bind(instance)
            .execute(&s.pool)
            .await
            .unwrap();
    }
}

/// 24 turns here, 2 by another process, 4 here, then the instance deleted
/// and created again with another input, and 3 turns of it (the second
/// one's fetch finds the old instance's history held).
async fn tail_script(s: &Store) -> Vec<String> {
    let mut log = Vec::new();
    s.store
        .enqueue_for_orchestrator(start("t1"), None)
        .await
        .unwrap();
    log.extend(turns(&s.store, "t1", "in-t1", 24).await);
    let other = other_process(s).await;
    log.extend(turns(&other, "t1", "in-t1", 2).await);
    log.extend(turns(&s.store, "t1", "in-t1", 4).await);
    delete(s, "t1").await;
    s.store
        .enqueue_for_orchestrator(start("t1"), None)
        .await
        .unwrap();
    log.extend(turns(&s.store, "t1", "again", 3).await);
    log
}

#[tokio::test]
async fn a_turn_reads_only_the_events_after_its_last_acks_history() {
    let (crate_side, _) = file_store(false).await;
    let (direct_side, layer) = file_store(true).await;
    let expected = tail_script(&crate_side).await;
    let got = tail_script(&direct_side).await;
    assert_eq!(expected.len(), got.len());
    for (i, (e, g)) in expected.iter().zip(&got).enumerate() {
        assert_eq!(e, g, "turn {i} was handed another item");
    }
    assert!(
        got[29].contains("ActivityCompleted") && got[30].contains("history: []"),
        "the script re-creates the instance after 30 turns"
    );
    assert!(
        got[31].contains("again") && !got[31].contains("in-t1"),
        "the re-created instance's second turn holds only its own history"
    );
    assert_eq!(rows(&crate_side.pool).await, rows(&direct_side.pool).await);
    // Tails from the turn after the ack that left MIN_EVENTS events, the
    // other process's events among them; none once the instance was
    // deleted (its first event is not the one held).
    let first_held = MIN_EVENTS.div_ceil(2);
    let tails = (24 - first_held) + 4;
    assert_eq!(layer.unwrap().tails_read(), tails as u64);
}
