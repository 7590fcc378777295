//! Which of our functions' transactions commit without waiting for their
//! WAL flush: none unless the provider's `relaxedDurability` passes
//! `p_relaxed = true`, and never a turn's ack.

use duroxide::providers::WorkItem;
use duroxide::Client;
use sqlx::PgConnection;

use super::fixture::{now_ms, Scratch};

/// What a fetch that holds no history passes for what it holds.
const NONE_HELD: &str = "ARRAY[]::text[], ARRAY[]::bigint[], ARRAY[]::bigint[], ARRAY[]::text[]";

/// A value of `synchronous_commit` that is neither the default `on` nor
/// the relaxed `off`: a call that leaves the caller's setting leaves this.
const CALLERS: &str = "local";

async fn commit_mode(conn: &mut PgConnection) -> String {
    sqlx::query_scalar("SELECT current_setting('synchronous_commit')")
        .fetch_one(conn)
        .await
        .unwrap()
}

/// The token of a turn the crate's fetch locks in the transaction.
async fn crate_turn(s: &Scratch, conn: &mut PgConnection) -> String {
    sqlx::query_scalar(&format!(
        "SELECT out_lock_token FROM {}($1, 30000, NULL, NULL)",
        s.crate_function("fetch_orchestration_item")
    ))
    .bind(now_ms())
    .fetch_one(conn)
    .await
    .unwrap()
}

/// The token of the activity the crate's fetch locks in the transaction.
async fn crate_work(s: &Scratch, conn: &mut PgConnection) -> String {
    sqlx::query_scalar(&format!(
        "SELECT out_lock_token FROM {}($1, 30000)",
        s.crate_function("fetch_work_item")
    ))
    .bind(now_ms())
    .fetch_one(conn)
    .await
    .unwrap()
}

const METADATA: &str = r#"{"orchestration_name": "Chain", "orchestration_version": "1.0.0"}"#;

/// Runs our function of `file` in a transaction whose caller set
/// `synchronous_commit` to [`CALLERS`], with whatever it needs locked
/// first, and returns the setting its commit would use (the transaction
/// is rolled back: every case starts from the same store). `relaxed` is
/// passed to the functions that take it.
async fn mode_after(s: &Scratch, file: &str, relaxed: bool) -> String {
    let mut tx = s.pool.begin().await.unwrap();
    sqlx::query(&format!("SET LOCAL synchronous_commit TO {CALLERS}"))
        .execute(&mut *tx)
        .await
        .unwrap();
    let f = s.function(file);
    let now = now_ms();
    // Each call returns the row it fetched: the whole function ran.
    let fetched: Option<String> = match file {
        "fetch_turn.sql" => sqlx::query_scalar(&format!(
            "SELECT out_lock_token FROM {f}($1, {NONE_HELD}, $2, 30000, NULL, NULL)"
        ))
        .bind(relaxed)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await
        .unwrap(),
        "fetch_work.sql" => sqlx::query_scalar(&format!(
            "SELECT out_lock_token FROM {f}($1, $2, 30000, NULL, NULL, NULL, 'default_only')"
        ))
        .bind(relaxed)
        .bind(now)
        .fetch_optional(&mut *tx)
        .await
        .unwrap(),
        "ack_worker_fetch_turn.sql" => {
            let token = crate_work(s, &mut tx).await;
            let completion = serde_json::to_string(&WorkItem::ActivityCompleted {
                instance: "i".into(),
                execution_id: 1,
                id: 1,
                result: "2".into(),
            })
            .unwrap();
            sqlx::query_scalar(&format!(
                "SELECT out_lock_token FROM {f}($1, 'i', $2, $3, $4, {NONE_HELD}, $3, 30000, \
                 NULL, NULL)"
            ))
            .bind(token)
            .bind(completion)
            .bind(now)
            .bind(relaxed)
            .fetch_optional(&mut *tx)
            .await
            .unwrap()
        }
        "ack_turn.sql" => {
            let token = crate_turn(s, &mut tx).await;
            sqlx::query(&format!(
                "SELECT {f}($1, $2, 1, '[]', '[]', '[]', '{METADATA}', '[]')"
            ))
            .bind(&token)
            .bind(now)
            .execute(&mut *tx)
            .await
            .unwrap();
            Some(token)
        }
        "ack_turn_fetch_turn.sql" => {
            let token = crate_turn(s, &mut tx).await;
            sqlx::query_scalar(&format!(
                "SELECT out_lock_token FROM {f}($1, $2, 1, '[]', '[]', '[]', '{METADATA}', '[]', \
                 {NONE_HELD}, 30000, NULL, NULL)"
            ))
            .bind(token)
            .bind(now)
            .fetch_optional(&mut *tx)
            .await
            .unwrap()
        }
        "ack_turn_fetch_work.sql" => {
            let token = crate_turn(s, &mut tx).await;
            sqlx::query_scalar(&format!(
                "SELECT out_lock_token FROM {f}($1, $2, 1, '[]', '[]', '[]', '{METADATA}', '[]', \
                 30000, NULL, 'default_only')"
            ))
            .bind(token)
            .bind(now)
            .fetch_optional(&mut *tx)
            .await
            .unwrap()
        }
        other => panic!("no case for {other}"),
    };
    assert!(fetched.is_some(), "{file} fetched nothing");
    let mode = commit_mode(&mut tx).await;
    tx.rollback().await.unwrap();
    mode
}

/// Two instances queued and an activity: every function finds something.
async fn queued(tag: &str) -> Scratch {
    let s = Scratch::new(tag).await;
    let client = Client::new(s.pg.clone());
    for id in ["i", "j"] {
        client.start_orchestration(id, "Chain", "1").await.unwrap();
    }
    s.pg.enqueue_for_worker(WorkItem::ActivityExecute {
        instance: "i".into(),
        execution_id: 1,
        id: 1,
        name: "Step".into(),
        input: "1".into(),
        session_id: None,
        tag: None,
    })
    .await
    .unwrap();
    s
}

/// Durable by default: with `p_relaxed = false` (and in the functions
/// that take no such argument) the commit waits as the server and the
/// caller say.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_function_commits_as_the_caller_says_unless_relaxed() {
    let s = queued("durable").await;
    for file in &super::super::FILES {
        assert_eq!(
            mode_after(&s, file.file, false).await,
            CALLERS,
            "{}",
            file.file
        );
    }
    s.drop().await;
}

/// With `p_relaxed = true` the fetches and the activity ack's ride commit
/// asynchronously (what they lose in a server crash is a lock or an
/// activity's result, and the activity runs again); a turn's ack, alone or
/// with a ride, never does: a client may read what it wrote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relaxed_fetches_commit_asynchronously_and_turn_acks_never_do() {
    let s = queued("relaxed").await;
    for file in &super::super::FILES {
        let expected = match file.file {
            "fetch_turn.sql" | "fetch_work.sql" | "ack_worker_fetch_turn.sql" => "off",
            _ => CALLERS,
        };
        assert_eq!(
            mode_after(&s, file.file, true).await,
            expected,
            "{}",
            file.file
        );
    }
    s.drop().await;
}
