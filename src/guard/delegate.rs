//! `impl Provider for GuardedProvider`: every method delegated to the inner
//! store, with the guard's bookkeeping around the calls that need it.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use duroxide::providers::{
    DispatcherCapabilityFilter, ExecutionMetadata, OrchestrationItem, Provider, ProviderAdmin,
    ProviderError, ScheduledActivityIdentifier, SessionFetchConfig, TagFilter, WorkItem,
};
use duroxide::{ErrorDetails, Event, EventKind};

use super::{GuardedProvider, Queue, LOSS_WINDOW};

type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// duroxide-pg reports SQLSTATE 40P01 as "Deadlock detected: ...".
pub(super) fn is_deadlock(e: &ProviderError) -> bool {
    let m = e.message.to_ascii_lowercase();
    m.contains("deadlock") || m.contains("40p01")
}

/// duroxide-pg: "Invalid lock token"; SQLite: "Invalid lock token" (unknown
/// token) or "Instance lock expired".
fn is_invalid_lock(e: &ProviderError) -> bool {
    e.message.contains("Invalid lock token") || e.message.contains("lock expired")
}

/// duroxide-pg: "Worker queue item not found or already processed"; SQLite:
/// "... (worker queue row not found or lock invalid)".
fn is_lost_work_lock(e: &ProviderError) -> bool {
    is_invalid_lock(e) || e.message.contains("not found") || e.message.contains("lock invalid")
}

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

/// An abandon that runs on its own task, started before the returned future
/// is first polled, counting a deadlock it meets. `$before` runs first, with
/// the guard and the lock token.
macro_rules! detached_abandon {
    ($method:ident, |$guard:ident, $token:ident| $before:block) => {
        fn $method<'a, 'b, 'async_trait>(
            &'a self,
            $token: &'b str,
            delay: Option<Duration>,
            ignore_attempt: bool,
        ) -> BoxFut<'async_trait, Result<(), ProviderError>>
        where
            'a: 'async_trait,
            'b: 'async_trait,
            Self: 'async_trait,
        {
            let $guard = self;
            $before
            let (inner, stats) = (self.inner.clone(), self.stats.clone());
            let token = $token.to_string();
            let task = tokio::spawn(async move {
                let r = inner.$method(&token, delay, ignore_attempt).await;
                if matches!(&r, Err(e) if is_deadlock(e)) {
                    stats.deadlock();
                }
                r
            });
            Box::pin(async move {
                task.await
                    .unwrap_or_else(|_| Err(detached_failure(stringify!($method))))
            })
        }
    };
}

#[async_trait]
impl Provider for GuardedProvider {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn version(&self) -> &str {
        self.inner.version()
    }

    async fn fetch_orchestration_item(
        &self,
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
        let (inner, stats, filter) = (self.inner.clone(), self.stats.clone(), filter.cloned());
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let started = Instant::now();
            let r = inner
                .fetch_orchestration_item(lock_timeout, poll_timeout, filter.as_ref())
                .await;
            stats.orch_fetch.record(started.elapsed());
            drop(permit);
            // The dispatcher dropped the fetch (shutdown): give the item back.
            if let Err(Ok(Some((_, token, _)))) = tx.send(r) {
                super::hand_back(inner, token, None, true).await;
            }
        });
        let r = self.note(
            rx.await
                .unwrap_or_else(|_| Err(detached_failure("fetch_orchestration_item"))),
        );
        if let Ok(Some((item, token, attempt))) = &r {
            self.locks.fetched(token, &item.instance, *attempt);
            self.note_fetched(&item.instance, *attempt, Queue::Orchestrator);
        }
        r
    }

    async fn ack_orchestration_item(
        &self,
        lock_token: &str,
        execution_id: u64,
        history_delta: Vec<Event>,
        worker_items: Vec<WorkItem>,
        orchestrator_items: Vec<WorkItem>,
        metadata: ExecutionMetadata,
        cancelled_activities: Vec<ScheduledActivityIdentifier>,
    ) -> Result<(), ProviderError> {
        let poison = poison_in(&history_delta);
        let instance = history_delta.first().map(|e| e.instance_id.clone());
        let r = self.note(
            self.inner
                .ack_orchestration_item(
                    lock_token,
                    execution_id,
                    history_delta,
                    worker_items,
                    orchestrator_items,
                    metadata,
                    cancelled_activities,
                )
                .await,
        );
        match &r {
            Ok(()) => {
                let held = self.locks.release(lock_token);
                let instance = instance.or(held.map(|h| h.instance));
                if let (Some(attempt), Some(instance)) = (poison, instance) {
                    self.poisoned(&instance, Queue::Orchestrator, attempt);
                }
            }
            // Counted once per lock: the failure ack that follows fails the same way.
            Err(e) if is_invalid_lock(e) => {
                if let Some(held) = self.locks.release(lock_token) {
                    let instance = instance.unwrap_or(held.instance);
                    self.stats
                        .invalid_lock_ack(Some(&instance), held.attempt, LOSS_WINDOW);
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
        guard.locks.release(token);
    });

    async fn read(&self, instance: &str) -> Result<Vec<Event>, ProviderError> {
        self.note(self.inner.read(instance).await)
    }

    async fn read_with_execution(
        &self,
        instance: &str,
        execution_id: u64,
    ) -> Result<Vec<Event>, ProviderError> {
        self.note(self.inner.read_with_execution(instance, execution_id).await)
    }

    async fn append_with_execution(
        &self,
        instance: &str,
        execution_id: u64,
        new_events: Vec<Event>,
    ) -> Result<(), ProviderError> {
        self.note(
            self.inner
                .append_with_execution(instance, execution_id, new_events)
                .await,
        )
    }

    async fn enqueue_for_worker(&self, item: WorkItem) -> Result<(), ProviderError> {
        self.note(self.inner.enqueue_for_worker(item).await)
    }

    async fn fetch_work_item(
        &self,
        lock_timeout: Duration,
        poll_timeout: Duration,
        session: Option<&SessionFetchConfig>,
        tag_filter: &TagFilter,
    ) -> Result<Option<(WorkItem, String, u32)>, ProviderError> {
        let permit = self.work_gate.enter().await;
        let (inner, stats) = (self.inner.clone(), self.stats.clone());
        let (session, tag_filter) = (session.cloned(), tag_filter.clone());
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let started = Instant::now();
            let r = inner
                .fetch_work_item(lock_timeout, poll_timeout, session.as_ref(), &tag_filter)
                .await;
            stats.work_fetch.record(started.elapsed());
            drop(permit);
            if let Err(Ok(Some((_, token, _)))) = tx.send(r) {
                let _ = inner.abandon_work_item(&token, None, true).await;
            }
        });
        let r = self.note(
            rx.await
                .unwrap_or_else(|_| Err(detached_failure("fetch_work_item"))),
        );
        if let Ok(Some((WorkItem::ActivityExecute { instance, .. }, _, attempt))) = &r {
            self.note_fetched(instance, *attempt, Queue::Worker);
        }
        r
    }

    async fn ack_work_item(
        &self,
        token: &str,
        completion: Option<WorkItem>,
    ) -> Result<(), ProviderError> {
        let (instance, poison) = match &completion {
            Some(WorkItem::ActivityCompleted { instance, .. }) => (Some(instance.clone()), None),
            Some(WorkItem::ActivityFailed {
                instance, details, ..
            }) => (Some(instance.clone()), poison_of(details)),
            _ => (None, None),
        };
        let r = self.note(self.inner.ack_work_item(token, completion).await);
        match (&r, instance) {
            (Ok(()), Some(instance)) => {
                if let Some(attempt) = poison {
                    self.poisoned(&instance, Queue::Worker, attempt);
                }
            }
            (Err(e), Some(instance)) if is_lost_work_lock(e) => {
                self.stats.work_lock_lost_ack();
                self.lock_lost(&instance, Queue::Worker, None);
            }
            _ => {}
        }
        r
    }

    async fn renew_work_item_lock(
        &self,
        token: &str,
        extend_for: Duration,
    ) -> Result<(), ProviderError> {
        self.note(self.inner.renew_work_item_lock(token, extend_for).await)
    }

    async fn renew_session_lock(
        &self,
        owner_ids: &[&str],
        extend_for: Duration,
        idle_timeout: Duration,
    ) -> Result<usize, ProviderError> {
        self.note(
            self.inner
                .renew_session_lock(owner_ids, extend_for, idle_timeout)
                .await,
        )
    }

    async fn cleanup_orphaned_sessions(
        &self,
        idle_timeout: Duration,
    ) -> Result<usize, ProviderError> {
        self.note(self.inner.cleanup_orphaned_sessions(idle_timeout).await)
    }

    detached_abandon!(abandon_work_item, |_guard, _token| {});

    async fn renew_orchestration_item_lock(
        &self,
        token: &str,
        extend_for: Duration,
    ) -> Result<(), ProviderError> {
        self.note(
            self.inner
                .renew_orchestration_item_lock(token, extend_for)
                .await,
        )
    }

    async fn enqueue_for_orchestrator(
        &self,
        item: WorkItem,
        delay: Option<Duration>,
    ) -> Result<(), ProviderError> {
        self.note(self.inner.enqueue_for_orchestrator(item, delay).await)
    }

    fn as_management_capability(&self) -> Option<&dyn ProviderAdmin> {
        self.inner.as_management_capability()
    }

    async fn get_custom_status(
        &self,
        instance: &str,
        last_seen_version: u64,
    ) -> Result<Option<(Option<String>, u64)>, ProviderError> {
        self.note(
            self.inner
                .get_custom_status(instance, last_seen_version)
                .await,
        )
    }

    async fn get_kv_value(
        &self,
        instance: &str,
        key: &str,
    ) -> Result<Option<String>, ProviderError> {
        self.note(self.inner.get_kv_value(instance, key).await)
    }

    async fn get_kv_all_values(
        &self,
        instance: &str,
    ) -> Result<HashMap<String, String>, ProviderError> {
        self.note(self.inner.get_kv_all_values(instance).await)
    }

    async fn get_instance_stats(
        &self,
        instance: &str,
    ) -> Result<Option<duroxide::SystemStats>, ProviderError> {
        self.note(self.inner.get_instance_stats(instance).await)
    }
}
