//! What installing a store function derived from one of duroxide-pg's
//! needs, whichever call it derives: a name that follows the text, and an
//! install that processes starting together do not race on.

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
