//! The orchestration bridge: a JS generator driven from a duroxide handler.
//!
//! duroxide polls a handler's future with a no-op waker and expects it to make
//! all the progress it can inside that poll, so every generator step is a
//! synchronous round trip to the Node main thread: the tokio thread enters
//! `block_in_place` (so the runtime keeps renewing locks on other threads) and
//! waits for the threadsafe call to return.

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::Arc;

use duroxide::OrchestrationContext;
use napi::threadsafe_function::ThreadsafeFunctionCallMode;
use napi_derive::napi;
use serde::Deserialize;

use super::tasks::{self, Outcome, TaskDescriptor};
use super::{Bridge, JsCallbacks};
use crate::errors::{BridgeError, BridgeResult};

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

/// One handler invocation's JS side: the generator, removed on drop.
struct Invocation {
    id: u32,
    callbacks: Arc<JsCallbacks>,
}

impl Invocation {
    fn step(&self, call: OrchestrationCall) -> BridgeResult<Step> {
        let (tx, rx) = mpsc::sync_channel(1);
        let status = self.callbacks.orchestration_step.call_with_return_value(
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
}

impl Drop for Invocation {
    fn drop(&mut self) {
        // The turn ended (completed, or waiting on history that has not
        // arrived): the JS generator of this invocation is no longer needed.
        self.callbacks
            .orchestration_dispose
            .call(self.id, ThreadsafeFunctionCallMode::NonBlocking);
    }
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
    let invocation = Invocation {
        id: bridge.next_invocation(),
        callbacks,
    };
    let start = OrchestrationStart {
        context: NativeOrchestrationContext { ctx: ctx.clone() },
        instance_id: ctx.instance_id(),
        execution_id: ctx.execution_id() as i64,
        orchestration_name: ctx.orchestration_name(),
        orchestration_version: ctx.orchestration_version(),
        input,
    };
    let mut call = OrchestrationCall {
        invocation: invocation.id,
        start: Some(start),
        outcome: None,
    };
    loop {
        let step = match invocation.step(call) {
            Ok(step) => step,
            Err(e) => park_forever(&e),
        };
        let yielded = match step {
            Step::Return(output) => return Ok(output),
            Step::Throw(message) => return Err(message),
            Step::Yield(value) => value,
        };
        let task: TaskDescriptor = match serde_json::from_value(yielded) {
            Ok(task) => task,
            Err(e) => return Err(format!("orchestration yielded an invalid task: {e}")),
        };
        if let Err(e) = tasks::validate(&task) {
            return Err(format!(
                "orchestration yielded an invalid task: {}",
                e.message()
            ));
        }
        let outcome: Outcome = tasks::schedule(&ctx, task).await;
        let outcome = serde_json::to_value(outcome).expect("outcome encodes");
        call = OrchestrationCall {
            invocation: invocation.id,
            start: None,
            outcome: Some(outcome),
        };
    }
}

/// The handle behind `OrchestrationContext`'s synchronous calls (custom status,
/// KV, traces). It belongs to one handler invocation.
#[napi]
pub struct NativeOrchestrationContext {
    ctx: OrchestrationContext,
}

#[napi]
impl NativeOrchestrationContext {
    #[napi(getter)]
    pub fn is_replaying(&self) -> bool {
        self.ctx.is_replaying()
    }

    #[napi]
    pub fn set_custom_status(&self, status: String) {
        self.ctx.set_custom_status(status);
    }

    #[napi]
    pub fn reset_custom_status(&self) {
        self.ctx.reset_custom_status();
    }

    #[napi]
    pub fn get_custom_status(&self) -> Option<String> {
        self.ctx.get_custom_status()
    }

    #[napi]
    pub fn set_value(&self, key: String, value: String) {
        self.ctx.set_kv_value(key, value);
    }

    #[napi]
    pub fn get_value(&self, key: String) -> Option<String> {
        self.ctx.get_kv_value(&key)
    }

    #[napi]
    pub fn clear_value(&self, key: String) {
        self.ctx.clear_kv_value(key);
    }

    #[napi]
    pub fn clear_all_values(&self) {
        self.ctx.clear_all_kv_values();
    }

    #[napi]
    pub fn get_kv_all_values(&self) -> HashMap<String, String> {
        self.ctx.get_kv_all_values()
    }

    #[napi]
    pub fn get_kv_all_keys(&self) -> Vec<String> {
        let mut keys = self.ctx.get_kv_all_keys();
        keys.sort();
        keys
    }

    #[napi]
    pub fn get_kv_length(&self) -> u32 {
        self.ctx.get_kv_length() as u32
    }

    #[napi]
    pub fn prune_kv_values_updated_before(&self, cutoff_ms: f64) -> u32 {
        self.ctx
            .prune_kv_values_updated_before(cutoff_ms.max(0.0) as u64) as u32
    }

    /// `level` is `info`, `warn`, `error` or `debug`; suppressed while replaying.
    #[napi]
    pub fn trace(&self, level: String, message: String) {
        match level.as_str() {
            "warn" => self.ctx.trace_warn(message),
            "error" => self.ctx.trace_error(message),
            "debug" => self.ctx.trace_debug(message),
            _ => self.ctx.trace_info(message),
        }
    }
}
