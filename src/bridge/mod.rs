//! The JS bridges: how the duroxide runtime calls back into JavaScript.
//!
//! All JS entry points of one runtime arrive in `NativeRuntime.start()` as a
//! [`JsCallbacks`] set of threadsafe functions, owned by that runtime and
//! released by its shutdown. Their JS signatures (implemented in
//! `lib/runtime.js`):
//!
//! | Rust field         | JS signature                                             | called      |
//! |--------------------|----------------------------------------------------------|-------------|
//! | `orchestration_step`   | `(call: OrchestrationCall) => Step`                  | blocking, from a tokio thread in `block_in_place` |
//! | `orchestration_dispose`| `(invocation: number) => void`                       | fire and forget, when a generator leaves the cache or its turn |
//! | `activity_start`   | `(call: ActivityCall) => void`, later `call.context.complete({ok: string} \| {err: string})` | fire and forget; the outcome comes back through the call's handle |
//! | `activity_cancel`  | `(invocation: number) => void`                           | fire and forget |
//! | `events`           | `(event: GuardEvent) => void`                            | fire and forget, non-blocking |
//!
//! `GuardEvent` is `{ type: 'poison' | 'lockLost' | 'livelock' | 'unregistered'
//! | 'nondeterminism', instanceId, queue, attemptCount?, maxAttempts, cause,
//! name?, kind?, held?, divergence? }` (see `guard/events.rs`).
//!
//! `Step` is `{ yield: TaskDescriptor } | { return: string } | { throw: string }`
//! (see `tasks.rs`). The JS side never throws across the boundary: user errors
//! travel inside those values, a thrown Error's structure appended to its
//! message (`failure.rs`). `mistakes.rs` logs what `lib/mistakes.js` catches.

pub mod activity;
pub(crate) mod cache;
pub(crate) mod context;
pub(crate) mod failure;
pub(crate) mod joins;
pub(crate) mod log;
pub(crate) mod mistakes;
pub mod orchestration;
pub mod retry;
pub(crate) mod step_log;
pub mod tasks;
pub(crate) mod traced;
pub(crate) mod waits;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, RwLock};

use napi::threadsafe_function::ThreadsafeFunction;
use napi::Status;

use crate::errors::{BridgeError, BridgeResult};

/// `(call: OrchestrationCall) => Step`
pub type OrchestrationStepFn = ThreadsafeFunction<
    orchestration::OrchestrationCall,
    serde_json::Value,
    orchestration::OrchestrationCall,
    Status,
    false,
>;
/// `(invocation: number) => void`
pub type DisposeFn = ThreadsafeFunction<u32, (), u32, Status, false>;
/// `(call: ActivityCall) => void`; the outcome comes through `call.context.complete`.
pub type ActivityStartFn =
    ThreadsafeFunction<activity::ActivityCall, (), activity::ActivityCall, Status, false>;

/// `(event: GuardEvent) => void`
pub type EventFn = ThreadsafeFunction<
    crate::guard::events::GuardEvent,
    (),
    crate::guard::events::GuardEvent,
    Status,
    false,
>;

/// The JS functions one started runtime calls.
pub struct JsCallbacks {
    pub orchestration_step: OrchestrationStepFn,
    pub orchestration_dispose: DisposeFn,
    pub activity_start: ActivityStartFn,
    pub activity_cancel: DisposeFn,
    pub events: EventFn,
}

/// What a runtime's handlers share: the callbacks while the runtime runs, the
/// counter that names generators on the JS side, the generator cache, the
/// payload limit, and the subscriptions of the histories the runtime fetched
/// (`waits.rs`).
pub struct Bridge {
    callbacks: RwLock<Option<Arc<JsCallbacks>>>,
    next_invocation: Arc<AtomicU32>,
    pub(crate) cache: cache::GeneratorCache,
    /// `maxPayloadBytes`: the largest input a task may carry and the largest
    /// result or output a handler may produce.
    pub(crate) max_payload: u32,
    pub(crate) waits: Arc<waits::RecordedWaits>,
}

impl Bridge {
    /// `cache_size` is `orchestrationCacheSize` (0 = no generator cache),
    /// `max_payload` is `maxPayloadBytes`.
    pub fn new(cache_size: usize, max_payload: u32) -> Self {
        Self {
            callbacks: RwLock::default(),
            next_invocation: Arc::default(),
            cache: cache::GeneratorCache::new(cache_size),
            max_payload,
            waits: Arc::default(),
        }
    }

    /// A bridge to the same JS generators table that replays on its own: no
    /// generator cache and its own recorded waits, so the replay check of a
    /// running runtime (`guard/nondeterminism.rs`) leaves the runtime's
    /// turns undisturbed. Invocation ids come from the same counter, since
    /// they name generators in the one table.
    pub(crate) fn twin(&self) -> Self {
        Self {
            callbacks: RwLock::new(self.callbacks.read().expect("bridge lock").clone()),
            next_invocation: self.next_invocation.clone(),
            cache: cache::GeneratorCache::new(0),
            max_payload: self.max_payload,
            waits: Arc::default(),
        }
    }

    pub fn install(&self, callbacks: JsCallbacks) {
        *self.callbacks.write().expect("bridge lock") = Some(Arc::new(callbacks));
    }

    /// Drops the runtime's reference to the JS functions; once in-flight
    /// invocations finish, the threadsafe functions are released and no longer
    /// keep the Node event loop alive.
    pub fn release(&self) {
        // JS drops every generator at shutdown, so the ids need no dispose call.
        let _ = self.cache.close();
        self.callbacks.write().expect("bridge lock").take();
    }

    pub fn callbacks(&self) -> BridgeResult<Arc<JsCallbacks>> {
        self.callbacks
            .read()
            .expect("bridge lock")
            .clone()
            .ok_or_else(|| BridgeError::RuntimeState("the runtime is not running".into()))
    }

    pub fn next_invocation(&self) -> u32 {
        self.next_invocation.fetch_add(1, Ordering::Relaxed)
    }
}
