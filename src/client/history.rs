//! The `data` of a `readExecutionHistory` entry: the per-kind JSON shapes of
//! the API contract (`api.md`), which existing applications `JSON.parse` and
//! read field by field.
//!
//! duroxide stores user payloads (inputs, results, event data) as JSON text.
//! Serializing the crate's `EventKind` as is would put that text inside a JSON
//! string, so `JSON.parse(e.data).input` would still be a string; here each
//! payload is embedded as the JSON value it holds. A payload that is not valid
//! JSON text (a raw string from a non-JS client) is embedded as a JSON string,
//! so `data` is always parseable.

use duroxide::EventKind;
use serde_json::{json, Value};

use crate::bridge::failure;
use crate::trace_context;

/// A stored payload as the JSON value it encodes.
fn payload(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// A stored input as the JSON value the application passed: the
/// trace-context envelope (`trace_context.rs`) is the bridge's, not the app's.
fn input(text: &str) -> Value {
    payload(&trace_context::unwrap(text.to_owned()).0)
}

/// The crate's error details as stored, except that a message carrying a
/// thrown error's structure (`bridge/failure.rs`) shows the message alone, as
/// it did before failures had structure, with the structure beside it under
/// `error` (`{ name, stack?, details?, nonRetryable? }`).
fn failure_data(details: &duroxide::ErrorDetails) -> Option<Value> {
    let mut value = serde_json::to_value(details).ok()?;
    let fields = value
        .as_object_mut()
        .and_then(|o| o.values_mut().next())
        .and_then(Value::as_object_mut);
    if let Some(fields) = fields {
        let text = fields.get("message").and_then(Value::as_str).unwrap_or("");
        if let (message, Some(info)) = failure::split(text) {
            let message = Value::String(message.to_string());
            fields.insert("message".into(), message);
            fields.insert("error".into(), Value::Object(info));
        }
    }
    Some(value)
}

/// The JSON text of `data` for one history event, or `None` for kinds the
/// contract gives no data.
pub(super) fn event_data(kind: &EventKind) -> Option<String> {
    use EventKind as K;
    let value = match kind {
        K::OrchestrationStarted {
            name,
            version,
            input,
            ..
        } => json!({ "name": name, "version": version, "input": self::input(input) }),
        K::ActivityScheduled { name, input, .. } => {
            json!({ "name": name, "input": self::input(input) })
        }
        K::SubOrchestrationScheduled {
            name,
            instance,
            input,
        } => json!({ "name": name, "instance": instance, "input": self::input(input) }),
        K::ActivityCompleted { result } | K::SubOrchestrationCompleted { result } => {
            payload(result)
        }
        K::OrchestrationCompleted { output } => payload(output),
        K::ActivityFailed { details }
        | K::SubOrchestrationFailed { details }
        | K::OrchestrationFailed { details } => failure_data(details)?,
        K::TimerCreated { fire_at_ms } | K::TimerFired { fire_at_ms } => {
            json!({ "fireAtMs": fire_at_ms })
        }
        K::ExternalSubscribed { name } | K::QueueSubscribed { name } => json!({ "name": name }),
        K::ExternalEvent { name, data } | K::QueueEventDelivered { name, data } => {
            json!({ "name": name, "data": payload(data) })
        }
        K::QueueSubscriptionCancelled { reason } => json!({ "reason": reason }),
        _ => return None,
    };
    Some(value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use duroxide::{AppErrorKind, ErrorDetails};

    fn data(kind: EventKind) -> Value {
        serde_json::from_str(&event_data(&kind).expect("data")).unwrap()
    }

    #[test]
    fn payloads_are_embedded_as_values_not_strings() {
        let started = data(EventKind::OrchestrationStarted {
            name: "Greet".into(),
            version: "1.0.0".into(),
            input: r#"{"greeting":"hello"}"#.into(),
            parent_instance: None,
            parent_id: None,
            parent_execution_id: None,
            carry_forward_events: None,
            initial_custom_status: None,
        });
        assert_eq!(
            started,
            json!({ "name": "Greet", "version": "1.0.0", "input": { "greeting": "hello" } })
        );
        let completed = data(EventKind::ActivityCompleted {
            result: r#""ok""#.into(),
        });
        assert_eq!(completed, json!("ok"));
        let event = data(EventKind::ExternalEvent {
            name: "approve".into(),
            data: "[1,2]".into(),
        });
        assert_eq!(event, json!({ "name": "approve", "data": [1, 2] }));
    }

    #[test]
    fn inputs_are_shown_without_the_trace_context_envelope() {
        let trace = crate::trace_context::TraceContext {
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into(),
            tracestate: None,
        };
        let scheduled = data(EventKind::ActivityScheduled {
            name: "Charge".into(),
            input: crate::trace_context::wrap(r#"{"amount":5}"#.into(), &trace),
            session_id: None,
            tag: None,
        });
        assert_eq!(
            scheduled,
            json!({ "name": "Charge", "input": { "amount": 5 } })
        );
    }

    #[test]
    fn a_payload_that_is_not_json_becomes_a_json_string() {
        let completed = data(EventKind::OrchestrationCompleted {
            output: "plain text".into(),
        });
        assert_eq!(completed, json!("plain text"));
    }

    #[test]
    fn failures_carry_the_crate_error_details() {
        let failed = data(EventKind::ActivityFailed {
            details: ErrorDetails::Application {
                kind: AppErrorKind::OrchestrationFailed,
                message: "boom".into(),
                retryable: false,
            },
        });
        assert_eq!(failed["Application"]["message"], json!("boom"));
        assert!(failed["Application"].get("error").is_none());
    }

    #[test]
    fn a_structured_failure_shows_its_message_and_the_structure_beside_it() {
        let failed = data(EventKind::ActivityFailed {
            details: ErrorDetails::Application {
                kind: AppErrorKind::ActivityFailed,
                message: "boom\u{1e}{\"$duroxide\":1,\"name\":\"TypeError\"}".into(),
                retryable: false,
            },
        });
        assert_eq!(failed["Application"]["message"], json!("boom"));
        assert_eq!(
            failed["Application"]["error"],
            json!({ "name": "TypeError" })
        );
        assert_eq!(failed["Application"]["kind"], json!("ActivityFailed"));
    }

    #[test]
    fn timers_and_fieldless_kinds() {
        assert_eq!(
            data(EventKind::TimerFired { fire_at_ms: 5 }),
            json!({ "fireAtMs": 5 })
        );
        assert_eq!(event_data(&EventKind::KeyValuesCleared), None);
        assert_eq!(
            event_data(&EventKind::CustomStatusUpdated { status: None }),
            None
        );
    }
}
