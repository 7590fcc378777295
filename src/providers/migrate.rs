//! The admin's operations on a Postgres schema. `PostgresProvider.migrate`
//! and `npx duroxide-node migrate`: what an admin role runs before deploying
//! an application whose role may not `CREATE` (docs/fast-paths.md,
//! "Deployments"): duroxide-pg's migrations, the fast paths' functions,
//! optionally a prune of other versions' functions and the grants an
//! application role needs. `provider.cleanupSchema()`: everything of a
//! schema dropped.

use std::time::Duration;

use napi_derive::napi;

use super::pg_functions::crate_text::{self, Schema};
use super::pg_functions::install;
use super::postgres::{connect_postgres, provider_error, PostgresConnectOptions};
use super::{Backend, NativeProvider};
use crate::errors::{BridgeError, BridgeResult, Settled};

/// Options of `PostgresProvider.migrate`.
#[napi(object)]
#[derive(Default)]
pub struct MigrateOptions {
    /// The schema (default `public`); created if missing.
    pub schema: Option<String>,
    /// Also drop the functions recorded for other package versions that no
    /// provider marked as used within `unusedForMs`.
    pub prune: Option<bool>,
    /// With `prune`: how long a function must have gone unused, in ms
    /// (default a day; live providers mark theirs hourly).
    pub unused_for_ms: Option<f64>,
    /// A role to grant what an application needs: `USAGE` on the schema,
    /// `SELECT, INSERT, UPDATE, DELETE` on its tables, `USAGE, SELECT` on
    /// its sequences and `EXECUTE` on its functions.
    pub grant_to: Option<String>,
}

/// A function `migrate` dropped with `prune`.
#[napi(object)]
pub struct PrunedFunction {
    pub signature: String,
    /// The package version that installed it.
    pub package_version: String,
}

/// What `migrate` did.
#[napi(object)]
pub struct MigrateReport {
    pub schema: String,
    /// The `.sql` files installed now (empty when all were there).
    pub installed: Vec<String>,
    /// Every function of this package version in the schema.
    pub functions: Vec<String>,
    pub pruned: Vec<PrunedFunction>,
    pub granted_to: Option<String>,
}

const DAY: Duration = Duration::from_secs(24 * 3600);

async fn migrate(database_url: String, options: MigrateOptions) -> BridgeResult<MigrateReport> {
    let unused_for = match options.unused_for_ms {
        None => DAY,
        Some(ms) if ms.is_finite() && ms >= 0.0 => Duration::from_secs_f64(ms / 1000.0),
        Some(ms) => {
            return Err(BridgeError::InvalidOption(format!(
                "unusedForMs must be a non-negative number of ms, got {ms}"
            )))
        }
    };
    let connected = connect_postgres(
        database_url,
        options.schema.clone(),
        Some(PostgresConnectOptions {
            max_connections: Some(2),
            fast_paths: Some(false),
            ..Default::default()
        }),
    )
    .await?;
    let Some((pool, name)) = connected.backend().postgres() else {
        unreachable!("a Postgres connect");
    };
    let failed = |e: sqlx::Error| BridgeError::Provider(format!("migrate of schema {name}: {e}"));
    let schema = Schema::read(&pool, &name).await.map_err(failed)?;
    crate_text::check(&pool, &schema)
        .await
        .map_err(failed)?
        .map_err(BridgeError::Provider)?;
    let installed = install::install(&pool, &schema).await.map_err(|e| {
        BridgeError::Provider(format!("cannot install the functions in {name}: {e}"))
    })?;
    let pruned = if options.prune == Some(true) {
        install::prune(pool.clone(), schema.clone(), unused_for)
            .await
            .map_err(failed)?
    } else {
        Vec::new()
    };
    if let Some(role) = &options.grant_to {
        grant(&pool, &schema, role).await.map_err(failed)?;
    }
    pool.close().await;
    Ok(MigrateReport {
        schema: name,
        installed: installed.iter().map(|f| f.to_string()).collect(),
        functions: super::pg_functions::FILES
            .iter()
            .map(|f| f.name.to_string())
            .collect(),
        pruned: pruned
            .into_iter()
            .map(|r| PrunedFunction {
                signature: r.signature,
                package_version: r.package_version,
            })
            .collect(),
        granted_to: options.grant_to,
    })
}

/// What an application role needs in `schema`, granted to `role` (quoted
/// by the server).
async fn grant(pool: &sqlx::PgPool, schema: &Schema, role: &str) -> Result<(), sqlx::Error> {
    let role: String = sqlx::query_scalar("SELECT quote_ident($1)")
        .bind(role)
        .fetch_one(pool)
        .await?;
    let s = &schema.quoted;
    sqlx::raw_sql(&format!(
        "GRANT USAGE ON SCHEMA {s} TO {role};\n\
         GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {s} TO {role};\n\
         GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {s} TO {role};\n\
         GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA {s} TO {role};"
    ))
    .execute(pool)
    .await?;
    Ok(())
}

#[napi(js_name = "migratePostgres", ts_return_type = "Promise<MigrateReport>")]
pub async fn migrate_postgres_js(
    database_url: String,
    options: Option<MigrateOptions>,
) -> Settled<MigrateReport> {
    Settled(migrate(database_url, options.unwrap_or_default()).await)
}

/// `PostgresProvider#cleanupSchema()`: what duroxide-pg's `cleanup_schema`
/// drops, and our functions and their record, which it does not know.
async fn cleanup_schema(backend: Backend) -> BridgeResult<()> {
    let Some((pool, name)) = backend.postgres() else {
        return Err(BridgeError::InvalidArgument(
            "cleanupSchema() is a PostgresProvider method".into(),
        ));
    };
    let failed = |e: sqlx::Error| provider_error(&format!("cannot clean up schema {name}"), e);
    let schema = Schema::read(&pool, &name).await.map_err(failed)?;
    install::remove(pool.clone(), schema.clone())
        .await
        .map_err(failed)?;
    let crate_cleanup = format!("SELECT {}.cleanup_schema()", schema.quoted);
    let exists: bool = sqlx::query_scalar("SELECT to_regprocedure($1) IS NOT NULL")
        .bind(format!("{}.cleanup_schema()", schema.quoted))
        .fetch_one(&pool)
        .await
        .map_err(failed)?;
    if exists {
        sqlx::query(&crate_cleanup)
            .execute(&pool)
            .await
            .map_err(failed)?;
    }
    if name != "public" {
        sqlx::query(&format!("DROP SCHEMA IF EXISTS {} CASCADE", schema.quoted))
            .execute(&pool)
            .await
            .map_err(failed)?;
    }
    Ok(())
}

#[napi]
impl NativeProvider {
    /// Drops the schema's tables and functions (and the schema unless it is
    /// `public`). Postgres only.
    #[napi(ts_return_type = "Promise<void>")]
    pub async fn cleanup_schema(&self) -> Settled<()> {
        Settled(cleanup_schema(self.backend().clone()).await)
    }
}
