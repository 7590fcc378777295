//! Wake-ups for clients waiting on an instance's end: a turn of this process
//! that ends an instance (an ack with a terminal status, through this
//! provider) wakes the clients of this process waiting on that instance, so
//! `waitForOrchestration` returns at once instead of at its next status poll
//! (duroxide's wait polls with a back-off that reaches 100 ms). A client
//! still polls, for instances that end in another process.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// The instances clients of this process wait on, per provider.
#[derive(Default)]
pub(crate) struct Endings {
    /// Instance id -> its waiters' signal and how many waits share it.
    waiting: Mutex<HashMap<String, (Arc<Notify>, usize)>>,
}

impl Endings {
    /// Starts watching `instance`; the watch ends when the returned value drops.
    pub(crate) fn watch(self: &Arc<Self>, instance: &str) -> Watch {
        let mut waiting = self.waiting.lock().expect("endings");
        let entry = waiting
            .entry(instance.to_string())
            .or_insert_with(|| (Arc::default(), 0));
        entry.1 += 1;
        Watch {
            endings: self.clone(),
            instance: instance.to_string(),
            notify: entry.0.clone(),
        }
    }

    /// `instance` ended (or continued as new) in a turn of this process.
    pub(crate) fn ended(&self, instance: &str) {
        let waiting = self.waiting.lock().expect("endings");
        if let Some((notify, _)) = waiting.get(instance) {
            notify.notify_waiters();
        }
    }
}

/// One client's watch of one instance.
pub(crate) struct Watch {
    endings: Arc<Endings>,
    instance: String,
    notify: Arc<Notify>,
}

impl Watch {
    /// The signal; take `notified()` before reading the status, so an end
    /// between the read and the wait is not missed.
    pub(crate) fn notify(&self) -> &Notify {
        &self.notify
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut waiting = self.endings.waiting.lock().expect("endings");
        if let Some(entry) = waiting.get_mut(&self.instance) {
            entry.1 -= 1;
            if entry.1 == 0 {
                waiting.remove(&self.instance);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn an_end_wakes_the_watchers_of_that_instance_only() {
        let endings = Arc::new(Endings::default());
        let a = endings.watch("a");
        let b = endings.watch("b");
        let woken_a = a.notify().notified();
        let woken_b = b.notify().notified();
        tokio::pin!(woken_a, woken_b);
        woken_a.as_mut().enable();
        woken_b.as_mut().enable();
        endings.ended("a");
        tokio::time::timeout(Duration::from_secs(5), woken_a)
            .await
            .expect("the watcher of 'a' is woken");
        assert!(
            tokio::time::timeout(Duration::from_millis(50), woken_b)
                .await
                .is_err(),
            "the watcher of 'b' is not"
        );
    }

    #[test]
    fn the_last_watch_to_drop_forgets_the_instance() {
        let endings = Arc::new(Endings::default());
        let first = endings.watch("a");
        let second = endings.watch("a");
        drop(first);
        assert_eq!(endings.waiting.lock().unwrap().len(), 1);
        drop(second);
        assert!(endings.waiting.lock().unwrap().is_empty());
    }
}
