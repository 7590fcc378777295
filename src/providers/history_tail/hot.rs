//! The connection the layer's last call used, kept for its next call for a
//! moment.
//!
//! sqlx hands out idle connections oldest first, and pings each one it
//! hands out. A chain's steps are sequential, so its calls went round the
//! whole pool: every server backend's caches stayed cold, a new process paid
//! each backend's first calls of every function (plpgsql compiles a function
//! per backend), and every call paid a ping's round trip first. Measured
//! on one chain of 100 steps with duroxide-pg's pool at 5 against 2: 365
//! against 285 ms in a new process, 272 against 238 ms once warm. Here the
//! layer's calls (the tail fetch and the acks that carry a fetch) take the
//! connection the last one gave back if it is at most [`LINGER`] old; after
//! that it goes back to the pool. Other calls wait at most that long for
//! it, so it is kept only when the pool has at least [`MIN_POOL`]
//! connections.
//!
//! `DUROXIDE_NODE_HOT_CONNECTION=off`, read when the provider connects,
//! leaves every call to the pool (for comparisons).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::QueryAs;
use sqlx::{FromRow, PgPool, Postgres};

/// How long a connection waits for the layer's next call.
pub(super) const LINGER: Duration = Duration::from_millis(10);

/// The smallest pool a connection is kept back from.
const MIN_POOL: u32 = 3;

type Kept = Arc<Mutex<Slot>>;

/// The kept connection and when it was given back, and the runtime whose
/// context dropping it needs.
struct Slot {
    conn: Option<(PoolConnection<Postgres>, Instant)>,
    /// A task will return the connection once it is stale (one task per
    /// stretch of calls, not one per call).
    sweeping: bool,
    runtime: tokio::runtime::Handle,
}

/// A pooled connection goes back to its pool from a task sqlx spawns, which
/// panics outside a Tokio runtime's context; the last owner of the slot may
/// be a JS finalizer (the provider collected, or Node exiting).
impl Drop for Slot {
    fn drop(&mut self) {
        if let Some((conn, _)) = self.conn.take() {
            let _context = tokio::runtime::Handle::try_current()
                .is_err()
                .then(|| self.runtime.enter());
            drop(conn);
        }
    }
}

pub(super) struct HotConnection {
    pool: PgPool,
    kept: Option<Kept>,
}

impl HotConnection {
    pub(super) fn new(pool: PgPool) -> Self {
        let on = std::env::var("DUROXIDE_NODE_HOT_CONNECTION").as_deref() != Ok("off")
            && pool.options().get_max_connections() >= MIN_POOL;
        Self {
            pool,
            kept: on.then(|| {
                Arc::new(Mutex::new(Slot {
                    conn: None,
                    sweeping: false,
                    runtime: tokio::runtime::Handle::current(),
                }))
            }),
        }
    }

    /// Runs `query` on the kept connection if it is fresh, else on one from
    /// the pool, and keeps that connection if the query succeeded.
    pub(super) async fn fetch_optional<'q, O>(
        &self,
        query: QueryAs<'q, Postgres, O, PgArguments>,
    ) -> Result<Option<O>, sqlx::Error>
    where
        O: Send + Unpin + for<'r> FromRow<'r, PgRow>,
    {
        let mut conn = self.take().await?;
        let row = query.fetch_optional(&mut *conn).await;
        if row.is_ok() {
            self.give_back(conn);
        }
        row
    }

    /// The kept connection if it is fresh, else one from the pool.
    async fn take(&self) -> Result<PoolConnection<Postgres>, sqlx::Error> {
        let kept = self.kept.as_ref().and_then(take_fresh);
        match kept {
            Some(conn) => Ok(conn),
            None => self.pool.acquire().await,
        }
    }

    /// Keeps `conn` (after a call that succeeded) for [`LINGER`].
    fn give_back(&self, conn: PoolConnection<Postgres>) {
        let Some(kept) = &self.kept else {
            return;
        };
        let (older, sweep) = {
            let mut slot = kept.lock().expect("hot connection");
            let older = slot.conn.replace((conn, Instant::now()));
            (older, !std::mem::replace(&mut slot.sweeping, true))
        };
        drop(older);
        if sweep {
            tokio::spawn(sweep_when_stale(kept.clone()));
        }
    }
}

/// Returns the kept connection to the pool once it was not taken for
/// [`LINGER`], waiting again while calls keep giving it back.
async fn sweep_when_stale(kept: Kept) {
    let mut wait = LINGER;
    let stale = loop {
        tokio::time::sleep(wait).await;
        let mut slot = kept.lock().expect("hot connection");
        let left = match &slot.conn {
            Some((_, at)) => LINGER.saturating_sub(at.elapsed()),
            None => Duration::ZERO,
        };
        if left.is_zero() {
            slot.sweeping = false;
            break slot.conn.take();
        }
        wait = left;
    };
    drop(stale);
}

fn take_fresh(kept: &Kept) -> Option<PoolConnection<Postgres>> {
    let (conn, at) = kept.lock().expect("hot connection").conn.take()?;
    (at.elapsed() < LINGER).then_some(conn)
}

#[cfg(test)]
mod tests;
