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

/// Runs of remembered activities (see [`Scheduled`]) kept at most; the
/// executions remembered first are forgotten first (their reads then go to
/// the store). A run is one turn's consecutive activity ids, so this bounds
/// memory, not the size of a fan-out: a turn that schedules 20,000
/// activities is one run. It used to bound activities, and a fan-out past it
/// had its first activities each read the whole, growing history from the
/// store (a fan-out of 20,000 took 80 times as long as one of 10,000).
const CAPACITY: usize = 10_000;
/// A remembered activity that waited longer is read from the store.
const MAX_AGE: Duration = Duration::from_secs(600);

/// (instance, execution id, activity id): what an `ActivityExecute` names.
type ActivityKey = (String, u64, u64);
/// (instance, execution id).
type ExecutionKey = (String, u64);

/// Activity ids `start..end` one turn of an execution scheduled at `at`.
#[derive(Debug, Clone, Copy)]
struct Run {
    start: u64,
    end: u64,
    at: Instant,
}

/// The remembered activities of one execution.
struct Execution {
    started: Arc<Event>,
    /// Disjoint, in the order remembered (ids grow turn after turn).
    runs: Vec<Run>,
}

/// Activities scheduled by this runtime's turns and not yet fetched, per
/// execution, as runs of consecutive ids: the activities of a turn get
/// consecutive ids, so a fan-out of any size costs one run, and taking them
/// (mostly in order) shortens it.
#[derive(Default)]
struct Scheduled {
    executions: HashMap<ExecutionKey, Execution>,
    /// Executions in the order they were first remembered (oldest first). An
    /// execution forgotten leaves its place here until it reaches the front.
    order: VecDeque<ExecutionKey>,
    /// Runs in `executions`.
    runs: usize,
}

impl Scheduled {
    fn insert_at(&mut self, key: ActivityKey, started: Arc<Event>, now: Instant) {
        let (instance, execution, id) = key;
        let ekey = (instance, execution);
        let entry = match self.executions.get_mut(&ekey) {
            Some(entry) => entry,
            None => {
                self.order.push_back(ekey.clone());
                self.executions.entry(ekey).or_insert(Execution {
                    started,
                    runs: Vec::new(),
                })
            }
        };
        match entry.runs.last_mut() {
            Some(run) if run.end == id && run.at == now => run.end += 1,
            Some(run) if run.start <= id && id < run.end => {}
            _ => {
                entry.runs.push(Run {
                    start: id,
                    end: id + 1,
                    at: now,
                });
                self.runs += 1;
            }
        }
        self.forget_front(now);
    }

    fn take(&mut self, key: &ActivityKey) -> Option<Arc<Event>> {
        let now = Instant::now();
        let found = self.take_at(key, now);
        self.forget_front(now);
        found
    }

    fn take_at(&mut self, key: &ActivityKey, now: Instant) -> Option<Arc<Event>> {
        let (instance, execution, id) = key;
        let ekey = (instance.clone(), *execution);
        let entry = self.executions.get_mut(&ekey)?;
        let i = entry
            .runs
            .iter()
            .position(|r| r.start <= *id && *id < r.end)?;
        let run = entry.runs[i];
        let fresh = now.saturating_duration_since(run.at) < MAX_AGE;
        let started = entry.started.clone();
        // Take `id` out of its run: shorten it, split it, or drop it.
        let (left, right) = (
            Run { end: *id, ..run },
            Run {
                start: id + 1,
                ..run
            },
        );
        match (left.start < left.end, right.start < right.end) {
            (true, true) => {
                entry.runs[i] = left;
                entry.runs.insert(i + 1, right);
                self.runs += 1;
            }
            (true, false) => entry.runs[i] = left,
            (false, true) => entry.runs[i] = right,
            (false, false) => {
                entry.runs.remove(i);
                self.runs -= 1;
                if entry.runs.is_empty() {
                    self.executions.remove(&ekey);
                }
            }
        }
        fresh.then_some(started)
    }

    /// Drops the front of `order` while its execution is gone, all of its
    /// runs are too old to be answered, or there are more than [`CAPACITY`]
    /// runs. Activities are mostly taken in the order they were scheduled,
    /// so `order` stays about as long as the executions with activities
    /// still waiting.
    fn forget_front(&mut self, now: Instant) {
        while let Some(front) = self.order.front() {
            let stale = match self.executions.get(front) {
                None => true,
                Some(e) => {
                    self.runs > CAPACITY
                        || e.runs
                            .iter()
                            .all(|r| now.saturating_duration_since(r.at) >= MAX_AGE)
                }
            };
            if !stale {
                break;
            }
            if let Some(key) = self.order.pop_front() {
                if let Some(e) = self.executions.remove(&key) {
                    self.runs -= e.runs.len();
                }
            }
        }
        // After a burst (thousands of executions), give the memory back.
        if self.order.capacity() > SHRINK_ABOVE && self.order.len() < self.order.capacity() / 4 {
            self.order.shrink_to(self.order.len() * 2);
            self.executions.shrink_to(self.order.len() * 2);
        }
    }

    /// (activities, executions) remembered.
    #[cfg(test)]
    fn remembered(&self) -> (usize, usize) {
        let activities = self
            .executions
            .values()
            .flat_map(|e| e.runs.iter())
            .map(|r| (r.end - r.start) as usize)
            .sum();
        (activities, self.executions.len())
    }

    #[cfg(test)]
    fn order_capacity(&self) -> usize {
        self.order.capacity()
    }
}

/// Below this many places, `order` and `executions` keep what they have grown to.
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
            let now = Instant::now();
            for item in &worker_items {
                if let WorkItem::ActivityExecute {
                    instance,
                    execution_id,
                    id,
                    ..
                } = item
                {
                    let key = (instance.clone(), *execution_id, *id);
                    scheduled.insert_at(key, started.clone(), now);
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
