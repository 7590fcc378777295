//! `ack_turn.sql` takes the turn's rows in the crate's order: its
//! orchestrator_queue rows, then its instance_locks row. The crate's
//! `abandon_orchestration_item` takes no advisory lock and writes the same
//! rows in that order; an ack that deleted the lock first (a data-modifying
//! CTE, run after the statement that holds it) could deadlock with it.

use std::time::{Duration, Instant};

use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, Postgres};

use super::super::FILES;
use super::fixture::{now_ms, own, Scratch};

const ITERATIONS: usize = 200;
/// Messages the fetched turn holds: the longer the abandon's update of
/// them, the likelier the ack meets it half-way.
const MESSAGES: i32 = 50;
const NONE_HELD: &str = "ARRAY[]::text[], ARRAY[]::bigint[], ARRAY[]::bigint[], ARRAY[]::text[]";
const METADATA: &str = r#"{"orchestration_name": "Chain", "orchestration_version": "1.0.0"}"#;

/// What the races of a run came to.
#[derive(Debug, Default)]
struct Outcome {
    races: usize,
    /// SQLSTATE 40P01 in either call.
    deadlocks: usize,
    /// Races the ack won (its messages consumed).
    acked: usize,
    /// Races the abandon won (the ack found its lock gone).
    abandoned: usize,
}

/// The SQLSTATE of `result`'s error, or `Ok` when it succeeded; any error
/// but a deadlock and the lost lock both calls may see fails the test.
fn code<T>(what: &str, result: &Result<T, sqlx::Error>) -> Result<(), String> {
    match result {
        Ok(_) => Ok(()),
        Err(sqlx::Error::Database(db)) => {
            let code = db.code().map(|c| c.to_string()).unwrap_or_default();
            assert!(
                code == "40P01" || db.message() == "Invalid lock token",
                "{what}: {code} {}",
                db.message()
            );
            Err(code)
        }
        Err(e) => panic!("{what}: {e}"),
    }
}

/// Busy-waits `micros`: the sleeps of the runtime are milliseconds long,
/// the race's window is tens of microseconds.
fn spin(micros: u64) {
    let until = Instant::now() + Duration::from_micros(micros);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

async fn connection(s: &Scratch) -> PoolConnection<Postgres> {
    let mut conn = s.pool.acquire().await.unwrap();
    // Found sooner: each deadlock otherwise waits out the server's 1 s.
    // Needs a superuser; without one the races only take longer.
    let _ = sqlx::query("SET deadlock_timeout = '50ms'")
        .execute(&mut *conn)
        .await;
    conn
}

/// `iterations` races of `ack` (a function with our turn ack's signature)
/// against the crate's abandon of the same lock token, each on a turn our
/// fetch locked; with `until_deadlock`, stops at the first deadlock.
async fn race(s: &Scratch, ack: &str, iterations: usize, until_deadlock: bool) -> Outcome {
    let q = s.schema.quoted.clone();
    let abandon = s.crate_function("abandon_orchestration_item");
    let fetch = s.function("fetch_turn.sql");
    let mut acking = connection(s).await;
    let mut abandoning = connection(s).await;
    let mut outcome = Outcome::default();
    for i in 0..iterations {
        let instance = own(&format!("race{i}"));
        sqlx::query(&format!(
            "INSERT INTO {q}.orchestrator_queue (instance_id, work_item, visible_at, created_at) \
             SELECT $1, '{{\"ExternalRaised\":{{\"instance\":\"' || $1 || '\",\"name\":\"e\",\"data\":\"' || g || '\"}}}}', \
                    now() - interval '1 second', now() \
             FROM generate_series(1, $2) g"
        ))
        .bind(&instance)
        .bind(MESSAGES)
        .execute(&s.pool)
        .await
        .unwrap();
        let (fetched, token): (String, String) = sqlx::query_as(&format!(
            "SELECT out_instance_id, out_lock_token FROM {fetch}(false, {NONE_HELD}, $1, 30000, \
             NULL, NULL)"
        ))
        .bind(now_ms())
        .fetch_one(&s.pool)
        .await
        .unwrap();
        assert_eq!(fetched, instance);
        let now = now_ms();
        // The abandon starts from a little before to a little after the
        // ack's final deletes, across the iterations.
        let delay = (i as u64 * 97) % 1500;
        let ack_sql = format!("SELECT {ack}($1, $2, 1, '[]', '[]', '[]', '{METADATA}', '[]')");
        let ack_token = token.clone();
        let acked = tokio::spawn(async move {
            let done = sqlx::query(&ack_sql)
                .bind(ack_token)
                .bind(now)
                .execute(&mut *acking)
                .await
                .map(|_| ());
            (acking, done)
        });
        let abandon_sql = format!("SELECT {abandon}($1, $2, NULL, false)");
        let abandoned = tokio::spawn(async move {
            spin(delay);
            let done = sqlx::query(&abandon_sql)
                .bind(token)
                .bind(now)
                .execute(&mut *abandoning)
                .await
                .map(|_| ());
            (abandoning, done)
        });
        let (a, b) = (acked.await.unwrap(), abandoned.await.unwrap());
        acking = a.0;
        abandoning = b.0;
        let (ack, abandon) = (code("ack", &a.1), code("abandon", &b.1));
        outcome.races += 1;
        let deadlocked = [&ack, &abandon]
            .iter()
            .any(|r| r.as_ref().is_err_and(|c| c == "40P01"));
        if deadlocked {
            outcome.deadlocks += 1;
            if until_deadlock {
                break;
            }
        } else {
            assert!(
                ack.is_ok() || abandon.is_ok(),
                "neither call released the lock"
            );
            check_released(s, &mut acking, &instance, ack.is_ok()).await;
            if ack.is_ok() {
                outcome.acked += 1;
            } else {
                outcome.abandoned += 1;
            }
        }
        sqlx::raw_sql(&format!(
            "DELETE FROM {q}.orchestrator_queue; DELETE FROM {q}.instance_locks;"
        ))
        .execute(&s.pool)
        .await
        .unwrap();
    }
    outcome
}

/// After a race without deadlock: the lock is gone, and the turn's
/// messages with it if the ack won, or back in the queue, unlocked.
async fn check_released(s: &Scratch, conn: &mut PgConnection, instance: &str, acked: bool) {
    let q = &s.schema.quoted;
    let (locks, queued, locked): (i64, i64, i64) = sqlx::query_as(&format!(
        "SELECT (SELECT count(*) FROM {q}.instance_locks WHERE instance_id = $1), \
                (SELECT count(*) FROM {q}.orchestrator_queue WHERE instance_id = $1), \
                (SELECT count(*) FROM {q}.orchestrator_queue WHERE instance_id = $1 \
                   AND lock_token IS NOT NULL)"
    ))
    .bind(instance)
    .fetch_one(conn)
    .await
    .unwrap();
    let expected = if acked { 0 } else { i64::from(MESSAGES) };
    assert_eq!((locks, queued, locked), (0, expected, 0), "acked: {acked}");
}

/// Our ack with its final deletes in the order the derived ack had before:
/// `WITH acked AS (DELETE FROM orchestrator_queue ...) DELETE FROM
/// instance_locks ...`, installed as `duroxide_node_ack_turn_cte_test`.
async fn install_cte_form(s: &Scratch) -> String {
    let file = FILES
        .iter()
        .find(|f| f.file == "ack_turn.sql")
        .expect("ack_turn.sql");
    let crate_order = "DELETE FROM {schema}.orchestrator_queue q WHERE q.lock_token = p_lock_token;\n            DELETE FROM {schema}.instance_locks il";
    let cte = "WITH acked AS (DELETE FROM {schema}.orchestrator_queue q WHERE q.lock_token = p_lock_token)\n            DELETE FROM {schema}.instance_locks il";
    assert_eq!(
        file.text.matches(crate_order).count(),
        1,
        "ack_turn.sql's final deletes"
    );
    let text = file
        .text
        .replace(crate_order, cte)
        .replace(file.name, "duroxide_node_ack_turn_cte_test");
    sqlx::raw_sql(&text.replace("{schema}", &s.schema.quoted))
        .execute(&s.pool)
        .await
        .unwrap();
    s.crate_function("duroxide_node_ack_turn_cte_test")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandon_racing_a_turn_ack_of_the_same_lock_does_not_deadlock() {
    let s = Scratch::new("race").await;
    let ours = race(&s, &s.function("ack_turn.sql"), ITERATIONS, false).await;
    assert_eq!(ours.deadlocks, 0, "{ours:?}");
    assert_eq!(ours.races, ITERATIONS);
    // Each call won some races: the two met across the range of delays.
    assert!(ours.acked > 0 && ours.abandoned > 0, "{ours:?}");
    s.drop().await;
}

/// The race above finds the deadlock of the other order (the check that
/// it can fail): 9 and 17 of 200 races deadlocked in two runs, so it stops
/// at the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lock_first_order_deadlocks_with_an_abandon() {
    let s = Scratch::new("race_cte").await;
    let cte = install_cte_form(&s).await;
    let theirs = race(&s, &cte, 5 * ITERATIONS, true).await;
    assert_eq!(theirs.deadlocks, 1, "{theirs:?}");
    s.drop().await;
}
