//! Expected situations that duroxide logs at WARN, re-logged at INFO or
//! DEBUG, so that WARN in an operator's logs means "look".
//!
//! duroxide 0.1.32 warns when an activity fails with an application error
//! the orchestration then handles, on every retry of a retry policy, when the
//! activity that lost a race completes after its row was removed, and when a
//! losing race timer fires after its orchestration completed. Each is
//! normal operation. The guard (`guard/`) still warns when a lease is really
//! lost, so dropping duroxide's own line for a failed ack hides nothing.
//!
//! The layer refuses the original event in `event_enabled` (which disables it
//! for every layer of the subscriber) and emits a copy at the new level, under
//! the same target, with the original fields folded into the message.

use std::fmt::Write as _;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// One re-levelled situation: a WARN event of `target` whose message
/// contains `message`, re-emitted by `emit` (tracing wants a static target
/// and level at each call site, hence a function per rule).
struct Rule {
    target: &'static str,
    message: &'static str,
    emit: fn(&str),
}

const RULES: &[Rule] = &[
    // An activity's application error: the orchestration sees it and decides.
    Rule {
        target: "duroxide::runtime",
        message: "Activity failed (application error)",
        emit: |t| tracing::info!(target: "duroxide::runtime", "{t}"),
    },
    // A retry policy doing its job ("Activity 'X' attempt 1/5 failed: ... Retrying...").
    Rule {
        target: "duroxide::orchestration",
        message: " failed: ",
        emit: |t| tracing::info!(target: "duroxide::orchestration", "{t}"),
    },
    // The losing activity of a race finished after the orchestration removed
    // its row; a lease really lost is reported by the guard at WARN.
    Rule {
        target: "duroxide::runtime::dispatchers::worker",
        message: "atomic ack failed, abandoning work item",
        emit: |t| tracing::debug!(target: "duroxide::runtime::dispatchers::worker", "{t}"),
    },
    Rule {
        target: "duroxide::runtime",
        message: "Failed to ack cancelled activity work item",
        emit: |t| tracing::debug!(target: "duroxide::runtime", "{t}"),
    },
    // A losing race timer (or a late event) arriving after completion.
    Rule {
        target: "duroxide::runtime::dispatchers::orchestration",
        message: "Instance is terminal (completed/failed), acking batch without processing",
        emit: |t| tracing::debug!(target: "duroxide::runtime::dispatchers::orchestration", "{t}"),
    },
];

/// The message and the other fields of an event, as text.
#[derive(Default)]
struct Text {
    message: String,
    fields: String,
}

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={value}", field.name());
        }
    }
}

/// Which rule, if any, applies to a WARN event from `target` saying `message`.
fn rule_for(target: &str, message: &str) -> Option<usize> {
    let retry = |m: &str| m.contains("' attempt ") && m.ends_with("Retrying...");
    RULES.iter().position(|r| {
        r.target == target
            && message.contains(r.message)
            && (r.target != "duroxide::orchestration" || retry(message))
    })
}

pub(crate) struct Relevel;

impl<S: Subscriber> Layer<S> for Relevel {
    fn event_enabled(&self, event: &Event<'_>, _ctx: Context<'_, S>) -> bool {
        let meta = event.metadata();
        if *meta.level() != Level::WARN || !RULES.iter().any(|r| r.target == meta.target()) {
            return true;
        }
        let mut text = Text::default();
        event.record(&mut text);
        match rule_for(meta.target(), &text.message) {
            Some(rule) => {
                (RULES[rule].emit)(&format!("{}{}", text.message, text.fields));
                false
            }
            None => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_situations_are_matched_and_real_warnings_are_not() {
        let retry = "Activity 'Flaky' attempt 1/5 failed: flaky. Retrying...";
        assert_eq!(rule_for("duroxide::orchestration", retry), Some(1));
        // A user's own ctx.traceWarn under the same target stays a warning.
        assert_eq!(
            rule_for("duroxide::orchestration", "payment failed: card declined"),
            None
        );
        assert_eq!(
            rule_for("duroxide::runtime", "Activity failed (application error)"),
            Some(0)
        );
        assert_eq!(
            rule_for(
                "duroxide::runtime",
                "Activity message exceeded max attempts, marking as poison"
            ),
            None
        );
        assert_eq!(
            rule_for(
                "duroxide::runtime::dispatchers::orchestration",
                "Instance is terminal (completed/failed), acking batch without processing"
            ),
            Some(4)
        );
    }
}
