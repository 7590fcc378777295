//! Unit-test fixtures for layers of the stack: the Postgres server's URL, a
//! SQLite file of their own with one instance started, and a layer that
//! counts the history reads reaching the store, and the registries of a
//! chain and a fan-out. (duroxide's in-memory store
//! is one shared-cache database, whose table locks would make tests running
//! in parallel fail each other's calls.)

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use duroxide::providers::sqlite::SqliteProvider;
use duroxide::providers::{Provider, ProviderError};
use duroxide::runtime::registry::ActivityRegistry;
use duroxide::{
    ActivityContext, Client, Event, EventKind, OrchestrationContext, OrchestrationRegistry,
};

use super::layer::{Layer, Stacked};
use super::Backend;

/// The Postgres server tests use: `DATABASE_URL`, or the local one.
pub(crate) fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/postgres".into())
}

/// A store on a SQLite file of its own, removed when dropped.
pub(crate) struct Scratch {
    pub(crate) store: Arc<dyn Provider>,
    /// The same store, for code that queries it directly.
    pub(crate) backend: Backend,
    dir: PathBuf,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A fresh store with orchestration `Orch` started as instance `i1` (not run).
pub(crate) async fn one_start(prefix: &str, input: &str) -> Scratch {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite:{}?mode=rwc", dir.join("t.db").display());
    let sqlite = SqliteProvider::new(&url, None).await.unwrap();
    let backend = Backend::Sqlite {
        pool: sqlite.get_pool().clone(),
        fast_paths: crate::providers::fast_paths::FastPaths::with(
            &crate::providers::fast_paths::SQLITE_PATHS,
        ),
        set_aside: Default::default(),
    };
    let store: Arc<dyn Provider> = Arc::new(sqlite);
    Client::new(store.clone())
        .start_orchestration("i1", "Orch", input)
        .await
        .unwrap();
    Scratch {
        store,
        backend,
        dir,
    }
}

/// `OrchestrationStarted` of `Orch` at `version` with `input`.
pub(crate) fn started(version: &str, input: &str) -> EventKind {
    EventKind::OrchestrationStarted {
        name: "Orch".into(),
        version: version.into(),
        input: input.into(),
        parent_instance: None,
        parent_id: None,
        parent_execution_id: None,
        carry_forward_events: None,
        initial_custom_status: None,
    }
}

/// Counts the history reads (`Provider::read`) that reach the layer below.
struct CountReads(Arc<AtomicUsize>);

#[async_trait]
impl Layer for CountReads {
    async fn read(
        &self,
        next: &Arc<dyn Provider>,
        instance: &str,
    ) -> Result<Vec<Event>, ProviderError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        next.read(instance).await
    }
}

/// `store` under a read counter, and the count.
pub(crate) fn counting_reads(store: Arc<dyn Provider>) -> (Arc<dyn Provider>, Arc<AtomicUsize>) {
    let count = Arc::new(AtomicUsize::new(0));
    (Stacked::over(CountReads(count.clone()), store), count)
}

/// Activity `Step` adds one to its input; orchestration `Chain` (input `n`
/// or `n,wait`) steps `n` times from 0, then with `wait` waits for event
/// `go`, and returns the last value; `Fan` (input `n`) runs `n` steps at
/// once and returns how many it joined.
pub(crate) fn chain_registries() -> (ActivityRegistry, OrchestrationRegistry) {
    let activities = ActivityRegistry::builder()
        .register("Step", |_ctx: ActivityContext, i: String| async move {
            Ok((i.parse::<u64>().map_err(|e| e.to_string())? + 1).to_string())
        })
        .build();
    let orchestrations = OrchestrationRegistry::builder()
        .register(
            "Chain",
            |ctx: OrchestrationContext, input: String| async move {
                let (n, wait) = input.split_once(',').unwrap_or((&input, ""));
                let mut v = "0".to_string();
                for _ in 0..n.parse::<u64>().map_err(|e| e.to_string())? {
                    v = ctx.schedule_activity("Step", v).await?;
                }
                if wait == "wait" {
                    ctx.schedule_wait("go").await;
                }
                Ok(v)
            },
        )
        .register(
            "Fan",
            |ctx: OrchestrationContext, input: String| async move {
                let n = input.parse::<u64>().map_err(|e| e.to_string())?;
                let steps = (0..n).map(|i| ctx.schedule_activity("Step", i.to_string()));
                Ok(ctx.join(steps.collect()).await.len().to_string())
            },
        )
        .build();
    (activities, orchestrations)
}
