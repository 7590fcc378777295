//! The argument rules of every native entry point, in one place: identifiers
//! (names and instance ids, and the reserved `sub::` marker), stored text,
//! payload sizes, semver versions, the default version, millisecond durations
//! (and their written form, `'1d'`), instance statuses, and the order, times
//! and sizes of instance pages.
//!
//! The client, the task descriptors and the registrations all check their
//! arguments here, so a rule and its message are written once. The JS layer
//! only checks types (what napi cannot convert) and, for strings, whether
//! they are well-formed UTF-16: napi replaces an unpaired surrogate with
//! U+FFFD before Rust sees the string, so `lib/validate.js` hands an
//! ill-formed string to [`check_identifier`] or [`check_text`] as UTF-16 code
//! units and the message still comes from here. Each function takes the
//! argument's JS name (`field`) so the message names it as the caller wrote
//! it. Messages never echo a refused string: it may hold the very control
//! characters the rule keeps away from logs and terminals.
//!
//! This module depends on nothing but the error type, so any module may use it.

use std::time::Duration;

use napi::bindgen_prelude::{Either, Utf16String};
use napi_derive::napi;
use semver::Version;

use crate::errors::{BridgeError, BridgeResult, ErrorCode};

/// The version a plain `registerOrchestration` registers, as duroxide does.
pub(crate) const DEFAULT_VERSION: &str = "1.0.0";

/// The marker of instance ids duroxide generates for sub-orchestrations.
const SUB_MARKER: &str = "sub::";

/// The most UTF-8 bytes an identifier may have. Temporal's default for
/// workflow ids is the same 1,000; here it also keeps the widest index entry
/// of a Postgres store, an instance id with a KV key (`PRIMARY KEY
/// (instance_id, key)`), at about 2,000 bytes, under the 2,704 bytes a
/// btree entry may take, so a valid identifier is never refused by one store
/// and taken by the other.
#[napi]
pub const MAX_IDENTIFIER_BYTES: u32 = 1000;

/// The default of the `maxPayloadBytes` option of runtimes and clients:
/// 16 MiB of JSON text per input, event, result or output. Applications of
/// the earlier binding pass 10 MiB payloads (it had no limit), so the default
/// keeps them working; Temporal's 2 MB is a deliberate choice left to the
/// user, since every payload is stored in the instance's history, which each
/// turn reads back whole.
#[napi]
pub const DEFAULT_MAX_PAYLOAD_BYTES: u32 = 16 * 1024 * 1024;

/// The largest `maxPayloadBytes` accepted: 128 MiB. A payload is stored
/// escaped inside a JSON document (at most twice its size), and Postgres
/// refuses JSON values over 255 MB.
pub(crate) const MAX_PAYLOAD_BYTES_LIMIT: u32 = 128 * 1024 * 1024;

/// What every identifier message ends with, so the rule is stated where it
/// is broken.
const IDENTIFIER_RULE: &str =
    "an identifier is a non-empty, well-formed Unicode string without control characters (C0, DEL, C1) of at most 1000 UTF-8 bytes";

fn invalid(message: String) -> BridgeError {
    BridgeError::InvalidArgument(message)
}

/// `U+0000`: how a refused character is named in messages.
fn code_point(c: u32) -> String {
    format!("U+{c:04X}")
}

/// The JS (UTF-16) index of byte offset `at` in `value`, so a message points
/// where `value[i]` in JS does.
fn js_index(value: &str, at: usize) -> usize {
    value[..at].chars().map(char::len_utf16).sum()
}

/// Control characters: C0 (U+0000-U+001F), DEL (U+007F) and C1
/// (U+0080-U+009F), Unicode's category Cc. They can rewrite an operator's
/// terminal when printed, and Postgres cannot store U+0000 at all.
fn first_control(value: &str) -> Option<(usize, char)> {
    value.char_indices().find(|(_, c)| c.is_control())
}

/// The identifier rule: non-empty, no control characters, at most
/// [`MAX_IDENTIFIER_BYTES`] of UTF-8. Well-formedness is checked on the JS
/// side's UTF-16 ([`check_identifier`]); a Rust string is always well formed.
pub(crate) fn identifier(field: &str, value: &str) -> BridgeResult<()> {
    if value.is_empty() {
        return Err(invalid(format!("{field} must be a non-empty string")));
    }
    if let Some((at, c)) = first_control(value) {
        return Err(invalid(format!(
            "{field} has the control character {} at index {}; {IDENTIFIER_RULE}",
            code_point(c as u32),
            js_index(value, at)
        )));
    }
    if value.len() > MAX_IDENTIFIER_BYTES as usize {
        return Err(invalid(format!(
            "{field} is {} bytes of UTF-8; {IDENTIFIER_RULE}",
            value.len()
        )));
    }
    Ok(())
}

/// Names of activities, orchestrations, events, queues, keys, tags and
/// sessions: identifiers that are not blank either.
pub(crate) fn name(field: &str, value: &str) -> BridgeResult<()> {
    if value.trim().is_empty() {
        return Err(invalid(format!("{field} must be a non-empty string")));
    }
    identifier(field, value)
}

/// An instance id to look up, wait on, cancel or delete: any id a store may
/// already hold, including one stored before the identifier rule existed
/// (so it can still be read and removed), but never U+0000, which Postgres
/// cannot compare (SQLite could store it).
pub(crate) fn instance_id(field: &str, id: &str) -> BridgeResult<()> {
    if id.is_empty() {
        return Err(invalid(format!("{field} must be a non-empty string")));
    }
    if let Some(at) = id.find('\0') {
        return Err(invalid(format!(
            "{field} has the control character U+0000 at index {}; {IDENTIFIER_RULE}",
            js_index(id, at)
        )));
    }
    Ok(())
}

/// An instance id a message is sent to (an event, a cancellation): an
/// identifier, where the `::sub::N` parts duroxide appends to the ids it
/// generates for sub-orchestrations do not count toward the byte limit, so
/// the child of a root id near the limit can still be sent events.
pub(crate) fn target_instance_id(field: &str, id: &str) -> BridgeResult<()> {
    let mut root = id;
    while let Some(at) = root.rfind("::sub::") {
        let n = &root[at + "::sub::".len()..];
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
            break;
        }
        root = &root[..at];
    }
    if root.len() == id.len() || root.is_empty() {
        return identifier(field, id);
    }
    // The generated parts are ASCII digits and separators: only the root can break the rule.
    identifier(field, root)
}

/// An instance id the caller chooses for a new instance: an identifier that
/// does not look like a generated sub-orchestration id (duroxide asserts on
/// those, which would fail the turn with a panic).
pub(crate) fn root_instance_id(field: &str, id: &str) -> BridgeResult<()> {
    identifier(field, id)?;
    if id.starts_with(SUB_MARKER) || id.contains("::sub::") {
        return Err(invalid(format!(
            "{field} '{id}' uses the reserved '{SUB_MARKER}' marker of generated sub-orchestration ids"
        )));
    }
    Ok(())
}

/// Text stored as given rather than as JSON (custom status, KV string
/// values, cancel reasons): anything but U+0000, which a Postgres store
/// cannot hold in text, so refusing it keeps both stores alike.
pub(crate) fn text(field: &str, value: &str) -> BridgeResult<()> {
    match value.find('\0') {
        Some(at) => Err(invalid(format!(
            "{field} has U+0000 at index {}, which stored text cannot hold; store the value as JSON (a typed key or status, or JSON.stringify) to keep it",
            js_index(value, at)
        ))),
        None => Ok(()),
    }
}

/// A JSON payload (input, event data, result, output) of at most `max`
/// bytes, the `maxPayloadBytes` option.
pub(crate) fn payload(field: &str, json: &str, max: u32) -> BridgeResult<()> {
    if json.len() > max as usize {
        return Err(invalid(format!(
            "{field} is {} bytes of JSON, over the limit of {max} bytes (the maxPayloadBytes option)",
            json.len()
        )));
    }
    Ok(())
}

/// The first unpaired surrogate of UTF-16 `units`: its index and value.
fn unpaired_surrogate(units: &[u16]) -> Option<(usize, u16)> {
    let mut i = 0;
    while i < units.len() {
        let u = units[i];
        match u {
            0xD800..=0xDBFF if matches!(units.get(i + 1), Some(0xDC00..=0xDFFF)) => i += 2,
            0xD800..=0xDFFF => return Some((i, u)),
            _ => i += 1,
        }
    }
    None
}

/// A string as JS holds it is well-formed Unicode: napi would turn an
/// unpaired surrogate into U+FFFD, so two different JS strings would name
/// one stored string.
fn well_formed(field: &str, units: &[u16]) -> BridgeResult<String> {
    if let Some((at, u)) = unpaired_surrogate(units) {
        return Err(invalid(format!(
            "{field} is not well-formed Unicode: it has the unpaired surrogate {} at index {at}",
            code_point(u.into())
        )));
    }
    Ok(String::from_utf16(units).expect("no unpaired surrogate"))
}

/// The identifier rule on a JS string as it is, before napi's conversion
/// (`lib/validate.js` calls it for a string that is not well formed; the CLI
/// for its arguments).
#[napi]
pub fn check_identifier(field: String, value: Utf16String) -> napi::Result<(), ErrorCode> {
    let value = well_formed(&field, &value)?;
    Ok(identifier(&field, &value)?)
}

/// [`text`] on a JS string as it is, before napi's conversion.
#[napi]
pub fn check_text(field: String, value: Utf16String) -> napi::Result<(), ErrorCode> {
    let value = well_formed(&field, &value)?;
    Ok(text(&field, &value)?)
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

/// Which end of the creation order an instance page starts from
/// (`NativeClient.searchInstances`).
#[napi(string_enum = "lowercase")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstanceOrder {
    Newest,
    Oldest,
}

/// An instance order from JS, refused with the two valid ones.
pub(crate) fn instance_order(field: &str, value: &str) -> BridgeResult<InstanceOrder> {
    match value {
        "newest" => Ok(InstanceOrder::Newest),
        "oldest" => Ok(InstanceOrder::Oldest),
        _ => Err(invalid(format!(
            "{field} '{value}' is not an order; expected newest or oldest"
        ))),
    }
}

/// A point in time as epoch milliseconds from JS: a non-negative integer
/// the stores can hold (they keep signed 64-bit values).
pub(crate) fn epoch_ms(field: &str, value: f64) -> BridgeResult<i64> {
    if value.is_finite() && value >= 0.0 && value.fract() == 0.0 && value <= 9_007_199_254_740_991.0
    {
        return Ok(value as i64);
    }
    Err(invalid(format!(
        "{field} must be a non-negative integer of epoch milliseconds, got {value}"
    )))
}

/// A count from JS within `min..=max` (a page size, a number of buckets).
pub(crate) fn count_within(field: &str, value: f64, min: u32, max: u32) -> BridgeResult<u32> {
    if value.is_finite() && value.fract() == 0.0 && value >= min as f64 && value <= max as f64 {
        return Ok(value as u32);
    }
    Err(invalid(format!(
        "{field} must be an integer from {min} to {max}, got {value}"
    )))
}

#[cfg(test)]
mod tests;
