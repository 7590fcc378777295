//! Looks skipped by count: the items this process's calls announce, found
//! by looks, and what an empty look leaves counted.
use super::*;

#[tokio::test]
async fn once_every_counted_item_is_found_woken_and_returning_looks_are_skipped() {
    let signal = Signal::default();
    let calls = AtomicUsize::new(0);
    let (a, b) = (who("f", "slot-a"), who("f", "slot-b"));
    // Nothing is known before the first empty look: a slot back from
    // work looks (a backlog from before the process started).
    assert_eq!(finds(&signal, Look::First, &a, &calls).await, 1);
    assert_eq!(finds(&signal, Look::First, &a, &calls).await, 1);
    assert_eq!(looks(&signal, Look::First, &a, &calls).await, 1);
    assert_eq!(looks(&signal, Look::First, &b, &calls).await, 1);

    signal.wake(Reach::Any, Some(2));
    assert_eq!(finds(&signal, Look::IfNew, &a, &calls).await, 1);
    assert_eq!(
        finds(&signal, Look::IfNew, &b, &calls).await,
        1,
        "one of the two announced items is still unfound"
    );
    signal.wake(Reach::Any, Some(1));
    assert_eq!(finds(&signal, Look::IfNew, &a, &calls).await, 1);
    for (look, w) in [(Look::IfNew, &b), (Look::First, &a), (Look::First, &b)] {
        assert_eq!(
            looks(&signal, look, w, &calls).await,
            0,
            "all three announced items were found"
        );
    }
    assert_eq!(
        looks(&signal, Look::First, &who("f", "slot-c"), &calls).await,
        1,
        "an owner that never found nothing may have session items waiting"
    );
    assert_eq!(
        looks(&signal, Look::Always, &a, &calls).await,
        1,
        "a look for a time still runs"
    );
}

#[tokio::test]
async fn an_uncounted_wake_up_or_a_second_filter_ends_skipping_by_count() {
    let signal = Signal::default();
    let calls = AtomicUsize::new(0);
    let f = who("f", "");
    assert_eq!(looks(&signal, Look::First, &f, &calls).await, 1);
    signal.wake(Reach::Any, Some(1));
    signal.wake(Reach::Owned, None);
    assert_eq!(finds(&signal, Look::IfNew, &f, &calls).await, 1);
    assert_eq!(
        looks(&signal, Look::First, &f, &calls).await,
        1,
        "another process's notification does not say how many"
    );

    signal.wake(Reach::Any, Some(1));
    assert_eq!(finds(&signal, Look::IfNew, &f, &calls).await, 1);
    assert_eq!(looks(&signal, Look::First, &f, &calls).await, 0);
    assert_eq!(looks(&signal, Look::Always, &who("g", ""), &calls).await, 1);
    signal.wake(Reach::Any, Some(1));
    assert_eq!(finds(&signal, Look::IfNew, &f, &calls).await, 1);
    assert_eq!(
        looks(&signal, Look::First, &f, &calls).await,
        1,
        "with two filters an item found by one may be the other's"
    );
}

/// Regression: an empty look that ran while a call was committing its
/// items set the count to zero; the call's wake-up then said nothing was
/// left, and the woken looks were skipped until the fallback tick.
#[tokio::test]
async fn an_empty_look_while_a_counted_call_commits_does_not_cover_its_items() {
    let signal = Signal::default();
    let calls = AtomicUsize::new(0);
    let f = who("f", "");
    assert_eq!(looks(&signal, Look::First, &f, &calls).await, 1);
    let committing = signal.expect(Reach::Any, 1);
    // The look's fetch ran before the commit.
    assert_eq!(looks(&signal, Look::Always, &f, &calls).await, 1);
    committing.woke(Fetched::Maybe);
    assert_eq!(
        finds(&signal, Look::IfNew, &f, &calls).await,
        1,
        "the woken look runs and finds the committed item"
    );
    assert_eq!(
        looks(&signal, Look::First, &f, &calls).await,
        1,
        "a call in flight during an empty look may have fetched an item announced before: one look for it"
    );
    assert_eq!(
        looks(&signal, Look::First, &f, &calls).await,
        0,
        "then every counted item is found"
    );
}

/// An item found between its call's commit and its wake-up is counted
/// off against itself.
#[tokio::test]
async fn an_item_found_before_its_wake_up_is_counted_off_once() {
    let signal = Signal::default();
    let calls = AtomicUsize::new(0);
    let f = who("f", "");
    assert_eq!(looks(&signal, Look::First, &f, &calls).await, 1);
    let committing = signal.expect(Reach::Any, 1);
    // A look that always runs (the fallback tick) takes it first.
    assert_eq!(finds(&signal, Look::Always, &f, &calls).await, 1);
    committing.woke(Fetched::Maybe);
    assert_eq!(
        looks(&signal, Look::IfNew, &f, &calls).await,
        0,
        "nothing counted is left to look for"
    );
}

/// Regression: under load some counted call is always in flight, and each
/// slot back from work looked at the store for that call's items, which no
/// look can take before the call's wake-up (one empty worker fetch per
/// activity of a hello run).
#[tokio::test]
async fn the_items_of_a_call_in_flight_uncover_no_look_before_its_wake_up() {
    let signal = Signal::default();
    let calls = AtomicUsize::new(0);
    let (a, b) = (who("f", "slot-a"), who("f", "slot-b"));
    assert_eq!(looks(&signal, Look::First, &a, &calls).await, 1);
    assert_eq!(looks(&signal, Look::First, &b, &calls).await, 1);
    // Two turns ack; the first one's wake-up comes while the second commits.
    let first = signal.expect(Reach::Any, 1);
    let second = signal.expect(Reach::Any, 1);
    first.woke(Fetched::Maybe);
    assert_eq!(finds(&signal, Look::IfNew, &a, &calls).await, 1);
    assert_eq!(
        looks(&signal, Look::First, &b, &calls).await,
        0,
        "the second call's item cannot be taken before its wake-up"
    );
    second.woke(Fetched::Maybe);
    assert_eq!(finds(&signal, Look::IfNew, &b, &calls).await, 1);
    assert_eq!(looks(&signal, Look::First, &a, &calls).await, 0);
}

/// Regression: the count recovered only from an empty look during which no
/// wake-up came, so under steady load it stayed unknown and every look ran.
#[tokio::test]
async fn an_empty_look_during_counted_wake_ups_sets_the_count() {
    let signal = Signal::default();
    let calls = AtomicUsize::new(0);
    let f = who("f", "");
    // Unknown count: another process's notification.
    signal.wake(Reach::Any, None);
    // While the look's fetch runs, a call of this process commits an item.
    let during = || {
        calls.fetch_add(1, Ordering::SeqCst);
        signal.expect(Reach::Any, 1).woke(Fetched::Maybe);
        std::future::ready(Ok::<Option<()>, ProviderError>(None))
    };
    signal.look(Look::IfNew, &f, &during).await.unwrap();
    assert_eq!(
        finds(&signal, Look::IfNew, &f, &calls).await,
        1,
        "the item committed during the empty look is still to be found"
    );
    assert_eq!(
        looks(&signal, Look::First, &f, &calls).await,
        1,
        "and one the call may have fetched"
    );
    assert_eq!(
        looks(&signal, Look::First, &f, &calls).await,
        0,
        "then nothing counted is left"
    );
}

/// Regression: an empty look set the count, then a look that began before
/// it and took an item it had already left out counted that item off
/// again; an announced item was then taken for found and waited for the
/// fallback tick (a Postgres hello run stalled 1 s about one time in three).
#[tokio::test]
async fn a_find_by_a_look_begun_before_an_empty_one_is_not_counted_off_twice() {
    let signal = Signal::default();
    let calls = AtomicUsize::new(0);
    let f = who("f", "");
    assert_eq!(looks(&signal, Look::First, &f, &calls).await, 1);
    // One item committed and announced, one more in a call still in flight.
    signal.expect(Reach::Any, 1).woke(Fetched::Maybe);
    let in_flight = signal.expect(Reach::Any, 1);
    let release = tokio::sync::Notify::new();
    // The first look takes the committed item, and returns after the second.
    let slow = || async {
        release.notified().await;
        Ok::<_, ProviderError>(Some(()))
    };
    let first = signal.look(Look::Always, &f, &slow);
    let second = async {
        let calls = looks(&signal, Look::Always, &f, &calls).await;
        release.notify_one();
        calls
    };
    let (found, second_calls) = tokio::join!(first, second);
    assert!(found.unwrap().is_some());
    assert_eq!(second_calls, 1, "the second look found nothing");
    in_flight.woke(Fetched::Maybe);
    assert_eq!(
        finds(&signal, Look::IfNew, &f, &calls).await,
        1,
        "the item of the call that was in flight is still to be found"
    );
}

/// Regression: an ack in flight that fetched the next item in the same call
/// (`history_tail/ride.rs`) took an item announced before it; an empty look
/// meanwhile (the item locked, the ack's own not committed) set the count to
/// the ack's one item, the slot handed the fetched item counted it off, and
/// the ack's own item waited for the fallback tick (a Postgres hello run
/// stalled 1 s about one time in three).
#[tokio::test]
async fn an_empty_look_while_an_ack_may_have_fetched_an_announced_item_leaves_it_counted() {
    let signal = Signal::default();
    let calls = AtomicUsize::new(0);
    let (a, b) = (who("f", "slot-a"), who("f", "slot-b"));
    assert_eq!(looks(&signal, Look::First, &a, &calls).await, 1);
    assert_eq!(looks(&signal, Look::First, &b, &calls).await, 1);
    // An item committed and announced; then an ack that takes it while it
    // commits its own.
    signal.expect(Reach::Any, 1).woke(Fetched::Maybe);
    let ack = signal.expect(Reach::Any, 1);
    assert_eq!(
        looks(&signal, Look::Always, &a, &calls).await,
        1,
        "both items out of sight"
    );
    ack.woke(Fetched::Maybe);
    assert_eq!(
        finds(&signal, Look::IfNew, &a, &calls).await,
        1,
        "the item the ack fetched"
    );
    assert_eq!(
        finds(&signal, Look::IfNew, &b, &calls).await,
        1,
        "the ack's own item is still to be found"
    );
}

/// The allowance an empty look makes for a call in flight (one item it may
/// have fetched) goes once the call lands having fetched nothing: an
/// enqueue, or an ack that rode no fetch. Before, every such call left a
/// look that found nothing, and every such look set the count again with
/// the calls then in flight: 131 of 174 returning worker slots looked in
/// vain in a SQLite run of 200 hellos, where no call ever fetches.
#[tokio::test]
async fn an_empty_look_during_a_call_that_fetched_nothing_costs_no_extra_look() {
    let signal = Signal::default();
    let calls = AtomicUsize::new(0);
    let f = who("f", "");
    assert_eq!(looks(&signal, Look::First, &f, &calls).await, 1);
    let enqueue = signal.expect(Reach::Any, 1);
    assert_eq!(
        looks(&signal, Look::Always, &f, &calls).await,
        1,
        "the item is not committed yet"
    );
    enqueue.woke(Fetched::Nothing);
    assert_eq!(finds(&signal, Look::IfNew, &f, &calls).await, 1);
    assert_eq!(
        looks(&signal, Look::First, &f, &calls).await,
        0,
        "nothing counted is left"
    );
}

/// The same for a call that lands while the empty look runs: the look's
/// count leaves out the allowance of the calls that landed meanwhile having
/// fetched nothing (the calls of `an_empty_look_during_counted_wake_ups_sets_the_count`
/// may have fetched, and so cost one more look).
#[tokio::test]
async fn a_call_that_fetched_nothing_and_landed_during_an_empty_look_costs_no_extra_look() {
    let signal = Signal::default();
    let calls = AtomicUsize::new(0);
    let f = who("f", "");
    assert_eq!(looks(&signal, Look::First, &f, &calls).await, 1);
    let during = || {
        calls.fetch_add(1, Ordering::SeqCst);
        signal.expect(Reach::Any, 1).woke(Fetched::Nothing);
        std::future::ready(Ok::<Option<()>, ProviderError>(None))
    };
    signal.look(Look::Always, &f, &during).await.unwrap();
    assert_eq!(finds(&signal, Look::IfNew, &f, &calls).await, 1);
    assert_eq!(looks(&signal, Look::First, &f, &calls).await, 0);
}

/// Taking back the allowance of calls that fetched nothing leaves that of
/// an ack in flight that may have fetched: of an item announced before, the
/// ack's own item and an enqueue's, every one is still looked for.
#[tokio::test]
async fn calls_that_fetched_nothing_leave_the_allowance_of_an_ack_that_may_have() {
    let signal = Signal::default();
    let calls = AtomicUsize::new(0);
    let (a, b) = (who("f", "slot-a"), who("f", "slot-b"));
    assert_eq!(looks(&signal, Look::First, &a, &calls).await, 1);
    assert_eq!(looks(&signal, Look::First, &b, &calls).await, 1);
    signal.expect(Reach::Any, 1).woke(Fetched::Nothing);
    let ack = signal.expect(Reach::Any, 1);
    let enqueue = signal.expect(Reach::Any, 1);
    assert_eq!(
        looks(&signal, Look::Always, &a, &calls).await,
        1,
        "the announced item is locked by the ack, the others not committed"
    );
    enqueue.woke(Fetched::Nothing);
    ack.woke(Fetched::Maybe);
    assert_eq!(
        finds(&signal, Look::Always, &a, &calls).await,
        1,
        "the item the ack fetched, handed over"
    );
    assert_eq!(finds(&signal, Look::IfNew, &b, &calls).await, 1);
    assert_eq!(finds(&signal, Look::IfNew, &a, &calls).await, 1);
    assert_eq!(looks(&signal, Look::First, &b, &calls).await, 0);
}
