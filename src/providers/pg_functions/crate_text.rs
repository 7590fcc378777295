//! duroxide-pg's functions as a schema holds them, compared with the text
//! our `.sql` files were written against (their `-- requires:` lines).

use std::collections::HashSet;

use sqlx::PgPool;

use super::{fingerprint, FILES};

/// A schema and its name as Postgres writes it in qualified names.
#[derive(Clone, Debug)]
pub(crate) struct Schema {
    pub(crate) name: String,
    pub(crate) quoted: String,
}

impl Schema {
    pub(crate) async fn read(pool: &PgPool, name: &str) -> Result<Self, sqlx::Error> {
        let quoted: String = sqlx::query_scalar("SELECT quote_ident($1)")
            .bind(name)
            .fetch_one(pool)
            .await?;
        Ok(Self {
            name: name.to_string(),
            quoted,
        })
    }
}

/// `def` with the schema's qualified references written `{schema}`, as
/// in our files: only where a name of the schema's own relations and
/// functions follows, so that a table alias spelled like the schema
/// stays as it is.
pub(crate) fn normalise(def: &str, schema: &Schema, objects: &HashSet<String>) -> String {
    let prefix = format!("{}.", schema.quoted);
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '"';
    let mut out = String::with_capacity(def.len());
    let mut rest = def;
    while let Some(at) = rest.find(&prefix) {
        let before_ok = rest[..at].chars().next_back().is_none_or(|c| !ident(c))
            && (at > 0 || out.chars().next_back().is_none_or(|c| !ident(c)));
        let after = &rest[at + prefix.len()..];
        let name: String = after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        out.push_str(&rest[..at]);
        if before_ok && objects.contains(&name) {
            out.push_str("{schema}.");
        } else {
            out.push_str(&prefix);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The fingerprint of a crate function's text as our files state it.
pub(crate) fn crate_fingerprint(def: &str, schema: &Schema, objects: &HashSet<String>) -> String {
    fingerprint(&normalise(def, schema, objects))
}

/// The names of the schema's relations and functions.
pub(crate) async fn objects(pool: &PgPool, schema: &str) -> Result<HashSet<String>, sqlx::Error> {
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_catalog.pg_class c \
           JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 \
         UNION \
         SELECT p.proname::text FROM pg_catalog.pg_proc p \
           JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1",
    )
    .bind(schema)
    .fetch_all(pool)
    .await?;
    Ok(names.into_iter().collect())
}

/// The text of `schema.signature`, `None` when the schema has no such
/// function.
pub(crate) async fn definition(
    pool: &PgPool,
    schema: &Schema,
    signature: &str,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar("SELECT pg_get_functiondef(to_regprocedure($1))")
        .bind(format!("{}.{signature}", schema.quoted))
        .fetch_one(pool)
        .await
}

/// `Ok` when every crate function our files require has the text they
/// were written against; otherwise why not, naming the function.
pub(crate) async fn check(
    pool: &PgPool,
    schema: &Schema,
) -> Result<Result<(), String>, sqlx::Error> {
    let objects = objects(pool, &schema.name).await?;
    let mut checked = HashSet::new();
    for (signature, expected) in FILES.iter().flat_map(|f| f.requires()) {
        if !checked.insert(signature) {
            continue;
        }
        let Some(def) = definition(pool, schema, signature).await? else {
            return Ok(Err(format!(
                "duroxide-pg's {signature} is not in schema '{}'",
                schema.name
            )));
        };
        let found = crate_fingerprint(&def, schema, &objects);
        if found != expected {
            return Ok(Err(format!(
                "duroxide-pg's {signature} in schema '{}' is not the text the fast paths \
                 were written against (fingerprint {found}, expected {expected}): the schema \
                 was migrated by another duroxide-pg version",
                schema.name
            )));
        }
    }
    Ok(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(name: &str) -> Schema {
        Schema {
            name: name.into(),
            quoted: name.into(),
        }
    }

    #[test]
    fn only_references_to_the_schemas_objects_are_normalised() {
        let objects: HashSet<String> = ["history".to_string(), "ack".to_string()].into();
        let def = "CREATE FUNCTION q.ack() AS $$ SELECT q.x FROM q.history q WHERE q.history_id = 1; xq.history $$";
        assert_eq!(
            normalise(def, &schema("q"), &objects),
            "CREATE FUNCTION {schema}.ack() AS $$ SELECT q.x FROM {schema}.history q WHERE q.history_id = 1; xq.history $$"
        );
    }

    /// The crate functions our files require, in a schema migrated by this
    /// duroxide-pg, have the text the files state. When this fails after an
    /// upgrade of duroxide-pg, read the crate's new migrations, derive the
    /// files again from its new text, bump their versions, and update the
    /// fingerprints (the failure prints them).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_pinned_crates_functions_have_the_text_our_files_state() {
        let name = format!("pin_crate_text_{}", std::process::id());
        let pg = duroxide_pg::PostgresProvider::new_with_schema(
            &crate::providers::scratch::database_url(),
            Some(&name),
        )
        .await
        .unwrap();
        let pool = pg.pool().clone();
        let schema = Schema::read(&pool, &name).await.unwrap();
        let objects = objects(&pool, &name).await.unwrap();
        let mut wrong = Vec::new();
        for file in &FILES {
            for (signature, expected) in file.requires() {
                let def = definition(&pool, &schema, signature).await.unwrap();
                let found = def.map(|d| crate_fingerprint(&d, &schema, &objects));
                if found.as_deref() != Some(expected) {
                    wrong.push(format!(
                        "{}: {signature} is {found:?}, not {expected}",
                        file.file
                    ));
                }
            }
        }
        sqlx::query(&format!("DROP SCHEMA {name} CASCADE"))
            .execute(&pool)
            .await
            .unwrap();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
