//! What the dashboard's overview (`lib/dashboard/`) reads from the store:
//! instances by the status of their current execution, and how many
//! instances were created and executions completed or failed in each of
//! the last few time buckets. Read-only GROUP BY queries on the store's own
//! pool; the provider trait's `getSystemMetrics` has no ContinuedAsNew count
//! and no times.

use std::time::{SystemTime, UNIX_EPOCH};

use napi_derive::napi;
use sqlx::{PgPool, SqlitePool};

use super::store_sql::{self, Params, SQLITE_CREATED_MS};
use super::NativeClient;
use crate::errors::{BridgeResult, Settled};
use crate::providers::Backend;
use crate::rules::{self, ExecutionStatusName};

/// Instances by the status of their current execution.
#[napi(object)]
#[derive(Default)]
pub struct StatusCounts {
    pub running: i64,
    pub completed: i64,
    pub failed: i64,
    pub continued_as_new: i64,
}

/// One time bucket of `storeActivity`.
#[napi(object)]
#[derive(Clone)]
pub struct ActivityBucket {
    /// Epoch ms the bucket starts at; it lasts `bucketMs`.
    pub start_ms: i64,
    /// Instances created (sub-orchestrations included).
    pub started: i64,
    /// Executions that completed.
    pub completed: i64,
    /// Executions that failed.
    pub failed: i64,
}

/// `NativeClient.storeActivity(bucketMs, buckets)`.
#[napi(object)]
pub struct StoreActivity {
    pub by_status: StatusCounts,
    /// Oldest first; the last one holds now.
    pub buckets: Vec<ActivityBucket>,
}

/// (bucket index, status or "", count) rows.
type BucketRow = (i64, String, i64);

/// The window: `count` buckets of `size` ms, the last one holding `now`.
fn window(now: i64, size: i64, count: u32) -> (i64, Vec<ActivityBucket>) {
    let since = now.div_euclid(size) * size - (i64::from(count) - 1) * size;
    let buckets = (0..i64::from(count))
        .map(|k| ActivityBucket {
            start_ms: since + k * size,
            started: 0,
            completed: 0,
            failed: 0,
        })
        .collect();
    (since, buckets)
}

fn tally(buckets: &mut [ActivityBucket], rows: Vec<BucketRow>) {
    for (index, status, count) in rows {
        let Some(b) = usize::try_from(index).ok().and_then(|i| buckets.get_mut(i)) else {
            continue;
        };
        match status.as_str() {
            "" => b.started += count,
            "Completed" => b.completed += count,
            "Failed" => b.failed += count,
            _ => {}
        }
    }
}

fn counts(rows: Vec<(String, i64)>) -> StatusCounts {
    let mut c = StatusCounts::default();
    for (status, count) in rows {
        match ExecutionStatusName::from_store(&status) {
            Some(ExecutionStatusName::Running) => c.running += count,
            Some(ExecutionStatusName::Completed) => c.completed += count,
            Some(ExecutionStatusName::Failed) => c.failed += count,
            Some(ExecutionStatusName::ContinuedAsNew) => c.continued_as_new += count,
            None => {}
        }
    }
    c
}

const BY_STATUS: &str = "SELECT e.status, COUNT(*) FROM {s}instances i \
     JOIN {s}executions e ON e.instance_id = i.instance_id \
                         AND e.execution_id = i.current_execution_id \
     GROUP BY e.status";

async fn activity_sqlite(
    pool: &SqlitePool,
    since: i64,
    size: i64,
) -> BridgeResult<(Vec<(String, i64)>, Vec<BucketRow>)> {
    let op = "storeActivity";
    let by_status =
        store_sql::fetch(op, pool, &BY_STATUS.replace("{s}", ""), Params::new(false)).await?;
    let mut p = Params::new(false);
    let sql = format!(
        "SELECT ({SQLITE_CREATED_MS} - {since}) / {size}, '', COUNT(*) FROM instances i \
         WHERE i.created_at >= {from} GROUP BY 1",
        since = p.int(since),
        size = p.int(size),
        from = p.text(store_sql::sqlite_timestamp(since, false)),
    );
    let mut rows: Vec<BucketRow> = store_sql::fetch(op, pool, &sql, p).await?;
    let mut p = Params::new(false);
    let sql = format!(
        "SELECT (completed_at - {since}) / {size}, status, COUNT(*) FROM executions \
         WHERE typeof(completed_at) = 'integer' AND completed_at >= {from} \
           AND status IN ('Completed', 'Failed') GROUP BY 1, 2",
        since = p.int(since),
        size = p.int(size),
        from = p.int(since),
    );
    rows.extend(store_sql::fetch::<_, BucketRow>(op, pool, &sql, p).await?);
    Ok((by_status, rows))
}

async fn activity_postgres(
    pool: &PgPool,
    schema: &str,
    since: i64,
    size: i64,
) -> BridgeResult<(Vec<(String, i64)>, Vec<BucketRow>)> {
    let op = "storeActivity";
    // `schema` was validated as a plain identifier at connect time.
    let qualified = format!("{schema}.");
    let by_status = store_sql::fetch(
        op,
        pool,
        &BY_STATUS.replace("{s}", &qualified),
        Params::new(true),
    )
    .await?;
    let bucket = |column: &str, p: &mut Params| {
        format!(
            "FLOOR((EXTRACT(EPOCH FROM {column}) * 1000 - {}) / {})::BIGINT",
            p.int(since),
            p.int(size)
        )
    };
    let mut p = Params::new(true);
    let index = bucket("created_at", &mut p);
    let sql = format!(
        "SELECT {index}, '', COUNT(*) FROM {schema}.instances \
         WHERE created_at >= TIMESTAMPTZ 'epoch' + {}::FLOAT8 * INTERVAL '1 millisecond' GROUP BY 1",
        p.int(since)
    );
    let mut rows: Vec<BucketRow> = store_sql::fetch(op, pool, &sql, p).await?;
    let mut p = Params::new(true);
    let index = bucket("completed_at", &mut p);
    let sql = format!(
        "SELECT {index}, status, COUNT(*) FROM {schema}.executions \
         WHERE completed_at >= TIMESTAMPTZ 'epoch' + {}::FLOAT8 * INTERVAL '1 millisecond' \
           AND status IN ('Completed', 'Failed') GROUP BY 1, 2",
        p.int(since)
    );
    rows.extend(store_sql::fetch::<_, BucketRow>(op, pool, &sql, p).await?);
    Ok((by_status, rows))
}

#[napi]
impl NativeClient {
    /// Instances by status, and creations, completions and failures in
    /// `buckets` buckets of `bucketMs` ms up to now.
    #[napi(ts_return_type = "Promise<StoreActivity>")]
    pub async fn store_activity(&self, bucket_ms: f64, buckets: f64) -> Settled<StoreActivity> {
        Settled::of(async {
            let size = i64::from(rules::count_within(
                "bucketMs", bucket_ms, 1000, 86_400_000,
            )?);
            let count = rules::count_within("buckets", buckets, 1, 1440)?;
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as i64)
                .unwrap_or(0);
            let (since, mut list) = window(now, size, count);
            let (by_status, rows) = match &self.backend {
                Backend::Sqlite { pool, .. } => activity_sqlite(pool, since, size).await?,
                Backend::Postgres { pool, schema, .. } => {
                    activity_postgres(pool, schema, since, size).await?
                }
            };
            tally(&mut list, rows);
            Ok(StoreActivity {
                by_status: counts(by_status),
                buckets: list,
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_bucket_holds_now() {
        let (since, buckets) = window(10_500, 1000, 3);
        assert_eq!(since, 8000);
        let starts: Vec<i64> = buckets.iter().map(|b| b.start_ms).collect();
        assert_eq!(starts, vec![8000, 9000, 10_000]);
    }

    #[test]
    fn rows_land_in_their_buckets_and_strays_are_dropped() {
        let (_, mut buckets) = window(10_500, 1000, 3);
        tally(
            &mut buckets,
            vec![
                (0, String::new(), 2),
                (2, "Completed".into(), 5),
                (2, "Failed".into(), 1),
                (3, "Failed".into(), 9),
                (-1, String::new(), 9),
            ],
        );
        assert_eq!(buckets[0].started, 2);
        assert_eq!((buckets[2].completed, buckets[2].failed), (5, 1));
        assert_eq!(buckets.iter().map(|b| b.failed).sum::<i64>(), 1);
    }
}
