//! The provider stack: every decorator of duroxide's `Provider` (and
//! `ProviderAdmin`) trait is a [`Layer`] over the store below it, and
//! [`Stacked`] is the one implementation of those traits that forwards each
//! call through a layer.
//!
//! A layer writes only what it changes:
//! - [`Layer::policy`]: how every call through the layer runs (deadline,
//!   retries of transient errors, being told of failures); see
//!   `call_policy.rs`. The default runs each call once, as is.
//! - a hook per trait method, named and typed like the method with the store
//!   below (`next`) as first argument; each defaults to calling `next`.
//!   Overriding one replaces what the layer does for that method; the policy
//!   still runs around it. Hooks are `#[async_trait]` methods, so a layer
//!   writes `#[async_trait] impl Layer for X { async fn read(&self, next, instance) .. }`.
//!
//! The method list is written once, in the `stack!` invocation below: it
//! generates the hooks with their forwarding defaults, `Stacked`'s
//! implementation, and the name list the tests compare with the trait
//! definitions of the duroxide release in `Cargo.lock`. Every method is
//! forwarded, including those with default bodies in the traits, so the
//! store's own implementations keep running.
//!
//! The two abandons run their hook when called, not when first polled: a
//! layer that starts its work in the hook's body (the guard) starts it even if
//! the caller drops the future unpolled.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use duroxide::providers::{
    DeleteInstanceResult, DispatcherCapabilityFilter, ExecutionInfo, ExecutionMetadata,
    InstanceFilter, InstanceInfo, InstanceTree, OrchestrationItem, Provider, ProviderAdmin,
    ProviderError, PruneOptions, PruneResult, QueueDepths, ScheduledActivityIdentifier,
    SessionFetchConfig, SystemMetrics, TagFilter, WorkItem,
};
use duroxide::{Event, SystemStats};

use super::call_policy::{run, run_once, CallPolicy, Once};

pub(crate) type BoxFut<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A layer over the store `next`, with the state it owns.
pub(crate) struct Stacked<L: Layer> {
    layer: Arc<L>,
    next: Arc<dyn Provider>,
}

impl<L: Layer> Stacked<L> {
    pub(crate) fn new(layer: Arc<L>, next: Arc<dyn Provider>) -> Self {
        Self { layer, next }
    }

    /// `layer` over `next`, as the trait object runtimes and clients take.
    pub(crate) fn over(layer: L, next: Arc<dyn Provider>) -> Arc<dyn Provider> {
        Arc::new(Self::new(Arc::new(layer), next))
    }
}

fn admin_of<'a>(
    next: &'a Arc<dyn Provider>,
    op: &'static str,
) -> Result<&'a dyn ProviderAdmin, ProviderError> {
    next.as_management_capability()
        .ok_or_else(|| ProviderError::permanent(op, "the provider has no management capability"))
}

/// Writes [`Layer`], `Stacked`'s `Provider` and `ProviderAdmin`
/// implementations and [`FORWARDED`] from one list of method signatures.
/// `eager` methods share the abandon signature `(lock_token: &str, delay:
/// Option<Duration>, ignore_attempt: bool) -> ()`.
macro_rules! stack {
    (
        provider { $( fn $m:ident ( $( $a:ident : $t:ty ),* ) -> $r:ty ; )* }
        eager { $( fn $e:ident ; )* }
        admin { $( fn $am:ident ( $( $aa:ident : $at:ty ),* ) -> $ar:ty ; )* }
    ) => {
        /// A decorator of the store below it; see the module docs.
        #[async_trait]
        #[allow(clippy::too_many_arguments)] // duroxide's ack, plus `next`
        pub(crate) trait Layer: Send + Sync + 'static {
            /// How every call through this layer runs.
            fn policy(&self) -> &dyn CallPolicy {
                &Once
            }

            $(
                async fn $m(&self, next: &Arc<dyn Provider>, $( $a: $t ),*) -> Result<$r, ProviderError> {
                    next.$m($( $a ),*).await
                }
            )*

            $(
                async fn $e(
                    &self,
                    next: &Arc<dyn Provider>,
                    lock_token: &str,
                    delay: Option<Duration>,
                    ignore_attempt: bool,
                ) -> Result<(), ProviderError> {
                    next.$e(lock_token, delay, ignore_attempt).await
                }
            )*

            $(
                async fn $am(&self, next: &Arc<dyn Provider>, $( $aa: $at ),*) -> Result<$ar, ProviderError> {
                    admin_of(next, stringify!($am))?.$am($( $aa ),*).await
                }
            )*
        }

        // Arguments are cloned per attempt when the policy may run a call
        // again (`Clone::clone(&x)` keeps borrowed arguments borrowed); a
        // policy that never retries gets them moved, so an ack's history is
        // not copied at every layer.
        #[async_trait]
        #[allow(clippy::clone_on_copy)]
        impl<L: Layer> Provider for Stacked<L> {
            fn name(&self) -> &str {
                self.next.name()
            }

            fn version(&self) -> &str {
                self.next.version()
            }

            fn as_management_capability(&self) -> Option<&dyn ProviderAdmin> {
                self.next
                    .as_management_capability()
                    .map(|_| self as &dyn ProviderAdmin)
            }

            $(
                async fn $m(&self, $( $a: $t ),*) -> Result<$r, ProviderError> {
                    let policy = self.layer.policy();
                    if policy.budget().is_zero() {
                        return run_once(policy, stringify!($m), self.layer.$m(&self.next, $( $a ),*))
                            .await;
                    }
                    run(policy, stringify!($m), || {
                        self.layer.$m(&self.next, $( Clone::clone(&$a) ),*)
                    })
                    .await
                }
            )*

            $(
                fn $e<'life0, 'life1, 'async_trait>(
                    &'life0 self,
                    lock_token: &'life1 str,
                    delay: Option<Duration>,
                    ignore_attempt: bool,
                ) -> BoxFut<'async_trait, Result<(), ProviderError>>
                where
                    'life0: 'async_trait,
                    'life1: 'async_trait,
                    Self: 'async_trait,
                {
                    Box::pin(run(self.layer.policy(), stringify!($e), move || {
                        self.layer.$e(&self.next, lock_token, delay, ignore_attempt)
                    }))
                }
            )*
        }

        #[async_trait]
        #[allow(clippy::clone_on_copy)]
        impl<L: Layer> ProviderAdmin for Stacked<L> {
            $(
                async fn $am(&self, $( $aa: $at ),*) -> Result<$ar, ProviderError> {
                    run(self.layer.policy(), stringify!($am), || {
                        self.layer.$am(&self.next, $( Clone::clone(&$aa) ),*)
                    })
                    .await
                }
            )*
        }

        /// Every trait method `Stacked` forwards.
        #[cfg(test)]
        pub(crate) const FORWARDED: &[&str] = &[
            "name",
            "version",
            "as_management_capability",
            $( stringify!($m), )*
            $( stringify!($e), )*
            $( stringify!($am), )*
        ];
    };
}

stack! {
    provider {
        fn fetch_orchestration_item(
            lock_timeout: Duration,
            poll_timeout: Duration,
            filter: Option<&DispatcherCapabilityFilter>
        ) -> Option<(OrchestrationItem, String, u32)>;
        fn ack_orchestration_item(
            lock_token: &str,
            execution_id: u64,
            history_delta: Vec<Event>,
            worker_items: Vec<WorkItem>,
            orchestrator_items: Vec<WorkItem>,
            metadata: ExecutionMetadata,
            cancelled_activities: Vec<ScheduledActivityIdentifier>
        ) -> ();
        fn read(instance: &str) -> Vec<Event>;
        fn read_with_execution(instance: &str, execution_id: u64) -> Vec<Event>;
        fn append_with_execution(instance: &str, execution_id: u64, new_events: Vec<Event>) -> ();
        fn enqueue_for_worker(item: WorkItem) -> ();
        fn fetch_work_item(
            lock_timeout: Duration,
            poll_timeout: Duration,
            session: Option<&SessionFetchConfig>,
            tag_filter: &TagFilter
        ) -> Option<(WorkItem, String, u32)>;
        fn ack_work_item(token: &str, completion: Option<WorkItem>) -> ();
        fn renew_work_item_lock(token: &str, extend_for: Duration) -> ();
        fn renew_session_lock(
            owner_ids: &[&str],
            extend_for: Duration,
            idle_timeout: Duration
        ) -> usize;
        fn cleanup_orphaned_sessions(idle_timeout: Duration) -> usize;
        fn renew_orchestration_item_lock(token: &str, extend_for: Duration) -> ();
        fn enqueue_for_orchestrator(item: WorkItem, delay: Option<Duration>) -> ();
        fn get_custom_status(instance: &str, last_seen_version: u64) -> Option<(Option<String>, u64)>;
        fn get_kv_value(instance: &str, key: &str) -> Option<String>;
        fn get_kv_all_values(instance: &str) -> HashMap<String, String>;
        fn get_instance_stats(instance: &str) -> Option<SystemStats>;
    }
    eager {
        fn abandon_orchestration_item;
        fn abandon_work_item;
    }
    admin {
        fn list_instances() -> Vec<String>;
        fn list_instances_by_status(status: &str) -> Vec<String>;
        fn list_executions(instance: &str) -> Vec<u64>;
        fn read_history_with_execution_id(instance: &str, execution_id: u64) -> Vec<Event>;
        fn read_history(instance: &str) -> Vec<Event>;
        fn latest_execution_id(instance: &str) -> u64;
        fn get_instance_info(instance: &str) -> InstanceInfo;
        fn get_execution_info(instance: &str, execution_id: u64) -> ExecutionInfo;
        fn get_system_metrics() -> SystemMetrics;
        fn get_queue_depths() -> QueueDepths;
        fn list_children(instance_id: &str) -> Vec<String>;
        fn get_parent_id(instance_id: &str) -> Option<String>;
        fn delete_instances_atomic(ids: &[String], force: bool) -> DeleteInstanceResult;
        fn get_instance_tree(instance_id: &str) -> InstanceTree;
        fn delete_instance(instance_id: &str, force: bool) -> DeleteInstanceResult;
        fn delete_instance_bulk(filter: InstanceFilter) -> DeleteInstanceResult;
        fn prune_executions(instance_id: &str, options: PruneOptions) -> PruneResult;
        fn prune_executions_bulk(filter: InstanceFilter, options: PruneOptions) -> PruneResult;
    }
}

/// A layer that only sets how calls run: the retry and deadline policies.
pub(crate) struct Policy<P: CallPolicy>(pub(crate) P);

impl<P: CallPolicy> Layer for Policy<P> {
    fn policy(&self) -> &dyn CallPolicy {
        &self.0
    }
}

#[cfg(test)]
mod tests;
