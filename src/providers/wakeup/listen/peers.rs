//! Whether another process listens on the channel, so that announcing is
//! worth a `pg_notify`.
//!
//! A process alone on its schema (one worker, a developer's machine, the
//! bench) sent a notification after nearly every commit that nobody else
//! heard: a round trip and a transaction for us, a signal and a delivery to
//! our own LISTEN connection for the server, about 5% of a chain step. So a
//! listening process says it listens (a presence: the payload `<sender> - 0 0`,
//! which older processes read as "nothing to wake"): once when its LISTEN
//! starts, every [`HEARTBEAT`], and in reply to a sender it has not heard
//! before, so a newcomer learns of the others within a round trip. A process
//! then sends its announcements only while it has heard another sender in
//! the last [`GONE`], and always while it cannot know: before its LISTEN
//! connection is up, while it is down, and in the [`GRACE`] after it came
//! up if another process was listening then (`census.rs`: one that starts
//! alone has nobody to wait for). Any sender counts, listening or not (a
//! client-only process also gets our announcements, which costs it
//! nothing).
//!
//! A peer missed (a reply lost to a dropped connection) costs it latency
//! until its next heartbeat: its waiters find our work by their fallback
//! tick, as for any lost notification.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a listening process says it listens.
pub(super) const HEARTBEAT: Duration = Duration::from_secs(10);

/// A sender not heard from for this long is taken to be gone.
const GONE: Duration = Duration::from_secs(30);

/// After our LISTEN starts, how long announcements go out before the
/// others' replies to our presence have had time to arrive.
const GRACE: Duration = Duration::from_millis(250);

#[derive(Default)]
pub(super) struct Peers {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Since when our LISTEN connection listens; `None` while it does not.
    listening_since: Option<Instant>,
    /// How long after that we announce before any reply: [`GRACE`] if
    /// another process listened when ours started, else nothing.
    grace: Duration,
    /// Other senders, and when each was last heard.
    heard: HashMap<u64, Instant>,
}

impl Peers {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("wake-up peers")
    }

    /// Our LISTEN connection listens from `now` on; `others` if another
    /// process may have listened before ours (so may not have replied yet).
    pub(super) fn listening(&self, now: Instant, others: bool) {
        let mut state = self.state();
        state.listening_since = Some(now);
        state.grace = if others { GRACE } else { Duration::ZERO };
    }

    pub(super) fn is_listening(&self) -> bool {
        self.state().listening_since.is_some()
    }

    /// Our LISTEN connection was lost: nobody can be known to be absent.
    pub(super) fn deaf(&self) {
        self.state().listening_since = None;
    }

    /// A notification of another `sender` arrived at `now`. Whether that
    /// sender is new to us (it is owed our presence).
    pub(super) fn heard(&self, sender: u64, now: Instant) -> bool {
        let mut state = self.state();
        let gone = |at: Instant| now.saturating_duration_since(at) >= GONE;
        match state.heard.insert(sender, now) {
            Some(before) => gone(before),
            None => true,
        }
    }

    /// Whether an announcement made at `now` may reach another process.
    pub(super) fn worth_sending(&self, now: Instant) -> bool {
        let mut state = self.state();
        let Some(since) = state.listening_since else {
            return true;
        };
        if now.saturating_duration_since(since) < state.grace {
            return true;
        }
        state
            .heard
            .retain(|_, at| now.saturating_duration_since(*at) < GONE);
        !state.heard.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_that_cannot_listen_or_just_began_always_sends() {
        let peers = Peers::default();
        let t0 = Instant::now();
        assert!(peers.worth_sending(t0), "not listening yet");
        peers.listening(t0, true);
        assert!(peers.worth_sending(t0 + GRACE / 2), "within the grace");
        assert!(!peers.worth_sending(t0 + GRACE), "alone after the grace");
        peers.deaf();
        assert!(
            peers.worth_sending(t0 + GRACE * 2),
            "listen connection lost"
        );
    }

    #[test]
    fn a_process_that_began_alone_has_no_grace_to_wait() {
        let peers = Peers::default();
        let t0 = Instant::now();
        peers.listening(t0, false);
        assert!(
            !peers.worth_sending(t0),
            "nobody listened when ours started"
        );
        assert!(peers.heard(7, t0 + GRACE / 4), "a newcomer's presence");
        assert!(peers.worth_sending(t0 + GRACE / 2), "the newcomer listens");
    }

    #[test]
    fn another_sender_makes_sending_worth_it_until_it_is_gone() {
        let peers = Peers::default();
        let t0 = Instant::now();
        peers.listening(t0, false);
        assert!(peers.heard(7, t0), "a new sender is owed our presence");
        assert!(!peers.heard(7, t0 + HEARTBEAT), "a known one is not");
        assert!(peers.worth_sending(t0 + HEARTBEAT + GONE / 2));
        assert!(!peers.worth_sending(t0 + HEARTBEAT + GONE));
        assert!(
            peers.heard(7, t0 + HEARTBEAT * 9),
            "heard again after it was gone"
        );
    }
}
