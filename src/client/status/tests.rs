//! The one-query status against duroxide's own read, on instances a real
//! duroxide runtime brought to each state, on a SQLite file and on a
//! Postgres schema of their own.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::Provider;
use duroxide::runtime::registry::ActivityRegistry;
use duroxide::runtime::{OrchestrationStatus, Runtime, RuntimeOptions};
use duroxide::{ActivityContext, Client, OrchestrationContext, OrchestrationRegistry};

use super::{from_row, quick, read};
use crate::providers::fast_paths::{FastPath, FastPaths};
use crate::providers::kept::KeptConnections;
use crate::providers::scratch;
use crate::providers::Backend;

const WAIT: Duration = Duration::from_secs(30);

fn registries() -> (ActivityRegistry, OrchestrationRegistry) {
    let activities = ActivityRegistry::builder()
        .register("Greet", |_ctx: ActivityContext, name: String| async move {
            Ok(format!("Hello, {name}!"))
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
        .register(
            "Fails",
            |_ctx: OrchestrationContext, _: String| async move {
                Err::<String, String>("it went wrong".into())
            },
        )
        .register("Waits", |ctx: OrchestrationContext, _: String| async move {
            Ok(ctx.schedule_wait("go").await)
        })
        .register("Loops", |ctx: OrchestrationContext, n: String| async move {
            let n: u32 = n.parse().map_err(|e| format!("{e}"))?;
            if n == 0 {
                return Ok(ctx.schedule_wait("go").await);
            }
            ctx.continue_as_new((n - 1).to_string()).await
        })
        .build();
    (activities, orchestrations)
}

/// Counts the history reads (`Provider::read`) the client makes.
fn counted(store: Arc<dyn Provider>) -> (Client, Arc<AtomicUsize>) {
    let (store, reads) = scratch::counting_reads(store);
    (Client::new(store), reads)
}

/// Brings instances to every state, then compares the two reads of each.
async fn every_state_reads_as_duroxide_reads_it(store: Arc<dyn Provider>, backend: Backend) {
    let (activities, orchestrations) = registries();
    let rt = Runtime::start_with_options(
        store.clone(),
        activities,
        orchestrations,
        RuntimeOptions {
            dispatcher_min_poll_interval: Duration::from_millis(10),
            ..RuntimeOptions::default()
        },
    )
    .await;
    let client = Client::new(store.clone());
    client
        .start_orchestration("done", "Hello", "ann")
        .await
        .unwrap();
    client
        .start_orchestration("failed", "Fails", "")
        .await
        .unwrap();
    client
        .start_orchestration("waiting", "Waits", "")
        .await
        .unwrap();
    client
        .start_orchestration("looped", "Loops", "2")
        .await
        .unwrap();
    client.wait_for_orchestration("done", WAIT).await.unwrap();
    client.wait_for_orchestration("failed", WAIT).await.unwrap();
    // The waiting ones have run their first turns (their executions exist).
    for (id, execution) in [("waiting", 1), ("looped", 3)] {
        let deadline = std::time::Instant::now() + WAIT;
        while client.list_executions(id).await.unwrap_or_default().len() < execution {
            assert!(
                std::time::Instant::now() < deadline,
                "{id} did not reach execution {execution}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let deadline = std::time::Instant::now() + WAIT;
        while !matches!(
            client.get_orchestration_status(id).await.unwrap(),
            OrchestrationStatus::Running { .. }
        ) {
            assert!(std::time::Instant::now() < deadline, "{id} is not running");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    rt.shutdown(Some(1000)).await;

    let (reader, reads) = counted(store.clone());
    for id in ["done", "failed", "waiting", "looped", "never-started"] {
        let expected = client.get_orchestration_status(id).await.unwrap();
        let before = reads.load(Ordering::Relaxed);
        let got = read(&reader, &backend, id).await.unwrap();
        assert_eq!(got, expected, "{id}");
        let history_reads = reads.load(Ordering::Relaxed) - before;
        match id {
            // Answered by the execution row alone.
            "done" | "waiting" | "looped" => assert_eq!(history_reads, 0, "{id}"),
            // The failure's details and a missing execution are duroxide's.
            _ => assert_eq!(history_reads, 1, "{id}"),
        }
    }
    match client.get_orchestration_status("done").await.unwrap() {
        OrchestrationStatus::Completed {
            output,
            custom_status,
            custom_status_version,
        } => {
            assert_eq!(output, "Hello, ann!");
            assert_eq!(custom_status.as_deref(), Some("greeting"));
            assert!(custom_status_version > 0);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn sqlite_every_state_reads_as_duroxide_reads_it() {
    let scratch = scratch::one_start("dxstatus", "").await;
    every_state_reads_as_duroxide_reads_it(scratch.store.clone(), scratch.backend.clone()).await;
}

#[tokio::test]
async fn postgres_every_state_reads_as_duroxide_reads_it() {
    let url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/postgres".into());
    let schema = format!("dxstatus_{}", std::process::id());
    let pg = duroxide_pg::PostgresProvider::new_with_schema(&url, Some(&schema))
        .await
        .unwrap();
    let pool = pg.pool().clone();
    let kept = Arc::new(KeptConnections::new(pool.clone()));
    let backend = Backend::Postgres {
        pool: pool.clone(),
        fast_paths: FastPaths::with(&[FastPath::StatusRead]),
        set_aside: Default::default(),
        _marking: None,
        client_kept: kept.clone(),
        schema: schema.clone(),
        schemas_checked: Arc::default(),
        ridden: None,
        warmer: None,
    };
    every_state_reads_as_duroxide_reads_it(Arc::new(pg), backend).await;
    assert!(kept.served() > 0, "the status reads ran through the pool");
    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE"))
        .execute(&pool)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_query_that_fails_leaves_the_answer_to_duroxide() {
    let scratch = scratch::one_start("dxstatus", "").await;
    sqlx::query("DROP TABLE executions")
        .execute(match &scratch.backend {
            Backend::Sqlite { pool, .. } => pool,
            Backend::Postgres { .. } => unreachable!(),
        })
        .await
        .unwrap();
    assert!(matches!(quick(&scratch.backend, "i1").await, Ok(None)));
}

#[test]
fn rows_this_module_does_not_know_are_duroxides() {
    let row = |status: &str, output: Option<&str>| {
        (
            status.to_string(),
            output.map(str::to_string),
            None,
            Some(0),
        )
    };
    assert_eq!(from_row(row("Failed", Some("boom"))), None);
    assert_eq!(from_row(row("Terminated", None)), None);
    // A completed row without its output is not what an ack writes.
    assert_eq!(from_row(row("Completed", None)), None);
    assert_eq!(
        from_row(("Running".into(), None, Some("s".into()), Some(0))),
        Some(OrchestrationStatus::Running {
            custom_status: None,
            custom_status_version: 0
        }),
        "a custom status counts once its version is above 0, as duroxide reads it"
    );
}
