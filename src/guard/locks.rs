//! Which orchestration locks this runtime holds, and which dispatcher task
//! holds each, so the guard can name the instance of a failed ack and release
//! locks the runtime forgot.
//!
//! Why "forgot": duroxide 0.1.32's orchestration dispatcher, after an ack
//! fails for good, builds `abandon_orchestration_item(..)` and drops the
//! future without awaiting it (twice in `dispatchers/orchestration.rs`). The
//! runtime also wraps every provider in its `InstrumentedProvider`, whose
//! `abandon_orchestration_item` is a lazy `async fn`, so the drop happens
//! before our method is even called and starting the abandon eagerly in our
//! method cannot help on that path. What we can see is the same dispatcher
//! task asking for its next item while its previous lock is still held:
//! every other exit of a turn (ack, failure ack, abandon, lock lost) reaches
//! the provider and releases the lock first, so a lock still held then was
//! abandoned by dropping. The guard releases it at that point.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::task::Id as TaskId;

/// A lock handed out by `fetch_orchestration_item`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeldLock {
    pub instance: String,
    pub attempt: u32,
    /// Events in the fetched execution's history (`history_size.rs`).
    pub history_len: usize,
    task: Option<TaskId>,
}

#[derive(Default)]
struct Held {
    by_token: HashMap<String, HeldLock>,
    by_task: HashMap<TaskId, String>,
}

#[derive(Default)]
pub(crate) struct LockTracker(Mutex<Held>);

impl LockTracker {
    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.0.lock().expect("lock tracker")
    }

    /// Records a lock the current task just fetched, with the length of the
    /// history it came with.
    pub(crate) fn fetched(&self, token: &str, instance: &str, attempt: u32, history_len: usize) {
        let task = tokio::task::try_id();
        let mut h = self.held();
        if let Some(task) = task {
            h.by_task.insert(task, token.to_string());
        }
        h.by_token.insert(
            token.to_string(),
            HeldLock {
                instance: instance.to_string(),
                attempt,
                history_len,
                task,
            },
        );
    }

    /// The lock the current task fetched last, if it is still held: called
    /// when that task fetches again, which means the runtime is done with it.
    pub(crate) fn take_forgotten(&self) -> Option<(String, HeldLock)> {
        let task = tokio::task::try_id()?;
        let mut h = self.held();
        let token = h.by_task.remove(&task)?;
        h.by_token.remove(&token).map(|lock| (token, lock))
    }

    /// The lock is gone (acked, abandoned, or found invalid by the store).
    pub(crate) fn release(&self, token: &str) -> Option<HeldLock> {
        let mut h = self.held();
        let lock = h.by_token.remove(token)?;
        if let Some(task) = lock.task {
            if h.by_task.get(&task).map(String::as_str) == Some(token) {
                h.by_task.remove(&task);
            }
        }
        Some(lock)
    }

    /// Every lock still held; used once the runtime stopped, when no turn can
    /// hold a lock any more.
    pub(crate) fn drain(&self) -> Vec<(String, HeldLock)> {
        let mut h = self.held();
        h.by_task.clear();
        h.by_token.drain().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::LockTracker;

    #[tokio::test]
    async fn a_task_that_fetches_again_forgot_its_unreleased_lock() {
        let t = std::sync::Arc::new(LockTracker::default());
        let t2 = t.clone();
        tokio::spawn(async move {
            assert!(t2.take_forgotten().is_none());
            t2.fetched("tok1", "inst-a", 1, 0);
            // The ack released it: nothing forgotten.
            assert_eq!(t2.release("tok1").unwrap().instance, "inst-a");
            assert!(t2.take_forgotten().is_none());
            t2.fetched("tok2", "inst-b", 3, 0);
            let (token, lock) = t2.take_forgotten().expect("tok2 was never released");
            assert_eq!(
                (token.as_str(), lock.instance.as_str(), lock.attempt),
                ("tok2", "inst-b", 3)
            );
            assert!(t2.release("tok2").is_none());
        })
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn other_tasks_locks_are_not_forgotten() {
        let t = std::sync::Arc::new(LockTracker::default());
        let t2 = t.clone();
        tokio::spawn(async move { t2.fetched("tok", "inst", 1, 0) })
            .await
            .unwrap();
        let t3 = t.clone();
        let forgotten = tokio::spawn(async move { t3.take_forgotten() })
            .await
            .unwrap();
        assert!(forgotten.is_none());
        assert_eq!(t.drain().len(), 1);
    }
}
