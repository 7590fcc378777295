//! `NativeClient`: starts, watches and manages instances.
//!
//! Payloads arrive already JSON-encoded by the JS layer; results go back as
//! typed objects whose payload fields are still JSON strings (the JS layer
//! parses them once).
//!
//! The methods are split by topic: this file starts and watches instances;
//! `kv.rs`, `stats.rs`, `management.rs` and `retention.rs` add further `impl` blocks.
//! `bounded.rs` bounds every store call, so a client never hangs on a database
//! that is down.

mod bounded;
mod history;
mod kv;
mod management;
mod retention;
mod stats;

use std::time::Duration;

use duroxide::runtime::OrchestrationStatus;
use napi_derive::napi;

use crate::errors::{BridgeError, BridgeResult};
use crate::providers::NativeProvider;

/// `client.getStatus()` and friends.
#[napi(object)]
pub struct InstanceStatus {
    /// `'Running' | 'Completed' | 'Failed' | 'NotFound'`.
    pub status: String,
    /// JSON output when `Completed`.
    pub output: Option<String>,
    /// The failure's display message when `Failed`.
    pub error: Option<String>,
    /// `'application' | 'infrastructure' | 'configuration' | 'poison'` when `Failed`.
    pub error_category: Option<String>,
    pub custom_status: Option<String>,
    pub custom_status_version: i64,
}

impl From<OrchestrationStatus> for InstanceStatus {
    fn from(s: OrchestrationStatus) -> Self {
        let base = |status: &str| InstanceStatus {
            status: status.to_string(),
            output: None,
            error: None,
            error_category: None,
            custom_status: None,
            custom_status_version: 0,
        };
        match s {
            OrchestrationStatus::NotFound => base("NotFound"),
            OrchestrationStatus::Running {
                custom_status,
                custom_status_version,
            } => InstanceStatus {
                custom_status,
                custom_status_version: custom_status_version as i64,
                ..base("Running")
            },
            OrchestrationStatus::Completed {
                output,
                custom_status,
                custom_status_version,
            } => InstanceStatus {
                output: Some(output),
                custom_status,
                custom_status_version: custom_status_version as i64,
                ..base("Completed")
            },
            OrchestrationStatus::Failed {
                details,
                custom_status,
                custom_status_version,
            } => InstanceStatus {
                error: Some(details.display_message()),
                error_category: Some(details.category().to_string()),
                custom_status,
                custom_status_version: custom_status_version as i64,
                ..base("Failed")
            },
        }
    }
}

pub(crate) fn require_id(field: &str, id: &str) -> BridgeResult<()> {
    if id.is_empty() {
        return Err(BridgeError::InvalidArgument(format!(
            "{field} must be a non-empty string"
        )));
    }
    Ok(())
}

/// Root instance ids may not look like generated sub-orchestration ids.
pub(crate) fn require_root_id(field: &str, id: &str) -> BridgeResult<()> {
    require_id(field, id)?;
    if id.starts_with("sub::") || id.contains("::sub::") {
        return Err(BridgeError::InvalidArgument(format!(
            "{field} '{id}' uses the reserved 'sub::' marker of generated sub-orchestration ids"
        )));
    }
    Ok(())
}

/// Ends a wait at its deadline. duroxide's waits sleep between polls without
/// cutting the last sleep at the deadline, and each status read may itself
/// take up to the client's call bound (`bounded.rs`, 10 s) on a slow store, so
/// a wait could run seconds past the timeout its caller gave.
pub(crate) async fn within<T>(
    timeout: Duration,
    wait: impl std::future::Future<Output = Result<T, duroxide::ClientError>>,
) -> Result<T, duroxide::ClientError> {
    tokio::time::timeout(timeout, wait)
        .await
        .unwrap_or(Err(duroxide::ClientError::Timeout))
}

pub(crate) fn millis(field: &str, value: f64) -> BridgeResult<Duration> {
    if !(value.is_finite() && value >= 0.0) {
        return Err(BridgeError::InvalidArgument(format!(
            "{field} must be a non-negative number of milliseconds, got {value}"
        )));
    }
    Ok(Duration::from_millis(value as u64))
}

#[napi]
pub struct NativeClient {
    inner: duroxide::Client,
}

#[napi]
impl NativeClient {
    #[napi(constructor)]
    pub fn new(provider: &NativeProvider) -> Self {
        Self {
            inner: duroxide::Client::new(bounded::bounded(provider.provider())),
        }
    }

    #[napi]
    pub async fn start_orchestration(
        &self,
        instance_id: String,
        name: String,
        input: String,
    ) -> napi::Result<()> {
        require_root_id("instanceId", &instance_id)?;
        require_id("orchestration name", &name)?;
        self.inner
            .start_orchestration(instance_id, name, input)
            .await
            .map_err(BridgeError::from)?;
        Ok(())
    }

    #[napi]
    pub async fn start_orchestration_versioned(
        &self,
        instance_id: String,
        name: String,
        input: String,
        version: String,
    ) -> napi::Result<()> {
        require_root_id("instanceId", &instance_id)?;
        require_id("orchestration name", &name)?;
        semver::Version::parse(&version).map_err(|e| {
            BridgeError::InvalidArgument(format!(
                "version '{version}' is not semver (for example '1.2.0'): {e}"
            ))
        })?;
        self.inner
            .start_orchestration_versioned(instance_id, name, version, input)
            .await
            .map_err(BridgeError::from)?;
        Ok(())
    }

    #[napi]
    pub async fn get_status(&self, instance_id: String) -> napi::Result<InstanceStatus> {
        require_id("instanceId", &instance_id)?;
        let status = self
            .inner
            .get_orchestration_status(&instance_id)
            .await
            .map_err(BridgeError::from)?;
        Ok(status.into())
    }

    /// Resolves once the instance is terminal; rejects with `ERR_TIMEOUT`.
    #[napi]
    pub async fn wait_for_orchestration(
        &self,
        instance_id: String,
        timeout_ms: f64,
    ) -> napi::Result<InstanceStatus> {
        require_id("instanceId", &instance_id)?;
        let timeout = millis("timeoutMs", timeout_ms)?;
        match within(
            timeout,
            self.inner.wait_for_orchestration(&instance_id, timeout),
        )
        .await
        {
            Ok(status) => Ok(status.into()),
            Err(duroxide::ClientError::Timeout) => Err(BridgeError::Timeout(format!(
                "instance '{instance_id}' did not finish within {timeout_ms} ms"
            ))
            .into()),
            Err(e) => Err(BridgeError::from(e).into()),
        }
    }

    #[napi]
    pub async fn wait_for_status_change(
        &self,
        instance_id: String,
        last_seen_version: f64,
        poll_interval_ms: f64,
        timeout_ms: f64,
    ) -> napi::Result<InstanceStatus> {
        require_id("instanceId", &instance_id)?;
        if !(last_seen_version.is_finite() && last_seen_version >= 0.0) {
            return Err(BridgeError::InvalidArgument(format!(
                "lastSeenVersion must be a non-negative number, got {last_seen_version}"
            ))
            .into());
        }
        let poll = millis("pollIntervalMs", poll_interval_ms)?.max(Duration::from_millis(1));
        let timeout = millis("timeoutMs", timeout_ms)?;
        let wait = self.inner.wait_for_status_change(
            &instance_id,
            last_seen_version as u64,
            poll,
            timeout,
        );
        match within(timeout, wait).await {
            Ok(status) => Ok(status.into()),
            Err(duroxide::ClientError::Timeout) => Err(BridgeError::Timeout(format!(
                "custom status of '{instance_id}' did not change past version {last_seen_version} within {timeout_ms} ms"
            ))
            .into()),
            Err(e) => Err(BridgeError::from(e).into()),
        }
    }

    #[napi]
    pub async fn raise_event(
        &self,
        instance_id: String,
        event_name: String,
        data: String,
    ) -> napi::Result<()> {
        require_id("instanceId", &instance_id)?;
        require_id("eventName", &event_name)?;
        self.inner
            .raise_event(instance_id, event_name, data)
            .await
            .map_err(BridgeError::from)?;
        Ok(())
    }

    #[napi]
    pub async fn enqueue_event(
        &self,
        instance_id: String,
        queue_name: String,
        data: String,
    ) -> napi::Result<()> {
        require_id("instanceId", &instance_id)?;
        require_id("queueName", &queue_name)?;
        self.inner
            .enqueue_event(instance_id, queue_name, data)
            .await
            .map_err(BridgeError::from)?;
        Ok(())
    }

    #[napi]
    pub async fn cancel_instance(
        &self,
        instance_id: String,
        reason: Option<String>,
    ) -> napi::Result<()> {
        require_id("instanceId", &instance_id)?;
        self.inner
            .cancel_instance(
                instance_id,
                reason.unwrap_or_else(|| "cancelled by client".into()),
            )
            .await
            .map_err(BridgeError::from)?;
        Ok(())
    }
}
