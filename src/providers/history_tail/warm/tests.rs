//! On a real Postgres schema of their own, with a real item of the store's
//! queued while the warm-ups run.

use duroxide::providers::{Provider, WorkItem};
use duroxide_pg::PostgresProvider;
use sqlx::PgPool;

use super::super::tests::kept;
use super::super::{ack_turn_function, HistoryTail, Statements};
use crate::providers::pg_functions::install::installed;
use crate::providers::scratch::database_url as url;

/// Every row of the schema's tables, as text, in a stable order.
async fn rows(pool: &PgPool, schema: &str) -> Vec<String> {
    let mut all = Vec::new();
    for table in [
        "instances",
        "executions",
        "history",
        "orchestrator_queue",
        "worker_queue",
        "instance_locks",
        "kv_store",
    ] {
        let rows: Vec<(String,)> = sqlx::query_as(&format!(
            "SELECT t::text FROM {schema}.{table} t ORDER BY t::text"
        ))
        .fetch_all(pool)
        .await
        .unwrap();
        all.extend(rows.into_iter().map(|(r,)| format!("{table}: {r}")));
    }
    all
}

/// Each warm-up runs both its synthetic hellos (a step that did not come
/// out as planned fails it), on connections of its own, and the store is
/// left as it was: the queued start of someone else's instance is neither
/// taken nor changed, and nothing of the warm-ups' remains.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_ups_run_a_whole_hello_and_leave_the_store_as_it_was() {
    let schema = format!("tail_warm_{}", std::process::id());
    let pg = PostgresProvider::new_with_schema(&url(), Some(&schema))
        .await
        .unwrap();
    let pool = pg.pool().clone();
    pg.enqueue_for_orchestrator(
        WorkItem::StartOrchestration {
            instance: "theirs".into(),
            orchestration: "O".into(),
            input: "\"x\"".into(),
            version: None,
            parent_instance: None,
            parent_id: None,
            parent_execution_id: None,
            execution_id: 1,
        },
        None,
    )
    .await
    .unwrap();
    let before = rows(&pool, &schema).await;
    assert_eq!(before.len(), 1, "{before:?}");

    let installed = installed(&pool, &schema).await;
    let ack = ack_turn_function(&installed.quoted);
    let layer = HistoryTail::new(kept(&pool), Statements::new(&installed.quoted), false);
    let max = pool.options().get_max_connections();
    assert_eq!(
        layer
            .warm(&pool, &installed.quoted, &ack, super::WARMED)
            .await,
        (max - 1).min(super::WARMED) as usize
    );
    assert_eq!(rows(&pool, &schema).await, before);

    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE"))
        .execute(&pool)
        .await
        .unwrap();
}

/// A provider's connect warms its connections: its pool has opened one
/// for each warm-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_warms_the_pools_connections() {
    let schema = format!("tail_warm_connect_{}", std::process::id());
    let pg = PostgresProvider::new_with_schema(&url(), Some(&schema))
        .await
        .unwrap();
    let pool = pg.pool().clone();
    let installed = installed(&pool, &schema).await;
    let (_store, _for_runtimes) = super::super::over(
        std::sync::Arc::new(pg) as std::sync::Arc<dyn Provider>,
        &pool,
        &installed,
        kept(&pool),
        false,
        (
            crate::providers::contain::Store::Postgres {
                pool: pool.clone(),
                schema_q: installed.quoted.clone(),
            },
            Default::default(),
        ),
    )
    .await;
    assert!(
        pool.size() >= super::WARMED,
        "the pool has {} connections",
        pool.size()
    );
    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE"))
        .execute(&pool)
        .await
        .unwrap();
}

/// A runtime's start warms a connection for each of its slots and one for
/// its client, holding at most all but one of the pool's; the connect
/// warmed four. Without it, the pool opened the rest under the runtime's
/// first load.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_start_warms_a_connection_per_slot() {
    use crate::providers::postgres::{connect_postgres, PostgresConnectOptions};
    let schema = format!("tail_warm_runtime_{}", std::process::id());
    let options = PostgresConnectOptions {
        max_connections: Some(12),
        ..Default::default()
    };
    let provider = connect_postgres(url(), Some(schema.clone()), Some(options))
        .await
        .unwrap();
    let backend = provider.backend();
    let (pool, _) = backend.postgres().unwrap();
    let warmer = backend.warmer().expect("the tail fetch layer installed");
    let connected = pool.size();
    assert!(
        (super::WARMED..8).contains(&connected),
        "the connect left {connected} connections open"
    );

    warmer.for_runtime(2).await;
    assert_eq!(
        pool.size(),
        connected,
        "a connect's warm-up covers two slots"
    );
    warmer.for_runtime(4 + 8).await;
    // Eleven warm-ups hold a connection each, never all twelve. The pool
    // opens the twelfth too when a connection the connect gave back is
    // still on its way into the pool (sqlx pings it first) as they ask
    // for theirs: half of the runs on a loaded machine.
    assert!(
        (11..=12).contains(&pool.size()),
        "a runtime of 12 slots left {} of the pool's 12 open",
        pool.size()
    );

    sqlx::query(&format!("DROP SCHEMA {schema} CASCADE"))
        .execute(&pool)
        .await
        .unwrap();
}
