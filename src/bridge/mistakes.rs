//! The log line of a mistake caught in orchestration code (a task created
//! and never yielded, `Date.now()` inside a generator step, ...), which
//! `lib/mistakes.js` detects and reports once per orchestration name.
//!
//! Unlike `ctx.traceWarn`, it is not suppressed while replaying: a mistake
//! made only on replay (the generator cache rebuilt a generator) is still one.

use napi_derive::napi;

#[napi]
pub fn warn_mistake(instance_id: String, orchestration_name: String, message: String) {
    tracing::warn!(
        target: "duroxide_node::mistakes",
        instance_id = %instance_id,
        orchestration_name = %orchestration_name,
        "{message}"
    );
}
