//! The events a replay check reads, from either form JS hands over: the
//! crate's own serialized events (`client.exportHistory`, lossless) or the
//! entries of `client.readExecutionHistory`, rebuilt here field by field
//! (the inverse of `client/history.rs`).
//!
//! Entries are lossy: their payloads went through `serde_json::Value`, so
//! object keys come back sorted, and some kinds carry no data at all. A kind
//! whose missing fields the replay compares is refused with a pointer to
//! `exportHistory`, rather than replayed into a divergence that is not there.

use duroxide::{ErrorDetails, Event, EventKind};
use serde::Deserialize;
use serde_json::Value;

use crate::errors::{BridgeError, BridgeResult};

/// Which instance and execution the events belong to, for entries (which do
/// not say) and for checking exported events (which do).
pub(crate) struct Target {
    pub instance: String,
    pub execution: u64,
}

/// One `readExecutionHistory` entry as JS hands it over.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    event_id: u64,
    kind: String,
    source_event_id: Option<u64>,
    #[serde(default)]
    timestamp_ms: u64,
    data: Option<String>,
}

/// `value` with whole-number floats as integers: every number from JS
/// arrives as a float, and the crate's event fields are integers.
fn integral(value: Value) -> Value {
    match value {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && (0.0..9.0e15).contains(&f) => {
                Value::from(f as u64)
            }
            Some(f) if n.is_f64() && f.fract() == 0.0 && (-9.0e15..0.0).contains(&f) => {
                Value::from(f as i64)
            }
            _ => Value::Number(n),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(integral).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, integral(v))).collect())
        }
        other => other,
    }
}

/// The events of `history` (a JSON array of either form), oldest first.
pub(crate) fn events(history: Value, target: &Target) -> BridgeResult<Vec<Event>> {
    let Value::Array(items) = integral(history) else {
        return Err(BridgeError::InvalidArgument(
            "history must be an array of events".into(),
        ));
    };
    let exported = items
        .first()
        .is_some_and(|e| e.get("event_id").is_some() && e.get("type").is_some());
    let events = if exported {
        serde_json::from_value::<Vec<Event>>(Value::Array(items)).map_err(|e| {
            BridgeError::InvalidArgument(format!("history: not an exported event list: {e}"))
        })?
    } else {
        items
            .into_iter()
            .enumerate()
            .map(|(i, item)| entry_event(i, item, target))
            .collect::<BridgeResult<_>>()?
    };
    Ok(events)
}

fn entry_event(index: usize, item: Value, target: &Target) -> BridgeResult<Event> {
    let entry: Entry = serde_json::from_value(item).map_err(|e| {
        BridgeError::InvalidArgument(format!(
            "history[{index}] is not a readExecutionHistory entry: {e}"
        ))
    })?;
    let kind = entry_kind(index, &entry)?;
    let mut event = Event::with_event_id(
        entry.event_id,
        target.instance.clone(),
        target.execution,
        entry.source_event_id,
        kind,
    );
    event.timestamp_ms = entry.timestamp_ms;
    Ok(event)
}

/// The payload text a `data` value was made from. Objects come back with
/// sorted keys (the JS side sorts the code's payloads to match).
fn text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => "null".to_string(),
        Some(v) => v.to_string(),
    }
}

fn field<'a>(data: &'a Value, name: &str) -> Option<&'a Value> {
    data.get(name)
}

fn string_field(data: &Value, name: &str) -> String {
    field(data, name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Failure `data` as stored: `readExecutionHistory` shows a structured
/// failure's message with the structure beside it under `error`
/// (`client/history.rs`), and the replayed code must get the failure it got
/// when it ran (`ActivityFailedError` with `errorName`, `details`, ...).
fn with_failure_joined(mut data: Value) -> Value {
    let fields = data
        .as_object_mut()
        .and_then(|o| o.values_mut().next())
        .and_then(Value::as_object_mut);
    if let Some(fields) = fields {
        if let Some(Value::Object(info)) = fields.remove("error") {
            let message = fields.get("message").and_then(Value::as_str).unwrap_or("");
            let text = crate::bridge::failure::join(message, &info);
            fields.insert("message".into(), Value::String(text));
        }
    }
    data
}

fn entry_kind(index: usize, entry: &Entry) -> BridgeResult<EventKind> {
    let data: Value = match &entry.data {
        Some(text) => serde_json::from_str(text).map_err(|e| {
            BridgeError::InvalidArgument(format!(
                "history[{index}] ({}) has data that is not JSON: {e}",
                entry.kind
            ))
        })?,
        None => Value::Null,
    };
    let details = || -> BridgeResult<ErrorDetails> {
        serde_json::from_value(with_failure_joined(data.clone())).map_err(|e| {
            BridgeError::InvalidArgument(format!(
                "history[{index}] ({}) has no error details: {e}",
                entry.kind
            ))
        })
    };
    let fire_at_ms = || {
        field(&data, "fireAtMs")
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    // Cancellation breadcrumbs of dropped futures are the ones replay compares.
    let dropped = || "dropped_future".to_string();
    use EventKind as K;
    Ok(match entry.kind.as_str() {
        "OrchestrationStarted" => K::OrchestrationStarted {
            name: string_field(&data, "name"),
            version: string_field(&data, "version"),
            input: text(field(&data, "input")),
            parent_instance: None,
            parent_id: None,
            parent_execution_id: None,
            carry_forward_events: None,
            initial_custom_status: None,
        },
        "OrchestrationCompleted" => K::OrchestrationCompleted {
            output: text(Some(&data)),
        },
        "OrchestrationFailed" => K::OrchestrationFailed {
            details: details()?,
        },
        "ActivityScheduled" => K::ActivityScheduled {
            name: string_field(&data, "name"),
            input: text(field(&data, "input")),
            session_id: None,
            tag: None,
        },
        "ActivityCompleted" => K::ActivityCompleted {
            result: text(Some(&data)),
        },
        "ActivityFailed" => K::ActivityFailed {
            details: details()?,
        },
        "ActivityCancelRequested" => K::ActivityCancelRequested { reason: dropped() },
        "TimerCreated" => K::TimerCreated {
            fire_at_ms: fire_at_ms(),
        },
        "TimerFired" => K::TimerFired {
            fire_at_ms: fire_at_ms(),
        },
        "ExternalSubscribed" => K::ExternalSubscribed {
            name: string_field(&data, "name"),
        },
        "ExternalEvent" => K::ExternalEvent {
            name: string_field(&data, "name"),
            data: text(field(&data, "data")),
        },
        "SubOrchestrationScheduled" => K::SubOrchestrationScheduled {
            name: string_field(&data, "name"),
            instance: string_field(&data, "instance"),
            input: text(field(&data, "input")),
        },
        "SubOrchestrationCompleted" => K::SubOrchestrationCompleted {
            result: text(Some(&data)),
        },
        "SubOrchestrationFailed" => K::SubOrchestrationFailed {
            details: details()?,
        },
        "SubOrchestrationCancelRequested" => {
            K::SubOrchestrationCancelRequested { reason: dropped() }
        }
        "OrchestrationContinuedAsNew" => K::OrchestrationContinuedAsNew {
            input: String::new(),
        },
        "OrchestrationCancelRequested" => K::OrchestrationCancelRequested {
            reason: String::new(),
        },
        "ExternalSubscribedCancelled" => K::ExternalSubscribedCancelled { reason: dropped() },
        "QueueSubscribed" => K::QueueSubscribed {
            name: string_field(&data, "name"),
        },
        "QueueEventDelivered" => K::QueueEventDelivered {
            name: string_field(&data, "name"),
            data: text(field(&data, "data")),
        },
        "QueueSubscriptionCancelled" => K::QueueSubscriptionCancelled {
            reason: field(&data, "reason")
                .and_then(Value::as_str)
                .map_or_else(dropped, str::to_string),
        },
        "CustomStatusUpdated" => K::CustomStatusUpdated { status: None },
        "KeyValuesCleared" => K::KeyValuesCleared,
        "KeyValueSet" | "KeyValueCleared" | "OrchestrationChained" => {
            return Err(BridgeError::InvalidArgument(format!(
                "history[{index}] ({}) carries no data in readExecutionHistory's form, and replay compares its fields; replay client.exportHistory(instanceId) instead",
                entry.kind
            )))
        }
        other => {
            return Err(BridgeError::InvalidArgument(format!(
                "history[{index}] has unknown kind '{other}'"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn target() -> Target {
        Target {
            instance: "i".into(),
            execution: 1,
        }
    }

    #[test]
    fn entries_become_events_with_payloads_as_json_text() {
        let history = json!([
            { "eventId": 1, "kind": "OrchestrationStarted", "timestampMs": 5,
              "data": r#"{"name":"O","version":"1.0.0","input":{"a":1}}"# },
            { "eventId": 2, "kind": "ActivityScheduled", "timestampMs": 6,
              "data": r#"{"name":"A","input":"x"}"# },
            { "eventId": 3, "kind": "ActivityCompleted", "sourceEventId": 2, "timestampMs": 7,
              "data": "null" },
        ]);
        let events = events(history, &target()).unwrap();
        assert_eq!(events.len(), 3);
        match &events[0].kind {
            EventKind::OrchestrationStarted { name, input, .. } => {
                assert_eq!(name, "O");
                assert_eq!(input, r#"{"a":1}"#);
            }
            k => panic!("{k:?}"),
        }
        match &events[1].kind {
            EventKind::ActivityScheduled { input, .. } => assert_eq!(input, r#""x""#),
            k => panic!("{k:?}"),
        }
        assert_eq!(events[2].source_event_id, Some(2));
        assert_eq!(events[2].instance_id, "i");
    }

    #[test]
    fn exported_events_round_trip() {
        let event = Event::with_event_id(
            1,
            "i".to_string(),
            1,
            None,
            EventKind::ActivityScheduled {
                name: "A".into(),
                input: r#"{"b":1,"a":2}"#.into(),
                session_id: Some("s".into()),
                tag: None,
            },
        );
        let history = serde_json::to_value(vec![event.clone()]).unwrap();
        assert_eq!(events(history, &target()).unwrap(), vec![event]);
    }

    #[test]
    fn kinds_without_the_compared_fields_are_refused_by_name() {
        let history = json!([{ "eventId": 1, "kind": "KeyValueSet", "timestampMs": 1 }]);
        let err = events(history, &target()).unwrap_err();
        assert!(err.to_string().contains("KeyValueSet"), "{err}");
        assert!(err.to_string().contains("exportHistory"), "{err}");
    }
}
