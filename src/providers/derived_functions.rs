//! What installing a store function derived from one of duroxide-pg's
//! needs, whichever call it derives: edits of the crate's text that apply
//! only to the text they were written against, a name that follows the
//! text, and an install that processes starting together do not race on.

use sqlx::PgPool;

/// FNV-1a: a name that is the same in every process for the same text.
pub(crate) fn fingerprint(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

pub(crate) fn quote_ident(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

pub(crate) async fn exists(pool: &PgPool, signature: &str) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar("SELECT to_regprocedure($1) IS NOT NULL")
        .bind(signature)
        .fetch_one(pool)
        .await
}

/// Creates `def` unless `name` with `args` exists. Processes starting
/// together would otherwise race on the catalog row; the lock makes the
/// second replace the first's equal text.
pub(crate) async fn install_once(
    pool: &PgPool,
    name: &str,
    args: &str,
    def: &str,
    lock: &str,
) -> Result<(), sqlx::Error> {
    if !exists(pool, &format!("{name}{args}")).await? {
        let script =
            format!("BEGIN; SELECT pg_advisory_xact_lock(hashtext('{lock}')); {def}; COMMIT;");
        sqlx::raw_sql(&script).execute(pool).await?;
    }
    Ok(())
}

/// The schema as the crate's function definition `def` names it, before
/// `header` (`.name(`): the edits' texts name it so.
pub(crate) fn schema_named<'a>(def: &'a str, header: &str) -> Option<&'a str> {
    let start = def.find("FUNCTION ")? + "FUNCTION ".len();
    Some(&def[start..start + def[start..].find(header)?])
}

/// Where `pattern`'s words occur in `text` as whole words separated by
/// white space, any run of it standing for any other (the crate's
/// indentation is not ours to pin).
fn find_folded(text: &str, pattern: &str) -> Vec<(usize, usize)> {
    let words: Vec<&str> = pattern.split_whitespace().collect();
    let Some(first) = words.first() else {
        return Vec::new();
    };
    let ends_word = |at: usize| text[at..].chars().next().is_none_or(char::is_whitespace);
    let starts_word = |at: usize| {
        text[..at]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace)
    };
    let mut found = Vec::new();
    for (start, _) in text.match_indices(first) {
        if !starts_word(start) {
            continue;
        }
        let mut at = start;
        let whole = words.iter().enumerate().all(|(i, word)| {
            let rest = &text[at..];
            let gap = rest.len() - rest.trim_start().len();
            if (i > 0 && gap == 0) || !rest[gap..].starts_with(word) {
                return false;
            }
            at += gap + word.len();
            ends_word(at)
        });
        if whole {
            found.push((start, at));
        }
    }
    found
}

/// `def` with each (the crate's text, ours) pair replaced, the crate's text
/// found with [`find_folded`]; `None` when one occurs other than once.
pub(crate) fn rewrite(def: &str, edits: &[(String, String)]) -> Option<String> {
    let mut def = def.to_string();
    for (theirs, ours) in edits {
        let [(start, end)] = find_folded(&def, theirs)[..] else {
            return None;
        };
        def.replace_range(start..end, ours);
    }
    Some(def)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_match_whole_words_across_any_white_space() {
        let text = "x ELSIF a  b\n  c; IF a b\tc;";
        assert_eq!(find_folded(text, "IF a b c;"), vec![(18, 27)]);
        assert!(find_folded("IF a bc;", "IF a b").is_empty());
    }

    #[test]
    fn the_schema_is_read_as_the_definition_names_it() {
        let def = "CREATE OR REPLACE FUNCTION s1.ack(p text) RETURNS void";
        assert_eq!(schema_named(def, ".ack("), Some("s1"));
        assert_eq!(schema_named(def, ".fetch("), None);
    }

    #[test]
    fn a_rewrite_applies_all_its_edits_or_none() {
        let edits = |b: &str| {
            vec![
                ("a  b".to_string(), "x".to_string()),
                (b.to_string(), "y".to_string()),
            ]
        };
        assert_eq!(rewrite("a b c d", &edits("c")).as_deref(), Some("x y d"));
        assert_eq!(rewrite("a b c d", &edits("e")), None);
        assert_eq!(rewrite("a b c c", &edits("c")), None, "a repeated block");
    }
}
