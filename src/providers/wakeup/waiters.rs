//! The shared state of one provider's wake-up layer: each queue's waiters,
//! and the long poll a fetch waits in (`wakeup.rs` has the design).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use duroxide::providers::ProviderError;
use tokio_util::sync::CancellationToken;

use super::signal::{Fetcher, Look, Reach, Signal, Tick};
use super::{Queue, GIVE_UP};

/// The shared state of the layer; the listen task holds it weakly.
pub(crate) struct Wakeups {
    pub(super) orchestrator: Signal,
    pub(super) worker: Signal,
    pub(super) fallback: Duration,
    /// Woken looks take turns and skip covered ones (not `LOOKS=every`).
    pub(super) skip_covered: bool,
}

/// How many fallback ticks a session owner's own look may be covered by
/// other owners' looks: session items unannounced to this process wait at
/// most this many ticks for the one owner that may take them.
const OWNER_TICKS: u32 = 10;

impl Wakeups {
    /// A fallback tick's look: covered by an empty look of any slot with
    /// the same filter within the last tick, and of the same owner within
    /// the last [`OWNER_TICKS`]. With `LOOKS=every`, every tick looks.
    fn tick(&self) -> Look {
        if !self.skip_covered {
            return Look::Always;
        }
        let now = Instant::now();
        let ago = |d: Duration| now.checked_sub(d).unwrap_or(now);
        Look::Tick(Tick {
            any: ago(self.fallback),
            own: ago(self.fallback * OWNER_TICKS),
        })
    }

    pub(super) fn signal(&self, queue: Queue) -> &Signal {
        match queue {
            Queue::Orchestrator => &self.orchestrator,
            Queue::Worker => &self.worker,
        }
    }

    /// A wake-up from this process or another; `reach` says who can take
    /// what it announced, `announced` how many items, when known.
    pub(crate) fn wake(&self, queue: Queue, reach: Reach, announced: Option<u64>) {
        self.signal(queue).wake(reach, announced);
    }

    /// A message of `queue` becomes visible at epoch ms `at_ms`.
    pub(crate) fn due_at_epoch_ms(&self, queue: Queue, at_ms: u64) {
        self.signal(queue).due_at(instant_of(at_ms));
    }

    /// Runs `fetch` (a store fetch that does not wait) until it finds
    /// something, `poll_timeout` passed, or the caller gave up. `who` names
    /// what the fetch can take (its arguments), for skipping covered looks.
    /// What it found comes with the queue's wake-up generation from before
    /// the look that found it.
    pub(super) async fn long_poll<T, F, Fut>(
        &self,
        queue: Queue,
        who: &Fetcher<'_>,
        first: Look,
        poll_timeout: Duration,
        fetch: F,
    ) -> Result<Option<(T, u64)>, ProviderError>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<Option<T>, ProviderError>>,
    {
        let end = Instant::now() + poll_timeout;
        let give_up = GIVE_UP.try_with(CancellationToken::clone).ok();
        let signal = self.signal(queue);
        let mut look = first;
        loop {
            // Before registering: a passed due time wakes every waiter, this
            // one included, and this look already counts as one after it.
            signal.due_passed(Instant::now());
            // Registered before the fetch, so a wake-up during it is not missed.
            let woken = signal.notify.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let generation = signal.generation();
            match signal.look(look, who, &fetch).await {
                Ok(None) => {}
                Ok(Some(found)) => return Ok(Some((found, generation))),
                Err(e) => return Err(e),
            }
            let now = Instant::now();
            if now >= end {
                return Ok(None);
            }
            let tick_at = now + self.fallback;
            let mut until = end.min(tick_at);
            // A due time that passed since `due_passed` makes `until` past:
            // the next round wakes every waiter for it.
            if let Some(due) = signal.next_due() {
                until = until.min(due);
            }
            let given_up = async {
                match &give_up {
                    Some(t) => t.cancelled().await,
                    None => std::future::pending().await,
                }
            };
            // Biased: a passed due time makes a look that always runs.
            look = tokio::select! {
                biased;
                _ = given_up => return Ok(None),
                _ = tokio::time::sleep_until(until.into()) => match until == tick_at {
                    true => self.tick(),
                    false => Look::Always,
                },
                _ = &mut woken => match self.skip_covered {
                    true => Look::IfNew,
                    false => Look::Always,
                },
            };
        }
    }
}

pub(super) fn epoch_ms_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn instant_of(epoch_ms: u64) -> Instant {
    Instant::now() + Duration::from_millis(epoch_ms.saturating_sub(epoch_ms_now()))
}
