//! Work for a name this runtime has no handler for.
//!
//! duroxide abandons such a message with a growing backoff and a WARN line,
//! and the instance stays `Running`: in a fleet another worker may have the
//! handler (a rolling deployment), so it is not a failure. Left alone, a
//! misspelt name looks like a slow instance. The guard recognises the name
//! at fetch, reports the first occurrence per name as an `unregistered`
//! event, and keeps `health()` degraded while such messages keep coming.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, RwLock};
use std::time::Instant;

use duroxide::providers::{OrchestrationItem, WorkItem};

use super::stats::HEALTH_WINDOW;

/// Names remembered at most; past it the oldest sighting is forgotten.
const MAX_REMEMBERED: usize = 1_000;

/// duroxide runs `ctx.newGuid()`, `ctx.utcNow()` and `getValueFromInstance`
/// as activities under this prefix, registered by duroxide itself (and refused
/// as user names), so they are never in our registrations yet always handled.
/// duroxide's constant (`SYSCALL_ACTIVITY_PREFIX`) is crate-private.
const SYSCALL_ACTIVITY_PREFIX: &str = "__duroxide_syscall:";

/// `'activity'` or `'orchestration'`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum HandlerKind {
    Activity,
    Orchestration,
}

impl HandlerKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            HandlerKind::Activity => "activity",
            HandlerKind::Orchestration => "orchestration",
        }
    }
}

/// A fetched message whose handler this runtime lacks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Missing {
    pub kind: HandlerKind,
    pub name: String,
    pub instance: String,
}

#[derive(Default)]
pub(crate) struct Unregistered {
    /// Set at start: (activity names, orchestration names).
    registered: RwLock<Option<(BTreeSet<String>, BTreeSet<String>)>>,
    /// (kind, name) -> (last sighting, the instance it was for).
    seen: Mutex<HashMap<(HandlerKind, String), (Instant, String)>>,
}

impl Unregistered {
    pub(crate) fn set_registered(
        &self,
        activities: BTreeSet<String>,
        orchestrations: BTreeSet<String>,
    ) {
        *self.registered.write().expect("registered names") = Some((activities, orchestrations));
    }

    /// The activity of a fetched work item, if it has no handler here.
    pub(crate) fn activity(&self, item: &WorkItem) -> Option<Missing> {
        let WorkItem::ActivityExecute { name, instance, .. } = item else {
            return None;
        };
        if name.starts_with(SYSCALL_ACTIVITY_PREFIX) {
            return None;
        }
        self.check(HandlerKind::Activity, name, instance)
    }

    /// The orchestration of a fetched item, if it has no handler here. An
    /// item with neither history nor a start message is for an instance that
    /// does not exist, which duroxide drops without looking for a handler.
    pub(crate) fn orchestration(&self, item: &OrchestrationItem) -> Option<Missing> {
        let starts = item
            .messages
            .iter()
            .any(|m| matches!(m, WorkItem::StartOrchestration { .. }));
        if item.history.is_empty() && !starts {
            return None;
        }
        self.check(
            HandlerKind::Orchestration,
            &item.orchestration_name,
            &item.instance,
        )
    }

    /// Records a sighting; `Some` only the first time the name is seen.
    fn check(&self, kind: HandlerKind, name: &str, instance: &str) -> Option<Missing> {
        if name.is_empty() {
            return None;
        }
        {
            let registered = self.registered.read().expect("registered names");
            let (activities, orchestrations) = registered.as_ref()?;
            let known = match kind {
                HandlerKind::Activity => activities.contains(name),
                HandlerKind::Orchestration => orchestrations.contains(name),
            };
            if known {
                return None;
            }
        }
        let mut seen = self.seen.lock().expect("unregistered names");
        let key = (kind, name.to_string());
        let first = !seen.contains_key(&key);
        if first && seen.len() >= MAX_REMEMBERED {
            let oldest = seen
                .iter()
                .min_by_key(|(_, (t, _))| *t)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                seen.remove(&k);
            }
        }
        seen.insert(key, (Instant::now(), instance.to_string()));
        first.then(|| Missing {
            kind,
            name: name.to_string(),
            instance: instance.to_string(),
        })
    }

    /// One reason per name seen within the health window.
    pub(crate) fn degraded_reasons(&self) -> Vec<String> {
        let now = Instant::now();
        let seen = self.seen.lock().expect("unregistered names");
        let mut recent: Vec<_> = seen
            .iter()
            .filter(|(_, (t, _))| now.duration_since(*t) <= HEALTH_WINDOW)
            .collect();
        recent.sort_by(|a, b| a.0.cmp(b.0));
        recent
            .into_iter()
            .map(|((kind, name), (_, instance))| {
                format!(
                    "instance '{instance}' waits for {} '{name}', which is not registered on this \
                     runtime (register it, or run a worker that has it)",
                    kind.as_str()
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn activity(name: &str, instance: &str) -> WorkItem {
        WorkItem::ActivityExecute {
            instance: instance.into(),
            execution_id: 1,
            id: 1,
            name: name.into(),
            input: "null".into(),
            session_id: None,
            tag: None,
        }
    }

    #[test]
    fn first_sighting_per_name_is_reported_and_health_names_it() {
        let u = Unregistered::default();
        // Before start nothing is judged.
        assert_eq!(u.activity(&activity("Missing", "i1")), None);
        u.set_registered(["Known".to_string()].into(), BTreeSet::new());
        assert_eq!(u.activity(&activity("Known", "i1")), None);
        let m = u
            .activity(&activity("Missing", "i1"))
            .expect("first sighting");
        assert_eq!(
            (m.kind, m.name.as_str(), m.instance.as_str()),
            (HandlerKind::Activity, "Missing", "i1")
        );
        assert_eq!(u.activity(&activity("Missing", "i2")), None);
        // duroxide's own activities (ctx.newGuid() and friends) are handled.
        assert_eq!(
            u.activity(&activity("__duroxide_syscall:new_guid", "i3")),
            None
        );
        let reasons = u.degraded_reasons();
        assert_eq!(reasons.len(), 1);
        assert!(
            reasons[0].contains("'i2'") && reasons[0].contains("activity 'Missing'"),
            "{reasons:?}"
        );
    }
}
