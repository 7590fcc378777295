//! Client retention: deleting instances and pruning old executions.

use duroxide::providers::{
    DeleteInstanceResult as CrateDeleteResult, InstanceFilter as CrateFilter,
    PruneOptions as CratePruneOptions, PruneResult as CratePruneResult,
};
use duroxide::ClientError;
use napi_derive::napi;

use super::management::{n, not_found};
use super::NativeClient;
use crate::errors::{BridgeError, BridgeResult, Settled};
use crate::provider_errors::ProviderFault;
use crate::rules;

/// `client.deleteInstance(...)` and `deleteInstanceBulk(...)`.
#[napi(object)]
pub struct DeleteInstanceResult {
    /// Including descendant sub-orchestrations.
    pub instances_deleted: i64,
    pub executions_deleted: i64,
    pub events_deleted: i64,
    /// Orchestrator, worker and timer messages removed.
    pub queue_messages_deleted: i64,
}

/// `client.pruneExecutions(...)` and `pruneExecutionsBulk(...)`.
#[napi(object)]
pub struct PruneResult {
    pub instances_processed: i64,
    pub executions_deleted: i64,
    pub events_deleted: i64,
}

/// Which instances a bulk call considers; all criteria are ANDed.
#[napi(object)]
pub struct InstanceFilter {
    /// Only these instance ids.
    pub instance_ids: Option<Vec<String>>,
    /// Only instances whose current execution completed before this epoch ms.
    pub completed_before: Option<f64>,
    /// At most this many instances (crate default 1000).
    pub limit: Option<u32>,
}

/// Which executions a prune deletes; the current execution is never pruned.
#[napi(object)]
pub struct PruneOptions {
    /// Keep the newest N executions (the current one counts).
    pub keep_last: Option<u32>,
    /// Only executions completed before this epoch ms.
    pub completed_before: Option<f64>,
}

/// The crate recognises SQLite's "still running" text but not duroxide-pg's
/// "is Running. Use force=true", which would otherwise surface as a provider error.
fn delete_error(err: ClientError, instance_id: &str) -> BridgeError {
    match &err {
        ClientError::Provider(p) if ProviderFault::is(p, ProviderFault::DeleteRunning) => {
            BridgeError::from(ClientError::InstanceStillRunning {
                instance_id: instance_id.to_string(),
            })
        }
        _ => not_found(err, || format!("instance '{instance_id}' not found")),
    }
}

/// Epoch milliseconds from JS; the stores take them as signed 64-bit.
fn epoch_ms(field: &str, value: Option<f64>) -> BridgeResult<Option<u64>> {
    match value {
        None => Ok(None),
        Some(v)
            if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 9_007_199_254_740_991.0 =>
        {
            Ok(Some(v as u64))
        }
        Some(v) => Err(BridgeError::InvalidOption(format!(
            "{field} must be a non-negative integer of epoch milliseconds, got {v}"
        ))),
    }
}

fn crate_filter(filter: Option<InstanceFilter>) -> BridgeResult<CrateFilter> {
    let Some(f) = filter else {
        return Ok(CrateFilter::default());
    };
    if let Some(ids) = &f.instance_ids {
        for id in ids {
            rules::instance_id("filter.instanceIds[]", id)?;
        }
    }
    Ok(CrateFilter {
        instance_ids: f.instance_ids,
        completed_before: epoch_ms("filter.completedBefore", f.completed_before)?,
        limit: f.limit,
    })
}

fn crate_prune_options(options: Option<PruneOptions>) -> BridgeResult<CratePruneOptions> {
    let Some(o) = options else {
        return Ok(CratePruneOptions::default());
    };
    // duroxide-pg passes keepLast to SQL as a 32-bit signed integer.
    if let Some(k) = o.keep_last {
        if k > i32::MAX as u32 {
            return Err(BridgeError::InvalidOption(format!(
                "options.keepLast must be at most {}, got {k}",
                i32::MAX
            )));
        }
    }
    Ok(CratePruneOptions {
        keep_last: o.keep_last,
        completed_before: epoch_ms("options.completedBefore", o.completed_before)?,
    })
}

impl From<CrateDeleteResult> for DeleteInstanceResult {
    fn from(r: CrateDeleteResult) -> Self {
        DeleteInstanceResult {
            instances_deleted: n(r.instances_deleted),
            executions_deleted: n(r.executions_deleted),
            events_deleted: n(r.events_deleted),
            queue_messages_deleted: n(r.queue_messages_deleted),
        }
    }
}

impl From<CratePruneResult> for PruneResult {
    fn from(r: CratePruneResult) -> Self {
        PruneResult {
            instances_processed: n(r.instances_processed),
            executions_deleted: n(r.executions_deleted),
            events_deleted: n(r.events_deleted),
        }
    }
}

#[napi]
impl NativeClient {
    /// Deletes a root instance with its sub-orchestrations. A running
    /// instance needs `force` (and keeps running in memory until its turn ends).
    #[napi(ts_return_type = "Promise<DeleteInstanceResult>")]
    pub async fn delete_instance(
        &self,
        instance_id: String,
        force: bool,
    ) -> Settled<DeleteInstanceResult> {
        Settled::of(async {
            rules::instance_id("instanceId", &instance_id)?;
            let r = self
                .inner
                .delete_instance(&instance_id, force)
                .await
                .map_err(|e| delete_error(e, &instance_id))?;
            self.started.forget(&instance_id);
            Ok(r.into())
        })
        .await
    }

    /// Deletes terminal root instances matching `filter`; running ones are skipped.
    #[napi(ts_return_type = "Promise<DeleteInstanceResult>")]
    pub async fn delete_instance_bulk(
        &self,
        filter: Option<InstanceFilter>,
    ) -> Settled<DeleteInstanceResult> {
        Settled::of(async {
            let filter = crate_filter(filter)?;
            let r = self
                .inner
                .delete_instance_bulk(filter)
                .await
                .map_err(BridgeError::from)?;
            Ok(r.into())
        })
        .await
    }

    /// Deletes old executions of one instance; the current one is kept.
    #[napi(ts_return_type = "Promise<PruneResult>")]
    pub async fn prune_executions(
        &self,
        instance_id: String,
        options: Option<PruneOptions>,
    ) -> Settled<PruneResult> {
        Settled::of(async {
            rules::instance_id("instanceId", &instance_id)?;
            let options = crate_prune_options(options)?;
            let r = self
                .inner
                .prune_executions(&instance_id, options)
                .await
                .map_err(|e| not_found(e, || format!("instance '{instance_id}' not found")))?;
            Ok(r.into())
        })
        .await
    }

    /// `pruneExecutions` over every instance matching `filter`.
    #[napi(ts_return_type = "Promise<PruneResult>")]
    pub async fn prune_executions_bulk(
        &self,
        filter: Option<InstanceFilter>,
        options: Option<PruneOptions>,
    ) -> Settled<PruneResult> {
        Settled::of(async {
            let filter = crate_filter(filter)?;
            let options = crate_prune_options(options)?;
            let r = self
                .inner
                .prune_executions_bulk(filter, options)
                .await
                .map_err(BridgeError::from)?;
            Ok(r.into())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_and_options_are_checked() {
        assert!(epoch_ms("x", Some(-1.0)).is_err());
        assert_eq!(epoch_ms("x", Some(5.0)).unwrap(), Some(5));
        assert!(crate_prune_options(Some(PruneOptions {
            keep_last: Some(u32::MAX),
            completed_before: None
        }))
        .is_err());
    }
}
