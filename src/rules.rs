//! The argument rules of every native entry point, in one place: names,
//! instance ids (and the reserved `sub::` marker), semver versions, the
//! default version, millisecond durations (and their written form, `'1d'`)
//! and instance statuses.
//!
//! The client, the task descriptors and the registrations all check their
//! arguments here, so a rule and its message are written once. The JS layer
//! only checks types (what napi cannot convert); the values themselves are
//! judged here. Each function takes the argument's JS name (`field`) so the
//! message names it as the caller wrote it.
//!
//! This module depends on nothing but the error type, so any module may use it.

use std::time::Duration;

use napi::bindgen_prelude::Either;
use napi_derive::napi;
use semver::Version;

use crate::errors::{BridgeError, BridgeResult};

/// The version a plain `registerOrchestration` registers, as duroxide does.
pub(crate) const DEFAULT_VERSION: &str = "1.0.0";

/// The marker of instance ids duroxide generates for sub-orchestrations.
const SUB_MARKER: &str = "sub::";

fn invalid(message: String) -> BridgeError {
    BridgeError::InvalidArgument(message)
}

/// Names of activities, orchestrations, events, queues, keys, tags and
/// sessions: any string that is not blank.
pub(crate) fn name(field: &str, value: &str) -> BridgeResult<()> {
    if value.trim().is_empty() {
        return Err(invalid(format!("{field} must be a non-empty string")));
    }
    Ok(())
}

/// An instance id to look up: any non-empty string.
pub(crate) fn instance_id(field: &str, id: &str) -> BridgeResult<()> {
    if id.is_empty() {
        return Err(invalid(format!("{field} must be a non-empty string")));
    }
    Ok(())
}

/// An instance id the caller chooses for a new instance. It may not look like
/// a generated sub-orchestration id: duroxide asserts on those, which would
/// fail the turn with a panic.
pub(crate) fn root_instance_id(field: &str, id: &str) -> BridgeResult<()> {
    instance_id(field, id)?;
    if id.starts_with(SUB_MARKER) || id.contains("::sub::") {
        return Err(invalid(format!(
            "{field} '{id}' uses the reserved '{SUB_MARKER}' marker of generated sub-orchestration ids"
        )));
    }
    Ok(())
}

/// A W3C `traceparent` header value (`00-<32 hex trace id>-<16 hex parent
/// id>-<2 hex flags>`): lower-case hex, trace and parent ids not all zero,
/// version `ff` invalid, and later versions may append `-...` fields.
pub(crate) fn traceparent(field: &str, value: &str) -> BridgeResult<()> {
    let bad = |why: &str| {
        Err(invalid(format!(
            "{field} must be a W3C traceparent like '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' ({why}), got '{}'",
            value.chars().take(80).collect::<String>()
        )))
    };
    let hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let mut parts = value.splitn(5, '-');
    let (Some(version), Some(trace_id), Some(parent_id), Some(flags)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return bad("four '-'-separated fields");
    };
    let rest = parts.next();
    if !hex(version, 2) || !hex(trace_id, 32) || !hex(parent_id, 16) || !hex(flags, 2) {
        return bad("lower-case hex fields of 2, 32, 16 and 2 digits");
    }
    if version == "ff" {
        return bad("version ff is invalid");
    }
    if version == "00" && rest.is_some() {
        return bad("version 00 has exactly four fields");
    }
    if trace_id.bytes().all(|b| b == b'0') || parent_id.bytes().all(|b| b == b'0') {
        return bad("an all-zero trace id or parent id is invalid");
    }
    Ok(())
}

/// A W3C `tracestate` header value: at most 512 printable ASCII characters.
pub(crate) fn tracestate(field: &str, value: &str) -> BridgeResult<()> {
    if value.len() > 512 || !value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err(invalid(format!(
            "{field} must be a W3C tracestate: at most 512 printable ASCII characters"
        )));
    }
    Ok(())
}

/// A semver version (`1.2.0`); duroxide's registry panics on anything else.
pub(crate) fn version(field: &str, value: &str) -> BridgeResult<Version> {
    Version::parse(value).map_err(|e| {
        invalid(format!(
            "{field} '{value}' is not semver (not a semver version like '1.2.0'): {e}"
        ))
    })
}

/// A duration in milliseconds, as a JS number. Fractions, negatives and
/// non-finite values are refused rather than truncated by the cast, so a
/// wait or a timer is never silently shorter than asked.
pub(crate) fn millis(field: &str, value: f64) -> BridgeResult<Duration> {
    if !(value.is_finite() && value >= 0.0 && value.fract() == 0.0) {
        return Err(invalid(format!(
            "{field} must be a non-negative integer number of milliseconds, got {value}"
        )));
    }
    Ok(Duration::from_millis(value as u64))
}

/// A duration written as milliseconds (a JS number, as [`millis`]) or as
/// text: one or more `<integer><unit>` parts, unit `ms`, `s`, `m`, `h` or
/// `d` (`'500ms'`, `'30s'`, `'1d'`, `'1h30m'`).
pub(crate) fn duration(field: &str, value: Either<f64, String>) -> BridgeResult<Duration> {
    let text = match value {
        Either::A(ms) => return millis(field, ms),
        Either::B(text) => text,
    };
    let refuse = || {
        invalid(format!(
            "{field} '{text}' is not a duration; write milliseconds as a number or text like '500ms', '30s', '5m', '2h', '1d'"
        ))
    };
    let mut total = Duration::ZERO;
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(refuse());
    }
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let amount: u64 = rest[..digits].parse().map_err(|_| refuse())?;
        rest = &rest[digits..];
        let unit_len = rest.len()
            - rest
                .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .len();
        let unit_ms: u64 = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return Err(refuse()),
        };
        rest = &rest[unit_len..];
        let part = amount.checked_mul(unit_ms).ok_or_else(refuse)?;
        total = total
            .checked_add(Duration::from_millis(part))
            .ok_or_else(refuse)?;
    }
    Ok(total)
}

/// The status of an instance's current execution, as the stores record it
/// (`listInstancesByStatus`, `getInstanceInfo().status`).
#[napi(string_enum)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutionStatusName {
    Running,
    Completed,
    Failed,
    ContinuedAsNew,
}

impl ExecutionStatusName {
    pub(crate) const ALL: [ExecutionStatusName; 4] = [
        ExecutionStatusName::Running,
        ExecutionStatusName::Completed,
        ExecutionStatusName::Failed,
        ExecutionStatusName::ContinuedAsNew,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ExecutionStatusName::Running => "Running",
            ExecutionStatusName::Completed => "Completed",
            ExecutionStatusName::Failed => "Failed",
            ExecutionStatusName::ContinuedAsNew => "ContinuedAsNew",
        }
    }

    /// The status a store reported; `None` for a string no store writes.
    pub(crate) fn from_store(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == value)
    }
}

/// A status a store reported; one no store writes is a bug to surface.
pub(crate) fn store_status(value: &str) -> BridgeResult<ExecutionStatusName> {
    ExecutionStatusName::from_store(value).ok_or_else(|| {
        BridgeError::Internal(format!(
            "the store reported an unknown execution status '{value}'"
        ))
    })
}

/// A status string from JS, refused with the list of valid ones.
pub(crate) fn execution_status(field: &str, value: &str) -> BridgeResult<ExecutionStatusName> {
    ExecutionStatusName::from_store(value).ok_or_else(|| {
        let all: Vec<&str> = ExecutionStatusName::ALL
            .iter()
            .map(|s| s.as_str())
            .collect();
        invalid(format!(
            "{field} '{value}' is not an instance status; expected one of {}",
            all.join(", ")
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_follows_w3c() {
        let ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        assert!(traceparent("t", ok).is_ok());
        assert!(traceparent(
            "t",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x"
        )
        .is_ok());
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
        ] {
            let e = traceparent("options.traceparent", bad).unwrap_err();
            assert!(e.message().contains("options.traceparent"), "{bad}");
        }
        assert!(tracestate("t", "rojo=00f067aa0ba902b7").is_ok());
        assert!(tracestate("t", "a\nb").is_err());
    }

    #[test]
    fn millis_has_one_contract() {
        assert_eq!(millis("t", 1500.0).unwrap(), Duration::from_millis(1500));
        assert_eq!(millis("t", 0.0).unwrap(), Duration::ZERO);
        for bad in [-1.0, 1.5, f64::NAN, f64::INFINITY] {
            let err = millis("timeoutMs", bad).unwrap_err();
            assert!(err
                .message()
                .starts_with("timeoutMs must be a non-negative integer"));
        }
    }

    #[test]
    fn durations_as_numbers_or_text() {
        let text = |t: &str| duration("by", Either::B(t.to_string()));
        assert_eq!(
            duration("by", Either::A(250.0)).unwrap(),
            Duration::from_millis(250)
        );
        assert_eq!(text("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(text("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(text("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(text("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(text("1d").unwrap(), Duration::from_secs(86_400));
        assert_eq!(text("1h30m").unwrap(), Duration::from_secs(5400));
        for bad in [
            "",
            "1",
            "d",
            "1w",
            "-1d",
            "1.5h",
            "1 d",
            "99999999999999999999d",
        ] {
            let err = text(bad).unwrap_err();
            assert_eq!(
                err.code(),
                crate::errors::ErrorCode::InvalidArgument,
                "{bad}"
            );
            assert!(err.message().starts_with("by '"), "{bad}");
        }
        assert!(duration("by", Either::A(-5.0)).is_err());
    }

    #[test]
    fn reserved_sub_marker_is_refused_only_for_new_instances() {
        for id in ["sub::1", "root::sub::2"] {
            assert!(root_instance_id("instanceId", id)
                .unwrap_err()
                .message()
                .contains("reserved 'sub::'"));
            assert!(instance_id("instanceId", id).is_ok());
        }
        assert!(root_instance_id("instanceId", "subscriber::1").is_ok());
        assert!(root_instance_id("instanceId", "").is_err());
    }

    #[test]
    fn names_versions_and_statuses() {
        assert!(name("name", " ").is_err());
        assert!(name("name", "A").is_ok());
        assert!(version("version", "v2")
            .unwrap_err()
            .message()
            .contains("'v2' is not semver"));
        assert_eq!(
            version("version", DEFAULT_VERSION).unwrap(),
            Version::new(1, 0, 0)
        );
        assert_eq!(
            execution_status("status", "ContinuedAsNew").unwrap(),
            ExecutionStatusName::ContinuedAsNew
        );
        assert!(execution_status("status", "completed")
            .unwrap_err()
            .message()
            .contains("Running, Completed, Failed, ContinuedAsNew"));
    }
}
