//! `fetch_work.sql` takes the item the crate's `fetch_work_item` takes, in
//! every state of the worker queue: rows visible or not, locked or not (live
//! or expired locks), tagged or not, for every tag mode, with and without an
//! owner, and with fewer and more rows at the front that may not be taken
//! than the front read looks at.

use super::fixture::{now_ms, Scratch};

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
