//! One bench workload run on the duroxide crate directly, with the options
//! `bench/run.js` gives: the baseline that duroxide-node is compared against.
//! `bench/ours.js` is the same program written against duroxide-node; keep the
//! two in step.
//!
//! Usage: `duroxide-bench-baseline '<spec json>'`, where the spec is
//! `{ workload, store: "sqlite" | "postgres", url, schema?, n, bytes?, runtimes?,
//!    orchestrationConcurrency, workerConcurrency, pollMs }`.
//! Timed workloads print `{"timed": true}` as their timed span starts and
//! `{"ms": <elapsed>}` at its end, on stdout; `memory` (hello in
//! batches of `batch`) prints `{"rssFirstMb", "rssLastMb", "ms"}`. `idle` starts
//! `runtimes` runtimes, prints `{"ready": true}`, and shuts them down when
//! stdin closes. `chain` also prints the ms per step of its first and last
//! tenth (`firstTenthStepMs`, `lastTenthStepMs`); `backlog` starts `n`
//! instances waiting for an event, then raises each once and times from the
//! first raise until all completed (`{"ms", "waitingKbPerInstance"}`).
//! `start` (for tests of a fleet where another service uses
//! the crate) starts `instance` of `orchestration` with `input` through the
//! crate's client and prints `{"started": true}`.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use duroxide::providers::sqlite::SqliteProvider;
use duroxide::providers::Provider;
use duroxide::runtime::registry::ActivityRegistry;
use duroxide::runtime::{Runtime, RuntimeOptions};
use duroxide::{
    ActivityContext, Client, OrchestrationContext, OrchestrationRegistry, OrchestrationStatus,
};
use serde_json::Value;
use tokio::io::AsyncReadExt;

type AnyError = Box<dyn std::error::Error + Send + Sync>;

const WAIT: Duration = Duration::from_secs(600);

/// When each `Step` activity ran, for `chain`'s tenths.
static STEP_TIMES: Mutex<Vec<Instant>> = Mutex::new(Vec::new());

fn registries() -> (ActivityRegistry, OrchestrationRegistry) {
    let activities = ActivityRegistry::builder()
        .register("Greet", |_ctx: ActivityContext, name: String| async move {
            Ok(format!("Hello, {name}!"))
        })
        .register("Step", |_ctx: ActivityContext, i: String| async move {
            let i: u64 = i.parse().map_err(|e| format!("Step input: {e}"))?;
            STEP_TIMES.lock().expect("step times").push(Instant::now());
            Ok((i + 1).to_string())
        })
        .register("Echo", |_ctx: ActivityContext, s: String| async move {
            Ok("y".repeat(s.len()))
        })
        .build();
    let orchestrations =
        OrchestrationRegistry::builder()
            .register(
                "Hello",
                |ctx: OrchestrationContext, name: String| async move {
                    ctx.schedule_activity("Greet", name).await
                },
            )
            .register("Chain", |ctx: OrchestrationContext, n: String| async move {
                let n: u64 = n.parse().map_err(|e| format!("Chain input: {e}"))?;
                let mut v = "0".to_string();
                for _ in 0..n {
                    v = ctx.schedule_activity("Step", v).await?;
                }
                Ok(v)
            })
            .register(
                "Fanout",
                |ctx: OrchestrationContext, n: String| async move {
                    let n: u64 = n.parse().map_err(|e| format!("Fanout input: {e}"))?;
                    let tasks = (0..n)
                        .map(|i| ctx.schedule_activity("Greet", i.to_string()))
                        .collect();
                    let results = ctx.join(tasks).await;
                    let ok = results.iter().filter(|r| r.is_ok()).count();
                    Ok(ok.to_string())
                },
            )
            .register("Wait", |ctx: OrchestrationContext, _: String| async move {
                Ok(ctx.schedule_wait("go").await)
            })
            .register(
                "Payload",
                |ctx: OrchestrationContext, s: String| async move {
                    ctx.schedule_activity("Echo", s).await
                },
            )
            .build();
    (activities, orchestrations)
}

fn options(spec: &Value) -> RuntimeOptions {
    let num = |k: &str| {
        spec[k]
            .as_u64()
            .unwrap_or_else(|| panic!("spec.{k} missing"))
    };
    RuntimeOptions {
        orchestration_concurrency: num("orchestrationConcurrency") as usize,
        worker_concurrency: num("workerConcurrency") as usize,
        dispatcher_min_poll_interval: Duration::from_millis(num("pollMs")),
        ..RuntimeOptions::default()
    }
}

async fn open(spec: &Value) -> Result<Arc<dyn Provider>, AnyError> {
    let url = spec["url"].as_str().ok_or("spec.url missing")?;
    match spec["store"].as_str() {
        Some("sqlite") => Ok(Arc::new(SqliteProvider::new(url, None).await?)),
        Some("postgres") => {
            let schema = spec["schema"].as_str();
            Ok(Arc::new(
                duroxide_pg::PostgresProvider::new_with_schema(url, schema).await?,
            ))
        }
        other => Err(format!("unknown store {other:?}").into()),
    }
}

/// Starts the instances one after another, then waits for each in turn:
/// the elapsed time covers enqueueing and running all of them.
async fn run_timed(
    client: &Client,
    orchestration: &str,
    inputs: Vec<String>,
    expect: impl Fn(&str) -> bool,
) -> Result<f64, AnyError> {
    run_timed_as(client, orchestration, orchestration, inputs, expect).await
}

/// `run_timed` with instance ids `{prefix}-{i}`.
async fn run_timed_as(
    client: &Client,
    orchestration: &str,
    prefix: &str,
    inputs: Vec<String>,
    expect: impl Fn(&str) -> bool,
) -> Result<f64, AnyError> {
    let count = inputs.len();
    // bench/run.js samples the machine's CPU time here and at the result line.
    println!("{{\"timed\":true}}");
    let t0 = Instant::now();
    for (i, input) in inputs.into_iter().enumerate() {
        client
            .start_orchestration(format!("{prefix}-{i}"), orchestration, input)
            .await?;
    }
    for i in 0..count {
        let id = format!("{prefix}-{i}");
        match client.wait_for_orchestration(&id, WAIT).await? {
            OrchestrationStatus::Completed { output, .. } if expect(&output) => {}
            other => return Err(format!("{id} ended unexpectedly: {other:?}").into()),
        }
    }
    Ok(t0.elapsed().as_secs_f64() * 1000.0)
}

async fn timed(spec: &Value, store: Arc<dyn Provider>) -> Result<f64, AnyError> {
    let n = spec["n"].as_u64().ok_or("spec.n missing")?;
    let client = Client::new(store);
    match spec["workload"].as_str().unwrap_or_default() {
        "hello" => {
            let inputs = (0..n).map(|i| format!("user{i}")).collect();
            run_timed(&client, "Hello", inputs, |out| {
                out.starts_with("Hello, user")
            })
            .await
        }
        "chain" => {
            let expected = n.to_string();
            run_timed(&client, "Chain", vec![n.to_string()], |out| out == expected).await
        }
        "fanout" => {
            let expected = n.to_string();
            run_timed(&client, "Fanout", vec![n.to_string()], |out| {
                out == expected
            })
            .await
        }
        "payload" => {
            let bytes = spec["bytes"].as_u64().ok_or("spec.bytes missing")? as usize;
            let inputs = (0..n).map(|_| "x".repeat(bytes)).collect();
            run_timed(&client, "Payload", inputs, |out| out.len() == bytes).await
        }
        other => Err(format!("unknown workload '{other}'").into()),
    }
}

/// ms per step over the first and the last tenth of a chain of `n`.
fn tenths(n: usize) -> Value {
    let times = STEP_TIMES.lock().expect("step times");
    let k = (n / 10).max(1);
    if times.len() < n || n < 2 * k + 1 {
        return serde_json::json!({});
    }
    let ms = |a: Instant, b: Instant| (b - a).as_secs_f64() * 1000.0 / k as f64;
    serde_json::json!({
        "firstTenthStepMs": ms(times[0], times[k]),
        "lastTenthStepMs": ms(times[n - 1 - k], times[n - 1]),
    })
}

/// `n` instances waiting for an event, each raised once (bench/ours.js
/// `backlog`).
async fn backlog(spec: &Value, store: Arc<dyn Provider>) -> Result<Value, AnyError> {
    let n = spec["n"].as_u64().ok_or("spec.n missing")?;
    let client = Client::new(store);
    let before = rss_mb();
    for i in 0..n {
        client
            .start_orchestration(format!("Wait-{i}"), "Wait", "")
            .await?;
    }
    while client.get_queue_depths().await?.orchestrator_queue > 0 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let waiting = rss_mb();
    println!("{{\"timed\":true}}");
    let t0 = Instant::now();
    for i in 0..n {
        client
            .raise_event(format!("Wait-{i}"), "go", i.to_string())
            .await?;
    }
    for i in 0..n {
        let id = format!("Wait-{i}");
        match client.wait_for_orchestration(&id, WAIT).await? {
            OrchestrationStatus::Completed { output, .. } if output == i.to_string() => {}
            other => return Err(format!("{id} ended unexpectedly: {other:?}").into()),
        }
    }
    let ms = t0.elapsed().as_secs_f64() * 1000.0;
    Ok(
        serde_json::json!({ "ms": ms, "waitingKbPerInstance": (waiting - before) * 1024.0 / n as f64 }),
    )
}

/// Resident set size in MiB, from /proc.
fn rss_mb() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0.0);
    pages * 4096.0 / (1024.0 * 1024.0)
}

/// `n` hello orchestrations in batches of `batch`: RSS after the first and
/// after the last batch (bench/ours.js `memory`).
async fn memory(spec: &Value, store: Arc<dyn Provider>) -> Result<Value, AnyError> {
    let n = spec["n"].as_u64().ok_or("spec.n missing")?;
    let batch = spec["batch"].as_u64().ok_or("spec.batch missing")?;
    let client = Client::new(store);
    let (mut first, mut ms) = (0.0, 0.0);
    for b in 0..n.div_ceil(batch) {
        let inputs = (0..batch)
            .map(|i| format!("user{}", b * batch + i))
            .collect();
        let prefix = format!("mem{b}");
        ms += run_timed_as(&client, "Hello", &prefix, inputs, |out| {
            out.starts_with("Hello, user")
        })
        .await?;
        if b == 0 {
            first = rss_mb();
        }
    }
    Ok(serde_json::json!({ "rssFirstMb": first, "rssLastMb": rss_mb(), "ms": ms }))
}

async fn idle(spec: &Value, store: Arc<dyn Provider>) -> Result<(), AnyError> {
    let runtimes = spec["runtimes"].as_u64().unwrap_or(1);
    let mut started = Vec::new();
    for _ in 0..runtimes {
        let (activities, orchestrations) = registries();
        started.push(
            Runtime::start_with_options(store.clone(), activities, orchestrations, options(spec))
                .await,
        );
    }
    println!("{{\"ready\":true}}");
    // The parent measures while we wait; it closes our stdin to stop us.
    let mut sink = Vec::new();
    tokio::io::stdin().read_to_end(&mut sink).await?;
    for rt in started {
        rt.shutdown(Some(5000)).await;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), AnyError> {
    let arg = std::env::args()
        .nth(1)
        .ok_or("usage: duroxide-bench-baseline '<spec json>'")?;
    let spec: Value = serde_json::from_str(&arg)?;
    // duroxide installs a stdout logger when none is set; stdout carries our result.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
        .init();
    let store = open(&spec).await?;
    if spec["workload"] == "idle" {
        return idle(&spec, store).await;
    }
    if spec["workload"] == "start" {
        let text = |k: &str| spec[k].as_str().ok_or(format!("spec.{k} missing"));
        Client::new(store)
            .start_orchestration(text("instance")?, text("orchestration")?, text("input")?)
            .await?;
        println!("{{\"started\":true}}");
        return Ok(());
    }
    let (activities, orchestrations) = registries();
    let rt = Runtime::start_with_options(store.clone(), activities, orchestrations, options(&spec))
        .await;
    let result = if spec["workload"] == "memory" {
        memory(&spec, store).await
    } else if spec["workload"] == "backlog" {
        backlog(&spec, store).await
    } else {
        timed(&spec, store).await.map(|ms| {
            let mut out = serde_json::json!({ "ms": ms });
            if spec["workload"] == "chain" {
                if let (Some(o), Value::Object(t)) = (
                    out.as_object_mut(),
                    tenths(spec["n"].as_u64().unwrap_or(0) as usize),
                ) {
                    o.extend(t);
                }
            }
            out
        })
    };
    rt.shutdown(Some(5000)).await;
    println!("{}", result?);
    Ok(())
}
