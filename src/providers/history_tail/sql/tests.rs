//! The derived functions on a real Postgres schema of their own: how the
//! tail fetch takes instance locks, and which calls commit without waiting
//! for their WAL flush.

use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::{DispatcherCapabilityFilter, OrchestrationItem, Provider};
use duroxide::Client;
use duroxide_pg::PostgresProvider;
use sqlx::PgPool;

use super::super::tests::kept;
use super::super::HistoryTail;
use super::*;
use crate::providers::derived_functions::fingerprint;
use crate::providers::layer::Stacked;
use crate::providers::scratch::database_url as url;
use crate::providers::turn_ack_sql;

#[test]
fn a_definition_without_the_anchors_is_not_derived() {
    assert!(derive("CREATE FUNCTION s.other() RETURNS void", "s", true).is_none());
}

#[test]
fn the_name_follows_the_crate_text() {
    let a = fingerprint("one definition");
    assert_eq!(a, fingerprint("one definition"));
    assert_ne!(a, fingerprint("another definition"));
}

/// A schema with the layer installed and `instances` started, in order.
struct Schema {
    name: String,
    pool: PgPool,
    layer: Arc<HistoryTail>,
    store: Arc<dyn Provider>,
}

impl Schema {
    async fn new(tag: &str, instances: &[&str]) -> Self {
        let name = format!("tail_sql_{tag}_{}", std::process::id());
        let pg = PostgresProvider::new_with_schema(&url(), Some(&name))
            .await
            .unwrap();
        let pool = pg.pool().clone();
        let pg: Arc<dyn Provider> = Arc::new(pg);
        let layer = Arc::new(
            HistoryTail::install(
                &pool,
                &name,
                kept(&pool),
                &turn_ack_sql::install(&pool, &name).await,
            )
            .await
            .unwrap()
            .unwrap(),
        );
        let store: Arc<dyn Provider> = Arc::new(Stacked::new(layer.clone(), pg.clone()));
        let client = Client::new(pg);
        for id in instances {
            client.start_orchestration(*id, "Chain", "1").await.unwrap();
            // Distinct visible_at: the crate's fetch takes the oldest first.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Self {
            name,
            pool,
            layer,
            store,
        }
    }

    /// A transaction holding the advisory lock a fetch or an ack of
    /// `instance` takes (duroxide-pg keys it by `hashtext(instance_id)`).
    async fn hold(&self, instance: &str) -> sqlx::Transaction<'static, sqlx::Postgres> {
        let mut tx = self.pool.begin().await.unwrap();
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))")
            .bind(instance)
            .execute(&mut *tx)
            .await
            .unwrap();
        tx
    }

    async fn drop(self) {
        sqlx::raw_sql(&format!("DROP SCHEMA {} CASCADE", self.name))
            .execute(&self.pool)
            .await
            .unwrap();
    }
}

fn instance(fetched: &Option<(OrchestrationItem, String, u32)>) -> Option<&str> {
    fetched.as_ref().map(|(item, _, _)| item.instance.as_str())
}

const LOCK: Duration = Duration::from_secs(30);

/// Regression: fetches running together all picked the oldest instance and
/// waited on each other's advisory lock, one commit after another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_takes_the_next_instance_while_another_holds_the_first() {
    let s = Schema::new("next", &["a", "b", "c", "d"]).await;
    let a = s.hold("a").await;
    let filter = DispatcherCapabilityFilter::default_for_current_build();
    // Both of the crate's candidate queries: with a version range, without.
    for filter in [Some(&filter), None] {
        let fetched = tokio::time::timeout(
            Duration::from_secs(5),
            s.store
                .fetch_orchestration_item(LOCK, Duration::ZERO, filter),
        )
        .await
        .expect("the fetch waited for the held instance")
        .unwrap();
        let got = instance(&fetched).map(str::to_string);
        assert!(
            matches!(got.as_deref(), Some("b") | Some("c")),
            "fetched {got:?}"
        );
    }
    a.rollback().await.unwrap();
    s.drop().await;
}

/// When every candidate is held by another transaction the fetch waits
/// for the first, as the crate's does, rather than report an empty queue
/// (the wake-up layer would then let its waiters sleep until the fallback).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_waits_for_the_only_instance_another_holds() {
    let s = Schema::new("only", &["a"]).await;
    let a = s.hold("a").await;
    let store = s.store.clone();
    let fetch = tokio::spawn(async move {
        store
            .fetch_orchestration_item(LOCK, Duration::ZERO, None)
            .await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!fetch.is_finished(), "the fetch did not wait for the lock");
    a.commit().await.unwrap();
    let fetched = fetch.await.unwrap().unwrap();
    assert_eq!(instance(&fetched), Some("a"));
    s.drop().await;
}

/// `synchronous_commit` as a call leaves it for its transaction's commit.
async fn commit_mode(pool: &PgPool, call: &str) -> String {
    let mut tx = pool.begin().await.unwrap();
    sqlx::raw_sql(call).execute(&mut *tx).await.unwrap();
    let mode: String = sqlx::query_scalar("SHOW synchronous_commit")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    mode
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_fetches_commit_asynchronously_and_the_fetch_acks_ride_does_not() {
    let s = Schema::new("commit", &["a"]).await;
    let args = "ARRAY[]::text[], ARRAY[]::bigint[], ARRAY[]::bigint[], ARRAY[]::bigint[], \
                0, 30000, NULL, NULL";
    let fetch = s.layer.async_fetch.clone().expect("installed");
    let work = s.layer.async_work_fetch.clone().expect("installed");
    let cases = [
        (format!("SELECT * FROM {fetch}({args})"), "off"),
        (
            format!("SELECT * FROM {work}(0, 30000, NULL, NULL, ARRAY[]::text[], 'any')"),
            "off",
        ),
        // What the acks that fetch call (`ride.rs`): their ack must be
        // flushed before the runtime is told it committed.
        (format!("SELECT * FROM {}({args})", s.layer.function), "on"),
    ];
    for (call, mode) in cases {
        assert_eq!(commit_mode(&s.pool, &call).await, mode, "{call}");
    }
    s.drop().await;
}

/// An activity's ack, alone (`kept_calls.rs`) or riding with a turn fetch,
/// commits asynchronously; its result is flushed by the turn's ack that
/// takes it (`ASYNC_COMMIT`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn activity_acks_commit_asynchronously() {
    use duroxide::providers::{TagFilter, WorkItem};
    let s = Schema::new("worker_commit", &["a"]).await;
    s.store
        .enqueue_for_worker(WorkItem::ActivityExecute {
            instance: "a".into(),
            execution_id: 1,
            id: 1,
            name: "Step".into(),
            input: "1".into(),
            session_id: None,
            tag: None,
        })
        .await
        .unwrap();
    let (_, token, _) = s
        .store
        .fetch_work_item(LOCK, Duration::ZERO, None, &TagFilter::DefaultOnly)
        .await
        .unwrap()
        .expect("the activity's item");
    let completion = serde_json::to_string(&WorkItem::ActivityCompleted {
        instance: "a".into(),
        execution_id: 1,
        id: 1,
        result: "2".into(),
    })
    .unwrap();
    // Each call is rolled back, so the item is there for the next.
    let ride = s.layer.worker_ride.clone().expect("installed");
    let args = "ARRAY[]::text[], ARRAY[]::bigint[], ARRAY[]::bigint[], ARRAY[]::bigint[], \
                0, 30000, NULL, NULL";
    let call = format!("SELECT * FROM {ride}('{token}', 'a', '{completion}', 0, {args})");
    assert_eq!(commit_mode(&s.pool, &call).await, "off", "{call}");

    let statement = crate::providers::kept_calls::ack_worker_statement(&s.name);
    let mut tx = s.pool.begin().await.unwrap();
    sqlx::query(&statement)
        .bind(&token)
        .bind("a")
        .bind(&completion)
        .bind(0i64)
        .execute(&mut *tx)
        .await
        .unwrap();
    let mode: String = sqlx::query_scalar("SHOW synchronous_commit")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(mode, "off", "{statement}");
    s.drop().await;
}

/// Rows of `table` that sequential scans read in the transaction so far.
async fn rows_scanned(tx: &mut sqlx::PgConnection, schema: &str, table: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT COALESCE(SUM(seq_tup_read), 0)::bigint FROM pg_stat_xact_user_tables \
         WHERE schemaname = $1 AND relname = $2",
    )
    .bind(schema)
    .bind(table)
    .fetch_one(tx)
    .await
    .unwrap()
}

/// Regression: the crate's candidate query joins every queued message to
/// `instances` and `executions`, which Postgres planned as hash joins that
/// read both tables whole on every fetch (0.7 ms a fetch after 1,000
/// instances, growing with the store). The tail fetch finds its candidate
/// by key, whatever the tables hold (20,000 instances here: enough that a
/// lookup by key is the plan for a single row).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_reads_instances_and_executions_by_key_not_whole() {
    let s = Schema::new("bykey", &[]).await;
    // Instances with a finished first turn, then queued messages for some.
    sqlx::raw_sql(&format!(
        "INSERT INTO {s}.instances (instance_id, orchestration_name, orchestration_version, \
           current_execution_id, created_at, updated_at) \
         SELECT 'i' || g, 'Chain', '1.0.0', 1, now(), now() FROM generate_series(1, 20000) g; \
         INSERT INTO {s}.executions (instance_id, execution_id, status, started_at) \
         SELECT 'i' || g, 1, 'Running', now() FROM generate_series(1, 20000) g; \
         INSERT INTO {s}.orchestrator_queue (instance_id, work_item, visible_at, created_at) \
         SELECT 'i' || g, '{{}}', now() - interval '1 s', now() FROM generate_series(1, 20) g;",
        s = s.name
    ))
    .execute(&s.pool)
    .await
    .unwrap();
    let range = super::super::version_range(Some(
        &DispatcherCapabilityFilter::default_for_current_build(),
    ))
    .unwrap();
    let mut tx = s.pool.begin().await.unwrap();
    for _ in 0..3 {
        let locked: Option<String> = sqlx::query_scalar(&format!(
            "SELECT out_lock_token FROM {}(ARRAY[]::text[], ARRAY[]::bigint[], \
             ARRAY[]::bigint[], ARRAY[]::bigint[], \
             (EXTRACT(EPOCH FROM now()) * 1000)::bigint, 30000, $1, $2)",
            s.layer.function
        ))
        .bind(range.0)
        .bind(range.1)
        .fetch_optional(&mut *tx)
        .await
        .unwrap();
        assert!(locked.is_some(), "the fetch found no queued instance");
    }
    // Three fetches of a whole-table plan read 60,000 rows of each.
    for table in ["instances", "executions"] {
        let read = rows_scanned(&mut tx, &s.name, table).await;
        assert!(read < 1000, "three fetches read {read} rows of {table}");
    }
    tx.rollback().await.unwrap();
    s.drop().await;
}

/// The version check by key keeps the crate's meaning: an instance whose
/// execution is pinned outside the range is passed over, one whose
/// execution has no pinned version or that has no row yet is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_passes_over_instances_pinned_outside_its_version_range() {
    let s = Schema::new("pinned", &["pinned", "unpinned", "new"]).await;
    sqlx::raw_sql(&format!(
        "INSERT INTO {s}.instances (instance_id, orchestration_name, orchestration_version, \
           current_execution_id, created_at, updated_at) \
         VALUES ('pinned', 'Chain', '1.0.0', 1, now(), now()), \
                ('unpinned', 'Chain', '1.0.0', 1, now(), now()); \
         INSERT INTO {s}.executions (instance_id, execution_id, status, started_at, \
           duroxide_version_major, duroxide_version_minor, duroxide_version_patch) \
         VALUES ('pinned', 1, 'Running', now(), 999, 0, 0), \
                ('unpinned', 1, 'Running', now(), NULL, NULL, NULL);",
        s = s.name
    ))
    .execute(&s.pool)
    .await
    .unwrap();
    let filter = DispatcherCapabilityFilter::default_for_current_build();
    let mut fetched = Vec::new();
    while let Some(item) = s
        .store
        .fetch_orchestration_item(LOCK, Duration::ZERO, Some(&filter))
        .await
        .unwrap()
    {
        fetched.push(item.0.instance);
    }
    assert_eq!(fetched, ["unpinned", "new"]);
    s.drop().await;
}

/// Every function the layer installs plans its statements once per
/// connection (`GENERIC_PLANS`): the queue scans' custom plans were made
/// anew on every call, 0.22 ms of planning per fetch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_installed_functions_keep_generic_plans() {
    let s = Schema::new("plans", &[]).await;
    let l = &s.layer;
    let installed = [
        Some(&l.function),
        l.worker_ride.as_ref(),
        l.turn_ride.as_ref(),
        l.async_fetch.as_ref(),
        l.async_work_fetch.as_ref(),
    ];
    for name in installed {
        let name = name.expect("installed");
        let proname = name.rsplit('.').next().unwrap();
        let config: Vec<String> = sqlx::query_scalar(
            "SELECT COALESCE(p.proconfig, ARRAY[]::text[]) FROM pg_proc p \
             JOIN pg_namespace n ON n.oid = p.pronamespace \
             WHERE n.nspname = $1 AND p.proname = $2",
        )
        .bind(&s.name)
        .bind(proname)
        .fetch_one(&s.pool)
        .await
        .unwrap();
        assert_eq!(config, ["plan_cache_mode=force_generic_plan"], "{name}");
    }
    s.drop().await;
}

/// One fetch's columns but the lock token, in a transaction rolled back.
async fn fetched_columns(pool: &PgPool, call: &str) -> Vec<Option<String>> {
    let mut tx = pool.begin().await.unwrap();
    let columns = sqlx::query_scalar(&format!(
        "SELECT ARRAY[out_instance_id, out_orchestration_name, out_orchestration_version, \
         out_execution_id::text, out_history::text, out_messages::text, \
         out_attempt_count::text, out_kv_snapshot::text] FROM {call}"
    ))
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    tx.rollback().await.unwrap();
    columns
}

/// The derived fetch returns what the crate's returns for a caller that
/// holds nothing: its statements are fewer (the locked messages read from
/// the lock's `UPDATE`, the key-values in the returning statement), not
/// different.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tail_fetch_returns_what_the_crates_fetch_returns() {
    let s = Schema::new("same", &["a"]).await;
    let n = &s.name;
    // A started execution with two events, two key-values and a second
    // message after the queued start.
    sqlx::raw_sql(&format!(
        "INSERT INTO {n}.instances (instance_id, orchestration_name, orchestration_version, \
           current_execution_id, created_at, updated_at) VALUES ('a', 'Chain', '1.0.0', 1, now(), now());
         INSERT INTO {n}.executions (instance_id, execution_id, status, started_at) \
           VALUES ('a', 1, 'Running', now());
         INSERT INTO {n}.history (instance_id, execution_id, event_id, event_type, event_data, created_at) \
           VALUES ('a', 1, 1, 'Started', '{{\"e\":1}}', now()), ('a', 1, 2, 'Scheduled', '{{\"e\":2}}', now());
         INSERT INTO {n}.kv_store (instance_id, key, value, execution_id, last_updated_at_ms) \
           VALUES ('a', 'k', 'v', 1, 5), ('a', 'j', 'w', 1, 6);
         INSERT INTO {n}.orchestrator_queue (instance_id, work_item, visible_at, created_at) \
           VALUES ('a', '{{\"ExternalRaised\":{{\"instance\":\"a\",\"name\":\"e\",\"data\":\"1\"}}}}', \
                   now() - interval '1 second', now());"
    ))
    .execute(&s.pool)
    .await
    .unwrap();
    let tail = install(&s.pool, n).await.unwrap().expect("the tail fetch");
    let now = "(EXTRACT(EPOCH FROM now()) * 1000)::BIGINT + 1000";
    let theirs = fetched_columns(
        &s.pool,
        &format!("{n}.fetch_orchestration_item({now}, 30000, NULL, NULL)"),
    )
    .await;
    let ours = fetched_columns(
        &s.pool,
        &format!("{tail}('{{}}', '{{}}', '{{}}', '{{}}', {now}, 30000, NULL, NULL)"),
    )
    .await;
    assert_eq!(theirs[0].as_deref(), Some("a"));
    assert!(
        theirs[5]
            .as_deref()
            .is_some_and(|m| m.contains("ExternalRaised")),
        "both messages: {theirs:?}"
    );
    assert!(
        theirs[7].as_deref().is_some_and(|kv| kv.contains("\"j\"")),
        "the key-values: {theirs:?}"
    );
    assert_eq!(ours, theirs);
    // And with this duroxide-pg's text, both rewrites applied.
    let def: String = sqlx::query_scalar("SELECT pg_get_functiondef($1::regproc)")
        .bind(&tail)
        .fetch_one(&s.pool)
        .await
        .unwrap();
    assert!(def.contains("RETURNING q.id, q.work_item, q.attempt_count"));
    assert!(!def.contains("INTO v_kv_snapshot"), "{def}");
    s.drop().await;
}
