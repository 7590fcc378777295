//! A turn whose code does not replay the instance's history.
//!
//! duroxide fails such an instance for good, with a message that is a debug
//! dump of the action and the event it compared (`schedule mismatch:
//! action=CreateTimer { scheduling_event_id: 0, .. } vs event=...`). The
//! guard sees the failure in the turn's ack and first describes it the way
//! the replay check does (`testing/divergence.rs`): it replays the
//! execution's history against this runtime's handlers, on a twin of the
//! runtime's bridge (`Bridge::twin`) so the generator cache of live turns is
//! not touched, and takes the check's sentence ("at event 5 the history has
//! activity 'Charge' (...), but the code schedules a timer"). Then, by
//! `onNondeterminism`:
//! - `'fail'` (the default, as duroxide): the failure is committed with that
//!   sentence as its message;
//! - `'hold'`: nothing of the turn is committed. Its messages are handed back
//!   with the `unregisteredBackoff` delay (the same situation: the code this
//!   instance needs is not deployed here) without counting an attempt, so the
//!   instance stays `Running` and is retried until code that replays it
//!   runs; that turn commits as usual.
//!
//! Either way the runtime emits a `nondeterminism` event and logs it once per
//! instance and sentence; held turns are counted, and the instances held now
//! are listed in the metrics.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use duroxide::providers::{ExecutionMetadata, Provider, WorkItem};
use duroxide::runtime::registry::OrchestrationRegistry;
use duroxide::runtime::OrchestrationHandler;
use duroxide::runtime::UnregisteredBackoffConfig;
use duroxide::{ConfigErrorKind, ErrorDetails, Event, EventKind};

use crate::bridge::waits::RecordedWaits;
use crate::bridge::Bridge;
use crate::options::NondeterminismPolicy;
use crate::testing::divergence::Subject;

/// How long describing one divergence may take; past it the description
/// falls back to the kind of mismatch duroxide named.
const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// Held instances remembered at most (each is one small entry).
const MAX_HELD: usize = 10_000;

/// What the replay check runs on: a twin bridge and the runtime's handlers
/// over it. Held as a trait object: the bridge owns JS handles, and a guard
/// built without a runtime (unit tests) must not link them in.
trait Replays: Send + Sync {
    fn handler(
        &self,
        name: &str,
        version: &semver::Version,
    ) -> Option<Arc<dyn OrchestrationHandler>>;
    fn waits(&self) -> Arc<RecordedWaits>;
    fn release(&self);
}

struct Checker {
    bridge: Arc<Bridge>,
    orchestrations: OrchestrationRegistry,
}

impl Replays for Checker {
    fn handler(
        &self,
        name: &str,
        version: &semver::Version,
    ) -> Option<Arc<dyn OrchestrationHandler>> {
        self.orchestrations.resolve_handler_exact(name, version)
    }

    fn waits(&self) -> Arc<RecordedWaits> {
        self.bridge.waits.clone()
    }

    fn release(&self) {
        self.bridge.release();
    }
}

/// One held instance.
struct Held {
    /// Turns held so far (the back-off grows with it).
    turns: u32,
    execution: u64,
    /// The history length the sentence was found for, and the sentence.
    history_len: usize,
    message: String,
}

pub(crate) struct Nondeterminism {
    policy: NondeterminismPolicy,
    backoff: UnregisteredBackoffConfig,
    checker: RwLock<Option<Arc<dyn Replays>>>,
    held: Mutex<HashMap<String, Held>>,
    holds: AtomicU64,
}

/// The nondeterminism failure a turn's history delta ends with, if any.
pub(crate) fn found_in(delta: &[Event]) -> Option<&ErrorDetails> {
    delta.iter().rev().find_map(|e| match &e.kind {
        EventKind::OrchestrationFailed {
            details:
                details @ ErrorDetails::Configuration {
                    kind: ConfigErrorKind::Nondeterminism,
                    ..
                },
        } => Some(details),
        _ => None,
    })
}

/// What a turn's delta adds to the persisted history before the code runs:
/// the arrivals (completions, events, a cancel request), not the code's own
/// actions nor how the turn ended.
fn arrivals(delta: &[Event]) -> impl Iterator<Item = &Event> {
    use EventKind as K;
    delta.iter().filter(|e| {
        matches!(
            e.kind,
            K::ActivityCompleted { .. }
                | K::ActivityFailed { .. }
                | K::TimerFired { .. }
                | K::SubOrchestrationCompleted { .. }
                | K::SubOrchestrationFailed { .. }
                | K::ExternalEvent { .. }
                | K::QueueEventDelivered { .. }
                | K::OrchestrationCancelRequested { .. }
        )
    })
}

/// The description when the check cannot run: the kind of mismatch duroxide
/// named (the text before its first ':'), without the dump after it.
fn fallback(details: &ErrorDetails) -> String {
    let kind = match details {
        ErrorDetails::Configuration {
            message: Some(m), ..
        } => m.split(':').next().unwrap_or(m).trim().to_string(),
        _ => String::new(),
    };
    if kind.is_empty() {
        "the code does not replay the history recorded so far".to_string()
    } else {
        format!("the code does not replay the history recorded so far ({kind})")
    }
}

/// `details` with `message` in place of duroxide's.
fn described(details: &ErrorDetails, message: &str) -> ErrorDetails {
    match details {
        ErrorDetails::Configuration { kind, resource, .. } => ErrorDetails::Configuration {
            kind: kind.clone(),
            resource: resource.clone(),
            message: Some(message.to_string()),
        },
        other => other.clone(),
    }
}

/// The turn's failure, its parent's notice and the execution's stored
/// output, with `message` as the failure's description.
pub(crate) fn rewrite(
    delta: &mut [Event],
    orchestrator_items: &mut [WorkItem],
    metadata: &mut ExecutionMetadata,
    message: &str,
) {
    let Some(old) = found_in(delta).cloned() else {
        return;
    };
    let new = described(&old, message);
    for e in delta.iter_mut() {
        if let EventKind::OrchestrationFailed { details } = &mut e.kind {
            if *details == old {
                *details = new.clone();
            }
        }
    }
    for item in orchestrator_items.iter_mut() {
        if let WorkItem::SubOrchFailed { details, .. } = item {
            if *details == old {
                *details = new.clone();
            }
        }
    }
    if metadata.output.as_deref() == Some(old.display_message().as_str()) {
        metadata.output = Some(new.display_message());
    }
}

impl Nondeterminism {
    pub(crate) fn new(policy: NondeterminismPolicy, backoff: UnregisteredBackoffConfig) -> Self {
        Self {
            policy,
            backoff,
            checker: RwLock::new(None),
            held: Mutex::new(HashMap::new()),
            holds: AtomicU64::new(0),
        }
    }

    pub(crate) fn policy(&self) -> NondeterminismPolicy {
        self.policy
    }

    /// The runtime started: `bridge` is a twin of its bridge and
    /// `orchestrations` its handlers over it.
    pub(crate) fn started(&self, bridge: Arc<Bridge>, orchestrations: OrchestrationRegistry) {
        *self.checker.write().expect("checker") = Some(Arc::new(Checker {
            bridge,
            orchestrations,
        }));
    }

    /// The runtime stopped: the twin bridge lets go of the JS callbacks.
    pub(crate) fn stopped(&self) {
        if let Some(checker) = self.checker.write().expect("checker").take() {
            checker.release();
        }
    }

    /// The replay check's sentence for the divergence of `instance`'s
    /// execution, whose turn ended with `details`; the previous sentence when
    /// the history has not grown since.
    pub(crate) async fn describe(
        &self,
        next: &Arc<dyn Provider>,
        instance: &str,
        execution: u64,
        delta: &[Event],
        details: &ErrorDetails,
    ) -> String {
        let history = match next.read_with_execution(instance, execution).await {
            Ok(h) if !h.is_empty() => h,
            _ => return fallback(details),
        };
        let mut events = history;
        events.extend(arrivals(delta).cloned());
        if let Some(h) = self.held.lock().expect("held").get(instance) {
            if h.execution == execution && h.history_len == events.len() {
                return h.message.clone();
            }
        }
        let subject = {
            let checker = self.checker.read().expect("checker");
            let Some(checker) = checker.as_ref() else {
                return fallback(details);
            };
            let Some(EventKind::OrchestrationStarted {
                name,
                version,
                input,
                ..
            }) = events.first().map(|e| &e.kind)
            else {
                return fallback(details);
            };
            let handler = semver::Version::parse(version)
                .ok()
                .and_then(|v| checker.handler(name, &v));
            let Some(handler) = handler else {
                return fallback(details);
            };
            Subject {
                handler,
                waits: checker.waits(),
                instance: instance.to_string(),
                execution,
                name: name.clone(),
                version: version.clone(),
                input: input.clone(),
            }
        };
        let len = events.len();
        // The engine polls the handler synchronously and each generator step
        // blocks on the JS thread, so the check runs off the async workers.
        let check = tokio::task::spawn_blocking(move || subject.check(&events));
        let message = match tokio::time::timeout(CHECK_TIMEOUT, check).await {
            Ok(Ok(Some(divergence))) => divergence.message,
            _ => fallback(details),
        };
        if let Some(h) = self.held.lock().expect("held").get_mut(instance) {
            if h.execution == execution {
                h.history_len = len;
            }
        }
        message
    }

    /// A turn of `instance` is held; returns how long to wait before the
    /// next try and whether this is news (first hold, or another divergence).
    pub(crate) fn hold(&self, instance: &str, execution: u64, message: &str) -> (Duration, bool) {
        self.holds.fetch_add(1, Ordering::Relaxed);
        let mut held = self.held.lock().expect("held");
        if !held.contains_key(instance) && held.len() >= MAX_HELD {
            if let Some(k) = held.keys().next().cloned() {
                held.remove(&k);
            }
        }
        let h = held.entry(instance.to_string()).or_insert_with(|| Held {
            turns: 0,
            execution,
            history_len: 0,
            message: String::new(),
        });
        let news = h.turns == 0 || h.message != message || h.execution != execution;
        h.turns += 1;
        h.execution = execution;
        h.message = message.to_string();
        (self.backoff.delay(h.turns), news)
    }

    /// A turn of `instance` committed; the number of turns held before it,
    /// if it was held.
    pub(crate) fn committed(&self, instance: &str) -> Option<u32> {
        let mut held = self.held.lock().expect("held");
        if held.is_empty() {
            return None;
        }
        held.remove(instance).map(|h| h.turns)
    }

    /// Turns held so far.
    pub(crate) fn holds(&self) -> u64 {
        self.holds.load(Ordering::Relaxed)
    }

    /// The instances held now, sorted.
    pub(crate) fn held_instances(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.held.lock().expect("held").keys().cloned().collect();
        ids.sort();
        ids
    }

    /// One health reason per held instance.
    pub(crate) fn degraded_reasons(&self) -> Vec<String> {
        let held = self.held.lock().expect("held");
        let mut reasons: Vec<String> = held
            .iter()
            .map(|(instance, h)| {
                format!(
                    "instance '{instance}' is held (onNondeterminism: 'hold', {} turn(s)): {}",
                    h.turns, h.message
                )
            })
            .collect();
        reasons.sort();
        reasons
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(message: &str) -> Event {
        Event::with_event_id(
            9,
            "i".to_string(),
            1,
            None,
            EventKind::OrchestrationFailed {
                details: ErrorDetails::Configuration {
                    kind: ConfigErrorKind::Nondeterminism,
                    resource: String::new(),
                    message: Some(message.into()),
                },
            },
        )
    }

    #[test]
    fn the_failure_is_described_without_the_dump() {
        let dump = "schedule mismatch: action=CreateTimer { scheduling_event_id: 0 } vs event=ActivityScheduled { name: \"A\" }";
        let mut delta = vec![failed(dump)];
        let details = found_in(&delta).cloned().expect("found");
        assert_eq!(
            fallback(&details),
            "the code does not replay the history recorded so far (schedule mismatch)"
        );
        let mut metadata = ExecutionMetadata {
            output: Some(details.display_message()),
            ..Default::default()
        };
        rewrite(
            &mut delta,
            &mut [],
            &mut metadata,
            "at event 3 the history has x",
        );
        assert_eq!(
            metadata.output.as_deref(),
            Some("nondeterministic: at event 3 the history has x")
        );
        assert!(matches!(
            &delta[0].kind,
            EventKind::OrchestrationFailed { details } if details.display_message() == "nondeterministic: at event 3 the history has x"
        ));
    }

    #[test]
    fn holds_back_off_and_report_news_once() {
        let n = Nondeterminism::new(
            NondeterminismPolicy::Hold,
            UnregisteredBackoffConfig {
                base_delay: Duration::from_millis(100),
                max_delay: Duration::from_millis(250),
            },
        );
        assert_eq!(n.hold("i", 1, "m"), (Duration::from_millis(100), true));
        assert_eq!(n.hold("i", 1, "m"), (Duration::from_millis(200), false));
        assert_eq!(n.hold("i", 1, "other"), (Duration::from_millis(250), true));
        assert_eq!(n.held_instances(), vec!["i".to_string()]);
        assert!(n.degraded_reasons()[0].contains("'i' is held"));
        assert_eq!(n.committed("i"), Some(3));
        assert_eq!(n.committed("i"), None);
        assert_eq!(n.holds(), 3);
    }
}
