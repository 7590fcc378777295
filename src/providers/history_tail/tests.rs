//! On a real Postgres schema of their own, with duroxide's runtime running
//! turns through the layer.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::Provider;
use duroxide::runtime::{Runtime, RuntimeOptions};
use duroxide::{Client, OrchestrationStatus};
use duroxide_pg::PostgresProvider;

use super::{HistoryTail, Statements};
use crate::providers::kept::KeptConnections;
use crate::providers::layer::Stacked;
use crate::providers::pg_functions::install::installed;
use crate::providers::scratch::{chain_registries as registries, database_url as url};

const WAIT: Duration = Duration::from_secs(60);

/// The layer's connections, as a provider's stack shares them.
pub(super) fn kept(pool: &sqlx::PgPool) -> Arc<KeptConnections> {
    Arc::new(KeptConnections::new(pool.clone()))
}

/// The layer over the plain store, on a schema of its own named `schema`.
struct Layered {
    schema: String,
    pool: sqlx::PgPool,
    pg: Arc<dyn Provider>,
    layer: Arc<HistoryTail>,
    store: Arc<dyn Provider>,
}

impl Layered {
    async fn new(schema: &str) -> Self {
        let pg = PostgresProvider::new_with_schema(&url(), Some(schema))
            .await
            .unwrap();
        let pool = pg.pool().clone();
        let pg: Arc<dyn Provider> = Arc::new(pg);
        let installed = installed(&pool, schema).await;
        let layer = Arc::new(HistoryTail::new(
            kept(&pool),
            Statements::new(&installed.quoted),
            false,
        ));
        let store: Arc<dyn Provider> = Arc::new(Stacked::new(layer.clone(), pg.clone()));
        Self {
            schema: schema.to_string(),
            pool,
            pg,
            layer,
            store,
        }
    }
}

async fn drop_schema(pool: &sqlx::PgPool, schema: &str) {
    sqlx::raw_sql(&format!("DROP SCHEMA {schema} CASCADE"))
        .execute(pool)
        .await
        .unwrap();
}

/// A runtime over the layer on a schema of its own, with `id` started.
struct Running {
    layer: Arc<HistoryTail>,
    rt: Arc<Runtime>,
    client: Client,
    pool: sqlx::PgPool,
    schema: String,
}

impl Running {
    async fn start(tag: &str, id: &str, input: &str) -> Self {
        let Layered {
            schema,
            pool,
            layer,
            store,
            ..
        } = Layered::new(&format!("tail_{tag}_{}", std::process::id())).await;
        let (activities, orchestrations) = registries();
        let options = RuntimeOptions {
            dispatcher_min_poll_interval: Duration::from_millis(5),
            ..RuntimeOptions::default()
        };
        let rt =
            Runtime::start_with_options(store.clone(), activities, orchestrations, options).await;
        let client = Client::new(store);
        client
            .start_orchestration(id, "Chain", input)
            .await
            .unwrap();
        Self {
            layer,
            rt,
            client,
            pool,
            schema,
        }
    }

    fn tails(&self) -> u64 {
        self.layer.tails.load(Ordering::Relaxed)
    }

    fn ridden(&self) -> u64 {
        self.layer.ridden.load(Ordering::Relaxed)
    }

    fn ridden_work(&self) -> u64 {
        self.layer.ridden_work.load(Ordering::Relaxed)
    }

    async fn stop(self) {
        self.rt.shutdown(Some(5000)).await;
        drop_schema(&self.pool, &self.schema).await;
    }
}

async fn output(client: &Client, id: &str) -> String {
    match client.wait_for_orchestration(id, WAIT).await.unwrap() {
        OrchestrationStatus::Completed { output, .. } => output,
        other => panic!("{id} ended as {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_chain_fetches_tails_and_replays_the_same_history() {
    let run = Running::start("chain", "c1", "30").await;
    assert_eq!(output(&run.client, "c1").await, "30");
    // The history reaches MIN_EVENTS after 8 steps; every later turn is a tail.
    assert!(run.tails() >= 15, "tails: {}", run.tails());
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_takes_its_turns_from_the_worker_acks_that_fetched_them() {
    let run = Running::start("ride", "c1", "30").await;
    assert_eq!(output(&run.client, "c1").await, "30");
    // Every step's completion can carry the next turn; a step whose slot
    // had not yet fetched when the ack ran goes the usual way.
    assert!(run.ridden() >= 15, "ridden: {}", run.ridden());
    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_takes_its_activities_from_the_turn_acks_that_fetched_them() {
    let run = Running::start("turn_ride", "c1", "30").await;
    assert_eq!(output(&run.client, "c1").await, "30");
    assert!(run.ridden_work() >= 15, "ridden: {}", run.ridden_work());
    run.stop().await;
}

/// A ridden item that no fetch takes goes back to the queue within the
/// hold, not after its lock timeout: the runtime that would have taken it
/// is gone, and another one finishes the instance.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ridden_item_no_fetch_takes_is_abandoned() {
    let Layered {
        schema,
        pool,
        pg,
        layer,
        store,
    } = Layered::new(&format!("tail_abandon_{}", std::process::id())).await;
    let (activities, orchestrations) = registries();
    // Orchestrations only, with a lock that would outlast the test.
    let options = RuntimeOptions {
        dispatcher_min_poll_interval: Duration::from_millis(5),
        worker_concurrency: 0,
        orchestrator_lock_timeout: Duration::from_secs(120),
        ..RuntimeOptions::default()
    };
    let rt = Runtime::start_with_options(
        store.clone(),
        activities.clone(),
        orchestrations.clone(),
        options,
    )
    .await;
    let client = Client::new(store.clone());
    client
        .start_orchestration("a1", "Chain", "1")
        .await
        .unwrap();
    let fetched = loop {
        let got = store
            .fetch_work_item(
                Duration::from_secs(60),
                Duration::ZERO,
                None,
                &duroxide::providers::TagFilter::default(),
            )
            .await
            .unwrap();
        if let Some(got) = got {
            break got;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    // The runtime's slot looks again once the turn's ack returns (unless
    // that ack rode a worker fetch, which frees the slot at once); the ack
    // below rides only if the slot was free when the runtime stopped. On a
    // loaded machine this test took the activity and stopped the runtime
    // before that look, in one run of several, and the ack rode nothing.
    for _ in 0..500 {
        if layer.turns.has_free_slot() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        layer.turns.has_free_slot(),
        "the runtime's slot never looked again"
    );
    rt.shutdown(Some(5000)).await;
    let (
        duroxide::providers::WorkItem::ActivityExecute {
            instance,
            execution_id,
            id,
            ..
        },
        token,
        _,
    ) = fetched
    else {
        panic!("expected an activity, got {fetched:?}");
    };
    let completion = duroxide::providers::WorkItem::ActivityCompleted {
        instance,
        execution_id,
        id,
        result: "1".into(),
    };
    store.ack_work_item(&token, Some(completion)).await.unwrap();
    assert_eq!(layer.turns.waiting(), 1, "the ack fetched the next turn");
    tokio::time::sleep(super::ride::HOLD + Duration::from_millis(500)).await;
    assert_eq!(layer.turns.waiting(), 0);
    // A runtime on the plain store gets the turn now, not in two minutes.
    let rt2 = Runtime::start_with_options(
        pg.clone(),
        activities,
        orchestrations,
        RuntimeOptions {
            dispatcher_min_poll_interval: Duration::from_millis(5),
            ..RuntimeOptions::default()
        },
    )
    .await;
    let status = Client::new(pg)
        .wait_for_orchestration("a1", Duration::from_secs(20))
        .await
        .unwrap();
    assert!(
        matches!(&status, OrchestrationStatus::Completed { output, .. } if output == "1"),
        "{status:?}"
    );
    rt2.shutdown(Some(5000)).await;
    drop_schema(&pool, &schema).await;
}

/// A turn's ack that fetched its activity for a worker slot that never
/// comes, then what gives the activity back: `wait` until the hold ends,
/// or the provider's `give_back` (a runtime's shutdown).
async fn ridden_activity_given_back(tag: &str, wait: bool) {
    let Layered {
        schema,
        pool,
        pg,
        layer,
        store,
    } = Layered::new(&format!("tail_{tag}_{}", std::process::id())).await;
    let tags = duroxide::providers::TagFilter::default();
    let lock = Duration::from_secs(60);
    // A worker slot looked and found nothing: it is free.
    let none = store
        .fetch_work_item(lock, Duration::ZERO, None, &tags)
        .await
        .unwrap();
    assert!(none.is_none());
    let (activities, orchestrations) = registries();
    let rt = Runtime::start_with_options(
        store.clone(),
        activities,
        orchestrations,
        RuntimeOptions {
            dispatcher_min_poll_interval: Duration::from_millis(5),
            worker_concurrency: 0,
            ..RuntimeOptions::default()
        },
    )
    .await;
    Client::new(store.clone())
        .start_orchestration("w1", "Chain", "1")
        .await
        .unwrap();
    for _ in 0..500 {
        if layer.work.waiting() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        layer.work.waiting(),
        1,
        "the turn's ack fetched its activity"
    );
    rt.shutdown(Some(5000)).await;
    if wait {
        tokio::time::sleep(super::ride::HOLD + Duration::from_millis(500)).await;
    } else {
        super::Ridden(layer.clone()).give_back().await;
    }
    assert_eq!(layer.work.waiting(), 0);
    // Back in the queue, not locked for the 60 s it was fetched with, and
    // its attempt not counted.
    let again = pg
        .fetch_work_item(lock, Duration::ZERO, None, &tags)
        .await
        .unwrap();
    assert!(
        matches!(&again, Some((duroxide::providers::WorkItem::ActivityExecute { instance, .. }, _, attempts)) if instance == "w1" && *attempts == 1),
        "{again:?}"
    );
    drop_schema(&pool, &schema).await;
}

/// The worker side of `a_ridden_item_no_fetch_takes_is_abandoned`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ridden_activity_no_fetch_takes_is_abandoned() {
    ridden_activity_given_back("abandon_work", true).await;
}

/// What a runtime's shutdown calls: given back at once, not after the hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn give_back_returns_ridden_items_at_once() {
    ridden_activity_given_back("give_back", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_and_restarted_instance_is_fetched_whole() {
    let run = Running::start("recreate", "r1", "20,wait").await;
    // Wait until the chain is parked on its event, its history held here:
    // started, 20 steps scheduled and completed, the subscription.
    let parked = || {
        let histories = run.layer.histories.lock().unwrap();
        histories
            .held
            .get("r1")
            .is_some_and(|(h, _)| h.history.len() >= 42)
    };
    for _ in 0..600 {
        if parked() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(parked(), "r1 did not park with its history held");
    let tails = run.tails();
    run.client.delete_instance("r1", true).await.unwrap();
    // Same id, same execution id, shorter history: only the instance row's
    // identity tells the held copy is of another instance.
    run.client
        .start_orchestration("r1", "Chain", "3")
        .await
        .unwrap();
    assert_eq!(output(&run.client, "r1").await, "3");
    assert_eq!(run.tails(), tails, "the new instance was fetched whole");
    run.stop().await;
}

/// Instances of `Chain` with no steps (one turn each), started through
/// `store` before any runtime runs.
async fn queue_one_turn_instances(store: Arc<dyn Provider>, n: usize) -> Vec<String> {
    let client = Client::new(store);
    let mut ids = Vec::new();
    for i in 0..n {
        let id = format!("one-{i}");
        client.start_orchestration(&id, "Chain", "0").await.unwrap();
        ids.push(id);
    }
    ids
}

/// One orchestration slot, no worker slots.
fn one_turn_slot() -> RuntimeOptions {
    RuntimeOptions {
        dispatcher_min_poll_interval: Duration::from_millis(5),
        orchestration_concurrency: 1,
        worker_concurrency: 0,
        ..RuntimeOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turns_ack_fetches_the_next_turn_for_its_slot() {
    let Layered {
        schema,
        pool,
        pg,
        layer,
        store,
    } = Layered::new(&format!("tail_next_turn_{}", std::process::id())).await;
    let ids = queue_one_turn_instances(pg, 12).await;
    let (activities, orchestrations) = registries();
    let rt =
        Runtime::start_with_options(store.clone(), activities, orchestrations, one_turn_slot())
            .await;
    let client = Client::new(store);
    for id in &ids {
        assert_eq!(output(&client, id).await, "0");
    }
    // The first turn is fetched plainly; each later one can ride the ack
    // of the turn before it.
    let next_turns = layer.next_turns.load(Ordering::Relaxed);
    assert!(next_turns >= 8, "next turns: {next_turns}");
    assert!(layer.ridden.load(Ordering::Relaxed) >= 8);
    assert_eq!(layer.turns.untaken(), 0);
    rt.shutdown(Some(5000)).await;
    drop_schema(&pool, &schema).await;
}

/// Regression: the wake-up layer skipped the first look of a slot whose
/// queue empty looks covered, so the turn that slot's own ack had fetched
/// waited below until the hold gave it back. Here the instances arrive
/// unannounced (another process, its notification lost) after the slot
/// looked and found nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_covered_slot_still_takes_the_turn_its_ack_fetched() {
    let schema = format!("tail_covered_{}", std::process::id());
    let provider = crate::providers::postgres::connect_postgres(url(), Some(schema.clone()), None)
        .await
        .unwrap();
    let layer = provider.backend().ridden().expect("the tail layer").0;
    let (activities, orchestrations) = registries();
    let rt = Runtime::start_with_options(
        provider.provider(),
        activities,
        orchestrations,
        one_turn_slot(),
    )
    .await;
    // The slot's empty look, then silence.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let other = PostgresProvider::new_with_schema(&url(), Some(&schema))
        .await
        .unwrap();
    let pool = other.pool().clone();
    let ids = queue_one_turn_instances(Arc::new(other), 6).await;
    let client = Client::new(provider.provider());
    for id in &ids {
        assert_eq!(output(&client, id).await, "0");
    }
    assert!(layer.next_turns.load(Ordering::Relaxed) >= 3);
    assert_eq!(
        layer.turns.untaken(),
        0,
        "a ridden turn waited out the hold"
    );
    rt.shutdown(Some(5000)).await;
    drop_schema(&pool, &schema).await;
}

/// Regression: a fan-out's turn that acked and fetched its own instance's
/// next turn in one call (more completions had arrived) read the whole
/// history every time: the acked copy was not yet put back, so the fetch
/// was not told it (Postgres fan-out 300 went from 0.3 to 1.3 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_fetches_its_own_instance_again_reads_only_the_tail() {
    let Layered {
        schema,
        pool,
        layer,
        store,
        ..
    } = Layered::new(&format!("tail_fan_{}", std::process::id())).await;
    let (activities, orchestrations) = registries();
    let options = RuntimeOptions {
        dispatcher_min_poll_interval: Duration::from_millis(5),
        orchestration_concurrency: 1,
        worker_concurrency: 8,
        ..RuntimeOptions::default()
    };
    let rt = Runtime::start_with_options(store.clone(), activities, orchestrations, options).await;
    let client = Client::new(store);
    // 200 wide: with 60, in 2 of about 240 runs no completion arrived
    // while a turn ran, so no ack fetched its own instance again and the
    // test had nothing to check (3 to 18 such acks in the others).
    client
        .start_orchestration("f1", "Fan", "200")
        .await
        .unwrap();
    assert_eq!(output(&client, "f1").await, "200");
    let next_turns = layer.next_turns.load(Ordering::Relaxed);
    assert!(next_turns >= 1, "no ack fetched its own instance again");
    // One: the first turn's copy is not held (its fetch found no instance
    // row to identify it by; that turn's ack creates the row), so the next
    // fetch reads the whole history. Every later one is a tail; with the
    // acked copy left out of the ride's fetch, five of them were not.
    let wholes = layer.wholes.load(Ordering::Relaxed);
    assert!(wholes <= 1, "whole histories read: {wholes}");
    rt.shutdown(Some(5000)).await;
    drop_schema(&pool, &schema).await;
}
