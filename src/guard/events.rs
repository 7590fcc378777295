//! Guard events for the application (`runtime.on('poison' | 'lockLost' |
//! 'livelock' | 'unregistered' | 'nondeterminism', fn)`) and the log line
//! that goes with each.
//!
//! Events travel to JS through the sink the runtime connects (its `events`
//! threadsafe function, see `runtime.rs` and `bridge/mod.rs`), non-blocking: a slow listener never holds up a
//! dispatcher. `lockLost` and `livelock` are reported once per instance per
//! runtime, so a message that retries forever cannot flood the application;
//! every `poison` disposition is reported, since each ends a message.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, RwLock};

use napi_derive::napi;

/// Instances remembered per event type for "once per instance"; past it the
/// set restarts, so a long-lived runtime cannot grow it without bound.
const MAX_REMEMBERED: usize = 10_000;

/// The kinds of event `runtime.on(type, fn)` subscribes to.
#[napi(string_enum = "camelCase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeEventType {
    Poison,
    LockLost,
    Livelock,
    /// Work arrived for an activity or orchestration name this runtime has
    /// no handler for (first occurrence per name; `unregistered.rs`).
    Unregistered,
    /// A turn's code did not replay the instance's history (once per
    /// instance and divergence; `nondeterminism.rs`).
    Nondeterminism,
}

impl RuntimeEventType {
    pub fn as_str(self) -> &'static str {
        match self {
            RuntimeEventType::Poison => "poison",
            RuntimeEventType::LockLost => "lockLost",
            RuntimeEventType::Livelock => "livelock",
            RuntimeEventType::Unregistered => "unregistered",
            RuntimeEventType::Nondeterminism => "nondeterminism",
        }
    }
}

/// What a listener of `runtime.on(type, fn)` receives.
#[napi(object)]
#[derive(Debug, Clone, PartialEq)]
pub struct GuardEvent {
    #[napi(js_name = "type")]
    pub event_type: RuntimeEventType,
    /// The instance whose message it is.
    pub instance_id: String,
    /// `'orchestrator'` (orchestration turns) or `'worker'` (activities).
    pub queue: String,
    /// How many times the message was fetched, when known.
    pub attempt_count: Option<u32>,
    /// The runtime's `maxAttempts`.
    pub max_attempts: u32,
    /// The likely cause and what to look at, in words.
    pub cause: String,
    /// `unregistered`: the missing name.
    pub name: Option<String>,
    /// `unregistered`: `'activity'` or `'orchestration'`.
    pub kind: Option<String>,
    /// `nondeterminism`: whether the runtime holds the instance
    /// (`onNondeterminism: 'hold'`) rather than failing it.
    pub held: Option<bool>,
    /// `nondeterminism`: where the code and the history part, as the replay
    /// check says it (`docs/replay.md`).
    pub divergence: Option<String>,
}

pub(crate) type EventSink = Arc<dyn Fn(GuardEvent) + Send + Sync>;

#[derive(Default)]
pub(crate) struct GuardEvents {
    sink: RwLock<Option<EventSink>>,
    reported: Mutex<HashSet<(String, String)>>,
}

impl GuardEvents {
    /// Where events go while the runtime runs.
    pub(crate) fn connect(&self, sink: EventSink) {
        *self.sink.write().expect("event sink") = Some(sink);
    }

    pub(crate) fn disconnect(&self) {
        self.sink.write().expect("event sink").take();
    }

    /// True the first time `(event_type, instance)` is seen.
    pub(crate) fn first_time(&self, event_type: RuntimeEventType, instance: &str) -> bool {
        let mut seen = self.reported.lock().expect("reported events");
        if seen.len() >= MAX_REMEMBERED {
            seen.clear();
        }
        seen.insert((event_type.as_str().to_string(), instance.to_string()))
    }

    /// Logs the event and hands it to the application.
    pub(crate) fn emit(&self, event: GuardEvent) {
        log(&event);
        let sink = self.sink.read().expect("event sink").clone();
        if let Some(sink) = sink {
            sink(event);
        }
    }
}

fn log(e: &GuardEvent) {
    let attempt = e
        .attempt_count
        .map_or_else(|| "unknown".to_string(), |a| a.to_string());
    match e.event_type {
        RuntimeEventType::Livelock => tracing::error!(
            target: "duroxide_node::guard",
            instance_id = %e.instance_id,
            queue = %e.queue,
            attempt_count = %attempt,
            max_attempts = e.max_attempts,
            "livelock: instance '{}' keeps retrying its {}-queue message (attempt {attempt}, \
             maxAttempts {}) without committing; likely cause: {}",
            e.instance_id, e.queue, e.max_attempts, e.cause
        ),
        RuntimeEventType::Poison => tracing::error!(
            target: "duroxide_node::guard",
            instance_id = %e.instance_id,
            queue = %e.queue,
            attempt_count = %attempt,
            max_attempts = e.max_attempts,
            "poison: instance '{}' had its {}-queue message failed after {attempt} attempts \
             (maxAttempts {}); {}",
            e.instance_id, e.queue, e.max_attempts, e.cause
        ),
        RuntimeEventType::Unregistered => tracing::error!(
            target: "duroxide_node::guard",
            instance_id = %e.instance_id,
            queue = %e.queue,
            name = e.name.as_deref().unwrap_or(""),
            "unregistered: instance '{}' waits for {} '{}', which this runtime has no handler \
             for; {}",
            e.instance_id,
            e.kind.as_deref().unwrap_or("handler"),
            e.name.as_deref().unwrap_or(""),
            e.cause
        ),
        RuntimeEventType::Nondeterminism if e.held == Some(true) => tracing::warn!(
            target: "duroxide_node::guard",
            instance_id = %e.instance_id,
            "nondeterminism: instance '{}' is held: its code does not replay its history: {}; {}",
            e.instance_id,
            e.divergence.as_deref().unwrap_or(""),
            e.cause
        ),
        RuntimeEventType::Nondeterminism => tracing::error!(
            target: "duroxide_node::guard",
            instance_id = %e.instance_id,
            "nondeterminism: instance '{}' failed: its code does not replay its history: {}; {}",
            e.instance_id,
            e.divergence.as_deref().unwrap_or(""),
            e.cause
        ),
        RuntimeEventType::LockLost => tracing::warn!(
            target: "duroxide_node::guard",
            instance_id = %e.instance_id,
            queue = %e.queue,
            attempt_count = %attempt,
            "lock lost: an ack for instance '{}' ({}-queue message, attempt {attempt}) found its lock \
             gone; {}",
            e.instance_id, e.queue, e.cause
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(t: RuntimeEventType) -> GuardEvent {
        GuardEvent {
            event_type: t,
            instance_id: "i".into(),
            queue: "orchestrator".into(),
            attempt_count: Some(3),
            max_attempts: 2,
            cause: "c".into(),
            name: None,
            kind: None,
            held: None,
            divergence: None,
        }
    }

    #[test]
    fn events_reach_the_sink_while_connected() {
        let got = Arc::new(Mutex::new(Vec::new()));
        let events = GuardEvents::default();
        let g = got.clone();
        events.connect(Arc::new(move |e| g.lock().unwrap().push(e)));
        events.emit(event(RuntimeEventType::Poison));
        events.disconnect();
        events.emit(event(RuntimeEventType::Livelock));
        assert_eq!(*got.lock().unwrap(), vec![event(RuntimeEventType::Poison)]);
    }

    #[test]
    fn first_time_is_per_type_and_instance() {
        let events = GuardEvents::default();
        assert!(events.first_time(RuntimeEventType::Livelock, "a"));
        assert!(!events.first_time(RuntimeEventType::Livelock, "a"));
        assert!(events.first_time(RuntimeEventType::LockLost, "a"));
        assert!(events.first_time(RuntimeEventType::Livelock, "b"));
    }
}
