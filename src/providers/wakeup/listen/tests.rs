//! Notification payloads: what is announced, sent, heard and applied.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use super::{channel_of, parse, Announcer, Outbox, Pending};
use crate::providers::scratch::database_url as url;
use crate::providers::wakeup::{epoch_ms_now, Queue, Wakeups};

fn announcer() -> Announcer {
    Announcer {
        outbox: Arc::new(Outbox {
            pending: Mutex::new(Pending::default()),
            ready: Notify::new(),
            peers: Default::default(),
        }),
    }
}

fn wakeups() -> Wakeups {
    Wakeups {
        orchestrator: Default::default(),
        worker: Default::default(),
        fallback: Duration::from_secs(1),
        skip_covered: true,
    }
}

/// What `announcer` would send, as another process hears it.
fn heard(announcer: &Announcer) -> Pending {
    let sent = std::mem::take(&mut *announcer.outbox.pending.lock().unwrap());
    parse(&sent.payload(7), 1).expect("not our own")
}

/// The due times each queue's waiters would wake for: (orchestrator, worker).
fn due_of(w: &Wakeups) -> (bool, bool) {
    (
        w.orchestrator.next_due().is_some(),
        w.worker.next_due().is_some(),
    )
}

#[test]
fn a_due_time_reaches_the_queue_it_was_announced_for() {
    let later = epoch_ms_now() + 60_000;
    let a = announcer();
    a.announce(Queue::Worker, Some(later));
    let w = wakeups();
    heard(&a).apply(&w);
    assert_eq!(due_of(&w), (false, true), "a delayed worker abandon");

    a.announce(Queue::Orchestrator, Some(later));
    let w = wakeups();
    heard(&a).apply(&w);
    assert_eq!(due_of(&w), (true, false), "a timer");
}

#[test]
fn a_batch_keeps_the_earliest_due_time_of_each_queue() {
    let a = announcer();
    a.announce(Queue::Worker, Some(300));
    a.announce(Queue::Orchestrator, Some(500));
    a.announce(Queue::Worker, Some(200));
    a.announce(Queue::Orchestrator, None);
    let sent = std::mem::take(&mut *a.outbox.pending.lock().unwrap());
    assert_eq!(sent.payload(7), "7 o 500 200");
    assert_eq!(parse("7 o 500 200", 1), Some(sent));
}

#[test]
fn payloads_name_queues_and_due_times_and_own_ones_are_ignored() {
    let p = |o, w, od, wd| Pending {
        orchestrator: o,
        worker: w,
        orchestrator_due: od,
        worker_due: wd,
        presence: false,
    };
    assert_eq!(parse("7 o 0 0", 1), Some(p(true, false, None, None)));
    assert_eq!(parse("7 ow 0 0", 1), Some(p(true, true, None, None)));
    assert_eq!(
        parse("7 - 0 1700000000000", 1),
        Some(p(false, false, None, Some(1700000000000)))
    );
    assert_eq!(parse("1 ow 0 0", 1), None);
}

/// A presence alone reads as nothing to wake, in this version and in the
/// ones before it (which parse the same four fields).
#[test]
fn a_presence_wakes_nothing() {
    let presence = Pending {
        presence: true,
        ..Pending::default()
    };
    assert_eq!(presence.payload(7), "7 - 0 0");
    assert_eq!(parse("7 - 0 0", 1), Some(Pending::default()));
}

#[test]
fn payloads_of_older_processes_or_not_understood_wake_more_never_less() {
    let p = |o, w, od, wd| Pending {
        orchestrator: o,
        worker: w,
        orchestrator_due: od,
        worker_due: wd,
        presence: false,
    };
    let everything = Some(p(true, true, None, None));
    // The format before due times named their queue: either queue's.
    assert_eq!(
        parse("7 - 1700000000000", 1),
        Some(p(false, false, Some(1700000000000), Some(1700000000000)))
    );
    assert_eq!(parse("7 w 0", 1), Some(p(false, true, None, None)));
    assert_eq!(parse("1 w 0", 1), None, "our own, in the old format");
    for garbage in [
        "garbage",
        "",
        "7",
        "7 ow",
        "7 x 0 0",
        "7 o soon 0",
        "7 o 0 0 0",
    ] {
        assert_eq!(parse(garbage, 1), everything, "{garbage:?}");
    }
    let w = wakeups();
    parse("7 - 1700000000000", 1).unwrap().apply(&w);
    assert_eq!(due_of(&w), (true, true));
}

#[test]
fn channel_names_fit_an_identifier() {
    assert_eq!(channel_of("s1"), "duroxide_wakeup.s1");
    assert_eq!(channel_of(&"x".repeat(63)).len(), 63);
}

/// What is sent on a schema's channel, as a process that only listens
/// (and so is nobody's peer) hears it.
struct Observer {
    heard: tokio::sync::mpsc::UnboundedReceiver<String>,
}

impl Observer {
    async fn on(schema: &str) -> Self {
        let mut listener = sqlx::postgres::PgListener::connect(&url()).await.unwrap();
        listener.listen(&channel_of(schema)).await.unwrap();
        let (tx, heard) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok(n) = listener.recv().await {
                if tx.send(n.payload().to_string()).is_err() {
                    return;
                }
            }
        });
        Self { heard }
    }

    /// The first payload within `within` that `wanted` accepts.
    async fn first(&mut self, within: Duration, wanted: impl Fn(&str) -> bool) -> Option<String> {
        tokio::time::timeout(within, async {
            loop {
                let p = self.heard.recv().await?;
                if wanted(&p) {
                    return Some(p);
                }
            }
        })
        .await
        .ok()
        .flatten()
    }
}

/// `who` (sender `id`) announces `queue`; what the observer hears of it
/// within `within`.
async fn announced(
    observer: &mut Observer,
    who: &Announcer,
    id: u64,
    queue: Queue,
    within: Duration,
) -> Option<String> {
    let q = match queue {
        Queue::Orchestrator => 'o',
        Queue::Worker => 'w',
    };
    who.announce(queue, None);
    observer
        .first(within, |p| p.starts_with(&format!("{id} {q}")))
        .await
}

/// How long an announcement that should not go out is waited for.
const SILENCE: Duration = Duration::from_millis(700);

/// `who` (sender `id`) announces the orchestrator queue; whether nothing
/// of it is heard within [`SILENCE`].
async fn says_nothing(observer: &mut Observer, who: &Announcer, id: u64) -> bool {
    announced(observer, who, id, Queue::Orchestrator, SILENCE)
        .await
        .is_none()
}

/// A provider of a process on `schema` whose LISTEN has started, and its
/// sender id as its presence shows it.
async fn listening_process(
    schema: &str,
    observer: &mut Observer,
    known: &[u64],
) -> (Announcer, super::Listening, Arc<Wakeups>, u64) {
    let pool = sqlx::PgPool::connect(&url()).await.unwrap();
    let (announcer, listening) = super::start(pool, schema);
    let shared = Arc::new(wakeups());
    listening.ensure_started(&shared);
    let presence =
        |p: &str| p.ends_with(" - 0 0") && !known.iter().any(|k| p.starts_with(&format!("{k} ")));
    let said = observer
        .first(Duration::from_secs(10), presence)
        .await
        .expect("no presence once its LISTEN started");
    (
        announcer,
        listening,
        shared,
        super::sender_of(&said).unwrap(),
    )
}

/// Past the grace after LISTEN starts (`peers.rs`).
const PAST_GRACE: Duration = Duration::from_millis(400);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_alone_on_its_schema_announces_nothing() {
    let schema = format!("peers_alone_{}", std::process::id());
    let mut observer = Observer::on(&schema).await;
    let (a, _l, _w, id) = listening_process(&schema, &mut observer, &[]).await;
    tokio::time::sleep(PAST_GRACE).await;
    assert!(
        says_nothing(&mut observer, &a, id).await,
        "announced with nobody else listening"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_alone_when_its_listen_starts_announces_nothing_from_then_on() {
    let schema = format!("peers_census_alone_{}", std::process::id());
    let mut observer = Observer::on(&schema).await;
    let (a, _l, _w, id) = listening_process(&schema, &mut observer, &[]).await;
    // Right after its presence, well within the grace a process waits
    // through when another one listened as it started.
    assert!(
        says_nothing(&mut observer, &a, id).await,
        "announced though nobody else listened"
    );
}

/// A session that holds a listener's lock on `schema`'s channel and never
/// replies: a peer whose reply has not arrived yet.
async fn silent_listener(schema: &str) -> sqlx::PgConnection {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(&url()).await.unwrap();
    sqlx::query("SELECT pg_advisory_lock_shared($1, hashtext($2))")
        .bind(super::census::CLASS)
        .bind(channel_of(schema))
        .execute(&mut conn)
        .await
        .unwrap();
    conn
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_that_finds_another_listener_announces_through_the_grace() {
    let schema = format!("peers_census_other_{}", std::process::id());
    let mut observer = Observer::on(&schema).await;
    let _peer = silent_listener(&schema).await;
    let (a, _l, _w, id) = listening_process(&schema, &mut observer, &[]).await;
    let sent = announced(&mut observer, &a, id, Queue::Worker, Duration::from_secs(5)).await;
    assert!(
        sent.is_some(),
        "did not announce with another listener's lock held"
    );
    // No reply came, so after the grace it is alone again.
    tokio::time::sleep(PAST_GRACE).await;
    assert!(
        says_nothing(&mut observer, &a, id).await,
        "announced after the grace with nobody heard"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_announce_to_each_other_once_both_listen_on_a_schema() {
    let schema = format!("peers_two_{}", std::process::id());
    let mut observer = Observer::on(&schema).await;
    let (a, _la, _wa, a_id) = listening_process(&schema, &mut observer, &[]).await;
    tokio::time::sleep(PAST_GRACE).await;
    // The second process starts after the first one's presence: the first
    // learns of it from its presence, and it of the first from the reply.
    let (b, _lb, _wb, b_id) = listening_process(&schema, &mut observer, &[a_id]).await;
    tokio::time::sleep(PAST_GRACE).await;
    // The newcomer first: an announcement of the other would teach it too.
    for (who, id, queue) in [(&b, b_id, Queue::Worker), (&a, a_id, Queue::Orchestrator)] {
        let sent = announced(&mut observer, who, id, queue, Duration::from_secs(5)).await;
        assert!(
            sent.is_some(),
            "process {id} did not announce with another one listening"
        );
    }
}
