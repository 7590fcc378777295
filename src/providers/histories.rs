//! The histories a provider's tail fetches hold: those of instances its
//! turns acked, taken out while a turn holds the instance's lock and put
//! back by its ack, so the next turn's fetch reads only the events after
//! them (Postgres: `history_tail.rs`; a SQLite file: `sqlite_direct.rs`).

use std::collections::HashMap;

use duroxide::providers::ExecutionMetadata;
use duroxide::Event;

/// Histories shorter than this are cheap to fetch whole; not kept.
pub(crate) const MIN_EVENTS: usize = 16;
/// Instances whose history is kept (each is named in every fetch).
const MAX_ENTRIES: usize = 128;
/// Events kept across all instances.
const MAX_EVENTS: usize = 100_000;
/// Turns in flight that are remembered; more means locks were lost unseen.
pub(crate) const MAX_IN_FLIGHT: usize = 1024;

/// One instance's history as this process last acked it.
pub(crate) struct Held {
    pub(crate) instance: String,
    pub(crate) execution_id: u64,
    /// What tells this execution from a later one of a re-created instance
    /// of the same id: on Postgres, the identity the tail fetch returned
    /// (the stored first event's md5 and that row's `xmin`); on SQLite
    /// empty, since its fetch compares the whole stored first event.
    pub(crate) identity: String,
    pub(crate) history: Vec<Event>,
}

impl Held {
    pub(crate) fn last_event_id(&self) -> u64 {
        self.history.last().map_or(0, |e| e.event_id)
    }

    /// The history a turn handed this one leaves once its ack of
    /// `execution_id` with `delta` commits; `None` when the ack ends the
    /// execution or is of another one (nothing to read on from).
    pub(crate) fn acked(
        mut self,
        execution_id: u64,
        delta: &[Event],
        metadata: &ExecutionMetadata,
    ) -> Option<Held> {
        let goes_on = matches!(metadata.status.as_deref(), None | Some("Running"));
        if !goes_on || self.execution_id != execution_id {
            return None;
        }
        self.history.extend(delta.iter().cloned());
        Some(self)
    }
}

/// The histories a fetch names: ids, executions, last event ids, identities.
pub(crate) type Known = (Vec<String>, Vec<i64>, Vec<i64>, Vec<String>);

#[derive(Default)]
pub(crate) struct Histories {
    /// instance -> its history and when it was last put back.
    pub(crate) held: HashMap<String, (Held, u64)>,
    puts: u64,
    events: usize,
    /// lock token -> the history handed to that turn.
    pub(crate) in_flight: HashMap<String, Held>,
    /// lock token -> instance, for every turn that holds a lock this layer
    /// fetched, until its ack or abandon has run.
    pub(crate) turning: HashMap<String, String>,
}

impl Histories {
    pub(crate) fn take(&mut self, instance: &str) -> Option<Held> {
        let (held, _) = self.held.remove(instance)?;
        self.events -= held.history.len();
        Some(held)
    }

    pub(crate) fn put(&mut self, held: Held) {
        if held.history.len() < MIN_EVENTS {
            return;
        }
        self.take(&held.instance);
        self.puts += 1;
        self.events += held.history.len();
        self.held.insert(held.instance.clone(), (held, self.puts));
        while self.held.len() > MAX_ENTRIES || self.events > MAX_EVENTS {
            let oldest = self
                .held
                .iter()
                .min_by_key(|(_, (_, at))| *at)
                .map(|(i, _)| i.clone());
            match oldest {
                Some(oldest) => self.take(&oldest),
                None => break,
            };
        }
    }

    /// A turn's lock is gone (acked, abandoned or lost).
    pub(crate) fn ended(&mut self, token: &str) {
        self.in_flight.remove(token);
        self.turning.remove(token);
    }

    /// What the fetch tells the store: ids, executions, last event ids,
    /// identities.
    pub(crate) fn known(&self) -> Known {
        let mut known = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (h, _) in self.held.values() {
            known.0.push(h.instance.clone());
            known.1.push(h.execution_id as i64);
            known.2.push(h.last_event_id() as i64);
            known.3.push(h.identity.clone());
        }
        known
    }
}
