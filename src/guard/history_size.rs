//! `historyWarnEvents`: one WARN per instance (per runtime) when a turn
//! commits and its execution's history passes the limit.
//!
//! Every turn of an instance reads its execution's history, and a turn
//! without a cached generator replays all of it, so an execution whose
//! history keeps growing (a loop that never continues as new) gets slower
//! turn after turn. The warning names the instance and the remedy,
//! `ctx.continueAsNew`, the way Temporal warns at 10,000 events.

use std::collections::HashSet;
use std::sync::Mutex;

/// Instances remembered as warned; past it the set restarts, so a
/// long-lived runtime cannot grow it without bound.
const MAX_REMEMBERED: usize = 10_000;

pub(crate) struct HistorySize {
    /// 0: never warn.
    limit: usize,
    warned: Mutex<HashSet<String>>,
}

impl HistorySize {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            limit,
            warned: Mutex::new(HashSet::new()),
        }
    }

    /// A turn of `instance` committed, leaving its execution with `events`
    /// history events. True when this call logged the warning.
    pub(crate) fn committed(&self, instance: &str, events: usize) -> bool {
        if self.limit == 0 || events <= self.limit {
            return false;
        }
        {
            let mut warned = self.warned.lock().expect("history warnings");
            if warned.contains(instance) {
                return false;
            }
            if warned.len() >= MAX_REMEMBERED {
                warned.clear();
            }
            warned.insert(instance.to_string());
        }
        tracing::warn!(
            target: "duroxide_node::guard",
            instance_id = %instance,
            history_events = events,
            history_warn_events = self.limit,
            "instance '{instance}' has {events} events in its execution's history, past \
             historyWarnEvents ({}): every turn reads the whole history, so its turns get slower \
             as it grows; have the orchestration call ctx.continueAsNew(input) to start a fresh \
             history (once per instance; historyWarnEvents: 0 turns this off)",
            self.limit
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::HistorySize;

    #[test]
    fn warns_once_per_instance_past_the_limit() {
        let h = HistorySize::new(10);
        assert!(!h.committed("a", 10));
        assert!(h.committed("a", 11));
        assert!(!h.committed("a", 50));
        assert!(!h.committed("b", 3));
        assert!(h.committed("b", 12));
    }

    #[test]
    fn zero_never_warns() {
        let h = HistorySize::new(0);
        assert!(!h.committed("a", 1_000_000));
    }
}
