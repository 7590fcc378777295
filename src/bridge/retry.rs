//! The `retry` part of an activity descriptor (`scheduleActivityWithRetry`):
//! its wire shape, how it becomes a duroxide [`RetryPolicy`], and the retry
//! loop that runs it.

use std::time::Duration;

use duroxide::{BackoffStrategy, Either2, OrchestrationContext, RetryPolicy};
use serde::Deserialize;

use crate::errors::{BridgeError, BridgeResult};
use crate::rules::millis;

/// `retry` of `scheduleActivityWithRetry`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetrySpec {
    pub max_attempts: f64,
    pub timeout_ms: Option<f64>,
    pub total_timeout_ms: Option<f64>,
    pub backoff: Option<BackoffSpec>,
}

/// `'none' | 'fixed' | 'linear' | 'exponential'` or the object form.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum BackoffSpec {
    Named(String),
    Custom(BackoffObject),
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackoffObject {
    pub kind: String,
    pub base_ms: Option<f64>,
    pub delay_ms: Option<f64>,
    pub multiplier: Option<f64>,
    pub max_ms: Option<f64>,
}

fn backoff(spec: &BackoffSpec) -> BridgeResult<BackoffStrategy> {
    let ms = |field: &str, v: Option<f64>, default: u64| -> BridgeResult<Duration> {
        match v {
            Some(v) => millis(field, v),
            None => Ok(Duration::from_millis(default)),
        }
    };
    match spec {
        BackoffSpec::Named(name) => match name.as_str() {
            "none" => Ok(BackoffStrategy::None),
            "fixed" => Ok(BackoffStrategy::Fixed { delay: Duration::from_secs(1) }),
            "linear" => Ok(BackoffStrategy::Linear {
                base: Duration::from_millis(100),
                max: Duration::from_secs(30),
            }),
            "exponential" => Ok(BackoffStrategy::default()),
            other => Err(BridgeError::InvalidArgument(format!(
                "retry.backoff must be 'none', 'fixed', 'linear' or 'exponential', got '{other}'"
            ))),
        },
        BackoffSpec::Custom(o) => match o.kind.as_str() {
            "none" => Ok(BackoffStrategy::None),
            "fixed" => Ok(BackoffStrategy::Fixed {
                delay: ms("retry.backoff.delayMs", o.delay_ms.or(o.base_ms), 1000)?,
            }),
            "linear" => Ok(BackoffStrategy::Linear {
                base: ms("retry.backoff.baseMs", o.base_ms, 100)?,
                max: ms("retry.backoff.maxMs", o.max_ms, 30_000)?,
            }),
            "exponential" => {
                let multiplier = o.multiplier.unwrap_or(2.0);
                if !(multiplier.is_finite() && multiplier >= 1.0) {
                    return Err(BridgeError::InvalidArgument(format!(
                        "retry.backoff.multiplier must be a number >= 1, got {multiplier}"
                    )));
                }
                Ok(BackoffStrategy::Exponential {
                    base: ms("retry.backoff.baseMs", o.base_ms, 100)?,
                    multiplier,
                    max: ms("retry.backoff.maxMs", o.max_ms, 30_000)?,
                })
            }
            other => Err(BridgeError::InvalidArgument(format!(
                "retry.backoff.kind must be 'none', 'fixed', 'linear' or 'exponential', got '{other}'"
            ))),
        },
    }
}

pub(super) fn retry_policy(spec: &RetrySpec) -> BridgeResult<RetryPolicy> {
    let n = spec.max_attempts;
    if !(n.is_finite() && n >= 1.0 && n.fract() == 0.0 && n <= f64::from(u32::MAX)) {
        return Err(BridgeError::InvalidArgument(format!(
            "retry.maxAttempts must be an integer >= 1, got {n}"
        )));
    }
    let mut policy = RetryPolicy::new(n as u32);
    if let Some(b) = &spec.backoff {
        policy = policy.with_backoff(backoff(b)?);
    }
    // duroxide has one per-attempt timeout; `totalTimeoutMs` is its legacy alias.
    if let Some(t) = spec.timeout_ms.or(spec.total_timeout_ms) {
        policy = policy.with_timeout(millis("retry.timeoutMs", t)?);
    }
    Ok(policy)
}

/// duroxide's `schedule_activity_with_retry[_on_session]`, step for step (the
/// same activities and timers in the same order, so histories written by
/// either replay under the other), except that an attempt failing with a
/// `NonRetryableError` (`failure.rs`) ends the retries there.
pub(super) async fn with_retry(
    ctx: &OrchestrationContext,
    name: &str,
    input: &str,
    session: Option<&str>,
    policy: RetryPolicy,
) -> Result<String, String> {
    let mut last_error = String::new();
    for attempt in 1..=policy.max_attempts {
        let activity = match session {
            Some(s) => ctx.schedule_activity_on_session(name, input, s),
            None => ctx.schedule_activity(name, input),
        };
        let result = match policy.timeout {
            Some(timeout) => {
                let deadline = async {
                    ctx.schedule_timer(timeout).await;
                    "timeout: activity timed out".to_string()
                };
                match ctx.select2(activity, deadline).await {
                    Either2::First(result) => result,
                    // Timeouts are not retried.
                    Either2::Second(e) => return Err(e),
                }
            }
            None => activity.await,
        };
        let e = match result {
            Ok(output) => return Ok(output),
            Err(e) => e,
        };
        if super::failure::is_non_retryable(&e) {
            return Err(e);
        }
        if attempt < policy.max_attempts {
            // duroxide's wording, session included, with the structure left out.
            let on_session = session
                .map(|s| format!(" (session={s})"))
                .unwrap_or_default();
            ctx.trace(
                "warn",
                format!(
                    "Activity '{name}'{on_session} attempt {attempt}/{} failed: {}. Retrying...",
                    policy.max_attempts,
                    super::failure::message(&e)
                ),
            );
            let delay = policy.delay_for_attempt(attempt);
            if !delay.is_zero() {
                ctx.schedule_timer(delay).await;
            }
        }
        last_error = e;
    }
    Err(last_error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_backoff_forms() {
        let named = RetrySpec {
            max_attempts: 3.0,
            timeout_ms: None,
            total_timeout_ms: Some(500.0),
            backoff: Some(BackoffSpec::Named("fixed".into())),
        };
        let p = retry_policy(&named).unwrap();
        assert_eq!(p.timeout, Some(Duration::from_millis(500)));
        assert_eq!(p.delay_for_attempt(2), Duration::from_secs(1));
        let custom = RetrySpec {
            max_attempts: 2.0,
            timeout_ms: None,
            total_timeout_ms: None,
            backoff: Some(BackoffSpec::Custom(BackoffObject {
                kind: "exponential".into(),
                base_ms: Some(10.0),
                delay_ms: None,
                multiplier: Some(3.0),
                max_ms: Some(1000.0),
            })),
        };
        assert_eq!(
            retry_policy(&custom).unwrap().delay_for_attempt(2),
            Duration::from_millis(30)
        );
        let zero = RetrySpec {
            max_attempts: 0.0,
            timeout_ms: None,
            total_timeout_ms: None,
            backoff: None,
        };
        assert!(retry_policy(&zero).is_err());
    }
}
