//! On a real Postgres schema of their own, with duroxide's runtime running
//! turns through the layer.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::Provider;
use duroxide::runtime::registry::ActivityRegistry;
use duroxide::runtime::{Runtime, RuntimeOptions};
use duroxide::{
    ActivityContext, Client, OrchestrationContext, OrchestrationRegistry, OrchestrationStatus,
};
use duroxide_pg::PostgresProvider;

use super::HistoryTail;
use crate::providers::layer::Stacked;

const WAIT: Duration = Duration::from_secs(60);

fn url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/postgres".into())
}

/// Steps `n` times, then (input "n,wait") waits for event `go`.
fn registries() -> (ActivityRegistry, OrchestrationRegistry) {
    let activities = ActivityRegistry::builder()
        .register("Step", |_ctx: ActivityContext, i: String| async move {
            Ok((i.parse::<u64>().map_err(|e| e.to_string())? + 1).to_string())
        })
        .build();
    let orchestrations = OrchestrationRegistry::builder()
        .register(
            "Chain",
            |ctx: OrchestrationContext, input: String| async move {
                let (n, wait) = input.split_once(',').unwrap_or((&input, ""));
                let mut v = "0".to_string();
                for _ in 0..n.parse::<u64>().map_err(|e| e.to_string())? {
                    v = ctx.schedule_activity("Step", v).await?;
                }
                if wait == "wait" {
                    ctx.schedule_wait("go").await;
                }
                Ok(v)
            },
        )
        .build();
    (activities, orchestrations)
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
        let schema = format!("tail_{tag}_{}", std::process::id());
        let pg = PostgresProvider::new_with_schema(&url(), Some(&schema))
            .await
            .unwrap();
        let pool = pg.pool().clone();
        let layer = Arc::new(
            HistoryTail::install(&pool, &schema)
                .await
                .unwrap()
                .expect("the tail fetch derives from this duroxide-pg's fetch"),
        );
        let store: Arc<dyn Provider> = Arc::new(Stacked::new(layer.clone(), Arc::new(pg)));
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

    async fn stop(self) {
        self.rt.shutdown(Some(5000)).await;
        sqlx::raw_sql(&format!("DROP SCHEMA {} CASCADE", self.schema))
            .execute(&self.pool)
            .await
            .unwrap();
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
