//! `ack_turn.sql` against the crate's `ack_orchestration_item`, on real
//! schemas: the same rows, the same errors, fewer writes.

use serde_json::{json, Value};

use super::fixture::Scratch;

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

/// An activity of `instance`'s first execution, with its session and tag.
fn activity_of(instance: &str, id: i64, session: Option<&str>, tag: Option<&str>) -> Value {
    json!({ "ActivityExecute": { "instance": instance, "execution_id": 1, "id": id, "name": "A",
                                 "input": "1", "session_id": session, "tag": tag } })
}

/// The turns of a few instances, each first turn to last: a start that
/// schedules an activity and a completion that sets key-values; a failure
/// with none; a continue-as-new and the next execution's start (the
/// instance row exists) and completion, which clears all key-values; a
/// sub-orchestration whose later turn names another parent (the first
/// stays) and whose completion clears a key it never set; a start that
/// schedules two activities, one with a session and a tag.
fn turns() -> Vec<Turn> {
    let activity = activity_of("a", 2, None, None);
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

/// Runs `turn` with `ack` on `conn`, as a fetch would have left it locked.
async fn ack_turn(
    conn: &mut sqlx::PgConnection,
    s: &Scratch,
    ack: &str,
    turn: &Turn,
    token: &str,
) -> Result<(), sqlx::Error> {
    let q = &s.schema.quoted;
    sqlx::query(&format!(
        "INSERT INTO {q}.instance_locks (instance_id, lock_token, locked_until, locked_at) \
         VALUES ($1, $2, $3, $4)"
    ))
    .bind(turn.instance)
    .bind(token)
    .bind(NOW_MS + 60_000)
    .bind(NOW_MS)
    .execute(&mut *conn)
    .await?;
    sqlx::query(&format!(
        "INSERT INTO {q}.orchestrator_queue (instance_id, work_item, visible_at, lock_token, \
         locked_until, created_at) VALUES ($1, 'm', now(), $2, $3, now())"
    ))
    .bind(turn.instance)
    .bind(token)
    .bind(NOW_MS + 60_000)
    .execute(&mut *conn)
    .await?;
    sqlx::query(&format!("SELECT {ack}($1, $2, $3, $4, $5, $6, $7, $8)"))
        .bind(token)
        .bind(NOW_MS)
        .bind(turn.execution)
        .bind(&turn.history)
        .bind(&turn.worker)
        .bind(&turn.orchestrator)
        .bind(&turn.metadata)
        .bind(json!([]))
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The worker queue's items in the order of their ids.
async fn queued(s: &Scratch) -> Option<String> {
    sqlx::query_scalar(&format!(
        "SELECT string_agg(work_item, ' | ' ORDER BY id) FROM {}.worker_queue",
        s.schema.quoted
    ))
    .fetch_one(&s.pool)
    .await
    .unwrap()
}

/// Every row of the schema's tables but the queues' sequence numbers.
async fn rows(s: &Scratch) -> Vec<String> {
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
            s.schema.quoted
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
    let theirs = Scratch::new("ack_theirs").await;
    let ours = Scratch::new("ack_ours").await;
    for (i, turn) in turns().iter().enumerate() {
        let token = format!("t{i}");
        for (s, ack) in [
            (&theirs, theirs.crate_function("ack_orchestration_item")),
            (&ours, ours.function("ack_turn.sql")),
        ] {
            let mut conn = s.pool.acquire().await.unwrap();
            ack_turn(&mut conn, s, &ack, turn, &token).await.unwrap();
        }
    }
    let (a, b) = (rows(&theirs).await, rows(&ours).await);
    // A turn's worker items are queued in the order it scheduled them.
    let order = queued(&theirs).await;
    assert!(order.is_some(), "the turns queue activities");
    assert_eq!(queued(&ours).await, order);
    for table in [
        "instances ",
        "executions ",
        "history ",
        "kv_store ",
        "worker_queue ",
    ] {
        assert!(
            a.iter().any(|r| r.starts_with(table)),
            "the turns leave rows in {table}: {a:#?}"
        );
    }
    assert_eq!(a, b);
    theirs.drop().await;
    ours.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lock_fails_the_derived_ack_as_the_crates() {
    let s = Scratch::new("ack_lost").await;
    for ack in [
        s.crate_function("ack_orchestration_item"),
        s.function("ack_turn.sql"),
    ] {
        let err = sqlx::query(&format!(
            "SELECT {ack}('gone', $1, 1, '[]', '[]', '[]', '{{}}', '[]')"
        ))
        .bind(NOW_MS)
        .execute(&s.pool)
        .await
        .unwrap_err();
        let message = match &err {
            sqlx::Error::Database(db) => db.message().to_string(),
            other => panic!("{ack}: {other}"),
        };
        assert_eq!(message, "Invalid lock token", "{ack}");
    }
    s.drop().await;
}

/// Rows inserted plus rows updated in `instances` and in `executions` by
/// the backend, as far as it has not yet reported them.
async fn counts(tx: &mut sqlx::PgConnection, schema: &str) -> (i64, i64) {
    let written = |table: &'static str| {
        sqlx::query_scalar::<_, i64>(
            "SELECT n_tup_ins + n_tup_upd FROM pg_stat_xact_user_tables \
             WHERE schemaname = $1 AND relname = $2",
        )
        .bind(schema)
        .bind(table)
    };
    let instances = written("instances").fetch_one(&mut *tx).await.unwrap();
    (
        instances,
        written("executions").fetch_one(&mut *tx).await.unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_derived_ack_writes_the_instance_and_execution_rows_once() {
    let s = Scratch::new("ack_once").await;
    let turns = turns();
    // A first turn (a new instance that pins a version and sets a custom
    // status) and its completion: the crate's inserts the instance and
    // updates it three times, ours inserts it and sets its custom status.
    for (ack, instance_rows, execution_rows) in [
        (s.crate_function("ack_orchestration_item"), [4, 1], [2, 1]),
        (s.function("ack_turn.sql"), [2, 1], [2, 1]),
    ] {
        sqlx::query(&format!(
            "TRUNCATE {0}.instances, {0}.executions, {0}.history, {0}.worker_queue, \
             {0}.kv_store, {0}.kv_delta",
            s.schema.quoted
        ))
        .execute(&s.pool)
        .await
        .unwrap();
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
