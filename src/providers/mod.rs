//! Storage providers. `NativeProvider` is the one native handle JS holds for
//! any backend; `sqlite.rs` and `postgres.rs` are its constructors.
//!
//! - `layer.rs`: the provider stack, one forwarding of duroxide's traits.
//! - `call_policy.rs`: how a call through a layer runs (deadline, retries).
//! - `pg_retry.rs`, `sqlite_retry.rs`: the retry layer each store gets.
//! - `sqlite_writer.rs`: SQLite's writing calls, one at a time.
//! - `sqlite_direct.rs`: a SQLite file's fetches, activity acks and
//!   enqueues on a connection of ours, without sqlx's thread handoffs.
//! - `wakeup.rs`: long polling and wake-ups, over the retry layer;
//!   `wakeup/ended.rs` wakes clients waiting on an instance this process ends.
//! - `kept.rs`: Postgres connections kept between the most frequent calls,
//!   which skip sqlx's pings; `kept_calls.rs`: the crate's acks and enqueues
//!   on them, with `pg_packing.rs`'s arguments.
//! - `histories.rs`: the histories a process's acks left, which the tail
//!   fetches of both stores read on from.
//! - `history_tail.rs`: Postgres orchestration fetches that read only the
//!   history this process does not hold, under the retry layer;
//!   `history_tail/ride.rs`: acks that also fetch the next item of the
//!   queue they feed.
//! - `pg_functions/`: the SQL functions the Postgres fast paths install
//!   (one `.sql` file each), checked against the crate's, installed,
//!   recorded and pruned.
//! - `fast_paths.rs`: the `fastPaths` switch and what a provider reports of it;
//!   `migrate.rs`: `PostgresProvider.migrate`, an admin's install.
//! - `contain.rs`: messages no fetch can read are set aside, under the
//!   retry layer, in both `fastPaths` modes.
//! - `work_items.rs`: which queue a work item goes to, for the calls above
//!   that enqueue.
//! - `descriptors.rs`: a runtime's per-activity history read, answered from
//!   what its own turn knew.
//!
//! A provider's stack, top to bottom: wake-ups, retries, (Postgres) tail
//! fetches and kept-connection calls or (SQLite) the one writer and the
//! direct writes, the store. A runtime
//! adds its descriptors layer and, on top of that, its guard (`guard/`); a
//! client adds its call deadline (`client/bounded.rs`).

pub(crate) mod call_policy;
pub(crate) mod contain;
pub(crate) mod descriptors;
pub(crate) mod fast_paths;
pub(crate) mod histories;
pub(crate) mod history_tail;
pub(crate) mod kept;
pub(crate) mod kept_calls;
pub(crate) mod layer;
pub(crate) mod local;
mod migrate;
pub(crate) mod pg_functions;
mod pg_packing;
mod pg_preflight;
mod pg_retry;
mod pg_stack;
pub(crate) mod postgres;
#[cfg(test)]
pub(crate) mod scratch;
pub(crate) mod sqlite;
mod sqlite_direct;
mod sqlite_retry;
mod sqlite_writer;
pub(crate) mod wakeup;
mod work_items;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use duroxide::providers::Provider;
use napi_derive::napi;
use sqlx::PgPool;

use fast_paths::{FastPath, FastPaths, FastPathsReport};

/// What the store under the stack is, captured when it connected, for code
/// that needs more than the `Provider` trait (the guard's own queries).
#[derive(Clone)]
pub(crate) enum Backend {
    Sqlite {
        pool: sqlx::SqlitePool,
        fast_paths: FastPaths,
        /// Messages set aside as unreadable (`contain.rs`).
        set_aside: Arc<contain::Counts>,
    },
    Postgres {
        pool: PgPool,
        fast_paths: FastPaths,
        /// Messages set aside as unreadable (`contain.rs`).
        set_aside: Arc<contain::Counts>,
        /// Stops marking the provider's functions as used once the last
        /// holder of the provider drops it (`pg_functions/install.rs`).
        _marking: Option<Arc<tokio_util::sync::DropGuard>>,
        /// The connections the provider's client calls keep between calls
        /// (`kept.rs`, the client's lane).
        client_kept: Arc<kept::KeptConnections>,
        schema: String,
        /// Set by the first runtime that checked the database for other
        /// duroxide schemas, so the runtimes of one provider warn once.
        schemas_checked: Arc<AtomicBool>,
        /// What the provider's acks fetched for its slots, given back by a
        /// runtime that stops; `None` without the tail fetch layer.
        ridden: Option<history_tail::Ridden>,
        /// Warms connections for a runtime that starts; `None` without the
        /// tail fetch layer.
        warmer: Option<history_tail::Warmer>,
    },
}

impl Backend {
    pub(crate) fn fast_paths(&self) -> &FastPaths {
        match self {
            Backend::Sqlite { fast_paths, .. } | Backend::Postgres { fast_paths, .. } => fast_paths,
        }
    }

    /// The messages this provider set aside as unreadable (`contain.rs`).
    pub(crate) fn set_aside_counts(&self) -> Arc<contain::Counts> {
        match self {
            Backend::Sqlite { set_aside, .. } | Backend::Postgres { set_aside, .. } => {
                set_aside.clone()
            }
        }
    }

    /// Whether `path` is in use on this store.
    pub(crate) fn uses(&self, path: FastPath) -> bool {
        self.fast_paths().is_active(path)
    }

    /// The pool and schema of a Postgres store.
    pub(crate) fn postgres(&self) -> Option<(PgPool, String)> {
        match self {
            Backend::Sqlite { .. } => None,
            Backend::Postgres { pool, schema, .. } => Some((pool.clone(), schema.clone())),
        }
    }

    /// What the provider's acks fetched for its slots (`history_tail/ride.rs`).
    pub(crate) fn ridden(&self) -> Option<history_tail::Ridden> {
        match self {
            Backend::Postgres { ridden, .. } => ridden.clone(),
            Backend::Sqlite { .. } => None,
        }
    }

    /// What warms the provider's connections for a runtime's slots
    /// (`history_tail/warm.rs`).
    pub(crate) fn warmer(&self) -> Option<history_tail::Warmer> {
        match self {
            Backend::Postgres { warmer, .. } => warmer.clone(),
            Backend::Sqlite { .. } => None,
        }
    }

    /// The pool and schema of a Postgres store, the first time it is asked
    /// for this provider; `None` afterwards and on SQLite.
    pub(crate) fn first_schema_check(&self) -> Option<(PgPool, String)> {
        match self {
            Backend::Postgres {
                schemas_checked, ..
            } if !schemas_checked.swap(true, Ordering::Relaxed) => self.postgres(),
            _ => None,
        }
    }

    /// The check `first_schema_check` allowed could not look; the next
    /// runtime's start may.
    pub(crate) fn schema_check_failed(&self) {
        if let Backend::Postgres {
            schemas_checked, ..
        } = self
        {
            schemas_checked.store(false, Ordering::Relaxed);
        }
    }
}

/// A connected storage backend, shareable by any number of runtimes and clients.
#[napi]
pub struct NativeProvider {
    inner: Arc<dyn Provider>,
    backend: Backend,
    local: Arc<local::LocalRuntimes>,
    endings: Arc<wakeup::ended::Endings>,
}

impl NativeProvider {
    /// `store` (under its retry layer) with the wake-up layer on top when
    /// the provider's fast paths are on; without, dispatchers poll the
    /// store as the crate's do.
    pub(crate) fn with_wakeups(
        store: Arc<dyn Provider>,
        backend: Backend,
        options: wakeup::WakeupOptions,
    ) -> Self {
        let endings = Arc::<wakeup::ended::Endings>::default();
        let inner = if backend.fast_paths().enabled() {
            backend.fast_paths().active(FastPath::Wakeups);
            wakeup::with_wakeups(store, &backend, endings.clone(), options)
        } else {
            store
        };
        Self {
            inner,
            backend,
            local: Arc::default(),
            endings,
        }
    }

    /// Clients of this process waiting on instances to end.
    pub(crate) fn endings(&self) -> Arc<wakeup::ended::Endings> {
        self.endings.clone()
    }

    pub(crate) fn provider(&self) -> Arc<dyn Provider> {
        self.inner.clone()
    }

    pub(crate) fn backend(&self) -> &Backend {
        &self.backend
    }

    pub(crate) fn local(&self) -> Arc<local::LocalRuntimes> {
        self.local.clone()
    }
}

#[napi]
impl NativeProvider {
    /// `'sqlite'` or `'postgres'`.
    #[napi(getter)]
    pub fn kind(&self) -> String {
        match self.backend {
            Backend::Sqlite { .. } => "sqlite",
            Backend::Postgres { .. } => "postgres",
        }
        .to_string()
    }

    /// `{ enabled, active, unavailable }`: which of the fast store paths
    /// this provider uses (`docs/fast-paths.md`).
    #[napi]
    pub fn fast_paths(&self) -> FastPathsReport {
        self.backend.fast_paths().report()
    }
}
