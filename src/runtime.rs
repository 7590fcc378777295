//! `NativeRuntime`: one duroxide runtime, its registrations and its lifecycle.
//!
//! Lifecycle: `Created` → `start()` → `Running` → `shutdown()` → `Stopped`.
//! Start and shutdown are serialized by `transition`, so a shutdown that races
//! a start waits for it and then stops what it started; a second shutdown is a
//! no-op. Once stopped, the JS callbacks are released so nothing keeps the
//! Node process alive.

use std::sync::{Arc, Mutex};

use duroxide::providers::Provider;
use duroxide::runtime::observability::MetricsSnapshot;
use napi::bindgen_prelude::Promise;
use napi::Status;
use napi_derive::napi;

use crate::bridge::activity::ActivityCall;
use crate::bridge::orchestration::OrchestrationCall;
use crate::bridge::{Bridge, JsCallbacks};
use crate::errors::{BridgeError, BridgeResult};
use crate::guard::events::GuardEvent;
use crate::guard::stats::RuntimeHealth;
use crate::guard::GuardedProvider;
use crate::options::{parse_runtime_options, ParsedOptions};
use crate::providers::NativeProvider;
use crate::registrations::{Registrations, DEFAULT_VERSION};

type Tsfn<T, R> = napi::threadsafe_function::ThreadsafeFunction<T, R, T, Status, false>;

enum Phase {
    Created,
    Running(Arc<duroxide::runtime::Runtime>),
    Stopped(Option<MetricsSnapshot>),
}

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

#[napi]
pub struct NativeRuntime {
    /// The provider, wrapped in the fleet guard the runtime dispatches through.
    guard: Arc<GuardedProvider>,
    options: ParsedOptions,
    registrations: Mutex<Registrations>,
    bridge: Arc<Bridge>,
    phase: Mutex<Phase>,
    transition: tokio::sync::Mutex<()>,
}

impl NativeRuntime {
    fn phase(&self) -> std::sync::MutexGuard<'_, Phase> {
        self.phase.lock().expect("phase lock")
    }

    fn require_created(&self, call: &str) -> BridgeResult<()> {
        match &*self.phase() {
            Phase::Created => Ok(()),
            Phase::Running(_) => Err(BridgeError::RuntimeState(format!(
                "{call}: the runtime is already started; register handlers before start()"
            ))),
            Phase::Stopped(_) => Err(BridgeError::RuntimeState(format!(
                "{call}: the runtime has been shut down"
            ))),
        }
    }
}

#[napi]
impl NativeRuntime {
    /// Validates every option now, so a typo fails at construction, not at start.
    #[napi(constructor)]
    pub fn new(
        provider: &NativeProvider,
        options: Option<serde_json::Value>,
    ) -> napi::Result<Self> {
        let options = parse_runtime_options(options.as_ref())?;
        Ok(Self {
            guard: GuardedProvider::new(provider.provider(), &options),
            options,
            registrations: Mutex::new(Registrations::default()),
            bridge: Arc::new(Bridge::default()),
            phase: Mutex::new(Phase::Created),
            transition: tokio::sync::Mutex::new(()),
        })
    }

    #[napi]
    pub fn register_activity(&self, name: String) -> napi::Result<()> {
        self.require_created("registerActivity")?;
        Ok(self
            .registrations
            .lock()
            .expect("registrations lock")
            .add_activity(&name)?)
    }

    /// `version` defaults to `1.0.0`, as in duroxide.
    #[napi]
    pub fn register_orchestration(
        &self,
        name: String,
        version: Option<String>,
    ) -> napi::Result<()> {
        self.require_created("registerOrchestration")?;
        let version = version.unwrap_or_else(|| DEFAULT_VERSION.to_string());
        Ok(self
            .registrations
            .lock()
            .expect("registrations lock")
            .add_orchestration(&name, &version)?)
    }

    /// Starts dispatching. The four callbacks are the JS side of the bridge
    /// (see `bridge/mod.rs` for their signatures).
    #[napi]
    pub async fn start(
        &self,
        orchestration_step: Tsfn<OrchestrationCall, serde_json::Value>,
        orchestration_dispose: Tsfn<u32, ()>,
        activity_start: Tsfn<ActivityCall, Promise<serde_json::Value>>,
        activity_cancel: Tsfn<u32, ()>,
        events: Tsfn<GuardEvent, ()>,
    ) -> napi::Result<()> {
        let _transition = self.transition.lock().await;
        self.require_created("start")?;
        self.bridge.install(JsCallbacks {
            orchestration_step,
            orchestration_dispose,
            activity_start,
            activity_cancel,
            events,
        });
        let (activities, orchestrations) = self
            .registrations
            .lock()
            .expect("registrations lock")
            .build(&self.bridge);
        let observability = &self.options.runtime.observability;
        crate::logging::ensure_stderr_logging(&observability.log_format, &observability.log_level);
        let runtime = duroxide::runtime::Runtime::start_with_options(
            self.guard.clone() as Arc<dyn Provider>,
            activities,
            orchestrations,
            self.options.runtime.clone(),
        )
        .await;
        *self.phase() = Phase::Running(runtime);
        self.guard
            .started(
                crate::guard::events::bridge_sink(self.bridge.clone()),
                self.options.binding.watchdog_interval_ms,
            )
            .await;
        Ok(())
    }

    /// Stops fetching, lets in-flight work finish for at most `timeoutMs`
    /// (default 1000), and returns as soon as it is drained. Idempotent.
    #[napi]
    pub async fn shutdown(&self, timeout_ms: Option<f64>) -> napi::Result<()> {
        let timeout_ms = match timeout_ms {
            None => None,
            Some(t) if t.is_finite() && t >= 0.0 => Some(t as u64),
            Some(t) => {
                return Err(BridgeError::InvalidArgument(format!(
                    "timeoutMs must be a non-negative number, got {t}"
                ))
                .into())
            }
        };
        let _transition = self.transition.lock().await;
        let running = {
            let mut phase = self.phase();
            match std::mem::replace(&mut *phase, Phase::Stopped(None)) {
                Phase::Running(rt) => rt,
                Phase::Created => return Ok(()),
                stopped @ Phase::Stopped(_) => {
                    *phase = stopped;
                    return Ok(());
                }
            }
        };
        let last = running.metrics_snapshot();
        running.clone().shutdown(timeout_ms).await;
        self.guard.stopped().await;
        let last = running.metrics_snapshot().or(last);
        drop(running);
        *self.phase() = Phase::Stopped(last);
        self.bridge.release();
        Ok(())
    }

    /// `null` before start; the final counters after shutdown.
    #[napi]
    pub fn metrics_snapshot(&self) -> Option<RuntimeMetrics> {
        let metrics = match &*self.phase() {
            Phase::Created => None,
            Phase::Running(rt) => rt.metrics_snapshot().as_ref().map(RuntimeMetrics::from),
            Phase::Stopped(last) => last.as_ref().map(RuntimeMetrics::from),
        };
        metrics.map(|m| self.guard.metrics(m))
    }

    /// `{ status: 'ok' | 'degraded', reasons }` from the guard's recent counters.
    #[napi]
    pub fn health(&self) -> RuntimeHealth {
        let running = matches!(&*self.phase(), Phase::Running(_));
        self.guard.health(running)
    }

    /// Every option as handed to duroxide, defaults filled in.
    #[napi]
    pub fn effective_options(&self) -> serde_json::Value {
        self.options.effective.clone()
    }

    /// `'created' | 'running' | 'stopped'`.
    #[napi(getter)]
    pub fn state(&self) -> String {
        match &*self.phase() {
            Phase::Created => "created",
            Phase::Running(_) => "running",
            Phase::Stopped(_) => "stopped",
        }
        .to_string()
    }
}
