//! `SqliteProvider.open(url)` / `SqliteProvider.inMemory()`. Both stores retry
//! SQLite's transient busy errors (`sqlite_retry.rs`: another process on the
//! file). With `fastPaths` (the default) they take their writing calls one
//! at a time (`sqlite_writer.rs`) and a file's most frequent writes run on a
//! connection of ours (`sqlite_direct.rs`).

use std::sync::Arc;

use duroxide::providers::sqlite::SqliteProvider;
use duroxide::providers::Provider;
use napi_derive::napi;

use super::contain;
use super::fast_paths::{FastPath, FastPaths};
use super::wakeup::WakeupOptions;
use super::{Backend, NativeProvider};
use crate::errors::{BridgeError, BridgeResult, Settled};

/// Options of `SqliteProvider.open` and `SqliteProvider.inMemory`.
#[napi(object)]
#[derive(Default, Clone, Copy)]
pub struct SqliteOpenOptions {
    /// `true` (default): the fast store paths (docs/fast-paths.md); `false`:
    /// every call runs through duroxide's own SQLite provider.
    pub fast_paths: Option<bool>,
    /// How often an idle dispatcher looks at the store though nothing woke
    /// it, in ms (default 1000): what another process on the file enqueued
    /// is found by this look.
    pub fallback_poll_ms: Option<u32>,
}

/// Turns a `sqlite:` URL into a file path: `sqlite:./app.db`, `sqlite:///tmp/x.db`
/// and `sqlite:/tmp/x.db?mode=rwc` all name a file; the query string is not
/// part of the name.
pub(crate) fn sqlite_path(url: &str) -> BridgeResult<String> {
    let rest = url.strip_prefix("sqlite:").ok_or_else(|| {
        BridgeError::InvalidArgument(format!(
            "url must start with 'sqlite:' (for example 'sqlite:./app.db'), got '{url}'"
        ))
    })?;
    let rest = rest.split('?').next().unwrap_or_default();
    // `sqlite:///abs/path` and `sqlite://rel` are common spellings of the same thing.
    let path = match rest.strip_prefix("//") {
        Some(p) => p,
        None => rest,
    };
    if path.is_empty() || path == ":memory:" {
        return Err(BridgeError::InvalidArgument(format!(
            "url '{url}' names no file; use SqliteProvider.inMemory() for a memory database"
        )));
    }
    Ok(path.to_string())
}

/// The store under its retry and wake-up layers and, with fast paths, its
/// direct-write and one-writer layers, with `extra` (a layer of the
/// caller's, such as `TestEnv`'s virtual time) between the last two. `path`
/// is the file, `None` in memory.
async fn stacked(
    provider: SqliteProvider,
    path: Option<&str>,
    options: SqliteOpenOptions,
    extra: impl FnOnce(Arc<dyn Provider>) -> Arc<dyn Provider>,
) -> BridgeResult<NativeProvider> {
    let pool = provider.get_pool().clone();
    let paths = FastPaths::new(options.fast_paths.unwrap_or(true), "SQLite");
    let mut store: Arc<dyn Provider> = Arc::new(provider);
    if paths.enabled() {
        for path in [
            FastPath::OneWriter,
            FastPath::ActivityDescriptors,
            FastPath::StatusRead,
        ] {
            paths.active(path);
        }
        match path {
            Some(path) => {
                store = super::sqlite_direct::over(store, path, &pool)
                    .await
                    .map_err(BridgeError::Provider)?;
                paths.active(FastPath::DirectCalls);
                paths.active(FastPath::TailFetch);
            }
            None => {
                // Not a loss worth a WARN: a memory database has no file
                // for a second connection to open.
                tracing::debug!(target: "duroxide_node::providers", "an in-memory SQLite store has no direct calls");
            }
        }
        store = super::sqlite_writer::with_one_writer(store);
    }
    let set_aside = Arc::<contain::Counts>::default();
    let store = contain::over(
        store,
        contain::Store::Sqlite { pool: pool.clone() },
        set_aside.clone(),
    );
    let retried = super::sqlite_retry::with_busy_retry(store);
    Ok(NativeProvider::with_wakeups(
        extra(retried),
        Backend::Sqlite {
            pool,
            fast_paths: paths,
            set_aside,
        },
        WakeupOptions::of(None, options.fallback_poll_ms),
    ))
}

/// Opens (creating if missing) the SQLite file named by a `sqlite:` URL.
pub(crate) async fn open_sqlite(
    url: String,
    options: SqliteOpenOptions,
) -> BridgeResult<NativeProvider> {
    let path = sqlite_path(&url)?;
    if let Some(parent) = std::path::Path::new(&path).parent() {
        if !parent.as_os_str().is_empty() && !parent.exists() {
            return Err(BridgeError::Provider(format!(
                "cannot open '{url}': directory '{}' does not exist",
                parent.display()
            )));
        }
    }
    if !std::path::Path::new(&path).exists() {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| BridgeError::Provider(format!("cannot create '{path}': {e}")))?;
    }
    let provider = SqliteProvider::new(&format!("sqlite:{path}"), None)
        .await
        .map_err(|e| BridgeError::Provider(format!("cannot open '{url}': {e}")))?;
    stacked(provider, Some(&path), options, |p| p).await
}

/// A private in-memory SQLite database; gone when the last holder drops it.
pub(crate) async fn sqlite_in_memory(options: SqliteOpenOptions) -> BridgeResult<NativeProvider> {
    sqlite_in_memory_with(options, |p| p).await
}

/// [`sqlite_in_memory`] with `extra` over the retry layer, under the wake-ups.
pub(crate) async fn sqlite_in_memory_with(
    options: SqliteOpenOptions,
    extra: impl FnOnce(Arc<dyn Provider>) -> Arc<dyn Provider>,
) -> BridgeResult<NativeProvider> {
    let provider = SqliteProvider::new_in_memory()
        .await
        .map_err(|e| BridgeError::Provider(format!("cannot create in-memory database: {e}")))?;
    stacked(provider, None, options, extra).await
}

#[cfg(test)]
mod tests {
    use super::sqlite_path;

    #[test]
    fn query_string_is_not_part_of_the_file_name() {
        assert_eq!(
            sqlite_path("sqlite:/tmp/x.db?mode=rwc").unwrap(),
            "/tmp/x.db"
        );
        assert_eq!(sqlite_path("sqlite:./app.db").unwrap(), "./app.db");
        assert_eq!(sqlite_path("sqlite:///tmp/y.db").unwrap(), "/tmp/y.db");
        assert!(sqlite_path("postgres://x").is_err());
        assert!(sqlite_path("sqlite:").is_err());
    }
}

// The JS entry points: their errors reach JS with their `code` (see `errors.rs`).
#[napi(js_name = "openSqlite", ts_return_type = "Promise<NativeProvider>")]
pub async fn open_sqlite_js(
    url: String,
    options: Option<SqliteOpenOptions>,
) -> Settled<NativeProvider> {
    Settled(open_sqlite(url, options.unwrap_or_default()).await)
}

#[napi(js_name = "sqliteInMemory", ts_return_type = "Promise<NativeProvider>")]
pub async fn sqlite_in_memory_js(options: Option<SqliteOpenOptions>) -> Settled<NativeProvider> {
    Settled(sqlite_in_memory(options.unwrap_or_default()).await)
}
