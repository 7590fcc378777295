//! The derived turn ack against the crate's on real Postgres schemas.

use super::*;

#[test]
fn a_definition_without_the_crate_blocks_is_not_derived() {
    assert!(derive(
        "CREATE FUNCTION s.ack_orchestration_item() RETURNS void",
        "s"
    )
    .is_none());
}

#[test]
fn blocks_match_whole_words_across_any_white_space() {
    let text = "x ELSIF a  b\n  c; IF a b\tc;";
    assert_eq!(find_folded(text, "IF a b c;"), vec![(18, 27)]);
    assert!(find_folded("IF a bc;", "IF a b").is_empty());
}

fn url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/postgres".into())
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
    history: serde_json::Value,
    worker: serde_json::Value,
    orchestrator: serde_json::Value,
    metadata: serde_json::Value,
}

fn event(id: i64, kind: &str) -> serde_json::Value {
    serde_json::json!({ "event_id": id, "event_type": kind, "event_data": format!("{{\"{kind}\":{id}}}") })
}

fn activity(instance: &str, execution: i64, id: i64) -> serde_json::Value {
    serde_json::json!({ "ActivityExecute": { "instance": instance, "execution_id": execution, "id": id, "name": "A", "input": "1", "session_id": null, "tag": null } })
}

/// The turns of a few instances, each first turn to last: a start that
/// pins a version, sets a custom status and schedules work; a completion
/// with key-values; a failure; a continue-as-new and the next execution's
/// start (the instance row exists); a sub-orchestration whose later turn
/// names another parent (the first stays); key-values cleared on a second
/// terminal execution.
fn turns() -> Vec<Turn> {
    use serde_json::json;
    let started = |parent: Option<&str>| {
        json!({ "orchestration_name": "O", "orchestration_version": "1.0.0", "status": null, "output": null,
                "parent_instance_id": parent, "pinned_duroxide_version": { "major": 0, "minor": 1, "patch": 32 },
                "custom_status_action": "set", "custom_status_value": "busy", "kv_mutations": [] })
    };
    let ended = |status: &str, output: &str, kv: serde_json::Value| {
        json!({ "orchestration_name": null, "orchestration_version": null, "status": status, "output": output,
                "parent_instance_id": null, "pinned_duroxide_version": null,
                "custom_status_action": null, "custom_status_value": null, "kv_mutations": kv })
    };
    let none = || json!([]);
    vec![
        Turn {
            instance: "a",
            execution: 1,
            history: json!([event(1, "Started"), event(2, "Scheduled")]),
            worker: json!([activity("a", 1, 2)]),
            orchestrator: none(),
            metadata: started(None),
        },
        Turn {
            instance: "a",
            execution: 1,
            history: json!([event(3, "Completed"), event(4, "Done")]),
            worker: none(),
            orchestrator: none(),
            metadata: ended(
                "Completed",
                "\"out\"",
                json!([{ "action": "set", "key": "k", "value": "v" }, { "action": "set", "key": "j", "value": "w", "last_updated_at_ms": 5 }]),
            ),
        },
        Turn {
            instance: "b",
            execution: 1,
            history: json!([event(1, "Started")]),
            worker: none(),
            orchestrator: none(),
            metadata: started(None),
        },
        Turn {
            instance: "b",
            execution: 1,
            history: json!([event(2, "Failed")]),
            worker: none(),
            orchestrator: none(),
            metadata: ended("Failed", "boom", none()),
        },
        Turn {
            instance: "c",
            execution: 1,
            history: json!([event(1, "Started")]),
            worker: none(),
            orchestrator: none(),
            metadata: started(None),
        },
        Turn {
            instance: "c",
            execution: 1,
            history: json!([event(2, "ContinuedAsNew")]),
            worker: none(),
            orchestrator: json!([{ "ContinueAsNew": { "instance": "c", "orchestration": "O", "input": "2", "version": "1.0.0" } }]),
            metadata: ended(
                "ContinuedAsNew",
                "2",
                json!([{ "action": "set", "key": "k", "value": "1" }]),
            ),
        },
        Turn {
            instance: "c",
            execution: 2,
            history: json!([event(1, "Started")]),
            worker: none(),
            orchestrator: none(),
            metadata: started(None),
        },
        Turn {
            instance: "c",
            execution: 2,
            history: json!([event(2, "Completed")]),
            worker: none(),
            orchestrator: none(),
            metadata: ended(
                "Completed",
                "3",
                json!([{ "action": "clear_all" }, { "action": "set", "key": "n", "value": "2" }]),
            ),
        },
        Turn {
            instance: "d",
            execution: 1,
            history: json!([event(1, "Started")]),
            worker: none(),
            orchestrator: none(),
            metadata: started(Some("p")),
        },
        Turn {
            instance: "d",
            execution: 1,
            history: json!([event(2, "Started")]),
            worker: none(),
            orchestrator: none(),
            metadata: started(Some("q")),
        },
        Turn {
            instance: "d",
            execution: 1,
            history: json!([event(3, "Completed")]),
            worker: none(),
            orchestrator: json!([{ "SubOrchCompleted": { "parent_instance": "p", "parent_execution_id": 1, "parent_id": 1, "result": "r" } }]),
            metadata: ended(
                "Completed",
                "r",
                json!([{ "action": "clear_key", "key": "x" }]),
            ),
        },
    ]
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
        .bind(serde_json::json!([]))
        .execute(&mut *tx)
        .await?;
    Ok(())
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
