//! The activity bridge: a JS async function awaited from a duroxide worker.
//!
//! Activities have no replay constraint, so this is an ordinary async call:
//! Rust calls JS without waiting for its return, and JS hands the outcome to
//! the invocation's handle (`call.context.complete(outcome)`) when the
//! activity settles, which the awaiting worker receives. Cancellation (lost
//! race, orchestration ended, shutdown) reaches JS through `activity_cancel`,
//! which aborts the activity's `AbortSignal`.
//!
//! The outcome travels through the handle rather than a returned Promise
//! because napi-rs awaits a Promise by creating two native functions on it
//! (`then`, `catch`) with finalizers, which V8 keeps through every young
//! collection until a full one: about 800 bytes per activity survived and
//! were promoted, enough to grow the young generation (and RSS) over a
//! long run.

use std::sync::{Arc, Mutex};

use duroxide::ActivityContext;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;
use serde::Deserialize;
use tokio::sync::oneshot;

use super::Bridge;

/// Argument of the JS `activityStart` callback.
#[napi(object, object_from_js = false)]
pub struct ActivityCall {
    pub invocation: u32,
    pub context: NativeActivityContext,
    pub activity_name: String,
    pub instance_id: String,
    pub execution_id: i64,
    pub orchestration_name: String,
    pub orchestration_version: String,
    pub worker_id: String,
    pub session_id: Option<String>,
    pub tag: Option<String>,
    pub input: String,
    /// The W3C trace context of the instance that scheduled it, if any.
    pub trace_context: Option<crate::trace_context::TraceContext>,
}

/// `{ ok: json } | { err: message }`, produced by the JS wrapper, which turns
/// throws, non-Error rejections and unencodable results into `err`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
enum ActivityOutcome {
    Ok(String),
    Err(String),
}

/// The body of every registered activity handler.
pub async fn run(
    bridge: Arc<Bridge>,
    ctx: ActivityContext,
    input: String,
) -> Result<String, String> {
    let callbacks = bridge.callbacks().map_err(|e| {
        format!(
            "activity '{}' could not run: {}",
            ctx.activity_name(),
            e.message()
        )
    })?;
    let invocation = bridge.next_invocation();
    let (input, trace_context) = crate::trace_context::unwrap(input);
    let (done, outcome) = oneshot::channel();
    let call = ActivityCall {
        invocation,
        context: NativeActivityContext {
            ctx: ctx.clone(),
            done: Mutex::new(Some(done)),
        },
        activity_name: ctx.activity_name().to_string(),
        instance_id: ctx.instance_id().to_string(),
        execution_id: ctx.execution_id() as i64,
        orchestration_name: ctx.orchestration_name().to_string(),
        orchestration_version: ctx.orchestration_version().to_string(),
        worker_id: ctx.worker_id().to_string(),
        session_id: ctx.session_id().map(str::to_string),
        tag: ctx.tag().map(str::to_string),
        input,
        trace_context,
    };

    // Forward cancellation to the JS AbortSignal while the activity runs.
    let token = ctx.cancellation_token();
    let cancel_cb = callbacks.clone();
    let watcher = tokio::spawn(async move {
        token.cancelled().await;
        cancel_cb
            .activity_cancel
            .call(invocation, ThreadsafeFunctionCallMode::NonBlocking);
    });
    let _stop_watcher = AbortOnDrop(watcher);

    let status = callbacks
        .activity_start
        .call(call, ThreadsafeFunctionCallMode::NonBlocking);
    if status != napi::Status::Ok {
        return Err(format!(
            "activity '{}' could not be called: {status}",
            ctx.activity_name()
        ));
    }
    // The sender goes when JS completes, or with the handle if JS drops it
    // without completing (teardown).
    let value = outcome.await.map_err(|_| {
        format!(
            "activity '{}' failed in the bridge: its outcome never came back",
            ctx.activity_name()
        )
    })?;
    match serde_json::from_value::<ActivityOutcome>(value) {
        // An oversized result fails the activity, for good: a retry would
        // produce it again, and storing it would burden every later turn.
        Ok(ActivityOutcome::Ok(output)) => {
            let field = format!("the result of activity '{}'", ctx.activity_name());
            match crate::rules::payload(&field, &output, bridge.max_payload) {
                Ok(()) => Ok(output),
                Err(e) => Err(super::failure::non_retryable(e.message())),
            }
        }
        Ok(ActivityOutcome::Err(message)) => Err(super::failure::storable(message)),
        Err(e) => Err(format!(
            "activity '{}' returned a malformed outcome: {e}",
            ctx.activity_name()
        )),
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The handle behind `ActivityContext`'s synchronous calls, and where the
/// activity's outcome goes. It belongs to one activity invocation.
#[napi]
pub struct NativeActivityContext {
    ctx: ActivityContext,
    /// Taken by the first `complete`.
    done: Mutex<Option<oneshot::Sender<serde_json::Value>>>,
}

#[napi]
impl NativeActivityContext {
    /// Hands the activity's outcome (`{ ok: json } | { err: message }`) to
    /// the worker awaiting it; later calls do nothing.
    #[napi(ts_args_type = "outcome: { ok: string } | { err: string }")]
    pub fn complete(&self, outcome: serde_json::Value) {
        if let Some(done) = self.done.lock().expect("activity outcome").take() {
            // The worker may have stopped waiting (its runtime shut down).
            let _ = done.send(outcome);
        }
    }

    #[napi]
    pub fn is_cancelled(&self) -> bool {
        self.ctx.is_cancelled()
    }

    /// `level` is `info`, `warn`, `error` or `debug`.
    #[napi]
    pub fn trace(&self, level: String, message: String) {
        match level.as_str() {
            "warn" => self.ctx.trace_warn(message),
            "error" => self.ctx.trace_error(message),
            "debug" => self.ctx.trace_debug(message),
            _ => self.ctx.trace_info(message),
        }
    }

    /// `ctx.log`: `fields` is the JSON of the caller's fields.
    #[napi]
    pub fn log(&self, level: String, message: String, fields: Option<String>) {
        super::log::activity(&self.ctx, &level, &message, fields.as_deref());
    }
}
