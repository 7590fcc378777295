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
//!
//! Wake-ups from this process's own calls also say how many items they
//! announced (an ack's activities, a completion, a start). While every
//! wake-up since the latest empty look said so, looks that found something
//! count those items off, and once all are found the remaining woken looks
//! and the looks of slots coming back from work are covered too: without
//! that, each item cost a look that finds nothing after the one that takes
//! it, and each slot's return another (three store calls per step of a
//! chain where one does). This holds only while one filter looks at the
//! queue: with several, an item counted off by one filter's look may be
//! another filter's. An item that became visible unannounced (a lock that
//! expired in a crashed process, another process's enqueue whose
//! notification is still on its way) can be counted off in place of an
//! announced one; that one then waits for the next wake-up or the fallback
//! tick, which costs latency, never work.
//!
//! This process's calls add what they announce to the count before they call
//! the store ([`Signal::expect`]) and wake after their commit. A look can
//! find an item between the commit and the wake-up (an ack that fetched the
//! next item in the same call, `history_tail/ride.rs`, hands it over before
//! it returns), and is then counted off against that item. While such a call
//! is in flight its items do not uncover looks: under load (four turns acking
//! at any moment) some call was always in flight, and every slot back from
//! work looked at the store for an item it could not take yet, one empty
//! worker fetch per activity of a hello run. An empty look sets the count to
//! what may still be unfound: the items of calls in flight when it began
//! (its fetch may have run before they committed) and of those counted since,
//! plus one per such call (an ack that fetches in the same call may have
//! taken an item announced before, out of the look's sight until it hands it
//! over), so the count recovers under load too (it used to recover only when
//! no call was in flight and no wake-up came during the look). A call that
//! lands having fetched nothing from the queue (every call but such an ack,
//! and every call on SQLite) takes its one back ([`Fetched`]): kept, it cost
//! a look that found nothing, which set the count again with the calls then
//! in flight, so about every other look of a returning worker slot found
//! nothing (131 of 174 in a SQLite run of 200 hellos). What looks
//! still running then find is not counted off (it may be what the count left
//! out). A call that fails leaves the count too high, which costs a look,
//! never latency. Before this, about one
//! Postgres payload run in twelve waited for the fallback tick (1 s) on the
//! worker queue with every announced item counted off; none in 40 runs since
//! (the same stall still shows about once in 30 with `DUROXIDE_NODE_RIDES=off`).

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Instant;

use duroxide::providers::ProviderError;
use tokio::sync::Notify;

use looks::Looks;

mod looks;

/// Due times remembered per queue; later ones are found by the fallback tick.
const MAX_DUE: usize = 4096;
/// Remembered owners per queue: a process that starts many runtimes forgets
/// them all past this, which only costs looks.
const MAX_OWNERS: usize = 256;

/// Why a waiter looks at the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Look {
    /// A look for a time (a due time): always runs.
    Always,
    /// The fallback tick, for items nobody announced: skipped when, since
    /// the latest wake-up, an empty look with the same filter began at or
    /// after `any` and one of the same owner at or after `own` (a
    /// [`Tick`]). Every waiter of a queue ticks, so without this an idle
    /// process looked once a second per slot (48 looks a second for four
    /// runtimes of one provider).
    Tick(Tick),
    /// The first look of a fetch (a slot back from work, or a new one):
    /// skipped if covered; on the worker queue after the looks running
    /// ([`Signal::taking_turns`]), elsewhere without waiting for them.
    First,
    /// After a wake-up: skipped if covered by empty looks since; woken
    /// looks take turns.
    IfNew,
}

/// The oldest empty looks that cover a fallback tick ([`Look::Tick`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Tick {
    /// By any owner with the same filter: items outside sessions, which any
    /// slot may take, are looked for once a tick whoever looks.
    pub(super) any: Instant,
    /// By the same owner: session items that only this owner may take are
    /// looked for less often (duroxide gives every worker slot an owner).
    pub(super) own: Instant,
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

/// What a wake-up says about how many items it is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Announced {
    /// Not known (another process, an abandon, a due time).
    Unknown,
    /// This many, not counted before.
    Items(u64),
    /// Counted before the call ([`Signal::expect`]).
    Counted,
}

impl From<Option<u64>> for Announced {
    fn from(n: Option<u64>) -> Self {
        n.map_or(Announced::Unknown, Announced::Items)
    }
}

/// Whether a counting call also fetched from the queue it counted items
/// for: only an ack that rides a fetch can (`history_tail/ride.rs`), and
/// only such a call may have taken, out of a look's sight, an item
/// announced before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fetched {
    Nothing,
    Maybe,
}

/// A call of this process that counted the items it will announce; wakes
/// for them with [`Expected::woke`] after its commit, or, dropped (the call
/// failed), leaves the count as it is.
pub(super) struct Expected<'a> {
    signal: &'a Signal,
    reach: Reach,
    /// Its items counted in flight.
    in_flight: u64,
    /// [`Looks::counts_set`] when it counted them.
    counted_at: u64,
    /// Woken for: nothing left to do when dropped.
    landed: bool,
}

impl Expected<'_> {
    /// The call committed; `fetched`: whether it also fetched from the
    /// queue it counted items for.
    pub(super) fn woke(mut self, fetched: Fetched) {
        self.signal
            .wake_landed(self.reach, self.in_flight, fetched, self.counted_at);
        self.landed = true;
    }
}

impl Drop for Expected<'_> {
    /// A call that failed: its items are not in flight any more (they stay
    /// counted as unfound, which costs a look).
    fn drop(&mut self) {
        if !self.landed {
            let mut looks = self.signal.looks.lock().expect("looks");
            looks.landed(self.reach, self.in_flight, Fetched::Maybe, self.counted_at);
        }
    }
}

/// A look at the store, running until dropped.
struct Running<'a>(&'a Mutex<Looks>);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        let mut looks = self.0.lock().expect("looks");
        looks.running = looks.running.saturating_sub(1);
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
    /// A slot's first look takes its turn too ([`Self::taking_turns`]).
    first_takes_turn: bool,
}

impl Signal {
    /// Waiters whose first look (a slot back from work) waits for the
    /// looks running when what is left may be what they are taking
    /// ([`Looks::racing`]), then skips if they found it: the worker
    /// queue's. One activity announced wakes every idle worker slot; a slot
    /// back from work that looked beside the woken look raced it for that
    /// one item, and one of the two found nothing (about one empty fetch
    /// per activity of a hello run on either store). With more left than
    /// looks running (a fan-out's 300), it looks at once: waiting for its
    /// turn every time made a Postgres fan-out 12% slower. Orchestration
    /// slots always look at once: waiting, a SQLite runtime's turns fell
    /// behind the client's starts.
    pub(super) fn taking_turns() -> Self {
        Self {
            first_takes_turn: true,
            ..Self::default()
        }
    }

    /// `announced`: how many items the wake-up is for, when known.
    pub(super) fn wake(&self, reach: Reach, announced: impl Into<Announced>) {
        self.looks
            .lock()
            .expect("looks")
            .woken(reach, announced.into());
        self.notify.notify_waiters();
    }

    /// Counts `n` items a call of this process is about to commit, before
    /// it calls the store: a look may find them before the wake-up.
    pub(super) fn expect(&self, reach: Reach, n: u64) -> Expected<'_> {
        let mut looks = self.looks.lock().expect("looks");
        let in_flight = looks.expect(reach, n);
        Expected {
            signal: self,
            reach,
            in_flight,
            counted_at: looks.counts_set,
            landed: false,
        }
    }

    /// A counted call's wake-up: its items are no longer in flight, in the
    /// same step that wakes the waiters for them.
    fn wake_landed(&self, reach: Reach, in_flight: u64, fetched: Fetched, counted_at: u64) {
        let mut looks = self.looks.lock().expect("looks");
        looks.landed(reach, in_flight, fetched, counted_at);
        looks.woken(reach, Announced::Counted);
        drop(looks);
        self.notify.notify_waiters();
    }

    /// Counts wake-ups: one later than a turn's fetch means messages may
    /// have arrived for its instance while it was locked.
    pub(super) fn generation(&self) -> u64 {
        self.looks.lock().expect("looks").generation
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
        // Slots that started together tick together: they take turns, so
        // the first one's empty look covers the rest.
        let _turn = match look {
            Look::Always => None,
            Look::First if !self.first_takes_turn => None,
            Look::First => {
                let racing = self.looks.lock().expect("looks").racing(who);
                match racing {
                    true => Some(self.turn.lock().await),
                    false => None,
                }
            }
            Look::IfNew | Look::Tick(_) => Some(self.turn.lock().await),
        };
        let began = {
            let mut looks = self.looks.lock().expect("looks");
            let covered = match look {
                Look::Always => false,
                Look::Tick(tick) => looks.ticked(who, tick),
                Look::First | Look::IfNew => looks.covered(who),
            };
            if covered {
                return Ok(None);
            }
            looks.began(Instant::now())
        };
        let _running = Running(&self.looks);
        let r = fetch().await;
        match &r {
            Ok(None) => {
                self.looks.lock().expect("looks").found_nothing(who, began);
            }
            Ok(Some(_)) => self.looks.lock().expect("looks").found(began.seq),
            Err(_) => {}
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
            self.wake(Reach::Owned, Announced::Unknown);
        }
    }

    /// The earliest due time not yet passed when [`Self::due_passed`] ran.
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.due.lock().expect("due times").first().copied()
    }
}

#[cfg(test)]
mod tests;
