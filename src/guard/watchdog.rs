//! The livelock watchdog: every `watchdogIntervalMs` it looks for messages
//! that are retried without ever committing, and reports each instance once
//! (an error-level log line and a `livelock` event). It only reads; it never
//! deletes or rewrites anything.
//!
//! Signatures:
//! - a message fetched more than `maxAttempts + 1` times: the runtime poisons
//!   at `maxAttempts + 1`, so even the poison ack failed. Seen in the queue
//!   tables on Postgres, and in what this runtime fetched on any store;
//! - at least `LOSS_THRESHOLD` acks of one instance failing with "Invalid lock
//!   token" within `LOSS_WINDOW` (in-process, any store).

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::events::RuntimeEventType;
use super::{pg, Guard, Queue, LOSS_THRESHOLD, LOSS_WINDOW};

pub(crate) struct Watchdog {
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

impl Watchdog {
    /// Holds the guard weakly: the guard owns the watchdog, and a runtime
    /// dropped without shutdown must not be kept alive by its own watchdog.
    pub(crate) fn start(guard: &Arc<Guard>, interval: Duration) -> Self {
        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        let postgres = guard.backend.postgres();
        let guard = Arc::downgrade(guard);
        let task = tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticker.tick().await;
            loop {
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = ticker.tick() => {}
                }
                let Some(guard) = guard.upgrade() else { break };
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = check(&guard, postgres.as_ref()) => {}
                }
            }
        });
        Self { cancel, task }
    }

    pub(crate) async fn stop(self) {
        self.cancel.cancel();
        let _ = self.task.await;
    }
}

const OVER_ATTEMPTS_CAUSE: &str = "its message was fetched more than maxAttempts + 1 times, so even \
    the poison ack failed. Acks keep failing: usually the lease (orchestratorLockTimeoutMs) expires \
    before the ack commits (slow turns, a blocked event loop, or acks queued behind the Postgres \
    fetch convoy), or the store rejects the ack. Look for 'Invalid lock token' and ack errors for \
    this instance";

const LOCK_LOSS_CAUSE: &str =
    "its acks keep failing with 'Invalid lock token': each turn outlives \
    its lease (orchestratorLockTimeoutMs) before it commits. Check for turns that block (long \
    synchronous work in an orchestration), a blocked event loop, or fetch/ack queueing on Postgres";

/// One pass; reports each instance at most once per runtime.
async fn check(guard: &Guard, postgres: Option<&(sqlx::PgPool, String)>) {
    let threshold = guard.max_attempts.saturating_add(1);
    let mut seen: Vec<(String, u32, Queue, &str)> = guard
        .take_over_attempts()
        .into_iter()
        .map(|(i, a, q)| (i, a, q, OVER_ATTEMPTS_CAUSE))
        .collect();
    if let Some((pool, schema)) = postgres {
        match pg::over_attempts(pool, schema, threshold).await {
            Ok(rows) => seen.extend(
                rows.into_iter()
                    .map(|r| (r.instance, r.attempt, r.queue, OVER_ATTEMPTS_CAUSE)),
            ),
            Err(e) => {
                tracing::debug!(target: "duroxide_node::guard", error = %e, "watchdog query failed")
            }
        }
    }
    for (instance, _losses, attempt) in guard
        .stats
        .sustained_lock_losses(LOSS_THRESHOLD, LOSS_WINDOW)
    {
        seen.push((instance, attempt, Queue::Orchestrator, LOCK_LOSS_CAUSE));
    }
    for (instance, attempt, queue, cause) in seen {
        let first = guard
            .events
            .first_time(RuntimeEventType::Livelock, &instance);
        guard.stats.livelock_seen(&instance, attempt, first);
        if first {
            guard.emit(
                RuntimeEventType::Livelock,
                &instance,
                queue,
                Some(attempt),
                cause,
            );
        }
    }
}
