//! Enum- and object-valued options other than the tag filter.

use duroxide::runtime::LogFormat;
use serde_json::{json, Value};

use super::{assert_err, err, parse};
use crate::options::fields::show;

#[test]
fn log_format_and_level() {
    for (s, f) in [
        ("json", LogFormat::Json),
        ("pretty", LogFormat::Pretty),
        ("compact", LogFormat::Compact),
    ] {
        assert_eq!(
            parse(json!({ "logFormat": s }))
                .unwrap()
                .runtime
                .observability
                .log_format,
            f
        );
    }
    assert_eq!(
        err(json!({ "logFormat": "xml" })),
        "logFormat must be one of 'json', 'pretty', 'compact', got 'xml'"
    );
    assert_err(json!({ "logFormat": "JSON" }), &["got 'JSON'"]);
    for l in ["trace", "Debug", "INFO", "warn", "error", "off"] {
        let p = parse(json!({ "logLevel": l })).unwrap();
        assert_eq!(p.runtime.observability.log_level, l.to_lowercase());
    }
    for bad in [
        json!(""),
        json!("verbose"),
        json!("info,foo=debug"),
        json!(3),
    ] {
        assert_err(
            json!({ "logLevel": bad.clone() }),
            &["logLevel", &format!("got {}", show(&bad))],
        );
    }
}

#[test]
fn determinism_guard() {
    use crate::options::DeterminismGuard as G;
    assert_eq!(parse(json!({})).unwrap().binding.determinism_guard, G::Warn);
    for (s, g) in [("warn", G::Warn), ("throw", G::Throw), ("off", G::Off)] {
        let p = parse(json!({ "determinismGuard": s })).unwrap();
        assert_eq!(p.binding.determinism_guard, g);
    }
    assert_eq!(
        err(json!({ "determinismGuard": "loud" })),
        "determinismGuard must be one of 'warn', 'throw', 'off', got 'loud'"
    );
    assert_err(json!({ "determinismGuard": true }), &["determinismGuard"]);
}

#[test]
fn on_nondeterminism() {
    use crate::options::NondeterminismPolicy as P;
    assert_eq!(parse(json!({})).unwrap().binding.on_nondeterminism, P::Fail);
    for (s, p) in [("fail", P::Fail), ("hold", P::Hold)] {
        let o = parse(json!({ "onNondeterminism": s })).unwrap();
        assert_eq!(o.binding.on_nondeterminism, p);
    }
    assert_eq!(
        err(json!({ "onNondeterminism": "wait" })),
        "onNondeterminism must be one of 'fail', 'hold', got 'wait'"
    );
    assert_err(json!({ "onNondeterminism": 1 }), &["onNondeterminism"]);
}

#[test]
fn supported_replay_versions() {
    let p =
        parse(json!({ "supportedReplayVersions": { "min": "0.0.0", "max": "0.0.0" } })).unwrap();
    let r = p.runtime.supported_replay_versions.unwrap();
    assert_eq!(
        (r.min.to_string(), r.max.to_string()),
        ("0.0.0".into(), "0.0.0".into())
    );
    let srv = |v: Value| json!({ "supportedReplayVersions": v });
    assert_err(
        srv(json!({ "min": "1.0.0" })),
        &["supportedReplayVersions.max is required"],
    );
    assert_err(
        srv(json!({ "max": "1.0.0", "min": null })),
        &["supportedReplayVersions.min is required"],
    );
    assert_err(
        srv(json!({ "min": "1.0", "max": "2.0.0" })),
        &["supportedReplayVersions.min", "got '1.0'"],
    );
    assert_err(
        srv(json!({ "min": "1.0.0", "max": 2 })),
        &["supportedReplayVersions.max", "got 2"],
    );
    assert_err(
        srv(json!({ "min": "2.0.0", "max": "1.0.0" })),
        &[
            "supportedReplayVersions.min must be <= supportedReplayVersions.max",
            "'2.0.0'",
            "'1.0.0'",
        ],
    );
    assert_err(
        srv(json!("1.0.0")),
        &["supportedReplayVersions must be an object", "got '1.0.0'"],
    );
}
