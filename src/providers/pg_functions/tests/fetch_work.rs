//! `fetch_work.sql` takes the item the crate's `fetch_work_item` takes, in
//! every state of the worker queue: rows visible or not, locked or not (live
//! or expired locks), tagged or not, for every tag mode, with and without an
//! owner, and with fewer and more rows at the front that may not be taken
//! than the front read looks at.

use super::fixture::{fresh_connection, now_ms, rows_read, Scratch};

/// A small deterministic generator for the queue states.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// The work item a fetch by `function` takes, rolled back.
async fn taken(
    s: &Scratch,
    call: &str,
    now: i64,
    owner: Option<&str>,
    tags: Option<Vec<String>>,
    mode: &str,
) -> Option<String> {
    let mut tx = s.pool.begin().await.unwrap();
    let row: Option<(Option<String>,)> = sqlx::query_as(call)
        .bind(now)
        .bind(owner)
        .bind(tags)
        .bind(mode)
        .fetch_optional(&mut *tx)
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    row.and_then(|r| r.0)
}

#[tokio::test]
async fn the_worker_fetch_takes_the_item_the_crates_takes() {
    let s = Scratch::new("fetchwork").await;
    let q = format!("{}.worker_queue", s.schema.quoted);
    let ours = format!(
        "SELECT out_work_item FROM {}(false, $1, 30000, $2, NULL, $3, $4)",
        s.function("fetch_work.sql")
    );
    let crates = format!(
        "SELECT out_work_item FROM {}($1, 30000, $2, NULL, $3, $4)",
        s.crate_function("fetch_work_item")
    );
    let now = now_ms();
    let mut rng = Lcg(11);
    for round in 0..24 {
        sqlx::query(&format!("DELETE FROM {q}"))
            .execute(&s.pool)
            .await
            .unwrap();
        let hidden_front = if round % 3 == 0 {
            64 + rng.below(20)
        } else {
            0
        };
        let rows = hidden_front + rng.below(150);
        for i in 0..rows {
            let hidden = i < hidden_front;
            let visible = !hidden && rng.below(4) != 0;
            let (token, until) = match rng.below(4) {
                0 => (Some("held"), Some(now + 10_000)),
                1 => (Some("expired"), Some(now - 10_000)),
                _ => (None, None),
            };
            let tag = match rng.below(4) {
                0 => Some("a"),
                1 => Some("b"),
                _ => None,
            };
            sqlx::query(&format!(
                "INSERT INTO {q} (work_item, visible_at, lock_token, locked_until, tag, created_at)
                 VALUES ($1, TO_TIMESTAMP($2 / 1000.0), $3, $4, $5, now())"
            ))
            .bind(format!("w{i}"))
            .bind(if visible { now - 10_000 } else { now + 10_000 })
            .bind(token)
            .bind(until)
            .bind(tag)
            .execute(&s.pool)
            .await
            .unwrap();
        }
        let modes = [
            ("default_only", None),
            ("tags", Some(vec!["a".to_string()])),
            ("default_and", Some(vec!["b".to_string()])),
            ("any", None),
            ("none", None),
        ];
        for owner in [None, Some("me")] {
            for (mode, tags) in &modes {
                let a = taken(&s, &ours, now, owner, tags.clone(), mode).await;
                let b = taken(&s, &crates, now, owner, tags.clone(), mode).await;
                assert_eq!(a, b, "round {round}, mode {mode}, owner {owner:?}");
            }
        }
    }
    s.drop().await;
}

/// A fan-out of 20,000 on Postgres slowed as it went: each connection's
/// worker fetch kept the generic plan made at its first call, when the
/// queue was short, and that plan (v2) read every visible row of the queue
/// at every fetch once it was long.
#[tokio::test]
async fn a_plan_made_on_a_short_queue_reads_only_the_front_of_a_long_one() {
    let s = Scratch::new("fetchplan").await;
    let q = format!("{}.worker_queue", s.schema.quoted);
    let call = format!(
        "SELECT out_work_item FROM {}(false, (EXTRACT(EPOCH FROM now()) * 1000)::BIGINT, \
         30000, NULL, NULL, NULL, 'default_only')",
        s.function("fetch_work.sql")
    );
    let enqueue = |n: i64| {
        format!(
            "INSERT INTO {q} (work_item, visible_at, created_at)
             SELECT 'w' || i, now() - INTERVAL '1 second', now() FROM generate_series(1, {n}) i"
        )
    };
    // An empty queue (the first fetch of a new runtime) and a short one.
    for short in [0, 300] {
        sqlx::query(&format!("TRUNCATE {q}"))
            .execute(&s.pool)
            .await
            .unwrap();
        sqlx::query(&enqueue(short)).execute(&s.pool).await.unwrap();
        // A new connection makes its plans now, at the fetch on the short queue.
        let mut conn = fresh_connection().await;
        let (taken, _) = rows_read(&mut conn, &call, &q).await;
        assert_eq!(
            taken.is_some(),
            short > 0,
            "a fetch from a queue of {short}"
        );
        sqlx::query(&enqueue(5_000)).execute(&s.pool).await.unwrap();
        let (taken, read) = rows_read(&mut conn, &call, &q).await;
        assert_eq!(taken.as_deref(), Some("w1"), "the oldest item");
        assert!(
            read <= 200,
            "planned on a queue of {short}, a fetch from {} read {read} of its rows",
            short + 5_000
        );
    }
    s.drop().await;
}
