//! `replayExecution(runtime, history, target, ...callbacks)`: replays one
//! execution's history against the orchestrations `runtime` registered, and
//! reports the first divergence.
//!
//! The handlers are the runtime's own (`Registrations::build`), over a bridge
//! made for this call: its generators are fresh (no generator cache, so each
//! replay runs the JS code from the start) and its callbacks are the ones
//! `lib/testing/replay.js` passes, so the runtime need not be started and a
//! started one is not disturbed. Nothing is dispatched: duroxide's replay
//! engine only returns the actions a turn would send, so no activity runs,
//! and nothing is written.

use std::sync::Arc;

use duroxide::{Event, EventKind};
use napi::bindgen_prelude::PromiseRaw;
use napi::threadsafe_function::ThreadsafeFunction;
use napi::{Env, Status};
use napi_derive::napi;

use super::divergence::{self, Subject};
use super::entries::{self, Target};
use crate::bridge::activity::ActivityCall;
use crate::bridge::orchestration::OrchestrationCall;
use crate::bridge::{Bridge, JsCallbacks};
use crate::client::HistoryEvent;
use crate::errors::{BridgeError, BridgeResult, ErrorCode, Settled};
use crate::guard::events::GuardEvent;
use crate::runtime::NativeRuntime;

type Tsfn<T, R> = ThreadsafeFunction<T, R, T, Status, false>;

/// The instance and execution a `readExecutionHistory` list belongs to
/// (exported histories name their own).
#[napi(object)]
pub struct ReplayTarget {
    pub instance_id: Option<String>,
    pub execution_id: Option<f64>,
}

/// The first event where code and history part.
#[napi(object)]
pub struct ReplayDivergence {
    /// Index into the history; its length when the code goes on past its end.
    pub index: u32,
    /// The `eventId` there (as `readExecutionHistory` and the CLI's `history`
    /// number events; the next one past the end). The message names it.
    pub event_id: u32,
    /// The history's event there (absent past the end of a running history).
    pub recorded: Option<HistoryEvent>,
    /// The event the code would record there (absent when it records nothing).
    pub scheduled: Option<HistoryEvent>,
    pub message: String,
}

#[napi(object)]
pub struct ReplayReport {
    pub ok: bool,
    pub divergence: Option<ReplayDivergence>,
}

impl From<divergence::Divergence> for ReplayDivergence {
    fn from(d: divergence::Divergence) -> Self {
        ReplayDivergence {
            index: u32::try_from(d.index).unwrap_or(u32::MAX),
            event_id: u32::try_from(d.event_id).unwrap_or(u32::MAX),
            recorded: d.recorded.map(HistoryEvent::from),
            scheduled: d.scheduled.map(HistoryEvent::from),
            message: d.message,
        }
    }
}

fn target_of(target: &ReplayTarget) -> BridgeResult<Target> {
    let instance = target
        .instance_id
        .clone()
        .unwrap_or_else(|| "replay".into());
    crate::rules::instance_id("instanceId", &instance)?;
    let execution = match target.execution_id {
        None => 1,
        Some(e) if e.is_finite() && e >= 1.0 && e.fract() == 0.0 => e as u64,
        Some(e) => {
            return Err(BridgeError::InvalidArgument(format!(
                "executionId must be an integer >= 1, got {e}"
            )))
        }
    };
    Ok(Target {
        instance,
        execution,
    })
}

/// The started event's name, version and input; the history must open with it.
fn started(events: &[Event]) -> BridgeResult<(String, String, String)> {
    match events.first().map(|e| &e.kind) {
        Some(EventKind::OrchestrationStarted {
            name,
            version,
            input,
            ..
        }) => Ok((name.clone(), version.clone(), input.clone())),
        Some(_) => Err(BridgeError::InvalidArgument(
            "history must start with an OrchestrationStarted event".into(),
        )),
        None => Err(BridgeError::InvalidArgument("history is empty".into())),
    }
}

/// A divergence at the start: today's code has no handler for this execution.
fn unregistered(events: &[Event], name: &str, version: &str) -> ReplayReport {
    ReplayReport {
        ok: false,
        divergence: Some(ReplayDivergence {
            index: 0,
            event_id: events
                .first()
                .map_or(1, |e| u32::try_from(e.event_id).unwrap_or(u32::MAX)),
            recorded: events.first().cloned().map(HistoryEvent::from),
            scheduled: None,
            message: format!(
                "orchestration '{name}' version {version} is not registered on this runtime"
            ),
        }),
    }
}

#[allow(clippy::too_many_arguments)]
#[napi(
    ts_args_type = "runtime: NativeRuntime, history: any, target: ReplayTarget, orchestrationStep: (call: OrchestrationCall) => any, orchestrationDispose: (invocation: number) => void, activityStart: (call: ActivityCall) => void, activityCancel: (invocation: number) => void, events: (event: GuardEvent) => void",
    ts_return_type = "Promise<ReplayReport>"
)]
pub fn replay_execution<'env>(
    env: &'env Env,
    runtime: &NativeRuntime,
    history: serde_json::Value,
    target: ReplayTarget,
    orchestration_step: Tsfn<OrchestrationCall, serde_json::Value>,
    orchestration_dispose: Tsfn<u32, ()>,
    activity_start: Tsfn<ActivityCall, ()>,
    activity_cancel: Tsfn<u32, ()>,
    events: Tsfn<GuardEvent, ()>,
) -> napi::Result<PromiseRaw<'env, Settled<ReplayReport>>, ErrorCode> {
    let target = target_of(&target)?;
    let history = entries::events(history, &target)?;
    let (name, version, input) = started(&history)?;
    // An exported history names its own instance and execution.
    let (instance, execution) = (history[0].instance_id.clone(), history[0].execution_id);
    let bridge = Arc::new(Bridge::new(0, runtime.max_payload_bytes()));
    bridge.install(JsCallbacks {
        orchestration_step,
        orchestration_dispose,
        activity_start,
        activity_cancel,
        events,
    });
    let (_, orchestrations) = runtime.registries(&bridge);
    let handler = semver::Version::parse(&version)
        .ok()
        .and_then(|v| orchestrations.resolve_handler_exact(&name, &v));
    let work = async move {
        let Some(handler) = handler else {
            bridge.release();
            return Ok(unregistered(&history, &name, &version));
        };
        let subject = Subject {
            handler,
            waits: bridge.waits.clone(),
            instance,
            execution,
            name,
            version,
            input,
        };
        // The engine polls the handler synchronously and each generator step
        // blocks on the JS thread, so the check runs off the async workers.
        let checked = tokio::task::spawn_blocking(move || subject.check(&history)).await;
        bridge.release();
        let divergence =
            checked.map_err(|e| BridgeError::Internal(format!("replay check failed: {e}")))?;
        Ok(ReplayReport {
            ok: divergence.is_none(),
            divergence: divergence.map(ReplayDivergence::from),
        })
    };
    Ok(env
        .spawn_future(async move { Ok(Settled(work.await)) })
        .map_err(BridgeError::from)?)
}
