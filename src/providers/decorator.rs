//! A `Provider` (and `ProviderAdmin`) decorator that runs every call of the
//! store it wraps through a [`CallPolicy`] (`call_policy.rs`): retrying
//! Postgres calls cut off by a terminated session (`pg_retry.rs`) or SQLite's
//! transient busy errors (`sqlite_retry.rs`), or bounding how long a client call may wait for
//! an unreachable database (`client/bounded.rs`).
//!
//! Every method is delegated, including the ones with default bodies in the
//! traits, so the wrapped store's own implementations keep running.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use duroxide::providers::{
    DeleteInstanceResult, DispatcherCapabilityFilter, ExecutionInfo, ExecutionMetadata,
    InstanceFilter, InstanceInfo, InstanceTree, OrchestrationItem, Provider, ProviderAdmin,
    ProviderError, PruneOptions, PruneResult, QueueDepths, ScheduledActivityIdentifier,
    SessionFetchConfig, SystemMetrics, TagFilter, WorkItem,
};
use duroxide::Event;

use super::call_policy::{run, CallPolicy};

/// The store under the Postgres decorator (`pg_retry.rs`), for code that
/// needs its concrete type: the guard reaches the Postgres pool this way.
pub fn undecorated(provider: &Arc<dyn Provider>) -> &Arc<dyn Provider> {
    let any: &dyn std::any::Any = provider.as_ref();
    match any.downcast_ref::<Decorated<super::pg_retry::TerminatedRetry>>() {
        Some(d) => undecorated(d.inner()),
        None => provider,
    }
}

pub struct Decorated<P: CallPolicy> {
    inner: Arc<dyn Provider>,
    policy: P,
}

impl<P: CallPolicy> Decorated<P> {
    pub fn new(inner: Arc<dyn Provider>, policy: P) -> Self {
        Self { inner, policy }
    }

    pub fn inner(&self) -> &Arc<dyn Provider> {
        &self.inner
    }

    fn admin(&self, op: &'static str) -> Result<&dyn ProviderAdmin, ProviderError> {
        self.inner.as_management_capability().ok_or_else(|| {
            ProviderError::permanent(op, "the provider has no management capability")
        })
    }
}

#[async_trait]
impl<P: CallPolicy> Provider for Decorated<P> {
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
        run(&self.policy, "fetch_orchestration_item", move || {
            self.inner
                .fetch_orchestration_item(lock_timeout, poll_timeout, filter)
        })
        .await
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
        let (delta, workers, orchs, meta, cancelled) = (
            &history_delta,
            &worker_items,
            &orchestrator_items,
            &metadata,
            &cancelled_activities,
        );
        run(&self.policy, "ack_orchestration_item", move || {
            self.inner.ack_orchestration_item(
                lock_token,
                execution_id,
                delta.clone(),
                workers.clone(),
                orchs.clone(),
                meta.clone(),
                cancelled.clone(),
            )
        })
        .await
    }

    async fn abandon_orchestration_item(
        &self,
        lock_token: &str,
        delay: Option<Duration>,
        ignore_attempt: bool,
    ) -> Result<(), ProviderError> {
        run(&self.policy, "abandon_orchestration_item", move || {
            self.inner
                .abandon_orchestration_item(lock_token, delay, ignore_attempt)
        })
        .await
    }

    async fn read(&self, instance: &str) -> Result<Vec<Event>, ProviderError> {
        run(&self.policy, "read", move || self.inner.read(instance)).await
    }

    async fn read_with_execution(
        &self,
        instance: &str,
        execution_id: u64,
    ) -> Result<Vec<Event>, ProviderError> {
        run(&self.policy, "read_with_execution", move || {
            self.inner.read_with_execution(instance, execution_id)
        })
        .await
    }

    async fn append_with_execution(
        &self,
        instance: &str,
        execution_id: u64,
        new_events: Vec<Event>,
    ) -> Result<(), ProviderError> {
        let events = &new_events;
        run(&self.policy, "append_with_execution", move || {
            self.inner
                .append_with_execution(instance, execution_id, events.clone())
        })
        .await
    }

    async fn enqueue_for_worker(&self, item: WorkItem) -> Result<(), ProviderError> {
        let item = &item;
        run(&self.policy, "enqueue_for_worker", move || {
            self.inner.enqueue_for_worker(item.clone())
        })
        .await
    }

    async fn fetch_work_item(
        &self,
        lock_timeout: Duration,
        poll_timeout: Duration,
        session: Option<&SessionFetchConfig>,
        tag_filter: &TagFilter,
    ) -> Result<Option<(WorkItem, String, u32)>, ProviderError> {
        run(&self.policy, "fetch_work_item", move || {
            self.inner
                .fetch_work_item(lock_timeout, poll_timeout, session, tag_filter)
        })
        .await
    }

    async fn ack_work_item(
        &self,
        token: &str,
        completion: Option<WorkItem>,
    ) -> Result<(), ProviderError> {
        let completion = &completion;
        run(&self.policy, "ack_work_item", move || {
            self.inner.ack_work_item(token, completion.clone())
        })
        .await
    }

    async fn renew_work_item_lock(
        &self,
        token: &str,
        extend_for: Duration,
    ) -> Result<(), ProviderError> {
        run(&self.policy, "renew_work_item_lock", move || {
            self.inner.renew_work_item_lock(token, extend_for)
        })
        .await
    }

    async fn renew_session_lock(
        &self,
        owner_ids: &[&str],
        extend_for: Duration,
        idle_timeout: Duration,
    ) -> Result<usize, ProviderError> {
        run(&self.policy, "renew_session_lock", move || {
            self.inner
                .renew_session_lock(owner_ids, extend_for, idle_timeout)
        })
        .await
    }

    async fn cleanup_orphaned_sessions(
        &self,
        idle_timeout: Duration,
    ) -> Result<usize, ProviderError> {
        run(&self.policy, "cleanup_orphaned_sessions", move || {
            self.inner.cleanup_orphaned_sessions(idle_timeout)
        })
        .await
    }

    async fn abandon_work_item(
        &self,
        token: &str,
        delay: Option<Duration>,
        ignore_attempt: bool,
    ) -> Result<(), ProviderError> {
        run(&self.policy, "abandon_work_item", move || {
            self.inner.abandon_work_item(token, delay, ignore_attempt)
        })
        .await
    }

    async fn renew_orchestration_item_lock(
        &self,
        token: &str,
        extend_for: Duration,
    ) -> Result<(), ProviderError> {
        run(&self.policy, "renew_orchestration_item_lock", move || {
            self.inner.renew_orchestration_item_lock(token, extend_for)
        })
        .await
    }

    async fn enqueue_for_orchestrator(
        &self,
        item: WorkItem,
        delay: Option<Duration>,
    ) -> Result<(), ProviderError> {
        let item = &item;
        run(&self.policy, "enqueue_for_orchestrator", move || {
            self.inner.enqueue_for_orchestrator(item.clone(), delay)
        })
        .await
    }

    fn as_management_capability(&self) -> Option<&dyn ProviderAdmin> {
        self.inner
            .as_management_capability()
            .map(|_| self as &dyn ProviderAdmin)
    }

    async fn get_custom_status(
        &self,
        instance: &str,
        last_seen_version: u64,
    ) -> Result<Option<(Option<String>, u64)>, ProviderError> {
        run(&self.policy, "get_custom_status", move || {
            self.inner.get_custom_status(instance, last_seen_version)
        })
        .await
    }

    async fn get_kv_value(
        &self,
        instance: &str,
        key: &str,
    ) -> Result<Option<String>, ProviderError> {
        run(&self.policy, "get_kv_value", move || {
            self.inner.get_kv_value(instance, key)
        })
        .await
    }

    async fn get_kv_all_values(
        &self,
        instance: &str,
    ) -> Result<HashMap<String, String>, ProviderError> {
        run(&self.policy, "get_kv_all_values", move || {
            self.inner.get_kv_all_values(instance)
        })
        .await
    }

    async fn get_instance_stats(
        &self,
        instance: &str,
    ) -> Result<Option<duroxide::SystemStats>, ProviderError> {
        run(&self.policy, "get_instance_stats", move || {
            self.inner.get_instance_stats(instance)
        })
        .await
    }
}

/// `$op` names the call for the policy and in errors; the closure body is the
/// delegated call on the wrapped store's admin capability.
macro_rules! admin_call {
    ($self:ident, $op:literal, |$admin:ident| $call:expr) => {{
        let $admin = $self.admin($op)?;
        run(&$self.policy, $op, move || $call).await
    }};
}

#[async_trait]
impl<P: CallPolicy> ProviderAdmin for Decorated<P> {
    async fn list_instances(&self) -> Result<Vec<String>, ProviderError> {
        admin_call!(self, "list_instances", |a| a.list_instances())
    }

    async fn list_instances_by_status(&self, status: &str) -> Result<Vec<String>, ProviderError> {
        admin_call!(self, "list_instances_by_status", |a| a
            .list_instances_by_status(status))
    }

    async fn list_executions(&self, instance: &str) -> Result<Vec<u64>, ProviderError> {
        admin_call!(self, "list_executions", |a| a.list_executions(instance))
    }

    async fn read_history_with_execution_id(
        &self,
        instance: &str,
        execution_id: u64,
    ) -> Result<Vec<Event>, ProviderError> {
        admin_call!(self, "read_history_with_execution_id", |a| a
            .read_history_with_execution_id(instance, execution_id))
    }

    async fn read_history(&self, instance: &str) -> Result<Vec<Event>, ProviderError> {
        admin_call!(self, "read_history", |a| a.read_history(instance))
    }

    async fn latest_execution_id(&self, instance: &str) -> Result<u64, ProviderError> {
        admin_call!(self, "latest_execution_id", |a| a
            .latest_execution_id(instance))
    }

    async fn get_instance_info(&self, instance: &str) -> Result<InstanceInfo, ProviderError> {
        admin_call!(self, "get_instance_info", |a| a.get_instance_info(instance))
    }

    async fn get_execution_info(
        &self,
        instance: &str,
        execution_id: u64,
    ) -> Result<ExecutionInfo, ProviderError> {
        admin_call!(self, "get_execution_info", |a| a
            .get_execution_info(instance, execution_id))
    }

    async fn get_system_metrics(&self) -> Result<SystemMetrics, ProviderError> {
        admin_call!(self, "get_system_metrics", |a| a.get_system_metrics())
    }

    async fn get_queue_depths(&self) -> Result<QueueDepths, ProviderError> {
        admin_call!(self, "get_queue_depths", |a| a.get_queue_depths())
    }

    async fn list_children(&self, instance_id: &str) -> Result<Vec<String>, ProviderError> {
        admin_call!(self, "list_children", |a| a.list_children(instance_id))
    }

    async fn get_parent_id(&self, instance_id: &str) -> Result<Option<String>, ProviderError> {
        admin_call!(self, "get_parent_id", |a| a.get_parent_id(instance_id))
    }

    async fn delete_instances_atomic(
        &self,
        ids: &[String],
        force: bool,
    ) -> Result<DeleteInstanceResult, ProviderError> {
        admin_call!(self, "delete_instances_atomic", |a| a
            .delete_instances_atomic(ids, force))
    }

    async fn get_instance_tree(&self, instance_id: &str) -> Result<InstanceTree, ProviderError> {
        admin_call!(self, "get_instance_tree", |a| a
            .get_instance_tree(instance_id))
    }

    async fn delete_instance(
        &self,
        instance_id: &str,
        force: bool,
    ) -> Result<DeleteInstanceResult, ProviderError> {
        admin_call!(self, "delete_instance", |a| a
            .delete_instance(instance_id, force))
    }

    async fn delete_instance_bulk(
        &self,
        filter: InstanceFilter,
    ) -> Result<DeleteInstanceResult, ProviderError> {
        let filter = &filter;
        admin_call!(self, "delete_instance_bulk", |a| a
            .delete_instance_bulk(filter.clone()))
    }

    async fn prune_executions(
        &self,
        instance_id: &str,
        options: PruneOptions,
    ) -> Result<PruneResult, ProviderError> {
        let options = &options;
        admin_call!(self, "prune_executions", |a| a
            .prune_executions(instance_id, options.clone()))
    }

    async fn prune_executions_bulk(
        &self,
        filter: InstanceFilter,
        options: PruneOptions,
    ) -> Result<PruneResult, ProviderError> {
        let (filter, options) = (&filter, &options);
        admin_call!(self, "prune_executions_bulk", |a| a
            .prune_executions_bulk(filter.clone(), options.clone()))
    }
}
