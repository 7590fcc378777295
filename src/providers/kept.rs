//! Connections kept out of duroxide-pg's pool between the calls that run
//! most (Postgres).
//!
//! sqlx 0.8 pings a connection when its pool hands it out
//! (`test_before_acquire`) and again when it goes back (`return_to_pool`
//! always does), so a call through the pool costs two round trips besides
//! its query: of the 4,037 messages a 200-hello run sent to the server,
//! 2,199 were those pings. And the pool hands out its oldest idle connection
//! first, so sequential calls went round the whole pool and every server
//! backend stayed cold: one chain of 100 steps took 365 ms with a pool of 5
//! against 285 ms with a pool of 2.
//!
//! The calls that run through here (the tail fetch and the acks that fetch,
//! `history_tail/`; the crate's acks and enqueues, `kept_calls.rs`; client
//! status reads) take the connection given back most recently, if that was
//! at most [`LINGER`] ago, and keep theirs after a call that succeeded. A
//! connection goes back to the pool once no call took it for [`LINGER`], so
//! an idle provider holds nothing. At most the pool's size less one are
//! kept, so the crate's other calls (lock renewals, abandons, management)
//! always find the pool with a connection; a pool smaller than
//! [`MIN_POOL`] keeps nothing.
//!
//! A connection given back while one of these calls waits for the pool
//! goes to the pool, where that call gets it. Kept, it would go to the next
//! call to arrive instead, and under steady load a waiting call got one only
//! once calls paused for [`LINGER`]: in a run of 200 hellos on a pool of 5,
//! dozens of calls (client starts among them) waited 5 to 90 ms.
//!
//! A provider keeps its connections in two lanes over its one pool
//! ([`Lanes`]): the runtime's calls (fetches and acks) in one, the
//! client's (starts, other enqueues, status reads) in the other, which keeps
//! one connection. A client start is what an application waits on, and in
//! one lane it took whatever connection a dispatcher had just given back,
//! so it queued on the server behind the backends doing the runtime's
//! work: 200 hello orchestrations started one after another took 581 ms
//! in one lane against 557 ms with the client lane (medians of 10
//! alternating runs, pool of 5, on a busy host; 509 against 463 ms in 6 runs
//! of a first version). A pool too small for both lanes
//! ([`MIN_POOL_FOR_LANES`]) has one lane for both.
//!
//! The runtime's lane gives its connections to waiting client calls as to
//! its own, but the client's lane keeps its one connection while runtime
//! calls wait. It gave it to them at first, and under load that was most
//! of the time: in a run of 200 hellos on a pool of 5, 75 of the 193
//! starts traced took their connection from the pool (two pings each, and
//! a wait behind the dispatchers when the pool was empty). Keeping it, no
//! start did, and the 200 hellos took 375–417 ms (median 397) against
//! 395–437 ms (median 426), eight alternating runs each.
//!
//! With the provider's `fastPaths: false` (or a pool smaller than
//! [`MIN_POOL`]) nothing is kept: every call goes through the pool.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgArguments, PgQueryResult, PgRow};
use sqlx::query::{Query, QueryAs};
use sqlx::{FromRow, PgPool, Postgres};

/// How long a connection waits for the next call.
pub(crate) const LINGER: Duration = Duration::from_millis(10);

/// The smallest pool connections are kept back from.
pub(crate) const MIN_POOL: u32 = 3;

/// The smallest pool that has a client lane besides the runtime's: each
/// lane keeps at least one connection and one stays in the pool.
const MIN_POOL_FOR_LANES: u32 = 4;

/// The kept connections of one provider, by who waits on the call.
pub(crate) struct Lanes {
    /// Fetches and acks: the runtime's dispatchers.
    pub(crate) runtime: Arc<KeptConnections>,
    /// Starts, enqueues and status reads: the application's client calls.
    /// The runtime's lane itself when the pool is too small for two.
    pub(crate) client: Arc<KeptConnections>,
}

type Kept = Arc<Mutex<Slots>>;

/// The kept connections in the order they were given back, each with when,
/// and the runtime whose context dropping them needs.
struct Slots {
    conns: Vec<(PoolConnection<Postgres>, Instant)>,
    /// A task will return connections once they are stale (one task per
    /// stretch of calls, not one per call).
    sweeping: bool,
    runtime: tokio::runtime::Handle,
}

/// A pooled connection goes back to its pool from a task sqlx spawns, which
/// panics outside a Tokio runtime's context; the last owner of the slots
/// may be a JS finalizer (the provider collected, or Node exiting).
impl Drop for Slots {
    fn drop(&mut self) {
        if !self.conns.is_empty() {
            let _context = tokio::runtime::Handle::try_current()
                .is_err()
                .then(|| self.runtime.enter());
            self.conns.clear();
        }
    }
}

pub(crate) struct KeptConnections {
    pool: PgPool,
    kept: Option<Kept>,
    capacity: usize,
    /// Calls run through here.
    served: AtomicU64,
    /// This lane's calls waiting for the pool now.
    waiting: Arc<AtomicUsize>,
    /// In the runtime's lane, the client lane's [`Self::waiting`]: its
    /// connections go to those calls too. The client's lane gives only to
    /// its own.
    client_waiting: Option<Arc<AtomicUsize>>,
}

/// Counts a call as waiting for the pool while it lives (a call dropped
/// while waiting stops counting).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl KeptConnections {
    /// One lane for every call, keeping up to the pool's size less one.
    #[cfg(test)]
    pub(crate) fn new(pool: PgPool) -> Self {
        let capacity = pool.options().get_max_connections().saturating_sub(1);
        Self::lane(pool, capacity, None, true)
    }

    /// The runtime's lane and the client's over `pool`, keeping up to the
    /// pool's size less one between them; with `keep` false, lanes that
    /// keep nothing.
    pub(crate) fn lanes(pool: PgPool, keep: bool) -> Lanes {
        let max = pool.options().get_max_connections();
        if max < MIN_POOL_FOR_LANES {
            let one = Arc::new(Self::lane(pool, max.saturating_sub(1), None, keep));
            return Lanes {
                runtime: one.clone(),
                client: one,
            };
        }
        let client = Self::lane(pool.clone(), 1, None, keep);
        Lanes {
            runtime: Arc::new(Self::lane(
                pool,
                max - 2,
                Some(client.waiting.clone()),
                keep,
            )),
            client: Arc::new(client),
        }
    }

    fn lane(
        pool: PgPool,
        capacity: u32,
        client_waiting: Option<Arc<AtomicUsize>>,
        keep: bool,
    ) -> Self {
        let on = keep && pool.options().get_max_connections() >= MIN_POOL;
        Self {
            pool,
            kept: on.then(|| {
                Arc::new(Mutex::new(Slots {
                    conns: Vec::new(),
                    sweeping: false,
                    runtime: tokio::runtime::Handle::current(),
                }))
            }),
            capacity: capacity as usize,
            served: AtomicU64::new(0),
            waiting: Arc::default(),
            client_waiting,
        }
    }

    /// Runs `query` on a kept connection if one is fresh, else on one from
    /// the pool, and keeps that connection if the query succeeded.
    pub(crate) async fn fetch_optional<'q, O>(
        &self,
        query: QueryAs<'q, Postgres, O, PgArguments>,
    ) -> Result<Option<O>, sqlx::Error>
    where
        O: Send + Unpin + for<'r> FromRow<'r, PgRow>,
    {
        self.fetch_optional_built(|| query).await
    }

    /// [`Self::fetch_optional`] on the query `build` returns once a
    /// connection is in hand, so what the query tells the server (the
    /// histories this process holds) is as recent as can be: built before
    /// a wait for the pool, it told what was held before the wait.
    pub(crate) async fn fetch_optional_built<'q, O>(
        &self,
        build: impl FnOnce() -> QueryAs<'q, Postgres, O, PgArguments>,
    ) -> Result<Option<O>, sqlx::Error>
    where
        O: Send + Unpin + for<'r> FromRow<'r, PgRow>,
    {
        let mut conn = self.take().await?;
        let row = build().fetch_optional(&mut *conn).await;
        if row.is_ok() {
            self.give_back(conn);
        }
        row
    }

    /// [`Self::fetch_optional`] for a statement whose rows are not read.
    pub(crate) async fn execute<'q>(
        &self,
        query: Query<'q, Postgres, PgArguments>,
    ) -> Result<PgQueryResult, sqlx::Error> {
        let mut conn = self.take().await?;
        let done = query.execute(&mut *conn).await;
        if done.is_ok() {
            self.give_back(conn);
        }
        done
    }

    /// The connection given back last if it is fresh, else one from the pool.
    async fn take(&self) -> Result<PoolConnection<Postgres>, sqlx::Error> {
        self.served.fetch_add(1, Ordering::Relaxed);
        match self.kept.as_ref().and_then(take_fresh) {
            Some(conn) => Ok(conn),
            None => {
                let _waiting = Waiting::new(&self.waiting);
                self.pool.acquire().await
            }
        }
    }

    /// Keeps `conn` (after a call that succeeded) for [`LINGER`]; with as
    /// many kept as may be, the one kept longest goes back to the pool. If
    /// a call of this lane (or, from the runtime's lane, of the client's)
    /// waits for the pool, `conn` goes there instead.
    fn give_back(&self, conn: PoolConnection<Postgres>) {
        let Some(kept) = &self.kept else {
            return;
        };
        let wanted = |w: &AtomicUsize| w.load(Ordering::SeqCst) > 0;
        if wanted(&self.waiting) || self.client_waiting.as_deref().is_some_and(wanted) {
            drop(conn);
            return;
        }
        let (oldest, sweep) = {
            let mut slots = kept.lock().expect("kept connections");
            slots.conns.push((conn, Instant::now()));
            let oldest = (slots.conns.len() > self.capacity).then(|| slots.conns.remove(0));
            (oldest, !std::mem::replace(&mut slots.sweeping, true))
        };
        drop(oldest);
        if sweep {
            tokio::spawn(sweep_when_stale(kept.clone()));
        }
    }

    /// Calls run through here so far.
    #[cfg(test)]
    pub(crate) fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    /// Connections kept now.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.kept
            .as_ref()
            .map_or(0, |k| k.lock().expect("kept connections").conns.len())
    }
}

/// Returns kept connections to the pool once no call took them for
/// [`LINGER`], waiting again while calls keep giving them back.
async fn sweep_when_stale(kept: Kept) {
    let mut wait = LINGER;
    loop {
        tokio::time::sleep(wait).await;
        let (stale, done) = {
            let mut slots = kept.lock().expect("kept connections");
            // Given back in order: the stale ones come first.
            let fresh_from = slots
                .conns
                .iter()
                .position(|(_, at)| at.elapsed() < LINGER)
                .unwrap_or(slots.conns.len());
            let stale: Vec<_> = slots.conns.drain(..fresh_from).collect();
            match slots.conns.first() {
                Some((_, at)) => {
                    wait = LINGER.saturating_sub(at.elapsed());
                    (stale, false)
                }
                None => {
                    slots.sweeping = false;
                    (stale, true)
                }
            }
        };
        drop(stale);
        if done {
            return;
        }
    }
}

/// The connection given back last, if that was within [`LINGER`] (the
/// others were given back before it: none is fresh if it is not).
fn take_fresh(kept: &Kept) -> Option<PoolConnection<Postgres>> {
    let mut slots = kept.lock().expect("kept connections");
    match slots.conns.last() {
        Some((_, at)) if at.elapsed() < LINGER => slots.conns.pop().map(|(conn, _)| conn),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
