//! The count behind the looks a queue's waiters skip: the latest empty
//! looks by filter and by owner, and the items announced and not yet found
//! (the module doc of `signal.rs` says how it is kept and why).

use std::collections::HashMap;
use std::time::Instant;

use super::{Announced, Fetched, Fetcher, Reach, Tick, MAX_OWNERS};

/// The latest look that found nothing.
#[derive(Clone, Copy)]
pub(super) struct Empty {
    generation: u64,
    /// When it began.
    at: Instant,
}

/// What a look saw of the count when it began.
#[derive(Clone, Copy)]
pub(super) struct Began {
    empty: Empty,
    /// Items of counted calls in flight.
    in_flight: u64,
    /// [`Looks::calls_in_flight`].
    calls_in_flight: u64,
    /// [`Looks::may_be_unfound`].
    may_be_unfound: u64,
    /// [`Looks::fetched_nothing`].
    fetched_nothing: u64,
    /// Its place among looks that began ([`Looks::begun`]).
    pub(super) seq: u64,
}

#[derive(Default)]
pub(super) struct Looks {
    /// Counts wake-ups.
    pub(super) generation: u64,
    /// The generation of the latest [`Reach::Owned`] wake-up.
    owned: u64,
    by_filter: HashMap<String, Empty>,
    by_owner: HashMap<(String, String), Empty>,
    /// Items announced since the latest empty look that no look has found
    /// yet, those of calls still in flight included; `None` once a wake-up
    /// since did not say how many, or before the first empty look.
    unfound: Option<u64>,
    /// The items of calls of this process counted and not yet woken for:
    /// not yet committed, or committed and about to be woken for. A look
    /// cannot take them before the wake-up (an ack that fetched one holds it
    /// until its call returns), so they do not uncover looks.
    in_flight: u64,
    /// Calls of this process that counted items for every owner and have not
    /// woken yet. An ack that fetches the next item in the same call
    /// (`history_tail/ride.rs`) may take an item announced before, which no
    /// look then sees until the ack returns and hands it over; an empty look
    /// meanwhile proves nothing about one item per such call.
    calls_in_flight: u64,
    /// What an empty look cannot prove gone, ever: the items counted or
    /// announced with their number, plus one per counting call (the item it
    /// may have fetched). What a look sees added after it began is this
    /// minus what it saw.
    may_be_unfound: u64,
    /// Counting calls that landed having fetched nothing from this queue
    /// (every call but an ack that rides a fetch): the one item each was
    /// allowed in [`Self::may_be_unfound`] and [`Self::calls_in_flight`] was
    /// never out of a look's sight.
    fetched_nothing: u64,
    /// Times an empty look set the count ([`Looks::found_nothing`]).
    pub(super) counts_set: u64,
    /// The generation of the latest wake-up that did not say how many items
    /// it is for, or that may be one owner's.
    uncounted: u64,
    /// Looks that began, counted.
    begun: u64,
    /// Looks at the store running now.
    pub(super) running: u64,
    /// Looks that began up to the latest setting of the count by an empty
    /// look ([`Looks::found_nothing`]): what they find may be what that count
    /// already left out, so it is not counted off again.
    counted_after: u64,
}

impl Looks {
    /// Whether empty looks since the latest wake-ups cover `who`, or every
    /// item announced since was found.
    pub(super) fn covered(&self, who: &Fetcher<'_>) -> bool {
        self.empty_since(who) || self.all_found(who)
    }

    /// Whether empty looks since the latest wake-ups, begun no earlier
    /// than `tick` says, cover `who`'s fallback tick.
    pub(super) fn ticked(&self, who: &Fetcher<'_>, tick: Tick) -> bool {
        let own = self
            .by_owner
            .get(&(who.filter.to_string(), who.owner.to_string()))
            .is_some_and(|own| own.at >= tick.own);
        let any = self
            .by_filter
            .get(who.filter)
            .is_some_and(|any| any.at >= tick.any);
        own && any && self.empty_since(who)
    }

    fn empty_since(&self, who: &Fetcher<'_>) -> bool {
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

    /// Every announced item that is not still in flight was found, `who`'s
    /// filter is the only one that looks (see the module doc), and `who`'s
    /// owner found nothing since the latest wake-up of an item that may be
    /// one owner's.
    fn all_found(&self, who: &Fetcher<'_>) -> bool {
        let own_empty = || {
            self.by_owner
                .get(&(who.filter.to_string(), who.owner.to_string()))
                .is_some_and(|own| own.generation >= self.owned)
        };
        self.unfound.map(|u| u.saturating_sub(self.in_flight)) == Some(0)
            && self.by_filter.len() == 1
            && self.by_filter.contains_key(who.filter)
            && own_empty()
    }

    /// Whether a look by `who` would race the looks running for what is
    /// left: it is not covered, and every item the count leaves may be one
    /// they are taking.
    pub(super) fn racing(&self, who: &Fetcher<'_>) -> bool {
        let left = self.unfound.map(|u| u.saturating_sub(self.in_flight));
        self.running > 0 && left.is_some_and(|l| l <= self.running) && !self.covered(who)
    }

    /// `announced`: the items, when this process's call counted them
    /// already (`Counted`), or not.
    pub(super) fn woken(&mut self, reach: Reach, announced: Announced) {
        self.generation += 1;
        if reach == Reach::Owned {
            self.owned = self.generation;
        }
        match (reach, announced) {
            (Reach::Any, Announced::Counted) => {}
            (Reach::Any, Announced::Items(n)) => self.may_be_unfound += n,
            _ => self.uncounted = self.generation,
        }
        self.unfound = match (reach, announced, self.unfound) {
            (Reach::Any, Announced::Counted, u) => u,
            (Reach::Any, Announced::Items(n), Some(u)) => Some(u + n),
            _ => None,
        };
    }

    /// Returns how many items it counts in flight.
    pub(super) fn expect(&mut self, reach: Reach, n: u64) -> u64 {
        self.unfound = match (reach, self.unfound) {
            (Reach::Any, Some(u)) => Some(u + n),
            _ => None,
        };
        match reach {
            Reach::Any => {
                self.in_flight += n;
                self.calls_in_flight += 1;
                self.may_be_unfound += n + 1;
                n
            }
            Reach::Owned => 0,
        }
    }

    /// A call counted `in_flight` items (`Reach::Any`) woke or failed;
    /// `counted_at` is [`Self::counts_set`] when it counted them.
    pub(super) fn landed(
        &mut self,
        reach: Reach,
        in_flight: u64,
        fetched: Fetched,
        counted_at: u64,
    ) {
        self.in_flight = self.in_flight.saturating_sub(in_flight);
        if reach != Reach::Any {
            return;
        }
        self.calls_in_flight = self.calls_in_flight.saturating_sub(1);
        if fetched == Fetched::Nothing {
            self.fetched_nothing += 1;
            // The count an empty look set since this call counted its
            // items allowed it one more (it was in flight then, or counted
            // during the look); an empty look still running leaves it out
            // through `fetched_nothing`.
            if self.counts_set > counted_at {
                self.unfound = self.unfound.map(|u| u.saturating_sub(1));
            }
        }
    }

    pub(super) fn began(&mut self, at: Instant) -> Began {
        self.begun += 1;
        self.running += 1;
        Began {
            seq: self.begun,
            empty: Empty {
                generation: self.generation,
                at,
            },
            in_flight: self.in_flight,
            calls_in_flight: self.calls_in_flight,
            may_be_unfound: self.may_be_unfound,
            fetched_nothing: self.fetched_nothing,
        }
    }

    /// A look (begun `seq`-th) found an item.
    pub(super) fn found(&mut self, seq: u64) {
        if seq > self.counted_after {
            self.unfound = self.unfound.map(|u| u.saturating_sub(1));
        }
    }

    pub(super) fn found_nothing(&mut self, who: &Fetcher<'_>, began: Began) {
        if self.by_owner.len() >= MAX_OWNERS {
            self.by_owner.clear();
            self.by_filter.clear();
            self.unfound = None;
        }
        // Nothing this filter can take was left when the look began, but
        // what an ack in flight fetched for a slot of this process. What may
        // still be unfound: the items of calls that were in flight then (the
        // look may have run before they committed), one more per such call
        // (an item announced before, that it fetched), and what was counted
        // since; a wake-up since that did not say how many leaves it unknown.
        // A look still running may find an item committed before this one
        // began, which this count already leaves out: counted off again, an
        // announced item would be taken for found and wait for the fallback
        // tick, so what looks begun by now find is not counted off. Counting
        // too high costs a look, never latency.
        let look = began.empty;
        if self.uncounted <= look.generation {
            let since = self.may_be_unfound - began.may_be_unfound;
            let fetched_nothing = self.fetched_nothing - began.fetched_nothing;
            self.unfound = Some(
                (began.in_flight + began.calls_in_flight + since).saturating_sub(fetched_nothing),
            );
            self.counts_set += 1;
            self.counted_after = self.begun;
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
