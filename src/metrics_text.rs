//! `runtime.metricsText()`: Prometheus text exposition of duroxide's metrics
//! and of the runtime's own counters.
//!
//! duroxide records its metrics (orchestration and activity counts and
//! durations, queue depths, provider operations) through the `metrics`
//! facade, whose recorder is one per process by the facade's design: the
//! macros at duroxide's call sites reach no runtime object. So the recorder
//! is installed once, when the first runtime is built, and those series are
//! process-wide (the sum over every runtime in the process). The series this
//! module writes itself (`duroxide_node_*`) come from one runtime's guard and
//! snapshot, so they are per runtime.

use crate::providers::fast_paths::FastPathsReport;
use std::fmt::Write as _;
use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::runtime_metrics::RuntimeMetrics;

/// Buckets of duroxide's `*_seconds` histograms (turns, activities, provider
/// calls): from a fast SQLite call to a long activity.
const SECONDS_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];
/// Buckets of duroxide's `*_ms` histograms (dispatcher processing times).
const MS_BUCKETS: &[f64] = &[
    1.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0, 30000.0,
];
/// Histogram samples wait in the recorder until upkeep folds them into
/// buckets; without a scrape they would pile up, so upkeep also runs on this
/// period.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The facade's recorder is process-global (see the module doc), so its
/// handle is too; `None` if another recorder was installed first.
static RECORDER: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

fn install() -> Option<PrometheusHandle> {
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
        .and_then(|b| b.set_buckets_for_metric(Matcher::Suffix("_ms".into()), MS_BUCKETS))
        .ok()?
        .build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder).ok()?;
    let upkeep = handle.clone();
    // A plain thread: it holds no JS reference, so it never keeps Node alive.
    let _ = std::thread::Builder::new()
        .name("duroxide-metrics-upkeep".into())
        .spawn(move || loop {
            std::thread::sleep(UPKEEP_EVERY);
            upkeep.run_upkeep();
        });
    Some(handle)
}

/// Installs the process's recorder on the first call; the handle every
/// runtime renders through.
pub(crate) fn recorder() -> Option<PrometheusHandle> {
    RECORDER.get_or_init(install).clone()
}

/// duroxide's series (process-wide), then this runtime's own.
pub(crate) fn render(
    recorder: Option<&PrometheusHandle>,
    m: &RuntimeMetrics,
    store: &StoreView,
) -> String {
    let mut out = recorder.map(|r| r.render()).unwrap_or_default();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    runtime_series(&mut out, m);
    fast_path_series(&mut out, &store.fast_paths);
    let family = Family {
        name: "duroxide_node_messages_set_aside_total",
        kind: "counter",
        help: "Queue messages this provider set aside because no fetch can read them.",
    };
    family.header(&mut out);
    family.sample(&mut out, "queue=\"orchestrator\"", store.set_aside.0 as f64);
    family.sample(&mut out, "queue=\"worker\"", store.set_aside.1 as f64);
    out
}

/// What the runtime's provider reports of itself.
pub(crate) struct StoreView {
    pub(crate) fast_paths: FastPathsReport,
    /// Messages set aside (orchestrator, worker).
    pub(crate) set_aside: (u64, u64),
}

/// 1 for each fast path the provider uses, 0 for each it enabled but
/// cannot use (`provider.fastPaths()`).
fn fast_path_series(out: &mut String, report: &FastPathsReport) {
    let family = Family {
        name: "duroxide_node_fast_path_active",
        kind: "gauge",
        help: "Whether a fast store path is in use (1) or enabled but unavailable (0).",
    };
    family.header(out);
    for path in &report.active {
        family.sample(out, &format!("path=\"{}\"", path.as_str()), 1.0);
    }
    let mut unavailable: Vec<&String> = report.unavailable.keys().collect();
    unavailable.sort();
    for path in unavailable {
        family.sample(out, &format!("path=\"{path}\""), 0.0);
    }
}

struct Family<'a> {
    name: &'a str,
    kind: &'a str,
    help: &'a str,
}

impl Family<'_> {
    fn header(&self, out: &mut String) {
        let _ = writeln!(out, "# HELP {} {}", self.name, self.help);
        let _ = writeln!(out, "# TYPE {} {}", self.name, self.kind);
    }

    fn sample(&self, out: &mut String, labels: &str, value: f64) {
        if labels.is_empty() {
            let _ = writeln!(out, "{} {}", self.name, value);
        } else {
            let _ = writeln!(out, "{}{{{labels}}} {}", self.name, value);
        }
    }

    fn single(&self, out: &mut String, value: i64) {
        self.header(out);
        self.sample(out, "", value as f64);
    }
}

/// The guard's counters and fetch latencies (`guard/stats.rs`) and the
/// provider errors of this runtime, as Prometheus series.
fn runtime_series(out: &mut String, m: &RuntimeMetrics) {
    let lock_lost = Family {
        name: "duroxide_node_lock_lost_total",
        kind: "counter",
        help: "Acks that failed because the message's lease was lost (orchestrator: 'Invalid lock token'; worker: the activity's lock).",
    };
    lock_lost.header(out);
    lock_lost.sample(
        out,
        "queue=\"orchestrator\"",
        m.invalid_lock_token_acks as f64,
    );
    lock_lost.sample(out, "queue=\"worker\"", m.work_lock_lost_acks as f64);
    Family {
        name: "duroxide_node_poison_total",
        kind: "counter",
        help: "Messages failed as poison after exceeding maxAttempts.",
    }
    .single(out, m.poison_dispositions);
    Family {
        name: "duroxide_node_provider_errors_total",
        kind: "counter",
        help: "Store calls of this runtime that failed.",
    }
    .single(out, m.provider_errors);
    Family {
        name: "duroxide_node_deadlock_retries_total",
        kind: "counter",
        help: "Store calls retried after a Postgres deadlock (40P01).",
    }
    .single(out, m.deadlock_retries);
    Family {
        name: "duroxide_node_orphaned_locks_released_total",
        kind: "counter",
        help: "Locks left by a cancelled fetch that the guard released.",
    }
    .single(out, m.orphaned_locks_released);
    Family {
        name: "duroxide_node_livelocks_detected_total",
        kind: "counter",
        help: "Instances the watchdog found retried without ever committing.",
    }
    .single(out, m.livelocks_detected);
    Family {
        name: "duroxide_node_nondeterminism_holds_total",
        kind: "counter",
        help: "Turns not committed because their code did not replay the history (onNondeterminism: 'hold').",
    }
    .single(out, m.nondeterminism_holds);
    let held = Family {
        name: "duroxide_node_instance_held",
        kind: "gauge",
        help: "1 for each instance held now because its code does not replay its history.",
    };
    held.header(out);
    for instance in &m.held_instances {
        held.sample(out, &format!("instance_id=\"{}\"", label(instance)), 1.0);
    }

    let latency = Family {
        name: "duroxide_node_fetch_latency_seconds",
        kind: "gauge",
        help: "Fetch latency percentiles over the last 60 s (absent without fetches).",
    };
    latency.header(out);
    let quantiles = [
        ("orchestrator", "0.5", m.orch_fetch_p50_ms),
        ("orchestrator", "0.99", m.orch_fetch_p99_ms),
        ("worker", "0.5", m.work_fetch_p50_ms),
        ("worker", "0.99", m.work_fetch_p99_ms),
    ];
    for (queue, q, ms) in quantiles {
        if let Some(ms) = ms {
            latency.sample(
                out,
                &format!("queue=\"{queue}\",quantile=\"{q}\""),
                ms / 1000.0,
            );
        }
    }
    let wait = Family {
        name: "duroxide_node_fetch_wait_seconds",
        kind: "gauge",
        help: "p99 wait for a fetch slot (maxConcurrentOrchestrationFetches) over the last 60 s.",
    };
    wait.header(out);
    if let Some(ms) = m.orch_fetch_wait_p99_ms {
        wait.sample(out, "queue=\"orchestrator\",quantile=\"0.99\"", ms / 1000.0);
    }
    let samples = Family {
        name: "duroxide_node_fetch_samples",
        kind: "gauge",
        help: "Fetches the latency percentiles are computed over (last 60 s).",
    };
    samples.header(out);
    samples.sample(out, "queue=\"orchestrator\"", m.orch_fetch_samples as f64);
    samples.sample(out, "queue=\"worker\"", m.work_fetch_samples as f64);
}

/// A label value as the text format escapes it.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_series_are_prometheus_text() {
        let m = RuntimeMetrics {
            invalid_lock_token_acks: 3,
            poison_dispositions: 1,
            orch_fetch_p50_ms: Some(2.0),
            orch_fetch_p99_ms: Some(40.0),
            orch_fetch_samples: 7,
            nondeterminism_holds: 2,
            held_instances: vec!["order-\"7\"".into()],
            ..Default::default()
        };
        let fast_paths = FastPathsReport {
            enabled: true,
            active: vec![crate::providers::fast_paths::FastPath::TailFetch],
            unavailable: [("turnAck".to_string(), "a reason".to_string())].into(),
        };
        let store = StoreView {
            fast_paths,
            set_aside: (2, 0),
        };
        let text = render(None, &m, &store);
        assert!(text.contains("duroxide_node_messages_set_aside_total{queue=\"orchestrator\"} 2\n"));
        assert!(text.contains("duroxide_node_fast_path_active{path=\"tailFetch\"} 1\n"));
        assert!(text.contains("duroxide_node_fast_path_active{path=\"turnAck\"} 0\n"));
        assert!(text.contains("# TYPE duroxide_node_lock_lost_total counter\n"));
        assert!(text.contains("duroxide_node_lock_lost_total{queue=\"orchestrator\"} 3\n"));
        assert!(text.contains("duroxide_node_poison_total 1\n"));
        assert!(text.contains(
            "duroxide_node_fetch_latency_seconds{queue=\"orchestrator\",quantile=\"0.99\"} 0.04\n"
        ));
        assert!(!text.contains("queue=\"worker\",quantile"));
        assert!(text.contains("duroxide_node_nondeterminism_holds_total 2\n"));
        assert!(text.contains("duroxide_node_instance_held{instance_id=\"order-\\\"7\\\"\"} 1\n"));
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let value = line.rsplit(' ').next().unwrap();
            assert!(value.parse::<f64>().is_ok(), "{line}");
        }
    }
}
