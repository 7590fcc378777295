//! The instance page's queries, on both stores.
use super::*;

fn search() -> InstanceSearch {
    InstanceSearch {
        status: None,
        orchestration_name: None,
        orchestration_version: None,
        created_from: None,
        created_to: None,
        completed_from: None,
        completed_to: None,
        id_prefix: None,
        text: None,
        order: None,
        limit: None,
        cursor: None,
    }
}

#[test]
fn cursors_round_trip_and_belong_to_one_store() {
    let pg = Cursor::Postgres {
        created_us: 1_796_524_566_479_123,
        instance_id: "order.42.b".into(),
    };
    assert_eq!(Cursor::parse(&pg.text()), Some(pg));
    let lite = Cursor::Sqlite { rowid: 77 };
    assert_eq!(Cursor::parse(&lite.text()), Some(lite));
    for bad in ["", "x.1", "s.", "s.one", "p.12", "p.x.id"] {
        assert_eq!(Cursor::parse(bad), None, "{bad}");
    }
    let on_pg = InstanceSearch {
        cursor: Some("s.5".into()),
        ..search()
    };
    let err = Filters::from_search(on_pg, true).err().unwrap();
    assert!(err.message().contains("search.cursor 's.5'"));
}

#[test]
fn values_are_checked_with_their_names() {
    let bad = InstanceSearch {
        status: Some("Done".into()),
        ..search()
    };
    let err = Filters::from_search(bad, false).err().unwrap();
    assert!(err.message().starts_with("search.status 'Done'"));
    let bad = InstanceSearch {
        limit: Some(0.0),
        ..search()
    };
    assert!(Filters::from_search(bad, false)
        .err()
        .unwrap()
        .message()
        .starts_with("search.limit"));
    let bad = InstanceSearch {
        created_from: Some(-1.0),
        ..search()
    };
    assert!(Filters::from_search(bad, false)
        .err()
        .unwrap()
        .message()
        .starts_with("search.createdFrom"));
}

#[test]
fn only_asked_conditions_reach_the_sql() {
    let f = Filters::from_search(search(), false).unwrap();
    let (sql, _) = sqlite_query(&f);
    // The join is followed by the order: no WHERE of the page's own.
    assert!(
        sql.contains("i.current_execution_id  ORDER BY i.rowid DESC"),
        "{sql}"
    );
    let f = Filters::from_search(
        InstanceSearch {
            status: Some("Failed".into()),
            id_prefix: Some("ord".into()),
            order: Some("oldest".into()),
            cursor: Some("p.5.x".into()),
            ..search()
        },
        true,
    )
    .unwrap();
    let (sql, _) = postgres_query(&f, "s");
    assert!(sql.contains("e.status = $1"), "{sql}");
    assert!(sql.contains("starts_with(i.instance_id, $2)"), "{sql}");
    assert!(sql.contains("(i.created_at, i.instance_id) > ("), "{sql}");
    assert!(
        sql.contains("ORDER BY i.created_at ASC, i.instance_id ASC LIMIT $5"),
        "{sql}"
    );
}

#[test]
fn prefix_ranges_end_after_every_match() {
    assert_eq!(prefix_end("ab").as_deref(), Some("ac"));
    assert_eq!(prefix_end("a\u{10FFFF}").as_deref(), Some("b"));
    assert_eq!(prefix_end("\u{D7FF}").as_deref(), Some("\u{E000}"));
    assert_eq!(prefix_end("\u{10FFFF}"), None);
}
