//! Where today's orchestration code and a recorded history part.
//!
//! Every run here is duroxide's own `ReplayEngine` over a prefix of the
//! history, with the handler the runtime would use; nothing is dispatched
//! (the engine only returns the actions it would send) and nothing is stored.
//! The engine says *that* a history does not replay (a nondeterminism
//! failure) but not *where*, and it does not look at a history that has
//! already ended, so the checks below add that:
//!
//! - the first failing prefix is found by bisection (a prefix that replays
//!   cleanly stays clean when cut shorter); its last event is the divergence,
//!   and the run one event shorter shows what the code schedules instead;
//! - an ended history is replayed without its terminal event; the code must
//!   end the same way, having scheduled the same actions as the history's
//!   last turn, and must not end before events that it scheduled.

use std::sync::Arc;

use duroxide::runtime::replay_engine::{ReplayEngine, TurnResult};
use duroxide::runtime::OrchestrationHandler;
use duroxide::{ConfigErrorKind, ErrorDetails, Event, EventKind};

use crate::bridge::waits::RecordedWaits;

/// The execution being checked and the handler today's code registers for it.
pub(crate) struct Subject {
    pub handler: Arc<dyn OrchestrationHandler>,
    /// The recorded waits of the handler's bridge: each run replays a
    /// history as a runtime's turn would (`bridge/waits.rs`).
    pub waits: Arc<RecordedWaits>,
    pub instance: String,
    pub execution: u64,
    pub name: String,
    pub version: String,
    pub input: String,
}

/// The first event where code and history part.
#[derive(Debug)]
pub(crate) struct Divergence {
    /// Index into the history (== its length when the code goes on past its end).
    pub index: usize,
    /// The history's `eventId` there (the next one past the end): the number
    /// `history` shows, and the one the message names.
    pub event_id: u64,
    /// The history's event there; `None` past the end of a running history.
    pub recorded: Option<Event>,
    /// The event the code would record there; `None` when it records nothing.
    pub scheduled: Option<Event>,
    pub message: String,
}

/// How one replay run ended.
enum Ending {
    /// Waiting for something the history does not (yet) hold.
    Waits,
    /// Returned, threw or continued as new: the terminal event it would record.
    Ended(Box<Event>),
    /// The history cancels the instance.
    Cancelled,
    /// The engine's nondeterminism failure.
    Nondeterministic(String),
}

struct Run {
    ending: Ending,
    /// What the code did beyond the replayed events, as the events it would record.
    actions: Vec<Event>,
}

/// Events the code's own actions produce, the ones replay matches one to one.
fn is_action(kind: &EventKind) -> bool {
    use EventKind as K;
    matches!(
        kind,
        K::ActivityScheduled { .. }
            | K::TimerCreated { .. }
            | K::ExternalSubscribed { .. }
            | K::QueueSubscribed { .. }
            | K::SubOrchestrationScheduled { .. }
            | K::OrchestrationChained { .. }
            | K::CustomStatusUpdated { .. }
            | K::KeyValueSet { .. }
            | K::KeyValueCleared { .. }
            | K::KeyValuesCleared
    )
}

fn is_terminal(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::OrchestrationCompleted { .. }
            | EventKind::OrchestrationFailed { .. }
            | EventKind::OrchestrationContinuedAsNew { .. }
    )
}

/// The same action, as replay matches them (timers by position, custom
/// status by kind, the rest by their names and payloads).
fn same_action(a: &EventKind, b: &EventKind) -> bool {
    use EventKind as K;
    match (a, b) {
        (K::TimerCreated { .. }, K::TimerCreated { .. })
        | (K::CustomStatusUpdated { .. }, K::CustomStatusUpdated { .. })
        | (K::KeyValuesCleared, K::KeyValuesCleared) => true,
        (
            K::KeyValueSet { key, value, .. },
            K::KeyValueSet {
                key: k, value: v, ..
            },
        ) => key == k && value == v,
        _ => a == b,
    }
}

fn same_ending(a: &EventKind, b: &EventKind) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// The `eventId` of `history[index]`, or the id an event appended at the
/// end would get: messages count as `history` does, not by position.
fn event_id_at(history: &[Event], index: usize) -> u64 {
    match history.get(index) {
        Some(e) => e.event_id,
        None => history.last().map_or(1, |e| e.event_id + 1),
    }
}

/// A short human name for an event: its kind and what it names.
pub(crate) fn describe(event: Option<&Event>) -> String {
    use EventKind as K;
    let Some(event) = event else {
        return "nothing".to_string();
    };
    // The input the app passed, without the bridge's trace-context envelope.
    let shown = |input: &String| crate::trace_context::unwrap(input.clone()).0;
    match &event.kind {
        K::ActivityScheduled { name, input, .. } => {
            format!("activity '{name}' (input {})", shown(input))
        }
        K::SubOrchestrationScheduled { name, input, .. } => {
            format!("sub-orchestration '{name}' (input {})", shown(input))
        }
        K::OrchestrationChained { name, .. } => format!("a start of orchestration '{name}'"),
        K::TimerCreated { .. } => "a timer".to_string(),
        K::ExternalSubscribed { name } => format!("a wait for event '{name}'"),
        K::QueueSubscribed { name } => format!("a dequeue from '{name}'"),
        K::CustomStatusUpdated { .. } => "a custom status update".to_string(),
        K::KeyValueSet { key, .. } => format!("a set of value '{key}'"),
        K::KeyValueCleared { key } => format!("a clear of value '{key}'"),
        K::KeyValuesCleared => "a clear of all values".to_string(),
        K::OrchestrationCompleted { output } => format!("completion (output {output})"),
        K::OrchestrationFailed { details } => {
            // The message alone, as status `error` shows it (bridge/failure.rs).
            let text = details.display_message();
            format!("failure ({})", crate::bridge::failure::message(&text))
        }
        K::OrchestrationContinuedAsNew { .. } => "continue-as-new".to_string(),
        other => format!("{other:?}"),
    }
}

impl Subject {
    fn event(&self, event_id: u64, kind: EventKind) -> Event {
        Event::with_event_id(event_id, self.instance.clone(), self.execution, None, kind)
    }

    fn run(&self, prefix: &[Event]) -> Run {
        self.waits.note(&self.instance, prefix);
        let mut engine = ReplayEngine::new(self.instance.clone(), self.execution, prefix.to_vec());
        let result = engine.execute_orchestration(
            self.handler.clone(),
            self.input.clone(),
            self.name.clone(),
            self.version.clone(),
            "duroxide-node-replay-check",
        );
        let actions: Vec<Event> = engine
            .history_delta()
            .iter()
            .filter(|e| is_action(&e.kind))
            .cloned()
            .collect();
        let next_id = prefix.last().map_or(1, |e| e.event_id + 1) + actions.len() as u64;
        let ending = match result {
            TurnResult::Continue => Ending::Waits,
            TurnResult::Completed(output) => Ending::Ended(Box::new(
                self.event(next_id, EventKind::OrchestrationCompleted { output }),
            )),
            TurnResult::ContinueAsNew { input, .. } => Ending::Ended(Box::new(
                self.event(next_id, EventKind::OrchestrationContinuedAsNew { input }),
            )),
            TurnResult::Cancelled(_) => Ending::Cancelled,
            TurnResult::Failed(ErrorDetails::Configuration {
                kind: ConfigErrorKind::Nondeterminism,
                message,
                ..
            }) => Ending::Nondeterministic(message.unwrap_or_else(|| "nondeterminism".into())),
            TurnResult::Failed(details) => Ending::Ended(Box::new(
                self.event(next_id, EventKind::OrchestrationFailed { details }),
            )),
        };
        Run { ending, actions }
    }

    /// What the code records first after replaying `prefix`: its first new
    /// action, else how it ends, else nothing (it waits).
    fn next_of(&self, prefix: &[Event]) -> Option<Event> {
        let run = self.run(prefix);
        match (run.actions.into_iter().next(), run.ending) {
            (Some(action), _) => Some(action),
            (None, Ending::Ended(end)) => Some(*end),
            (None, _) => None,
        }
    }

    /// Smallest `l` in `lo..=hi` for which `hit(run(&events[..l]))` holds,
    /// given that it holds at `hi` and that it keeps holding once it does.
    fn first(&self, events: &[Event], lo: usize, hi: usize, hit: impl Fn(&Run) -> bool) -> usize {
        let (mut lo, mut hi) = (lo, hi);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if hit(&self.run(&events[..mid])) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        hi
    }

    /// The first event of `history` where today's code parts from it, if any.
    pub(crate) fn check(&self, history: &[Event]) -> Option<Divergence> {
        let mut divergence = self.diverges(history)?;
        // Dated as the history's event there (or its last), not by the clock
        // of the replay, so two checks of one history report the same.
        let at = history.get(divergence.index).or(history.last());
        if let (Some(scheduled), Some(at)) = (divergence.scheduled.as_mut(), at) {
            scheduled.timestamp_ms = at.timestamp_ms;
        }
        Some(divergence)
    }

    fn diverges(&self, history: &[Event]) -> Option<Divergence> {
        let (body, terminal) = match history.split_last() {
            Some((last, body)) if is_terminal(&last.kind) => (body, Some(last)),
            _ => (history, None),
        };
        let full = self.run(body);
        match &full.ending {
            Ending::Nondeterministic(_) => Some(self.locate_nondeterminism(body)),
            Ending::Cancelled => None,
            Ending::Waits => {
                let t = terminal?;
                let scheduled = full.actions.into_iter().next();
                let message = format!(
                    "the history ends with {} at event {}, but the code does not end there: it schedules {}",
                    describe(Some(t)),
                    t.event_id,
                    match &scheduled {
                        Some(_) => describe(scheduled.as_ref()),
                        None => "nothing and waits".to_string(),
                    }
                );
                Some(Divergence {
                    index: body.len(),
                    event_id: t.event_id,
                    recorded: Some(t.clone()),
                    scheduled,
                    message,
                })
            }
            Ending::Ended(end) => self.check_end(history, body, terminal, &full, (**end).clone()),
        }
    }

    fn locate_nondeterminism(&self, body: &[Event]) -> Divergence {
        let nondeterministic = |r: &Run| matches!(r.ending, Ending::Nondeterministic(_));
        let l = self.first(body, 1, body.len(), nondeterministic);
        let why = match self.run(&body[..l]).ending {
            Ending::Nondeterministic(why) => why,
            _ => "nondeterminism".to_string(),
        };
        let index = l - 1;
        let recorded = body[index].clone();
        let scheduled = if index == 0 {
            None
        } else {
            self.next_of(&body[..index])
        };
        let mut message = format!(
            "at event {} the history has {}, but the code schedules {}",
            recorded.event_id,
            describe(Some(&recorded)),
            describe(scheduled.as_ref()),
        );
        // A schedule mismatch is what the two descriptions already say.
        if !why.starts_with("schedule mismatch") {
            message.push_str(&format!(" (duroxide: {why})"));
        }
        Divergence {
            index,
            event_id: recorded.event_id,
            recorded: Some(recorded),
            scheduled,
            message,
        }
    }

    /// The code ended. Where it returned, the events left in the history must
    /// be the last turn's own actions (the code's actions in that same poll),
    /// then the same kind of end.
    fn check_end(
        &self,
        history: &[Event],
        body: &[Event],
        terminal: Option<&Event>,
        full: &Run,
        end: Event,
    ) -> Option<Divergence> {
        // Where the code returned: the engine stops applying events there. A
        // continue-as-new is an action, not a return: every event was applied.
        let returned = |r: &Run| {
            matches!(&r.ending, Ending::Ended(e)
                if !matches!(e.kind, EventKind::OrchestrationContinuedAsNew { .. }))
        };
        let at = if !returned(full)
            || (body.len() > 1 && !returned(&self.run(&body[..body.len() - 1])))
        {
            body.len()
        } else {
            self.first(body, 1, body.len(), returned)
        };
        let left: Vec<(usize, &Event)> = body
            .iter()
            .enumerate()
            .skip(at)
            .filter(|(_, e)| is_action(&e.kind))
            .collect();
        let end_index = body.len();
        let end_id = event_id_at(history, end_index);
        for i in 0..left.len().max(full.actions.len()) {
            match (left.get(i), full.actions.get(i)) {
                (Some((_, r)), Some(s)) if same_action(&r.kind, &s.kind) => continue,
                (Some(&(index, r)), Some(s)) => {
                    return Some(Divergence {
                        index,
                        event_id: r.event_id,
                        recorded: Some(r.clone()),
                        scheduled: Some(s.clone()),
                        message: format!(
                            "at event {} the history has {}, but the code schedules {}",
                            r.event_id,
                            describe(Some(r)),
                            describe(Some(s))
                        ),
                    })
                }
                (Some(&(index, r)), None) => {
                    return Some(Divergence {
                        index,
                        event_id: r.event_id,
                        recorded: Some(r.clone()),
                        message: format!(
                            "at event {} the history has {}, but the code has already ended ({})",
                            r.event_id,
                            describe(Some(r)),
                            describe(Some(&end))
                        ),
                        scheduled: Some(end),
                    })
                }
                (None, Some(s)) => {
                    return Some(Divergence {
                        index: end_index,
                        event_id: end_id,
                        recorded: terminal.cloned(),
                        scheduled: Some(s.clone()),
                        message: format!(
                            "at event {end_id} the history has {}, but the code schedules {}",
                            describe(terminal),
                            describe(Some(s))
                        ),
                    })
                }
                (None, None) => unreachable!("i < max of both lengths"),
            }
        }
        match terminal {
            Some(t) if same_ending(&t.kind, &end.kind) => None,
            _ => Some(Divergence {
                index: end_index,
                event_id: end_id,
                recorded: terminal.cloned(),
                message: match terminal {
                    Some(t) => format!(
                        "the history ends with {} at event {end_id}, but the code ends with {}",
                        describe(Some(t)),
                        describe(Some(&end))
                    ),
                    None => format!(
                        "the history is still running after event {}, but the code has ended ({})",
                        end_id.saturating_sub(1),
                        describe(Some(&end))
                    ),
                },
                scheduled: Some(end),
            }),
        }
    }
}

#[cfg(test)]
mod tests;
