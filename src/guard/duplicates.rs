//! Starts of instances that already exist.
//!
//! duroxide keeps an instance as it is when a start arrives for it again
//! (from `startOrchestration`, a sub-orchestration or a detached start with
//! an id in use): it drops the start, input and all. The string-named start
//! keeps that behaviour (existing applications rely on an idempotent start),
//! and a check before every start would cost it a store round trip, so the
//! runtime that drops the start says so, naming the instance and what was
//! dropped; duroxide's own terse lines move to DEBUG (`logging/relevel.rs`).
//! The typed `client.start` refuses an existing id before it starts
//! (`ERR_ALREADY_EXISTS`).

use duroxide::providers::{OrchestrationItem, WorkItem};

/// The start messages of a fetched item that duroxide will drop: all of
/// them when the instance has history, else all but the first start.
fn dropped(item: &OrchestrationItem) -> impl Iterator<Item = &WorkItem> {
    let mut first = item.history.is_empty();
    item.messages.iter().filter(move |m| match m {
        WorkItem::StartOrchestration { .. } if first => {
            first = false;
            false
        }
        WorkItem::StartOrchestration { .. } => true,
        WorkItem::ContinueAsNew { .. } => {
            first = false;
            false
        }
        _ => false,
    })
}

/// Logs one WARN per start of `item` that duroxide will drop.
pub(crate) fn warn_dropped(item: &OrchestrationItem) {
    for start in dropped(item) {
        let WorkItem::StartOrchestration {
            orchestration,
            parent_instance,
            ..
        } = start
        else {
            continue;
        };
        let by = match parent_instance {
            Some(parent) => format!("a sub-orchestration start by '{parent}'"),
            None => "a start".to_string(),
        };
        tracing::warn!(
            target: "duroxide_node::guard",
            instance_id = %item.instance,
            orchestration_name = %orchestration,
            "{by} of orchestration '{orchestration}' as instance '{}' was ignored and its input \
             discarded: the instance already exists (orchestration '{}'); start it under a new \
             id, or use client.start(), which rejects an existing id with ERR_ALREADY_EXISTS",
            item.instance,
            item.orchestration_name,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use duroxide::{Event, EventKind};

    fn start(name: &str) -> WorkItem {
        WorkItem::StartOrchestration {
            instance: "i".into(),
            orchestration: name.into(),
            input: "1".into(),
            version: None,
            parent_instance: None,
            parent_id: None,
            parent_execution_id: None,
            execution_id: 1,
        }
    }

    fn item(history: Vec<Event>, messages: Vec<WorkItem>) -> OrchestrationItem {
        OrchestrationItem {
            instance: "i".into(),
            orchestration_name: "O".into(),
            execution_id: 1,
            version: "1.0.0".into(),
            history,
            messages,
            history_error: None,
            kv_snapshot: Default::default(),
        }
    }

    #[test]
    fn starts_of_an_instance_with_history_and_second_starts_are_dropped() {
        let started = Event::with_event_id(
            1,
            "i".to_string(),
            1,
            None,
            EventKind::OrchestrationStarted {
                name: "O".into(),
                version: "1.0.0".into(),
                input: "0".into(),
                parent_instance: None,
                parent_id: None,
                parent_execution_id: None,
                carry_forward_events: None,
                initial_custom_status: None,
            },
        );
        assert_eq!(dropped(&item(vec![], vec![start("O")])).count(), 0);
        assert_eq!(
            dropped(&item(vec![], vec![start("O"), start("P")])).collect::<Vec<_>>(),
            vec![&start("P")]
        );
        assert_eq!(dropped(&item(vec![started], vec![start("O")])).count(), 1);
    }
}
