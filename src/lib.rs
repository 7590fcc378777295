//! duroxide-node: the native half of the `duroxide-node` package.
//!
//! The public API is the hand-written JS layer (`index.js`, `lib/`); the
//! classes here are internal and named `Native*`.
//!
//! - `providers/`: SQLite and Postgres storage (`NativeProvider`) and the
//!   provider stack its layers share (`providers/layer.rs`).
//! - `runtime.rs`: `NativeRuntime`, lifecycle and registrations.
//! - `client/`: `NativeClient`.
//! - `bridge/`: how duroxide calls into JS (orchestrations, activities, tasks, retry).
//! - `options/`: `RuntimeOptions` from JS, validated.
//! - `errors.rs`: the one error enum and the `code` each variant becomes.
//! - `rules.rs`: the argument rules (names, ids, versions, durations, statuses).
//! - `logging/`: tracing to stderr or a file, and the WARNs of normal
//!   operation re-levelled (`relevel.rs`); `limits.rs`: crate limits.
//! - `guard/`: the provider layer of every runtime (fetch cap, lock
//!   hygiene, counters, health, events, livelock watchdog).
//! - `provider_errors.rs`: what a store's error means (deadlock, lost lock, ...).
//! - `trace_context.rs`: the W3C trace context an instance carries in its inputs.
//! - `runtime_metrics.rs`: the counters `metricsSnapshot()` returns;
//!   `metrics_text.rs`: the Prometheus text of `metricsText()`.
//! - `tokio_runtime.rs`: the Tokio runtime napi-rs runs everything on;
//!   `allocator.rs`: the global allocator.
//! - `testing/`: the native half of `duroxide-node/testing` (the replay check,
//!   `TestEnv`'s store with a provider layer of virtual time).
#![deny(clippy::all)]
// napi-rs registers the `#[napi]` exports only outside `cargo test`, so there
// every export would read as dead; the library build reports dead code.
#![cfg_attr(test, allow(dead_code))]

mod allocator;
mod bridge;
mod client;
mod errors;
mod guard;
mod limits;
mod logging;
mod metrics_text;
mod options;
mod provider_errors;
mod providers;
mod registrations;
mod rules;
mod runtime;
mod runtime_metrics;
mod testing;
mod tokio_runtime;
mod trace_context;
