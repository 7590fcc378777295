//! Client KV reads: another process's view of an instance's key-value state.
//!
//! Values are the strings the orchestration stored (`ctx.setValue` stores a
//! string as is and anything else JSON-encoded), so they are handed back
//! unparsed, exactly as `ctx.getValue` returns them.

use std::collections::HashMap;

use napi_derive::napi;

use super::{within, NativeClient};
use crate::errors::{BridgeError, Settled};
use crate::rules;

#[napi]
impl NativeClient {
    /// The value of `key` on the instance, or `null` when unset (or no such instance).
    #[napi(ts_return_type = "Promise<string | null>")]
    pub async fn get_value(&self, instance_id: String, key: String) -> Settled<Option<String>> {
        Settled::of(async {
            rules::instance_id("instanceId", &instance_id)?;
            rules::name("key", &key)?;
            Ok(self.inner.get_kv_value(&instance_id, &key).await?)
        })
        .await
    }

    /// Resolves with the value once `key` is set; rejects with `ERR_TIMEOUT`.
    #[napi(ts_return_type = "Promise<string>")]
    pub async fn wait_for_value(
        &self,
        instance_id: String,
        key: String,
        timeout_ms: f64,
    ) -> Settled<String> {
        Settled::of(async {
            rules::instance_id("instanceId", &instance_id)?;
            rules::name("key", &key)?;
            let timeout = rules::millis("timeoutMs", timeout_ms)?;
            match within(
                timeout,
                self.inner.wait_for_kv_value(&instance_id, &key, timeout),
            )
            .await
            {
                Ok(value) => Ok(value),
                Err(duroxide::ClientError::Timeout) => Err(BridgeError::Timeout(format!(
                    "key '{key}' of instance '{instance_id}' was not set within {timeout_ms} ms"
                ))),
                Err(e) => Err(e.into()),
            }
        })
        .await
    }

    /// Every key of the instance with its value (`{}` when none).
    #[napi(ts_return_type = "Promise<Record<string, string>>")]
    pub async fn get_kv_all_values(&self, instance_id: String) -> Settled<HashMap<String, String>> {
        Settled::of(async {
            rules::instance_id("instanceId", &instance_id)?;
            Ok(self.inner.get_kv_all_values(&instance_id).await?)
        })
        .await
    }
}
