//! The layer on a real Postgres schema of its own: its calls write what the
//! crate's write, and fail as the crate's fail.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::{ExecutionMetadata, Provider, WorkItem};
use duroxide::runtime::registry::ActivityRegistry;
use duroxide::runtime::{Runtime, RuntimeOptions};
use duroxide::{
    ActivityContext, Client, OrchestrationContext, OrchestrationRegistry, OrchestrationStatus,
};
use duroxide_pg::PostgresProvider;

use super::{KeptCalls, KeptConnections};
use crate::provider_errors::ProviderFault;
use crate::providers::layer::Stacked;
use crate::providers::scratch::database_url as url;

/// The crate's store and the layer over it, on a schema of their own.
struct Schema {
    name: String,
    pool: sqlx::PgPool,
    pg: Arc<dyn Provider>,
    layer: Arc<KeptCalls>,
    store: Arc<dyn Provider>,
}

impl Schema {
    async fn new(tag: &str) -> Self {
        let name = format!("kept_calls_{tag}_{}", std::process::id());
        let pg = PostgresProvider::new_with_schema(&url(), Some(&name))
            .await
            .unwrap();
        let pool = pg.pool().clone();
        let pg: Arc<dyn Provider> = Arc::new(pg);
        let ack = crate::providers::turn_ack_sql::install(&pool, &name).await;
        let layer = Arc::new(KeptCalls::new(
            &KeptConnections::lanes(pool.clone()),
            &name,
            &ack,
        ));
        let store: Arc<dyn Provider> = Arc::new(Stacked::new(layer.clone(), pg.clone()));
        Self {
            name,
            pool,
            pg,
            layer,
            store,
        }
    }

    fn crate_calls(&self) -> u64 {
        self.layer.crate_calls.load(Ordering::Relaxed)
    }

    async fn drop(self) {
        sqlx::raw_sql(&format!("DROP SCHEMA {} CASCADE", self.name))
            .execute(&self.pool)
            .await
            .unwrap();
    }
}

fn now_ms() -> u64 {
    crate::providers::pg_packing::now_ms() as u64
}

/// Orchestrator-queue items of every kind the clients and runtimes send,
/// for instance `id`; the timer fires at `fire_at_ms`.
fn items(id: &str, fire_at_ms: u64) -> Vec<(WorkItem, Option<Duration>)> {
    vec![
        (
            WorkItem::StartOrchestration {
                instance: id.into(),
                orchestration: "O".into(),
                input: "\"in\"".into(),
                version: Some("1.0.0".into()),
                parent_instance: None,
                parent_id: None,
                parent_execution_id: None,
                execution_id: 1,
            },
            None,
        ),
        (
            WorkItem::ExternalRaised {
                instance: id.into(),
                name: "go".into(),
                data: "{\"by\":\"ann\"}".into(),
            },
            Some(Duration::from_secs(30)),
        ),
        (
            WorkItem::TimerFired {
                instance: id.into(),
                execution_id: 1,
                id: 3,
                fire_at_ms,
            },
            None,
        ),
        (
            WorkItem::SubOrchCompleted {
                parent_instance: id.into(),
                parent_execution_id: 1,
                parent_id: 4,
                result: "\"r\"".into(),
            },
            None,
        ),
    ]
}

/// The queue rows of `instance`: work item, visible_at in ms, oldest first.
async fn queued(s: &Schema, instance: &str) -> Vec<(String, i64)> {
    sqlx::query_as(&format!(
        "SELECT work_item, (EXTRACT(EPOCH FROM visible_at) * 1000)::bigint \
         FROM {}.orchestrator_queue WHERE instance_id = $1 ORDER BY id",
        s.name
    ))
    .bind(instance)
    .fetch_all(&s.pool)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueues_write_the_rows_the_crates_enqueues_write() {
    let s = Schema::new("enqueue").await;
    let fire_at = now_ms() + 60_000;
    for (item, delay) in items("theirs", fire_at) {
        s.pg.enqueue_for_orchestrator(item, delay).await.unwrap();
    }
    for (item, delay) in items("ours", fire_at) {
        s.store.enqueue_for_orchestrator(item, delay).await.unwrap();
    }
    assert_eq!(s.crate_calls(), 0, "an enqueue ran the crate's call");
    let theirs = queued(&s, "theirs").await;
    let ours = queued(&s, "ours").await;
    assert_eq!(ours.len(), theirs.len());
    for ((ours, ours_at), (theirs, theirs_at)) in ours.iter().zip(&theirs) {
        assert_eq!(ours.replace("ours", "theirs"), *theirs);
        if ours.contains("TimerFired") {
            assert_eq!((*ours_at, *theirs_at), (fire_at as i64, fire_at as i64));
        }
        // Both read the clock when called: a moment apart.
        assert!(
            (ours_at - theirs_at).abs() < 2_000,
            "{ours}: visible at {ours_at}, the crate's at {theirs_at}"
        );
    }
    s.drop().await;
}

/// A turn that schedules an activity and sets a custom status, then one
/// that completes; a second instance fails.
fn registries() -> (ActivityRegistry, OrchestrationRegistry) {
    let activities = ActivityRegistry::builder()
        .register("Greet", |_ctx: ActivityContext, name: String| async move {
            Ok(format!("Hello, {name}!"))
        })
        .register("Fail", |_ctx: ActivityContext, _: String| async move {
            Err::<String, String>("no".into())
        })
        .build();
    let orchestrations = OrchestrationRegistry::builder()
        .register(
            "Hello",
            |ctx: OrchestrationContext, name: String| async move {
                ctx.set_custom_status("greeting");
                ctx.schedule_activity("Greet", name).await
            },
        )
        .register("Fails", |ctx: OrchestrationContext, _: String| async move {
            ctx.schedule_activity("Fail", "").await
        })
        .build();
    (activities, orchestrations)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_acks_its_turns_and_activities_through_the_layer() {
    let s = Schema::new("runtime").await;
    let (activities, orchestrations) = registries();
    let options = RuntimeOptions {
        dispatcher_min_poll_interval: Duration::from_millis(5),
        ..RuntimeOptions::default()
    };
    let rt =
        Runtime::start_with_options(s.store.clone(), activities, orchestrations, options).await;
    let client = Client::new(s.store.clone());
    client
        .start_orchestration("h", "Hello", "ann")
        .await
        .unwrap();
    client.start_orchestration("f", "Fails", "").await.unwrap();
    let wait = Duration::from_secs(30);
    match client.wait_for_orchestration("h", wait).await.unwrap() {
        OrchestrationStatus::Completed {
            output,
            custom_status,
            ..
        } => {
            assert_eq!(output, "Hello, ann!");
            assert_eq!(custom_status.as_deref(), Some("greeting"));
        }
        other => panic!("h ended as {other:?}"),
    }
    let failed = client.wait_for_orchestration("f", wait).await.unwrap();
    assert!(
        matches!(failed, OrchestrationStatus::Failed { .. }),
        "f ended as {failed:?}"
    );
    rt.shutdown(Some(5000)).await;
    assert_eq!(s.crate_calls(), 0, "an ack or enqueue ran the crate's call");
    s.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_of_locks_that_are_gone_fail_in_the_crates_words() {
    let s = Schema::new("gone").await;
    let metadata = ExecutionMetadata::default();
    let turn = s
        .store
        .ack_orchestration_item("lock_none", 1, vec![], vec![], vec![], metadata, vec![])
        .await
        .unwrap_err();
    assert!(!turn.is_retryable());
    assert!(
        ProviderFault::is(&turn, ProviderFault::InvalidLock),
        "{turn}"
    );
    let completion = WorkItem::ActivityCompleted {
        instance: "i".into(),
        execution_id: 1,
        id: 2,
        result: "\"r\"".into(),
    };
    let work = s
        .store
        .ack_work_item("lock_none", Some(completion))
        .await
        .unwrap_err();
    assert!(!work.is_retryable());
    assert!(ProviderFault::is(&work, ProviderFault::LostLock), "{work}");
    assert_eq!(s.crate_calls(), 0);
    s.drop().await;
}
