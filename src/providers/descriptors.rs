//! The per-activity history read, answered from what the runtime's own turn
//! knew.
//!
//! Before it runs an activity, duroxide's worker reads the instance's whole
//! history (`Provider::read`) only to find the name and version of the
//! orchestration for the activity's context. That read is O(history) per
//! activity: a fan-out of 300 read its growing history 300 times, holding a
//! pooled connection for each (a third of the Postgres pool's time in the
//! bench's fan-out), and a chain's steps grew with its length.
//!
//! When this runtime's own turn scheduled the activity, the
//! `OrchestrationStarted` event that read would find is known: the turn
//! fetched it, or wrote it. This layer, one per runtime, records it at the
//! turn's ack for each activity the turn scheduled, and when a worker slot of
//! this runtime fetches one of those activities, answers that slot's next
//! `read` of the instance with just that event (without its input), which is
//! all the worker looks at. The slot is known by its tokio task: duroxide's
//! worker fetches, then reads, on the same task (the guard runs the fetch on
//! a task of its own, and names the slot's task in [`CALLER`]); an
//! activity's own code runs on another task, so its reads go to the store.
//!
//! Everything else reads the store: activities scheduled by another runtime
//! or process, reads on any other task, any read after the first. The one
//! difference from duroxide's read: for an activity of an execution that has
//! since continued as new, the context names the version that scheduled it,
//! not the newer one.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use duroxide::providers::{
    DispatcherCapabilityFilter, ExecutionMetadata, OrchestrationItem, Provider, ProviderError,
    ScheduledActivityIdentifier, SessionFetchConfig, TagFilter, WorkItem,
};
use duroxide::{Event, EventKind};
use tokio::task::Id as TaskId;

use super::layer::{Layer, Stacked};

tokio::task_local! {
    /// The dispatcher task a fetch is for, set by a layer above that runs
    /// the fetch on another task (the guard).
    pub(crate) static CALLER: Option<TaskId>;
}

/// The dispatcher task the current call is for.
fn caller() -> Option<TaskId> {
    CALLER
        .try_with(|task| *task)
        .ok()
        .flatten()
        .or_else(tokio::task::try_id)
}

/// Activities scheduled and not yet fetched that are remembered; older ones
/// are forgotten first (their read then goes to the store).
const CAPACITY: usize = 10_000;
/// A remembered activity that waited longer is read from the store.
const MAX_AGE: Duration = Duration::from_secs(600);

/// (instance, execution id, activity id): what an `ActivityExecute` names.
type ActivityKey = (String, u64, u64);

#[derive(Default)]
struct Scheduled {
    started: HashMap<ActivityKey, (Arc<Event>, Instant)>,
    /// Keys in the order they were remembered (oldest first). A key taken
    /// or forgotten leaves its place here until it reaches the front.
    order: VecDeque<ActivityKey>,
}

impl Scheduled {
    fn insert(&mut self, key: ActivityKey, started: Arc<Event>) {
        self.insert_at(key, started, Instant::now());
    }

    fn insert_at(&mut self, key: ActivityKey, started: Arc<Event>, now: Instant) {
        if self.started.insert(key.clone(), (started, now)).is_none() {
            self.order.push_back(key);
        }
        self.forget_front(now);
    }

    fn take(&mut self, key: &ActivityKey) -> Option<Arc<Event>> {
        let (started, at) = self.started.remove(key)?;
        self.forget_front(Instant::now());
        (at.elapsed() < MAX_AGE).then_some(started)
    }

    /// Drops the front of `order` while it is taken, too old to be answered,
    /// or past [`CAPACITY`]. Activities are mostly taken in the order they
    /// were scheduled, so `order` stays about as long as the activities
    /// still waiting, not [`CAPACITY`] long in a process that has finished
    /// them (10,000 keys are about 1 MiB).
    fn forget_front(&mut self, now: Instant) {
        while let Some(front) = self.order.front() {
            let stale = match self.started.get(front) {
                None => true,
                Some((_, at)) => {
                    self.order.len() > CAPACITY || now.saturating_duration_since(*at) >= MAX_AGE
                }
            };
            if !stale {
                break;
            }
            if let Some(key) = self.order.pop_front() {
                self.started.remove(&key);
            }
        }
        // After a burst (a fan-out of thousands), give the memory back.
        if self.order.capacity() > SHRINK_ABOVE && self.order.len() < self.order.capacity() / 4 {
            self.order.shrink_to(self.order.len() * 2);
            self.started.shrink_to(self.order.len() * 2);
        }
    }

    #[cfg(test)]
    fn remembered(&self) -> (usize, usize) {
        (self.started.len(), self.order.len())
    }

    #[cfg(test)]
    fn order_capacity(&self) -> usize {
        self.order.capacity()
    }
}

/// Below this many places, `order` and `started` keep what they have grown to.
const SHRINK_ABOVE: usize = 1024;

#[derive(Default)]
pub(crate) struct Descriptors {
    /// Turns in flight: lock token -> the execution's `OrchestrationStarted`.
    turns: Mutex<HashMap<String, Arc<Event>>>,
    scheduled: Mutex<Scheduled>,
    /// Worker slots that fetched a remembered activity: task -> (instance, event).
    fetched: Mutex<HashMap<TaskId, (String, Arc<Event>)>>,
}

/// `next` with this runtime's descriptor reads answered here.
pub(crate) fn with_descriptors(next: Arc<dyn Provider>) -> Arc<dyn Provider> {
    Stacked::over(Descriptors::default(), next)
}

/// The `OrchestrationStarted` of `events` (one execution's history or a
/// turn's delta: at most one, first when there), without what the descriptor
/// does not need (the input, carried-forward events).
fn started_of(events: &[Event]) -> Option<Arc<Event>> {
    let mut event = events
        .iter()
        .find(|e| matches!(e.kind, EventKind::OrchestrationStarted { .. }))?
        .clone();
    if let EventKind::OrchestrationStarted {
        input,
        carry_forward_events,
        ..
    } = &mut event.kind
    {
        input.clear();
        *carry_forward_events = None;
    }
    Some(Arc::new(event))
}

#[async_trait]
impl Layer for Descriptors {
    async fn fetch_orchestration_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        poll_timeout: Duration,
        filter: Option<&DispatcherCapabilityFilter>,
    ) -> Result<Option<(OrchestrationItem, String, u32)>, ProviderError> {
        let fetched = next
            .fetch_orchestration_item(lock_timeout, poll_timeout, filter)
            .await?;
        if let Some((item, token, _)) = &fetched {
            if let Some(started) = started_of(&item.history) {
                let mut turns = self.turns.lock().expect("turns");
                // A turn never acked nor abandoned (its lock lost) leaves an
                // entry; turns in flight are far fewer than this.
                if turns.len() >= CAPACITY {
                    turns.clear();
                }
                turns.insert(token.clone(), started);
            }
        }
        Ok(fetched)
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
        let fetched = self.turns.lock().expect("turns").remove(lock_token);
        // A turn that starts an execution writes its `OrchestrationStarted`.
        if let Some(started) = started_of(&history_delta).or(fetched) {
            let mut scheduled = self.scheduled.lock().expect("scheduled");
            for item in &worker_items {
                if let WorkItem::ActivityExecute {
                    instance,
                    execution_id,
                    id,
                    ..
                } = item
                {
                    scheduled.insert((instance.clone(), *execution_id, *id), started.clone());
                }
            }
        }
        next.ack_orchestration_item(
            lock_token,
            execution_id,
            history_delta,
            worker_items,
            orchestrator_items,
            metadata,
            cancelled_activities,
        )
        .await
    }

    async fn fetch_work_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_timeout: Duration,
        poll_timeout: Duration,
        session: Option<&SessionFetchConfig>,
        tag_filter: &TagFilter,
    ) -> Result<Option<(WorkItem, String, u32)>, ProviderError> {
        let task = caller();
        if let Some(task) = task {
            self.fetched.lock().expect("fetched").remove(&task);
        }
        let fetched = next
            .fetch_work_item(lock_timeout, poll_timeout, session, tag_filter)
            .await?;
        if let (
            Some(task),
            Some((
                WorkItem::ActivityExecute {
                    instance,
                    execution_id,
                    id,
                    ..
                },
                _,
                _,
            )),
        ) = (task, &fetched)
        {
            let key = (instance.clone(), *execution_id, *id);
            let started = self.scheduled.lock().expect("scheduled").take(&key);
            if let Some(started) = started {
                let mut slots = self.fetched.lock().expect("fetched");
                slots.insert(task, (instance.clone(), started));
            }
        }
        Ok(fetched)
    }

    async fn read(
        &self,
        next: &Arc<dyn Provider>,
        instance: &str,
    ) -> Result<Vec<Event>, ProviderError> {
        let slot = caller().and_then(|task| self.fetched.lock().expect("fetched").remove(&task));
        match slot {
            Some((of, started)) if of == instance => Ok(vec![(*started).clone()]),
            _ => next.read(instance).await,
        }
    }

    async fn abandon_orchestration_item(
        &self,
        next: &Arc<dyn Provider>,
        lock_token: &str,
        delay: Option<Duration>,
        ignore_attempt: bool,
    ) -> Result<(), ProviderError> {
        self.turns.lock().expect("turns").remove(lock_token);
        next.abandon_orchestration_item(lock_token, delay, ignore_attempt)
            .await
    }
}

#[cfg(test)]
mod tests;
