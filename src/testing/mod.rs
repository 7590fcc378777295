//! The native half of `duroxide-node/testing` (`lib/testing/`).
//!
//! - `replay.rs`: `replayExecution`, the replay check of one execution
//!   against a runtime's registrations, through a bridge of its own.
//! - `divergence.rs`: runs duroxide's `ReplayEngine` over the history and
//!   finds the first event where code and history part.
//! - `entries.rs`: the history JS hands over, as the crate's events.
//! - `clock.rs`: `TestEnv`'s virtual time, a provider layer (held timers,
//!   `ctx.utcNow()`, idle detection).
//! - `test_store.rs`: `NativeTestStore`, `TestEnv`'s store, which moves
//!   virtual time.

mod clock;
pub(crate) mod divergence;
pub(crate) mod entries;
pub(crate) mod replay;
pub(crate) mod test_store;
