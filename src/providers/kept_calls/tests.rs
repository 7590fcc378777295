//! The layer on a real Postgres schema of its own: its calls write what the
//! crate's write, and fail as the crate's fail.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use duroxide::providers::{ExecutionMetadata, Provider, WorkItem};
use duroxide::runtime::registry::ActivityRegistry;
use duroxide::runtime::{Runtime, RuntimeOptions};
use duroxide::{
    ActivityContext, Client, OrchestrationContext, OrchestrationRegistry, OrchestrationStatus,
};
use duroxide_pg::PostgresProvider;

use super::{KeptCalls, KeptConnections};
use crate::provider_errors::ProviderFault;
use crate::providers::layer::Stacked;
use crate::providers::scratch::database_url as url;

/// The crate's store and the layer over it, on a schema of their own.
struct Schema {
    name: String,
    pool: sqlx::PgPool,
    pg: Arc<dyn Provider>,
    layer: Arc<KeptCalls>,
    store: Arc<dyn Provider>,
}

impl Schema {
    async fn new(tag: &str) -> Self {
        Self::at(&url(), tag).await
    }

    /// On the server `url` names (a proxy, for the tests that cut it).
    async fn at(url: &str, tag: &str) -> Self {
        let name = format!("kept_calls_{tag}_{}", std::process::id());
        let pg = PostgresProvider::new_with_schema(url, Some(&name))
            .await
            .unwrap();
        let pool = pg.pool().clone();
        let pg: Arc<dyn Provider> = Arc::new(pg);
        let schema = crate::providers::pg_functions::install::installed(&pool, &name).await;
        let ack = crate::providers::history_tail::ack_turn_function(&schema.quoted);
        let layer = Arc::new(KeptCalls::new(
            &KeptConnections::lanes(pool.clone(), true),
            &schema.quoted,
            &ack,
            false,
        ));
        let store: Arc<dyn Provider> = Arc::new(Stacked::new(layer.clone(), pg.clone()));
        Self {
            name,
            pool,
            pg,
            layer,
            store,
        }
    }

    fn crate_calls(&self) -> u64 {
        self.layer.crate_calls.load(Ordering::Relaxed)
    }

    async fn drop(self) {
        sqlx::raw_sql(&format!("DROP SCHEMA {} CASCADE", self.name))
            .execute(&self.pool)
            .await
            .unwrap();
    }
}

fn now_ms() -> u64 {
    crate::providers::pg_packing::now_ms() as u64
}

/// Orchestrator-queue items of every kind the clients and runtimes send,
/// for instance `id`; the timer fires at `fire_at_ms`.
fn items(id: &str, fire_at_ms: u64) -> Vec<(WorkItem, Option<Duration>)> {
    vec![
        (
            WorkItem::StartOrchestration {
                instance: id.into(),
                orchestration: "O".into(),
                input: "\"in\"".into(),
                version: Some("1.0.0".into()),
                parent_instance: None,
                parent_id: None,
                parent_execution_id: None,
                execution_id: 1,
            },
            None,
        ),
        (
            WorkItem::ExternalRaised {
                instance: id.into(),
                name: "go".into(),
                data: "{\"by\":\"ann\"}".into(),
            },
            Some(Duration::from_secs(30)),
        ),
        (
            WorkItem::TimerFired {
                instance: id.into(),
                execution_id: 1,
                id: 3,
                fire_at_ms,
            },
            None,
        ),
        (
            WorkItem::SubOrchCompleted {
                parent_instance: id.into(),
                parent_execution_id: 1,
                parent_id: 4,
                result: "\"r\"".into(),
            },
            None,
        ),
    ]
}

/// The queue rows of `instance`: work item, visible_at in ms, oldest first.
async fn queued(s: &Schema, instance: &str) -> Vec<(String, i64)> {
    sqlx::query_as(&format!(
        "SELECT work_item, (EXTRACT(EPOCH FROM visible_at) * 1000)::bigint \
         FROM {}.orchestrator_queue WHERE instance_id = $1 ORDER BY id",
        s.name
    ))
    .bind(instance)
    .fetch_all(&s.pool)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enqueues_write_the_rows_the_crates_enqueues_write() {
    let s = Schema::new("enqueue").await;
    let fire_at = now_ms() + 60_000;
    for (item, delay) in items("theirs", fire_at) {
        s.pg.enqueue_for_orchestrator(item, delay).await.unwrap();
    }
    for (item, delay) in items("ours", fire_at) {
        s.store.enqueue_for_orchestrator(item, delay).await.unwrap();
    }
    assert_eq!(s.crate_calls(), 0, "an enqueue ran the crate's call");
    let theirs = queued(&s, "theirs").await;
    let ours = queued(&s, "ours").await;
    assert_eq!(ours.len(), theirs.len());
    for ((ours, ours_at), (theirs, theirs_at)) in ours.iter().zip(&theirs) {
        assert_eq!(ours.replace("ours", "theirs"), *theirs);
        if ours.contains("TimerFired") {
            assert_eq!((*ours_at, *theirs_at), (fire_at as i64, fire_at as i64));
        }
        // Both read the clock when called: a moment apart.
        assert!(
            (ours_at - theirs_at).abs() < 2_000,
            "{ours}: visible at {ours_at}, the crate's at {theirs_at}"
        );
    }
    s.drop().await;
}

/// A turn that schedules an activity and sets a custom status, then one
/// that completes; a second instance fails.
fn registries() -> (ActivityRegistry, OrchestrationRegistry) {
    let activities = ActivityRegistry::builder()
        .register("Greet", |_ctx: ActivityContext, name: String| async move {
            Ok(format!("Hello, {name}!"))
        })
        .register("Fail", |_ctx: ActivityContext, _: String| async move {
            Err::<String, String>("no".into())
        })
        .build();
    let orchestrations = OrchestrationRegistry::builder()
        .register(
            "Hello",
            |ctx: OrchestrationContext, name: String| async move {
                ctx.set_custom_status("greeting");
                ctx.schedule_activity("Greet", name).await
            },
        )
        .register("Fails", |ctx: OrchestrationContext, _: String| async move {
            ctx.schedule_activity("Fail", "").await
        })
        .build();
    (activities, orchestrations)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_acks_its_turns_and_activities_through_the_layer() {
    let s = Schema::new("runtime").await;
    let (activities, orchestrations) = registries();
    let options = RuntimeOptions {
        dispatcher_min_poll_interval: Duration::from_millis(5),
        ..RuntimeOptions::default()
    };
    let rt =
        Runtime::start_with_options(s.store.clone(), activities, orchestrations, options).await;
    let client = Client::new(s.store.clone());
    client
        .start_orchestration("h", "Hello", "ann")
        .await
        .unwrap();
    client.start_orchestration("f", "Fails", "").await.unwrap();
    let wait = Duration::from_secs(30);
    match client.wait_for_orchestration("h", wait).await.unwrap() {
        OrchestrationStatus::Completed {
            output,
            custom_status,
            ..
        } => {
            assert_eq!(output, "Hello, ann!");
            assert_eq!(custom_status.as_deref(), Some("greeting"));
        }
        other => panic!("h ended as {other:?}"),
    }
    let failed = client.wait_for_orchestration("f", wait).await.unwrap();
    assert!(
        matches!(failed, OrchestrationStatus::Failed { .. }),
        "f ended as {failed:?}"
    );
    rt.shutdown(Some(5000)).await;
    assert_eq!(s.crate_calls(), 0, "an ack or enqueue ran the crate's call");
    s.drop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_of_locks_that_are_gone_fail_in_the_crates_words() {
    let s = Schema::new("gone").await;
    let metadata = ExecutionMetadata::default();
    let turn = s
        .store
        .ack_orchestration_item("lock_none", 1, vec![], vec![], vec![], metadata, vec![])
        .await
        .unwrap_err();
    assert!(!turn.is_retryable());
    assert!(
        ProviderFault::is(&turn, ProviderFault::InvalidLock),
        "{turn}"
    );
    let completion = WorkItem::ActivityCompleted {
        instance: "i".into(),
        execution_id: 1,
        id: 2,
        result: "\"r\"".into(),
    };
    let work = s
        .store
        .ack_work_item("lock_none", Some(completion))
        .await
        .unwrap_err();
    assert!(!work.is_retryable());
    assert!(ProviderFault::is(&work, ProviderFault::LostLock), "{work}");
    assert_eq!(s.crate_calls(), 0);
    s.drop().await;
}

/// An activity's ack commits as the caller's `synchronous_commit` says,
/// unless the provider's `relaxedDurability` asked it not to wait for its
/// WAL flush.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_activity_ack_commits_asynchronously_only_when_relaxed() {
    let s = Schema::new("worker_commit").await;
    s.pg.enqueue_for_worker(WorkItem::ActivityExecute {
        instance: "a".into(),
        execution_id: 1,
        id: 1,
        name: "Step".into(),
        input: "1".into(),
        session_id: None,
        tag: None,
    })
    .await
    .unwrap();
    let (_, token, _) =
        s.pg.fetch_work_item(
            Duration::from_secs(30),
            Duration::ZERO,
            None,
            &duroxide::providers::TagFilter::DefaultOnly,
        )
        .await
        .unwrap()
        .expect("the activity");
    let completion = serde_json::to_string(&WorkItem::ActivityCompleted {
        instance: "a".into(),
        execution_id: 1,
        id: 1,
        result: "2".into(),
    })
    .unwrap();
    // Neither `on` nor `off`: what a call that leaves the setting leaves.
    for (relaxed, mode) in [(false, "local"), (true, "off")] {
        let mut tx = s.pool.begin().await.unwrap();
        sqlx::query("SET LOCAL synchronous_commit TO local")
            .execute(&mut *tx)
            .await
            .unwrap();
        // Rolled back: the item is there for the next.
        sqlx::query(&super::ack_worker_statement(&s.name, relaxed))
            .bind(&token)
            .bind("a")
            .bind(&completion)
            .bind(now_ms() as i64)
            .execute(&mut *tx)
            .await
            .unwrap();
        let after: String = sqlx::query_scalar("SELECT current_setting('synchronous_commit')")
            .fetch_one(&mut *tx)
            .await
            .unwrap();
        tx.rollback().await.unwrap();
        assert_eq!(after, mode, "relaxed: {relaxed}");
    }
    s.drop().await;
}

/// A TCP proxy to Postgres that, once armed, lets the server run the
/// first statement naming `enqueue_orchestrator_work` and, when the
/// server's answer to it ends (ReadyForQuery: the implicit transaction
/// committed), closes the client's connection instead of forwarding that
/// answer: a call whose commit the client cannot know of.
mod cut {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::task::JoinHandle;

    const CALL: &[u8] = b"enqueue_orchestrator_work";

    pub(super) struct Proxy {
        pub(super) port: u16,
        armed: Arc<AtomicBool>,
        cuts: Arc<AtomicUsize>,
        accept: JoinHandle<()>,
    }

    impl Proxy {
        pub(super) async fn start(target: String) -> Self {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let armed = Arc::new(AtomicBool::new(false));
            let cuts = Arc::new(AtomicUsize::new(0));
            let (a, c) = (armed.clone(), cuts.clone());
            let accept = tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    tokio::spawn(pipe(client, target.clone(), a.clone(), c.clone()));
                }
            });
            Self {
                port,
                armed,
                cuts,
                accept,
            }
        }

        pub(super) fn arm(&self) {
            self.armed.store(true, Ordering::SeqCst);
        }

        pub(super) fn cuts(&self) -> usize {
            self.cuts.load(Ordering::SeqCst)
        }
    }

    impl Drop for Proxy {
        fn drop(&mut self) {
            self.accept.abort();
        }
    }

    /// Complete protocol messages at the front of `buf`, removed from it:
    /// type byte (none for the first message a client sends) and body.
    fn messages(buf: &mut Vec<u8>, untyped_first: &mut bool) -> Vec<(u8, Vec<u8>)> {
        let mut out = Vec::new();
        loop {
            let head = if *untyped_first { 0 } else { 1 };
            if buf.len() < head + 4 {
                return out;
            }
            let len = u32::from_be_bytes(buf[head..head + 4].try_into().unwrap()) as usize;
            if buf.len() < head + len {
                return out;
            }
            let kind = if *untyped_first { 0 } else { buf[0] };
            let whole: Vec<u8> = buf.drain(..head + len).collect();
            *untyped_first = false;
            out.push((kind, whole));
        }
    }

    async fn pipe(
        client: TcpStream,
        target: String,
        armed: Arc<AtomicBool>,
        cuts: Arc<AtomicUsize>,
    ) {
        let Ok(server) = TcpStream::connect(&target).await else {
            return;
        };
        let (mut client_read, mut client_write) = client.into_split();
        let (mut server_read, mut server_write) = server.into_split();
        // Set once this connection's client sent the call and executed it.
        let executing = Arc::new(AtomicBool::new(false));
        let exec = executing.clone();
        let upstream = tokio::spawn(async move {
            let (mut buf, mut first, mut named) = (Vec::new(), true, false);
            let mut chunk = vec![0u8; 16 * 1024];
            loop {
                let n = match client_read.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
                // Before the bytes go on: the answer may come back at once.
                for (kind, message) in messages(&mut buf, &mut first) {
                    if armed.load(Ordering::SeqCst)
                        && message.windows(CALL.len()).any(|w| w == CALL)
                    {
                        named = true;
                    }
                    if named && kind == b'E' && armed.swap(false, Ordering::SeqCst) {
                        exec.store(true, Ordering::SeqCst);
                    }
                }
                if server_write.write_all(&chunk[..n]).await.is_err() {
                    return;
                }
            }
        });
        let (mut buf, mut first) = (Vec::new(), false);
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            let n = match server_read.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            buf.extend_from_slice(&chunk[..n]);
            for (kind, message) in messages(&mut buf, &mut first) {
                if executing.load(Ordering::SeqCst) {
                    if kind == b'Z' {
                        cuts.fetch_add(1, Ordering::SeqCst);
                        let _ = client_write.shutdown().await;
                        upstream.abort();
                        return;
                    }
                    // The answer is held back, then dropped.
                    continue;
                }
                if client_write.write_all(&message).await.is_err() {
                    upstream.abort();
                    return;
                }
            }
        }
        upstream.abort();
    }
}

/// `url` with its host and port replaced by the proxy's, without TLS
/// (the proxy reads the protocol), and the server's `host:port`.
fn through_proxy(url: &str, port: u16) -> (String, String) {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (user, hostport) = match authority.rsplit_once('@') {
        Some((user, hostport)) => (format!("{user}@"), hostport),
        None => (String::new(), authority),
    };
    let target = if hostport.contains(':') {
        hostport.to_string()
    } else {
        format!("{hostport}:5432")
    };
    let sep = if path.contains('?') { '&' } else { '?' };
    (
        format!("{scheme}://{user}127.0.0.1:{port}/{path}{sep}sslmode=disable"),
        target,
    )
}

/// Regression: after an I/O error the layer ran the crate's enqueue again,
/// and an event whose first enqueue had committed was queued twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueue_whose_connection_fails_after_the_commit_is_not_delivered_twice() {
    let (_, target) = through_proxy(&url(), 0);
    let proxy = cut::Proxy::start(target).await;
    let (proxied, _) = through_proxy(&url(), proxy.port);
    let s = Schema::at(&proxied, "cut").await;

    proxy.arm();
    let event = WorkItem::ExternalRaised {
        instance: "e".into(),
        name: "go".into(),
        data: "\"once\"".into(),
    };
    let enqueued = s.store.enqueue_for_orchestrator(event, None).await;
    assert_eq!(proxy.cuts(), 1, "the enqueue's connection was not cut");

    // Read past the proxy.
    let direct = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .connect(&url())
        .await
        .unwrap();
    let queued: Vec<String> = sqlx::query_scalar(&format!(
        "SELECT work_item FROM {}.orchestrator_queue WHERE instance_id = 'e'",
        s.name
    ))
    .fetch_all(&direct)
    .await
    .unwrap();
    assert_eq!(
        queued.len(),
        1,
        "delivered {} times: {queued:?}",
        queued.len()
    );
    assert!(queued[0].contains("once"), "{queued:?}");
    // The caller learns the outcome is unknown, as from the crate's call.
    let err = enqueued.expect_err("the enqueue's connection failed");
    assert!(err.is_retryable(), "{err}");
    sqlx::raw_sql(&format!("DROP SCHEMA {} CASCADE", s.name))
        .execute(&direct)
        .await
        .unwrap();
    s.pool.close().await;
}
