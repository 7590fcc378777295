//! Installing, finding, recording and removing our functions in a schema.
//!
//! A provider with fast paths uses the functions when they are installed
//! and executable; it installs the missing ones itself only when the
//! schema is its to change (`migrations: 'apply'`), on a connection of its
//! own, in one transaction: all or none, and a failure (a role without
//! `CREATE`, say) rolls back and closes that connection, never one of the
//! pool's. `npx duroxide-node migrate` installs them as an admin role.
//!
//! Nothing here drops a function a live process may call: connect only
//! creates; [`prune`] drops the functions of other package versions that
//! no provider used for a while (each live provider refreshes
//! `last_seen_at` of its functions at connect and hourly).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use sqlx::{Connection, Executor, PgConnection, PgPool};

use super::crate_text::{self, Schema};
use super::{SqlFile, FILES, REGISTRY, REGISTRY_TABLE};

/// A future whose `Send` bound is stated, not inferred: nested in a napi
/// entry point's future, rustc cannot prove it through sqlx's executor
/// borrows.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How often a live provider marks its functions as used.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(3600);

const PACKAGE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Whether a connecting provider may install what is missing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Policy {
    /// `migrations: 'apply'`: the schema is the provider's to change.
    Install,
    /// `migrations: 'verifyOnly'`: only what an admin installed is used.
    UseInstalled,
}

/// How each of our functions stands in a schema.
struct Found {
    missing: Vec<&'static SqlFile>,
    /// Installed but not executable by this role.
    denied: Vec<&'static SqlFile>,
}

async fn found(pool: &PgPool, schema: &Schema) -> Result<Found, sqlx::Error> {
    let signatures: Vec<String> = FILES.iter().map(|f| f.signature(&schema.quoted)).collect();
    // NULL: missing; false: not executable.
    let rows: Vec<Option<bool>> = sqlx::query_scalar(
        "SELECT CASE WHEN to_regprocedure(s) IS NULL THEN NULL \
                ELSE has_function_privilege(to_regprocedure(s), 'EXECUTE') END \
         FROM unnest($1::text[]) WITH ORDINALITY AS t(s, n) ORDER BY n",
    )
    .bind(&signatures)
    .fetch_all(pool)
    .await?;
    let mut found = Found {
        missing: Vec::new(),
        denied: Vec::new(),
    };
    for (file, row) in FILES.iter().zip(rows) {
        match row {
            None => found.missing.push(file),
            Some(false) => found.denied.push(file),
            Some(true) => {}
        }
    }
    Ok(found)
}

/// `Ok` when the provider can call our functions in `schema` (installing
/// them first if `policy` allows and they are missing); otherwise why not,
/// for the WARN and `provider.fastPaths()`.
pub(crate) async fn ensure(pool: &PgPool, schema: &Schema, policy: Policy) -> Result<(), String> {
    let db = |e: sqlx::Error| format!("could not read schema '{}': {e}", schema.name);
    crate_text::check(pool, schema).await.map_err(db)??;
    let state = found(pool, schema).await.map_err(db)?;
    if let Some(file) = state.denied.first() {
        return Err(format!(
            "this role may not EXECUTE {}.{} (GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {} \
             TO the application's role)",
            schema.name, file.name, schema.quoted
        ));
    }
    if !state.missing.is_empty() {
        if policy == Policy::UseInstalled {
            return Err(format!(
                "the functions are not installed in schema '{}' and migrations: 'verifyOnly' \
                 installs nothing: run `npx duroxide-node migrate --schema {}` as the schema's \
                 owner",
                schema.name, schema.name
            ));
        }
        install(pool, schema).await.map_err(|e| {
            format!(
                "could not install the functions in schema '{}' ({e}): run `npx duroxide-node \
                 migrate --schema {}` as a role that may CREATE there",
                schema.name, schema.name
            )
        })?;
    }
    heartbeat(pool, schema).await;
    Ok(())
}

/// Installs every missing function and records them, on a connection of
/// its own, in one transaction. Processes starting together serialise on
/// an advisory lock and the later ones find the functions there.
pub(crate) fn install<'a>(
    pool: &'a PgPool,
    schema: &'a Schema,
) -> BoxFuture<'a, Result<Vec<&'static str>, String>> {
    Box::pin(install_owned(pool.clone(), schema.clone()))
}

async fn install_owned(pool: PgPool, schema: Schema) -> Result<Vec<&'static str>, String> {
    let options = pool.connect_options();
    let mut conn = PgConnection::connect_with(&options)
        .await
        .map_err(|e| e.to_string())?;
    let installed = install_on(&mut conn, schema.name, schema.quoted).await;
    // A failed install leaves this connection in an aborted transaction;
    // it is not the pool's, and goes (closing it rolls back).
    let _ = conn.close().await;
    installed.map_err(|e| match &e {
        sqlx::Error::Database(db) => db.message().to_string(),
        _ => e.to_string(),
    })
}

async fn install_on(
    conn: &mut PgConnection,
    name: String,
    quoted: String,
) -> Result<Vec<&'static str>, sqlx::Error> {
    let registry = REGISTRY.replace("{schema}", &quoted);
    let record = format!(
        "INSERT INTO {quoted}.{REGISTRY_TABLE} (signature, file, sql_fingerprint, package_version) \
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) \
         ON CONFLICT (signature) DO UPDATE SET last_seen_at = now()"
    );
    let signatures: Vec<String> = FILES.iter().map(|f| f.signature(&quoted)).collect();
    let recorded: Vec<String> = FILES
        .iter()
        .map(|f| format!("{}{}", f.name, f.args))
        .collect();
    let files: Vec<String> = FILES.iter().map(|f| f.file.to_string()).collect();
    let fingerprints: Vec<String> = FILES.iter().map(SqlFile::fingerprint).collect();
    let versions = vec![PACKAGE_VERSION.to_string(); FILES.len()];
    let definitions: Vec<String> = FILES.iter().map(|f| f.sql(&quoted)).collect();

    conn.execute("BEGIN").await?;
    conn.execute(
        sqlx::query("SELECT pg_advisory_xact_lock(hashtext($1))")
            .bind(format!("duroxide_node_install.{name}")),
    )
    .await?;
    conn.execute(registry.as_str()).await?;
    // Missing ones again, now that no other process installs.
    let missing: Vec<bool> = sqlx::query_scalar(
        "SELECT to_regprocedure(s) IS NULL FROM unnest($1::text[]) WITH ORDINALITY AS t(s, n) \
         ORDER BY n",
    )
    .bind(signatures)
    .fetch_all(&mut *conn)
    .await?;
    let mut installed = Vec::new();
    for ((file, definition), missing) in FILES.iter().zip(definitions).zip(missing) {
        if missing {
            conn.execute(definition.as_str()).await?;
            installed.push(file.file);
        }
    }
    conn.execute(
        sqlx::query(&record)
            .bind(recorded)
            .bind(files)
            .bind(fingerprints)
            .bind(versions),
    )
    .await?;
    conn.execute("COMMIT").await?;
    Ok(installed)
}

/// `name` read and our functions installed in it (tests of the layers that
/// call them).
#[cfg(test)]
pub(crate) async fn installed(pool: &PgPool, name: &str) -> Schema {
    let schema = Schema::read(pool, name).await.unwrap();
    install(pool, &schema).await.unwrap();
    schema
}

/// Marks this version's functions as used now. Best effort: a role that
/// may not update the record only makes [`prune`] less sure.
pub(crate) async fn heartbeat(pool: &PgPool, schema: &Schema) {
    let signatures: Vec<String> = FILES
        .iter()
        .map(|f| format!("{}{}", f.name, f.args))
        .collect();
    let updated = sqlx::query(&format!(
        "UPDATE {}.{REGISTRY_TABLE} SET last_seen_at = now() WHERE signature = ANY($1)",
        schema.quoted
    ))
    .bind(&signatures)
    .execute(pool)
    .await;
    if let Err(e) = updated {
        tracing::debug!(target: "duroxide_node::providers", schema = %schema.name, error = %e, "could not mark the fast paths' functions as used");
    }
}

/// Refreshes `last_seen_at` every [`HEARTBEAT`] until `stop` is cancelled.
pub(crate) fn keep_marking(
    pool: PgPool,
    schema: Schema,
    stop: tokio_util::sync::CancellationToken,
) {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(HEARTBEAT) => heartbeat(&pool, &schema).await,
            }
        }
    });
}

/// A function [`prune`] dropped or would drop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recorded {
    pub(crate) signature: String,
    pub(crate) package_version: String,
}

/// Drops the recorded functions that this version does not install and
/// that no provider marked as used within `unused_for`; what it dropped.
pub(crate) fn prune(
    pool: PgPool,
    schema: Schema,
    unused_for: Duration,
) -> BoxFuture<'static, Result<Vec<Recorded>, sqlx::Error>> {
    Box::pin(async move {
        let current: Vec<String> = FILES
            .iter()
            .map(|f| format!("{}{}", f.name, f.args))
            .collect();
        let stale: Vec<(String, String)> = sqlx::query_as(&format!(
            "SELECT signature, package_version FROM {}.{REGISTRY_TABLE} \
             WHERE signature <> ALL($1) AND last_seen_at < now() - make_interval(secs => $2)",
            schema.quoted
        ))
        .bind(current)
        .bind(unused_for.as_secs_f64())
        .fetch_all(&pool)
        .await?;
        if !stale.is_empty() {
            let signatures: Vec<String> = stale.iter().map(|(s, _)| s.clone()).collect();
            // One simple query: one implicit transaction, rolled back whole
            // on an error.
            pool.execute(drops(&schema, &signatures, false).as_str())
                .await?;
        }
        Ok(stale
            .into_iter()
            .map(|(signature, package_version)| Recorded {
                signature,
                package_version,
            })
            .collect())
    })
}

/// The statements that drop `signatures` in `schema` and their records,
/// and, with `table`, the record table itself.
fn drops(schema: &Schema, signatures: &[String], table: bool) -> String {
    let literal = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let mut script = String::new();
    for signature in signatures {
        script.push_str(&format!(
            "DROP FUNCTION IF EXISTS {}.{signature};\n",
            schema.quoted
        ));
    }
    if table {
        script.push_str(&format!(
            "DROP TABLE IF EXISTS {}.{REGISTRY_TABLE};",
            schema.quoted
        ));
    } else {
        let list: Vec<String> = signatures.iter().map(|s| literal(s)).collect();
        script.push_str(&format!(
            "DELETE FROM {}.{REGISTRY_TABLE} WHERE signature IN ({});",
            schema.quoted,
            list.join(", ")
        ));
    }
    script
}

/// Drops every function we installed in `schema` and the record of them
/// (the crate's `cleanup_schema` does not know them).
pub(crate) fn remove(pool: PgPool, schema: Schema) -> BoxFuture<'static, Result<(), sqlx::Error>> {
    Box::pin(async move {
        let table_exists: bool = sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
            .bind(format!("{}.{REGISTRY_TABLE}", schema.quoted))
            .fetch_one(&pool)
            .await?;
        let mut signatures: Vec<String> = FILES
            .iter()
            .map(|f| format!("{}{}", f.name, f.args))
            .collect();
        if table_exists {
            let recorded: Vec<String> = sqlx::query_scalar(&format!(
                "SELECT signature FROM {}.{REGISTRY_TABLE}",
                schema.quoted
            ))
            .fetch_all(&pool)
            .await?;
            signatures.extend(recorded);
        }
        signatures.sort();
        signatures.dedup();
        pool.execute(drops(&schema, &signatures, true).as_str())
            .await?;
        Ok(())
    })
}
