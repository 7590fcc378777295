//! The fleet guard: the layer of the provider stack (`providers/layer.rs`)
//! every `NativeRuntime` dispatches through, with its counters, events and
//! watchdog.
//!
//! - `layer.rs`: the guard's hooks (fetches, acks, abandons) and its call
//!   policy, which counts deadlocks.
//! - `fetch_gate.rs`: caps concurrent fetch calls per runtime (the Postgres
//!   fetch convoy).
//! - `locks.rs`: which orchestration locks this runtime holds; releases the
//!   ones the runtime drops after a failed ack.
//! - `stats.rs`: counters, fetch-latency windows, `health()`.
//! - `events.rs`: `poison` / `lockLost` / `livelock` events and their log lines.
//! - `watchdog.rs`: the periodic livelock check.
//! - `unregistered.rs`: work for a name this runtime has no handler for.
//! - `nondeterminism.rs`: turns whose code does not replay the history
//!   (`onNondeterminism`).
//! - `duplicates.rs`: starts of instances that already exist.
//! - `history_size.rs`: the WARN for histories past `historyWarnEvents`.
//! - `pg.rs`: the Postgres queries of the watchdog and the start-up schema check.
//!
//! Four calls run in their own tokio task
//! from the moment they are called: both fetches (so a fetch the dispatcher
//! drops at shutdown still finishes, and the item it locked is handed back at
//! once instead of at lease expiry) and both abandons (so an abandon whose
//! future is dropped unpolled still runs).

mod cancelled;
mod duplicates;
pub(crate) mod events;
mod fetch_gate;
mod history_size;
mod layer;
mod locks;
mod nondeterminism;
mod pg;
pub(crate) mod stats;
mod unregistered;
mod watchdog;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use duroxide::providers::Provider;

use crate::bridge::waits::RecordedWaits;
use crate::bridge::Bridge;
use crate::options::ParsedOptions;
use crate::providers::call_policy::{backoff, run, CallPolicy};
use crate::providers::layer::Stacked;
use crate::providers::Backend;
use crate::runtime_metrics::RuntimeMetrics;
use events::{EventSink, GuardEvent, GuardEvents, RuntimeEventType};
use fetch_gate::FetchGate;
use locks::LockTracker;
use stats::{GuardStats, RuntimeHealth};

/// Lock losses on one instance within this window, at least
/// [`LOSS_THRESHOLD`] of them, are the in-process livelock signature.
const LOSS_WINDOW: Duration = Duration::from_secs(600);
const LOSS_THRESHOLD: usize = 3;
/// The delay the dispatcher itself gives the abandons it drops; doubled per
/// attempt, so an instance whose acks keep failing retries ever more slowly,
/// and capped at the lease, so never later than lease expiry would allow.
const FORGOTTEN_ABANDON_DELAY: Duration = Duration::from_millis(50);

/// Where a message lives: `'orchestrator'` or `'worker'`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Queue {
    Orchestrator,
    Worker,
}

impl Queue {
    fn as_str(self) -> &'static str {
        match self {
            Queue::Orchestrator => "orchestrator",
            Queue::Worker => "worker",
        }
    }
}

pub(crate) struct Guard {
    /// The store below the guard, for the locks it hands back itself.
    next: Arc<dyn Provider>,
    /// The store's handle, for the guard's own queries.
    backend: Backend,
    orch_gate: FetchGate,
    work_gate: FetchGate,
    locks: LockTracker,
    cancelled: cancelled::CancelledActivities,
    stats: Arc<GuardStats>,
    events: GuardEvents,
    unregistered: unregistered::Unregistered,
    max_attempts: u32,
    lease: Duration,
    /// Fetched with `attempt_count > maxAttempts + 1`: instance -> (attempt, queue).
    over_attempts: Mutex<HashMap<String, (u32, Queue)>>,
    watchdog: Mutex<Option<watchdog::Watchdog>>,
    /// The subscriptions of fetched histories, for the turns the bridge runs
    /// on them (`bridge/waits.rs`).
    waits: Arc<RecordedWaits>,
    nondeterminism: nondeterminism::Nondeterminism,
    /// The `historyWarnEvents` warning.
    history_size: history_size::HistorySize,
}

impl Guard {
    /// The guard of one runtime, and the stack the runtime dispatches
    /// through: the guard over `next`. `waits` is the runtime bridge's.
    pub(crate) fn stack(
        next: Arc<dyn Provider>,
        backend: &Backend,
        options: &ParsedOptions,
        waits: Arc<RecordedWaits>,
    ) -> (Arc<Self>, Arc<dyn Provider>) {
        let binding = &options.binding;
        let guard = Arc::new(Self {
            next: next.clone(),
            backend: backend.clone(),
            orch_gate: FetchGate::new(binding.max_concurrent_orchestration_fetches),
            work_gate: FetchGate::new(binding.max_concurrent_work_fetches),
            locks: LockTracker::default(),
            cancelled: Default::default(),
            stats: Arc::new(GuardStats::default()),
            events: GuardEvents::default(),
            unregistered: Default::default(),
            max_attempts: options.runtime.max_attempts,
            lease: options.runtime.orchestrator_lock_timeout,
            over_attempts: Mutex::new(HashMap::new()),
            watchdog: Mutex::new(None),
            waits,
            nondeterminism: nondeterminism::Nondeterminism::new(
                binding.on_nondeterminism,
                options.runtime.unregistered_backoff.clone(),
            ),
            history_size: history_size::HistorySize::new(binding.history_warn_events),
        });
        let stack: Arc<dyn Provider> = Arc::new(Stacked::new(guard.clone(), next));
        (guard, stack)
    }

    /// The handler names of the runtime, set before it dispatches anything.
    pub(crate) fn registered(
        &self,
        activities: BTreeSet<String>,
        orchestrations: BTreeSet<String>,
    ) {
        self.unregistered.set_registered(activities, orchestrations);
    }

    /// What the description of a nondeterministic turn replays on: a twin of
    /// the runtime's bridge and the runtime's handlers over it.
    pub(crate) fn replays_with(
        &self,
        bridge: Arc<Bridge>,
        orchestrations: duroxide::runtime::registry::OrchestrationRegistry,
    ) {
        self.nondeterminism.started(bridge, orchestrations);
    }

    /// The runtime started: events flow to `sink`, the watchdog runs every
    /// `watchdog_interval_ms` (0: never), and on Postgres the schema check
    /// runs (awaited, so its warning precedes `start()` resolving; bounded, so
    /// a slow database cannot hold up the start).
    pub(crate) async fn started(self: &Arc<Self>, sink: EventSink, watchdog_interval_ms: u64) {
        self.events.connect(sink);
        if let Some((pool, schema)) = self.backend.first_schema_check() {
            let check = pg::warn_other_schemas(pool, schema);
            if !matches!(
                tokio::time::timeout(Duration::from_secs(2), check).await,
                Ok(true)
            ) {
                // Let a later runtime try again: this one could not look.
                self.backend.schema_check_failed();
            }
        }
        if watchdog_interval_ms > 0 {
            let dog = watchdog::Watchdog::start(self, Duration::from_millis(watchdog_interval_ms));
            *self.watchdog.lock().expect("watchdog slot") = Some(dog);
        }
    }

    /// The runtime stopped: no turn runs any more, so every lock still
    /// recorded was dropped by the runtime; hand each back now rather than at
    /// lease expiry. The attempt stays counted, as lease expiry would leave it.
    pub(crate) async fn stopped(&self) {
        let dog = self.watchdog.lock().expect("watchdog slot").take();
        if let Some(dog) = dog {
            dog.stop().await;
        }
        self.events.disconnect();
        self.nondeterminism.stopped();
        let tasks: Vec<_> = self
            .locks
            .drain()
            .into_iter()
            .map(|(token, lock)| {
                self.stats.orphaned_lock_released();
                tracing::debug!(target: "duroxide_node::guard", instance_id = %lock.instance, "releasing a lock left at shutdown");
                tokio::spawn(hand_back(self.next.clone(), token, None, false))
            })
            .collect();
        let _ = tokio::time::timeout(Duration::from_secs(5), async {
            for t in tasks {
                let _ = t.await;
            }
        })
        .await;
    }

    /// `m` with the guard's counters filled in. duroxide counted each held
    /// turn as a configuration failure before the guard kept it from
    /// committing (twice: 0.1.32 records a configuration failure in the turn
    /// and again with its labels at the ack), so those are taken off its
    /// failure counts.
    pub(crate) fn metrics(&self, m: RuntimeMetrics) -> RuntimeMetrics {
        let holds = self.nondeterminism.holds() as i64;
        let counted = 2 * holds;
        let m = RuntimeMetrics {
            orch_failures: (m.orch_failures - counted).max(0),
            orch_configuration_errors: (m.orch_configuration_errors - counted).max(0),
            nondeterminism_holds: holds,
            held_instances: self.nondeterminism.held_instances(),
            ..m
        };
        self.stats.apply(m)
    }

    pub(crate) fn health(&self, running: bool) -> RuntimeHealth {
        let mut reasons = Vec::new();
        if !running {
            reasons.push("the runtime is not running (not started, or shut down)".to_string());
        }
        reasons.extend(self.stats.degraded_reasons());
        reasons.extend(self.unregistered.degraded_reasons());
        reasons.extend(self.nondeterminism.degraded_reasons());
        RuntimeHealth::from_reasons(reasons)
    }

    /// Instances fetched with `attempt_count > maxAttempts + 1` since the last call.
    fn take_over_attempts(&self) -> Vec<(String, u32, Queue)> {
        let mut m = self.over_attempts.lock().expect("over attempts");
        m.drain().map(|(k, (a, q))| (k, a, q)).collect()
    }

    fn note_fetched(&self, instance: &str, attempt: u32, queue: Queue) {
        if attempt > self.max_attempts.saturating_add(1) {
            let mut m = self.over_attempts.lock().expect("over attempts");
            if m.len() < 10_000 {
                m.insert(instance.to_string(), (attempt, queue));
            }
        }
    }

    /// Hands back a lock the runtime dropped (see `locks.rs`).
    fn release_forgotten(&self, token: String, lock: locks::HeldLock) {
        self.stats.orphaned_lock_released();
        let doublings = lock.attempt.saturating_sub(1).min(16);
        let delay = (FORGOTTEN_ABANDON_DELAY * (1u32 << doublings)).min(self.lease);
        tracing::warn!(
            target: "duroxide_node::guard",
            instance_id = %lock.instance,
            attempt_count = lock.attempt,
            "released the lock of instance '{}' that the runtime left held after a failed ack; \
             the message is retried in {} ms instead of at lease expiry",
            lock.instance,
            delay.as_millis()
        );
        tokio::spawn(hand_back(self.next.clone(), token, Some(delay), false));
    }

    fn emit(
        &self,
        event_type: RuntimeEventType,
        instance: &str,
        queue: Queue,
        attempt: Option<u32>,
        cause: &str,
    ) {
        self.events.emit(GuardEvent {
            event_type,
            instance_id: instance.to_string(),
            queue: queue.as_str().to_string(),
            attempt_count: attempt,
            max_attempts: self.max_attempts,
            cause: cause.to_string(),
            name: None,
            kind: None,
            held: None,
            divergence: None,
        });
    }

    /// Reports the first message for a name without a handler here.
    fn missing(&self, m: Option<unregistered::Missing>, queue: Queue, attempt: u32) {
        let Some(m) = m else { return };
        self.events.emit(GuardEvent {
            event_type: RuntimeEventType::Unregistered,
            instance_id: m.instance,
            queue: queue.as_str().to_string(),
            attempt_count: Some(attempt),
            max_attempts: self.max_attempts,
            cause: "the instance stays Running and the message is retried with \
                    unregisteredBackoff until a runtime with this handler takes it (or it \
                    exceeds maxAttempts): register it here, check the name for a typo, or run a \
                    worker that has it"
                .to_string(),
            name: Some(m.name),
            kind: Some(m.kind.as_str().to_string()),
            held: None,
            divergence: None,
        });
    }

    /// Holds a nondeterministic turn of `instance` (`onNondeterminism:
    /// 'hold'`): its lock is handed back with the back-off and without
    /// counting the attempt, so nothing of the turn is committed.
    async fn hold(
        &self,
        next: &Arc<dyn Provider>,
        token: &str,
        instance: &str,
        execution: u64,
        message: &str,
    ) {
        let (delay, news) = self.nondeterminism.hold(instance, execution, message);
        self.locks.release(token);
        hand_back(next.clone(), token.to_string(), Some(delay), true).await;
        if news {
            self.nondeterministic(instance, message, true);
        } else {
            tracing::debug!(
                target: "duroxide_node::guard",
                instance_id = %instance,
                "instance '{instance}' still does not replay; retried in {} ms",
                delay.as_millis()
            );
        }
    }

    /// Reports a turn of `instance` whose code does not replay its history.
    fn nondeterministic(&self, instance: &str, message: &str, held: bool) {
        let cause = if held {
            "the instance stays Running and nothing of the turn was committed; it is retried \
             with unregisteredBackoff until code that replays its history runs here (deploy the \
             previous code, or register the change as a new orchestration version)"
        } else {
            "the instance failed (onNondeterminism: 'fail'); with onNondeterminism: 'hold' it \
             would stay Running until code that replays it is deployed; run the replay check \
             (docs/replay.md) before deploying"
        };
        self.events.emit(GuardEvent {
            event_type: RuntimeEventType::Nondeterminism,
            instance_id: instance.to_string(),
            queue: Queue::Orchestrator.as_str().to_string(),
            attempt_count: None,
            max_attempts: self.max_attempts,
            cause: cause.to_string(),
            name: None,
            kind: None,
            held: Some(held),
            divergence: Some(message.to_string()),
        });
    }

    fn poisoned(&self, instance: &str, queue: Queue, attempt: u32) {
        self.stats.poison();
        self.emit(
            RuntimeEventType::Poison,
            instance,
            queue,
            Some(attempt),
            "it was fetched more than maxAttempts times without completing: the turn or activity \
             keeps crashing, hanging past its lock, or failing to commit",
        );
    }

    fn lock_lost(&self, instance: &str, queue: Queue, attempt: Option<u32>) {
        if !self.events.first_time(RuntimeEventType::LockLost, instance) {
            return;
        }
        let cause = match queue {
            Queue::Orchestrator => {
                "the lease (orchestratorLockTimeoutMs) expired before the turn committed: a slow or \
                 blocking turn, a blocked event loop, or acks queued behind fetches on Postgres"
            }
            Queue::Worker => {
                "the activity's lease (workerLockTimeoutMs) expired or its orchestration ended \
                 while it ran; the activity result was discarded"
            }
        };
        self.emit(RuntimeEventType::LockLost, instance, queue, attempt, cause);
    }
}

/// How a lock nobody else will abandon is handed back: nothing retries this
/// call if it fails, so transient errors (a busy SQLite file, a Postgres
/// deadlock) are retried here, briefly; after that the lease expiry still
/// frees the lock.
struct HandBack;

impl CallPolicy for HandBack {
    fn is_transient(&self, _op: &'static str, err: &duroxide::providers::ProviderError) -> bool {
        err.is_retryable()
    }

    fn budget(&self) -> Duration {
        Duration::from_millis(600)
    }

    fn pause(&self, retry: u32) -> Duration {
        backoff(Duration::from_millis(20), Duration::from_millis(320), retry)
    }
}

async fn hand_back(
    next: Arc<dyn Provider>,
    token: String,
    delay: Option<Duration>,
    ignore_attempt: bool,
) {
    let _ = run(&HandBack, "abandon_orchestration_item", || {
        next.abandon_orchestration_item(&token, delay, ignore_attempt)
    })
    .await;
}

#[cfg(test)]
mod tests;
