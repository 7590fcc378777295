//! The divergence checks over pure-Rust handlers: one recorded history,
//! replayed against code that matches it and code changed in each way.

use super::*;
use duroxide::runtime::registry::OrchestrationRegistry;
use duroxide::OrchestrationContext;
use duroxide::{Event, EventKind};
use std::time::Duration;

/// What the code does after activity 'A': the variants under test.
#[derive(Clone, Copy)]
enum Code {
    Recorded,
    Swapped,
    Removed,
    TimerAfter,
}

fn subject(code: Code) -> Subject {
    let registry = OrchestrationRegistry::builder()
        .register(
            "O",
            move |ctx: OrchestrationContext, input: String| async move {
                let a = ctx.schedule_activity("A", input).await?;
                match code {
                    Code::Removed => return Ok(a),
                    Code::Swapped => ctx.schedule_activity("C", a.clone()).await?,
                    Code::Recorded | Code::TimerAfter => {
                        ctx.schedule_activity("B", a.clone()).await?
                    }
                };
                if let Code::TimerAfter = code {
                    ctx.schedule_timer(Duration::from_secs(60)).await;
                }
                Ok(a)
            },
        )
        .build();
    let handler = registry
        .resolve_handler_exact("O", &semver::Version::new(1, 0, 0))
        .expect("registered");
    Subject {
        handler,
        waits: Default::default(),
        instance: "i".into(),
        execution: 1,
        name: "O".into(),
        version: "1.0.0".into(),
        input: "1".into(),
    }
}

fn event(id: u64, source: Option<u64>, kind: EventKind) -> Event {
    Event::with_event_id(id, "i".to_string(), 1, source, kind)
}

fn scheduled(id: u64, name: &str) -> Event {
    event(
        id,
        None,
        EventKind::ActivityScheduled {
            name: name.into(),
            input: "1".into(),
            session_id: None,
            tag: None,
        },
    )
}

fn completed(id: u64, source: u64) -> Event {
    event(
        id,
        Some(source),
        EventKind::ActivityCompleted { result: "1".into() },
    )
}

/// Started, A scheduled and completed, B scheduled and completed, completed.
fn history() -> Vec<Event> {
    vec![
        event(
            1,
            None,
            EventKind::OrchestrationStarted {
                name: "O".into(),
                version: "1.0.0".into(),
                input: "1".into(),
                parent_instance: None,
                parent_id: None,
                parent_execution_id: None,
                carry_forward_events: None,
                initial_custom_status: None,
            },
        ),
        scheduled(2, "A"),
        completed(3, 2),
        scheduled(4, "B"),
        completed(5, 4),
        event(
            6,
            None,
            EventKind::OrchestrationCompleted { output: "1".into() },
        ),
    ]
}

#[test]
fn the_recorded_code_replays_clean_ended_or_running() {
    let h = history();
    assert!(subject(Code::Recorded).check(&h).is_none());
    // Running: the history stops after A completed, or with B scheduled.
    assert!(subject(Code::Recorded).check(&h[..3]).is_none());
    assert!(subject(Code::Recorded).check(&h[..4]).is_none());
}

#[test]
fn a_swapped_activity_diverges_at_its_schedule() {
    let d = subject(Code::Swapped).check(&history()).expect("diverges");
    assert_eq!(d.index, 3);
    // Numbered as the history numbers it, in the field and in the message.
    assert_eq!(d.event_id, 4);
    assert!(
        d.message
            .starts_with("at event 4 the history has activity 'B'"),
        "{}",
        d.message
    );
    assert!(
        matches!(&d.recorded.unwrap().kind, EventKind::ActivityScheduled { name, .. } if name == "B")
    );
    assert!(
        matches!(&d.scheduled.unwrap().kind, EventKind::ActivityScheduled { name, .. } if name == "C")
    );
}

#[test]
fn a_removed_activity_diverges_where_the_code_has_ended() {
    let d = subject(Code::Removed).check(&history()).expect("diverges");
    assert_eq!(d.index, 3);
    assert!(matches!(
        d.scheduled.unwrap().kind,
        EventKind::OrchestrationCompleted { .. }
    ));
    // On a running history too.
    let d = subject(Code::Removed)
        .check(&history()[..4])
        .expect("diverges");
    assert_eq!(d.index, 3);
}

#[test]
fn a_timer_after_the_last_step_diverges_at_the_recorded_end_only() {
    let d = subject(Code::TimerAfter)
        .check(&history())
        .expect("diverges");
    assert_eq!(d.index, 5);
    assert_eq!(d.event_id, 6);
    assert!(d.message.contains("at event 6"), "{}", d.message);
    assert!(matches!(
        d.recorded.unwrap().kind,
        EventKind::OrchestrationCompleted { .. }
    ));
    assert!(matches!(
        d.scheduled.unwrap().kind,
        EventKind::TimerCreated { .. }
    ));
    // A running history that has not reached the end: new steps are fine.
    assert!(subject(Code::TimerAfter).check(&history()[..5]).is_none());
}
