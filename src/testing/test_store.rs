//! `NativeTestStore`, `TestEnv`'s store (`lib/testing/env.js`): an in-memory
//! SQLite store with the virtual clock (`clock.rs`) in its provider stack.
//! Time moves only when nothing can run, one move at a time (`moving`), so
//! the clock's offset is constant while a turn or activity is in flight.

use std::sync::Arc;
use std::time::{Duration, Instant};

use duroxide::providers::{Provider, ProviderError};
use napi::bindgen_prelude::Either;
use napi_derive::napi;

use super::clock::{Busy, Clock};
use crate::errors::{BridgeError, BridgeResult, ErrorCode, Settled};
use crate::providers::layer::Stacked;
use crate::providers::sqlite::sqlite_in_memory_with;
use crate::providers::NativeProvider;
use crate::rules;

/// How often a wait for idle looks again.
const IDLE_POLL: Duration = Duration::from_millis(2);

fn provider_error(e: ProviderError) -> BridgeError {
    BridgeError::Provider(e.to_string())
}

/// A `TestEnv`'s store: the provider JS wraps once, and the clock under it.
#[napi]
pub struct NativeTestStore {
    clock: Arc<Clock>,
    /// The top of the provider stack (wake-ups), which releases go through.
    top: Arc<dyn Provider>,
    /// The stack under the clock, which the idle check counts queues on.
    store: Arc<dyn Provider>,
    provider: Option<NativeProvider>,
    moving: tokio::sync::Mutex<()>,
}

/// A private in-memory store with a virtual clock.
#[napi(
    js_name = "createTestStore",
    ts_return_type = "Promise<NativeTestStore>"
)]
pub async fn create_test_store() -> Settled<NativeTestStore> {
    Settled::of(async {
        let clock = Arc::new(Clock::default());
        let mut store = None;
        let provider = sqlite_in_memory_with(Default::default(), |next| {
            store = Some(next.clone());
            Arc::new(Stacked::new(clock.clone(), next)) as Arc<dyn Provider>
        })
        .await?;
        let store = store.ok_or_else(|| BridgeError::Internal("test store not stacked".into()))?;
        Ok(NativeTestStore {
            clock,
            top: provider.provider(),
            store,
            provider: Some(provider),
            moving: tokio::sync::Mutex::new(()),
        })
    })
    .await
}

impl NativeTestStore {
    /// Waits until nothing can run, for at most `timeout`.
    async fn idle(&self, timeout: Duration) -> BridgeResult<()> {
        let end = Instant::now() + timeout;
        loop {
            let busy = match self.clock.busy(&self.store).await.map_err(provider_error)? {
                None => return Ok(()),
                Some(b) => b,
            };
            if Instant::now() >= end {
                return Err(still_busy(timeout, busy));
            }
            tokio::time::sleep(IDLE_POLL).await;
        }
    }

    async fn release(&self) -> BridgeResult<()> {
        self.clock
            .release_due(&self.top)
            .await
            .map(drop)
            .map_err(provider_error)
    }

    async fn advance_by(&self, by: Duration, timeout: Duration) -> BridgeResult<u64> {
        let _one_at_a_time = self.moving.lock().await;
        let target = self.clock.now_ms().saturating_add(by.as_millis() as u64);
        loop {
            self.idle(timeout).await?;
            match self.clock.next_due() {
                // Timers fire one due time at a time, each turn settling
                // before the next, so timers they schedule inside the window
                // fire in it too.
                Some(due) if due <= target => {
                    self.clock.reach(due);
                    self.release().await?;
                }
                _ => break,
            }
        }
        self.clock.reach(target);
        Ok(self.clock.now_ms())
    }

    async fn skip(&self, timeout: Duration) -> BridgeResult<Option<u64>> {
        let _one_at_a_time = self.moving.lock().await;
        self.idle(timeout).await?;
        let Some(due) = self.clock.next_due() else {
            return Ok(None);
        };
        self.clock.reach(due);
        self.release().await?;
        self.idle(timeout).await?;
        Ok(Some(due))
    }
}

fn still_busy(timeout: Duration, busy: Busy) -> BridgeError {
    BridgeError::Timeout(format!(
        "TestEnv: work was still running after {} ms ({} orchestrator and {} worker messages queued, {} in flight); \
         is every orchestration and activity it needs registered, and does an activity hang? (idleTimeoutMs sets this wait)",
        timeout.as_millis(),
        busy.orchestrator_queue,
        busy.worker_queue,
        busy.in_flight
    ))
}

#[napi]
impl NativeTestStore {
    /// The provider, handed out once (JS wraps it in a `SqliteProvider`).
    #[napi]
    pub fn take_provider(&mut self) -> napi::Result<NativeProvider, ErrorCode> {
        self.provider.take().ok_or_else(|| {
            BridgeError::RuntimeState("the test store's provider was already taken".into()).into()
        })
    }

    /// Virtual now, epoch ms.
    #[napi]
    pub fn now_ms(&self) -> f64 {
        self.clock.now_ms() as f64
    }

    /// Timers waiting for virtual time.
    #[napi]
    pub fn pending_timers(&self) -> u32 {
        self.clock.held_count() as u32
    }

    /// Waits until nothing can run.
    #[napi(ts_return_type = "Promise<void>")]
    pub async fn wait_idle(&self, idle_timeout_ms: f64) -> Settled<()> {
        Settled::of(async {
            let timeout = rules::millis("idleTimeoutMs", idle_timeout_ms)?;
            let _not_while_moving = self.moving.lock().await;
            self.idle(timeout).await
        })
        .await
    }

    /// Moves virtual time forward by `by` (ms, or text like `'1d'`), firing
    /// the timers it passes in order; resolves to the new virtual now.
    #[napi(ts_return_type = "Promise<number>")]
    pub async fn advance(&self, by: Either<f64, String>, idle_timeout_ms: f64) -> Settled<f64> {
        Settled::of(async {
            let by = rules::duration("duration", by)?;
            let timeout = rules::millis("idleTimeoutMs", idle_timeout_ms)?;
            Ok(self.advance_by(by, timeout).await? as f64)
        })
        .await
    }

    /// Once nothing can run, jumps to the earliest held timer and fires
    /// every timer due then; resolves to that time, or null if none waits.
    #[napi(ts_return_type = "Promise<number | null>")]
    pub async fn skip_time(&self, idle_timeout_ms: f64) -> Settled<Option<f64>> {
        Settled::of(async {
            let timeout = rules::millis("idleTimeoutMs", idle_timeout_ms)?;
            Ok(self.skip(timeout).await?.map(|ms| ms as f64))
        })
        .await
    }

    /// Drops the held timers.
    #[napi]
    pub fn close(&self) {
        self.clock.clear();
    }
}
