//! The guard as a layer of the provider stack: bookkeeping around the calls
//! that need it; every other call passes through. Its call policy is an
//! observer that counts deadlocks of every call.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use duroxide::providers::{
    DispatcherCapabilityFilter, ExecutionMetadata, OrchestrationItem, Provider, ProviderError,
    ScheduledActivityIdentifier, SessionFetchConfig, TagFilter, WorkItem,
};
use duroxide::{ErrorDetails, Event, EventKind};

use super::{nondeterminism, Guard, Queue, LOSS_WINDOW};
use crate::options::NondeterminismPolicy;
use crate::provider_errors::ProviderFault;
use crate::providers::call_policy::CallPolicy;
use crate::providers::descriptors;
use crate::providers::layer::{BoxFut, Layer};
use crate::providers::wakeup::GIVE_UP;
use tokio_util::sync::CancellationToken;

fn poison_of(details: &ErrorDetails) -> Option<u32> {
    match details {
        ErrorDetails::Poison { attempt_count, .. } => Some(*attempt_count),
        _ => None,
    }
}

fn poison_in(delta: &[Event]) -> Option<u32> {
    delta.iter().find_map(|e| match &e.kind {
        EventKind::OrchestrationFailed { details } => poison_of(details),
        _ => None,
    })
}

fn detached_failure(op: &str) -> ProviderError {
    ProviderError::retryable(op, "the guard's task for this call ended without a result")
}

/// Runs a fetch to its end; once the dispatcher dropped it (`tx` closed), a
/// fetch still waiting for work (`providers/wakeup.rs`) stops waiting, while
/// a store call in flight still finishes, so its item can be handed back.
async fn unless_dropped<T, R>(
    tx: &mut tokio::sync::oneshot::Sender<T>,
    fetch: impl std::future::Future<Output = R>,
) -> R {
    let give_up = CancellationToken::new();
    let fetch = GIVE_UP.scope(give_up.clone(), fetch);
    tokio::pin!(fetch);
    tokio::select! {
        r = &mut fetch => r,
        _ = tx.closed() => {
            give_up.cancel();
            fetch.await
        }
    }
}

impl CallPolicy for Guard {
    fn failed(&self, _op: &'static str, err: &ProviderError) {
        if ProviderFault::is(err, ProviderFault::Deadlock) {
            self.stats.deadlock();
        }
    }
}

/// An abandon that runs on its own task, started when the hook is called
/// (the stack calls it before the caller first polls). `$before` runs first,
/// with the guard and the lock token.
macro_rules! detached_abandon {
    ($method:ident, |$guard:ident, $token:ident| $before:block) => {
        fn $method<'life0, 'life1, 'life2, 'async_trait>(
            &'life0 self,
            next: &'life1 Arc<dyn Provider>,
            $token: &'life2 str,
            delay: Option<Duration>,
            ignore_attempt: bool,
        ) -> BoxFut<'async_trait, Result<(), ProviderError>>
        where
            'life0: 'async_trait,
            'life1: 'async_trait,
            'life2: 'async_trait,
            Self: 'async_trait,
        {
            let $guard = self;
            $before
            let (next, token) = (next.clone(), $token.to_string());
            let task =
                tokio::spawn(async move { next.$method(&token, delay, ignore_attempt).await });
            Box::pin(async move {
                task.await
                    .unwrap_or_else(|_| Err(detached_failure(stringify!($method))))
            })
        }
    };
}

#[async_trait]
impl Layer for Guard {
    fn policy(&self) -> &dyn CallPolicy {
        self
    }

    async fn fetch_orchestration_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        poll_timeout: Duration,
        filter: Option<&DispatcherCapabilityFilter>,
    ) -> Result<Option<(OrchestrationItem, String, u32)>, ProviderError> {
        if let Some((token, lock)) = self.locks.take_forgotten() {
            self.release_forgotten(token, lock);
        }
        let waited = Instant::now();
        let permit = self.orch_gate.enter().await;
        self.stats.orch_fetch_wait.record(waited.elapsed());
        let (next, stats, filter) = (next.clone(), self.stats.clone(), filter.cloned());
        let (mut tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let started = Instant::now();
            let fetch = next.fetch_orchestration_item(lock_timeout, poll_timeout, filter.as_ref());
            let r = unless_dropped(&mut tx, fetch).await;
            stats.orch_fetch.record(started.elapsed());
            drop(permit);
            // The dispatcher dropped the fetch (shutdown): give the item back.
            if let Err(Ok(Some((_, token, _)))) = tx.send(r) {
                super::hand_back(next, token, None, true).await;
            }
        });
        let r = rx
            .await
            .unwrap_or_else(|_| Err(detached_failure("fetch_orchestration_item")));
        if let Ok(Some((item, token, attempt))) = &r {
            self.locks
                .fetched(token, &item.instance, *attempt, item.history.len());
            self.waits.note(&item.instance, &item.history);
            super::duplicates::warn_dropped(item);
            self.note_fetched(&item.instance, *attempt, Queue::Orchestrator);
            self.missing(
                self.unregistered.orchestration(item),
                Queue::Orchestrator,
                *attempt,
            );
        }
        r
    }

    async fn ack_orchestration_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_token: &str,
        execution_id: u64,
        history_delta: Vec<Event>,
        worker_items: Vec<WorkItem>,
        orchestrator_items: Vec<WorkItem>,
        metadata: ExecutionMetadata,
        cancelled_activities: Vec<ScheduledActivityIdentifier>,
    ) -> Result<(), ProviderError> {
        let (mut history_delta, mut orchestrator_items, mut metadata) =
            (history_delta, orchestrator_items, metadata);
        let poison = poison_in(&history_delta);
        let added = history_delta.len();
        let instance = history_delta.first().map(|e| e.instance_id.clone());
        if let Some(instance) = &instance {
            self.waits.forget(instance);
            if let Some(details) = nondeterminism::found_in(&history_delta).cloned() {
                let message = self
                    .nondeterminism
                    .describe(next, instance, execution_id, &history_delta, &details)
                    .await;
                if self.nondeterminism.policy() == NondeterminismPolicy::Hold {
                    self.hold(next, lock_token, instance, execution_id, &message)
                        .await;
                    return Ok(());
                }
                nondeterminism::rewrite(
                    &mut history_delta,
                    &mut orchestrator_items,
                    &mut metadata,
                    &message,
                );
                self.nondeterministic(instance, &message, false);
            } else if let Some(turns) = self.nondeterminism.committed(instance) {
                tracing::info!(
                    target: "duroxide_node::guard",
                    instance_id = %instance,
                    "instance '{instance}' replays again: a turn committed after {turns} held turn(s)"
                );
            }
        }
        self.cancelled.note(&cancelled_activities);
        let r = next
            .ack_orchestration_item(
                lock_token,
                execution_id,
                history_delta,
                worker_items,
                orchestrator_items,
                metadata,
                cancelled_activities,
            )
            .await;
        match &r {
            Ok(()) => {
                let held = self.locks.release(lock_token);
                if let (Some(held), Some(instance)) = (&held, &instance) {
                    self.history_size
                        .committed(instance, held.history_len + added);
                }
                let instance = instance.or(held.map(|h| h.instance));
                if let (Some(attempt), Some(instance)) = (poison, instance) {
                    self.poisoned(&instance, Queue::Orchestrator, attempt);
                }
            }
            // Counted once per lock: the failure ack that follows fails the same way.
            Err(e) if ProviderFault::is(e, ProviderFault::InvalidLock) => {
                if let Some(held) = self.locks.release(lock_token) {
                    let instance = instance.unwrap_or(held.instance);
                    self.stats
                        .invalid_lock_ack(&instance, held.attempt, LOSS_WINDOW);
                    self.lock_lost(&instance, Queue::Orchestrator, Some(held.attempt));
                }
            }
            Err(_) => {}
        }
        r
    }

    // Not `async fn`: the abandon must start now, even if the returned
    // future is dropped unpolled.
    detached_abandon!(abandon_orchestration_item, |guard, token| {
        if let Some(held) = guard.locks.release(token) {
            guard.waits.forget(&held.instance);
        }
    });

    async fn fetch_work_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        poll_timeout: Duration,
        session: Option<&SessionFetchConfig>,
        tag_filter: &TagFilter,
    ) -> Result<Option<(WorkItem, String, u32)>, ProviderError> {
        let permit = self.work_gate.enter().await;
        let (next, stats) = (next.clone(), self.stats.clone());
        let (session, tag_filter) = (session.cloned(), tag_filter.clone());
        let (mut tx, rx) = tokio::sync::oneshot::channel();
        let slot = tokio::task::try_id();
        tokio::spawn(async move {
            let started = Instant::now();
            let fetch =
                next.fetch_work_item(lock_timeout, poll_timeout, session.as_ref(), &tag_filter);
            let fetch = descriptors::CALLER.scope(slot, fetch);
            let r = unless_dropped(&mut tx, fetch).await;
            stats.work_fetch.record(started.elapsed());
            drop(permit);
            if let Err(Ok(Some((_, token, _)))) = tx.send(r) {
                let _ = next.abandon_work_item(&token, None, true).await;
            }
        });
        let r = rx
            .await
            .unwrap_or_else(|_| Err(detached_failure("fetch_work_item")));
        if let Ok(Some((item @ WorkItem::ActivityExecute { instance, .. }, _, attempt))) = &r {
            self.note_fetched(instance, *attempt, Queue::Worker);
            self.missing(self.unregistered.activity(item), Queue::Worker, *attempt);
        }
        r
    }

    async fn ack_work_item(
        &self,
        next: &Arc<dyn Provider>,
        token: &str,
        completion: Option<WorkItem>,
    ) -> Result<(), ProviderError> {
        let (activity, poison) = match &completion {
            Some(WorkItem::ActivityCompleted {
                instance,
                execution_id,
                id,
                ..
            }) => (Some((instance.clone(), *execution_id, *id)), None),
            Some(WorkItem::ActivityFailed {
                instance,
                execution_id,
                id,
                details,
            }) => (
                Some((instance.clone(), *execution_id, *id)),
                poison_of(details),
            ),
            _ => (None, None),
        };
        let r = next.ack_work_item(token, completion).await;
        match (&r, activity) {
            (Ok(()), Some((instance, ..))) => {
                if let Some(attempt) = poison {
                    self.poisoned(&instance, Queue::Worker, attempt);
                }
            }
            (Err(e), Some((instance, execution, id))) if ProviderFault::work_lock_gone(e) => {
                if self.cancelled.take(&instance, execution, id) {
                    tracing::debug!(
                        target: "duroxide_node::guard",
                        instance_id = %instance,
                        activity_id = id,
                        "the result of a cancelled activity was discarded (it lost a race, or \
                         its orchestration ended while it ran)"
                    );
                } else {
                    self.stats.work_lock_lost_ack();
                    self.lock_lost(&instance, Queue::Worker, None);
                }
            }
            _ => {}
        }
        r
    }

    detached_abandon!(abandon_work_item, |_guard, _token| {});
}
