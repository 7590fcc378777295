//! `fetch_turn.sql` on a real schema: how it takes instance locks, how it
//! reads, and that it answers as the crate's fetch for a caller that holds
//! nothing.

use std::time::Duration;

use duroxide::providers::{DispatcherCapabilityFilter, OrchestrationItem};
use duroxide::Client;
use serde_json::Value;
use sqlx::PgPool;

use super::fixture::{fresh_connection, now_ms, own, rows_read, Scratch};

const LOCK: Duration = Duration::from_secs(30);
/// Only for a fetch that would otherwise wait forever on a lock the test
/// holds; never reached when the fetch behaves.
const HANG: Duration = Duration::from_secs(30);

async fn start(s: &Scratch, ids: &[String]) {
    let client = Client::new(s.pg.clone());
    for id in ids {
        // Queued in this order: the fetch takes the oldest (visible_at, id).
        client.start_orchestration(id, "Chain", "1").await.unwrap();
    }
}

/// A transaction holding the advisory lock a fetch or an ack of
/// `instance` takes (duroxide-pg keys it by `hashtext(instance_id)`).
async fn hold(pool: &PgPool, instance: &str) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let mut tx = pool.begin().await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))")
        .bind(instance)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx
}

fn instance(fetched: &Option<(OrchestrationItem, String, u32)>) -> Option<&str> {
    fetched.as_ref().map(|(item, _, _)| item.instance.as_str())
}

/// Regression: fetches running together all picked the oldest instance and
/// waited on each other's advisory lock, one commit after another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_takes_the_next_instance_while_another_holds_the_first() {
    let s = Scratch::new("next").await;
    let ids: Vec<String> = ["a", "b", "c", "d"].iter().map(|i| own(i)).collect();
    start(&s, &ids).await;
    let (_, store) = s.layered();
    let a = hold(&s.pool, &ids[0]).await;
    let filter = DispatcherCapabilityFilter::default_for_current_build();
    let mut fetched = Vec::new();
    // Both candidate queries: with a version range, without.
    for filter in [Some(&filter), None] {
        let got = tokio::time::timeout(
            HANG,
            store.fetch_orchestration_item(LOCK, Duration::ZERO, filter),
        )
        .await
        .expect("the fetch waited for the held instance")
        .unwrap();
        fetched.push(instance(&got).map(str::to_string));
    }
    // The first passes over the held instance; the second also over the
    // one the first locked.
    assert_eq!(fetched, [Some(ids[1].clone()), Some(ids[2].clone())]);
    a.rollback().await.unwrap();
    s.drop().await;
}

/// Backends waiting for the advisory lock of `instance`.
async fn waiting_for(pool: &PgPool, instance: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
           AND objsubid = 1 \
           AND classid::bigint = ((hashtext($1)::bigint >> 32) & 4294967295) \
           AND objid::bigint = (hashtext($1)::bigint & 4294967295)",
    )
    .bind(instance)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// When every candidate is held by another transaction the fetch waits
/// for the first, as the crate's does, rather than report an empty queue
/// (the wake-up layer would then let its waiters sleep until the fallback).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_waits_for_the_only_instance_another_holds() {
    let s = Scratch::new("only").await;
    let id = own("only");
    start(&s, std::slice::from_ref(&id)).await;
    let (_, store) = s.layered();
    let a = hold(&s.pool, &id).await;
    let fetch = tokio::spawn(async move {
        store
            .fetch_orchestration_item(LOCK, Duration::ZERO, None)
            .await
    });
    // Until the fetch waits on the lock, or returns without waiting.
    let mut waited = false;
    for _ in 0..3000 {
        waited = waiting_for(&s.pool, &id).await > 0;
        if waited || fetch.is_finished() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        !fetch.is_finished(),
        "the fetch returned instead of waiting"
    );
    assert!(waited, "no backend waited for the instance's lock");
    a.commit().await.unwrap();
    let fetched = tokio::time::timeout(HANG, fetch)
        .await
        .expect("the fetch went on waiting")
        .unwrap()
        .unwrap();
    assert_eq!(instance(&fetched), Some(id.as_str()));
    s.drop().await;
}

/// The crate's packing of the current build's first version range.
fn version_range() -> (i64, i64) {
    let filter = DispatcherCapabilityFilter::default_for_current_build();
    let range = filter.supported_duroxide_versions.first().expect("a range");
    let pack = |v: &semver::Version| (v.major * 1_000_000 + v.minor * 1_000 + v.patch) as i64;
    (pack(&range.min), pack(&range.max))
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
/// read both tables whole on every fetch. Ours finds its candidate by key,
/// whatever the tables hold (20,000 instances: enough that a lookup by key
/// is the plan for a single row).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_reads_instances_and_executions_by_key_not_whole() {
    let s = Scratch::new("bykey").await;
    sqlx::raw_sql(&format!(
        "INSERT INTO {s}.instances (instance_id, orchestration_name, orchestration_version, \
           current_execution_id, created_at, updated_at) \
         SELECT 'i' || g, 'Chain', '1.0.0', 1, now(), now() FROM generate_series(1, 20000) g; \
         INSERT INTO {s}.executions (instance_id, execution_id, status, started_at) \
         SELECT 'i' || g, 1, 'Running', now() FROM generate_series(1, 20000) g; \
         INSERT INTO {s}.orchestrator_queue (instance_id, work_item, visible_at, created_at) \
         SELECT 'i' || g, '{{}}', now() - interval '1 s', now() FROM generate_series(1, 20) g; \
         ANALYZE {s}.instances; ANALYZE {s}.executions; ANALYZE {s}.orchestrator_queue;",
        s = s.schema.quoted
    ))
    .execute(&s.pool)
    .await
    .unwrap();
    let (min, max) = version_range();
    let mut tx = s.pool.begin().await.unwrap();
    for _ in 0..3 {
        let locked: Option<String> = sqlx::query_scalar(&format!(
            "SELECT out_lock_token FROM {}(false, ARRAY[]::text[], ARRAY[]::bigint[], \
             ARRAY[]::bigint[], ARRAY[]::text[], $1, 30000, $2, $3)",
            s.function("fetch_turn.sql")
        ))
        .bind(now_ms())
        .bind(min)
        .bind(max)
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
    let s = Scratch::new("pinned").await;
    let ids: Vec<String> = ["pinned", "unpinned", "new"]
        .iter()
        .map(|i| own(i))
        .collect();
    start(&s, &ids).await;
    sqlx::query(&format!(
        "INSERT INTO {s}.instances (instance_id, orchestration_name, orchestration_version, \
           current_execution_id, created_at, updated_at) \
         VALUES ($1, 'Chain', '1.0.0', 1, now(), now()), ($2, 'Chain', '1.0.0', 1, now(), now())",
        s = s.schema.quoted
    ))
    .bind(&ids[0])
    .bind(&ids[1])
    .execute(&s.pool)
    .await
    .unwrap();
    sqlx::query(&format!(
        "INSERT INTO {s}.executions (instance_id, execution_id, status, started_at, \
           duroxide_version_major, duroxide_version_minor, duroxide_version_patch) \
         VALUES ($1, 1, 'Running', now(), 999, 0, 0), ($2, 1, 'Running', now(), NULL, NULL, NULL)",
        s = s.schema.quoted
    ))
    .bind(&ids[0])
    .bind(&ids[1])
    .execute(&s.pool)
    .await
    .unwrap();
    let (_, store) = s.layered();
    let filter = DispatcherCapabilityFilter::default_for_current_build();
    let mut fetched = Vec::new();
    while let Some(item) = store
        .fetch_orchestration_item(LOCK, Duration::ZERO, Some(&filter))
        .await
        .unwrap()
    {
        fetched.push(item.0.instance);
    }
    assert_eq!(fetched, ids[1..]);
    s.drop().await;
}

/// Every installed function that scans the queues plans its statements
/// once per connection: the queue scans' custom plans were made anew on
/// every call, 0.22 ms of planning per fetch. (The turn ack is the
/// crate's, which reads by key.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_installed_functions_keep_generic_plans() {
    let s = Scratch::new("plans").await;
    for file in &super::super::FILES {
        let config: Vec<String> = sqlx::query_scalar(
            "SELECT COALESCE(p.proconfig, ARRAY[]::text[]) FROM pg_proc p \
             JOIN pg_namespace n ON n.oid = p.pronamespace \
             WHERE n.nspname = $1 AND p.proname = $2",
        )
        .bind(&s.name)
        .bind(file.name)
        .fetch_one(&s.pool)
        .await
        .unwrap();
        let expected: &[&str] = match file.file {
            "ack_turn.sql" => &[],
            _ => &["plan_cache_mode=force_generic_plan"],
        };
        assert_eq!(config, expected, "{}", file.file);
    }
    s.drop().await;
}

/// One fetch's columns but the lock token, history and messages parsed,
/// in a transaction rolled back.
#[derive(Debug, PartialEq)]
struct Columns {
    instance: Option<String>,
    name: Option<String>,
    version: Option<String>,
    execution: Option<i64>,
    history: Value,
    messages: Value,
    attempts: Option<i32>,
    kv: Option<Value>,
}

type Raw = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<i32>,
    Option<Value>,
);

async fn fetched_columns(pool: &PgPool, call: &str) -> Columns {
    let mut tx = pool.begin().await.unwrap();
    let raw: Raw = sqlx::query_as(&format!(
        "SELECT out_instance_id, out_orchestration_name, out_orchestration_version, \
         out_execution_id, out_history::text, out_messages::text, out_attempt_count, \
         out_kv_snapshot FROM {call}"
    ))
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    tx.rollback().await.unwrap();
    let parse = |text: Option<String>| -> Value {
        serde_json::from_str(text.as_deref().expect("a JSON column")).expect("JSON")
    };
    Columns {
        instance: raw.0,
        name: raw.1,
        version: raw.2,
        execution: raw.3,
        history: parse(raw.4),
        messages: parse(raw.5),
        attempts: raw.6,
        kv: raw.7,
    }
}

/// What the crate's fetch and ours (holding nothing) return at `now`, each
/// rolled back.
async fn fetched_by_both(s: &Scratch, now: &str) -> (Columns, Columns) {
    let theirs = fetched_columns(
        &s.pool,
        &format!(
            "{}.fetch_orchestration_item({now}, 30000, NULL, NULL)",
            s.schema.quoted
        ),
    )
    .await;
    let ours = fetched_columns(
        &s.pool,
        &format!(
            "{}(false, '{{}}', '{{}}', '{{}}', '{{}}', {now}, 30000, NULL, NULL)",
            s.function("fetch_turn.sql")
        ),
    )
    .await;
    (theirs, ours)
}

/// Our fetch returns what the crate's returns for a caller that holds
/// nothing: its statements are fewer (the locked messages read from the
/// lock's `UPDATE`, the key-values in the returning statement), not
/// different. History and messages come back as JSON text, not jsonb; with
/// no instance row the names come back NULL (the caller reads them from
/// the first event or message, as the crate's SQL does).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tail_fetch_returns_what_the_crates_fetch_returns() {
    let s = Scratch::new("same").await;
    let n = &s.schema.quoted;
    // 'a': a started execution with two events, two key-values and a
    // message. 'b': no instance row, two events and a start message.
    sqlx::raw_sql(&format!(
        "INSERT INTO {n}.instances (instance_id, orchestration_name, orchestration_version, \
           current_execution_id, created_at, updated_at) VALUES ('a', 'Chain', '1.0.0', 1, now(), now());
         INSERT INTO {n}.executions (instance_id, execution_id, status, started_at) \
           VALUES ('a', 1, 'Running', now());
         INSERT INTO {n}.history (instance_id, execution_id, event_id, event_type, event_data, created_at) \
           VALUES ('a', 1, 1, 'Started', '{{\"e\": 1, \"s\": \"x\"}}', now()), ('a', 1, 2, 'Scheduled', '{{\"e\":2}}', now()), \
                  ('b', 1, 1, 'Started', '{{\"e\":1}}', now()), ('b', 1, 2, 'Scheduled', '{{\"e\":2}}', now());
         INSERT INTO {n}.kv_store (instance_id, key, value, execution_id, last_updated_at_ms) \
           VALUES ('a', 'k', 'v', 1, 5), ('a', 'j', 'w', 1, 6);
         INSERT INTO {n}.orchestrator_queue (instance_id, work_item, visible_at, created_at) \
           VALUES ('a', '{{\"ExternalRaised\":{{\"instance\":\"a\",\"name\":\"e\",\"data\":\"1\"}}}}', \
                   now() - interval '2 second', now()), \
                  ('b', '{{\"StartOrchestration\":{{\"instance\":\"b\",\"orchestration\":\"Chain\",\"input\":\"1\",\"version\":\"2.0.0\",\"parent_instance\":null,\"parent_id\":null,\"execution_id\":1}}}}', \
                   now() - interval '1 second', now());"
    ))
    .execute(&s.pool)
    .await
    .unwrap();
    let now = "(EXTRACT(EPOCH FROM now()) * 1000)::BIGINT + 1000";
    let (theirs_a, ours_a) = fetched_by_both(&s, now).await;
    assert_eq!(theirs_a.instance.as_deref(), Some("a"));
    assert_eq!(theirs_a.history.as_array().map(Vec::len), Some(2));
    assert!(
        theirs_a.messages.to_string().contains("ExternalRaised"),
        "the message: {theirs_a:?}"
    );
    assert!(
        theirs_a.kv.as_ref().is_some_and(|kv| kv.get("j").is_some()),
        "the key-values: {theirs_a:?}"
    );
    assert_eq!(ours_a, theirs_a);

    // 'b' next: 'a' locked by a committed fetch of the crate's.
    let token: String = sqlx::query_scalar(&format!(
        "SELECT out_lock_token FROM {n}.fetch_orchestration_item({now}, 30000, NULL, NULL)"
    ))
    .fetch_one(&s.pool)
    .await
    .unwrap();
    assert!(!token.is_empty());
    let (theirs_b, ours_b) = fetched_by_both(&s, now).await;
    assert_eq!(theirs_b.instance.as_deref(), Some("b"));
    assert_eq!(theirs_b.name.as_deref(), Some("Chain"), "{theirs_b:?}");
    assert_eq!(
        (&ours_b.name, &ours_b.version, ours_b.execution),
        (&None, &None, None),
        "no instance row: no names"
    );
    let named = Columns {
        name: theirs_b.name.clone(),
        version: theirs_b.version.clone(),
        execution: theirs_b.execution,
        ..ours_b
    };
    assert_eq!(named, theirs_b);
    s.drop().await;
}

/// The turn fetch reads only the front of a long orchestrator queue, with
/// its statements planned on an empty or a short one (the worker fetch's v2
/// kept a plan that read the whole queue: `fetch_work.rs`), and when every
/// message shares one visible_at, as the starts of sub-orchestrations that
/// one turn's ack queued do (v1 read all of them at every fetch).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_fetch_reads_only_the_front_of_a_long_queue() {
    let s = Scratch::new("turnplan").await;
    let q = format!("{}.orchestrator_queue", s.schema.quoted);
    let call = format!(
        "SELECT out_instance_id FROM {}(false, '{{}}', '{{}}', '{{}}', '{{}}', \
         (EXTRACT(EPOCH FROM now()) * 1000)::BIGINT, 30000, NULL, NULL)",
        s.function("fetch_turn.sql")
    );
    // Messages of instances p<from>.., one each, `apart` ms from each other.
    let enqueue = |from: i64, n: i64, apart: i64| {
        format!(
            "INSERT INTO {q} (instance_id, work_item, visible_at, created_at)
             SELECT 'p' || i, '{{}}', now() - INTERVAL '1 hour' + i * {apart} * INTERVAL '1 ms', now()
             FROM generate_series({from}, {from} + {n} - 1) i ORDER BY i"
        )
    };
    for apart in [1, 0] {
        for short in [0, 300] {
            sqlx::query(&format!("TRUNCATE {q}"))
                .execute(&s.pool)
                .await
                .unwrap();
            sqlx::query(&enqueue(0, short, apart))
                .execute(&s.pool)
                .await
                .unwrap();
            let mut conn = fresh_connection().await;
            rows_read(&mut conn, &call, &q).await;
            sqlx::query(&enqueue(short, 5_000, apart))
                .execute(&s.pool)
                .await
                .unwrap();
            let (taken, read) = rows_read(&mut conn, &call, &q).await;
            assert_eq!(
                taken.as_deref(),
                Some("p0"),
                "the oldest message's instance"
            );
            assert!(
                read <= 200,
                "messages {apart} ms apart, planned on a queue of {short}: a fetch from {} \
                 read {read} of its rows",
                short + 5_000
            );
        }
    }
    s.drop().await;
}
