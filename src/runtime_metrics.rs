//! `runtime.metricsSnapshot()`: duroxide's counters and the guard's, in one
//! object. A leaf module: the runtime fills in duroxide's part, the guard
//! (`guard/stats.rs`) its own.

use duroxide::runtime::observability::MetricsSnapshot;
use napi_derive::napi;

/// Counters of the runtime, as `runtime.metricsSnapshot()` returns them.
/// The fields after `provider_errors` are the guard's (`GuardStats::apply`).
#[napi(object)]
#[derive(Default)]
pub struct RuntimeMetrics {
    pub orch_starts: i64,
    pub orch_completions: i64,
    pub orch_failures: i64,
    pub orch_application_errors: i64,
    pub orch_infrastructure_errors: i64,
    pub orch_configuration_errors: i64,
    pub orch_poison: i64,
    pub activity_success: i64,
    pub activity_app_errors: i64,
    pub activity_infra_errors: i64,
    pub activity_config_errors: i64,
    pub activity_poison: i64,
    pub orch_dispatcher_items_fetched: i64,
    pub worker_dispatcher_items_fetched: i64,
    pub orch_continue_as_new: i64,
    pub suborchestration_calls: i64,
    pub provider_errors: i64,
    pub invalid_lock_token_acks: i64,
    pub work_lock_lost_acks: i64,
    pub poison_dispositions: i64,
    pub deadlock_retries: i64,
    pub orphaned_locks_released: i64,
    pub livelocks_detected: i64,
    pub orch_fetch_p50_ms: Option<f64>,
    pub orch_fetch_p99_ms: Option<f64>,
    pub orch_fetch_samples: i64,
    pub orch_fetch_wait_p99_ms: Option<f64>,
    pub work_fetch_p50_ms: Option<f64>,
    pub work_fetch_p99_ms: Option<f64>,
    pub work_fetch_samples: i64,
    /// Turns not committed because their code did not replay the history
    /// (`onNondeterminism: 'hold'`); duroxide's failure counts above leave them out.
    pub nondeterminism_holds: i64,
    /// The instances held now, sorted.
    pub held_instances: Vec<String>,
}

impl From<&MetricsSnapshot> for RuntimeMetrics {
    fn from(m: &MetricsSnapshot) -> Self {
        let n = |v: u64| v as i64;
        Self {
            orch_starts: n(m.orch_starts),
            orch_completions: n(m.orch_completions),
            orch_failures: n(m.orch_failures),
            orch_application_errors: n(m.orch_application_errors),
            orch_infrastructure_errors: n(m.orch_infrastructure_errors),
            orch_configuration_errors: n(m.orch_configuration_errors),
            orch_poison: n(m.orch_poison),
            activity_success: n(m.activity_success),
            activity_app_errors: n(m.activity_app_errors),
            activity_infra_errors: n(m.activity_infra_errors),
            activity_config_errors: n(m.activity_config_errors),
            activity_poison: n(m.activity_poison),
            orch_dispatcher_items_fetched: n(m.orch_dispatcher_items_fetched),
            worker_dispatcher_items_fetched: n(m.worker_dispatcher_items_fetched),
            orch_continue_as_new: n(m.orch_continue_as_new),
            suborchestration_calls: n(m.suborchestration_calls),
            provider_errors: n(m.provider_errors),
            ..Default::default()
        }
    }
}
