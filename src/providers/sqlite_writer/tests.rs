//! On real SQLite files of their own.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::sqlite::SqliteProvider;
use duroxide::providers::{ExecutionMetadata, Provider, ProviderError, WorkItem};
use duroxide::Event;

use super::*;
use crate::provider_errors::ProviderFault;
use crate::providers::layer::FORWARDED;
use crate::providers::scratch;

/// The calls that only read; with [`WRITES`], every forwarded call.
const READS: &[&str] = &[
    "read",
    "read_with_execution",
    "get_custom_status",
    "get_kv_value",
    "get_kv_all_values",
    "get_instance_stats",
    "list_instances",
    "list_instances_by_status",
    "list_executions",
    "read_history_with_execution_id",
    "read_history",
    "latest_execution_id",
    "get_instance_info",
    "get_execution_info",
    "get_system_metrics",
    "get_queue_depths",
    "list_children",
    "get_parent_id",
    "get_instance_tree",
];

#[test]
fn every_call_is_a_write_or_a_read() {
    let mut classified: Vec<&str> = WRITES.iter().chain(READS).copied().collect();
    classified.extend(["name", "version", "as_management_capability"]);
    classified.sort_unstable();
    let mut forwarded = FORWARDED.to_vec();
    forwarded.sort_unstable();
    assert_eq!(
        classified, forwarded,
        "a call of the duroxide release in Cargo.lock is missing from WRITES or READS here"
    );
}

async fn file_store() -> (Arc<dyn Provider>, std::path::PathBuf) {
    let dir =
        std::env::temp_dir().join(format!("dxwriter-{}-{}", std::process::id(), rand_suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite:{}?mode=rwc", dir.join("t.db").display());
    let store: Arc<dyn Provider> = Arc::new(SqliteProvider::new(&url, None).await.unwrap());
    (store, dir)
}

fn rand_suffix() -> u32 {
    static N: AtomicUsize = AtomicUsize::new(0);
    N.fetch_add(1, Ordering::Relaxed) as u32
}

/// Counts `r` if it is a busy error; any other error fails the test.
fn count<T>(r: &Result<T, ProviderError>, busy: &AtomicUsize) {
    if let Err(e) = r {
        assert!(ProviderFault::is(e, ProviderFault::SqliteBusy), "{e}");
        busy.fetch_add(1, Ordering::Relaxed);
    }
}

/// Busy errors the calls of `workers` concurrent tasks met: each starts
/// instances and runs their turns (fetch, ack), as dispatchers and clients do.
async fn busy_errors(store: Arc<dyn Provider>, workers: usize, rounds: usize) -> usize {
    let busy = Arc::new(AtomicUsize::new(0));
    let tasks: Vec<_> = (0..workers)
        .map(|w| {
            let (store, busy) = (store.clone(), busy.clone());
            tokio::spawn(async move {
                for r in 0..rounds {
                    let instance = format!("w{w}-{r}");
                    let start = WorkItem::StartOrchestration {
                        instance: instance.clone(),
                        orchestration: "Orch".into(),
                        input: String::new(),
                        version: Some("1.0.0".into()),
                        parent_instance: None,
                        parent_id: None,
                        parent_execution_id: None,
                        execution_id: 1,
                    };
                    count(&store.enqueue_for_orchestrator(start, None).await, &busy);
                    let fetched = store
                        .fetch_orchestration_item(Duration::from_secs(30), Duration::ZERO, None)
                        .await;
                    count(&fetched, &busy);
                    let Ok(Some((item, token, _))) = fetched else {
                        continue;
                    };
                    let started = scratch::started("1.0.0", "");
                    let delta = vec![Event::with_event_id(1, &item.instance, 1, None, started)];
                    let metadata = ExecutionMetadata {
                        orchestration_name: Some("Orch".into()),
                        orchestration_version: Some("1.0.0".into()),
                        ..Default::default()
                    };
                    let acked = store
                        .ack_orchestration_item(&token, 1, delta, vec![], vec![], metadata, vec![])
                        .await;
                    count(&acked, &busy);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    busy.load(Ordering::Relaxed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writing_calls_taken_one_at_a_time_meet_no_busy_errors() {
    let (plain, plain_dir) = file_store().await;
    assert!(
        busy_errors(plain, 8, 25).await > 0,
        "the workload does not make the store busy, so it shows nothing"
    );
    let (store, dir) = file_store().await;
    assert_eq!(busy_errors(with_one_writer(store), 8, 25).await, 0);
    for d in [plain_dir, dir] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[tokio::test]
async fn reads_run_while_a_writing_call_holds_the_lock() {
    let (store, dir) = file_store().await;
    let writer = Arc::new(Policy(OneWriter::default()));
    let stacked: Arc<dyn Provider> = Arc::new(Stacked::new(writer.clone(), store));
    let held = writer.0.lock.lock().await;
    let read = tokio::time::timeout(Duration::from_secs(5), stacked.read("nobody")).await;
    assert!(matches!(read, Ok(Ok(events)) if events.is_empty()));
    let tags = duroxide::providers::TagFilter::default();
    let fetch = |within: Duration| {
        tokio::time::timeout(
            within,
            stacked.fetch_work_item(Duration::from_secs(30), Duration::ZERO, None, &tags),
        )
    };
    assert!(
        fetch(Duration::from_millis(200)).await.is_err(),
        "a writing call waits for the lock"
    );
    drop(held);
    assert!(matches!(fetch(Duration::from_secs(5)).await, Ok(Ok(None))));
    let _ = std::fs::remove_dir_all(dir);
}
