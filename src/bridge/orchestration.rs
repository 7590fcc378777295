//! The orchestration bridge: a JS generator driven from a duroxide handler.
//!
//! duroxide polls a handler's future with a no-op waker and expects it to make
//! all the progress it can inside that poll, so every generator step is a
//! synchronous round trip to the Node main thread: the tokio thread enters
//! `block_in_place` (so the runtime keeps renewing locks on other threads) and
//! waits for the threadsafe call to return.
//!
//! Every turn replays the execution's history from the start. With the
//! generator cache on (`cache.rs`), a turn whose execution has a cached
//! generator does not re-run it: it re-issues the logged tasks and context
//! mutations (`step_log.rs`) to the new context, checks that each outcome the
//! history delivers equals the logged one, and resumes the live generator at
//! its pending step, so JS runs only for steps it has not run.
//!
//! If a delivered outcome differs from the log (the instance was re-created
//! under the same id, or a turn this generator ran never committed and the
//! step came out differently when it ran again), the re-issued actions are
//! still right: a deterministic generator fed the same outcomes yields the
//! same tasks, so up to and including the mismatching step a full replay
//! would have emitted exactly what was re-issued. The turn then rebuilds a
//! fresh generator and catches it up on the logged steps with its context in
//! catch-up mode (no actions, reads answered from the log), checks that it
//! yields the logged tasks, and feeds it the new outcome live. A generator
//! that yields something else while catching up is not deterministic; the
//! orchestration fails with a message saying so, as duroxide's own
//! nondeterminism check would fail it on a full replay.

use std::sync::mpsc;
use std::sync::Arc;

use duroxide::OrchestrationContext;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;
use serde::Deserialize;

use super::cache::{CacheKey, CachedGenerator};
use super::context::{ContextState, NativeOrchestrationContext};
use super::failure;
use super::step_log::StepLog;
use super::tasks::{self, Outcome, TaskDescriptor};
use super::traced::traced;
use super::waits::TurnWaits;
use super::{Bridge, JsCallbacks};
use crate::errors::{BridgeError, BridgeResult};
use crate::rules;
use crate::trace_context::{self, TraceContext};

/// Argument of the JS `orchestrationStep` callback.
#[napi(object, object_from_js = false)]
pub struct OrchestrationCall {
    /// Names this handler invocation on the JS side (its generator lives there).
    pub invocation: u32,
    /// Set on the first call of an invocation: create the generator.
    pub start: Option<OrchestrationStart>,
    /// Set on later calls: the result of the task the generator last yielded.
    pub outcome: Option<serde_json::Value>,
}

/// What the JS side needs to create the generator.
#[napi(object, object_from_js = false)]
pub struct OrchestrationStart {
    pub context: NativeOrchestrationContext,
    pub instance_id: String,
    pub execution_id: i64,
    pub orchestration_name: String,
    pub orchestration_version: String,
    pub input: String,
    /// The W3C trace context the instance was started with, if any.
    pub trace_context: Option<TraceContext>,
    /// The runtime's `maxPayloadBytes`, so the context refuses an oversized
    /// task input at the call that makes the task.
    pub max_payload_bytes: u32,
}

/// What the generator did with the last step.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Step {
    /// It yielded a task.
    Yield(serde_json::Value),
    /// It returned; the JSON-encoded value.
    Return(String),
    /// It threw, or yielded something that is not a task; the message.
    Throw(String),
}

fn step(callbacks: &JsCallbacks, call: OrchestrationCall) -> BridgeResult<Step> {
    let (tx, rx) = mpsc::sync_channel(1);
    let status = callbacks.orchestration_step.call_with_return_value(
        call,
        ThreadsafeFunctionCallMode::Blocking,
        move |ret, _env| {
            let _ = tx.send(ret);
            Ok(())
        },
    );
    if status != napi::Status::Ok {
        return Err(BridgeError::RuntimeState(format!(
            "orchestration callback unavailable: {status}"
        )));
    }
    let value = tokio::task::block_in_place(|| rx.recv())
        .map_err(|_| BridgeError::RuntimeState("orchestration callback was released".into()))?
        .map_err(|e| BridgeError::Internal(format!("orchestration callback failed: {e}")))?;
    serde_json::from_value(value)
        .map_err(|e| BridgeError::Internal(format!("bad step from JS: {e}")))
}

/// A bridge failure means the JS side is gone (process teardown). Failing the
/// orchestration would record a failure that never happened, and returning
/// `Pending` would commit a half turn; parking the thread commits nothing, and
/// the lock expires so another worker retries the turn.
fn park_forever(err: &BridgeError) -> ! {
    tracing::error!(target: "duroxide_node::bridge", error = %err, "orchestration bridge lost; parking turn");
    loop {
        std::thread::park();
    }
}

fn take_step(callbacks: &JsCallbacks, call: OrchestrationCall) -> Step {
    match step(callbacks, call) {
        Ok(step) => step,
        Err(e) => park_forever(&e),
    }
}

/// A yielded value as a validated task, or the orchestration's failure message.
fn task_of(value: serde_json::Value, max_payload: u32) -> Result<TaskDescriptor, String> {
    let task: TaskDescriptor = serde_json::from_value(value)
        .map_err(|e| format!("orchestration yielded an invalid task: {e}"))?;
    tasks::validate(&task, max_payload)
        .map_err(|e| format!("orchestration yielded an invalid task: {}", e.message()))?;
    Ok(task)
}

/// How the orchestration ended, as duroxide records it: an output over the
/// payload limit fails it (rather than storing what a reader may then be
/// unable to take), and a failure text is made storable.
fn ending(end: Result<String, String>, max_payload: u32) -> Result<String, String> {
    match end {
        Ok(output) => match rules::payload("the orchestration's output", &output, max_payload) {
            Ok(()) => Ok(output),
            Err(e) => Err(e.message().to_string()),
        },
        Err(message) => Err(failure::storable(message)),
    }
}

fn start_call(
    id: u32,
    context: &Arc<ContextState>,
    ctx: &OrchestrationContext,
    input: String,
    max_payload_bytes: u32,
) -> OrchestrationCall {
    let (input, trace_context) = trace_context::unwrap(input);
    OrchestrationCall {
        invocation: id,
        start: Some(OrchestrationStart {
            context: NativeOrchestrationContext::new(context.clone()),
            instance_id: ctx.instance_id(),
            execution_id: ctx.execution_id() as i64,
            orchestration_name: ctx.orchestration_name(),
            orchestration_version: ctx.orchestration_version(),
            input,
            trace_context,
            max_payload_bytes,
        }),
        outcome: None,
    }
}

fn outcome_call(id: u32, outcome: &Outcome) -> OrchestrationCall {
    OrchestrationCall {
        invocation: id,
        start: None,
        outcome: Some(serde_json::to_value(outcome).expect("outcome encodes")),
    }
}

/// One turn of one execution and the generator it drives. When the turn ends
/// (its future completes or duroxide drops it), a generator still waiting on
/// a step goes back to the cache; any other is disposed on the JS side.
struct Turn {
    bridge: Arc<Bridge>,
    callbacks: Arc<JsCallbacks>,
    key: CacheKey,
    generator: Option<CachedGenerator>,
    /// False once the generator must not outlive the turn: it finished, or
    /// its pending step is a continue-as-new (the next execution starts over).
    cacheable: bool,
    /// Put around the inputs of the work this execution schedules.
    trace: Option<TraceContext>,
    /// The subscriptions this turn makes and its history recorded (`waits.rs`).
    waits: TurnWaits,
}

impl Drop for Turn {
    fn drop(&mut self) {
        let Some(generator) = self.generator.take() else {
            return;
        };
        let dropped = if self.cacheable && generator.log.pending.is_some() {
            self.bridge.cache.put(self.key.clone(), generator)
        } else {
            vec![generator.id]
        };
        for id in dropped {
            self.dispose(id);
        }
    }
}

impl Turn {
    fn dispose(&self, id: u32) {
        self.callbacks
            .orchestration_dispose
            .call(id, ThreadsafeFunctionCallMode::NonBlocking);
    }

    fn generator(&mut self) -> &mut CachedGenerator {
        self.generator
            .as_mut()
            .expect("the turn drives a generator")
    }

    /// Creates a fresh generator; returns the call that starts it.
    fn start(&mut self, ctx: &OrchestrationContext, input: String) -> OrchestrationCall {
        let context = ContextState::new(ctx.clone(), self.bridge.cache.enabled());
        let id = self.bridge.next_invocation();
        let call = start_call(id, &context, ctx, input.clone(), self.bridge.max_payload);
        self.generator = Some(CachedGenerator {
            id,
            context,
            name: ctx.orchestration_name(),
            version: ctx.orchestration_version(),
            input,
            log: StepLog::default(),
        });
        call
    }

    /// Re-issues the cached generator's logged steps; returns the call that
    /// resumes it (or a caught-up replacement), `None` when there is nothing
    /// usable cached, and `Err` for a generator found not to be deterministic.
    /// If a logged step has no outcome in this turn's history, this never
    /// returns: the turn ends there, and the entry goes back to the cache as
    /// it was.
    async fn resume(
        &mut self,
        ctx: &OrchestrationContext,
        input: &str,
    ) -> Result<Option<OrchestrationCall>, String> {
        if !self.bridge.cache.enabled() {
            return Ok(None);
        }
        let Some(cached) = self.bridge.cache.take(&self.key) else {
            return Ok(None);
        };
        // Decided before anything is emitted. A turn that is not replaying has
        // no persisted history: the instance was deleted and started again
        // under the same id, as was one with another input or version.
        let usable = ctx.is_replaying()
            && cached.input == input
            && cached.name == ctx.orchestration_name()
            && cached.version == ctx.orchestration_version()
            && cached.log.pending.is_some();
        if !usable {
            self.dispose(cached.id);
            return Ok(None);
        }
        cached.context.resume(ctx.clone());
        self.generator = Some(cached);
        let mut index = 0;
        loop {
            let log = &self.generator().log;
            let (calls, task) = match log.done.get(index) {
                Some(s) => (&s.calls, &s.task),
                None => {
                    let p = log.pending.as_ref().expect("checked above");
                    (&p.calls, &p.task)
                }
            };
            for call in calls {
                call.reissue(ctx);
            }
            let outcome =
                tasks::schedule(ctx, traced(task.clone(), self.trace.as_ref()), &self.waits).await;
            let generator = self.generator();
            match generator.log.done.get(index) {
                Some(logged) if logged.outcome == outcome => index += 1,
                Some(_) => return self.catch_up(ctx, index, outcome).map(Some),
                None => {
                    generator.log.delivered(outcome.clone());
                    return Ok(Some(outcome_call(generator.id, &outcome)));
                }
            }
        }
    }

    /// Replaces the cached generator, whose logged step `k` came out as
    /// `actual` instead, by a fresh one caught up on steps `0..=k` without
    /// emitting anything; returns the call that feeds it `actual`.
    fn catch_up(
        &mut self,
        ctx: &OrchestrationContext,
        k: usize,
        actual: Outcome,
    ) -> Result<OrchestrationCall, String> {
        let old = self.generator.take().expect("a cached generator");
        self.dispose(old.id);
        tracing::debug!(target: "duroxide_node::bridge", instance = %self.key.instance, step = k, "step log differs from history; rebuilding the generator");
        let context = ContextState::new(ctx.clone(), true);
        let id = self.bridge.next_invocation();
        let mut next = Some(start_call(
            id,
            &context,
            ctx,
            old.input.clone(),
            self.bridge.max_payload,
        ));
        self.generator = Some(CachedGenerator {
            id,
            context: context.clone(),
            name: old.name.clone(),
            version: old.version.clone(),
            input: old.input.clone(),
            log: StepLog::default(),
        });
        for (j, logged) in old.log.done.iter().take(k + 1).enumerate() {
            context.catch_up(logged.calls.clone());
            let call = next.take().expect("a call for every caught-up step");
            let result = take_step(&self.callbacks, call);
            let divergence = context.tape_divergence();
            let yielded = match result {
                Step::Yield(v) => task_of(v, self.bridge.max_payload).ok(),
                Step::Return(_) | Step::Throw(_) => None,
            };
            let why = match (yielded, divergence) {
                (_, Some(why)) => why,
                (Some(task), None) if task == logged.task => {
                    let log = &mut self.generator().log;
                    log.yielded(logged.calls.clone(), task);
                    if j < k {
                        log.delivered(logged.outcome.clone());
                        next = Some(outcome_call(id, &logged.outcome));
                    }
                    continue;
                }
                (Some(task), None) => format!(
                    "it yielded {task:?} where it yielded {:?} before",
                    logged.task
                ),
                (None, None) => "it finished where it yielded a task before".to_string(),
            };
            self.cacheable = false;
            return Err(format!(
                "orchestration '{}' is not deterministic: run again over the same step results, at step {j} {why}",
                old.name
            ));
        }
        context.go_live();
        self.generator().log.delivered(actual.clone());
        Ok(outcome_call(id, &actual))
    }

    /// Runs the generator live from `call` until it returns, throws, or waits
    /// on a task whose outcome is not in this turn's history.
    async fn drive(
        &mut self,
        ctx: &OrchestrationContext,
        mut call: OrchestrationCall,
    ) -> Result<String, String> {
        let logging = self.bridge.cache.enabled();
        loop {
            let result = take_step(&self.callbacks, call);
            let generator = self
                .generator
                .as_mut()
                .expect("the turn drives a generator");
            let calls = generator.context.take_calls();
            let max_payload = self.bridge.max_payload;
            let task = match result.map_yield(|v| task_of(v, max_payload)) {
                Ok(task) => task,
                Err(end) => {
                    self.cacheable = false;
                    return ending(end, max_payload);
                }
            };
            if matches!(task, TaskDescriptor::ContinueAsNew { .. }) {
                self.cacheable = false;
            }
            let id = generator.id;
            let future = if logging {
                generator.log.yielded(calls, task.clone());
                tasks::schedule(ctx, traced(task, self.trace.as_ref()), &self.waits)
            } else {
                tasks::schedule(ctx, traced(task, self.trace.as_ref()), &self.waits)
            };
            let outcome = future.await;
            if logging {
                self.generator().log.delivered(outcome.clone());
            }
            call = outcome_call(id, &outcome);
        }
    }
}

impl Step {
    /// The yielded task, or how the orchestration ended.
    fn map_yield(
        self,
        task_of: impl FnOnce(serde_json::Value) -> Result<TaskDescriptor, String>,
    ) -> Result<TaskDescriptor, Result<String, String>> {
        match self {
            Step::Yield(value) => task_of(value).map_err(Err),
            Step::Return(output) => Err(Ok(output)),
            Step::Throw(message) => Err(Err(message)),
        }
    }
}

/// The body of every registered orchestration handler.
pub async fn run(
    bridge: Arc<Bridge>,
    ctx: OrchestrationContext,
    input: String,
) -> Result<String, String> {
    let callbacks = match bridge.callbacks() {
        Ok(cb) => cb,
        Err(e) => park_forever(&e),
    };
    let key = CacheKey {
        instance: ctx.instance_id(),
        execution: ctx.execution_id(),
    };
    let trace = trace_context::unwrap(input.clone()).1;
    let waits = bridge.waits.turn(&key.instance, key.execution);
    let mut turn = Turn {
        bridge,
        callbacks,
        key,
        generator: None,
        cacheable: true,
        trace,
        waits,
    };
    let call = match turn.resume(&ctx, &input).await? {
        Some(call) => call,
        None => turn.start(&ctx, input),
    };
    turn.drive(&ctx, call).await
}
