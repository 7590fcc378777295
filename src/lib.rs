//! duroxide-node: the native half of the `duroxide-node` package.
//!
//! The public API is the hand-written JS layer (`index.js`, `lib/`); the
//! classes here are internal and named `Native*`.
//!
//! - `providers/`: SQLite and Postgres storage (`NativeProvider`).
//! - `runtime.rs`: `NativeRuntime`, lifecycle and registrations.
//! - `client/`: `NativeClient`.
//! - `bridge/`: how duroxide calls into JS (orchestrations, activities, tasks, retry).
//! - `options/`: `RuntimeOptions` from JS, validated.
//! - `errors.rs`: the one error enum and the `code` each variant becomes.
//! - `rules.rs`: the argument rules (names, ids, versions, durations, statuses).
//! - `logging.rs`, `limits.rs`: tracing to stderr or a file; crate limits.
//! - `guard/`: the provider decorator of every runtime (fetch cap, lock
//!   hygiene, counters, health, events, livelock watchdog).
#![deny(clippy::all)]

pub mod bridge;
pub mod client;
pub mod errors;
pub mod guard;
pub mod limits;
pub mod logging;
pub mod options;
pub mod providers;
pub mod registrations;
mod rules;
pub mod runtime;
