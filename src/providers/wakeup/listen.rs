//! Wake-ups across processes on Postgres: after an enqueue, ack or abandon
//! commits, the layer sends `pg_notify` on the schema's channel; one LISTEN
//! connection per provider receives the other processes' notifications.
//!
//! - Sending is batched: announcements made while a `pg_notify` is in flight
//!   go out together in the next one, so a busy process sends far fewer
//!   notifications than it commits calls.
//! - The payload is `<sender> <queues> <orchestrator due> <worker due>`,
//!   `queues` being `o` (orchestrator) and/or `w` (worker) or `-`, a due time
//!   in epoch ms or 0. A process ignores its own. Processes of older versions
//!   sent one due time without its queue (`<sender> <queues> <due>`), and
//!   read the third field only: a payload of that form schedules its due time
//!   on both queues, and one not understood wakes every waiter (during a
//!   rolling upgrade a look too many is better than a tick of latency).
//! - The listening connection is opened by the provider's first fetch: a
//!   process that only runs clients (the CLI) never opens it, and never races
//!   its own exit with a connect.
//! - Announcements go out only while another process may hear them
//!   (`listen/peers.rs`): a process alone on its schema sends its presence
//!   every few seconds and nothing else.
//! - The listening connection is its own (a pool of one with the provider's
//!   connect options, `application_name` `duroxide_node_wakeup`), so it never
//!   takes a slot of the provider's pool. If it
//!   drops, it reconnects; what was announced meanwhile is found by the
//!   fallback tick, and by the look every waiter takes after a reconnect.

mod census;
mod peers;

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use sqlx::postgres::{PgListener, PgPoolOptions};
use sqlx::PgPool;
use tokio::sync::Notify;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::{Queue, Reach, Wakeups};

/// How the listening connection shows in `pg_stat_activity`.
const LISTEN_APPLICATION_NAME: &str = "duroxide_node_wakeup";

/// What is announced in one notification (and what one asks for).
#[derive(Default, Debug, PartialEq, Eq)]
struct Pending {
    orchestrator: bool,
    worker: bool,
    /// The earliest due time of each queue; later ones of a batch are found
    /// by the fallback tick.
    orchestrator_due: Option<u64>,
    worker_due: Option<u64>,
    /// Our presence is owed (`listen/peers.rs`): this goes out even if no
    /// other process is known to listen.
    presence: bool,
}

impl Pending {
    fn is_empty(&self) -> bool {
        *self == Pending::default()
    }

    fn payload(&self, sender: u64) -> String {
        let mut queues = String::new();
        if self.orchestrator {
            queues.push('o');
        }
        if self.worker {
            queues.push('w');
        }
        if queues.is_empty() {
            queues.push('-');
        }
        format!(
            "{sender} {queues} {} {}",
            self.orchestrator_due.unwrap_or(0),
            self.worker_due.unwrap_or(0)
        )
    }

    /// Wakes and schedules what this notification asks for.
    fn apply(&self, wakeups: &Wakeups) {
        // A notification does not say whose items it announces.
        if self.orchestrator {
            wakeups.wake(Queue::Orchestrator, Reach::Owned, None);
        }
        if self.worker {
            wakeups.wake(Queue::Worker, Reach::Owned, None);
        }
        if let Some(at) = self.orchestrator_due {
            wakeups.due_at_epoch_ms(Queue::Orchestrator, at);
        }
        if let Some(at) = self.worker_due {
            wakeups.due_at_epoch_ms(Queue::Worker, at);
        }
    }
}

fn earliest(due: &mut Option<u64>, at: u64) {
    *due = Some(due.map_or(at, |d| d.min(at)));
}

struct Outbox {
    pending: Mutex<Pending>,
    ready: Notify,
    peers: peers::Peers,
}

impl Outbox {
    fn presence(&self) {
        self.pending.lock().expect("wake-up outbox").presence = true;
        self.ready.notify_one();
    }
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
            (Queue::Orchestrator, Some(at)) => earliest(&mut p.orchestrator_due, at),
            (Queue::Worker, Some(at)) => earliest(&mut p.worker_due, at),
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
    outbox: Arc<Outbox>,
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
                self.outbox.clone(),
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
        peers: peers::Peers::default(),
    });
    tokio::spawn(send(
        pool.clone(),
        channel.clone(),
        sender,
        outbox.clone(),
        stop.clone(),
    ));
    (
        Announcer {
            outbox: outbox.clone(),
        },
        Listening {
            pool,
            channel,
            sender,
            outbox,
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
    let mut heartbeat = tokio::time::interval(peers::HEARTBEAT);
    heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = outbox.ready.notified() => {}
            _ = heartbeat.tick() => {
                if outbox.peers.is_listening() {
                    outbox.presence();
                }
            }
        }
        let p = std::mem::take(&mut *outbox.pending.lock().expect("wake-up outbox"));
        if p.is_empty() || !(p.presence || outbox.peers.worth_sending(Instant::now())) {
            continue;
        }
        let payload = p.payload(sender);
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

/// Who sent a notification, if it says so.
fn sender_of(payload: &str) -> Option<u64> {
    payload.split(' ').next()?.parse().ok()
}

/// What one notification asks for; `None` for our own.
fn parse(payload: &str, own: u64) -> Option<Pending> {
    let everything = Pending {
        orchestrator: true,
        worker: true,
        ..Pending::default()
    };
    let parts: Vec<&str> = payload.split(' ').collect();
    let Some(sender) = sender_of(payload) else {
        return Some(everything);
    };
    if sender == own {
        return None;
    }
    let due = |field: &str| field.parse::<u64>().ok().map(|d| (d > 0).then_some(d));
    let queues = |q: &str| {
        (q == "-" || (!q.is_empty() && q.chars().all(|c| c == 'o' || c == 'w')))
            .then(|| (q.contains('o'), q.contains('w')))
    };
    let heard = |q: &str, orchestrator_due: &str, worker_due: &str| {
        let (orchestrator, worker) = queues(q)?;
        Some(Pending {
            orchestrator,
            worker,
            orchestrator_due: due(orchestrator_due)?,
            worker_due: due(worker_due)?,
            presence: false,
        })
    };
    let heard = match parts[1..] {
        [q, o, w] => heard(q, o, w),
        // An older process: its due time may be either queue's.
        [q, d] => heard(q, d, d),
        _ => None,
    };
    Some(heard.unwrap_or(everything))
}

async fn listen(
    pool: PgPool,
    channel: String,
    own: u64,
    outbox: Arc<Outbox>,
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
        let mut deaf = true;
        loop {
            if deaf {
                // Listening (again; after a lost connection the census
                // reconnects first): the others learn of us and reply.
                let others = tokio::select! {
                    _ = stop.cancelled() => return,
                    others = census::others_may_listen(&mut listener, &channel) => others,
                };
                outbox.peers.listening(Instant::now(), others);
                outbox.presence();
                deaf = false;
            }
            let received = tokio::select! {
                _ = stop.cancelled() => return,
                r = listener.try_recv() => r,
            };
            let Some(wakeups) = shared.upgrade() else {
                return;
            };
            match received {
                Ok(Some(n)) => {
                    let sender = sender_of(n.payload()).filter(|s| *s != own);
                    if sender.is_some_and(|s| outbox.peers.heard(s, Instant::now())) {
                        outbox.presence();
                    }
                    if let Some(heard) = parse(n.payload(), own) {
                        heard.apply(&wakeups);
                    }
                }
                // The connection was lost and is re-established by the next
                // call: whatever was announced meanwhile is unknown, so look.
                Ok(None) => {
                    outbox.peers.deaf();
                    deaf = true;
                    wakeups.wake(Queue::Orchestrator, Reach::Owned, None);
                    wakeups.wake(Queue::Worker, Reach::Owned, None);
                }
                Err(e) => {
                    tracing::debug!(target: "duroxide_node::wakeup", error = %e, "LISTEN connection lost");
                    outbox.peers.deaf();
                    wakeups.wake(Queue::Orchestrator, Reach::Owned, None);
                    wakeups.wake(Queue::Worker, Reach::Owned, None);
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
mod tests;
