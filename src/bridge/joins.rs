//! The futures a yielded `all` or `race` of tasks becomes: how many times,
//! and in which order, their tasks are polled.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A task of a join: the bridge's tasks give an `Outcome`.
pub(crate) type Task<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The `all` of plain activities a generator yielded, joined in order: each
/// poll polls the first activity not yet known to be done, and the ones
/// after it only once it is.
///
/// duroxide polls the orchestration after every completion its replay
/// applies, and its `join` polls every pending task each time, so a turn of
/// a fan-out of N activities with C of them completed cost N × C polls: 10^8
/// for 10,000 activities, and the turns of a fan-out of 20,000 outlived their
/// 5 s lock until the instance was poisoned. In order, a turn costs N + C.
///
/// The outcome is the same: an activity's future only looks up its result,
/// so the vector of results does not depend on when each is polled. What
/// polling does besides is mark the activity done, so that dropping its
/// future does not cancel it; a join that is dropped unfinished (the turn
/// ends, or the orchestration is cancelled) first polls every activity left
/// once, which marks the ones whose result arrived, as duroxide's `join`
/// would have at its last poll.
pub(crate) struct InOrderJoin<T> {
    futures: Vec<Option<Task<T>>>,
    outcomes: Vec<T>,
}

// The outcomes are never pinned: only the tasks are, behind their boxes.
impl<T> Unpin for InOrderJoin<T> {}

impl<T> InOrderJoin<T> {
    pub(crate) fn new(futures: Vec<Task<T>>) -> Self {
        Self {
            outcomes: Vec::with_capacity(futures.len()),
            futures: futures.into_iter().map(Some).collect(),
        }
    }
}

impl<T> Future for InOrderJoin<T> {
    type Output = Vec<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        while let Some(slot) = this.futures.get_mut(this.outcomes.len()) {
            let fut = slot.as_mut().expect("a pending task");
            match fut.as_mut().poll(cx) {
                Poll::Ready(outcome) => {
                    *slot = None;
                    this.outcomes.push(outcome);
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        this.futures.clear();
        Poll::Ready(std::mem::take(&mut this.outcomes))
    }
}

impl<T> Drop for InOrderJoin<T> {
    fn drop(&mut self) {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        for fut in self.futures.iter_mut().flatten() {
            let _ = fut.as_mut().poll(&mut cx);
        }
    }
}

/// Polls every task in order and resolves with the first one ready; the
/// losers are dropped, which makes duroxide cancel them (activities see
/// cancellation, sub-orchestrations get a cancel request). Polling in order is
/// what duroxide's own `select2` does, so the winner is the same on replay.
pub(crate) struct SelectFirst<T> {
    futures: Vec<Task<T>>,
}

impl<T> SelectFirst<T> {
    pub(crate) fn new(futures: Vec<Task<T>>) -> Self {
        Self { futures }
    }
}

impl<T> Future for SelectFirst<T> {
    type Output = (usize, T);

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        for (index, fut) in self.futures.iter_mut().enumerate() {
            if let Poll::Ready(outcome) = fut.as_mut().poll(cx) {
                self.futures.clear();
                return Poll::Ready((index, outcome));
            }
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tasks whose results arrive when `ready` says, counting their polls,
    /// and recording which were dropped before they were seen done (what
    /// duroxide would cancel).
    struct Probe {
        ready: std::sync::Arc<std::sync::Mutex<Vec<bool>>>,
        polls: std::sync::Arc<std::sync::atomic::AtomicUsize>,
        dropped_pending: std::sync::Arc<std::sync::Mutex<Vec<usize>>>,
    }

    impl Probe {
        fn new(n: usize) -> Self {
            Self {
                ready: std::sync::Arc::new(std::sync::Mutex::new(vec![false; n])),
                polls: Default::default(),
                dropped_pending: Default::default(),
            }
        }

        fn tasks(&self) -> Vec<Task<usize>> {
            let n = self.ready.lock().unwrap().len();
            (0..n)
                .map(|i| {
                    let (ready, polls) = (self.ready.clone(), self.polls.clone());
                    let guard = DropGuard(i, self.dropped_pending.clone(), false);
                    let mut guard = Some(guard);
                    Box::pin(std::future::poll_fn(move |_| {
                        polls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if ready.lock().unwrap()[i] {
                            guard.as_mut().expect("polled after done").2 = true;
                            guard.take();
                            Poll::Ready(i)
                        } else {
                            Poll::Pending
                        }
                    })) as Task<usize>
                })
                .collect()
        }

        fn polls(&self) -> usize {
            self.polls.swap(0, std::sync::atomic::Ordering::Relaxed)
        }
    }

    /// Records task `.0` in `.1` when dropped before it was seen done.
    struct DropGuard(usize, std::sync::Arc<std::sync::Mutex<Vec<usize>>>, bool);

    impl Drop for DropGuard {
        fn drop(&mut self) {
            if !self.2 {
                self.1.lock().unwrap().push(self.0);
            }
        }
    }

    fn poll_once(f: &mut Pin<Box<InOrderJoin<usize>>>) -> Poll<Vec<usize>> {
        f.as_mut()
            .poll(&mut Context::from_waker(std::task::Waker::noop()))
    }

    #[test]
    fn an_in_order_join_gives_every_outcome_in_task_order_whatever_order_they_arrive_in() {
        let probe = Probe::new(6);
        let mut join = Box::pin(InOrderJoin::new(probe.tasks()));
        for i in [3, 5, 1, 0, 4] {
            probe.ready.lock().unwrap()[i] = true;
            assert!(poll_once(&mut join).is_pending());
        }
        probe.ready.lock().unwrap()[2] = true;
        let expected: Vec<usize> = (0..6).collect();
        assert_eq!(poll_once(&mut join), Poll::Ready(expected));
        drop(join);
        assert!(probe.dropped_pending.lock().unwrap().is_empty());
        assert_eq!(
            poll_once(&mut Box::pin(InOrderJoin::new(Vec::new()))),
            Poll::Ready(Vec::new())
        );
    }

    // Regression: duroxide's join polled every pending task at each of the
    // replay's polls, N × C polls in a turn of a fan-out of N with C done.
    #[test]
    fn an_in_order_join_polls_only_the_first_task_not_done() {
        let n = 10_000;
        let probe = Probe::new(n);
        let mut join = Box::pin(InOrderJoin::new(probe.tasks()));
        assert!(poll_once(&mut join).is_pending());
        assert_eq!(probe.polls(), 1);
        // Results arrive from the last task back to the second: every poll
        // looks at the first task only.
        for i in (1..n).rev() {
            probe.ready.lock().unwrap()[i] = true;
            assert!(poll_once(&mut join).is_pending());
        }
        assert_eq!(probe.polls(), n - 1);
        probe.ready.lock().unwrap()[0] = true;
        assert!(poll_once(&mut join).is_ready());
        assert_eq!(probe.polls(), n);
    }

    #[test]
    fn an_in_order_join_dropped_unfinished_marks_the_tasks_whose_results_arrived() {
        let probe = Probe::new(5);
        let mut join = Box::pin(InOrderJoin::new(probe.tasks()));
        for i in [1, 3] {
            probe.ready.lock().unwrap()[i] = true;
            assert!(poll_once(&mut join).is_pending());
        }
        drop(join);
        // As duroxide's join, which polled all of them: only those without
        // a result are dropped pending (and cancelled).
        let mut pending = probe.dropped_pending.lock().unwrap().clone();
        pending.sort_unstable();
        assert_eq!(pending, vec![0, 2, 4]);
    }
}
