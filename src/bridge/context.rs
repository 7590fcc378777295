//! `NativeOrchestrationContext`: the handle behind `OrchestrationContext`'s
//! synchronous calls (custom status, KV, traces).
//!
//! One handle belongs to one JS generator. A cached generator outlives the
//! turn that created it, so the duroxide context behind the handle is swapped
//! at the start of every turn that resumes it ([`ContextState::resume`]).
//! The handle has two modes:
//! - live: calls go to the current turn's context, and (when the cache is on)
//!   are recorded with their results for the step log;
//! - catching up: a generator rebuilt after a step-log mismatch re-runs steps
//!   whose actions this turn already emitted, so calls are answered from the
//!   logged tape and emit nothing; a call that differs from the tape is noted
//!   as a divergence (the orchestration code is not deterministic).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use duroxide::OrchestrationContext;
use napi_derive::napi;

use super::step_log::ContextCall;
use crate::errors::ErrorCode;
use crate::rules;

enum Mode {
    Live,
    CatchingUp {
        tape: VecDeque<ContextCall>,
        divergence: Option<String>,
    },
}

struct Inner {
    ctx: OrchestrationContext,
    mode: Mode,
    /// Whether live calls are recorded (the cache is on).
    record: bool,
    /// Calls recorded since the last yield.
    calls: Vec<ContextCall>,
}

/// The shared state behind a generator's native context handle.
pub(crate) struct ContextState {
    inner: Mutex<Inner>,
}

impl ContextState {
    pub(crate) fn new(ctx: OrchestrationContext, record: bool) -> Arc<Self> {
        Arc::new(Self {
            inner: Mutex::new(Inner {
                ctx,
                mode: Mode::Live,
                record,
                calls: Vec::new(),
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().expect("orchestration context lock")
    }

    /// Points the handle at a new turn's context, live.
    pub(crate) fn resume(&self, ctx: OrchestrationContext) {
        let mut inner = self.lock();
        inner.ctx = ctx;
        inner.mode = Mode::Live;
        inner.calls.clear();
    }

    /// The calls recorded since the last call of this method.
    pub(crate) fn take_calls(&self) -> Vec<ContextCall> {
        std::mem::take(&mut self.lock().calls)
    }

    /// Answers the next step's calls from `tape` instead of the context.
    pub(crate) fn catch_up(&self, tape: Vec<ContextCall>) {
        self.lock().mode = Mode::CatchingUp {
            tape: tape.into(),
            divergence: None,
        };
    }

    /// Ends a caught-up step: `Some(reason)` if the generator's calls differed
    /// from the tape. The handle stays in catch-up mode until [`go_live`](Self::go_live).
    pub(crate) fn tape_divergence(&self) -> Option<String> {
        match &mut self.lock().mode {
            Mode::Live => None,
            Mode::CatchingUp { tape, divergence } => divergence.take().or_else(|| {
                tape.front()
                    .map(|c| format!("the original run also called {c:?}"))
            }),
        }
    }

    pub(crate) fn go_live(&self) {
        let mut inner = self.lock();
        inner.mode = Mode::Live;
        inner.calls.clear();
    }

    /// A read: live, it is answered by the context and recorded; catching up,
    /// by the tape (`answer` picks the result out of a matching entry).
    fn read<R: Default + Clone>(
        &self,
        what: impl FnOnce() -> String,
        live: impl FnOnce(&OrchestrationContext) -> R,
        logged: impl FnOnce(R) -> ContextCall,
        answer: impl FnOnce(&ContextCall) -> Option<R>,
    ) -> R {
        let mut inner = self.lock();
        match &mut inner.mode {
            Mode::Live => {
                let r = live(&inner.ctx);
                if inner.record {
                    inner.calls.push(logged(r.clone()));
                }
                r
            }
            Mode::CatchingUp { tape, divergence } => {
                let next = tape.pop_front();
                match next.as_ref().and_then(answer) {
                    Some(r) => r,
                    None => {
                        divergence.get_or_insert_with(|| mismatch(what(), next.as_ref()));
                        R::default()
                    }
                }
            }
        }
    }

    /// A mutation: live, it goes to the context and is recorded; catching up,
    /// the action was already emitted this turn, so it is only checked.
    fn mutate(&self, call: ContextCall) {
        let mut inner = self.lock();
        match &mut inner.mode {
            Mode::Live => {
                call.reissue(&inner.ctx);
                if inner.record {
                    inner.calls.push(call);
                }
            }
            Mode::CatchingUp { tape, divergence } => {
                let next = tape.pop_front();
                if next.as_ref() != Some(&call) {
                    divergence.get_or_insert_with(|| mismatch(format!("{call:?}"), next.as_ref()));
                }
            }
        }
    }
}

fn mismatch(call: String, logged: Option<&ContextCall>) -> String {
    match logged {
        Some(c) => format!("it called {call} where the original run called {c:?}"),
        None => format!("it called {call}, which the original run did not"),
    }
}

/// The handle behind `OrchestrationContext`'s synchronous calls. It belongs
/// to one generator.
#[napi]
pub struct NativeOrchestrationContext {
    state: Arc<ContextState>,
}

impl NativeOrchestrationContext {
    pub(crate) fn new(state: Arc<ContextState>) -> Self {
        Self { state }
    }
}

#[napi]
impl NativeOrchestrationContext {
    #[napi(getter)]
    pub fn is_replaying(&self) -> bool {
        self.state.read(
            || "isReplaying".into(),
            |ctx| ctx.is_replaying(),
            ContextCall::IsReplaying,
            |c| match c {
                ContextCall::IsReplaying(b) => Some(*b),
                _ => None,
            },
        )
    }

    #[napi]
    pub fn set_custom_status(&self, status: String) -> napi::Result<(), ErrorCode> {
        rules::text("status", &status)?;
        self.state.mutate(ContextCall::SetCustomStatus(status));
        Ok(())
    }

    #[napi]
    pub fn reset_custom_status(&self) {
        self.state.mutate(ContextCall::ResetCustomStatus);
    }

    #[napi]
    pub fn get_custom_status(&self) -> Option<String> {
        self.state.read(
            || "getCustomStatus".into(),
            |ctx| ctx.get_custom_status(),
            ContextCall::GetCustomStatus,
            |c| match c {
                ContextCall::GetCustomStatus(s) => Some(s.clone()),
                _ => None,
            },
        )
    }

    #[napi]
    pub fn set_value(&self, key: String, value: String) -> napi::Result<(), ErrorCode> {
        rules::name("key", &key)?;
        rules::text("value", &value)?;
        self.state.mutate(ContextCall::SetValue(key, value));
        Ok(())
    }

    #[napi]
    pub fn get_value(&self, key: String) -> Option<String> {
        let k = key.clone();
        self.state.read(
            || format!("getValue({key:?})"),
            |ctx| ctx.get_kv_value(&k),
            |v| ContextCall::GetValue(k.clone(), v),
            |c| match c {
                ContextCall::GetValue(logged, v) if *logged == k => Some(v.clone()),
                _ => None,
            },
        )
    }

    #[napi]
    pub fn clear_value(&self, key: String) {
        self.state.mutate(ContextCall::ClearValue(key));
    }

    #[napi]
    pub fn clear_all_values(&self) {
        self.state.mutate(ContextCall::ClearAllValues);
    }

    #[napi]
    pub fn get_kv_all_values(&self) -> HashMap<String, String> {
        self.state.read(
            || "getKvAllValues".into(),
            |ctx| ctx.get_kv_all_values(),
            ContextCall::GetKvAllValues,
            |c| match c {
                ContextCall::GetKvAllValues(m) => Some(m.clone()),
                _ => None,
            },
        )
    }

    #[napi]
    pub fn get_kv_all_keys(&self) -> Vec<String> {
        self.state.read(
            || "getKvAllKeys".into(),
            |ctx| {
                let mut keys = ctx.get_kv_all_keys();
                keys.sort();
                keys
            },
            ContextCall::GetKvAllKeys,
            |c| match c {
                ContextCall::GetKvAllKeys(k) => Some(k.clone()),
                _ => None,
            },
        )
    }

    #[napi]
    pub fn get_kv_length(&self) -> u32 {
        self.state.read(
            || "getKvLength".into(),
            |ctx| ctx.get_kv_length() as u32,
            ContextCall::GetKvLength,
            |c| match c {
                ContextCall::GetKvLength(n) => Some(*n),
                _ => None,
            },
        )
    }

    /// A mutation with a result: live, it prunes and records the count;
    /// catching up, the count comes from the tape.
    #[napi]
    pub fn prune_kv_values_updated_before(&self, cutoff_ms: f64) -> u32 {
        let cutoff = cutoff_ms.max(0.0) as u64;
        self.state.read(
            || format!("pruneKvValuesUpdatedBefore({cutoff})"),
            |ctx| ctx.prune_kv_values_updated_before(cutoff) as u32,
            |n| ContextCall::PruneKvValuesUpdatedBefore(cutoff, n),
            |c| match c {
                ContextCall::PruneKvValuesUpdatedBefore(logged, n) if *logged == cutoff => Some(*n),
                _ => None,
            },
        )
    }

    /// `level` is `info`, `warn`, `error` or `debug`; suppressed while
    /// replaying, and while catching up (those steps already traced).
    #[napi]
    pub fn trace(&self, level: String, message: String) {
        let inner = self.state.lock();
        if !matches!(inner.mode, Mode::Live) {
            return;
        }
        match level.as_str() {
            "warn" => inner.ctx.trace_warn(message),
            "error" => inner.ctx.trace_error(message),
            "debug" => inner.ctx.trace_debug(message),
            _ => inner.ctx.trace_info(message),
        }
    }

    /// `ctx.log`: `level` as in [`trace`](Self::trace), `fields` the JSON
    /// of the caller's fields. Emitted once per first execution of the line:
    /// not while replaying, nor while catching up.
    #[napi]
    pub fn log(&self, level: String, message: String, fields: Option<String>) {
        let inner = self.state.lock();
        if !matches!(inner.mode, Mode::Live) || inner.ctx.is_replaying() {
            return;
        }
        super::log::orchestration(&inner.ctx, &level, &message, fields.as_deref());
    }
}
