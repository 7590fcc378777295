//! `NativeClient`: starts, watches and manages instances.
//!
//! Payloads arrive already JSON-encoded by the JS layer; results go back as
//! typed objects whose payload fields are still JSON strings (the JS layer
//! parses them once).
//!
//! The methods are split by topic: this file starts and watches instances;
//! `kv.rs`, `stats.rs`, `management.rs`, `retention.rs` and `export.rs` add further `impl` blocks;
//! `search.rs` (instance pages) and `overview.rs` (counts over time) are the
//! dashboard's read-only queries, run by `store_sql.rs`.
//! `status.rs` reads an instance's status in one query; `wait.rs` waits for its end. `bounded.rs` bounds every store call, so a client never hangs on a database
//! that is down.

mod bounded;
mod existence;
mod export;
mod history;
mod kv;
mod management;
mod overview;
mod pending;
mod retention;
mod search;
mod set_aside;
mod stats;
mod status;
mod store_sql;
mod wait;
mod waiting;

pub(crate) use wait::within;

pub(crate) use management::HistoryEvent;

use std::sync::Arc;
use std::time::Duration;

use duroxide::runtime::OrchestrationStatus;
use napi_derive::napi;

use crate::bridge::failure;
use crate::errors::{BridgeError, BridgeResult, Settled};
use crate::options::{parse_client_options, ClientOptions};
use crate::providers::local::LocalRuntimes;
use crate::providers::wakeup::ended::Endings;
use crate::providers::{Backend, NativeProvider};
use crate::rules;
use crate::trace_context::{self, TraceContext};

/// The input of a start, in the trace-context envelope when there is one.
fn traced_input(input: String, trace: Option<TraceContext>) -> BridgeResult<String> {
    match trace {
        Some(t) => {
            t.validate("options")?;
            Ok(trace_context::wrap(input, &t))
        }
        None => Ok(input),
    }
}

/// Where an instance is, as `client.getStatus()` reports it.
#[napi(string_enum)]
#[derive(Debug, PartialEq, Eq)]
pub enum OrchestrationStatusName {
    Running,
    Completed,
    Failed,
    NotFound,
}

/// What kind of failure failed an instance (duroxide's `ErrorDetails`).
#[napi(string_enum = "lowercase")]
#[derive(Debug, PartialEq, Eq)]
pub enum ErrorCategory {
    Application,
    Infrastructure,
    Configuration,
    Poison,
}

impl From<&duroxide::ErrorDetails> for ErrorCategory {
    fn from(details: &duroxide::ErrorDetails) -> Self {
        use duroxide::ErrorDetails as D;
        match details {
            D::Application { .. } => ErrorCategory::Application,
            D::Infrastructure { .. } => ErrorCategory::Infrastructure,
            D::Configuration { .. } => ErrorCategory::Configuration,
            D::Poison { .. } => ErrorCategory::Poison,
        }
    }
}

/// `client.getStatus()` and friends.
#[napi(object)]
pub struct InstanceStatus {
    pub status: OrchestrationStatusName,
    /// JSON output when `Completed`.
    pub output: Option<String>,
    /// The failure's display message when `Failed`.
    pub error: Option<String>,
    /// Set when `Failed`.
    pub error_category: Option<ErrorCategory>,
    /// Set when `Failed`: JSON `{ message, category, name?, stack?, details?,
    /// nonRetryable?, activityName?, orchestrationName?, cancelled?, reason? }`
    /// (`bridge/failure.rs`; `cancelled` and `reason` for a cancelled instance).
    pub failure: Option<String>,
    pub custom_status: Option<String>,
    pub custom_status_version: i64,
}

/// The `failure` of a failed status: the structure of the failure text
/// (`bridge/failure.rs`); a cancelled instance's says so, with the reason
/// given to `cancelInstance`.
fn failure_json(details: &duroxide::ErrorDetails) -> serde_json::Value {
    let mut info = failure::info_json(&details.display_message(), details.category());
    if let duroxide::ErrorDetails::Application {
        kind: duroxide::AppErrorKind::Cancelled { reason },
        ..
    } = details
    {
        info["cancelled"] = serde_json::Value::Bool(true);
        info["reason"] = serde_json::Value::String(reason.clone());
    }
    info
}

impl From<OrchestrationStatus> for InstanceStatus {
    fn from(s: OrchestrationStatus) -> Self {
        let base = |status| InstanceStatus {
            status,
            output: None,
            error: None,
            error_category: None,
            failure: None,
            custom_status: None,
            custom_status_version: 0,
        };
        match s {
            OrchestrationStatus::NotFound => base(OrchestrationStatusName::NotFound),
            OrchestrationStatus::Running {
                custom_status,
                custom_status_version,
            } => InstanceStatus {
                custom_status,
                custom_status_version: custom_status_version as i64,
                ..base(OrchestrationStatusName::Running)
            },
            OrchestrationStatus::Completed {
                output,
                custom_status,
                custom_status_version,
            } => InstanceStatus {
                output: Some(output),
                custom_status,
                custom_status_version: custom_status_version as i64,
                ..base(OrchestrationStatusName::Completed)
            },
            OrchestrationStatus::Failed {
                details,
                custom_status,
                custom_status_version,
            } => InstanceStatus {
                error: Some(failure::message(&details.display_message()).to_string()),
                failure: Some(failure_json(&details).to_string()),
                error_category: Some(ErrorCategory::from(&details)),
                custom_status,
                custom_status_version: custom_status_version as i64,
                ..base(OrchestrationStatusName::Failed)
            },
        }
    }
}

#[napi]
pub struct NativeClient {
    inner: duroxide::Client,
    /// The store itself, for what the provider trait cannot ask (`pending.rs`).
    backend: Backend,
    /// The running runtimes of this process on the same provider.
    local: Arc<LocalRuntimes>,
    /// Wakes waits on instances that runtimes of this process end.
    endings: Arc<Endings>,
    options: ClientOptions,
    /// The ids this client started (`existence.rs`).
    started: existence::Started,
}

#[napi]
impl NativeClient {
    /// `options`: `{ maxPayloadBytes? }`, validated now (`options/client.rs`).
    #[napi(constructor)]
    pub fn new(
        provider: &NativeProvider,
        options: Option<serde_json::Value>,
    ) -> napi::Result<Self, crate::errors::ErrorCode> {
        Ok(Self {
            inner: duroxide::Client::new(bounded::bounded(provider.provider())),
            backend: provider.backend().clone(),
            local: provider.local(),
            endings: provider.endings(),
            options: parse_client_options(options.as_ref())?,
            started: existence::Started::default(),
        })
    }

    /// The client's options with defaults filled in.
    #[napi]
    pub fn effective_options(&self) -> serde_json::Value {
        self.options.effective()
    }

    /// `trace`: the W3C trace context the instance carries (`trace_context.rs`).
    #[napi(ts_return_type = "Promise<void>")]
    pub async fn start_orchestration(
        &self,
        instance_id: String,
        name: String,
        input: String,
        trace: Option<TraceContext>,
    ) -> Settled<()> {
        Settled::of(async {
            rules::root_instance_id("instanceId", &instance_id)?;
            rules::name("orchestrationName", &name)?;
            rules::payload("input", &input, self.options.max_payload_bytes)?;
            let input = traced_input(input, trace)?;
            self.inner
                .start_orchestration(&instance_id, name, input)
                .await?;
            self.started.add(&instance_id);
            Ok(())
        })
        .await
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub async fn start_orchestration_versioned(
        &self,
        instance_id: String,
        name: String,
        input: String,
        version: String,
        trace: Option<TraceContext>,
    ) -> Settled<()> {
        Settled::of(async {
            rules::root_instance_id("instanceId", &instance_id)?;
            rules::name("orchestrationName", &name)?;
            rules::version("version", &version)?;
            rules::payload("input", &input, self.options.max_payload_bytes)?;
            let input = traced_input(input, trace)?;
            self.inner
                .start_orchestration_versioned(&instance_id, name, version, input)
                .await?;
            self.started.add(&instance_id);
            Ok(())
        })
        .await
    }

    #[napi(ts_return_type = "Promise<InstanceStatus>")]
    pub async fn get_status(&self, instance_id: String) -> Settled<InstanceStatus> {
        Settled::of(async {
            rules::instance_id("instanceId", &instance_id)?;
            let status = status::read(&self.inner, &self.backend, &instance_id).await?;
            Ok(status.into())
        })
        .await
    }

    /// Resolves once the instance is terminal; rejects with `ERR_TIMEOUT`,
    /// or at once with `ERR_NOT_FOUND` for an instance that is neither
    /// stored nor waiting to start (`existence.rs`).
    #[napi(ts_return_type = "Promise<InstanceStatus>")]
    pub async fn wait_for_orchestration(
        &self,
        instance_id: String,
        timeout_ms: f64,
    ) -> Settled<InstanceStatus> {
        Settled::of(async {
            rules::instance_id("instanceId", &instance_id)?;
            let timeout = rules::millis("timeoutMs", timeout_ms)?;
            let wait = wait::terminal(
                &self.inner,
                &self.backend,
                &self.endings,
                &instance_id,
                || self.absent(&instance_id),
            );
            match within(timeout, wait).await {
                Ok(Some(status)) => Ok(status.into()),
                Ok(None) => {
                    let what = format!("waitForOrchestration('{instance_id}')");
                    Err(self.missing(&instance_id, &what).await)
                }
                Err(duroxide::ClientError::Timeout) => {
                    Err(self.unfinished(&instance_id, timeout_ms).await)
                }
                Err(e) => Err(e.into()),
            }
        })
        .await
    }

    #[napi(ts_return_type = "Promise<InstanceStatus>")]
    pub async fn wait_for_status_change(
        &self,
        instance_id: String,
        last_seen_version: f64,
        poll_interval_ms: f64,
        timeout_ms: f64,
    ) -> Settled<InstanceStatus> {
        Settled::of(async {
            rules::instance_id("instanceId", &instance_id)?;
            if !(last_seen_version.is_finite() && last_seen_version >= 0.0) {
                return Err(BridgeError::InvalidArgument(format!(
                    "lastSeenVersion must be a non-negative number, got {last_seen_version}"
                )));
            }
            let poll =
                rules::millis("pollIntervalMs", poll_interval_ms)?.max(Duration::from_millis(1));
            let timeout = rules::millis("timeoutMs", timeout_ms)?;
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
                ))),
                Err(e) => Err(e.into()),
            }
        })
        .await
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub async fn raise_event(
        &self,
        instance_id: String,
        event_name: String,
        data: String,
    ) -> Settled<()> {
        Settled::of(async {
            rules::target_instance_id("instanceId", &instance_id)?;
            rules::name("eventName", &event_name)?;
            rules::payload("data", &data, self.options.max_payload_bytes)?;
            Ok(self
                .inner
                .raise_event(instance_id, event_name, data)
                .await?)
        })
        .await
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub async fn enqueue_event(
        &self,
        instance_id: String,
        queue_name: String,
        data: String,
    ) -> Settled<()> {
        Settled::of(async {
            rules::target_instance_id("instanceId", &instance_id)?;
            rules::name("queueName", &queue_name)?;
            rules::payload("data", &data, self.options.max_payload_bytes)?;
            Ok(self
                .inner
                .enqueue_event(instance_id, queue_name, data)
                .await?)
        })
        .await
    }

    #[napi(ts_return_type = "Promise<void>")]
    pub async fn cancel_instance(
        &self,
        instance_id: String,
        reason: Option<String>,
    ) -> Settled<()> {
        Settled::of(async {
            rules::target_instance_id("instanceId", &instance_id)?;
            if let Some(r) = &reason {
                rules::text("reason", r)?;
            }
            let reason = reason.unwrap_or_else(|| "cancelled by client".into());
            Ok(self.inner.cancel_instance(instance_id, reason).await?)
        })
        .await
    }
}
