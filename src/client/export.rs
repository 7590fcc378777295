//! `client.exportHistory(id, executionId?)`: one execution's history in the
//! crate's own serialized form, which loses nothing (unlike the readable
//! entries of `readExecutionHistory`), so a history captured from production
//! can be replayed against a new build in CI (`duroxide-node/testing`).

use duroxide::EventKind;
use napi_derive::napi;
use serde_json::{json, Value};

use super::management::{execution_id, not_found};
use super::NativeClient;
use crate::errors::{BridgeError, Settled};
use crate::rules;

/// Names the format; `replayHistory` and `importHistory` check it.
pub(crate) const FORMAT: &str = "duroxide-history";
pub(crate) const FORMAT_VERSION: u32 = 1;

#[napi]
impl NativeClient {
    /// `{ format, formatVersion, instanceId, executionId, orchestrationName,
    /// orchestrationVersion, events }` of one execution (default: the current one).
    #[napi(ts_return_type = "Promise<any>")]
    pub async fn export_history(
        &self,
        instance_id: String,
        execution: Option<f64>,
    ) -> Settled<Value> {
        Settled::of(async {
            rules::instance_id("instanceId", &instance_id)?;
            let missing = || format!("instance '{instance_id}' not found");
            let execution = match execution {
                Some(e) => execution_id(e)?,
                None => {
                    self.inner
                        .get_instance_info(&instance_id)
                        .await
                        .map_err(|e| not_found(e, missing))?
                        .current_execution_id
                }
            };
            let events = self
                .inner
                .read_execution_history(&instance_id, execution)
                .await
                .map_err(|e| {
                    not_found(e, || {
                        format!("execution {execution} of instance '{instance_id}' not found")
                    })
                })?;
            let Some(EventKind::OrchestrationStarted { name, version, .. }) =
                events.first().map(|e| &e.kind)
            else {
                return Err(BridgeError::NotFound(format!(
                    "execution {execution} of instance '{instance_id}' has no history"
                )));
            };
            Ok(json!({
                "format": FORMAT,
                "formatVersion": FORMAT_VERSION,
                "instanceId": instance_id,
                "executionId": execution,
                "orchestrationName": name,
                "orchestrationVersion": version,
                "events": events,
            }))
        })
        .await
    }
}
