//! The derived turn ack against the crate's on real Postgres schemas.

use serde_json::{json, Value};

use super::*;
use crate::providers::scratch::database_url as url;

#[test]
fn a_definition_without_the_crate_blocks_is_not_derived() {
    assert!(derive(
        "CREATE FUNCTION s.ack_orchestration_item() RETURNS void",
        "s"
    )
    .is_none());
}

/// A schema of its own, migrated by duroxide-pg, with our ack installed;
/// `ack` is the function a test calls (ours, or the crate's to compare).
struct Schema {
    name: String,
    pool: PgPool,
    ours: String,
}

impl Schema {
    async fn new(tag: &str) -> Self {
        let name = format!("turn_ack_{tag}_{}", std::process::id());
        let pg = duroxide_pg::PostgresProvider::new_with_schema(&url(), Some(&name))
            .await
            .unwrap();
        let pool = pg.pool().clone();
        let ours = install(&pool, &name).await;
        Self { name, pool, ours }
    }

    async fn drop(self) {
        sqlx::query(&format!("DROP SCHEMA {} CASCADE", self.name))
            .execute(&self.pool)
            .await
            .unwrap();
    }
}

const NOW_MS: i64 = 1_700_000_000_000;

/// One turn's ack of `instance`, after the lock and the locked message a
/// fetch would have left.
struct Turn {
    instance: &'static str,
    execution: i64,
    history: Value,
    worker: Value,
    orchestrator: Value,
    metadata: Value,
}

/// A turn of `instance` that appends `events` (id, type) and writes
/// `metadata`, scheduling nothing.
fn turn(instance: &'static str, execution: i64, events: &[(i64, &str)], metadata: Value) -> Turn {
    let history = events.iter().map(|(id, kind)| {
        json!({ "event_id": id, "event_type": kind, "event_data": format!("{{\"{kind}\":{id}}}") })
    });
    Turn {
        instance,
        execution,
        history: Value::Array(history.collect()),
        worker: json!([]),
        orchestrator: json!([]),
        metadata,
    }
}

impl Turn {
    /// Schedules `item` after the worker items already scheduled.
    fn worker(mut self, item: Value) -> Self {
        self.worker.as_array_mut().expect("an array").push(item);
        self
    }

    fn orchestrator(self, item: Value) -> Self {
        Self {
            orchestrator: json!([item]),
            ..self
        }
    }
}

/// A first turn's metadata: it pins a version and sets a custom status.
fn started(parent: Option<&str>) -> Value {
    json!({ "orchestration_name": "O", "orchestration_version": "1.0.0", "status": null, "output": null,
            "parent_instance_id": parent, "pinned_duroxide_version": { "major": 0, "minor": 1, "patch": 32 },
            "custom_status_action": "set", "custom_status_value": "busy", "kv_mutations": [] })
}

/// A terminal turn's metadata, with its key-value changes.
fn ended(status: &str, output: &str, kv: Value) -> Value {
    json!({ "orchestration_name": null, "orchestration_version": null, "status": status, "output": output,
            "parent_instance_id": null, "pinned_duroxide_version": null,
            "custom_status_action": null, "custom_status_value": null, "kv_mutations": kv })
}

/// The turns of a few instances, each first turn to last: a start that
/// schedules an activity and a completion that sets key-values; a failure
/// with none; a continue-as-new and the next execution's start (the
/// instance row exists) and completion, which clears all key-values; a
/// sub-orchestration whose later turn names another parent (the first
/// stays) and whose completion clears a key it never set.
fn turns() -> Vec<Turn> {
    let activity = json!({ "ActivityExecute": { "instance": "a", "execution_id": 1, "id": 2, "name": "A",
                                                "input": "1", "session_id": null, "tag": null } });
    let kv_a = json!([{ "action": "set", "key": "k", "value": "v" },
                      { "action": "set", "key": "j", "value": "w", "last_updated_at_ms": 5 }]);
    let next = json!({ "ContinueAsNew": { "instance": "c", "orchestration": "O", "input": "2", "version": "1.0.0" } });
    let kv_c1 = json!([{ "action": "set", "key": "k", "value": "1" }]);
    let kv_c2 = json!([{ "action": "clear_all" }, { "action": "set", "key": "n", "value": "2" }]);
    let to_parent = json!({ "SubOrchCompleted": { "parent_instance": "p", "parent_execution_id": 1,
                                                   "parent_id": 1, "result": "r" } });
    let kv_d = json!([{ "action": "clear_key", "key": "x" }]);
    vec![
        turn("a", 1, &[(1, "Started"), (2, "Scheduled")], started(None)).worker(activity),
        turn(
            "a",
            1,
            &[(3, "Completed")],
            ended("Completed", "\"out\"", kv_a),
        ),
        turn("b", 1, &[(1, "Started")], started(None)),
        turn("b", 1, &[(2, "Failed")], ended("Failed", "boom", json!([]))),
        turn("c", 1, &[(1, "Started")], started(None)),
        turn(
            "c",
            1,
            &[(2, "ContinuedAsNew")],
            ended("ContinuedAsNew", "2", kv_c1),
        )
        .orchestrator(next),
        turn("c", 2, &[(1, "Started")], started(None)),
        turn("c", 2, &[(2, "Completed")], ended("Completed", "3", kv_c2)),
        turn("d", 1, &[(1, "Started")], started(Some("p"))),
        turn("d", 1, &[(2, "Started")], started(Some("q"))),
        turn("d", 1, &[(3, "Completed")], ended("Completed", "r", kv_d)).orchestrator(to_parent),
        turn(
            "e",
            1,
            &[(1, "Started"), (2, "Scheduled"), (3, "Scheduled")],
            started(None),
        )
        .worker(activity_of("e", 2, None, None))
        .worker(activity_of("e", 3, Some("s1"), Some("gpu"))),
    ]
}

/// An activity of `instance`'s first execution, with its session and tag.
fn activity_of(instance: &str, id: i64, session: Option<&str>, tag: Option<&str>) -> Value {
    json!({ "ActivityExecute": { "instance": instance, "execution_id": 1, "id": id, "name": "A",
                                 "input": "1", "session_id": session, "tag": tag } })
}

/// Runs `turn` with `ack` in `tx`, as a fetch would have left it locked.
async fn ack_turn(
    tx: &mut sqlx::PgConnection,
    s: &Schema,
    ack: &str,
    turn: &Turn,
    token: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(&format!("INSERT INTO {}.instance_locks (instance_id, lock_token, locked_until, locked_at) VALUES ($1, $2, $3, $4)", s.name))
        .bind(turn.instance).bind(token).bind(NOW_MS + 60_000).bind(NOW_MS)
        .execute(&mut *tx).await?;
    sqlx::query(&format!("INSERT INTO {}.orchestrator_queue (instance_id, work_item, visible_at, lock_token, locked_until, created_at) VALUES ($1, 'm', now(), $2, $3, now())", s.name))
        .bind(turn.instance).bind(token).bind(NOW_MS + 60_000)
        .execute(&mut *tx).await?;
    sqlx::query(&format!("SELECT {ack}($1, $2, $3, $4, $5, $6, $7, $8)"))
        .bind(token)
        .bind(NOW_MS)
        .bind(turn.execution)
        .bind(&turn.history)
        .bind(&turn.worker)
        .bind(&turn.orchestrator)
        .bind(&turn.metadata)
        .bind(json!([]))
        .execute(&mut *tx)
        .await?;
    Ok(())
}

/// The worker queue's items in the order of their ids.
async fn queued(s: &Schema) -> String {
    sqlx::query_scalar(&format!(
        "SELECT string_agg(work_item, ' | ' ORDER BY id) FROM {}.worker_queue",
        s.name
    ))
    .fetch_one(&s.pool)
    .await
    .unwrap()
}

/// Every row of the schema's tables but the queues' sequence numbers.
async fn rows(s: &Schema) -> Vec<String> {
    let tables = [
        "instances",
        "executions",
        "history",
        "instance_locks",
        "orchestrator_queue",
        "worker_queue",
        "kv_store",
        "kv_delta",
    ];
    let mut all = Vec::new();
    for table in tables {
        let mut rows: Vec<String> = sqlx::query_scalar(&format!(
            "SELECT '{table} ' || (to_jsonb(t) - 'id')::text FROM {}.{table} t",
            s.name
        ))
        .fetch_all(&s.pool)
        .await
        .unwrap();
        rows.sort();
        all.extend(rows);
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_derived_ack_writes_the_rows_the_crates_writes() {
    let theirs = Schema::new("theirs").await;
    let ours = Schema::new("ours").await;
    assert!(
        ours.ours.contains("duroxide_node_ack_turn_"),
        "this duroxide-pg's ack derives: {}",
        ours.ours
    );
    for (i, turn) in turns().iter().enumerate() {
        let token = format!("t{i}");
        for (s, ack) in [
            (&theirs, crate_ack(&theirs.name)),
            (&ours, ours.ours.clone()),
        ] {
            let mut conn = s.pool.acquire().await.unwrap();
            ack_turn(&mut conn, s, &ack, turn, &token).await.unwrap();
        }
    }
    let (a, b) = (rows(&theirs).await, rows(&ours).await);
    // A turn's worker items are queued in the order it scheduled them.
    assert_eq!(queued(&theirs).await, queued(&ours).await);
    assert!(
        a.iter().any(|r| r.starts_with("kv_store ")),
        "the turns leave key-values: {a:#?}"
    );
    assert_eq!(a, b);
    theirs.drop().await;
    ours.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lock_fails_the_derived_ack_as_the_crates() {
    let s = Schema::new("lost").await;
    for ack in [crate_ack(&s.name), s.ours.clone()] {
        let err = sqlx::query(&format!(
            "SELECT {ack}('gone', $1, 1, '[]', '[]', '[]', '{{}}', '[]')"
        ))
        .bind(NOW_MS)
        .execute(&s.pool)
        .await
        .unwrap_err();
        assert!(
            err.to_string().contains("Invalid lock token"),
            "{ack}: {err}"
        );
    }
    s.drop().await;
}

/// Rows inserted plus rows updated in `instances` and in `executions` by
/// the backend, as far as it has not yet reported them.
async fn counts(tx: &mut sqlx::PgConnection, schema: &str) -> (i64, i64) {
    let written = |table: &'static str| {
        sqlx::query_scalar::<_, i64>("SELECT n_tup_ins + n_tup_upd FROM pg_stat_xact_user_tables WHERE schemaname = $1 AND relname = $2")
            .bind(schema).bind(table)
    };
    let instances = written("instances").fetch_one(&mut *tx).await.unwrap();
    (
        instances,
        written("executions").fetch_one(&mut *tx).await.unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_derived_ack_writes_the_instance_and_execution_rows_once() {
    let s = Schema::new("once").await;
    let turns = turns();
    // A first turn (a new instance that pins a version and sets a custom
    // status) and its completion: the crate's inserts the instance and
    // updates it three times, ours inserts it and sets its custom status.
    for (ack, instance_rows, execution_rows) in [
        (crate_ack(&s.name), [4, 1], [2, 1]),
        (s.ours.clone(), [2, 1], [2, 1]),
    ] {
        sqlx::query(&format!("TRUNCATE {0}.instances, {0}.executions, {0}.history, {0}.worker_queue, {0}.kv_store, {0}.kv_delta", s.name))
            .execute(&s.pool).await.unwrap();
        for (i, turn) in turns[..2].iter().enumerate() {
            let mut tx = s.pool.begin().await.unwrap();
            // The backend's counts may still hold earlier transactions'.
            let before = counts(&mut tx, &s.name).await;
            ack_turn(&mut tx, &s, &ack, turn, &format!("once{i}"))
                .await
                .unwrap();
            let after = counts(&mut tx, &s.name).await;
            let written = (after.0 - before.0, after.1 - before.1);
            assert_eq!(
                written,
                (instance_rows[i], execution_rows[i]),
                "{ack}, turn {i}"
            );
            tx.commit().await.unwrap();
        }
    }
    s.drop().await;
}
