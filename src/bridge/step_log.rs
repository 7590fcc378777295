//! The step log of a cached generator: what it yielded, what it was fed, and
//! which context calls it made before each yield.
//!
//! A later turn of the same execution re-issues the logged tasks and context
//! mutations to its new context, in the order the generator made them, so the
//! replay engine sees exactly the actions a full replay would emit; each
//! outcome the new turn delivers is checked against the logged one.

use std::collections::HashMap;

use duroxide::OrchestrationContext;

use super::tasks::{Outcome, TaskDescriptor};

/// One synchronous `OrchestrationContext` call of the generator, with its
/// result. Mutations are re-issued on cached turns; reads are kept so a
/// generator rebuilt after a mismatch (see `orchestration.rs`, catch-up) sees
/// the values the original run saw.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ContextCall {
    IsReplaying(bool),
    SetCustomStatus(String),
    ResetCustomStatus,
    GetCustomStatus(Option<String>),
    SetValue(String, String),
    GetValue(String, Option<String>),
    ClearValue(String),
    ClearAllValues,
    GetKvAllValues(HashMap<String, String>),
    GetKvAllKeys(Vec<String>),
    GetKvLength(u32),
    /// `pruneKvValuesUpdatedBefore(cutoff)` and the count it returned.
    PruneKvValuesUpdatedBefore(u64, u32),
}

impl ContextCall {
    /// Emits the call's action again on a new turn's context; reads emit nothing.
    pub(crate) fn reissue(&self, ctx: &OrchestrationContext) {
        match self {
            ContextCall::SetCustomStatus(s) => ctx.set_custom_status(s.clone()),
            ContextCall::ResetCustomStatus => ctx.reset_custom_status(),
            ContextCall::SetValue(k, v) => ctx.set_kv_value(k.clone(), v.clone()),
            ContextCall::ClearValue(k) => ctx.clear_kv_value(k.clone()),
            ContextCall::ClearAllValues => ctx.clear_all_kv_values(),
            ContextCall::PruneKvValuesUpdatedBefore(cutoff, _) => {
                ctx.prune_kv_values_updated_before(*cutoff);
            }
            ContextCall::IsReplaying(_)
            | ContextCall::GetCustomStatus(_)
            | ContextCall::GetValue(..)
            | ContextCall::GetKvAllValues(_)
            | ContextCall::GetKvAllKeys(_)
            | ContextCall::GetKvLength(_) => {}
        }
    }
}

/// A step whose task has delivered its outcome.
#[derive(Debug, Clone)]
pub(crate) struct LoggedStep {
    /// Context calls made after the previous yield and before this one.
    pub calls: Vec<ContextCall>,
    pub task: TaskDescriptor,
    pub outcome: Outcome,
}

/// The yield the generator is suspended at.
#[derive(Debug, Clone)]
pub(crate) struct PendingStep {
    pub calls: Vec<ContextCall>,
    pub task: TaskDescriptor,
}

/// The whole log of one generator: finished steps in order, then the step it
/// waits on.
#[derive(Debug, Default)]
pub(crate) struct StepLog {
    pub done: Vec<LoggedStep>,
    pub pending: Option<PendingStep>,
}

impl StepLog {
    pub(crate) fn yielded(&mut self, calls: Vec<ContextCall>, task: TaskDescriptor) {
        debug_assert!(self.pending.is_none(), "a generator waits on one step");
        self.pending = Some(PendingStep { calls, task });
    }

    /// Records the outcome fed to the pending step.
    pub(crate) fn delivered(&mut self, outcome: Outcome) {
        if let Some(PendingStep { calls, task }) = self.pending.take() {
            self.done.push(LoggedStep {
                calls,
                task,
                outcome,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn activity(n: u32) -> TaskDescriptor {
        TaskDescriptor::Activity {
            name: "A".into(),
            input: n.to_string(),
            session_id: None,
            tag: None,
            retry: None,
        }
    }

    #[test]
    fn step_log_moves_the_pending_step_to_done_on_delivery() {
        let mut log = StepLog::default();
        log.yielded(vec![ContextCall::SetCustomStatus("s".into())], activity(1));
        log.delivered(Outcome::Ok("1".into()));
        log.yielded(vec![], activity(2));
        assert_eq!(log.done.len(), 1);
        assert_eq!(
            log.done[0].calls,
            [ContextCall::SetCustomStatus("s".into())]
        );
        assert_eq!(log.done[0].outcome, Outcome::Ok("1".into()));
        assert_eq!(log.pending.as_ref().map(|p| &p.task), Some(&activity(2)));
        log.delivered(Outcome::Err("boom".into()));
        assert!(log.pending.is_none());
        assert_eq!(log.done.len(), 2);
    }
}
