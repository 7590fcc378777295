//! A Postgres provider's stack: the crate's store under the retry layer
//! and, with fast paths, its calls on kept connections and our functions
//! (`docs/fast-paths.md`), with the containment of unreadable messages in
//! both modes.

use std::sync::Arc;

use duroxide_pg::PostgresProvider;

use super::contain;
use super::fast_paths::{FastPath, FastPaths};
use super::history_tail;
use super::kept::{KeptConnections, MIN_POOL};
use super::pg_functions::crate_text::Schema;
use super::pg_functions::install::{self, Policy};
use super::wakeup::WakeupOptions;
use super::{Backend, NativeProvider};

/// What a provider's fast paths are given at connect.
#[derive(Clone, Copy)]
pub(crate) struct FastPathOptions {
    pub(crate) enabled: bool,
    pub(crate) relaxed: bool,
    pub(crate) policy: Policy,
    pub(crate) wakeups: WakeupOptions,
}

/// The store under its retry layer, with its pool and schema captured and,
/// with fast paths, its calls on kept connections and our functions. Boxed
/// with its `Send` bound stated: nested in the connect's future, rustc
/// cannot prove it through sqlx's executor borrows.
pub(crate) fn stacked(
    provider: PostgresProvider,
    fast: FastPathOptions,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = NativeProvider> + Send>> {
    Box::pin(stack(provider, fast))
}

async fn stack(provider: PostgresProvider, fast: FastPathOptions) -> NativeProvider {
    let pool = provider.pool().clone();
    let name = provider.schema_name().to_string();
    let paths = FastPaths::new(fast.enabled, "Postgres");
    let lanes = KeptConnections::lanes(pool.clone(), fast.enabled);
    let mut store: Arc<dyn duroxide::providers::Provider> = Arc::new(provider);
    let mut for_runtimes = None;
    let mut marking = None;
    let set_aside = Arc::<contain::Counts>::default();
    if fast.enabled {
        paths.active(FastPath::ActivityDescriptors);
        paths.active(FastPath::StatusRead);
        if pool.options().get_max_connections() >= MIN_POOL {
            paths.active(FastPath::KeptConnections);
        } else {
            paths.unavailable(
                FastPath::KeptConnections,
                &format!(
                    "a pool of {} connections keeps none (it takes {MIN_POOL})",
                    pool.options().get_max_connections()
                ),
            );
        }
        let schema = Schema::read(&pool, &name)
            .await
            .map_err(|e| format!("could not read schema '{name}': {e}"));
        let installed = match &schema {
            Ok(schema) => install::ensure(&pool, schema, fast.policy).await,
            Err(e) => Err(e.clone()),
        };
        let quoted = schema
            .as_ref()
            .map_or_else(|_| name.clone(), |s| s.quoted.clone());
        match (installed, schema) {
            (Ok(()), Ok(schema)) => {
                for path in FUNCTION_PATHS {
                    paths.active(path);
                }
                let ack = history_tail::ack_turn_function(&quoted);
                store = super::kept_calls::over(store, &lanes, &quoted, &ack, fast.relaxed);
                let contained = (
                    contain::Store::Postgres {
                        pool: pool.clone(),
                        schema_q: quoted.clone(),
                    },
                    set_aside.clone(),
                );
                let (tail, runtimes) = history_tail::over(
                    store,
                    &pool,
                    &schema,
                    lanes.runtime.clone(),
                    fast.relaxed,
                    contained,
                )
                .await;
                store = tail;
                for_runtimes = Some(runtimes);
                let stop = tokio_util::sync::CancellationToken::new();
                install::keep_marking(pool.clone(), schema, stop.clone());
                marking = Some(Arc::new(stop.drop_guard()));
            }
            (Err(reason), _) | (_, Err(reason)) => {
                for path in FUNCTION_PATHS {
                    paths.unavailable(path, &reason);
                }
                let ack = format!("{quoted}.ack_orchestration_item");
                store = super::kept_calls::over(store, &lanes, &quoted, &ack, fast.relaxed);
            }
        }
    }
    paths.connected();
    let schema_q = match Schema::read(&pool, &name).await {
        Ok(s) => s.quoted,
        Err(_) => name.clone(),
    };
    let store = contain::over(
        store,
        contain::Store::Postgres {
            pool: pool.clone(),
            schema_q,
        },
        set_aside.clone(),
    );
    let (ridden, warmer) = for_runtimes.map(|f| (f.ridden, f.warmer)).unzip();
    let backend = Backend::Postgres {
        pool,
        fast_paths: paths,
        set_aside,
        _marking: marking,
        client_kept: lanes.client,
        schema: name,
        schemas_checked: Default::default(),
        ridden,
        warmer,
    };
    let retried = super::pg_retry::with_terminated_retry(store);
    NativeProvider::with_wakeups(retried, backend, fast.wakeups)
}

/// The paths that run our installed functions (`pg_functions/`): all of
/// them or none.
const FUNCTION_PATHS: [FastPath; 4] = [
    FastPath::TailFetch,
    FastPath::WorkerFetch,
    FastPath::TurnAck,
    FastPath::AckRides,
];
