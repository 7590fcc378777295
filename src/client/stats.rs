//! Client stats: system-wide counters, queue depths, per-instance sizes.

use napi_derive::napi;

use super::NativeClient;
use crate::errors::{BridgeError, Settled};
use crate::rules;

/// `client.getSystemMetrics()`. Counts are of instances by the status of
/// their current execution.
#[napi(object)]
pub struct SystemMetrics {
    /// Every instance in the store.
    pub total_instances: i64,
    /// Every execution of every instance (continue-as-new adds executions).
    pub total_executions: i64,
    /// Instances whose current execution is running.
    pub running_instances: i64,
    /// Instances whose current execution completed.
    pub completed_instances: i64,
    /// Instances whose current execution failed.
    pub failed_instances: i64,
    /// History events across all executions.
    pub total_events: i64,
}

/// `client.getQueueDepths()`: messages waiting to be fetched (locked ones excluded).
#[napi(object)]
pub struct QueueDepths {
    /// Orchestrator queue: starts, completions, events and timers. SQLite
    /// counts timers not yet due; Postgres counts only visible messages.
    pub orchestrator_queue: i64,
    /// Worker (activity) queue.
    pub worker_queue: i64,
    /// Always 0 with the SQLite and Postgres stores: they keep timers in the
    /// orchestrator queue. Kept for providers with a separate timer queue.
    pub timer_queue: i64,
}

/// `client.getOrchestrationStats(id)`: sizes of one instance's current execution.
#[napi(object)]
pub struct OrchestrationStats {
    /// Events in the current execution's history.
    pub history_event_count: i64,
    /// Approximate stored size of that history in bytes.
    pub history_size_bytes: i64,
    /// Queue messages carried into this execution by continue-as-new.
    pub queue_pending_count: i64,
    /// Number of KV keys the instance holds.
    pub kv_user_key_count: i64,
    /// Sum of the instance's KV value sizes in bytes.
    pub kv_total_value_bytes: i64,
}

fn n<T: TryInto<i64>>(v: T) -> i64 {
    v.try_into().unwrap_or(i64::MAX)
}

#[napi]
impl NativeClient {
    #[napi(ts_return_type = "Promise<SystemMetrics>")]
    pub async fn get_system_metrics(&self) -> Settled<SystemMetrics> {
        Settled::of(async {
            let m = self
                .inner
                .get_system_metrics()
                .await
                .map_err(BridgeError::from)?;
            Ok(SystemMetrics {
                total_instances: n(m.total_instances),
                total_executions: n(m.total_executions),
                running_instances: n(m.running_instances),
                completed_instances: n(m.completed_instances),
                failed_instances: n(m.failed_instances),
                total_events: n(m.total_events),
            })
        })
        .await
    }

    #[napi(ts_return_type = "Promise<QueueDepths>")]
    pub async fn get_queue_depths(&self) -> Settled<QueueDepths> {
        Settled::of(async {
            let q = self
                .inner
                .get_queue_depths()
                .await
                .map_err(BridgeError::from)?;
            Ok(QueueDepths {
                orchestrator_queue: n(q.orchestrator_queue),
                worker_queue: n(q.worker_queue),
                timer_queue: n(q.timer_queue),
            })
        })
        .await
    }

    /// `null` when the instance does not exist (yet).
    #[napi(ts_return_type = "Promise<OrchestrationStats | null>")]
    pub async fn get_orchestration_stats(
        &self,
        instance_id: String,
    ) -> Settled<Option<OrchestrationStats>> {
        Settled::of(async {
            rules::instance_id("instanceId", &instance_id)?;
            let stats = self
                .inner
                .get_orchestration_stats(&instance_id)
                .await
                .map_err(BridgeError::from)?;
            Ok(stats.map(|s| OrchestrationStats {
                history_event_count: n(s.history_event_count),
                history_size_bytes: n(s.history_size_bytes),
                queue_pending_count: n(s.queue_pending_count),
                kv_user_key_count: n(s.kv_user_key_count),
                kv_total_value_bytes: n(s.kv_total_value_bytes),
            }))
        })
        .await
    }
}
