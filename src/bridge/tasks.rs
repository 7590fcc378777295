//! Task descriptors: what a JS generator yields, and how each becomes a
//! duroxide future.
//!
//! A descriptor crosses as a plain JS object (`{ kind: 'activity', name, input, ... }`);
//! every payload inside it is already a JSON string, so nothing is encoded twice.
//! The result goes back as an [`Outcome`], which `lib/tasks.js` decodes.
//! An activity's `retry` object is parsed in `retry.rs`.

use std::time::{Duration, UNIX_EPOCH};

use duroxide::OrchestrationContext;
use serde::{Deserialize, Serialize};

use super::joins::{InOrderJoin, SelectFirst};
use super::retry::{retry_policy, RetrySpec};
use super::waits::TurnWaits;
use crate::errors::{BridgeError, BridgeResult, ErrorCode};
use crate::rules::{self, millis};

/// A durable operation yielded by an orchestration generator.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum TaskDescriptor {
    #[serde(rename_all = "camelCase")]
    Activity {
        name: String,
        input: String,
        session_id: Option<String>,
        tag: Option<String>,
        retry: Option<RetrySpec>,
    },
    #[serde(rename_all = "camelCase")]
    Timer {
        delay_ms: f64,
    },
    Event {
        name: String,
        /// A typed wait (`ctx.waitFor`): takes the event from the mailbox
        /// (`waits.rs`). Absent for `waitForEvent`, a one-shot wait.
        #[serde(default)]
        mailbox: bool,
    },
    Dequeue {
        queue: String,
    },
    #[serde(rename_all = "camelCase")]
    SubOrchestration {
        name: String,
        input: String,
        instance_id: Option<String>,
        version: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    StartOrchestration {
        name: String,
        instance_id: String,
        input: String,
        version: Option<String>,
    },
    NewGuid,
    UtcNow,
    ContinueAsNew {
        input: String,
        version: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    GetValueFromInstance {
        instance_id: String,
        key: String,
    },
    All {
        tasks: Vec<TaskDescriptor>,
    },
    Race {
        tasks: Vec<TaskDescriptor>,
    },
}

/// The result of a task, as `lib/tasks.js` decodes it.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub enum Outcome {
    /// A JSON payload.
    Ok(String),
    /// A failure message (activity error, sub-orchestration failure, ...).
    Err(String),
    /// `all`: one outcome per task, in task order.
    All(Vec<Outcome>),
    /// `race`: the winner's index and outcome.
    Race { index: usize, outcome: Box<Outcome> },
}

pub type TaskFuture = super::joins::Task<Outcome>;

fn from_result(r: Result<String, String>) -> Outcome {
    match r {
        Ok(v) => Outcome::Ok(v),
        Err(e) => Outcome::Err(e),
    }
}

fn optional_version(field: &str, version: &Option<String>) -> BridgeResult<()> {
    if let Some(v) = version {
        rules::version(field, v)?;
    }
    Ok(())
}

/// Checks a descriptor completely before anything is scheduled, so a bad
/// descriptor inside an `all` does not leave its siblings half-scheduled.
/// `max_payload` is the runtime's `maxPayloadBytes`.
pub fn validate(task: &TaskDescriptor, max_payload: u32) -> BridgeResult<()> {
    match task {
        TaskDescriptor::Activity {
            name,
            input,
            session_id,
            tag,
            retry,
        } => {
            rules::name("activity name", name)?;
            rules::payload("input", input, max_payload)?;
            if let Some(s) = session_id {
                rules::name("sessionId", s)?;
            }
            if let Some(t) = tag {
                rules::name("tag", t)?;
            }
            if let Some(r) = retry {
                // duroxide's retry helpers take no tag: scheduling both would
                // silently drop the routing.
                if tag.is_some() {
                    return Err(BridgeError::InvalidArgument(format!(
                        "activity '{name}' has both a tag and a retry policy; duroxide retries are untagged, so use one or the other"
                    )));
                }
                retry_policy(r)?;
            }
        }
        TaskDescriptor::Timer { delay_ms } => {
            millis("delayMs", *delay_ms)?;
        }
        TaskDescriptor::Event { name, .. } => rules::name("event name", name)?,
        TaskDescriptor::Dequeue { queue } => rules::name("queue name", queue)?,
        TaskDescriptor::SubOrchestration {
            name,
            input,
            instance_id,
            version,
        } => {
            rules::name("orchestration name", name)?;
            rules::payload("input", input, max_payload)?;
            if let Some(id) = instance_id {
                rules::root_instance_id("instanceId", id)?;
            }
            optional_version("version", version)?;
        }
        TaskDescriptor::StartOrchestration {
            name,
            instance_id,
            input,
            version,
        } => {
            rules::name("orchestration name", name)?;
            rules::payload("input", input, max_payload)?;
            rules::root_instance_id("instanceId", instance_id)?;
            optional_version("version", version)?;
        }
        TaskDescriptor::ContinueAsNew { input, version } => {
            rules::payload("input", input, max_payload)?;
            optional_version("version", version)?;
        }
        TaskDescriptor::GetValueFromInstance { instance_id, key } => {
            rules::instance_id("instanceId", instance_id)?;
            rules::name("key", key)?;
        }
        TaskDescriptor::All { tasks } => tasks.iter().try_for_each(|t| validate(t, max_payload))?,
        TaskDescriptor::Race { tasks } => {
            if tasks.is_empty() {
                return Err(BridgeError::InvalidArgument(
                    "race needs at least one task".into(),
                ));
            }
            tasks.iter().try_for_each(|t| validate(t, max_payload))?;
        }
        TaskDescriptor::NewGuid | TaskDescriptor::UtcNow => {}
    }
    Ok(())
}

/// The check `validate` runs at `yield`, callable by `lib/tasks.js` when a
/// task is created, so a bad argument throws at the call that made it.
/// `max_payload_bytes` is the runtime's `maxPayloadBytes`, which the context
/// passes; without it the payloads are not measured (a join's tasks were
/// measured when they were made, and `yield` measures every task again).
#[napi_derive::napi]
pub fn validate_task(
    task: serde_json::Value,
    max_payload_bytes: Option<u32>,
) -> napi::Result<(), ErrorCode> {
    let task: TaskDescriptor = serde_json::from_value(task)
        .map_err(|e| BridgeError::InvalidArgument(format!("not a task: {e}")))?;
    Ok(validate(&task, max_payload_bytes.unwrap_or(u32::MAX))?)
}

/// Schedules a validated descriptor on `ctx`. Scheduling happens here, in
/// descriptor order, which is what keeps replay deterministic. `waits`
/// counts the turn's subscriptions (`waits.rs`).
///
/// This is for the task a generator yielded: the turn awaits it to the end
/// (nothing races it), which lets an `all` of plain activities be joined in
/// order (see [`InOrderJoin`]).
pub(crate) fn schedule(
    ctx: &OrchestrationContext,
    task: TaskDescriptor,
    waits: &TurnWaits,
) -> TaskFuture {
    match task {
        TaskDescriptor::All { tasks } if tasks.iter().all(is_plain_activity) => {
            let futures: Vec<TaskFuture> = tasks
                .into_iter()
                .map(|t| schedule_nested(ctx, t, waits))
                .collect();
            Box::pin(async move { Outcome::All(InOrderJoin::new(futures).await) })
        }
        task => schedule_nested(ctx, task, waits),
    }
}

/// An activity without a retry policy: its future only looks up the
/// activity's result, so when it is polled changes nothing but when it
/// resolves.
fn is_plain_activity(task: &TaskDescriptor) -> bool {
    matches!(task, TaskDescriptor::Activity { retry: None, .. })
}

/// [`schedule`] for a task inside an `all` or a `race`.
fn schedule_nested(
    ctx: &OrchestrationContext,
    task: TaskDescriptor,
    waits: &TurnWaits,
) -> TaskFuture {
    match task {
        TaskDescriptor::Activity {
            name,
            input,
            session_id,
            tag,
            retry: Some(spec),
        } => {
            let policy = retry_policy(&spec).expect("validated");
            let ctx = ctx.clone();
            debug_assert!(tag.is_none(), "validate refuses a tag with a retry policy");
            Box::pin(async move {
                from_result(
                    super::retry::with_retry(&ctx, &name, &input, session_id.as_deref(), policy)
                        .await,
                )
            })
        }
        TaskDescriptor::Activity {
            name,
            input,
            session_id,
            tag,
            retry: None,
        } => {
            let mut fut = match session_id {
                Some(s) => ctx.schedule_activity_on_session(name, input, s),
                None => ctx.schedule_activity(name, input),
            };
            if let Some(t) = tag {
                fut = fut.with_tag(t);
            }
            Box::pin(async move { from_result(fut.await) })
        }
        TaskDescriptor::Timer { delay_ms } => {
            let fut = ctx.schedule_timer(Duration::from_millis(delay_ms as u64));
            Box::pin(async move {
                fut.await;
                Outcome::Ok("null".into())
            })
        }
        TaskDescriptor::Event { name, mailbox } => {
            let one_shot = waits.subscribe(&name) || !mailbox;
            let fut = if one_shot {
                ctx.schedule_wait(name)
            } else {
                ctx.dequeue_event(name)
            };
            Box::pin(async move { Outcome::Ok(fut.await) })
        }
        TaskDescriptor::Dequeue { queue } => {
            waits.subscribe(&queue);
            let fut = ctx.dequeue_event(queue);
            Box::pin(async move { Outcome::Ok(fut.await) })
        }
        TaskDescriptor::SubOrchestration {
            name,
            input,
            instance_id,
            version,
        } => {
            let fut = match instance_id {
                Some(id) => {
                    ctx.schedule_sub_orchestration_versioned_with_id(name, version, id, input)
                }
                None => ctx.schedule_sub_orchestration_versioned(name, version, input),
            };
            Box::pin(async move { from_result(fut.await) })
        }
        TaskDescriptor::StartOrchestration {
            name,
            instance_id,
            input,
            version,
        } => {
            ctx.schedule_orchestration_versioned(name, version, instance_id, input);
            Box::pin(std::future::ready(Outcome::Ok("null".into())))
        }
        // new_guid, utc_now and continue_as_new return futures that borrow the
        // context, so they are created inside the owning async block: they
        // schedule on first poll, which is as deterministic as construction.
        TaskDescriptor::NewGuid => {
            let ctx = ctx.clone();
            Box::pin(async move {
                match ctx.new_guid().await {
                    Ok(guid) => Outcome::Ok(serde_json::Value::String(guid).to_string()),
                    Err(e) => Outcome::Err(e),
                }
            })
        }
        TaskDescriptor::UtcNow => {
            let ctx = ctx.clone();
            Box::pin(async move {
                match ctx.utc_now().await {
                    Ok(t) => {
                        let ms = t
                            .duration_since(UNIX_EPOCH)
                            .map(|d| d.as_millis())
                            .unwrap_or(0);
                        Outcome::Ok(ms.to_string())
                    }
                    Err(e) => Outcome::Err(e),
                }
            })
        }
        TaskDescriptor::ContinueAsNew { input, version } => {
            let ctx = ctx.clone();
            Box::pin(async move {
                let r = match version {
                    Some(v) => ctx.continue_as_new_versioned(v, input).await,
                    None => ctx.continue_as_new(input).await,
                };
                from_result(r)
            })
        }
        TaskDescriptor::GetValueFromInstance { instance_id, key } => {
            let fut = ctx.get_kv_value_from_instance(instance_id, key);
            Box::pin(async move {
                match fut.await {
                    Ok(v) => {
                        Outcome::Ok(serde_json::to_string(&v).expect("Option<String> encodes"))
                    }
                    Err(e) => Outcome::Err(e),
                }
            })
        }
        TaskDescriptor::All { tasks } => {
            let futures: Vec<TaskFuture> = tasks
                .into_iter()
                .map(|t| schedule_nested(ctx, t, waits))
                .collect();
            let ctx = ctx.clone();
            Box::pin(async move { Outcome::All(ctx.join(futures).await) })
        }
        TaskDescriptor::Race { tasks } => {
            let futures: Vec<TaskFuture> = tasks
                .into_iter()
                .map(|t| schedule_nested(ctx, t, waits))
                .collect();
            Box::pin(async move {
                let (index, outcome) = SelectFirst::new(futures).await;
                Outcome::Race {
                    index,
                    outcome: Box::new(outcome),
                }
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: serde_json::Value) -> Result<TaskDescriptor, serde_json::Error> {
        serde_json::from_value(v)
    }

    #[test]
    fn nested_race_inside_all_parses() {
        let t = parse(serde_json::json!({
            "kind": "all",
            "tasks": [
                {"kind": "race", "tasks": [{"kind": "timer", "delayMs": 5}, {"kind": "event", "name": "go"}]},
                {"kind": "activity", "name": "A", "input": "1"}
            ]
        }))
        .unwrap();
        assert!(validate(&t, rules::DEFAULT_MAX_PAYLOAD_BYTES).is_ok());
    }

    #[test]
    fn bad_descriptors_are_refused_before_scheduling() {
        let empty_race = parse(serde_json::json!({"kind": "race", "tasks": []})).unwrap();
        assert!(validate(&empty_race, rules::DEFAULT_MAX_PAYLOAD_BYTES)
            .unwrap_err()
            .to_string()
            .contains("at least one task"));
        let reserved = parse(serde_json::json!({
            "kind": "startOrchestration", "name": "X", "instanceId": "sub::1", "input": "null"
        }))
        .unwrap();
        assert!(validate(&reserved, rules::DEFAULT_MAX_PAYLOAD_BYTES)
            .unwrap_err()
            .to_string()
            .contains("reserved"));
        let bad_version = parse(serde_json::json!({
            "kind": "subOrchestration", "name": "X", "input": "null", "version": "v2"
        }))
        .unwrap();
        assert!(validate(&bad_version, rules::DEFAULT_MAX_PAYLOAD_BYTES)
            .unwrap_err()
            .to_string()
            .contains("semver"));
        let tagged_retry = parse(serde_json::json!({
            "kind": "activity", "name": "A", "input": "1", "tag": "gpu", "retry": {"maxAttempts": 2}
        }))
        .unwrap();
        assert!(validate(&tagged_retry, rules::DEFAULT_MAX_PAYLOAD_BYTES)
            .unwrap_err()
            .message()
            .contains("both a tag and a retry policy"));
        let negative_timer = parse(serde_json::json!({"kind": "timer", "delayMs": -1})).unwrap();
        assert!(validate(&negative_timer, rules::DEFAULT_MAX_PAYLOAD_BYTES).is_err());
        assert!(parse(serde_json::json!({"kind": "teleport"})).is_err());
    }

    #[test]
    fn payloads_over_the_limit_are_refused_in_any_task() {
        let big = serde_json::Value::String(format!("\"{}\"", "x".repeat(10)));
        for task in [
            serde_json::json!({"kind": "activity", "name": "A", "input": big}),
            serde_json::json!({"kind": "subOrchestration", "name": "S", "input": big}),
            serde_json::json!({"kind": "startOrchestration", "name": "S", "instanceId": "d", "input": big}),
            serde_json::json!({"kind": "continueAsNew", "input": big}),
            serde_json::json!({"kind": "all", "tasks": [{"kind": "activity", "name": "A", "input": big}]}),
        ] {
            let t = parse(task).unwrap();
            assert!(validate(&t, 12).is_ok());
            let e = validate(&t, 11).unwrap_err();
            assert!(
                e.message().starts_with("input is 12 bytes of JSON"),
                "{}",
                e.message()
            );
        }
    }
}
