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

/// The structure as a JSON object with `message` and `category` added, for
/// status readers (a plain failure text gives just those two).
pub(crate) fn info_json(text: &str, category: &str) -> Value {
    let (message, info) = split(text);
    let mut info = info.unwrap_or_default();
    info.insert("message".into(), Value::String(message.to_string()));
    info.insert("category".into(), Value::String(category.to_string()));
    Value::Object(info)
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
}
