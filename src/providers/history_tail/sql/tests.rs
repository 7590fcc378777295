//! The derived functions on a real Postgres schema of their own: how the
//! tail fetch takes instance locks, and which calls commit without waiting
//! for their WAL flush.

use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::{DispatcherCapabilityFilter, OrchestrationItem, Provider};
use duroxide::Client;
use duroxide_pg::PostgresProvider;
use sqlx::PgPool;

use super::super::HistoryTail;
use super::*;
use crate::providers::layer::Stacked;

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

fn url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/postgres".into())
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
        let layer = Arc::new(HistoryTail::install(&pool, &name).await.unwrap().unwrap());
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
