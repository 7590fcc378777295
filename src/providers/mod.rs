//! Storage providers. `NativeProvider` is the one native handle JS holds for
//! any backend; `sqlite.rs` and `postgres.rs` are its constructors.

pub mod call_policy;
pub mod decorator;
pub mod pg_retry;
pub mod postgres;
pub mod sqlite;
pub mod sqlite_retry;

use std::sync::Arc;

use duroxide::providers::Provider;
use napi_derive::napi;

/// A connected storage backend, shareable by any number of runtimes and clients.
#[napi]
pub struct NativeProvider {
    inner: Arc<dyn Provider>,
    kind: &'static str,
}

impl NativeProvider {
    pub(crate) fn new(inner: Arc<dyn Provider>, kind: &'static str) -> Self {
        Self { inner, kind }
    }

    pub(crate) fn provider(&self) -> Arc<dyn Provider> {
        self.inner.clone()
    }
}

#[napi]
impl NativeProvider {
    /// `'sqlite'` or `'postgres'`.
    #[napi(getter)]
    pub fn kind(&self) -> String {
        self.kind.to_string()
    }
}
