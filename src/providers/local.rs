//! The orchestrations that the running runtimes of this process register,
//! per provider: what a client on the same provider checks when a start waits
//! in the queue and nobody picks it up (a misspelt name, a runtime that is
//! not started). Owned by the provider, which its runtimes and clients share.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

#[derive(Default)]
pub(crate) struct LocalRuntimes {
    next: AtomicU64,
    running: Mutex<BTreeMap<u64, BTreeSet<String>>>,
}

impl LocalRuntimes {
    /// A runtime started with these orchestrations; the id ends it.
    pub(crate) fn started(&self, orchestrations: BTreeSet<String>) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.running
            .lock()
            .expect("local runtimes")
            .insert(id, orchestrations);
        id
    }

    pub(crate) fn stopped(&self, id: u64) {
        self.running.lock().expect("local runtimes").remove(&id);
    }

    /// How many running runtimes there are, and every orchestration they register.
    pub(crate) fn registered(&self) -> (usize, BTreeSet<String>) {
        let running = self.running.lock().expect("local runtimes");
        let names = running.values().flatten().cloned().collect();
        (running.len(), names)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_runtime_no_longer_counts() {
        let local = LocalRuntimes::default();
        let a = local.started(["Fulfil".to_string()].into());
        local.started(["Refund".to_string()].into());
        assert_eq!(local.registered().0, 2);
        local.stopped(a);
        assert_eq!(
            local.registered(),
            (1, ["Refund".to_string()].into_iter().collect())
        );
    }
}
