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
use rusqlite::OptionalExtension;

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

/// A small deterministic generator for the queue states below.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// The fetch's candidate, looked for at the front of the queue first, is the
/// crate's in every state of the queue: messages visible or not, instances
/// locked or not (live or expired locks), of supported versions or not, with
/// fewer and more ineligible messages at the front than it looks at.
#[tokio::test]
async fn the_candidate_found_at_the_front_of_the_queue_is_the_crates() {
    let (s, _) = file_store(false).await;
    let mut conn = rusqlite::Connection::open(&s.path).unwrap();
    let now: i64 = 1_000_000_000;
    let mut rng = Lcg(7);
    for round in 0..60 {
        let tx = conn.transaction().unwrap();
        for table in [
            "orchestrator_queue",
            "instance_locks",
            "instances",
            "executions",
        ] {
            tx.execute(&format!("DELETE FROM {table}"), []).unwrap();
        }
        let instances = 1 + rng.below(40);
        for i in 0..instances {
            let id = format!("i{i}");
            match rng.below(4) {
                0 => {}
                1 => {
                    tx.execute(
                        "INSERT INTO instance_locks VALUES (?1, 't', ?2, 0)",
                        rusqlite::params![id, now + 1000],
                    )
                    .unwrap();
                }
                _ => {
                    tx.execute(
                        "INSERT INTO instance_locks VALUES (?1, 't', ?2, 0)",
                        rusqlite::params![id, now - 1000],
                    )
                    .unwrap();
                }
            }
            if rng.below(2) == 0 {
                tx.execute(
                    "INSERT INTO instances (instance_id, orchestration_name, orchestration_version, current_execution_id)
                     VALUES (?1, 'O', '1.0.0', 1)",
                    [&id],
                )
                .unwrap();
                let minor = rng.below(4) as i64;
                tx.execute(
                    "INSERT INTO executions (instance_id, execution_id, duroxide_version_major,
                       duroxide_version_minor, duroxide_version_patch) VALUES (?1, 1, 0, ?2, 0)",
                    rusqlite::params![id, minor],
                )
                .unwrap();
            }
        }
        // Some rounds put more ineligible messages at the front than the
        // front read covers, so the crate's statement has to run.
        let hidden_front = if round % 3 == 0 {
            super::FRONT_ROWS as u64 + rng.below(20)
        } else {
            0
        };
        let messages = hidden_front + rng.below(200);
        for m in 0..messages {
            let visible = m >= hidden_front && rng.below(3) != 0;
            tx.execute(
                "INSERT INTO orchestrator_queue (instance_id, work_item, visible_at) VALUES (?1, '{}', ?2)",
                rusqlite::params![
                    format!("i{}", rng.below(instances)),
                    if visible { now - 10 } else { now + 10 }
                ],
            )
            .unwrap();
        }
        for versions in [
            None,
            Some((0, 1_000_000)),
            Some((2_000, 3_000)),
            Some((9, 9)),
        ] {
            let crate_says: Option<String> = match versions {
                None => tx
                    .query_row(super::CANDIDATE, [now], |r| r.get(0))
                    .optional()
                    .unwrap(),
                Some((min, max)) => tx
                    .query_row(
                        super::CANDIDATE_IN_VERSIONS,
                        rusqlite::params![now, min, max],
                        |r| r.get(0),
                    )
                    .optional()
                    .unwrap(),
            };
            let ours = super::next_candidate(&tx, now, versions).unwrap();
            assert_eq!(ours, crate_says, "round {round}, versions {versions:?}");
        }
        tx.rollback().unwrap();
    }
}
