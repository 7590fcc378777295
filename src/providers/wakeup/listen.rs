//! Wake-ups across processes on Postgres: after an enqueue, ack or abandon
//! commits, the layer sends `pg_notify` on the schema's channel; one LISTEN
//! connection per provider receives the other processes' notifications.
//!
//! - Sending is batched: announcements made while a `pg_notify` is in flight
//!   go out together in the next one, so a busy process sends far fewer
//!   notifications than it commits calls.
//! - The payload is `<sender> <queues> <due epoch ms or 0>`, `queues` being
//!   `o` (orchestrator) and/or `w` (worker). A process ignores its own.
//! - The listening connection is opened by the provider's first fetch: a
//!   process that only runs clients (the CLI) never opens it, and never races
//!   its own exit with a connect.
//! - The listening connection is its own (a pool of one with the provider's
//!   connect options, `application_name` `duroxide_node_wakeup`), so it never
//!   takes a slot of the provider's pool. If it
//!   drops, it reconnects; what was announced meanwhile is found by the
//!   fallback tick, and by the look every waiter takes after a reconnect.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use sqlx::postgres::{PgListener, PgPoolOptions};
use sqlx::PgPool;
use tokio::sync::Notify;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{Queue, Reach, Wakeups};

/// How the listening connection shows in `pg_stat_activity`.
const LISTEN_APPLICATION_NAME: &str = "duroxide_node_wakeup";

#[derive(Default)]
struct Pending {
    orchestrator: bool,
    worker: bool,
    due_ms: Option<u64>,
}

struct Outbox {
    pending: Mutex<Pending>,
    ready: Notify,
}

/// Sends this provider's announcements.
pub(super) struct Announcer {
    outbox: Arc<Outbox>,
}

impl Announcer {
    /// Tells other processes that `queue` has work, now or at `due_ms`.
    pub(super) fn announce(&self, queue: Queue, due_ms: Option<u64>) {
        let mut p = self.outbox.pending.lock().expect("wake-up outbox");
        match (queue, due_ms) {
            (Queue::Orchestrator, None) => p.orchestrator = true,
            (Queue::Worker, None) => p.worker = true,
            // Only orchestrator messages are announced with a due time
            // (timers); the earliest one of a batch is kept, later ones are
            // found by the fallback tick.
            (_, Some(at)) => p.due_ms = Some(p.due_ms.map_or(at, |d| d.min(at))),
        }
        drop(p);
        self.outbox.ready.notify_one();
    }
}

/// The LISTEN half, started by the first fetch (so a process that only runs
/// clients, such as the CLI, never opens the connection), ended with the
/// provider along with the sending task.
pub(super) struct Listening {
    pool: PgPool,
    channel: String,
    sender: u64,
    started: std::sync::Once,
    stop: CancellationToken,
    _stop: DropGuard,
}

impl Listening {
    pub(super) fn ensure_started(&self, shared: &Arc<Wakeups>) {
        self.started.call_once(|| {
            let listen_pool = PgPoolOptions::new().max_connections(1).connect_lazy_with(
                (*self.pool.connect_options())
                    .clone()
                    .application_name(LISTEN_APPLICATION_NAME),
            );
            tokio::spawn(listen(
                listen_pool,
                self.channel.clone(),
                self.sender,
                Arc::downgrade(shared),
                self.stop.clone(),
            ));
        });
    }
}

fn channel_of(schema: &str) -> String {
    let mut channel = format!("duroxide_wakeup.{schema}");
    // Postgres channel names are identifiers: at most 63 bytes (ASCII here).
    channel.truncate(63);
    channel
}

pub(super) fn start(pool: PgPool, schema: &str) -> (Announcer, Listening) {
    let channel = channel_of(schema);
    let sender: u64 = rand_id();
    let stop = CancellationToken::new();
    let outbox = Arc::new(Outbox {
        pending: Mutex::new(Pending::default()),
        ready: Notify::new(),
    });
    tokio::spawn(send(
        pool.clone(),
        channel.clone(),
        sender,
        outbox.clone(),
        stop.clone(),
    ));
    (
        Announcer { outbox },
        Listening {
            pool,
            channel,
            sender,
            started: std::sync::Once::new(),
            stop: stop.clone(),
            _stop: stop.drop_guard(),
        },
    )
}

fn rand_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish()
}

async fn send(
    pool: PgPool,
    channel: String,
    sender: u64,
    outbox: Arc<Outbox>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = outbox.ready.notified() => {}
        }
        let p = std::mem::take(&mut *outbox.pending.lock().expect("wake-up outbox"));
        if !(p.orchestrator || p.worker || p.due_ms.is_some()) {
            continue;
        }
        let mut queues = String::new();
        if p.orchestrator {
            queues.push('o');
        }
        if p.worker {
            queues.push('w');
        }
        if queues.is_empty() {
            queues.push('-');
        }
        let payload = format!("{sender} {queues} {}", p.due_ms.unwrap_or(0));
        let sent = sqlx::query("SELECT pg_notify($1, $2)")
            .bind(&channel)
            .bind(&payload)
            .execute(&pool)
            .await;
        if let Err(e) = sent {
            // The fallback tick finds what this would have announced.
            tracing::debug!(target: "duroxide_node::wakeup", error = %e, "pg_notify failed");
        }
    }
}

/// What one notification asks for: `(queues, due epoch ms)`; `None` for our own.
fn parse(payload: &str, own: u64) -> Option<(bool, bool, Option<u64>)> {
    let mut parts = payload.split(' ');
    let sender: u64 = parts.next()?.parse().ok()?;
    if sender == own {
        return None;
    }
    let queues = parts.next().unwrap_or("ow");
    let due = parts
        .next()
        .and_then(|d| d.parse::<u64>().ok())
        .filter(|d| *d > 0);
    Some((queues.contains('o'), queues.contains('w'), due))
}

async fn listen(
    pool: PgPool,
    channel: String,
    own: u64,
    shared: Weak<Wakeups>,
    stop: CancellationToken,
) {
    let pause = Duration::from_secs(1);
    loop {
        let mut listener = match PgListener::connect_with(&pool).await {
            Ok(l) => l,
            Err(e) => {
                tracing::debug!(target: "duroxide_node::wakeup", error = %e, "LISTEN connection failed");
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(pause) => continue,
                }
            }
        };
        if let Err(e) = listener.listen(&channel).await {
            tracing::debug!(target: "duroxide_node::wakeup", error = %e, "LISTEN failed");
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(pause) => continue,
            }
        }
        loop {
            let received = tokio::select! {
                _ = stop.cancelled() => return,
                r = listener.try_recv() => r,
            };
            let Some(wakeups) = shared.upgrade() else {
                return;
            };
            match received {
                // A notification does not say whose items it announces.
                Ok(Some(n)) => {
                    if let Some((orch, work, due)) = parse(n.payload(), own) {
                        if orch {
                            wakeups.wake(Queue::Orchestrator, Reach::Owned);
                        }
                        if work {
                            wakeups.wake(Queue::Worker, Reach::Owned);
                        }
                        if let Some(at) = due {
                            wakeups.due_at_epoch_ms(Queue::Orchestrator, at);
                        }
                    }
                }
                // The connection was lost and is re-established by the next
                // call: whatever was announced meanwhile is unknown, so look.
                Ok(None) => {
                    wakeups.wake(Queue::Orchestrator, Reach::Owned);
                    wakeups.wake(Queue::Worker, Reach::Owned);
                }
                Err(e) => {
                    tracing::debug!(target: "duroxide_node::wakeup", error = %e, "LISTEN connection lost");
                    wakeups.wake(Queue::Orchestrator, Reach::Owned);
                    wakeups.wake(Queue::Worker, Reach::Owned);
                    drop(wakeups);
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::time::sleep(pause) => break,
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{channel_of, parse};

    #[test]
    fn payloads_name_queues_and_due_times_and_own_ones_are_ignored() {
        assert_eq!(parse("7 o 0", 1), Some((true, false, None)));
        assert_eq!(parse("7 ow 0", 1), Some((true, true, None)));
        assert_eq!(
            parse("7 - 1700000000000", 1),
            Some((false, false, Some(1700000000000)))
        );
        assert_eq!(parse("1 ow 0", 1), None);
        assert_eq!(parse("garbage", 1), None);
    }

    #[test]
    fn channel_names_fit_an_identifier() {
        assert_eq!(channel_of("s1"), "duroxide_wakeup.s1");
        assert_eq!(channel_of(&"x".repeat(63)).len(), 63);
    }
}
