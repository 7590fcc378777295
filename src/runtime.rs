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
use napi::bindgen_prelude::{Promise, PromiseRaw};
use napi::Env;
use napi::Status;
use napi_derive::napi;

use crate::bridge::activity::ActivityCall;
use crate::bridge::orchestration::OrchestrationCall;
use crate::bridge::{Bridge, JsCallbacks};
use crate::errors::{BridgeError, BridgeResult, ErrorCode, Settled};
use crate::guard::events::GuardEvent;
use crate::guard::stats::RuntimeHealth;
use crate::guard::GuardedProvider;
use crate::options::{parse_runtime_options, ParsedOptions};
use crate::providers::NativeProvider;
use crate::registrations::Registrations;

type Tsfn<T, R> = napi::threadsafe_function::ThreadsafeFunction<T, R, T, Status, false>;

/// The one record of where a runtime is in its lifecycle; the JS `Runtime`
/// keeps none of its own.
enum Phase {
    Created,
    /// `start()` was called; set synchronously at the call, so a registration
    /// the caller writes after `start()` is refused even before it settles.
    Starting,
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
    /// Shared with the tasks `start()` and `shutdown()` spawn.
    core: Arc<Core>,
}

struct Core {
    /// The provider, wrapped in the fleet guard the runtime dispatches through.
    guard: Arc<GuardedProvider>,
    options: ParsedOptions,
    registrations: Mutex<Registrations>,
    bridge: Arc<Bridge>,
    phase: Mutex<Phase>,
    transition: tokio::sync::Mutex<()>,
}

impl Core {
    fn phase(&self) -> std::sync::MutexGuard<'_, Phase> {
        self.phase.lock().expect("phase lock")
    }

    fn require_created(&self, call: &str) -> BridgeResult<()> {
        match &*self.phase() {
            Phase::Created => Ok(()),
            Phase::Starting | Phase::Running(_) => Err(BridgeError::RuntimeState(format!(
                "{call}: the runtime is already started; register handlers before start()"
            ))),
            Phase::Stopped(_) => Err(BridgeError::RuntimeState(format!(
                "{call}: the runtime has been shut down"
            ))),
        }
    }

    /// The part of `start()` that runs at the call: claims the lifecycle.
    fn claim_start(&self) -> BridgeResult<()> {
        self.require_created("start")?;
        *self.phase() = Phase::Starting;
        Ok(())
    }

    /// The rest of `start()`, after `claim_start`.
    async fn start_with(&self, callbacks: JsCallbacks) -> BridgeResult<()> {
        let _transition = self.transition.lock().await;
        if !matches!(*self.phase(), Phase::Starting) {
            // A shutdown got the transition first: nothing to start.
            return Err(BridgeError::RuntimeState(
                "start: the runtime has been shut down".into(),
            ));
        }
        self.bridge.install(callbacks);
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

    async fn shutdown_within(&self, timeout_ms: Option<f64>) -> BridgeResult<()> {
        let timeout = timeout_ms
            .map(|t| crate::rules::millis("timeoutMs", t))
            .transpose()?;
        let _transition = self.transition.lock().await;
        let running = {
            let mut phase = self.phase();
            match std::mem::replace(&mut *phase, Phase::Stopped(None)) {
                Phase::Running(rt) => rt,
                Phase::Created | Phase::Starting => return Ok(()),
                stopped @ Phase::Stopped(_) => {
                    *phase = stopped;
                    return Ok(());
                }
            }
        };
        let last = running.metrics_snapshot();
        running
            .clone()
            .shutdown(timeout.map(|t| t.as_millis() as u64))
            .await;
        self.guard.stopped().await;
        let last = running.metrics_snapshot().or(last);
        drop(running);
        *self.phase() = Phase::Stopped(last);
        self.bridge.release();
        Ok(())
    }
}

#[napi]
impl NativeRuntime {
    /// Validates every option now, so a typo fails at construction, not at start.
    #[napi(constructor)]
    pub fn new(
        provider: &NativeProvider,
        options: Option<serde_json::Value>,
    ) -> napi::Result<Self, ErrorCode> {
        let options =
            parse_runtime_options(options.as_ref())?.for_store(&provider.kind(), options.as_ref());
        let bridge = Arc::new(Bridge::new(options.binding.orchestration_cache_size));
        let core = Core {
            guard: GuardedProvider::new(provider.provider(), &options),
            options,
            registrations: Mutex::new(Registrations::default()),
            bridge,
            phase: Mutex::new(Phase::Created),
            transition: tokio::sync::Mutex::new(()),
        };
        Ok(Self {
            core: Arc::new(core),
        })
    }

    #[napi]
    pub fn register_activity(&self, name: String) -> napi::Result<(), ErrorCode> {
        self.core.require_created("registerActivity")?;
        Ok(self
            .core
            .registrations
            .lock()
            .expect("registrations lock")
            .add_activity(&name)?)
    }

    /// `version` defaults to `1.0.0`, as in duroxide. Returns the version as
    /// registered, which is the one instances report when they start.
    #[napi]
    pub fn register_orchestration(
        &self,
        name: String,
        version: Option<String>,
    ) -> napi::Result<String, ErrorCode> {
        self.core.require_created("registerOrchestration")?;
        Ok(self
            .core
            .registrations
            .lock()
            .expect("registrations lock")
            .add_orchestration(&name, version.as_deref())?)
    }

    /// Starts dispatching. The four callbacks are the JS side of the bridge
    /// (see `bridge/mod.rs` for their signatures).
    /// The phase changes at the call; the promise settles once dispatching runs.
    #[napi(
        ts_args_type = "orchestrationStep: (call: OrchestrationCall) => any, orchestrationDispose: (invocation: number) => void, activityStart: (call: ActivityCall) => Promise<any>, activityCancel: (invocation: number) => void, events: (event: GuardEvent) => void",
        ts_return_type = "Promise<void>"
    )]
    pub fn start<'env>(
        &self,
        env: &'env Env,
        orchestration_step: Tsfn<OrchestrationCall, serde_json::Value>,
        orchestration_dispose: Tsfn<u32, ()>,
        activity_start: Tsfn<ActivityCall, Promise<serde_json::Value>>,
        activity_cancel: Tsfn<u32, ()>,
        events: Tsfn<GuardEvent, ()>,
    ) -> napi::Result<PromiseRaw<'env, Settled<()>>, ErrorCode> {
        self.core.claim_start()?;
        let core = self.core.clone();
        let callbacks = JsCallbacks {
            orchestration_step,
            orchestration_dispose,
            activity_start,
            activity_cancel,
            events,
        };
        Ok(env
            .spawn_future(async move { Ok(Settled(core.start_with(callbacks).await)) })
            .map_err(BridgeError::from)?)
    }

    /// Stops fetching, lets in-flight work finish for at most `timeoutMs`
    /// (default 1000), and returns as soon as it is drained. Idempotent.
    #[napi(ts_return_type = "Promise<void>")]
    pub async fn shutdown(&self, timeout_ms: Option<f64>) -> Settled<()> {
        Settled::of(self.core.shutdown_within(timeout_ms)).await
    }

    /// `null` before start; the final counters after shutdown.
    #[napi]
    pub fn metrics_snapshot(&self) -> Option<RuntimeMetrics> {
        let metrics = match &*self.core.phase() {
            Phase::Created | Phase::Starting => None,
            Phase::Running(rt) => rt.metrics_snapshot().as_ref().map(RuntimeMetrics::from),
            Phase::Stopped(last) => last.as_ref().map(RuntimeMetrics::from),
        };
        metrics.map(|m| self.core.guard.metrics(m))
    }

    /// `{ status: 'ok' | 'degraded', reasons }` from the guard's recent counters.
    #[napi]
    pub fn health(&self) -> RuntimeHealth {
        let running = matches!(&*self.core.phase(), Phase::Running(_));
        self.core.guard.health(running)
    }

    /// Every option as handed to duroxide, defaults filled in.
    #[napi]
    pub fn effective_options(&self) -> serde_json::Value {
        self.core.options.effective.clone()
    }

    /// `'created' | 'running' | 'stopped'`.
    #[napi(getter)]
    pub fn state(&self) -> String {
        match &*self.core.phase() {
            Phase::Created | Phase::Starting => "created",
            Phase::Running(_) => "running",
            Phase::Stopped(_) => "stopped",
        }
        .to_string()
    }
}
