//! The waiters of one queue: wake-ups, due times, and which woken looks at
//! the store can be skipped.
//!
//! A wake-up wakes every waiter of its queue (a waiter cannot tell whether
//! it is the one that can take the message: runtimes of one provider may
//! register different orchestrations or filter different tags), but the
//! woken waiters look one at a time, and a woken waiter skips its look when
//! looks that began after the latest wake-up already found nothing for it.
//! Every wake-up counts a generation; a look that reads generation `g`
//! before asking the store sees everything committed before wake-up `g`
//! (the wake-up follows the commit), so an empty look at `g` proves that
//! nothing it could take announced up to `g` is left.
//!
//! What a look can take depends on its fetch arguments: the filter (the
//! capability filter; the tag filter and whether sessions are claimed), and,
//! on the worker queue, the session owner. duroxide gives each worker slot
//! its own owner unless `workerNodeId` is set, so keying looks by owner too
//! would let no worker slot ever skip. Instead a wake-up says whether what
//! it announced can be taken by every owner (items outside sessions) or
//! maybe by one owner only (session items, or unknown: another process's
//! notification, an abandon). A woken look is covered when an empty look
//! with the same filter, by any owner, began at or after the current
//! generation, and one of its own owner began at or after the latest
//! wake-up of the second kind.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Instant;

use duroxide::providers::ProviderError;
use tokio::sync::Notify;

/// Due times remembered per queue; later ones are found by the fallback tick.
const MAX_DUE: usize = 4096;
/// Remembered owners per queue: a process that starts many runtimes forgets
/// them all past this, which only costs looks.
const MAX_OWNERS: usize = 256;

/// Why a waiter looks at the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Look {
    /// The first look of a fetch, or one for a time: always runs.
    Always,
    /// After a wake-up: skipped if covered by empty looks since.
    IfNew,
}

/// Who can take what a wake-up announced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Every fetch whose filter matches (no session items).
    Any,
    /// Perhaps only one session owner, or unknown.
    Owned,
}

/// The fetch arguments that decide what a look can take.
pub(super) struct Fetcher<'a> {
    /// Everything but the session owner.
    pub(super) filter: &'a str,
    /// The session owner; empty when the fetch claims no sessions.
    pub(super) owner: &'a str,
}

/// The latest look that found nothing.
#[derive(Clone, Copy)]
struct Empty {
    generation: u64,
}

#[derive(Default)]
struct Looks {
    /// Counts wake-ups.
    generation: u64,
    /// The generation of the latest [`Reach::Owned`] wake-up.
    owned: u64,
    by_filter: HashMap<String, Empty>,
    by_owner: HashMap<(String, String), Empty>,
}

impl Looks {
    /// Whether empty looks since the latest wake-ups cover `who`.
    fn covered(&self, who: &Fetcher<'_>) -> bool {
        let Some(any) = self.by_filter.get(who.filter) else {
            return false;
        };
        let Some(own) = self
            .by_owner
            .get(&(who.filter.to_string(), who.owner.to_string()))
        else {
            return false;
        };
        any.generation >= self.generation && own.generation >= self.owned
    }

    fn found_nothing(&mut self, who: &Fetcher<'_>, look: Empty) {
        if self.by_owner.len() >= MAX_OWNERS {
            self.by_owner.clear();
            self.by_filter.clear();
        }
        let later = |e: &mut Empty| {
            if look.generation >= e.generation {
                *e = look;
            }
        };
        later(self.by_filter.entry(who.filter.to_string()).or_insert(look));
        later(
            self.by_owner
                .entry((who.filter.to_string(), who.owner.to_string()))
                .or_insert(look),
        );
    }
}

/// Waiters of one queue and the due times of its delayed messages.
#[derive(Default)]
pub(super) struct Signal {
    pub(super) notify: Notify,
    due: Mutex<BTreeSet<Instant>>,
    looks: Mutex<Looks>,
    /// Woken waiters look one at a time.
    turn: tokio::sync::Mutex<()>,
}

impl Signal {
    pub(super) fn wake(&self, reach: Reach) {
        let mut looks = self.looks.lock().expect("looks");
        looks.generation += 1;
        if reach == Reach::Owned {
            looks.owned = looks.generation;
        }
        drop(looks);
        self.notify.notify_waiters();
    }

    /// Runs `fetch` unless `look` allows skipping it and empty looks since
    /// the latest wake-up cover `who`.
    pub(super) async fn look<T, F, Fut>(
        &self,
        look: Look,
        who: &Fetcher<'_>,
        fetch: &F,
    ) -> Result<Option<T>, ProviderError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<Option<T>, ProviderError>>,
    {
        let _turn = match look {
            Look::Always => None,
            Look::IfNew => Some(self.turn.lock().await),
        };
        let generation = {
            let looks = self.looks.lock().expect("looks");
            if look == Look::IfNew && looks.covered(who) {
                return Ok(None);
            }
            looks.generation
        };
        let r = fetch().await;
        if let Ok(None) = r {
            let empty = Empty { generation };
            self.looks.lock().expect("looks").found_nothing(who, empty);
        }
        r
    }

    pub(super) fn due_at(&self, at: Instant) {
        let mut due = self.due.lock().expect("due times");
        due.insert(at);
        if due.len() > MAX_DUE {
            due.pop_last();
        }
        drop(due);
        // Waiters recompute their deadline.
        self.notify.notify_waiters();
    }

    /// Forgets the due times that have passed and, if there were any, wakes
    /// every waiter: the message may be for any filter or owner, and a look
    /// that began before the due time did not see it. Woken waiters skip
    /// their look as after any wake-up, so this costs one look per distinct
    /// filter (and owner), whoever noticed the time first.
    pub(super) fn due_passed(&self, now: Instant) {
        let mut due = self.due.lock().expect("due times");
        let mut passed = false;
        while matches!(due.first(), Some(t) if *t <= now) {
            due.pop_first();
            passed = true;
        }
        drop(due);
        if passed {
            self.wake(Reach::Owned);
        }
    }

    /// The earliest due time not yet passed when [`Self::due_passed`] ran.
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.due.lock().expect("due times").first().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// A store fetch that finds nothing and counts its calls.
    fn counting(
        calls: &AtomicUsize,
    ) -> impl Fn() -> std::future::Ready<Result<Option<()>, ProviderError>> + '_ {
        move || {
            calls.fetch_add(1, Ordering::SeqCst);
            std::future::ready(Ok(None))
        }
    }

    fn who<'a>(filter: &'a str, owner: &'a str) -> Fetcher<'a> {
        Fetcher { filter, owner }
    }

    async fn looks(signal: &Signal, look: Look, w: &Fetcher<'_>, calls: &AtomicUsize) -> usize {
        let before = calls.load(Ordering::SeqCst);
        signal.look(look, w, &counting(calls)).await.unwrap();
        calls.load(Ordering::SeqCst) - before
    }

    #[tokio::test]
    async fn a_woken_look_is_skipped_until_a_new_wake_up() {
        let signal = Signal::default();
        let calls = AtomicUsize::new(0);
        let f = who("f", "");
        signal.wake(Reach::Any);
        assert_eq!(
            looks(&signal, Look::IfNew, &f, &calls).await,
            1,
            "the first look after a wake-up runs"
        );
        for _ in 0..3 {
            assert_eq!(
                looks(&signal, Look::IfNew, &f, &calls).await,
                0,
                "covered looks are skipped"
            );
        }
        signal.wake(Reach::Any);
        assert_eq!(
            looks(&signal, Look::IfNew, &f, &calls).await,
            1,
            "a new wake-up makes the next look run"
        );
    }

    #[tokio::test]
    async fn looks_for_a_time_and_other_filters_always_run() {
        let signal = Signal::default();
        let calls = AtomicUsize::new(0);
        assert_eq!(looks(&signal, Look::IfNew, &who("f", ""), &calls).await, 1);
        assert_eq!(
            looks(&signal, Look::Always, &who("f", ""), &calls).await,
            1,
            "an Always look runs though covered"
        );
        assert_eq!(
            looks(&signal, Look::IfNew, &who("other tags", ""), &calls).await,
            1,
            "another filter's empty look covers nothing"
        );
    }

    #[tokio::test]
    async fn a_look_that_found_something_covers_nothing() {
        let signal = Signal::default();
        signal.wake(Reach::Any);
        let found = || std::future::ready(Ok::<_, ProviderError>(Some(())));
        let r = signal.look(Look::IfNew, &who("f", ""), &found).await;
        assert!(r.unwrap().is_some());
        let calls = AtomicUsize::new(0);
        assert_eq!(
            looks(&signal, Look::IfNew, &who("f", ""), &calls).await,
            1,
            "there may be more: the next waiter looks"
        );
    }

    #[tokio::test]
    async fn one_owners_empty_look_covers_others_only_for_items_any_owner_takes() {
        let signal = Signal::default();
        let calls = AtomicUsize::new(0);
        let (a, b) = (who("tags", "slot-a"), who("tags", "slot-b"));
        // Both slots waiting: each has looked once and found nothing.
        looks(&signal, Look::Always, &a, &calls).await;
        looks(&signal, Look::Always, &b, &calls).await;

        signal.wake(Reach::Any);
        assert_eq!(looks(&signal, Look::IfNew, &a, &calls).await, 1);
        assert_eq!(
            looks(&signal, Look::IfNew, &b, &calls).await,
            0,
            "an item outside sessions that slot a did not find is not there for slot b"
        );

        signal.wake(Reach::Owned);
        assert_eq!(looks(&signal, Look::IfNew, &a, &calls).await, 1);
        assert_eq!(
            looks(&signal, Look::IfNew, &b, &calls).await,
            1,
            "a session item may be slot b's alone"
        );

        signal.wake(Reach::Any);
        assert_eq!(looks(&signal, Look::IfNew, &a, &calls).await, 1);
        assert_eq!(
            looks(&signal, Look::IfNew, &b, &calls).await,
            0,
            "slot b looked after the session wake-up; slot a after the latest"
        );
    }

    #[tokio::test]
    async fn an_owner_that_never_looked_empty_is_not_covered() {
        let signal = Signal::default();
        let calls = AtomicUsize::new(0);
        looks(&signal, Look::Always, &who("tags", "slot-a"), &calls).await;
        assert_eq!(
            looks(&signal, Look::IfNew, &who("tags", "slot-b"), &calls).await,
            1
        );
    }

    #[tokio::test]
    async fn a_passed_due_time_uncovers_every_filter_and_owner_once() {
        let signal = Signal::default();
        let calls = AtomicUsize::new(0);
        let (a, b, c) = (who("f", "slot-a"), who("f", "slot-b"), who("g", ""));
        for w in [&a, &b, &c] {
            looks(&signal, Look::Always, w, &calls).await;
        }
        let due = Instant::now() + Duration::from_millis(5);
        signal.due_at(due);
        signal.due_passed(Instant::now());
        assert_eq!(signal.next_due(), Some(due), "not passed yet");
        assert_eq!(looks(&signal, Look::IfNew, &c, &calls).await, 0);
        tokio::time::sleep(Duration::from_millis(10)).await;
        // Whoever notices it first, every filter and owner looks once: the
        // message may be a session's or any filter's.
        signal.due_passed(Instant::now());
        assert_eq!(signal.next_due(), None, "forgotten once passed");
        for w in [&a, &b, &c] {
            assert_eq!(looks(&signal, Look::IfNew, w, &calls).await, 1);
            assert_eq!(looks(&signal, Look::IfNew, w, &calls).await, 0);
        }
    }
}
