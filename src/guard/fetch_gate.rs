//! Caps how many fetch calls of one kind a runtime has in flight.
//!
//! duroxide-pg's `fetch_orchestration_item` makes every caller pick the same
//! oldest queue row and then wait on a blocking advisory lock keyed by its
//! instance id. Every dispatcher of a fleet therefore queues on one lock, and
//! acks and renewals queue behind them until leases expire and Postgres breaks
//! deadlocks. One fetch at a time per runtime removes the pile-up inside each
//! process; the remaining contention is one fetch per runtime.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A semaphore, or nothing when uncapped.
pub(crate) struct FetchGate(Option<Arc<Semaphore>>);

impl FetchGate {
    /// `max == 0` means no cap.
    pub(crate) fn new(max: usize) -> Self {
        Self((max > 0).then(|| Arc::new(Semaphore::new(max))))
    }

    /// Waits for a slot. Dropping the returned permit (or the future while it
    /// waits, which the dispatcher does when it shuts down) frees the slot.
    pub(crate) async fn enter(&self) -> Option<OwnedSemaphorePermit> {
        match &self.0 {
            // The semaphore is never closed, so acquiring cannot fail.
            Some(s) => s.clone().acquire_owned().await.ok(),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FetchGate;
    use std::time::Duration;

    #[tokio::test]
    async fn one_slot_serializes_callers() {
        let gate = FetchGate::new(1);
        let first = gate.enter().await;
        assert!(first.is_some());
        let second = tokio::time::timeout(Duration::from_millis(50), gate.enter()).await;
        assert!(
            second.is_err(),
            "a second caller must wait while the slot is taken"
        );
        drop(first);
        let third = tokio::time::timeout(Duration::from_secs(5), gate.enter()).await;
        assert!(
            third.is_ok(),
            "the slot is free again once the permit is dropped"
        );
    }

    #[tokio::test]
    async fn zero_means_uncapped() {
        let gate = FetchGate::new(0);
        let a = gate.enter().await;
        let b = gate.enter().await;
        assert!(a.is_none() && b.is_none());
    }
}
