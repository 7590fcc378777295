//! The `.sql` files: pinned, installed, and used with the roles and
//! schemas deployments have.

use super::*;

mod ack_turn;
mod commit_mode;
mod fetch_turn;
mod fetch_work;
mod fixture;
mod lock_order;
mod recreated;

/// Each file's fingerprint. A changed file is a new function: bump the
/// version in its function's name (and in the files that call it), then
/// the fingerprint here.
const PINNED: [(&str, &str); 6] = [
    ("fetch_turn.sql", "aabed7e4c7d1d35c"),
    ("fetch_work.sql", "41145d1cad0b9679"),
    ("ack_turn.sql", "9c4be8b547fd37bd"),
    ("ack_worker_fetch_turn.sql", "a86aba44e111b1cd"),
    ("ack_turn_fetch_turn.sql", "7c9dba2af5e61672"),
    ("ack_turn_fetch_work.sql", "73517f4270b2b4fe"),
];

#[test]
fn each_file_is_pinned() {
    let mut changed = Vec::new();
    for (file, (pinned_file, pinned)) in FILES.iter().zip(PINNED) {
        assert_eq!(file.file, pinned_file);
        assert!(
            file.text.contains(&format!("{{schema}}.{}(", file.name)),
            "{} creates {}",
            file.file,
            file.name
        );
        if file.fingerprint() != pinned {
            changed.push(format!("{}: {}", file.file, file.fingerprint()));
        }
    }
    assert!(
        changed.is_empty(),
        "changed without a new version: {}",
        changed.join(", ")
    );
}
