//! A schema of a test's own, migrated by duroxide-pg, with our functions
//! installed, and the tail-fetch layer over the crate's store on it.

use std::sync::Arc;

use duroxide::providers::Provider;
use duroxide_pg::PostgresProvider;
use sqlx::PgPool;

use super::super::crate_text::Schema;
use super::super::install::installed;
use super::super::FILES;
use crate::providers::history_tail::{HistoryTail, Statements};
use crate::providers::kept::KeptConnections;
use crate::providers::layer::Stacked;
use crate::providers::scratch::database_url;

pub(super) struct Scratch {
    pub(super) name: String,
    pub(super) pool: PgPool,
    /// The crate's store on the schema.
    pub(super) pg: Arc<dyn Provider>,
    pub(super) schema: Schema,
}

impl Scratch {
    pub(super) async fn new(tag: &str) -> Self {
        let name = format!("duroxide_fn_{tag}_{}", std::process::id());
        let pg = PostgresProvider::new_with_schema(&database_url(), Some(&name))
            .await
            .unwrap();
        let pool = pg.pool().clone();
        let schema = installed(&pool, &name).await;
        Self {
            name,
            pool,
            pg: Arc::new(pg),
            schema,
        }
    }

    /// The qualified name of the function `file` installs.
    pub(super) fn function(&self, file: &str) -> String {
        let f = FILES
            .iter()
            .find(|f| f.file == file)
            .expect("a file of FILES");
        format!("{}.{}", self.schema.quoted, f.name)
    }

    /// The qualified name of the crate's function `name`.
    pub(super) fn crate_function(&self, name: &str) -> String {
        format!("{}.{name}", self.schema.quoted)
    }

    /// The tail-fetch layer (not relaxed) and the store it makes over the
    /// crate's.
    pub(super) fn layered(&self) -> (Arc<HistoryTail>, Arc<dyn Provider>) {
        let layer = Arc::new(HistoryTail::new(
            Arc::new(KeptConnections::new(self.pool.clone())),
            Statements::new(&self.schema.quoted),
            false,
        ));
        let store: Arc<dyn Provider> = Arc::new(Stacked::new(layer.clone(), self.pg.clone()));
        (layer, store)
    }

    pub(super) async fn drop(self) {
        sqlx::raw_sql(&format!("DROP SCHEMA {} CASCADE", self.schema.quoted))
            .execute(&self.pool)
            .await
            .unwrap();
    }
}

/// Milliseconds since the epoch, as the layers pass the clock.
pub(super) fn now_ms() -> i64 {
    crate::providers::pg_packing::now_ms()
}

/// An instance id no other test's advisory locks share
/// (`hashtext(instance_id)` keys them across schemas).
pub(super) fn own(id: &str) -> String {
    format!("{id}-{}", std::process::id())
}

/// A connection of its own, which makes its plans at its first call.
pub(super) async fn fresh_connection() -> sqlx::PgConnection {
    sqlx::Connection::connect(&database_url()).await.unwrap()
}

/// The first column a `call` on `conn` returned and the rows of `table`
/// it read (by index or bitmap, `idx_tup_fetch`, and by sequential scan),
/// in a rolled-back transaction.
pub(super) async fn rows_read(
    conn: &mut sqlx::PgConnection,
    call: &str,
    table: &str,
) -> (Option<String>, i64) {
    let mut tx = sqlx::Connection::begin(conn).await.unwrap();
    let taken: Option<(Option<String>,)> =
        sqlx::query_as(call).fetch_optional(&mut *tx).await.unwrap();
    let (read,): (i64,) = sqlx::query_as(
        "SELECT COALESCE(idx_tup_fetch, 0) + COALESCE(seq_tup_read, 0)
         FROM pg_stat_xact_user_tables WHERE relid = to_regclass($1)",
    )
    .bind(table)
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    tx.rollback().await.unwrap();
    (taken.and_then(|t| t.0), read)
}
