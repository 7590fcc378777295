//! Option names: the top-level shape, unknown names and their suggestions.

use serde_json::json;

use super::{assert_err, err};
use crate::options::fields::show;
use crate::options::suggest::{distance, suggest};
use crate::options::OPTION_NAMES;

#[test]
fn top_level_must_be_object_or_null() {
    for v in [json!(1), json!("x"), json!([]), json!(true)] {
        assert_err(v, &["options must be an object"]);
    }
}

#[test]
fn unknown_names_are_rejected_with_a_suggestion() {
    assert_err(
        json!({ "orchestratorLockTimeout": 10000 }),
        &[
            "'orchestratorLockTimeout'",
            "did you mean orchestratorLockTimeoutMs?",
        ],
    );
    assert_err(json!({ "max_attempts": 3 }), &["did you mean maxAttempts?"]);
    assert_err(
        json!({ "OrchestrationConcurrency": 3 }),
        &["did you mean orchestrationConcurrency?"],
    );
    assert_err(
        json!({ "workerConcurency": 3 }),
        &["did you mean workerConcurrency?"],
    );
    let m = err(json!({ "bogus": 1 }));
    assert!(
        m.contains("unknown option 'bogus'") && !m.contains("did you mean"),
        "{m}"
    );
}

#[test]
fn nested_unknown_keys_are_rejected_with_dotted_names() {
    assert_err(
        json!({ "unregisteredBackoff": { "baseDelay": 5 } }),
        &[
            "'unregisteredBackoff.baseDelay'",
            "did you mean unregisteredBackoff.baseDelayMs?",
        ],
    );
    assert_err(
        json!({ "supportedReplayVersions": { "min": "1.0.0", "max": "1.0.0", "maxx": "1" } }),
        &[
            "'supportedReplayVersions.maxx'",
            "did you mean supportedReplayVersions.max?",
        ],
    );
    assert_err(
        json!({ "workerTagFilter": { "tag": ["a"] } }),
        &[
            "'workerTagFilter.tag'",
            "did you mean workerTagFilter.tags?",
        ],
    );
}

#[test]
fn suggestion_rules() {
    assert_eq!(
        suggest("gaugePollInterval", OPTION_NAMES),
        Some("gaugePollIntervalMs")
    );
    assert_eq!(suggest("maxattemptsms", OPTION_NAMES), Some("maxAttempts"));
    assert_eq!(suggest("xyz", OPTION_NAMES), None);
    assert_eq!(distance("Kitten", "sitting"), 3);
    assert!(show(&json!("x".repeat(200))).ends_with("..."));
}
