//! The looks of one queue: which are skipped, and when.
use super::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A store fetch that finds an item (or nothing) and counts its calls.
fn counting(
    calls: &AtomicUsize,
    found: bool,
) -> impl Fn() -> std::future::Ready<Result<Option<()>, ProviderError>> + '_ {
    move || {
        calls.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Ok(found.then_some(())))
    }
}

fn who<'a>(filter: &'a str, owner: &'a str) -> Fetcher<'a> {
    Fetcher { filter, owner }
}

/// How many store calls `look` made, its fetch finding nothing.
async fn looks(signal: &Signal, look: Look, w: &Fetcher<'_>, calls: &AtomicUsize) -> usize {
    store_calls(signal, look, w, calls, false).await
}

/// How many store calls `look` made, its fetch finding an item.
async fn finds(signal: &Signal, look: Look, w: &Fetcher<'_>, calls: &AtomicUsize) -> usize {
    store_calls(signal, look, w, calls, true).await
}

async fn store_calls(
    signal: &Signal,
    look: Look,
    w: &Fetcher<'_>,
    calls: &AtomicUsize,
    found: bool,
) -> usize {
    let before = calls.load(Ordering::SeqCst);
    signal.look(look, w, &counting(calls, found)).await.unwrap();
    calls.load(Ordering::SeqCst) - before
}

#[tokio::test]
async fn a_woken_look_is_skipped_until_a_new_wake_up() {
    let signal = Signal::default();
    let calls = AtomicUsize::new(0);
    let f = who("f", "");
    signal.wake(Reach::Any, None);
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
    signal.wake(Reach::Any, None);
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
    signal.wake(Reach::Any, None);
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

    signal.wake(Reach::Any, None);
    assert_eq!(looks(&signal, Look::IfNew, &a, &calls).await, 1);
    assert_eq!(
        looks(&signal, Look::IfNew, &b, &calls).await,
        0,
        "an item outside sessions that slot a did not find is not there for slot b"
    );

    signal.wake(Reach::Owned, None);
    assert_eq!(looks(&signal, Look::IfNew, &a, &calls).await, 1);
    assert_eq!(
        looks(&signal, Look::IfNew, &b, &calls).await,
        1,
        "a session item may be slot b's alone"
    );

    signal.wake(Reach::Any, None);
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

#[tokio::test]
async fn a_fallback_tick_is_covered_by_recent_empty_looks_of_its_filter_and_owner() {
    let signal = Signal::default();
    let calls = AtomicUsize::new(0);
    let t0 = Instant::now();
    let since = |at: Instant| Look::Tick(Tick { any: at, own: at });
    assert_eq!(
        looks(&signal, Look::Always, &who("f", "b"), &calls).await,
        1
    );
    assert_eq!(
        looks(&signal, Look::Always, &who("f", "a"), &calls).await,
        1
    );
    assert_eq!(
        looks(&signal, since(t0), &who("f", "b"), &calls).await,
        0,
        "a's empty look this tick and b's own within the owner period cover b's tick"
    );
    let own_too_old = Look::Tick(Tick {
        any: t0,
        own: Instant::now(),
    });
    assert_eq!(
        looks(&signal, own_too_old, &who("f", "b"), &calls).await,
        1,
        "b's own empty look is older than the owner period: b looks"
    );
    let any_too_old = Look::Tick(Tick {
        any: Instant::now(),
        own: t0,
    });
    assert_eq!(
        looks(&signal, any_too_old, &who("f", "a"), &calls).await,
        1,
        "no empty look of the filter began this tick"
    );
    assert_eq!(
        looks(&signal, since(t0), &who("g", "a"), &calls).await,
        1,
        "another filter's looks do not cover it"
    );
    signal.wake(Reach::Any, None);
    assert_eq!(
        looks(&signal, since(t0), &who("f", "a"), &calls).await,
        1,
        "a wake-up since the empty looks"
    );
}

/// Two worker slots whose looks found nothing, then `announced` items
/// announced: the one woken, and the one back from work.
async fn two_idle_slots(
    signal: &Signal,
    calls: &AtomicUsize,
    announced: u64,
) -> (Fetcher<'static>, Fetcher<'static>) {
    let (woken, back) = (who("f", "slot-a"), who("f", "slot-b"));
    assert_eq!(looks(signal, Look::First, &woken, calls).await, 1);
    assert_eq!(looks(signal, Look::First, &back, calls).await, 1);
    signal.expect(Reach::Any, announced).woke(Fetched::Nothing);
    (woken, back)
}

/// A store fetch that finds an item once `release` is notified.
async fn finds_once_released(release: &tokio::sync::Notify) -> Result<Option<()>, ProviderError> {
    release.notified().await;
    Ok(Some(()))
}

/// A returning slot's look raced the woken look for the one item announced,
/// and one of the two found nothing: about one empty worker fetch per
/// activity of a hello run. On the worker queue it waits for the woken
/// look, and skips once that look found the item. How many store calls
/// the returning slot's look made while a woken look takes the item.
async fn returning_look_beside_a_woken_one(signal: Signal) -> usize {
    let calls = AtomicUsize::new(0);
    let (woken, back) = two_idle_slots(&signal, &calls, 1).await;
    let release = tokio::sync::Notify::new();
    let slow_find = || finds_once_released(&release);
    let (found, back_calls, ()) = tokio::join!(
        signal.look(Look::IfNew, &woken, &slow_find),
        looks(&signal, Look::First, &back, &calls),
        async {
            tokio::task::yield_now().await;
            release.notify_one();
        }
    );
    assert!(found.unwrap().is_some());
    back_calls
}

#[tokio::test]
async fn a_worker_slot_back_from_work_waits_for_the_woken_look_and_skips_what_it_found() {
    assert_eq!(
        returning_look_beside_a_woken_one(Signal::taking_turns()).await,
        0
    );
}

/// With more left than looks running (a fan-out), the returning slot does
/// not wait for them: its look finds an item while the woken one still runs.
#[tokio::test]
async fn a_worker_slot_back_from_work_looks_at_once_when_more_is_left_than_looks_run() {
    let signal = Signal::taking_turns();
    let calls = AtomicUsize::new(0);
    let (woken, back) = two_idle_slots(&signal, &calls, 2).await;
    let release = tokio::sync::Notify::new();
    let slow_find = || finds_once_released(&release);
    let (found, back_calls) = tokio::join!(signal.look(Look::IfNew, &woken, &slow_find), async {
        let back_calls = tokio::time::timeout(
            Duration::from_secs(5),
            finds(&signal, Look::First, &back, &calls),
        )
        .await;
        release.notify_one();
        back_calls
    });
    assert!(found.unwrap().is_some());
    assert_eq!(
        back_calls.expect("the returning look waited for the woken one"),
        1
    );
}

#[tokio::test]
async fn an_orchestration_slot_back_from_a_turn_looks_beside_the_woken_look() {
    assert_eq!(
        returning_look_beside_a_woken_one(Signal::default()).await,
        1
    );
}

mod count;
