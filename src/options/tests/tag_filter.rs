//! `workerTagFilter` (object and legacy flat forms) and `workerTagFilterTags`.

use duroxide::runtime::limits::{MAX_TAG_NAME_BYTES, MAX_WORKER_TAGS};
use duroxide::TagFilter;
use serde_json::{json, Value};

use super::{assert_err, parse, set};

#[test]
fn tag_filter_forms() {
    let tf = |v: Value| parse(v).unwrap().runtime.worker_tag_filter;
    assert_eq!(
        tf(json!({ "workerTagFilter": "defaultOnly" })),
        TagFilter::DefaultOnly
    );
    assert_eq!(tf(json!({ "workerTagFilter": "any" })), TagFilter::Any);
    assert_eq!(tf(json!({ "workerTagFilter": "none" })), TagFilter::None);
    assert_eq!(
        tf(json!({ "workerTagFilter": { "tags": ["gpu"] } })),
        TagFilter::Tags(set(&["gpu"]))
    );
    assert_eq!(
        tf(json!({ "workerTagFilter": { "defaultAnd": ["a", "b"], "tags": null } })),
        TagFilter::DefaultAnd(set(&["a", "b"]))
    );
    // Legacy flat form.
    assert_eq!(
        tf(json!({ "workerTagFilter": "tags", "workerTagFilterTags": ["x"] })),
        TagFilter::Tags(set(&["x"]))
    );
    assert_eq!(
        tf(json!({ "workerTagFilter": "defaultAnd", "workerTagFilterTags": ["x", "y"] })),
        TagFilter::DefaultAnd(set(&["x", "y"]))
    );
}

#[test]
fn tag_filter_errors() {
    assert_err(
        json!({ "workerTagFilter": "tags" }),
        &["workerTagFilter 'tags' needs workerTagFilterTags"],
    );
    assert_err(
        json!({ "workerTagFilter": "defaultAnd" }),
        &["needs workerTagFilterTags"],
    );
    assert_err(
        json!({ "workerTagFilter": "any", "workerTagFilterTags": ["a"] }),
        &[
            "workerTagFilterTags is only meaningful",
            "workerTagFilter 'any'",
        ],
    );
    assert_err(
        json!({ "workerTagFilterTags": ["a"] }),
        &["workerTagFilterTags is only meaningful", "unset"],
    );
    assert_err(
        json!({ "workerTagFilter": { "tags": ["a"] }, "workerTagFilterTags": ["a"] }),
        &["workerTagFilterTags is only meaningful"],
    );
    assert_err(
        json!({ "workerTagFilter": "gpu" }),
        &["workerTagFilter must be", "got 'gpu'"],
    );
    assert_err(
        json!({ "workerTagFilter": 1 }),
        &["workerTagFilter must be", "got 1"],
    );
    assert_err(
        json!({ "workerTagFilter": {} }),
        &["workerTagFilter must be", "got {}"],
    );
    assert_err(
        json!({ "workerTagFilter": { "tags": ["a"], "defaultAnd": ["b"] } }),
        &["workerTagFilter must be"],
    );
    let too_many: Vec<String> = (0..=MAX_WORKER_TAGS).map(|i| format!("t{i}")).collect();
    let max: Vec<String> = (0..MAX_WORKER_TAGS).map(|i| format!("t{i}")).collect();
    assert!(parse(json!({ "workerTagFilter": { "tags": max } })).is_ok());
    let long = "x".repeat(MAX_TAG_NAME_BYTES + 1);
    let longest = "é".repeat(MAX_TAG_NAME_BYTES / 2);
    assert!(parse(json!({ "workerTagFilter": { "tags": [longest] } })).is_ok());
    let tags = |v: Value| json!({ "workerTagFilter": { "tags": v } });
    assert_err(
        tags(json!(too_many)),
        &["workerTagFilter.tags must be an array of 1 to"],
    );
    assert_err(
        tags(json!([])),
        &["workerTagFilter.tags must be an array", "got []"],
    );
    assert_err(
        tags(json!("a")),
        &["workerTagFilter.tags must be an array", "got 'a'"],
    );
    assert_err(
        tags(json!(["a", ""])),
        &[
            "workerTagFilter.tags[1] must be a non-empty string",
            "got ''",
        ],
    );
    assert_err(tags(json!([long])), &["workerTagFilter.tags[0]", "bytes"]);
    assert_err(tags(json!(["a", 2])), &["workerTagFilter.tags[1]", "got 2"]);
    assert_err(
        tags(json!(["a", "a"])),
        &["workerTagFilter.tags contains 'a' more than once"],
    );
    assert_err(
        json!({ "workerTagFilter": "tags", "workerTagFilterTags": ["a", "a"] }),
        &["workerTagFilterTags contains 'a'"],
    );
}
