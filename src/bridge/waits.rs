//! What a typed `ctx.waitFor(event)` subscribes to.
//!
//! A typed wait takes its event from the instance's mailbox for the event's
//! name (duroxide's queue, `dequeue_event`): `client.raise` puts the event
//! there, where it stays, in order and across continue-as-new, until a wait
//! takes it. An event raised before the instance waits is therefore kept,
//! where a one-shot `schedule_wait` would drop it.
//!
//! Histories written before typed waits used the mailbox recorded them as
//! one-shot waits (`ExternalSubscribed`). Replay matches the actions of the
//! code to the history's events in order, so a typed wait the history already
//! recorded must be issued again as what was recorded. Matching in order
//! means that the k-th subscription named N the code makes (typed or
//! string-named, one-shot or mailbox) is the k-th subscription event named N
//! in the history. So a turn counts the subscriptions it makes per name, and
//! a typed wait at a position the history recorded as one-shot is one-shot
//! again; every other typed wait (recorded as a mailbox wait, or new) uses
//! the mailbox. An execution that never recorded a one-shot wait uses the
//! mailbox throughout and keeps no record here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use duroxide::{Event, EventKind};

/// Per name, the kind of each subscription event in history order: `true`
/// for a one-shot wait (`ExternalSubscribed`), `false` for a mailbox wait.
pub(crate) type Subscriptions = HashMap<String, Vec<bool>>;

/// The subscriptions of the histories a runtime fetched, for the turns it
/// runs on them: by instance, with the execution they belong to. Only
/// histories with a one-shot wait are kept; the others need no record.
#[derive(Default)]
pub(crate) struct RecordedWaits {
    by_instance: Mutex<HashMap<String, (u64, Arc<Subscriptions>)>>,
}

/// The subscriptions of `history`, if any of them is a one-shot wait (a
/// look at every fetched history, so the common case allocates nothing).
fn subscriptions(history: &[Event]) -> Option<Subscriptions> {
    if !history
        .iter()
        .any(|e| matches!(e.kind, EventKind::ExternalSubscribed { .. }))
    {
        return None;
    }
    let mut subs = Subscriptions::new();
    for event in history {
        match &event.kind {
            EventKind::ExternalSubscribed { name } => {
                subs.entry(name.clone()).or_default().push(true);
            }
            EventKind::QueueSubscribed { name } => {
                subs.entry(name.clone()).or_default().push(false);
            }
            _ => {}
        }
    }
    Some(subs)
}

impl RecordedWaits {
    /// The history of `instance` that its next turn replays.
    pub(crate) fn note(&self, instance: &str, history: &[Event]) {
        let recorded = history.first().zip(subscriptions(history));
        let mut map = self.by_instance.lock().expect("recorded waits");
        match recorded {
            Some((first, subs)) => {
                map.insert(instance.to_string(), (first.execution_id, Arc::new(subs)));
            }
            None => {
                map.remove(instance);
            }
        }
    }

    /// The turn of `instance` is over.
    pub(crate) fn forget(&self, instance: &str) {
        self.by_instance
            .lock()
            .expect("recorded waits")
            .remove(instance);
    }

    /// The waits a turn of this execution replays.
    pub(crate) fn turn(&self, instance: &str, execution: u64) -> TurnWaits {
        let recorded = self
            .by_instance
            .lock()
            .expect("recorded waits")
            .get(instance)
            .filter(|(e, _)| *e == execution)
            .map(|(_, subs)| subs.clone());
        TurnWaits {
            recorded,
            made: Mutex::default(),
        }
    }
}

/// One turn's view: what its history recorded and what it subscribed so far.
#[derive(Default)]
pub(crate) struct TurnWaits {
    recorded: Option<Arc<Subscriptions>>,
    /// Subscriptions made in this turn, per name (only counted when a
    /// one-shot wait was recorded: otherwise every typed wait is a mailbox wait).
    made: Mutex<HashMap<String, usize>>,
}

impl TurnWaits {
    /// Notes a subscription to `name`; for a typed wait, whether it is one-shot.
    pub(crate) fn subscribe(&self, name: &str) -> bool {
        let Some(recorded) = &self.recorded else {
            return false;
        };
        let mut made = self.made.lock().expect("turn waits");
        let k = made.entry(name.to_string()).or_default();
        let one_shot = recorded
            .get(name)
            .and_then(|kinds| kinds.get(*k))
            .copied()
            .unwrap_or(false);
        *k += 1;
        one_shot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventKind) -> Event {
        Event::with_event_id(1, "i".to_string(), 3, None, kind)
    }

    #[test]
    fn recorded_one_shot_positions_stay_one_shot_and_the_rest_use_the_mailbox() {
        let waits = RecordedWaits::default();
        waits.note(
            "i",
            &[
                event(EventKind::ExternalSubscribed { name: "go".into() }),
                event(EventKind::QueueSubscribed { name: "go".into() }),
                event(EventKind::ExternalSubscribed {
                    name: "other".into(),
                }),
            ],
        );
        let turn = waits.turn("i", 3);
        assert!(turn.subscribe("go"));
        assert!(!turn.subscribe("go"));
        assert!(!turn.subscribe("go"), "beyond the history: the mailbox");
        assert!(turn.subscribe("other"));
        // Another execution of the instance has its own history.
        assert!(!waits.turn("i", 4).subscribe("go"));
        waits.forget("i");
        assert!(!waits.turn("i", 3).subscribe("go"));
    }

    #[test]
    fn histories_without_one_shot_waits_are_not_kept() {
        let waits = RecordedWaits::default();
        waits.note(
            "i",
            &[event(EventKind::ExternalSubscribed { name: "go".into() })],
        );
        waits.note(
            "i",
            &[event(EventKind::QueueSubscribed { name: "go".into() })],
        );
        assert!(waits.by_instance.lock().unwrap().is_empty());
    }
}
