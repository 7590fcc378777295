//! A failure's structure inside duroxide's failure text.
//!
//! duroxide carries an activity or orchestration failure as one string (the
//! `message` of its `ErrorDetails`), stored in history and handed back as is.
//! So the JS side (`lib/failure.js`) appends the thrown error's structure to
//! its message: `message` + `\u{1e}` + `{"$duroxide":1,"name":...,"stack":...,
//! "details":...,"nonRetryable":...}`. JSON escapes every control character,
//! so the last separator in the text is the one that starts the structure.
//! Everything that shows a failure to an application (`Outcome` in JS, status
//! `error`, history `data`, instance `output`) shows the message without it,
//! which is exactly the text it showed before failures had structure.

use std::borrow::Cow;

use serde_json::{Map, Value};

const SEPARATOR: char = '\u{1e}';
const TAG: &str = "$duroxide";

/// A failure text split into the message and the structure, if any.
pub(crate) fn split(text: &str) -> (&str, Option<Map<String, Value>>) {
    let Some(at) = text.rfind(SEPARATOR) else {
        return (text, None);
    };
    match serde_json::from_str::<Value>(&text[at + SEPARATOR.len_utf8()..]) {
        Ok(Value::Object(mut info)) if info.contains_key(TAG) => {
            info.remove(TAG);
            (&text[..at], Some(info))
        }
        _ => (text, None),
    }
}

/// The failure text of a message and its structure: the inverse of
/// [`split`], for a failure read back from history `data`
/// (`client/history.rs` splits it there).
pub(crate) fn join(message: &str, info: &Map<String, Value>) -> String {
    let mut tagged = Map::with_capacity(info.len() + 1);
    tagged.insert(TAG.into(), Value::from(1));
    tagged.extend(info.iter().map(|(k, v)| (k.clone(), v.clone())));
    format!("{message}{SEPARATOR}{}", Value::Object(tagged))
}

/// The message a failure text shows (the text itself when it has no structure).
pub(crate) fn message(text: &str) -> &str {
    split(text).0
}

/// Whether the failure was thrown as a `NonRetryableError` (a retry policy stops at it).
pub(crate) fn is_non_retryable(text: &str) -> bool {
    split(text)
        .1
        .and_then(|info| info.get("nonRetryable").and_then(Value::as_bool))
        .unwrap_or(false)
}

/// `text` with every failure structure cut out, wherever it sits in the text
/// and however often it was escaped on its way there: as is (a `%` log
/// field), once (a `?` field's Rust `Debug`, or JSON), twice (the JSON of a
/// `Debug`). For log lines and records: the structure is for the readers
/// above, never for people.
///
/// At escaping depth `k` the structure's quotes carry `2^k - 1` backslashes
/// and the separator became `\u{1e}` (Rust) or `\u001e` (JSON) behind
/// `2^(k-1)` of them; the structure, always at the end of its failure text,
/// ends where the string holding it does: at the first quote with fewer
/// backslashes than its own quotes have (at depth 0, where its JSON ends).
pub(crate) fn scrub(text: &str) -> Cow<'_, str> {
    if !text.contains(TAG) {
        return Cow::Borrowed(text);
    }
    let mut out = String::new();
    let mut copied = 0;
    let mut from = 0;
    while let Some(found) = text[from..].find(TAG) {
        let tag = from + found;
        from = tag + TAG.len();
        if let Some((start, end)) = structure_at(text.as_bytes(), tag) {
            if start >= copied {
                out.push_str(&text[copied..start]);
                copied = end;
                from = from.max(end);
            }
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// The byte range of the structure whose tag starts at `tag`, separator
/// included; `None` when the tag is not one (a message that mentions it).
fn structure_at(b: &[u8], tag: usize) -> Option<(usize, usize)> {
    // `{`, then the quote before the tag with 2^k - 1 backslashes.
    let quote = tag.checked_sub(1).filter(|&q| b[q] == b'"')?;
    let run = backslashes_before(b, quote);
    let brace = (quote - run).checked_sub(1).filter(|&i| b[i] == b'{')?;
    if !(run + 1).is_power_of_two() {
        return None;
    }
    let start = if run == 0 {
        brace.checked_sub(1).filter(|&i| b[i] == SEPARATOR as u8)?
    } else {
        let escaped = [&b"u{1e}"[..], &b"u001e"[..]]
            .into_iter()
            .find(|form| b[..brace].ends_with(form))?;
        let u = brace - escaped.len();
        let slashes = backslashes_before(b, u);
        if slashes == 0 {
            return None;
        }
        u - slashes
    };
    let end = if run == 0 {
        let mut values =
            serde_json::Deserializer::from_slice(&b[brace..]).into_iter::<serde::de::IgnoredAny>();
        values.next()?.ok()?;
        brace + values.byte_offset()
    } else {
        let mut at = tag;
        loop {
            match b[at..].iter().position(|&c| c == b'"') {
                None => break b.len(),
                Some(q) => {
                    let q = at + q;
                    let slashes = backslashes_before(b, q);
                    if slashes < run {
                        break q - slashes;
                    }
                    at = q + 1;
                }
            }
        }
    };
    Some((start, end))
}

/// How many backslashes stand right before `b[at]`.
fn backslashes_before(b: &[u8], at: usize) -> usize {
    b[..at].iter().rev().take_while(|&&c| c == b'\\').count()
}

/// The structure as a JSON object with `message` and `category` added, for
/// status readers (a plain failure text gives just those two).
pub(crate) fn info_json(text: &str, category: &str) -> Value {
    let (message, info) = split(text);
    let mut info = info.unwrap_or_default();
    info.insert("message".into(), Value::String(message.to_string()));
    info.insert("category".into(), Value::String(category.to_string()));
    Value::Object(info)
}

/// A failure text a store can hold: U+0000, which Postgres refuses in text
/// and in JSON (one such character in an activity's error would make every
/// fetch of the orchestrator queue fail), becomes U+FFFD on both stores. The
/// structure's JSON escapes it, so only the message changes.
pub(crate) fn storable(text: String) -> String {
    if text.contains('\0') {
        text.replace('\0', "\u{fffd}")
    } else {
        text
    }
}

/// The failure text of an error the bridge raises, not retried by a retry
/// policy (running the same code again gives the same error).
pub(crate) fn non_retryable(message: &str) -> String {
    let mut info = Map::new();
    info.insert("name".into(), Value::String("Error".into()));
    info.insert("nonRetryable".into(), Value::Bool(true));
    join(message, &info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_the_structure_off_the_message() {
        let text =
            "card declined\u{1e}{\"$duroxide\":1,\"name\":\"PaymentError\",\"nonRetryable\":true}";
        let (m, info) = split(text);
        assert_eq!(m, "card declined");
        assert_eq!(info.unwrap()["name"], "PaymentError");
        assert!(is_non_retryable(text));
        assert_eq!(message("plain"), "plain");
        assert!(!is_non_retryable("plain"));
        // A separator without the tag is part of the message.
        assert_eq!(message("a\u{1e}{\"x\":1}"), "a\u{1e}{\"x\":1}");
        assert_eq!(info_json("plain", "application")["message"], "plain");
        let (m, info) = split(text);
        assert_eq!(split(&join(m, info.as_ref().unwrap())), (m, info));
    }

    /// A failure text as duroxide's log lines carry it, with a stack that
    /// holds quotes and backslashes.
    fn failure() -> String {
        let mut info = Map::new();
        info.insert("name".into(), Value::from("TypeError"));
        info.insert(
            "stack".into(),
            Value::from("TypeError: x is \"undefined\"\n    at C:\\app\\a.js:1:2\\"),
        );
        info.insert("details".into(), serde_json::json!({ "q": "\"}\"" }));
        join("card declined", &info)
    }

    #[test]
    fn scrub_cuts_the_structure_at_every_depth_of_escaping() {
        let text = failure();
        #[derive(Debug)]
        #[allow(dead_code)]
        struct Details {
            message: String,
            retryable: bool,
        }
        let details = Details {
            message: text.clone(),
            retryable: false,
        };
        let cases = [
            // A `%` field.
            (
                format!("attempt 1/3 failed: {text}. Retrying..."),
                "attempt 1/3 failed: card declined. Retrying...".to_string(),
            ),
            // A `?` field.
            (
                format!("error={details:?} next"),
                format!(
                    "error={:?} next",
                    Details {
                        message: "card declined".into(),
                        retryable: false
                    }
                ),
            ),
            // A JSON log line of a `%` field.
            (
                serde_json::json!({ "error": text, "n": 1 }).to_string(),
                serde_json::json!({ "error": "card declined", "n": 1 }).to_string(),
            ),
            // A JSON log line of a `?` field.
            (
                serde_json::json!({ "error": format!("{details:?}") }).to_string(),
                serde_json::json!({ "error": format!("{:?}", Details { message: "card declined".into(), retryable: false }) })
                    .to_string(),
            ),
            // Two failures in one line.
            (format!("{text} and {text}!"), "card declined and card declined!".to_string()),
        ];
        for (line, clean) in cases {
            assert_eq!(scrub(&line), clean, "from {line}");
        }
        // Text that only mentions the tag, or has no structure, stays.
        for plain in [
            "no failure here",
            "a \"$duroxide\" mention",
            "{\"$duroxide\":1} alone",
        ] {
            assert!(matches!(scrub(plain), Cow::Borrowed(t) if t == plain));
        }
    }

    #[test]
    fn failures_are_made_storable() {
        let text = "a\0b\u{1e}{\"$duroxide\":1,\"stack\":\"a\\u0000b\"}".to_string();
        let stored = storable(text);
        assert_eq!(message(&stored), "a\u{fffd}b");
        assert_eq!(split(&stored).1.unwrap()["stack"], "a\0b");
        assert!(is_non_retryable(&non_retryable("too big")));
        assert_eq!(message(&non_retryable("too big")), "too big");
    }
}
