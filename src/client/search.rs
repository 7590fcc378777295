//! Pages of instances for the dashboard's list (`lib/dashboard/`), filtered
//! in the store: the provider trait can only list every id (or every id of
//! one status), and the CLI's `list` then reads each instance's info.
//!
//! One read-only query per page, with keyset paging: a page ends with a
//! cursor naming its last row, and the next page starts after it, so page
//! 1000 costs what page 1 does.
//!
//! - SQLite walks `instances` in rowid order, which is the order rows were
//!   inserted (duroxide inserts an instance's row at its first turn, when it
//!   also takes `created_at`), and stops once the page is full; the current
//!   execution is a primary-key lookup, an id prefix is a range on the
//!   primary key.
//! - Postgres orders by `(created_at, instance_id)` and pages on that pair.
//!   duroxide-pg's schema has no index on `created_at`, so each page sorts
//!   the matching rows, keeping only the page (a top-N heapsort); with an
//!   index on `instances (created_at, instance_id)` the same query walks
//!   the index.
//!
//! Times: SQLite keeps `created_at` as text in whole seconds, so its
//! creation ranges are compared by the second (the bounds' seconds are in);
//! the `createdAt` of a row is its first event's time when the history has
//! it, as `getInstanceInfo` reports.

use napi_derive::napi;
use sqlx::{PgPool, SqlitePool};

use super::management::n;
use super::store_sql::{self, Params, SQLITE_CREATED_MS};
use super::NativeClient;
use crate::errors::{BridgeError, BridgeResult, Settled};
use crate::providers::Backend;
use crate::rules::{self, ExecutionStatusName, InstanceOrder};

/// Instances per page unless asked otherwise, and the most a page holds.
const DEFAULT_LIMIT: u32 = 50;
const MAX_LIMIT: u32 = 500;
/// A row's custom status is cut to this many characters; the detail read
/// (`getStatus`) has all of it.
const CUSTOM_STATUS_CHARS: i64 = 200;

/// `NativeClient.searchInstances(search)`: every field is optional and the
/// given ones are ANDed.
#[napi(object)]
pub struct InstanceSearch {
    /// The status of the instance's current execution.
    pub status: Option<String>,
    pub orchestration_name: Option<String>,
    pub orchestration_version: Option<String>,
    /// Created at or after this epoch ms.
    pub created_from: Option<f64>,
    /// Created before this epoch ms.
    pub created_to: Option<f64>,
    /// Current execution completed at or after this epoch ms.
    pub completed_from: Option<f64>,
    /// Current execution completed before this epoch ms.
    pub completed_to: Option<f64>,
    /// Instance ids that start with this text.
    pub id_prefix: Option<String>,
    /// Text found, ignoring ASCII case, in the custom status or in the
    /// current execution's output (which holds the error when it failed).
    pub text: Option<String>,
    /// `newest` (default) or `oldest` first.
    pub order: Option<String>,
    /// Instances per page, 1 to 500 (default 50).
    pub limit: Option<f64>,
    /// `nextCursor` of the previous page.
    pub cursor: Option<String>,
}

/// One row of an instance page.
#[napi(object)]
pub struct InstanceSummary {
    pub instance_id: String,
    pub orchestration_name: String,
    pub orchestration_version: String,
    pub current_execution_id: i64,
    /// Status of the current execution.
    pub status: ExecutionStatusName,
    /// Epoch milliseconds.
    pub created_at: i64,
    /// When the current execution completed (epoch ms); absent while it runs.
    pub completed_at: Option<i64>,
    pub parent_instance_id: Option<String>,
    /// The first 200 characters of the custom status.
    pub custom_status: Option<String>,
}

/// `NativeClient.searchInstances(search)`.
#[napi(object)]
pub struct InstancePage {
    pub instances: Vec<InstanceSummary>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// Where the previous page ended, in the store's own page order.
#[derive(Debug, PartialEq, Eq)]
enum Cursor {
    Sqlite {
        rowid: i64,
    },
    Postgres {
        created_us: i64,
        instance_id: String,
    },
}

impl Cursor {
    fn text(&self) -> String {
        match self {
            Cursor::Sqlite { rowid } => format!("s.{rowid}"),
            Cursor::Postgres {
                created_us,
                instance_id,
            } => format!("p.{created_us}.{instance_id}"),
        }
    }

    fn parse(text: &str) -> Option<Cursor> {
        if let Some(rowid) = text.strip_prefix("s.") {
            return Some(Cursor::Sqlite {
                rowid: rowid.parse().ok()?,
            });
        }
        let (created_us, instance_id) = text.strip_prefix("p.")?.split_once('.')?;
        Some(Cursor::Postgres {
            created_us: created_us.parse().ok()?,
            instance_id: instance_id.to_string(),
        })
    }
}

/// A search with its values checked.
struct Filters {
    status: Option<ExecutionStatusName>,
    name: Option<String>,
    version: Option<String>,
    created_from: Option<i64>,
    created_to: Option<i64>,
    completed_from: Option<i64>,
    completed_to: Option<i64>,
    id_prefix: Option<String>,
    text: Option<String>,
    order: InstanceOrder,
    limit: u32,
    cursor: Option<Cursor>,
}

fn epoch(field: &str, value: Option<f64>) -> BridgeResult<Option<i64>> {
    value.map(|v| rules::epoch_ms(field, v)).transpose()
}

/// Empty text means "no filter": what an emptied search box sends.
fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.is_empty())
}

impl Filters {
    fn from_search(s: InstanceSearch, postgres: bool) -> BridgeResult<Filters> {
        let status = non_empty(s.status)
            .map(|v| rules::execution_status("search.status", &v))
            .transpose()?;
        let order = match non_empty(s.order) {
            Some(v) => rules::instance_order("search.order", &v)?,
            None => InstanceOrder::Newest,
        };
        let limit = match s.limit {
            Some(v) => rules::count_within("search.limit", v, 1, MAX_LIMIT)?,
            None => DEFAULT_LIMIT,
        };
        let cursor = match non_empty(s.cursor) {
            None => None,
            Some(text) => match Cursor::parse(&text) {
                Some(c) if matches!(c, Cursor::Postgres { .. }) == postgres => Some(c),
                _ => {
                    return Err(BridgeError::InvalidArgument(format!(
                        "search.cursor '{}' is not the nextCursor of a page of this store",
                        text.chars().take(80).collect::<String>()
                    )))
                }
            },
        };
        Ok(Filters {
            status,
            name: non_empty(s.orchestration_name),
            version: non_empty(s.orchestration_version),
            created_from: epoch("search.createdFrom", s.created_from)?,
            created_to: epoch("search.createdTo", s.created_to)?,
            completed_from: epoch("search.completedFrom", s.completed_from)?,
            completed_to: epoch("search.completedTo", s.completed_to)?,
            id_prefix: non_empty(s.id_prefix),
            text: non_empty(s.text),
            order,
            limit,
            cursor,
        })
    }

    /// The conditions both stores write alike: on the current execution
    /// (`exec`) and on the instance row (`inst`).
    fn common(&self, p: &mut Params, exec: &mut Vec<String>, inst: &mut Vec<String>) {
        if let Some(s) = self.status {
            exec.push(format!("e.status = {}", p.text(s.as_str())));
        }
        if let Some(name) = &self.name {
            inst.push(format!("i.orchestration_name = {}", p.text(name.as_str())));
        }
        if let Some(v) = &self.version {
            inst.push(format!("i.orchestration_version = {}", p.text(v.as_str())));
        }
    }
}

/// The smallest text above every text that starts with `prefix`, in code
/// point (byte) order; `None` when there is none.
fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let mut next = last as u32 + 1;
        if (0xD800..=0xDFFF).contains(&next) {
            next = 0xE000;
        }
        if let Some(c) = char::from_u32(next) {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

type SqliteRow = (
    i64,
    String,
    String,
    Option<String>,
    i64,
    String,
    i64,
    Option<i64>,
    Option<String>,
    Option<String>,
);

fn sqlite_query(f: &Filters) -> (String, Params) {
    let mut p = Params::new(false);
    let mut conds = Vec::new();
    let mut exec_conds = Vec::new();
    f.common(&mut p, &mut exec_conds, &mut conds);
    conds.append(&mut exec_conds);
    if let Some(ms) = f.created_from {
        let t = store_sql::sqlite_timestamp(ms, false);
        conds.push(format!("i.created_at >= {}", p.text(t)));
    }
    if let Some(ms) = f.created_to {
        let t = store_sql::sqlite_timestamp(ms, true);
        conds.push(format!("i.created_at < {}", p.text(t)));
    }
    if let Some(ms) = f.completed_from {
        conds.push(format!("e.completed_at >= {}", p.int(ms)));
    }
    if let Some(ms) = f.completed_to {
        conds.push(format!(
            "e.completed_at > 0 AND e.completed_at < {}",
            p.int(ms)
        ));
    }
    if let Some(prefix) = &f.id_prefix {
        // SQLite compares text bytewise (BINARY), so the prefix is a range
        // of the primary key.
        conds.push(format!("i.instance_id >= {}", p.text(prefix.as_str())));
        if let Some(end) = prefix_end(prefix) {
            conds.push(format!("i.instance_id < {}", p.text(end)));
        }
    }
    if let Some(text) = &f.text {
        let t = p.text(text.as_str());
        conds.push(format!(
            "(instr(lower(i.custom_status), lower({t})) > 0 OR instr(lower(e.output), lower({t})) > 0)"
        ));
    }
    let newest = f.order == InstanceOrder::Newest;
    if let Some(Cursor::Sqlite { rowid }) = &f.cursor {
        let op = if newest { "<" } else { ">" };
        conds.push(format!("i.rowid {op} {}", p.int(*rowid)));
    }
    let limit = p.int(i64::from(f.limit) + 1);
    let sql = format!(
        "SELECT i.rowid, i.instance_id, i.orchestration_name, i.orchestration_version, \
                i.current_execution_id, e.status, \
                COALESCE((SELECT CAST(json_extract(h.event_data, '$.timestamp_ms') AS INTEGER) \
                          FROM history h \
                          WHERE h.instance_id = i.instance_id AND h.event_id = 1 \
                            AND h.execution_id = (SELECT MIN(x.execution_id) FROM executions x \
                                                  WHERE x.instance_id = i.instance_id)), \
                         {SQLITE_CREATED_MS}, 0), \
                CASE WHEN typeof(e.completed_at) = 'integer' AND e.completed_at > 0 \
                     THEN e.completed_at END, \
                i.parent_instance_id, substr(i.custom_status, 1, {CUSTOM_STATUS_CHARS}) \
         FROM instances i \
         {cross} executions e ON e.instance_id = i.instance_id \
                                AND e.execution_id = i.current_execution_id \
         {where_} \
         ORDER BY i.rowid {dir} LIMIT {limit}",
        where_ = where_clause(&conds),
        dir = if newest { "DESC" } else { "ASC" },
        // SQLite keeps the left table of a CROSS JOIN as the outer loop: a
        // filter on the execution must not make it scan executions and sort.
        cross = "CROSS JOIN",
    );
    (sql, p)
}

/// [`Columns`] with `created` in Postgres's microseconds, which the cursor
/// keeps so that rows created within one ms are neither skipped nor repeated.
type PgRow = Columns;

/// Epoch `unit` counts as a `timestamptz` expression of placeholder `p`.
fn pg_time(p: String, unit: &str) -> String {
    format!("(TIMESTAMPTZ 'epoch' + {p}::FLOAT8 * INTERVAL '1 {unit}')")
}

fn postgres_query(f: &Filters, schema: &str) -> (String, Params) {
    let mut p = Params::new(true);
    // Conditions on the instance row, and on its current execution.
    let mut conds = Vec::new();
    let mut exec_conds = Vec::new();
    f.common(&mut p, &mut exec_conds, &mut conds);
    if let Some(ms) = f.created_from {
        conds.push(format!(
            "i.created_at >= {}",
            pg_time(p.int(ms), "millisecond")
        ));
    }
    if let Some(ms) = f.created_to {
        conds.push(format!(
            "i.created_at < {}",
            pg_time(p.int(ms), "millisecond")
        ));
    }
    if let Some(ms) = f.completed_from {
        exec_conds.push(format!(
            "e.completed_at >= {}",
            pg_time(p.int(ms), "millisecond")
        ));
    }
    if let Some(ms) = f.completed_to {
        exec_conds.push(format!(
            "e.completed_at < {}",
            pg_time(p.int(ms), "millisecond")
        ));
    }
    if let Some(prefix) = &f.id_prefix {
        // starts_with, not a range: a database's collation need not order
        // text bytewise.
        conds.push(format!(
            "starts_with(i.instance_id, {})",
            p.text(prefix.as_str())
        ));
    }
    if let Some(text) = &f.text {
        let t = p.text(text.as_str());
        exec_conds.push(format!(
            "(strpos(lower(i.custom_status), lower({t})) > 0 OR strpos(lower(e.output), lower({t})) > 0)"
        ));
    }
    let newest = f.order == InstanceOrder::Newest;
    if let Some(Cursor::Postgres {
        created_us,
        instance_id,
    }) = &f.cursor
    {
        let op = if newest { "<" } else { ">" };
        let at = pg_time(p.int(*created_us), "microsecond");
        conds.push(format!(
            "(i.created_at, i.instance_id) {op} ({at}, {})",
            p.text(instance_id.as_str())
        ));
    }
    let limit = p.int(i64::from(f.limit) + 1);
    let dir = if newest { "DESC" } else { "ASC" };
    let order = format!("ORDER BY i.created_at {dir}, i.instance_id {dir}");
    // Without a filter on the execution, the page is cut from `instances`
    // alone before the join: the LIMIT right above the sort lets Postgres
    // keep only the page while it sorts (a top-N heapsort, or the first rows
    // of an index on the creation time) instead of sorting every joined row.
    let (instances, where_, outer_limit) = if exec_conds.is_empty() {
        (
            format!(
                "(SELECT * FROM {schema}.instances i {} {order} LIMIT {limit}) i",
                where_clause(&conds)
            ),
            String::new(),
            String::new(),
        )
    } else {
        conds.extend(exec_conds);
        (
            format!("{schema}.instances i"),
            where_clause(&conds),
            format!("LIMIT {limit}"),
        )
    };
    // `schema` was validated as a plain identifier at connect time.
    let sql = format!(
        "SELECT i.instance_id, i.orchestration_name, i.orchestration_version, \
                i.current_execution_id::BIGINT, e.status, \
                (EXTRACT(EPOCH FROM i.created_at) * 1000000)::BIGINT, \
                FLOOR(EXTRACT(EPOCH FROM e.completed_at) * 1000)::BIGINT, \
                i.parent_instance_id, LEFT(i.custom_status, {CUSTOM_STATUS_CHARS}) \
         FROM {instances} \
         JOIN {schema}.executions e ON e.instance_id = i.instance_id \
                                   AND e.execution_id = i.current_execution_id \
         {where_} {order} {outer_limit}"
    );
    (sql, p)
}

fn where_clause(conds: &[String]) -> String {
    if conds.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", conds.join(" AND "))
    }
}

/// The columns of a summary as both stores read them, `created` in epoch
/// ms: instance, name, version, execution, status, created, completed,
/// parent, custom status.
type Columns = (
    String,
    String,
    Option<String>,
    i64,
    String,
    i64,
    Option<i64>,
    Option<String>,
    Option<String>,
);

/// A running execution has no completion time, whatever the row holds.
fn summary(columns: Columns) -> BridgeResult<InstanceSummary> {
    let (instance_id, name, version, execution, status, created_at, completed_at, parent, custom) =
        columns;
    let status = rules::store_status(&status)?;
    Ok(InstanceSummary {
        instance_id,
        orchestration_name: name,
        orchestration_version: version.unwrap_or_else(|| "unknown".to_string()),
        current_execution_id: n(execution),
        status,
        created_at,
        completed_at: completed_at.filter(|_| status != ExecutionStatusName::Running),
        parent_instance_id: parent,
        custom_status: custom,
    })
}

/// Keeps `limit` of the `limit + 1` rows read; the extra one says whether
/// a next page exists, which then starts after the last row kept.
fn split_page<R>(
    mut rows: Vec<R>,
    limit: u32,
    cursor: impl Fn(&R) -> Cursor,
) -> (Vec<R>, Option<String>) {
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let next = if more {
        rows.last().map(|r| cursor(r).text())
    } else {
        None
    };
    (rows, next)
}

/// The page of `limit + 1` rows read, whatever the store.
fn page<R>(
    rows: Vec<R>,
    f: &Filters,
    cursor: impl Fn(&R) -> Cursor,
    columns: impl Fn(R) -> Columns,
) -> BridgeResult<InstancePage> {
    let (rows, next_cursor) = split_page(rows, f.limit, cursor);
    let instances = rows
        .into_iter()
        .map(|r| summary(columns(r)))
        .collect::<BridgeResult<_>>()?;
    Ok(InstancePage {
        instances,
        next_cursor,
    })
}

async fn page_sqlite(pool: &SqlitePool, f: &Filters) -> BridgeResult<InstancePage> {
    let (sql, params) = sqlite_query(f);
    let rows: Vec<SqliteRow> = store_sql::fetch("searchInstances", pool, &sql, params).await?;
    page(
        rows,
        f,
        |r| Cursor::Sqlite { rowid: r.0 },
        |(_, id, name, version, exec, status, created, completed, parent, custom)| {
            (
                id, name, version, exec, status, created, completed, parent, custom,
            )
        },
    )
}

async fn page_postgres(pool: &PgPool, schema: &str, f: &Filters) -> BridgeResult<InstancePage> {
    let (sql, params) = postgres_query(f, schema);
    let rows: Vec<PgRow> = store_sql::fetch("searchInstances", pool, &sql, params).await?;
    page(
        rows,
        f,
        |r| Cursor::Postgres {
            created_us: r.5,
            instance_id: r.0.clone(),
        },
        |(id, name, version, exec, status, created_us, completed, parent, custom)| {
            let created = created_us.div_euclid(1000);
            (
                id, name, version, exec, status, created, completed, parent, custom,
            )
        },
    )
}

#[napi]
impl NativeClient {
    /// One page of the instances that match `search`, in creation order.
    #[napi(ts_return_type = "Promise<InstancePage>")]
    pub async fn search_instances(&self, search: InstanceSearch) -> Settled<InstancePage> {
        Settled::of(async {
            let postgres = matches!(self.backend, Backend::Postgres { .. });
            let filters = Filters::from_search(search, postgres)?;
            match &self.backend {
                Backend::Sqlite { pool, .. } => page_sqlite(pool, &filters).await,
                Backend::Postgres { pool, schema, .. } => {
                    page_postgres(pool, schema, &filters).await
                }
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests;
