//! Client management: listing and inspecting instances and their history.
//! Deleting and pruning are in `retention.rs`.
//!
//! Both storage backends report a missing instance or execution as a
//! permanent provider error whose text says "not found"; `not_found` turns
//! that into `ERR_NOT_FOUND` with a message naming what was asked for.

use duroxide::{ClientError, Event, EventKind};
use napi_derive::napi;

use super::history::event_data;
use super::NativeClient;
use crate::errors::{BridgeError, BridgeResult, Settled};
use crate::provider_errors::ProviderFault;
use crate::rules::{self, ExecutionStatusName};
use crate::trace_context;

/// `client.getInstanceInfo(id)`.
#[napi(object)]
pub struct InstanceInfo {
    pub instance_id: String,
    pub orchestration_name: String,
    /// The version the instance's current execution runs.
    pub orchestration_version: String,
    /// 1 for the first execution; continue-as-new adds one.
    pub current_execution_id: i64,
    /// Status of the current execution.
    pub status: ExecutionStatusName,
    /// As stored: the JSON output when completed, the failure text when failed.
    pub output: Option<String>,
    /// Epoch milliseconds.
    pub created_at: i64,
    /// Epoch milliseconds.
    pub updated_at: i64,
    /// The parent's instance id for a sub-orchestration.
    pub parent_instance_id: Option<String>,
}

/// `client.getExecutionInfo(id, executionId)`.
#[napi(object)]
pub struct ExecutionInfo {
    pub execution_id: i64,
    pub status: ExecutionStatusName,
    /// As stored: output, failure text, or the next execution's input.
    pub output: Option<String>,
    /// Epoch milliseconds.
    pub started_at: i64,
    /// Epoch milliseconds; absent while running.
    pub completed_at: Option<i64>,
    /// History events of this execution.
    pub event_count: i64,
}

/// One entry of `client.readExecutionHistory(id, executionId)`.
#[napi(object)]
pub struct HistoryEvent {
    /// Position in the execution's history, from 1.
    pub event_id: i64,
    /// The crate's `EventKind` variant name (`OrchestrationStarted`, `ActivityScheduled`, ...).
    pub kind: String,
    /// For completions: the `eventId` of the event that scheduled them.
    pub source_event_id: Option<i64>,
    /// Epoch milliseconds when the event was recorded.
    pub timestamp_ms: i64,
    /// The event's fields as JSON text, user payloads embedded as JSON values
    /// (shapes per kind in `history.rs`); absent for kinds without data.
    pub data: Option<String>,
}

/// `client.getInstanceTree(id)`.
#[napi(object)]
pub struct InstanceTree {
    pub root_id: String,
    /// The root and every descendant sub-orchestration.
    pub all_ids: Vec<String>,
    /// `allIds.length`.
    pub size: i64,
}

pub(super) fn n<T: TryInto<i64>>(v: T) -> i64 {
    v.try_into().unwrap_or(i64::MAX)
}

/// Maps the stores' "not found" provider errors to `ERR_NOT_FOUND`.
pub(super) fn not_found(err: ClientError, what: impl FnOnce() -> String) -> BridgeError {
    match &err {
        ClientError::InstanceNotFound { .. } => BridgeError::NotFound(what()),
        ClientError::Provider(p) if ProviderFault::is(p, ProviderFault::NotFound) => {
            BridgeError::NotFound(what())
        }
        _ => BridgeError::from(err),
    }
}

/// A running execution has no output or completion time; SQLite reads its
/// empty columns as `""` and `0`. A continued-as-new execution's output is
/// the next execution's input, shown without the bridge's trace-context
/// envelope (`trace_context.rs`).
fn settled(
    status: &str,
    output: Option<String>,
    completed_at: Option<u64>,
) -> (Option<String>, Option<u64>) {
    match status {
        "Running" => (None, None),
        "ContinuedAsNew" => (
            output.map(|o| trace_context::unwrap(o).0),
            completed_at.filter(|t| *t != 0),
        ),
        // The failure text as status `error` shows it (`bridge/failure.rs`).
        "Failed" => (
            output.map(|o| crate::bridge::failure::message(&o).to_string()),
            completed_at.filter(|t| *t != 0),
        ),
        _ => (output, completed_at.filter(|t| *t != 0)),
    }
}

pub(super) fn execution_id(value: f64) -> BridgeResult<u64> {
    if value.is_finite() && value >= 1.0 && value.fract() == 0.0 && value <= i64::MAX as f64 {
        Ok(value as u64)
    } else {
        Err(BridgeError::InvalidArgument(format!(
            "executionId must be an integer >= 1, got {value}"
        )))
    }
}

/// The `EventKind` variant's name. Listed by hand so a new crate variant is a
/// compile error here rather than a wrong name at run time.
fn kind_name(kind: &EventKind) -> &'static str {
    use EventKind as K;
    match kind {
        K::OrchestrationStarted { .. } => "OrchestrationStarted",
        K::OrchestrationCompleted { .. } => "OrchestrationCompleted",
        K::OrchestrationFailed { .. } => "OrchestrationFailed",
        K::ActivityScheduled { .. } => "ActivityScheduled",
        K::ActivityCompleted { .. } => "ActivityCompleted",
        K::ActivityFailed { .. } => "ActivityFailed",
        K::ActivityCancelRequested { .. } => "ActivityCancelRequested",
        K::TimerCreated { .. } => "TimerCreated",
        K::TimerFired { .. } => "TimerFired",
        K::ExternalSubscribed { .. } => "ExternalSubscribed",
        K::ExternalEvent { .. } => "ExternalEvent",
        K::OrchestrationChained { .. } => "OrchestrationChained",
        K::SubOrchestrationScheduled { .. } => "SubOrchestrationScheduled",
        K::SubOrchestrationCompleted { .. } => "SubOrchestrationCompleted",
        K::SubOrchestrationFailed { .. } => "SubOrchestrationFailed",
        K::SubOrchestrationCancelRequested { .. } => "SubOrchestrationCancelRequested",
        K::OrchestrationContinuedAsNew { .. } => "OrchestrationContinuedAsNew",
        K::OrchestrationCancelRequested { .. } => "OrchestrationCancelRequested",
        K::ExternalSubscribedCancelled { .. } => "ExternalSubscribedCancelled",
        K::QueueSubscribed { .. } => "QueueSubscribed",
        K::QueueEventDelivered { .. } => "QueueEventDelivered",
        K::QueueSubscriptionCancelled { .. } => "QueueSubscriptionCancelled",
        K::CustomStatusUpdated { .. } => "CustomStatusUpdated",
        K::KeyValueSet { .. } => "KeyValueSet",
        K::KeyValueCleared { .. } => "KeyValueCleared",
        K::KeyValuesCleared => "KeyValuesCleared",
    }
}

impl From<Event> for HistoryEvent {
    fn from(e: Event) -> Self {
        HistoryEvent {
            event_id: n(e.event_id),
            kind: kind_name(&e.kind).to_string(),
            source_event_id: e.source_event_id.map(n),
            timestamp_ms: n(e.timestamp_ms),
            data: event_data(&e.kind),
        }
    }
}

/// duroxide's SQLite store keeps `created_at`, `updated_at` and `started_at`
/// as SQL text timestamps but reads them as integers, so they come back as 0.
/// The history holds the same moments in epoch ms: an execution starts with
/// its first event and was last updated at its last one.
impl NativeClient {
    async fn first_execution(&self, instance_id: &str) -> BridgeResult<u64> {
        let ids = self
            .inner
            .list_executions(instance_id)
            .await
            .map_err(BridgeError::from)?;
        Ok(ids.into_iter().min().unwrap_or(1))
    }

    /// (first, last) event timestamps of an execution; (0, 0) without events.
    async fn history_span(&self, instance_id: &str, execution_id: u64) -> BridgeResult<(u64, u64)> {
        let events = self
            .inner
            .read_execution_history(instance_id, execution_id)
            .await
            .map_err(BridgeError::from)?;
        let first = events.iter().map(|e| e.timestamp_ms).min().unwrap_or(0);
        let last = events.iter().map(|e| e.timestamp_ms).max().unwrap_or(0);
        Ok((first, last))
    }
}

#[napi]
impl NativeClient {
    /// Every instance id, newest first.
    #[napi(ts_return_type = "Promise<Array<string>>")]
    pub async fn list_all_instances(&self) -> Settled<Vec<String>> {
        Settled::of(async {
            self.inner
                .list_all_instances()
                .await
                .map_err(BridgeError::from)
        })
        .await
    }

    /// Instance ids whose current execution has `status`, newest first. Any
    /// value is taken so that every wrong one gets the list of valid ones.
    #[napi(
        ts_return_type = "Promise<Array<string>>",
        ts_args_type = "status: string"
    )]
    pub async fn list_instances_by_status(
        &self,
        status: Option<serde_json::Value>,
    ) -> Settled<Vec<String>> {
        Settled::of(async {
            let status = match &status {
                Some(serde_json::Value::String(s)) => rules::execution_status("status", s)?,
                Some(other) => rules::execution_status("status", &other.to_string())?,
                None => rules::execution_status("status", "undefined")?,
            };
            self.inner
                .list_instances_by_status(status.as_str())
                .await
                .map_err(BridgeError::from)
        })
        .await
    }

    #[napi(ts_return_type = "Promise<InstanceInfo>")]
    pub async fn get_instance_info(&self, instance_id: String) -> Settled<InstanceInfo> {
        Settled::of(async {
            rules::instance_id("instanceId", &instance_id)?;
            let i = self
                .inner
                .get_instance_info(&instance_id)
                .await
                .map_err(|e| not_found(e, || format!("instance '{instance_id}' not found")))?;
            let mut created_at = i.created_at;
            let mut updated_at = i.updated_at;
            if created_at == 0 || updated_at == 0 {
                let first = self.first_execution(&instance_id).await?;
                let (start, _) = self.history_span(&instance_id, first).await?;
                let (_, last) = self
                    .history_span(&instance_id, i.current_execution_id)
                    .await?;
                if created_at == 0 {
                    created_at = start;
                }
                if updated_at == 0 {
                    updated_at = last;
                }
            }
            let (output, _) = settled(&i.status, i.output, None);
            Ok(InstanceInfo {
                instance_id: i.instance_id,
                orchestration_name: i.orchestration_name,
                orchestration_version: i.orchestration_version,
                current_execution_id: n(i.current_execution_id),
                status: rules::store_status(&i.status)?,
                output,
                created_at: n(created_at),
                updated_at: n(updated_at),
                parent_instance_id: i.parent_instance_id,
            })
        })
        .await
    }

    #[napi(ts_return_type = "Promise<ExecutionInfo>")]
    pub async fn get_execution_info(
        &self,
        instance_id: String,
        execution_id: f64,
    ) -> Settled<ExecutionInfo> {
        Settled::of(async {
            rules::instance_id("instanceId", &instance_id)?;
            let id = self::execution_id(execution_id)?;
            let e = self
                .inner
                .get_execution_info(&instance_id, id)
                .await
                .map_err(|e| {
                    not_found(e, || {
                        format!("execution {id} of instance '{instance_id}' not found")
                    })
                })?;
            let started_at = match e.started_at {
                0 => self.history_span(&instance_id, id).await?.0,
                t => t,
            };
            let (output, completed_at) = settled(&e.status, e.output, e.completed_at);
            Ok(ExecutionInfo {
                execution_id: n(e.execution_id),
                status: rules::store_status(&e.status)?,
                output,
                started_at: n(started_at),
                completed_at: completed_at.map(n),
                event_count: n(e.event_count),
            })
        })
        .await
    }

    /// Execution ids of the instance in ascending order (`[]` when none).
    #[napi(ts_return_type = "Promise<Array<number>>")]
    pub async fn list_executions(&self, instance_id: String) -> Settled<Vec<i64>> {
        Settled::of(async {
            rules::instance_id("instanceId", &instance_id)?;
            let ids = self
                .inner
                .list_executions(&instance_id)
                .await
                .map_err(BridgeError::from)?;
            Ok(ids.into_iter().map(n).collect())
        })
        .await
    }

    /// The events of one execution, oldest first (`[]` when there are none).
    #[napi(ts_return_type = "Promise<Array<HistoryEvent>>")]
    pub async fn read_execution_history(
        &self,
        instance_id: String,
        execution_id: f64,
    ) -> Settled<Vec<HistoryEvent>> {
        Settled::of(async {
            rules::instance_id("instanceId", &instance_id)?;
            let id = self::execution_id(execution_id)?;
            let events = self
                .inner
                .read_execution_history(&instance_id, id)
                .await
                .map_err(|e| {
                    not_found(e, || {
                        format!("execution {id} of instance '{instance_id}' not found")
                    })
                })?;
            Ok(events.into_iter().map(HistoryEvent::from).collect())
        })
        .await
    }

    /// The instance and its descendant sub-orchestrations.
    #[napi(ts_return_type = "Promise<InstanceTree>")]
    pub async fn get_instance_tree(&self, instance_id: String) -> Settled<InstanceTree> {
        Settled::of(async {
            rules::instance_id("instanceId", &instance_id)?;
            // The crate walks children without checking the root exists, so a
            // typo would come back as a one-instance tree.
            let missing = || format!("instance '{instance_id}' not found");
            self.inner
                .get_instance_info(&instance_id)
                .await
                .map_err(|e| not_found(e, missing))?;
            let tree = self
                .inner
                .get_instance_tree(&instance_id)
                .await
                .map_err(|e| not_found(e, missing))?;
            Ok(InstanceTree {
                size: n(tree.all_ids.len()),
                root_id: tree.root_id,
                all_ids: tree.all_ids,
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_events_carry_variant_name_and_payload() {
        let e = Event::with_event_id(
            3,
            "i",
            1,
            Some(2),
            EventKind::ActivityCompleted {
                result: "\"ok\"".into(),
            },
        );
        let h = HistoryEvent::from(e);
        assert_eq!(h.kind, "ActivityCompleted");
        assert_eq!(h.event_id, 3);
        assert_eq!(h.source_event_id, Some(2));
        let data: serde_json::Value = serde_json::from_str(h.data.as_deref().unwrap()).unwrap();
        assert_eq!(data, serde_json::json!("ok"));

        let q = EventKind::QueueSubscribed { name: "q".into() };
        assert_eq!(kind_name(&q), "QueueSubscribed");
    }

    #[test]
    fn numeric_arguments_are_checked() {
        assert!(execution_id(0.0).is_err());
        assert!(execution_id(1.5).is_err());
        assert!(execution_id(f64::NAN).is_err());
        assert_eq!(execution_id(2.0).unwrap(), 2);
    }
}
