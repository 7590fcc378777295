//! The rules of `rules.rs`, one test per rule.

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
fn identifiers_have_one_rule() {
    let msg = |r: BridgeResult<()>| r.unwrap_err().message().to_string();
    assert!(identifier("instanceId", "order-42 \u{e9}\u{1f600}").is_ok());
    assert_eq!(
        msg(identifier("instanceId", "")),
        "instanceId must be a non-empty string"
    );
    for (bad, shown) in [
        ("a\0b", "U+0000 at index 1"),
        ("\u{1b}]0;x\u{7}", "U+001B at index 0"),
        ("x\u{7f}", "U+007F"),
        ("\u{1f600}\u{85}", "U+0085 at index 2"),
    ] {
        let m = msg(identifier("eventName", bad));
        assert!(m.starts_with("eventName has the control character"), "{m}");
        assert!(m.contains(shown) && m.contains(IDENTIFIER_RULE), "{m}");
        assert!(!m.contains(bad), "the message never echoes the string");
    }
    let max = MAX_IDENTIFIER_BYTES as usize;
    assert!(identifier("name", &"x".repeat(max)).is_ok());
    assert!(
        msg(identifier("name", &"x".repeat(max + 1))).starts_with("name is 1001 bytes of UTF-8")
    );
    // Bytes, not characters: 334 three-byte characters are 1002 bytes.
    assert!(identifier("name", &"\u{20ac}".repeat(334)).is_err());
    assert!(name("name", " ").is_err());
    assert!(root_instance_id("instanceId", "a\u{9}b").is_err());
    // Generated sub-orchestration parts do not count toward the limit.
    let root = "r".repeat(max);
    assert!(target_instance_id("instanceId", &format!("{root}::sub::2::sub::1_7")).is_ok());
    assert!(target_instance_id("instanceId", &format!("{root}::sub::x")).is_err());
    assert!(target_instance_id("instanceId", &format!("{root}x::sub::2")).is_err());
    assert!(target_instance_id("instanceId", "a\u{1b}::sub::2").is_err());
    assert!(target_instance_id("instanceId", "::sub::2").is_ok());
    // Lookups take what a store may already hold, except U+0000.
    assert!(instance_id("instanceId", &"x".repeat(5000)).is_ok());
    assert!(instance_id("instanceId", "a\u{1b}b").is_ok());
    assert!(instance_id("instanceId", "a\0b").is_err());
}

#[test]
fn surrogates_are_found_in_utf16() {
    let units = |s: &[u16]| unpaired_surrogate(s);
    assert_eq!(units(&[0x78, 0xD800, 0x79]), Some((1, 0xD800)));
    assert_eq!(units(&[0x78, 0xDC00]), Some((1, 0xDC00)));
    assert_eq!(units(&[0xD83D, 0xDE00, 0xD83D]), Some((2, 0xD83D)));
    assert_eq!(units(&[0xD83D, 0xDE00]), None);
    let e = well_formed("instanceId", &[0x78, 0xDC00, 0x79]).unwrap_err();
    assert_eq!(
        e.message(),
        "instanceId is not well-formed Unicode: it has the unpaired surrogate U+DC00 at index 1"
    );
    assert_eq!(well_formed("f", &[0x61]).unwrap(), "a");
}

#[test]
fn stored_text_and_payloads() {
    assert!(text("status", "tab\tand \u{1b}[2J are stored as given").is_ok());
    assert!(text("status", "a\0b")
        .unwrap_err()
        .message()
        .contains("U+0000 at index 1"));
    assert!(payload("input", "\"ab\"", 4).is_ok());
    let e = payload("data", "\"abc\"", 4).unwrap_err();
    assert_eq!(
        e.message(),
        "data is 5 bytes of JSON, over the limit of 4 bytes (the maxPayloadBytes option)"
    );
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

#[test]
fn orders_times_and_counts() {
    assert_eq!(
        instance_order("order", "oldest").unwrap(),
        InstanceOrder::Oldest
    );
    assert!(instance_order("order", "Newest")
        .unwrap_err()
        .message()
        .contains("expected newest or oldest"));
    assert_eq!(epoch_ms("createdFrom", 5.0).unwrap(), 5);
    for bad in [-1.0, 0.5, f64::NAN, 1e300] {
        assert!(epoch_ms("createdFrom", bad)
            .unwrap_err()
            .message()
            .starts_with("createdFrom must be"));
    }
    assert_eq!(count_within("limit", 500.0, 1, 500).unwrap(), 500);
    for bad in [0.0, 501.0, 2.5] {
        assert!(count_within("limit", bad, 1, 500)
            .unwrap_err()
            .message()
            .contains("from 1 to 500"));
    }
}
