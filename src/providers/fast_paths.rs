//! The `fastPaths` switch of a provider and what it reports
//! (`provider.fastPaths()`, `runtime.health().fastPaths`, the
//! `duroxide_node_fast_path_active` metric). `docs/fast-paths.md` describes
//! each path, what it guarantees and how to switch it off.
//!
//! With `fastPaths: false` every store call runs through the crate's own
//! provider and idle dispatchers poll as the crate's do: the layers that
//! stay (retries of terminated sessions and busy files, the guard, the
//! client's deadline) only decide how a call of the crate's runs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use napi_derive::napi;

/// A store path faster than the crate's that a provider may use.
#[napi(string_enum = "camelCase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FastPath {
    /// Orchestration fetches that read only the history the process does not
    /// hold (Postgres: `fetch_turn.sql`; SQLite: the direct turn fetch).
    TailFetch,
    /// Worker fetches through `fetch_work.sql` on kept connections (Postgres).
    WorkerFetch,
    /// The turn ack that writes each row once (Postgres: `ack_turn.sql`).
    TurnAck,
    /// Acks that also fetch the next item of the queue they feed
    /// (Postgres: the three `*_fetch_*.sql` functions).
    AckRides,
    /// The most frequent calls keep their connections between calls,
    /// skipping the pool's pings (Postgres).
    KeptConnections,
    /// A SQLite file's fetches, acks and enqueues on a connection of the
    /// provider's own, with the crate's statements.
    DirectCalls,
    /// A SQLite store's writing calls taken one at a time in the process.
    OneWriter,
    /// A runtime answers the history read before each activity from what
    /// its own turn knew.
    ActivityDescriptors,
    /// A client reads an instance's status in one query of the current
    /// execution's row instead of its history.
    StatusRead,
    /// Idle dispatchers wait to be woken (by this process's enqueues and
    /// acks, Postgres LISTEN/NOTIFY, due times, a fallback look) instead of
    /// polling every `dispatcherPollIntervalMs`.
    Wakeups,
}

impl FastPath {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FastPath::TailFetch => "tailFetch",
            FastPath::WorkerFetch => "workerFetch",
            FastPath::TurnAck => "turnAck",
            FastPath::AckRides => "ackRides",
            FastPath::KeptConnections => "keptConnections",
            FastPath::DirectCalls => "directCalls",
            FastPath::OneWriter => "oneWriter",
            FastPath::ActivityDescriptors => "activityDescriptors",
            FastPath::StatusRead => "statusRead",
            FastPath::Wakeups => "wakeups",
        }
    }
}

/// `provider.fastPaths()`.
#[napi(object)]
#[derive(Clone, Debug, PartialEq)]
pub struct FastPathsReport {
    /// The provider's `fastPaths` option.
    pub enabled: bool,
    /// The paths in use, sorted.
    pub active: Vec<FastPath>,
    /// Paths that are enabled but cannot be used here, with the reason.
    pub unavailable: HashMap<String, String>,
}

/// A SQLite file's paths, for tests that build a backend by hand.
#[cfg(test)]
pub(crate) const SQLITE_PATHS: [FastPath; 5] = [
    FastPath::TailFetch,
    FastPath::DirectCalls,
    FastPath::OneWriter,
    FastPath::ActivityDescriptors,
    FastPath::StatusRead,
];

/// The paths in use, and those unavailable with the reason.
type Decided = (Vec<FastPath>, Vec<(FastPath, String)>);

/// What a provider decided about its fast paths when it connected.
#[derive(Clone)]
pub(crate) struct FastPaths {
    enabled: bool,
    report: Arc<Mutex<Decided>>,
    store: &'static str,
    warned: Arc<AtomicBool>,
}

impl FastPaths {
    pub(crate) fn new(enabled: bool, store: &'static str) -> Self {
        Self {
            enabled,
            report: Arc::default(),
            store,
            warned: Arc::default(),
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    pub(crate) fn active(&self, path: FastPath) {
        let mut report = self.report.lock().expect("fast paths");
        if !report.0.contains(&path) {
            report.0.push(path);
            report.0.sort();
        }
    }

    /// `path` is enabled but cannot be used (see [`Self::warn_once`]).
    pub(crate) fn unavailable(&self, path: FastPath, reason: &str) {
        self.report
            .lock()
            .expect("fast paths")
            .1
            .push((path, reason.to_string()));
    }

    /// One WARN per unavailable path, once per provider: at connect when a
    /// log subscriber is already installed, else when its first runtime
    /// starts (which installs one; logged before, it would go nowhere).
    pub(crate) fn warn_once(&self) {
        if self.warned.swap(true, Ordering::Relaxed) {
            return;
        }
        for (path, reason) in &self.report.lock().expect("fast paths").1 {
            tracing::warn!(
                target: "duroxide_node::providers",
                path = path.as_str(),
                reason = reason.as_str(),
                "fast path '{}' of this {} provider is unavailable: {}; those calls run the \
                 crate's own path (docs/fast-paths.md)",
                path.as_str(),
                self.store,
                reason
            );
        }
    }

    /// [`Self::warn_once`] now if anything would show the WARN.
    pub(crate) fn connected(&self) {
        if tracing::dispatcher::has_been_set() {
            self.warn_once();
        }
    }

    pub(crate) fn is_active(&self, path: FastPath) -> bool {
        self.report.lock().expect("fast paths").0.contains(&path)
    }

    /// Enabled, with `paths` active (tests that build a backend by hand).
    #[cfg(test)]
    pub(crate) fn with(paths: &[FastPath]) -> Self {
        let fast = Self::new(true, "test");
        for path in paths {
            fast.active(*path);
        }
        fast
    }

    pub(crate) fn report(&self) -> FastPathsReport {
        let report = self.report.lock().expect("fast paths");
        FastPathsReport {
            enabled: self.enabled,
            active: report.0.clone(),
            unavailable: report
                .1
                .iter()
                .map(|(p, r)| (p.as_str().to_string(), r.clone()))
                .collect(),
        }
    }
}
