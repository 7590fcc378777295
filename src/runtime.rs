//! `NativeRuntime`: one duroxide runtime, its registrations and its lifecycle.
//!
//! Lifecycle: `Created` → `start()` → `Running` → `shutdown()` → `Stopped`.
//! Start and shutdown are serialized by `transition`, so a shutdown that races
//! a start waits for it and then stops what it started; a second shutdown is a
//! no-op. Once stopped, the JS callbacks are released so nothing keeps the
//! Node process alive.

use crate::providers::contain::Queue;
use crate::providers::fast_paths::{FastPath, FastPaths};
use std::sync::{Arc, Mutex};

use duroxide::providers::Provider;
use duroxide::runtime::observability::MetricsSnapshot;
use napi::bindgen_prelude::PromiseRaw;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi::Env;
use napi::Status;
use napi_derive::napi;

use crate::bridge::activity::ActivityCall;
use crate::bridge::orchestration::OrchestrationCall;
use crate::bridge::{Bridge, JsCallbacks};
use crate::errors::{BridgeError, BridgeResult, ErrorCode, Settled};
use crate::guard::events::{EventSink, GuardEvent};
use crate::guard::stats::RuntimeHealth;
use crate::guard::Guard;
use crate::options::{parse_runtime_options, ParsedOptions};
use crate::providers::local::LocalRuntimes;
use crate::providers::NativeProvider;
use crate::registrations::Registrations;
use crate::runtime_metrics::RuntimeMetrics;

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

/// Guard events to the runtime's JS `events` callback; dropped once the
/// runtime released its callbacks.
fn bridge_sink(bridge: Arc<Bridge>) -> EventSink {
    Arc::new(move |event| {
        if let Ok(callbacks) = bridge.callbacks() {
            callbacks
                .events
                .call(event, ThreadsafeFunctionCallMode::NonBlocking);
        }
    })
}

#[napi]
pub struct NativeRuntime {
    /// Shared with the tasks `start()` and `shutdown()` spawn.
    core: Arc<Core>,
}

struct Core {
    /// The fleet guard of this runtime.
    guard: Arc<Guard>,
    /// The store the runtime dispatches through: the guard over the provider's stack.
    stack: Arc<dyn Provider>,
    options: ParsedOptions,
    registrations: Mutex<Registrations>,
    bridge: Arc<Bridge>,
    phase: Mutex<Phase>,
    transition: tokio::sync::Mutex<()>,
    /// The provider's list of running runtimes, and this one's entry while it runs.
    local: Arc<LocalRuntimes>,
    /// Items the provider's acks fetched for its slots, given back at shutdown.
    ridden: Option<crate::providers::history_tail::Ridden>,
    /// Warms the provider's connections for this runtime's slots at start.
    warmer: Option<crate::providers::history_tail::Warmer>,
    local_id: Mutex<Option<u64>>,
    /// The process's metrics recorder (`metrics_text.rs`), `None` if another
    /// one was installed first.
    recorder: Option<metrics_exporter_prometheus::PrometheusHandle>,
    /// The provider's fast paths, for `health()` and `metricsText()`.
    fast_paths: FastPaths,
    /// The provider's count of messages set aside as unreadable.
    set_aside: Arc<crate::providers::contain::Counts>,
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
        let (activities, orchestrations) = {
            let r = self.registrations.lock().expect("registrations lock");
            self.guard
                .registered(r.activity_names(), r.orchestration_names());
            let twin = Arc::new(self.bridge.twin());
            let (_, replayed) = r.build(&twin);
            self.guard.replays_with(twin, replayed);
            r.build(&self.bridge)
        };
        let observability = &self.options.runtime.observability;
        crate::logging::ensure_stderr_logging(&observability.log_format, &observability.log_level);
        self.fast_paths.warn_once();
        if let Some(warmer) = &self.warmer {
            let options = &self.options.runtime;
            warmer
                .for_runtime(options.orchestration_concurrency + options.worker_concurrency)
                .await;
        }
        let runtime = duroxide::runtime::Runtime::start_with_options(
            self.stack.clone(),
            activities,
            orchestrations,
            self.options.runtime.clone(),
        )
        .await;
        *self.phase() = Phase::Running(runtime);
        let names = self
            .registrations
            .lock()
            .expect("registrations lock")
            .orchestration_names();
        *self.local_id.lock().expect("local id") = Some(self.local.started(names));
        self.guard
            .started(
                bridge_sink(self.bridge.clone()),
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
        if let Some(id) = self.local_id.lock().expect("local id").take() {
            self.local.stopped(id);
        }
        let last = running.metrics_snapshot();
        running
            .clone()
            .shutdown(timeout.map(|t| t.as_millis() as u64))
            .await;
        self.guard.stopped().await;
        if let Some(ridden) = &self.ridden {
            ridden.give_back().await;
        }
        let last = running.metrics_snapshot().or(last);
        drop(running);
        *self.phase() = Phase::Stopped(last);
        self.bridge.release();
        Ok(())
    }
}

impl NativeRuntime {
    /// `maxPayloadBytes`, for bridges this runtime's handlers run over
    /// outside it (the replay check).
    pub(crate) fn max_payload_bytes(&self) -> u32 {
        self.core.options.binding.max_payload_bytes
    }

    /// The crate's registries of this runtime's handlers over `bridge`, for
    /// the replay check (`testing/replay.rs`), which drives them itself.
    pub(crate) fn registries(
        &self,
        bridge: &Arc<Bridge>,
    ) -> (
        duroxide::runtime::registry::ActivityRegistry,
        duroxide::runtime::registry::OrchestrationRegistry,
    ) {
        self.core
            .registrations
            .lock()
            .expect("registrations lock")
            .build(bridge)
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
        let bridge = Arc::new(Bridge::new(
            options.binding.orchestration_cache_size,
            options.binding.max_payload_bytes,
        ));
        let store = if provider.backend().uses(FastPath::ActivityDescriptors) {
            crate::providers::descriptors::with_descriptors(provider.provider())
        } else {
            provider.provider()
        };
        let (guard, stack) =
            Guard::stack(store, provider.backend(), &options, bridge.waits.clone());
        let core = Core {
            guard,
            stack,
            options,
            registrations: Mutex::new(Registrations::default()),
            bridge,
            phase: Mutex::new(Phase::Created),
            transition: tokio::sync::Mutex::new(()),
            local: provider.local(),
            ridden: provider.backend().ridden(),
            warmer: provider.backend().warmer(),
            local_id: Mutex::new(None),
            recorder: crate::metrics_text::recorder(),
            fast_paths: provider.backend().fast_paths().clone(),
            set_aside: provider.backend().set_aside_counts(),
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
        ts_args_type = "orchestrationStep: (call: OrchestrationCall) => any, orchestrationDispose: (invocation: number) => void, activityStart: (call: ActivityCall) => void, activityCancel: (invocation: number) => void, events: (event: GuardEvent) => void",
        ts_return_type = "Promise<void>"
    )]
    pub fn start<'env>(
        &self,
        env: &'env Env,
        orchestration_step: Tsfn<OrchestrationCall, serde_json::Value>,
        orchestration_dispose: Tsfn<u32, ()>,
        activity_start: Tsfn<ActivityCall, ()>,
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

    /// Prometheus text exposition: duroxide's series (process-wide: the
    /// facade's recorder is one per process) and this runtime's guard
    /// counters and fetch latencies (`duroxide_node_*`). Zeros before start.
    #[napi]
    pub fn metrics_text(&self) -> String {
        let m = self.metrics_snapshot().unwrap_or_default();
        let store = crate::metrics_text::StoreView {
            fast_paths: self.core.fast_paths.report(),
            set_aside: (
                self.core.set_aside.get(Queue::Orchestrator),
                self.core.set_aside.get(Queue::Worker),
            ),
        };
        crate::metrics_text::render(self.core.recorder.as_ref(), &m, &store)
    }

    /// `{ status: 'ok' | 'degraded', reasons }` from the guard's recent counters.
    #[napi]
    pub fn health(&self) -> RuntimeHealth {
        let running = matches!(&*self.core.phase(), Phase::Running(_));
        let mut health = self.core.guard.health(running);
        if let Some(reason) = self
            .core
            .set_aside
            .degraded_reason(std::time::Duration::from_secs(60))
        {
            health =
                RuntimeHealth::from_reasons(health.reasons.into_iter().chain([reason]).collect());
        }
        health.fast_paths = Some(self.core.fast_paths.report());
        health
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
