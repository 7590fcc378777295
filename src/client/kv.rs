//! Client KV reads: another process's view of an instance's key-value state.
//!
//! Values are the strings the orchestration stored (`ctx.setValue` stores a
//! string as is and anything else JSON-encoded), so they are handed back
//! unparsed, exactly as `ctx.getValue` returns them.

use std::collections::HashMap;

use napi_derive::napi;

use super::{millis, require_id, within, NativeClient};
use crate::errors::BridgeError;

#[napi]
impl NativeClient {
    /// The value of `key` on the instance, or `null` when unset (or no such instance).
    #[napi]
    pub async fn get_value(
        &self,
        instance_id: String,
        key: String,
    ) -> napi::Result<Option<String>> {
        require_id("instanceId", &instance_id)?;
        require_id("key", &key)?;
        Ok(self
            .inner
            .get_kv_value(&instance_id, &key)
            .await
            .map_err(BridgeError::from)?)
    }

    /// Resolves with the value once `key` is set; rejects with `ERR_TIMEOUT`.
    #[napi]
    pub async fn wait_for_value(
        &self,
        instance_id: String,
        key: String,
        timeout_ms: f64,
    ) -> napi::Result<String> {
        require_id("instanceId", &instance_id)?;
        require_id("key", &key)?;
        let timeout = millis("timeoutMs", timeout_ms)?;
        match within(
            timeout,
            self.inner.wait_for_kv_value(&instance_id, &key, timeout),
        )
        .await
        {
            Ok(value) => Ok(value),
            Err(duroxide::ClientError::Timeout) => Err(BridgeError::Timeout(format!(
                "key '{key}' of instance '{instance_id}' was not set within {timeout_ms} ms"
            ))
            .into()),
            Err(e) => Err(BridgeError::from(e).into()),
        }
    }

    /// Every key of the instance with its value (`{}` when none).
    #[napi]
    pub async fn get_kv_all_values(
        &self,
        instance_id: String,
    ) -> napi::Result<HashMap<String, String>> {
        require_id("instanceId", &instance_id)?;
        Ok(self
            .inner
            .get_kv_all_values(&instance_id)
            .await
            .map_err(BridgeError::from)?)
    }
}
