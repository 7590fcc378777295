//! Activities this runtime's turns cancelled (a lost race, an orchestration
//! that ended), remembered so that the ack of such an activity, which finds
//! its row already removed, is not reported as a lost lock: that ack failing
//! is the expected end of a cancelled activity, not a lease that ran out.
//!
//! Bounded by count: an entry is removed when its ack arrives, and the oldest
//! entries go first when activities never ack (their worker crashed).
//! A turn in another process cancels without this runtime knowing; such an
//! ack is still reported.

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

use duroxide::providers::ScheduledActivityIdentifier;

/// (instance, execution id, activity id).
type Key = (String, u64, u64);

const CAPACITY: usize = 10_000;

#[derive(Default)]
pub(crate) struct CancelledActivities {
    inner: Mutex<(HashSet<Key>, VecDeque<Key>)>,
}

impl CancelledActivities {
    pub(crate) fn note(&self, cancelled: &[ScheduledActivityIdentifier]) {
        if cancelled.is_empty() {
            return;
        }
        let mut guard = self.inner.lock().expect("cancelled activities");
        let (set, order) = &mut *guard;
        for a in cancelled {
            let key = (a.instance.clone(), a.execution_id, a.activity_id);
            if set.insert(key.clone()) {
                order.push_back(key);
            }
        }
        while order.len() > CAPACITY {
            if let Some(old) = order.pop_front() {
                set.remove(&old);
            }
        }
    }

    /// Whether this activity was cancelled; forgets it either way.
    pub(crate) fn take(&self, instance: &str, execution_id: u64, activity_id: u64) -> bool {
        let mut guard = self.inner.lock().expect("cancelled activities");
        let key = (instance.to_string(), execution_id, activity_id);
        let found = guard.0.remove(&key);
        if found {
            guard.1.retain(|k| k != &key);
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(instance: &str, activity_id: u64) -> ScheduledActivityIdentifier {
        ScheduledActivityIdentifier {
            instance: instance.into(),
            execution_id: 1,
            activity_id,
        }
    }

    #[test]
    fn a_cancelled_activity_is_known_once() {
        let c = CancelledActivities::default();
        c.note(&[id("i", 3)]);
        assert!(!c.take("i", 1, 4));
        assert!(c.take("i", 1, 3));
        assert!(!c.take("i", 1, 3));
    }

    #[test]
    fn the_oldest_entries_go_first() {
        let c = CancelledActivities::default();
        let many: Vec<_> = (0..CAPACITY as u64 + 1).map(|n| id("i", n)).collect();
        c.note(&many);
        assert!(!c.take("i", 1, 0));
        assert!(c.take("i", 1, CAPACITY as u64));
    }
}
