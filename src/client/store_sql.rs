//! Running the dashboard's read-only queries (`search.rs`, `overview.rs`)
//! on the store's own pool: SQL text built with only the conditions a call
//! asks for, each value a bound argument, and the call bounded like every
//! other client call (`bounded.rs`).
//!
//! Building the text per call, rather than one query with `? IS NULL OR`
//! for every filter, keeps each condition visible to the planner: a filter
//! that is not asked for costs nothing, and one that is can use an index.

use sqlx::{Database, Encode, Executor, FromRow, IntoArguments, Pool, Type};

use super::bounded::CALL_TIMEOUT;
use crate::errors::{BridgeError, BridgeResult};

/// One bound argument.
pub(super) enum Arg {
    Text(String),
    Int(i64),
}

/// The arguments of one statement, and their numbered placeholders in its
/// text (`?n` for SQLite, `$n` for Postgres), so the text may put them in
/// any order and use one twice.
pub(super) struct Params {
    postgres: bool,
    args: Vec<Arg>,
}

impl Params {
    pub(super) fn new(postgres: bool) -> Self {
        Self {
            postgres,
            args: Vec::new(),
        }
    }

    fn push(&mut self, arg: Arg) -> String {
        self.args.push(arg);
        let sigil = if self.postgres { '$' } else { '?' };
        format!("{sigil}{}", self.args.len())
    }

    /// The placeholder of a new text argument.
    pub(super) fn text(&mut self, value: impl Into<String>) -> String {
        self.push(Arg::Text(value.into()))
    }

    /// The placeholder of a new integer argument.
    pub(super) fn int(&mut self, value: i64) -> String {
        self.push(Arg::Int(value))
    }
}

/// A query's failure as the client reports store failures.
fn failed(op: &str, e: sqlx::Error) -> BridgeError {
    BridgeError::Provider(format!("{op}: the store's query failed: {e}"))
}

fn timed_out(op: &str) -> BridgeError {
    BridgeError::Provider(format!(
        "{op}: the store did not answer within {} ms: the database is unreachable or its \
         connection pool is exhausted",
        CALL_TIMEOUT.as_millis()
    ))
}

/// Runs one read-only query on either store's pool: the caller's rows,
/// the store's failure, or a timeout after [`CALL_TIMEOUT`].
pub(super) async fn fetch<DB, T>(
    op: &str,
    pool: &Pool<DB>,
    sql: &str,
    params: Params,
) -> BridgeResult<Vec<T>>
where
    DB: Database,
    T: for<'r> FromRow<'r, DB::Row> + Send + Unpin,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    String: for<'q> Encode<'q, DB> + Type<DB>,
    i64: for<'q> Encode<'q, DB> + Type<DB>,
{
    let mut query = sqlx::query_as::<DB, T>(sql);
    for arg in params.args {
        query = match arg {
            Arg::Text(s) => query.bind(s),
            Arg::Int(i) => query.bind(i),
        };
    }
    match tokio::time::timeout(CALL_TIMEOUT, query.fetch_all(pool)).await {
        Ok(rows) => rows.map_err(|e| failed(op, e)),
        Err(_) => Err(timed_out(op)),
    }
}

/// SQLite's `CURRENT_TIMESTAMP` text (`2026-01-31 12:00:00`, UTC, whole
/// seconds) of epoch ms: duroxide's SQLite store keeps `instances.created_at`
/// in that form, so comparing text with text keeps the column as it is.
/// `round_up` takes the next whole second for an exclusive upper bound, so
/// the second that holds the bound stays in.
pub(super) fn sqlite_timestamp(ms: i64, round_up: bool) -> String {
    let secs = if round_up {
        ms.div_euclid(1000) + i64::from(ms.rem_euclid(1000) != 0)
    } else {
        ms.div_euclid(1000)
    };
    let days = secs.div_euclid(86_400);
    let rest = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`), so no date crate is needed for one format.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// SQLite: `instances.created_at` as epoch ms (whole seconds).
pub(super) const SQLITE_CREATED_MS: &str = "CAST(strftime('%s', i.created_at) AS INTEGER) * 1000";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_timestamps_match_current_timestamp_text() {
        assert_eq!(sqlite_timestamp(0, false), "1970-01-01 00:00:00");
        // 2026-12-06 02:36:06.479 UTC, as the quickstart's store wrote it.
        assert_eq!(
            sqlite_timestamp(1_796_524_566_479, false),
            "2026-12-06 02:36:06"
        );
        assert_eq!(
            sqlite_timestamp(1_796_524_566_479, true),
            "2026-12-06 02:36:07"
        );
        assert_eq!(
            sqlite_timestamp(1_796_524_566_000, true),
            "2026-12-06 02:36:06"
        );
        // A leap day.
        assert_eq!(
            sqlite_timestamp(951_782_400_000, false),
            "2000-02-29 00:00:00"
        );
    }

    #[test]
    fn placeholders_follow_the_store() {
        let mut pg = Params::new(true);
        assert_eq!(
            (pg.text("a"), pg.int(1)),
            ("$1".to_string(), "$2".to_string())
        );
        let mut lite = Params::new(false);
        assert_eq!(
            (lite.text("a"), lite.int(2)),
            ("?1".to_string(), "?2".to_string())
        );
    }
}
