//! A held history is joined only to the execution it was read from:
//! `fetch_turn.sql` identifies an execution by its stored first event and
//! that row's `xmin`, so an instance deleted and started again under the
//! same id gets its own history, whatever its first event and clocks say.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use duroxide::providers::{
    DispatcherCapabilityFilter, ExecutionMetadata, OrchestrationItem, Provider, ProviderError,
};
use duroxide::runtime::{Runtime, RuntimeOptions};
use duroxide::{Client, Event, EventKind, OrchestrationStatus};

use super::fixture::{own, Scratch};
use crate::providers::layer::{Layer, Stacked};
use crate::providers::scratch::chain_registries as registries;

const LOCK: Duration = Duration::from_secs(30);
/// Events of a parked `Chain` of 20 steps: started, 20 scheduled and
/// completed, the subscription.
const PARKED: usize = 42;

async fn runtime(store: Arc<dyn Provider>) -> Arc<Runtime> {
    let (activities, orchestrations) = registries();
    let options = RuntimeOptions {
        dispatcher_min_poll_interval: Duration::from_millis(5),
        ..RuntimeOptions::default()
    };
    Runtime::start_with_options(store, activities, orchestrations, options).await
}

/// Compares every fetched item's history with the store's.
struct Checked {
    pg: Arc<dyn Provider>,
    /// Instance and history length of each fetched item.
    fetched: Mutex<Vec<(String, usize)>>,
    wrong: Mutex<Vec<String>>,
}

impl Checked {
    fn wrong(&self) -> Vec<String> {
        self.wrong.lock().unwrap().clone()
    }

    fn fetches(&self, instance: &str) -> usize {
        let fetched = self.fetched.lock().unwrap();
        fetched.iter().filter(|(i, _)| i == instance).count()
    }
}

#[async_trait]
impl Layer for Checked {
    async fn fetch_orchestration_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        poll_timeout: Duration,
        filter: Option<&DispatcherCapabilityFilter>,
    ) -> Result<Option<(OrchestrationItem, String, u32)>, ProviderError> {
        let fetched = next
            .fetch_orchestration_item(lock_timeout, poll_timeout, filter)
            .await?;
        if let Some((item, _, _)) = &fetched {
            // The item's lock keeps every writer of its history out.
            let stored = self
                .pg
                .read_with_execution(&item.instance, item.execution_id)
                .await?;
            if item.history != stored {
                self.wrong.lock().unwrap().push(format!(
                    "{}: fetched {} events, the store has {}",
                    item.instance,
                    item.history.len(),
                    stored.len()
                ));
            }
            let mut log = self.fetched.lock().unwrap();
            log.push((item.instance.clone(), item.history.len()));
        }
        Ok(fetched)
    }
}

/// Waits until `id` waits for its event with a history of [`PARKED`]
/// events, failing early on a wrong fetch.
async fn wait_parked(pg: &Arc<dyn Provider>, id: &str, checked: Option<&Checked>) {
    for _ in 0..6000 {
        if let Some(checked) = checked {
            assert_eq!(checked.wrong(), Vec::<String>::new());
        }
        let history = pg.read_with_execution(id, 1).await.unwrap_or_default();
        let waits = history
            .last()
            .is_some_and(|e| matches!(&e.kind, EventKind::ExternalSubscribed { .. }));
        if waits && history.len() >= PARKED {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{id} did not park");
}

/// Asserts that `tail` (the layer's store) holds `id`'s history: with
/// event 2 changed in the store, its fetch of `id` still returns event 2
/// as it was (the held copy and the tail after it), then acks the turn
/// without events, which puts the copy back, and restores event 2.
async fn assert_held(s: &Scratch, tail: &Arc<dyn Provider>, id: &str) {
    let q = &s.schema.quoted;
    let stored = s.pg.read_with_execution(id, 1).await.unwrap();
    let raw: String = sqlx::query_scalar(&format!(
        "SELECT event_data FROM {q}.history WHERE instance_id = $1 AND execution_id = 1 \
         AND event_id = 2"
    ))
    .bind(id)
    .fetch_one(&s.pool)
    .await
    .unwrap();
    let mut changed: Event = serde_json::from_str(&raw).unwrap();
    changed.timestamp_ms += 1;
    let set_event_2 = format!(
        "UPDATE {q}.history SET event_data = $1 WHERE instance_id = $2 AND execution_id = 1 \
         AND event_id = 2"
    );
    sqlx::query(&set_event_2)
        .bind(serde_json::to_string(&changed).unwrap())
        .bind(id)
        .execute(&s.pool)
        .await
        .unwrap();
    Client::new(s.pg.clone())
        .raise_event(id, "tick", "")
        .await
        .unwrap();
    let (item, token, _) = tail
        .fetch_orchestration_item(LOCK, Duration::ZERO, None)
        .await
        .unwrap()
        .expect("the event's turn");
    assert_eq!(item.instance, id);
    assert_eq!(item.history, stored, "{id}'s history is not held");
    tail.ack_orchestration_item(
        &token,
        1,
        vec![],
        vec![],
        vec![],
        ExecutionMetadata::default(),
        vec![],
    )
    .await
    .unwrap();
    sqlx::query(&set_event_2)
        .bind(raw)
        .bind(id)
        .execute(&s.pool)
        .await
        .unwrap();
}

/// An instance parked with its history held, deleted and started again at
/// once with the same name and input: every turn of the new instance,
/// taken by a runtime, gets the store's history, not the held one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recreated_instance_is_not_spliced_onto_a_held_history() {
    let s = Scratch::new("recreate").await;
    let (_, tail) = s.layered();
    let checked = Arc::new(Checked {
        pg: s.pg.clone(),
        fetched: Mutex::default(),
        wrong: Mutex::default(),
    });
    let store: Arc<dyn Provider> = Arc::new(Stacked::new(checked.clone(), tail.clone()));
    let client = Client::new(store.clone());
    let id = own("recreated");
    let rt = runtime(store.clone()).await;
    client
        .start_orchestration(&id, "Chain", "20,wait")
        .await
        .unwrap();
    wait_parked(&s.pg, &id, Some(&*checked)).await;
    // Its last ack has returned: the copy is in place.
    rt.shutdown(Some(5000)).await;
    assert_held(&s, &tail, &id).await;

    client.delete_instance(&id, true).await.unwrap();
    client
        .start_orchestration(&id, "Chain", "20,wait")
        .await
        .unwrap();
    let before = checked.fetches(&id);
    let rt = runtime(store.clone()).await;
    wait_parked(&s.pg, &id, Some(&*checked)).await;
    client.raise_event(&id, "go", "").await.unwrap();
    let status = client
        .wait_for_orchestration(&id, Duration::from_secs(60))
        .await
        .unwrap();
    rt.shutdown(Some(5000)).await;
    assert_eq!(checked.wrong(), Vec::<String>::new());
    assert!(
        matches!(&status, OrchestrationStatus::Completed { output, .. } if output == "20"),
        "{status:?}"
    );
    // The start, 20 steps and the event: each a turn of the new instance.
    let turns = checked.fetches(&id) - before;
    assert!(turns >= 22, "{turns} turns");
    s.drop().await;
}

/// The same, with what a re-creation in the same millisecond (or by a
/// process whose clock is behind) leaves: the new instance's first event
/// is byte for byte the old one's and its row has the old `created_at`.
/// Only the stored row itself tells them apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recreated_instance_with_the_same_first_event_and_creation_time_is_not_spliced() {
    let s = Scratch::new("recreate_same").await;
    let q = s.schema.quoted.clone();
    let (_, tail) = s.layered();
    let client = Client::new(tail.clone());
    let id = own("same");
    let rt = runtime(tail.clone()).await;
    client
        .start_orchestration(&id, "Chain", "20,wait")
        .await
        .unwrap();
    wait_parked(&s.pg, &id, None).await;
    rt.shutdown(Some(5000)).await;
    assert_held(&s, &tail, &id).await;
    let old = s.pg.read_with_execution(&id, 1).await.unwrap();
    let (first, created): (String, String) = sqlx::query_as(&format!(
        "SELECT h.event_data, i.created_at::text FROM {q}.history h \
         JOIN {q}.instances i ON i.instance_id = h.instance_id \
         WHERE h.instance_id = $1 AND h.execution_id = 1 AND h.event_id = 1"
    ))
    .bind(&id)
    .fetch_one(&s.pool)
    .await
    .unwrap();

    client.delete_instance(&id, true).await.unwrap();
    client
        .start_orchestration(&id, "Chain", "20,wait")
        .await
        .unwrap();
    // Its first turn by hand: the old first turn's events.
    let (item, token, _) = tail
        .fetch_orchestration_item(LOCK, Duration::ZERO, None)
        .await
        .unwrap()
        .expect("the start");
    assert_eq!(item.instance, id);
    assert_eq!(item.history, Vec::<Event>::new());
    let EventKind::OrchestrationStarted { name, version, .. } = &old[0].kind else {
        panic!("{:?}", old[0]);
    };
    let metadata = ExecutionMetadata {
        orchestration_name: Some(name.clone()),
        orchestration_version: Some(version.clone()),
        ..ExecutionMetadata::default()
    };
    tail.ack_orchestration_item(
        &token,
        1,
        old[..2].to_vec(),
        vec![],
        vec![],
        metadata,
        vec![],
    )
    .await
    .unwrap();
    let same_first: String = sqlx::query_scalar(&format!(
        "SELECT event_data FROM {q}.history WHERE instance_id = $1 AND execution_id = 1 \
         AND event_id = 1"
    ))
    .bind(&id)
    .fetch_one(&s.pool)
    .await
    .unwrap();
    assert_eq!(same_first, first);
    sqlx::query(&format!(
        "UPDATE {q}.instances SET created_at = $1::timestamptz WHERE instance_id = $2"
    ))
    .bind(&created)
    .bind(&id)
    .execute(&s.pool)
    .await
    .unwrap();

    client.raise_event(&id, "go", "").await.unwrap();
    let (item, _, _) = tail
        .fetch_orchestration_item(LOCK, Duration::ZERO, None)
        .await
        .unwrap()
        .expect("the event's turn");
    assert_eq!(item.instance, id);
    let stored = s.pg.read_with_execution(&id, 1).await.unwrap();
    assert_eq!(stored, old[..2]);
    assert_eq!(
        item.history.len(),
        2,
        "the held history of the deleted instance was spliced on"
    );
    assert_eq!(item.history, stored);
    s.drop().await;
}
