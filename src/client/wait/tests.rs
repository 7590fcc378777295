//! Waits against a real SQLite file, counting the history reads that reach it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::{ExecutionMetadata, Provider, WorkItem};
use duroxide::runtime::OrchestrationStatus;
use duroxide::{Client, ClientError, Event, EventKind};

use super::{terminal, within};
use crate::providers::scratch::{self, Scratch};
use crate::providers::wakeup::ended::Endings;
use crate::providers::Backend;

const LEASE: Duration = Duration::from_secs(60);

struct Fixture {
    store: Arc<dyn Provider>,
    /// A client over a read counter over the store.
    client: Client,
    backend: Backend,
    reads: Arc<AtomicUsize>,
    endings: Arc<Endings>,
    _scratch: Scratch,
}

/// A store with `i1` started (not yet run), and a client over a read counter.
async fn fixture() -> Fixture {
    let scratch = scratch::one_start("dxwait", "").await;
    let (counted, reads) = scratch::counting_reads(scratch.store.clone());
    Fixture {
        store: scratch.store.clone(),
        client: Client::new(counted),
        backend: scratch.backend.clone(),
        reads,
        endings: Arc::default(),
        _scratch: scratch,
    }
}

/// One turn of `i1`: fetches what is queued and acks `delta` with `status`.
async fn turn(
    store: &Arc<dyn Provider>,
    delta: Vec<Event>,
    status: Option<&str>,
    output: Option<&str>,
) {
    let (_, token, _) = store
        .fetch_orchestration_item(LEASE, Duration::ZERO, None)
        .await
        .unwrap()
        .expect("a message for i1");
    let metadata = ExecutionMetadata {
        status: status.map(str::to_string),
        output: output.map(str::to_string),
        orchestration_name: Some("Orch".into()),
        orchestration_version: Some("1.0.0".into()),
        ..Default::default()
    };
    store
        .ack_orchestration_item(&token, 1, delta, vec![], vec![], metadata, vec![])
        .await
        .unwrap();
}

/// `i1` started and waiting for an external event.
async fn running(store: &Arc<dyn Provider>) {
    let started = scratch::started("1.0.0", "");
    turn(
        store,
        vec![Event::with_event_id(1, "i1", 1, None, started)],
        None,
        None,
    )
    .await;
}

/// Event `go` raised for `i1`: its next turn can run.
async fn raise_go(store: &Arc<dyn Provider>) {
    store
        .enqueue_for_orchestrator(
            WorkItem::ExternalRaised {
                instance: "i1".into(),
                name: "go".into(),
                data: String::new(),
            },
            None,
        )
        .await
        .unwrap();
}

async fn wait(f: &Fixture, ms: u64) -> Result<OrchestrationStatus, ClientError> {
    let ended = within(
        Duration::from_millis(ms),
        terminal(&f.client, &f.backend, &f.endings, "i1", || async { false }),
    )
    .await?;
    Ok(ended.expect("never missing"))
}

#[tokio::test]
async fn a_wait_on_a_running_then_completed_instance_reads_no_history() {
    let f = fixture().await;
    running(&f.store).await;
    assert!(matches!(wait(&f, 300).await, Err(ClientError::Timeout)));
    assert_eq!(
        f.reads.load(Ordering::Relaxed),
        0,
        "no history read while it runs"
    );

    raise_go(&f.store).await;
    let completed = EventKind::OrchestrationCompleted {
        output: "\"done\"".into(),
    };
    turn(
        &f.store,
        vec![Event::with_event_id(2, "i1", 1, None, completed)],
        Some("Completed"),
        Some("\"done\""),
    )
    .await;
    match wait(&f, 5000).await.unwrap() {
        OrchestrationStatus::Completed { output, .. } => assert_eq!(output, "\"done\""),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        f.reads.load(Ordering::Relaxed),
        0,
        "the execution row carries the output"
    );
}

#[tokio::test]
async fn a_wait_on_an_instance_not_started_yet_reads_the_history() {
    let f = fixture().await;
    assert!(matches!(wait(&f, 100).await, Err(ClientError::Timeout)));
    assert!(
        f.reads.load(Ordering::Relaxed) >= 1,
        "no execution row yet: duroxide reads the status"
    );
}

#[tokio::test]
async fn a_wait_on_a_failed_instance_reads_the_failure_from_the_history() {
    let f = fixture().await;
    running(&f.store).await;
    raise_go(&f.store).await;
    let details = duroxide::ErrorDetails::Application {
        kind: duroxide::AppErrorKind::OrchestrationFailed,
        message: "boom".into(),
        retryable: false,
    };
    let message = details.display_message();
    let failed = EventKind::OrchestrationFailed {
        details: details.clone(),
    };
    turn(
        &f.store,
        vec![Event::with_event_id(2, "i1", 1, None, failed)],
        Some("Failed"),
        Some(&message),
    )
    .await;
    match wait(&f, 5000).await.unwrap() {
        OrchestrationStatus::Failed { details: got, .. } => assert_eq!(got, details),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        f.reads.load(Ordering::Relaxed),
        1,
        "the row keeps only the message: the details come from the history"
    );
}
