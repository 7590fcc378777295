//! The activity bridge: a JS async function awaited from a duroxide worker.
//!
//! Activities have no replay constraint, so this is an ordinary async call:
//! the JS side returns a Promise that Rust awaits. Cancellation (lost race,
//! orchestration ended, shutdown) reaches JS through `activity_cancel`, which
//! aborts the activity's `AbortSignal`.

use std::sync::Arc;

use duroxide::ActivityContext;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;
use serde::Deserialize;

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
    let call = ActivityCall {
        invocation,
        context: NativeActivityContext { ctx: ctx.clone() },
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

    let promise = callbacks
        .activity_start
        .call_async_catch(call)
        .await
        .map_err(|e| {
            format!(
                "activity '{}' could not be called: {e}",
                ctx.activity_name()
            )
        })?;
    let value = promise.await.map_err(|e| {
        format!(
            "activity '{}' failed in the bridge: {e}",
            ctx.activity_name()
        )
    })?;
    match serde_json::from_value::<ActivityOutcome>(value) {
        Ok(ActivityOutcome::Ok(output)) => Ok(output),
        Ok(ActivityOutcome::Err(message)) => Err(message),
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

/// The handle behind `ActivityContext`'s synchronous calls. It belongs to one
/// activity invocation.
#[napi]
pub struct NativeActivityContext {
    ctx: ActivityContext,
}

#[napi]
impl NativeActivityContext {
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
