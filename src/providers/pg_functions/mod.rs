//! The SQL functions the Postgres fast paths install next to duroxide-pg's
//! (`docs/fast-paths.md`). Each is a `.sql` file of this directory, read
//! as it is: the only substitution at install is the schema, written
//! `{schema}` in the files.
//!
//! Each file's header names the crate functions it derives from or calls
//! (`-- requires: name(types) fingerprint`), with the fingerprint of that
//! function's text as this package was written against it. At connect the
//! provider reads those functions from the database and compares
//! ([`crate_text`]); any difference means another duroxide-pg, and the
//! fast paths stay off for the provider (one WARN saying which function).
//! `crate_text::tests` fails when the pinned crate's text changes, so an
//! upgrade of duroxide-pg forces a new derivation and a review.
//!
//! Function names carry a version (`_v1`): a changed file is a new
//! function, so processes of two package versions sharing a schema each
//! call their own. `tests::each_file_is_pinned` fails when a file changes
//! without its version.

use std::fmt::Write as _;

pub(crate) mod crate_text;
pub(crate) mod install;
#[cfg(test)]
mod tests;

/// One installed function.
pub(crate) struct SqlFile {
    pub(crate) file: &'static str,
    pub(crate) text: &'static str,
    /// The function's name, which the file creates.
    pub(crate) name: &'static str,
    /// Its argument types, as `to_regprocedure` takes them.
    pub(crate) args: &'static str,
}

macro_rules! sql_file {
    ($file:literal, $name:literal, $args:literal) => {
        SqlFile {
            file: $file,
            text: include_str!($file),
            name: $name,
            args: $args,
        }
    };
}

/// Every function, in install order (a function before those that call it).
pub(crate) const FILES: [SqlFile; 6] = [
    sql_file!(
        "fetch_turn.sql",
        "duroxide_node_fetch_turn_v2",
        "(boolean,text[],bigint[],bigint[],text[],bigint,bigint,bigint,bigint)"
    ),
    sql_file!(
        "fetch_work.sql",
        "duroxide_node_fetch_work_v3",
        "(boolean,bigint,bigint,text,bigint,text[],text)"
    ),
    sql_file!(
        "ack_turn.sql",
        "duroxide_node_ack_turn_v1",
        "(text,bigint,bigint,jsonb,jsonb,jsonb,jsonb,jsonb)"
    ),
    sql_file!(
        "ack_worker_fetch_turn.sql",
        "duroxide_node_ack_worker_fetch_turn_v2",
        "(text,text,text,bigint,boolean,text[],bigint[],bigint[],text[],bigint,bigint,bigint,bigint)"
    ),
    sql_file!(
        "ack_turn_fetch_turn.sql",
        "duroxide_node_ack_turn_fetch_turn_v2",
        "(text,bigint,bigint,jsonb,jsonb,jsonb,jsonb,jsonb,text[],bigint[],bigint[],text[],bigint,bigint,bigint)"
    ),
    sql_file!(
        "ack_turn_fetch_work.sql",
        "duroxide_node_ack_turn_fetch_work_v3",
        "(text,bigint,bigint,jsonb,jsonb,jsonb,jsonb,jsonb,bigint,text[],text)"
    ),
];

/// The table that records what was installed (`registry.sql`).
pub(crate) const REGISTRY: &str = include_str!("registry.sql");
pub(crate) const REGISTRY_TABLE: &str = "_duroxide_node_functions";

impl SqlFile {
    /// The crate functions the file derives from or calls, with the
    /// fingerprint of their text it was written against.
    pub(crate) fn requires(&self) -> impl Iterator<Item = (&'static str, &'static str)> {
        self.text.lines().filter_map(|line| {
            let rest = line.strip_prefix("-- requires: ")?;
            rest.trim().rsplit_once(' ')
        })
    }

    /// The definition to run in `schema` (quoted as an identifier).
    pub(crate) fn sql(&self, schema_q: &str) -> String {
        self.text.replace("{schema}", schema_q)
    }

    /// `schema.name(types)`.
    pub(crate) fn signature(&self, schema_q: &str) -> String {
        format!("{schema_q}.{}{}", self.name, self.args)
    }

    /// The fingerprint of the file's text (`registry.sql` records it).
    pub(crate) fn fingerprint(&self) -> String {
        fingerprint(self.text)
    }
}

/// FNV-1a (64 bits) in hex: the same in every process for the same text.
/// It tells versions apart; it is not a defence against a chosen text.
pub(crate) fn fingerprint(text: &str) -> String {
    let h = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let mut out = String::with_capacity(16);
    let _ = write!(out, "{h:016x}");
    out
}
