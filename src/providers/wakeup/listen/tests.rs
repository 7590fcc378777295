//! Notification payloads: what is announced, sent, heard and applied.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use super::{channel_of, parse, Announcer, Outbox, Pending};
use crate::providers::wakeup::{epoch_ms_now, Queue, Wakeups};

fn announcer() -> Announcer {
    Announcer {
        outbox: Arc::new(Outbox {
            pending: Mutex::new(Pending::default()),
            ready: Notify::new(),
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
    };
    assert_eq!(parse("7 o 0 0", 1), Some(p(true, false, None, None)));
    assert_eq!(parse("7 ow 0 0", 1), Some(p(true, true, None, None)));
    assert_eq!(
        parse("7 - 0 1700000000000", 1),
        Some(p(false, false, None, Some(1700000000000)))
    );
    assert_eq!(parse("1 ow 0 0", 1), None);
}

#[test]
fn payloads_of_older_processes_or_not_understood_wake_more_never_less() {
    let p = |o, w, od, wd| Pending {
        orchestrator: o,
        worker: w,
        orchestrator_due: od,
        worker_due: wd,
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
