//! Where duroxide's stores queue a work item.

use duroxide::providers::WorkItem;

/// The instance whose orchestrator queue `item` goes to, as both of
/// duroxide's stores route it (a sub-orchestration's result goes to its
/// parent); `None` for an activity, which goes to the worker queue. The
/// match is exhaustive so that a duroxide release with a new item fails to
/// build here.
pub(crate) fn orchestrator_instance(item: &WorkItem) -> Option<&str> {
    match item {
        WorkItem::StartOrchestration { instance, .. }
        | WorkItem::ActivityCompleted { instance, .. }
        | WorkItem::ActivityFailed { instance, .. }
        | WorkItem::TimerFired { instance, .. }
        | WorkItem::ExternalRaised { instance, .. }
        | WorkItem::CancelInstance { instance, .. }
        | WorkItem::ContinueAsNew { instance, .. }
        | WorkItem::QueueMessage { instance, .. } => Some(instance),
        WorkItem::SubOrchCompleted {
            parent_instance, ..
        }
        | WorkItem::SubOrchFailed {
            parent_instance, ..
        } => Some(parent_instance),
        WorkItem::ActivityExecute { .. } => None,
    }
}
