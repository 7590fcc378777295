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

/// One re-levelled situation: an event of `level` and `target` whose
/// message contains `message` (and whose other fields contain `fields`),
/// re-emitted by `emit` (tracing wants a static target and level at each
/// call site, hence a function per rule).
struct Rule {
    level: Level,
    target: &'static str,
    message: &'static str,
    fields: &'static str,
    emit: fn(&str),
}

const RULES: &[Rule] = &[
    // An activity's application error: the orchestration sees it and decides.
    Rule {
        level: Level::WARN,
        fields: "",
        target: "duroxide::runtime",
        message: "Activity failed (application error)",
        emit: |t| tracing::info!(target: "duroxide::runtime", "{t}"),
    },
    // A retry policy doing its job ("Activity 'X' attempt 1/5 failed: ... Retrying...").
    Rule {
        level: Level::WARN,
        fields: "",
        target: "duroxide::orchestration",
        message: " failed: ",
        emit: |t| tracing::info!(target: "duroxide::orchestration", "{t}"),
    },
    // The losing activity of a race finished after the orchestration removed
    // its row; a lease really lost is reported by the guard at WARN.
    Rule {
        level: Level::WARN,
        fields: "",
        target: "duroxide::runtime::dispatchers::worker",
        message: "atomic ack failed, abandoning work item",
        emit: |t| tracing::debug!(target: "duroxide::runtime::dispatchers::worker", "{t}"),
    },
    Rule {
        level: Level::WARN,
        fields: "",
        target: "duroxide::runtime",
        message: "Failed to ack cancelled activity work item",
        emit: |t| tracing::debug!(target: "duroxide::runtime", "{t}"),
    },
    // A losing race timer (or a late event) arriving after completion.
    Rule {
        level: Level::WARN,
        fields: "",
        target: "duroxide::runtime::dispatchers::orchestration",
        message: "Instance is terminal (completed/failed), acking batch without processing",
        emit: |t| tracing::debug!(target: "duroxide::runtime::dispatchers::orchestration", "{t}"),
    },
    // A start of an instance that already exists: the guard warns in words,
    // naming the instance and the input it dropped (`guard/duplicates.rs`).
    Rule {
        level: Level::WARN,
        fields: "",
        target: "duroxide::runtime::state_helpers",
        message: "Ignoring duplicate StartOrchestration for an existing instance",
        emit: |t| tracing::debug!(target: "duroxide::runtime::state_helpers", "{t}"),
    },
    Rule {
        level: Level::WARN,
        fields: "",
        target: "duroxide::runtime::state_helpers",
        message: "Duplicate Start/ContinueAsNew in batch",
        emit: |t| tracing::debug!(target: "duroxide::runtime::state_helpers", "{t}"),
    },
    // A turn that does not replay: the guard logs it with the replay check's
    // sentence instead of this debug dump, and with `onNondeterminism:
    // 'hold'` nothing failed (`guard/nondeterminism.rs`).
    Rule {
        level: Level::ERROR,
        fields: " error=nondeterministic: ",
        target: "duroxide::runtime",
        message: "Orchestration failed",
        emit: |t| tracing::debug!(target: "duroxide::runtime", "{t}"),
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

/// Which rule, if any, applies to an event of `level` from `target` saying
/// `message`, with its other fields as `fields`.
fn rule_for(level: Level, target: &str, message: &str, fields: &str) -> Option<usize> {
    let retry = |m: &str| m.contains("' attempt ") && m.ends_with("Retrying...");
    RULES.iter().position(|r| {
        r.level == level
            && r.target == target
            && message.contains(r.message)
            && fields.contains(r.fields)
            && (r.target != "duroxide::orchestration" || retry(message))
    })
}

pub(crate) struct Relevel;

impl<S: Subscriber> Layer<S> for Relevel {
    fn event_enabled(&self, event: &Event<'_>, _ctx: Context<'_, S>) -> bool {
        let meta = event.metadata();
        if !RULES
            .iter()
            .any(|r| r.level == *meta.level() && r.target == meta.target())
        {
            return true;
        }
        let mut text = Text::default();
        event.record(&mut text);
        match rule_for(*meta.level(), meta.target(), &text.message, &text.fields) {
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
        assert_eq!(
            rule_for(Level::WARN, "duroxide::orchestration", retry, ""),
            Some(1)
        );
        // A user's own ctx.traceWarn under the same target stays a warning.
        assert_eq!(
            rule_for(
                Level::WARN,
                "duroxide::orchestration",
                "payment failed: card declined",
                ""
            ),
            None
        );
        assert_eq!(
            rule_for(
                Level::WARN,
                "duroxide::runtime",
                "Activity failed (application error)",
                ""
            ),
            Some(0)
        );
        assert_eq!(
            rule_for(
                Level::WARN,
                "duroxide::runtime",
                "Activity message exceeded max attempts, marking as poison",
                ""
            ),
            None
        );
        assert_eq!(
            rule_for(
                Level::WARN,
                "duroxide::runtime::dispatchers::orchestration",
                "Instance is terminal (completed/failed), acking batch without processing",
                ""
            ),
            Some(4)
        );
        let failed = "Orchestration failed";
        assert_eq!(
            rule_for(
                Level::ERROR,
                "duroxide::runtime",
                failed,
                " instance_id=i error=nondeterministic: schedule mismatch"
            ),
            Some(7)
        );
        // Other configuration failures stay errors.
        assert_eq!(
            rule_for(Level::ERROR, "duroxide::runtime", failed, " error=boom"),
            None
        );
    }
}
