//! The trace context of an orchestration put around the inputs of the work
//! it schedules (`trace_context.rs` describes the envelope), so activities,
//! sub-orchestrations, detached starts and the next execution of a
//! continue-as-new see the same `ctx.traceContext`.

use super::tasks::TaskDescriptor;
use crate::trace_context::{wrap, TraceContext};

/// `task` with its inputs (and those of the tasks of an `all`/`race`)
/// wrapped in `trace`; a task without input is returned as it is.
pub(crate) fn traced(task: TaskDescriptor, trace: Option<&TraceContext>) -> TaskDescriptor {
    let Some(trace) = trace else {
        return task;
    };
    match task {
        TaskDescriptor::Activity {
            name,
            input,
            session_id,
            tag,
            retry,
        } => TaskDescriptor::Activity {
            name,
            input: wrap(input, trace),
            session_id,
            tag,
            retry,
        },
        TaskDescriptor::SubOrchestration {
            name,
            input,
            instance_id,
            version,
        } => TaskDescriptor::SubOrchestration {
            name,
            input: wrap(input, trace),
            instance_id,
            version,
        },
        TaskDescriptor::StartOrchestration {
            name,
            instance_id,
            input,
            version,
        } => TaskDescriptor::StartOrchestration {
            name,
            instance_id,
            input: wrap(input, trace),
            version,
        },
        TaskDescriptor::ContinueAsNew { input, version } => TaskDescriptor::ContinueAsNew {
            input: wrap(input, trace),
            version,
        },
        TaskDescriptor::All { tasks } => TaskDescriptor::All {
            tasks: tasks.into_iter().map(|t| traced(t, Some(trace))).collect(),
        },
        TaskDescriptor::Race { tasks } => TaskDescriptor::Race {
            tasks: tasks.into_iter().map(|t| traced(t, Some(trace))).collect(),
        },
        other => other,
    }
}
