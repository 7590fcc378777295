//! What a running instance waits for, read from its current execution's
//! history: the events and mailboxes it subscribed to and has not received,
//! the activities and sub-orchestrations it scheduled that have not
//! finished, and its timers.
//!
//! `raise` (typed, and the CLI's) delivers by it: an event the instance waits
//! for one-shot goes to that wait, anything else to the mailbox. A wait that
//! runs out of time names it, and what the store says about work nobody has
//! taken: an activity tried again and again without a result is what a name
//! no running worker registers looks like (`guard/unregistered.rs` reports
//! it on the runtime's side), and a sub-orchestration whose start waits in
//! the queue names the orchestration it asks for.

use std::collections::{HashMap, HashSet, VecDeque};

use duroxide::providers::WorkItem;
use duroxide::{Event, EventKind};
use napi_derive::napi;
use sqlx::{PgPool, SqlitePool};

use super::existence::InstanceStateName;
use super::pending;
use super::NativeClient;
use crate::errors::{BridgeError, BridgeResult, Settled};
use crate::providers::Backend;
use crate::rules;

/// What an instance waits for now, for `raise`.
#[napi(object)]
pub struct WaitingFor {
    pub state: InstanceStateName,
    /// Event names of open one-shot waits (`waitForEvent`, and typed waits
    /// recorded before they used the mailbox), in the order they were made,
    /// less those an event already raised (still queued) will answer.
    pub events: Vec<String>,
    /// Names of open mailbox waits (`ctx.waitFor`, `ctx.dequeue`, `dequeueEvent`).
    pub mailboxes: Vec<String>,
    /// Names the current execution only ever waited for one-shot (the
    /// string-named `waitForEvent`), for a raise while nothing waits.
    pub one_shot_names: Vec<String>,
}

/// The open work of one execution.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Open {
    pub events: Vec<String>,
    pub mailboxes: Vec<String>,
    /// Names waited for one-shot and never through the mailbox, sorted.
    pub one_shot_names: Vec<String>,
    /// (scheduling event id, activity name)
    pub activities: Vec<(u64, String)>,
    /// (child instance id, orchestration name)
    pub sub_orchestrations: Vec<(String, String)>,
    /// When each pending timer is due (epoch ms).
    pub timers: Vec<u64>,
}

/// Drops the entry `id` (a completion's source event) from `list`.
fn close<T>(list: &mut Vec<T>, id: Option<u64>, key: impl Fn(&T) -> u64) {
    if let Some(id) = id {
        list.retain(|x| key(x) != id);
    }
}

/// Replays the subscriptions and completions of `history` the way duroxide
/// matches them: a one-shot wait takes the first event of its name that
/// arrives while it is open (an event nobody waits for is dropped); a
/// mailbox wait takes the oldest kept message of its name.
pub(crate) fn open(history: &[Event]) -> Open {
    use EventKind as K;
    let mut one_shot: HashMap<&str, VecDeque<u64>> = HashMap::new();
    let mut mailbox: HashMap<&str, VecDeque<u64>> = HashMap::new();
    let mut kept: HashMap<&str, usize> = HashMap::new();
    let mut names: HashMap<u64, &str> = HashMap::new();
    let mut activities: Vec<(u64, &str)> = Vec::new();
    let mut subs: Vec<(u64, &str, &str)> = Vec::new();
    let mut timers: Vec<(u64, u64)> = Vec::new();
    for e in history {
        match &e.kind {
            K::OrchestrationStarted {
                carry_forward_events: Some(carried),
                ..
            } => {
                for (name, _) in carried {
                    *kept.entry(name.as_str()).or_default() += 1;
                }
            }
            K::ExternalSubscribed { name } => {
                names.insert(e.event_id, name);
                one_shot.entry(name).or_default().push_back(e.event_id);
            }
            K::ExternalEvent { name, .. } => {
                if let Some(slots) = one_shot.get_mut(name.as_str()) {
                    slots.pop_front();
                }
            }
            K::ExternalSubscribedCancelled { .. } => {
                if let Some(name) = e.source_event_id.and_then(|s| names.get(&s)) {
                    if let Some(slots) = one_shot.get_mut(name) {
                        slots.retain(|id| Some(*id) != e.source_event_id);
                    }
                }
            }
            K::QueueSubscribed { name } => {
                names.insert(e.event_id, name);
                let slots = mailbox.entry(name).or_default();
                match kept.get_mut(name.as_str()) {
                    Some(n) if *n > 0 => *n -= 1,
                    _ => slots.push_back(e.event_id),
                }
            }
            K::QueueEventDelivered { name, .. } => {
                match mailbox.get_mut(name.as_str()).and_then(VecDeque::pop_front) {
                    Some(_) => {}
                    None => *kept.entry(name.as_str()).or_default() += 1,
                }
            }
            K::QueueSubscriptionCancelled { .. } => {
                if let Some(name) = e.source_event_id.and_then(|s| names.get(&s)) {
                    if let Some(slots) = mailbox.get_mut(name) {
                        slots.retain(|id| Some(*id) != e.source_event_id);
                    }
                }
            }
            K::ActivityScheduled { name, .. } => activities.push((e.event_id, name)),
            K::ActivityCompleted { .. }
            | K::ActivityFailed { .. }
            | K::ActivityCancelRequested { .. } => {
                close(&mut activities, e.source_event_id, |a| a.0)
            }
            K::SubOrchestrationScheduled { name, instance, .. } => {
                subs.push((e.event_id, instance, name))
            }
            K::SubOrchestrationCompleted { .. }
            | K::SubOrchestrationFailed { .. }
            | K::SubOrchestrationCancelRequested { .. } => {
                close(&mut subs, e.source_event_id, |s| s.0)
            }
            K::TimerCreated { fire_at_ms } => timers.push((e.event_id, *fire_at_ms)),
            K::TimerFired { .. } => close(&mut timers, e.source_event_id, |t| t.0),
            _ => {}
        }
    }
    let in_order = |slots: HashMap<&str, VecDeque<u64>>| {
        let mut open: Vec<(u64, String)> = slots
            .into_iter()
            .flat_map(|(name, ids)| ids.into_iter().map(move |id| (id, name.to_string())))
            .collect();
        open.sort();
        open.into_iter().map(|(_, name)| name).collect()
    };
    let mut one_shot_names: Vec<String> = one_shot
        .keys()
        .filter(|n| !mailbox.contains_key(*n))
        .map(|n| n.to_string())
        .collect();
    one_shot_names.sort();
    Open {
        one_shot_names,
        events: in_order(one_shot),
        mailboxes: in_order(mailbox),
        activities: activities
            .into_iter()
            .map(|(id, n)| (id, n.to_string()))
            .collect(),
        sub_orchestrations: subs
            .into_iter()
            .map(|(_, i, n)| (i.to_string(), n.to_string()))
            .collect(),
        timers: timers.into_iter().map(|(_, t)| t).collect(),
    }
}

/// `(activity id, attempts)` of the instance's activity work items in the queue.
async fn attempts_postgres(
    pool: &PgPool,
    schema: &str,
    instance: &str,
) -> Result<Vec<(String, i64)>, sqlx::Error> {
    // `schema` was validated as a plain identifier at connect time.
    let sql = format!(
        "SELECT work_item, attempt_count::BIGINT FROM {schema}.worker_queue \
         WHERE instance_id = $1 LIMIT 100"
    );
    sqlx::query_as(&sql).bind(instance).fetch_all(pool).await
}

async fn attempts_sqlite(
    pool: &SqlitePool,
    instance: &str,
) -> Result<Vec<(String, i64)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT work_item, attempt_count FROM worker_queue WHERE instance_id = ? LIMIT 100",
    )
    .bind(instance)
    .fetch_all(pool)
    .await
}

impl NativeClient {
    /// The current execution's history; `None` when the instance has none.
    pub(super) async fn current_history(&self, instance: &str) -> BridgeResult<Option<Vec<Event>>> {
        let info = match self.inner.get_instance_info(instance).await {
            Ok(info) => info,
            Err(e) => {
                return match super::management::not_found(e, String::new) {
                    BridgeError::NotFound(_) => Ok(None),
                    other => Err(other),
                }
            }
        };
        let events = self
            .inner
            .read_execution_history(instance, info.current_execution_id)
            .await
            .map_err(|e| super::management::not_found(e, String::new))?;
        Ok(Some(events))
    }

    /// How many times each activity of `instance` in the worker queue was
    /// fetched, by its scheduling event id.
    async fn activity_attempts(&self, instance: &str) -> HashMap<u64, i64> {
        let rows = match &self.backend {
            Backend::Sqlite { pool, .. } => attempts_sqlite(pool, instance).await,
            Backend::Postgres { pool, schema, .. } => {
                attempts_postgres(pool, schema, instance).await
            }
        };
        rows.unwrap_or_default()
            .into_iter()
            .filter_map(|(text, attempts)| match serde_json::from_str(&text).ok()? {
                WorkItem::ActivityExecute { id, .. } => Some((id, attempts)),
                _ => None,
            })
            .collect()
    }

    /// Drops from `events` the one-shot waits that events already raised
    /// (queued, not yet taken by a turn) will satisfy, so a second raise
    /// while the first is queued is kept instead of dropped.
    async fn queued_raises(&self, instance: &str) -> Vec<pending::Queued> {
        pending::queued(&self.backend, instance, 1000)
            .await
            .unwrap_or_default()
    }

    /// The open work of the instance's current execution, its one-shot
    /// waits less those that raises still queued will answer; `None` when
    /// the instance has no history.
    ///
    /// The history and the queue are two reads, and a turn's ack can commit
    /// between them: it takes a raise out of the queue and puts its event in
    /// the history at once. Read history first and queue second, and a raise
    /// acked in between is in neither, so its wait looks unanswered and the
    /// next raise goes to a one-shot wait that is already answered, where it
    /// is dropped (CI saw a typed `raise` lost that way). So the queue is
    /// read before and after the history, and the answer stands only when no
    /// message of the first read was gone by the second: then no ack
    /// consumed what the history read might have missed.
    async fn open_less_queued_raises(&self, instance: &str) -> BridgeResult<Option<Open>> {
        const TRIES: usize = 8;
        let Some(history) = self.current_history(instance).await? else {
            return Ok(None);
        };
        let mut waits = open(&history);
        // Without a one-shot wait there is nothing to take off: one read, as
        // for every typed (mailbox) wait.
        let mut tries = 0;
        while !waits.events.is_empty() {
            tries += 1;
            let before = self.queued_raises(instance).await;
            let Some(history) = self.current_history(instance).await? else {
                return Ok(None);
            };
            waits = open(&history);
            let after = self.queued_raises(instance).await;
            let ids: HashSet<i64> = after.iter().map(|(id, _)| *id).collect();
            if tries < TRIES && !before.iter().all(|(id, _)| ids.contains(id)) {
                continue;
            }
            for (_, text) in &after {
                if let Ok(WorkItem::ExternalRaised { name, .. }) = serde_json::from_str(text) {
                    if let Some(i) = waits.events.iter().position(|e| *e == *name) {
                        waits.events.remove(i);
                    }
                }
            }
            break;
        }
        Ok(Some(waits))
    }

    /// What a running instance waits for, in words, for the message of a
    /// wait that ran out of time; `None` when its history says nothing.
    pub(super) async fn blocked(&self, instance: &str) -> Option<String> {
        let history = self.current_history(instance).await.ok()??;
        let open = open(&history);
        let mut parts = Vec::new();
        if !open.activities.is_empty() {
            let attempts = self.activity_attempts(instance).await;
            for (id, name) in &open.activities {
                parts.push(match attempts.get(id) {
                    Some(n) if *n >= 2 => format!(
                        "activity '{name}', tried {n} times without a result (a name that no \
                         running worker registers is retried like this: check the name, or run \
                         a worker that has it; the runtime reports it in its 'unregistered' \
                         event and health())"
                    ),
                    _ => format!("activity '{name}'"),
                });
            }
        }
        let (_, registered) = self.local.registered();
        for (child, name) in &open.sub_orchestrations {
            let child = &duroxide::build_child_instance_id(instance, child);
            let queued = pending::pending_start(&self.backend, child).await;
            parts.push(match queued {
                Ok(Some(_)) if !registered.contains(name) => format!(
                    "sub-orchestration '{name}' ('{child}'), whose start waits in the queue: no \
                     runtime in this process registers '{name}' (check the name, or run a worker \
                     that has it)"
                ),
                Ok(Some(_)) => {
                    format!(
                        "sub-orchestration '{name}' ('{child}'), whose start waits in the queue"
                    )
                }
                _ => format!("sub-orchestration '{name}' ('{child}')"),
            });
        }
        parts.extend(open.events.iter().map(|n| format!("event '{n}'")));
        parts.extend(open.mailboxes.iter().map(|n| format!("event '{n}' (kept)")));
        if !open.timers.is_empty() {
            let n = open.timers.len();
            parts.push(if n == 1 {
                "a timer".to_string()
            } else {
                format!("{n} timers")
            });
        }
        (!parts.is_empty()).then(|| format!("it waits for {}", parts.join("; ")))
    }
}

#[napi]
impl NativeClient {
    /// What the instance waits for now; `what` names the call for the
    /// `ERR_NOT_FOUND` of an instance that does not exist.
    #[napi(ts_return_type = "Promise<WaitingFor>")]
    pub async fn waiting_for(&self, instance_id: String, what: String) -> Settled<WaitingFor> {
        Settled::of(async {
            rules::instance_id("instanceId", &instance_id)?;
            if let Some(open) = self.open_less_queued_raises(&instance_id).await? {
                return Ok(WaitingFor {
                    state: InstanceStateName::Stored,
                    events: open.events,
                    mailboxes: open.mailboxes,
                    one_shot_names: open.one_shot_names,
                });
            }
            let state = self.state_of(&instance_id, Some(&what)).await?;
            Ok(WaitingFor {
                state,
                events: Vec::new(),
                mailboxes: Vec::new(),
                one_shot_names: Vec::new(),
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(kinds: Vec<(Option<u64>, EventKind)>) -> Vec<Event> {
        kinds
            .into_iter()
            .enumerate()
            .map(|(i, (source, kind))| {
                Event::with_event_id(i as u64 + 1, "i".to_string(), 1, source, kind)
            })
            .collect()
    }

    #[test]
    fn open_waits_follow_duroxide_matching() {
        use EventKind as K;
        let es = |n: &str| (None, K::ExternalSubscribed { name: n.into() });
        let qs = |n: &str| (None, K::QueueSubscribed { name: n.into() });
        let h = history(vec![
            // #1 a one-shot wait that an event satisfied
            es("go"),
            (
                None,
                K::ExternalEvent {
                    name: "go".into(),
                    data: "1".into(),
                },
            ),
            // #3 an event nobody waits for is dropped; the wait after it stays open
            (
                None,
                K::ExternalEvent {
                    name: "late".into(),
                    data: "1".into(),
                },
            ),
            es("late"),
            // #5 a kept message taken by a later mailbox wait
            (
                None,
                K::QueueEventDelivered {
                    name: "m".into(),
                    data: "1".into(),
                },
            ),
            qs("m"),
            // #7 a mailbox wait that lost a race, then an open one
            qs("n"),
            (
                Some(7),
                K::QueueSubscriptionCancelled {
                    reason: "dropped".into(),
                },
            ),
            qs("n"),
            // #10 an activity done, one open; a timer pending
            (
                None,
                K::ActivityScheduled {
                    name: "A".into(),
                    input: "1".into(),
                    session_id: None,
                    tag: None,
                },
            ),
            (Some(10), K::ActivityCompleted { result: "1".into() }),
            (
                None,
                K::ActivityScheduled {
                    name: "B".into(),
                    input: "1".into(),
                    session_id: None,
                    tag: None,
                },
            ),
            (None, K::TimerCreated { fire_at_ms: 5 }),
        ]);
        let o = open(&h);
        assert_eq!(o.events, vec!["late".to_string()]);
        assert_eq!(o.mailboxes, vec!["n".to_string()]);
        assert_eq!(o.activities, vec![(12, "B".to_string())]);
        assert_eq!(o.timers, vec![5]);
        assert_eq!(o.one_shot_names, vec!["go".to_string(), "late".to_string()]);
    }
}
