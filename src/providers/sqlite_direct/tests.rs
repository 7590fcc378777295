//! On real SQLite files: the same calls through duroxide's store and through
//! this layer leave the same rows and return the same items.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::sqlite::SqliteProvider;
use duroxide::providers::{
    DispatcherCapabilityFilter, ExecutionMetadata, Provider, ProviderError,
    ScheduledActivityIdentifier, SessionFetchConfig, TagFilter, WorkItem,
};
use duroxide::{Event, EventKind};
use sqlx::{Row, SqlitePool};

use super::*;
use crate::provider_errors::ProviderFault;
use crate::providers::scratch;

pub(super) const LOCK: Duration = Duration::from_secs(30);

pub(super) struct Store {
    pub(super) store: Arc<dyn Provider>,
    pub(super) pool: SqlitePool,
    pub(super) path: std::path::PathBuf,
    dir: std::path::PathBuf,
}

impl Drop for Store {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub(super) async fn file_store(direct: bool) -> (Store, Option<Arc<DirectSqlite>>) {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("dxdirect-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.db");
    let url = format!("sqlite:{}?mode=rwc", path.display());
    let provider = SqliteProvider::new(&url, None).await.unwrap();
    let pool = provider.get_pool().clone();
    let (store, layer): (Arc<dyn Provider>, _) = if direct {
        let layer = Arc::new(
            DirectSqlite::open(path.to_str().unwrap(), &pool)
                .await
                .unwrap(),
        );
        (
            Arc::new(Stacked::new(layer.clone(), Arc::new(provider))),
            Some(layer),
        )
    } else {
        (Arc::new(provider), None)
    };
    (
        Store {
            store,
            pool,
            path,
            dir,
        },
        layer,
    )
}

pub(super) fn start(instance: &str) -> WorkItem {
    WorkItem::StartOrchestration {
        instance: instance.into(),
        orchestration: "Orch".into(),
        input: format!("in-{instance}"),
        version: Some("1.0.0".into()),
        parent_instance: None,
        parent_id: None,
        parent_execution_id: None,
        execution_id: 1,
    }
}

fn activity(instance: &str, id: u64, session: Option<&str>, tag: Option<&str>) -> WorkItem {
    WorkItem::ActivityExecute {
        instance: instance.into(),
        execution_id: 1,
        id,
        name: "Greet".into(),
        input: format!("a{id}"),
        session_id: session.map(Into::into),
        tag: tag.map(Into::into),
    }
}

pub(super) fn scheduled(
    instance: &str,
    id: u64,
    session: Option<&str>,
    tag: Option<&str>,
) -> Event {
    Event::with_event_id(
        id,
        instance,
        1,
        None,
        EventKind::ActivityScheduled {
            name: "Greet".into(),
            input: format!("a{id}"),
            session_id: session.map(Into::into),
            tag: tag.map(Into::into),
        },
    )
}

/// What a call returned, lock tokens left out (they are random).
pub(super) fn shown<T: std::fmt::Debug>(
    r: &Result<Option<(T, String, u32)>, ProviderError>,
) -> String {
    match r {
        Ok(Some((item, _, attempts))) => untimed(&format!("{item:?} attempts {attempts}")),
        other => format!("{:?}", other.as_ref().map(|_| ())),
    }
}

/// `s` with the digits after each `timestamp_ms` left out: events carry
/// the time the script made them.
fn untimed(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find("timestamp_ms") {
        let (head, tail) = rest.split_at(at + "timestamp_ms".len());
        out.push_str(head);
        rest = tail.trim_start_matches(|c: char| !c.is_ascii_digit() && c != ',' && c != '}');
        rest = rest.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out + rest
}

/// Runs the same calls against `s` and returns what each returned; every
/// branch of the fetches and acks this layer runs is taken once at least.
async fn script(s: &Store) -> Vec<String> {
    let store = &s.store;
    let mut log = Vec::new();
    let filter = DispatcherCapabilityFilter::default_for_current_build();
    let no_versions = DispatcherCapabilityFilter {
        supported_duroxide_versions: vec![],
    };
    let turn = |f: Option<&'static DispatcherCapabilityFilter>| {
        let store = store.clone();
        async move {
            store
                .fetch_orchestration_item(LOCK, Duration::ZERO, f)
                .await
        }
    };
    let filter: &'static DispatcherCapabilityFilter = Box::leak(Box::new(filter));
    let no_versions: &'static DispatcherCapabilityFilter = Box::leak(Box::new(no_versions));

    log.push(shown(&turn(Some(filter)).await)); // empty queue
    for i in ["i1", "i2", "i4"] {
        store
            .enqueue_for_orchestrator(start(i), None)
            .await
            .unwrap();
    }
    let later = start("i3");
    store
        .enqueue_for_orchestrator(later, Some(Duration::from_secs(3600)))
        .await
        .unwrap();
    log.push(shown(&turn(Some(no_versions)).await)); // supports nothing

    // i1's first turn: schedules three activities (plain, tagged, in a session).
    let first = turn(Some(filter)).await;
    log.push(shown(&first));
    let (item, token, _) = first.unwrap().unwrap();
    let started = scratch::started("1.0.0", &format!("in-{}", item.instance));
    let delta = vec![
        Event::with_event_id(1, &item.instance, 1, None, started),
        scheduled(&item.instance, 2, None, None),
        scheduled(&item.instance, 3, None, Some("gpu")),
        scheduled(&item.instance, 4, Some("s1"), None),
        scheduled(&item.instance, 5, None, Some("never")),
    ];
    let work = vec![
        activity(&item.instance, 2, None, None),
        activity(&item.instance, 3, None, Some("gpu")),
        activity(&item.instance, 4, Some("s1"), None),
        activity(&item.instance, 5, None, Some("never")),
    ];
    let metadata = ExecutionMetadata {
        orchestration_name: Some("Orch".into()),
        orchestration_version: Some("1.0.0".into()),
        ..Default::default()
    };
    store
        .ack_orchestration_item(&token, 1, delta, work, vec![], metadata, vec![])
        .await
        .unwrap();

    // i2's first turn without a filter, then given back (abandoned).
    let second = turn(None).await;
    log.push(shown(&second));
    let (_, token2, _) = second.unwrap().unwrap();
    store
        .abandon_orchestration_item(&token2, None, false)
        .await
        .unwrap();

    // Activities: untagged, then the tag, then the session.
    let default_only = TagFilter::DefaultOnly;
    let gpu = TagFilter::Tags(["gpu".to_string()].into());
    let session = SessionFetchConfig {
        owner_id: "w1".into(),
        lock_timeout: LOCK,
    };
    let other = SessionFetchConfig {
        owner_id: "w2".into(),
        lock_timeout: LOCK,
    };
    let plain = store
        .fetch_work_item(LOCK, Duration::ZERO, None, &default_only)
        .await;
    log.push(shown(&plain));
    let tagged = store
        .fetch_work_item(LOCK, Duration::ZERO, None, &gpu)
        .await;
    log.push(shown(&tagged));
    log.push(shown(
        &store
            .fetch_work_item(LOCK, Duration::ZERO, None, &TagFilter::None)
            .await,
    ));
    let owned = store
        .fetch_work_item(LOCK, Duration::ZERO, Some(&session), &TagFilter::Any)
        .await;
    log.push(shown(&owned));
    let (_, owned_token, _) = owned.unwrap().unwrap();
    // Given back, then asked for by another worker while w1 holds the session.
    store
        .abandon_work_item(&owned_token, None, false)
        .await
        .unwrap();
    log.push(shown(
        &store
            .fetch_work_item(LOCK, Duration::ZERO, Some(&other), &TagFilter::Any)
            .await,
    ));
    let owned = store
        .fetch_work_item(LOCK, Duration::ZERO, Some(&session), &TagFilter::Any)
        .await;
    log.push(shown(&owned));

    let completed = |id: u64| WorkItem::ActivityCompleted {
        instance: "i1".into(),
        execution_id: 1,
        id,
        result: format!("r{id}"),
    };
    let (_, t, _) = plain.unwrap().unwrap();
    store.ack_work_item(&t, Some(completed(2))).await.unwrap();
    log.push(format!(
        "{:?}",
        store.ack_work_item(&t, Some(completed(2))).await
    ));
    let (_, t, _) = tagged.unwrap().unwrap();
    log.push(format!(
        "{:?}",
        store.ack_work_item(&t, Some(start("i9"))).await
    ));
    store.ack_work_item(&t, None).await.unwrap();
    let (_, t, _) = owned.unwrap().unwrap();
    store.ack_work_item(&t, Some(completed(4))).await.unwrap();

    // Key-values and a history row that does not parse, for the next turns.
    for sql in [
        "INSERT INTO kv_store (instance_id, key, value, last_updated_at_ms) VALUES ('i1', 'k', 'v', 7)",
        "INSERT INTO instances (instance_id, orchestration_name, orchestration_version, current_execution_id) VALUES ('i4', 'Orch', '1.0.0', 1)",
        "INSERT INTO executions (instance_id, execution_id, status) VALUES ('i4', 1, 'Running')",
        "INSERT INTO history (instance_id, execution_id, event_id, event_type, event_data) VALUES ('i4', 1, 1, 'OrchestrationStarted', '{not json')",
    ] {
        sqlx::query(sql).execute(&s.pool).await.unwrap();
    }
    // i1 with its results, history and key-values; i2 again; then i4,
    // whose history does not parse.
    let mut tokens = std::collections::HashMap::new();
    for _ in 0..3 {
        let fetched = turn(Some(filter)).await;
        log.push(shown(&fetched));
        let (item, token, _) = fetched.unwrap().unwrap();
        tokens.insert(item.instance, token);
    }
    log.extend(acks(s, &tokens).await);

    // Events for instances that never started: a queue message is dropped,
    // an external event waits.
    let orphan = WorkItem::QueueMessage {
        instance: "o1".into(),
        name: "q".into(),
        data: "d".into(),
    };
    store.enqueue_for_orchestrator(orphan, None).await.unwrap();
    log.push(shown(&turn(None).await));
    let early = WorkItem::ExternalRaised {
        instance: "o2".into(),
        name: "e".into(),
        data: "d".into(),
    };
    store.enqueue_for_orchestrator(early, None).await.unwrap();
    log.push(shown(&turn(None).await));
    log
}

fn event(instance: &str, id: u64, kind: EventKind) -> Event {
    Event::with_event_id(id, instance, 1, None, kind)
}

/// The acks of i1's second turn (terminal, with key-values, custom status,
/// a cancelled activity, a timer, a child and an event), of i2's (its lock
/// expired) and of a token nobody holds; then the next turn's (pinned,
/// with a parent, every key-value cleared, continued as new).
async fn acks(s: &Store, tokens: &std::collections::HashMap<String, String>) -> Vec<String> {
    let store = &s.store;
    let mut log = Vec::new();
    let set = |key: &str, value: &str| EventKind::KeyValueSet {
        key: key.into(),
        value: value.into(),
        last_updated_at_ms: 11,
    };
    let zero = vec![Event::with_event_id(
        0,
        "i1",
        1,
        None,
        EventKind::CustomStatusUpdated { status: None },
    )];
    let metadata = ExecutionMetadata::default();
    log.push(format!(
        "{:?}",
        store
            .ack_orchestration_item(&tokens["i1"], 1, zero, vec![], vec![], metadata, vec![])
            .await
    ));
    let delta = vec![
        event("i1", 6, set("k2", "v2")),
        event("i1", 7, EventKind::KeyValueCleared { key: "k".into() }),
        event(
            "i1",
            8,
            EventKind::CustomStatusUpdated {
                status: Some("cs".into()),
            },
        ),
        event(
            "i1",
            9,
            EventKind::OrchestrationCompleted {
                output: "done".into(),
            },
        ),
    ];
    let child = WorkItem::StartOrchestration {
        instance: "i1-c".into(),
        orchestration: "Orch".into(),
        input: "c".into(),
        version: Some("1.0.0".into()),
        parent_instance: Some("i1".into()),
        parent_id: Some(10),
        parent_execution_id: Some(1),
        execution_id: 1,
    };
    let timer = WorkItem::TimerFired {
        instance: "i1".into(),
        execution_id: 1,
        id: 11,
        fire_at_ms: 4_000_000_000_000,
    };
    let raised = WorkItem::ExternalRaised {
        instance: "i2".into(),
        name: "e".into(),
        data: "x".into(),
    };
    let skipped = activity("i1", 12, None, None);
    let metadata = ExecutionMetadata {
        status: Some("Completed".into()),
        output: Some("done".into()),
        ..Default::default()
    };
    let cancelled = vec![ScheduledActivityIdentifier {
        instance: "i1".into(),
        execution_id: 1,
        activity_id: 5,
    }];
    store
        .ack_orchestration_item(
            &tokens["i1"],
            1,
            delta,
            vec![],
            vec![child, timer, raised, skipped],
            metadata,
            cancelled,
        )
        .await
        .unwrap();

    sqlx::query("UPDATE instance_locks SET locked_until = 0 WHERE lock_token = ?")
        .bind(&tokens["i2"])
        .execute(&s.pool)
        .await
        .unwrap();
    let cleared = vec![event(
        "i2",
        1,
        EventKind::CustomStatusUpdated { status: None },
    )];
    log.push(format!(
        "{:?}",
        store
            .ack_orchestration_item(
                &tokens["i2"],
                1,
                cleared,
                vec![],
                vec![],
                ExecutionMetadata::default(),
                vec![]
            )
            .await
    ));
    log.push(format!(
        "{:?}",
        store
            .ack_orchestration_item(
                "lock_nobody",
                1,
                vec![],
                vec![],
                vec![],
                ExecutionMetadata::default(),
                vec![]
            )
            .await
    ));

    let fetched = store
        .fetch_orchestration_item(LOCK, Duration::ZERO, None)
        .await;
    log.push(shown(&fetched));
    let (item, token, _) = fetched.unwrap().unwrap();
    let delta = vec![
        event(&item.instance, 1, scratch::started("1.0.0", "c")),
        event(&item.instance, 2, set("a", "1")),
        event(&item.instance, 3, EventKind::KeyValuesCleared),
        event(
            &item.instance,
            4,
            EventKind::CustomStatusUpdated { status: None },
        ),
    ];
    sqlx::query("INSERT INTO kv_store (instance_id, key, value, last_updated_at_ms) VALUES (?, 'old', 'o', 1)")
        .bind(&item.instance)
        .execute(&s.pool)
        .await
        .unwrap();
    let metadata = ExecutionMetadata {
        status: Some("ContinuedAsNew".into()),
        orchestration_name: Some("Orch".into()),
        orchestration_version: Some("1.0.0".into()),
        parent_instance_id: Some("i1".into()),
        pinned_duroxide_version: Some(semver::Version::new(0, 1, 32)),
        ..Default::default()
    };
    store
        .ack_orchestration_item(&token, 1, delta, vec![], vec![], metadata, vec![])
        .await
        .unwrap();
    log
}

/// Every row the calls touch, times and lock tokens left out.
pub(super) async fn rows(pool: &SqlitePool) -> Vec<String> {
    let mut out = Vec::new();
    for sql in [
        "SELECT instance_id, work_item, attempt_count, lock_token IS NULL FROM orchestrator_queue ORDER BY id",
        "SELECT work_item, attempt_count, lock_token IS NULL, instance_id, activity_id, session_id, tag FROM worker_queue ORDER BY id",
        "SELECT instance_id FROM instance_locks ORDER BY instance_id",
        "SELECT session_id, worker_id FROM sessions ORDER BY session_id",
        "SELECT instance_id, orchestration_name, orchestration_version, current_execution_id, parent_instance_id, custom_status, custom_status_version FROM instances ORDER BY instance_id",
        "SELECT instance_id, execution_id, status, output, completed_at IS NULL, duroxide_version_major, duroxide_version_minor, duroxide_version_patch FROM executions ORDER BY instance_id, execution_id",
        "SELECT instance_id, key, value, last_updated_at_ms FROM kv_store ORDER BY instance_id, key",
        "SELECT instance_id, key, value FROM kv_delta ORDER BY instance_id, key",
        "SELECT instance_id, work_item, visible_at FROM orchestrator_queue WHERE work_item LIKE '%TimerFired%'",
        "SELECT instance_id, event_id, event_type, event_data FROM history ORDER BY instance_id, event_id",
    ] {
        for row in sqlx::query(sql).fetch_all(pool).await.unwrap() {
            let cols: Vec<String> = (0..row.len())
                .map(|i| {
                    row.try_get::<Option<String>, _>(i)
                        .map(|v| format!("{v:?}"))
                        .or_else(|_| row.try_get::<Option<i64>, _>(i).map(|v| format!("{v:?}")))
                        .unwrap()
                })
                .collect();
            out.push(untimed(&format!("{sql}: {}", cols.join(" | "))));
        }
    }
    out
}

#[tokio::test]
async fn direct_calls_return_and_store_what_the_crate_does() {
    let (crate_side, _) = file_store(false).await;
    let (direct_side, layer) = file_store(true).await;
    let expected = script(&crate_side).await;
    let got = script(&direct_side).await;
    for (e, g) in expected.iter().zip(&got) {
        assert_eq!(e, g);
    }
    assert_eq!(expected.len(), got.len());
    assert!(
        expected
            .iter()
            .any(|l| l.contains("Failed to deserialize history")),
        "the script reaches the history error"
    );
    assert_eq!(rows(&crate_side.pool).await, rows(&direct_side.pool).await);
    // The fetches, acks and enqueues above, by this layer.
    assert_eq!(layer.unwrap().served(), 32);
}

#[tokio::test]
async fn another_processs_writer_is_a_busy_error_the_retry_layer_retries() {
    let (s, _) = file_store(true).await;
    let other = Connection::open(&s.path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let waited = tokio::time::timeout(
        Duration::from_secs(5),
        s.store.enqueue_for_orchestrator(start("b1"), None),
    )
    .await
    .expect("the call does not wait for the other writer");
    let err = waited.unwrap_err();
    assert!(err.is_retryable(), "{err}");
    assert!(ProviderFault::is(&err, ProviderFault::SqliteBusy), "{err}");
    other.execute_batch("COMMIT").unwrap();
    s.store
        .enqueue_for_orchestrator(start("b1"), None)
        .await
        .unwrap();
}
