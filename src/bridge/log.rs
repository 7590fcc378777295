//! `ctx.log.info/warn/error/debug(message, fields)` of orchestration and
//! activity contexts: one tracing event under the target duroxide's own
//! `trace_*` uses, with the context's correlation fields and the caller's
//! fields as JSON (`logging::USER_FIELDS`, merged by the sink).
//!
//! Whether an orchestration's line may be emitted (not replaying, not
//! catching up) is the context's call (`context.rs`); this only emits.

use duroxide::{ActivityContext, OrchestrationContext};

/// tracing wants a static level at each call site, hence one arm per level.
macro_rules! emit {
    ($level:expr, $target:literal, $message:expr, $($field:tt)*) => {
        match $level {
            "error" => tracing::error!(target: $target, $($field)* "{}", $message),
            "warn" => tracing::warn!(target: $target, $($field)* "{}", $message),
            "debug" => tracing::debug!(target: $target, $($field)* "{}", $message),
            _ => tracing::info!(target: $target, $($field)* "{}", $message),
        }
    };
}

/// `fields` is the JSON object of the caller's fields, or `None`.
pub(crate) fn orchestration(
    ctx: &OrchestrationContext,
    level: &str,
    message: &str,
    fields: Option<&str>,
) {
    let fields = fields.unwrap_or("{}");
    emit!(
        level,
        "duroxide::orchestration",
        message,
        instance_id = %ctx.instance_id(),
        execution_id = ctx.execution_id(),
        orchestration_name = %ctx.orchestration_name(),
        orchestration_version = %ctx.orchestration_version(),
        fields = %fields,
    );
}

pub(crate) fn activity(ctx: &ActivityContext, level: &str, message: &str, fields: Option<&str>) {
    let fields = fields.unwrap_or("{}");
    emit!(
        level,
        "duroxide::activity",
        message,
        instance_id = %ctx.instance_id(),
        execution_id = ctx.execution_id(),
        orchestration_name = %ctx.orchestration_name(),
        orchestration_version = %ctx.orchestration_version(),
        activity_name = %ctx.activity_name(),
        worker_id = %ctx.worker_id(),
        fields = %fields,
    );
}
