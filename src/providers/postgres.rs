//! `PostgresProvider.connect*` constructors. The store is wrapped so that calls
//! cut off by a terminated session run again (`pg_retry.rs`), and, with
//! `fastPaths` (the default), runs its most frequent calls through our
//! functions and kept connections (`docs/fast-paths.md`).

use std::time::Duration;

use duroxide_pg::{EntraAuthOptions, MigrationPolicy, PostgresProvider, ProviderConfig};
use napi_derive::napi;

use super::pg_functions::install::Policy;
use super::pg_preflight::{explain_pool_timeout, preflight};
use super::pg_stack::{stacked, FastPathOptions};
use super::wakeup::WakeupOptions;
use super::NativeProvider;
use crate::errors::{BridgeError, BridgeResult, Settled};

/// Options of the URL constructors (`connect`, `connectWithSchema`).
#[napi(object)]
#[derive(Default)]
pub struct PostgresConnectOptions {
    /// Pool size (default: `DUROXIDE_PG_POOL_MAX` or 10).
    pub max_connections: Option<u32>,
    /// `'apply'` (default) runs pending migrations; `'verifyOnly'` refuses to
    /// start unless a privileged process already applied them.
    pub migrations: Option<String>,
    /// `true` (default): the fast store paths (docs/fast-paths.md); `false`:
    /// every call runs through duroxide-pg's own provider.
    pub fast_paths: Option<bool>,
    /// `true`: fetches and activity acks commit without waiting for their
    /// WAL flush. A Postgres crash can then run some activities again (their
    /// results were not yet durable); nothing a caller was told of is lost.
    /// Default `false`.
    pub relaxed_durability: Option<bool>,
    /// `true` (default): idle dispatchers are woken across processes by
    /// Postgres LISTEN/NOTIFY on a connection of the provider's own;
    /// `false` for a connection pooler without LISTEN (PgBouncer in
    /// transaction mode): other processes' work is then found by the
    /// fallback look.
    pub listen: Option<bool>,
    /// How often an idle dispatcher looks at the store though nothing woke
    /// it, in ms (default 1000).
    pub fallback_poll_ms: Option<u32>,
}

/// Options of the Entra constructors.
#[napi(object)]
#[derive(Default)]
pub struct EntraOptions {
    /// Token audience (default: the Azure OSS RDBMS audience).
    pub audience: Option<String>,
    /// Pool size.
    pub max_connections: Option<u32>,
    /// How long to wait for a pooled connection.
    pub acquire_timeout_ms: Option<u32>,
    /// How often the access token is refreshed.
    pub refresh_interval_ms: Option<u32>,
    /// As for `connect`: the fast store paths (default `true`).
    pub fast_paths: Option<bool>,
    /// As for `connect`: commit fetches and activity acks without waiting
    /// for their WAL flush (default `false`).
    pub relaxed_durability: Option<bool>,
    /// As for `connect`: LISTEN/NOTIFY across processes (default `true`).
    pub listen: Option<bool>,
    /// As for `connect`: the idle dispatchers' fallback look, in ms
    /// (default 1000).
    pub fallback_poll_ms: Option<u32>,
}

/// duroxide-pg reads its URL pool size from `DUROXIDE_PG_POOL_MAX` only; this
/// lock keeps two concurrent connects from seeing each other's value.
static POOL_ENV_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub(crate) fn validate_schema(schema: &str) -> BridgeResult<()> {
    let mut chars = schema.chars();
    let ok = matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && schema.len() <= 63;
    if ok {
        Ok(())
    } else {
        Err(BridgeError::InvalidArgument(format!(
            "schema '{schema}' is not a valid schema name (letters, digits and '_', \
             not starting with a digit, at most 63 bytes)"
        )))
    }
}

fn migration_policy(options: &PostgresConnectOptions) -> BridgeResult<MigrationPolicy> {
    match options.migrations.as_deref() {
        None | Some("apply") => Ok(MigrationPolicy::ApplyAll),
        Some("verifyOnly") => Ok(MigrationPolicy::VerifyOnly),
        Some(other) => Err(BridgeError::InvalidOption(format!(
            "migrations must be 'apply' or 'verifyOnly', got '{other}'"
        ))),
    }
}

pub(crate) fn provider_error(what: &str, err: impl std::fmt::Display) -> BridgeError {
    BridgeError::Provider(format!("{what}: {err:#}"))
}

/// sqlx dials any URL it can parse with the Postgres protocol (a `mysql://`
/// URL reached a MySQL server and failed mid-handshake), so a URL that is not
/// a Postgres URL is refused as a caller error before any connection. The
/// message shows only the scheme: the rest of a URL may carry a password.
fn check_url(database_url: &str) -> BridgeResult<()> {
    let scheme = database_url.split_once("://").map(|(s, _)| s);
    match scheme {
        Some(s) if s.eq_ignore_ascii_case("postgres") || s.eq_ignore_ascii_case("postgresql") => {
            Ok(())
        }
        other => Err(BridgeError::InvalidArgument(format!(
            "databaseUrl must be a postgres:// or postgresql:// URL, got {}",
            match other {
                Some(s) => format!("a '{s}://' URL"),
                None => "a string without a scheme".to_string(),
            }
        ))),
    }
}

/// Added to the acquire timeout to bound a whole Entra connect (token + pool).
const ENTRA_CONNECT_MARGIN: Duration = Duration::from_secs(15);

/// Connects with a `postgres://` URL; `schema` defaults to `public`.
pub(crate) async fn connect_postgres(
    database_url: String,
    schema: Option<String>,
    options: Option<PostgresConnectOptions>,
) -> BridgeResult<NativeProvider> {
    let options = options.unwrap_or_default();
    if let Some(schema) = &schema {
        validate_schema(schema)?;
    }
    if options.max_connections == Some(0) {
        return Err(BridgeError::InvalidOption(
            "maxConnections must be at least 1, got 0".into(),
        ));
    }
    check_url(&database_url)?;
    let policy = migration_policy(&options)?;
    let pool_size = options.max_connections.unwrap_or_else(default_pool_size);
    let capacity = preflight(&database_url, pool_size).await?;
    let mut config = ProviderConfig::url(database_url.clone());
    config.schema_name = schema.clone();
    config.migration_policy = policy;

    let result = match options.max_connections {
        Some(max) => {
            let _guard = POOL_ENV_LOCK.lock().await;
            let previous = std::env::var("DUROXIDE_PG_POOL_MAX").ok();
            std::env::set_var("DUROXIDE_PG_POOL_MAX", max.to_string());
            let result = PostgresProvider::new_with_config(config).await;
            match previous {
                Some(v) => std::env::set_var("DUROXIDE_PG_POOL_MAX", v),
                None => std::env::remove_var("DUROXIDE_PG_POOL_MAX"),
            }
            result
        }
        None => PostgresProvider::new_with_config(config).await,
    };
    let what = format!(
        "cannot connect to Postgres (schema {})",
        schema.as_deref().unwrap_or("public")
    );
    let provider = match result {
        Ok(provider) => provider,
        Err(e) if format!("{e:#}").contains("pool timed out") => {
            let cause = explain_pool_timeout(&database_url, pool_size, capacity.as_ref()).await;
            return Err(match cause {
                Some(cause) => BridgeError::Provider(format!("{what}: {cause}")),
                None => provider_error(&what, e),
            });
        }
        Err(e) => return Err(provider_error(&what, e)),
    };
    let policy = match options.migrations.as_deref() {
        Some("verifyOnly") => Policy::UseInstalled,
        _ => Policy::Install,
    };
    let fast = FastPathOptions {
        enabled: options.fast_paths.unwrap_or(true),
        relaxed: options.relaxed_durability.unwrap_or(false),
        policy,
        wakeups: WakeupOptions::of(options.listen, options.fallback_poll_ms),
    };
    Ok(stacked(provider, fast).await)
}

/// duroxide-pg's URL pool size: `DUROXIDE_PG_POOL_MAX`, else 10.
fn default_pool_size() -> u32 {
    std::env::var("DUROXIDE_PG_POOL_MAX")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
}

/// Connects to Azure Database for PostgreSQL with a Microsoft Entra ID token.
pub(crate) async fn connect_postgres_entra(
    host: String,
    port: u32,
    database: String,
    user: String,
    schema: Option<String>,
    options: Option<EntraOptions>,
) -> BridgeResult<NativeProvider> {
    let options = options.unwrap_or_default();
    if let Some(schema) = &schema {
        validate_schema(schema)?;
    }
    let port = u16::try_from(port)
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| {
            BridgeError::InvalidArgument(format!("port must be 1..65535, got {port}"))
        })?;
    if host.is_empty() {
        return Err(BridgeError::InvalidArgument(
            "host must be a non-empty string".into(),
        ));
    }
    let mut entra = EntraAuthOptions::new();
    if let Some(a) = options.audience {
        entra = entra.audience(a);
    }
    if let Some(m) = options.max_connections {
        if m == 0 {
            return Err(BridgeError::InvalidOption(
                "maxConnections must be at least 1, got 0".into(),
            ));
        }
        entra = entra.max_connections(m);
    }
    if let Some(ms) = options.acquire_timeout_ms {
        entra = entra.acquire_timeout(Duration::from_millis(ms.into()));
    }
    if let Some(ms) = options.refresh_interval_ms {
        entra = entra.refresh_interval(Duration::from_millis(ms.into()));
    }
    let mut config = ProviderConfig::entra(host.clone(), port, database, user, entra);
    config.schema_name = schema;
    // Credential discovery can wait on networks that drop traffic silently;
    // bound the whole connect by the pool's acquire timeout plus a margin.
    let limit = Duration::from_millis(u64::from(options.acquire_timeout_ms.unwrap_or(30_000)))
        + ENTRA_CONNECT_MARGIN;
    let provider = tokio::time::timeout(limit, PostgresProvider::new_with_config(config))
        .await
        .map_err(|_| {
            BridgeError::Provider(format!(
                "cannot connect to {host}:{port} with Entra ID: no connection within {} ms",
                limit.as_millis()
            ))
        })?
        .map_err(|e| {
            provider_error(&format!("cannot connect to {host}:{port} with Entra ID"), e)
        })?;
    let fast = FastPathOptions {
        enabled: options.fast_paths.unwrap_or(true),
        relaxed: options.relaxed_durability.unwrap_or(false),
        policy: Policy::Install,
        wakeups: WakeupOptions::of(options.listen, options.fallback_poll_ms),
    };
    Ok(stacked(provider, fast).await)
}

#[cfg(test)]
mod tests {
    use super::validate_schema;

    #[test]
    fn schema_names_are_plain_identifiers() {
        assert!(validate_schema("tenant_1").is_ok());
        assert!(validate_schema("_x").is_ok());
        assert!(validate_schema("a; drop table x").is_err());
        assert!(validate_schema("1abc").is_err());
        assert!(validate_schema("").is_err());
    }

    #[test]
    fn only_postgres_urls_are_accepted() {
        use super::check_url;
        assert!(check_url("postgres://u@h/db").is_ok());
        assert!(check_url("PostgreSQL://u:secret@h:5432/db").is_ok());
        let err = check_url("mysql://root:secret@h/db")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("'mysql://'") && !err.contains("secret"),
            "{err}"
        );
        assert!(check_url("not a url").is_err());
    }

    /// A connected provider's starts run on its client lane's kept
    /// connections (`kept.rs`, `kept_calls.rs`), not through the pool nor
    /// on the runtime's lane.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_providers_starts_run_on_kept_connections() {
        let url = std::env::var("DATABASE_URL")
            .unwrap_or_else(|_| "postgresql://postgres@127.0.0.1:5432/postgres".into());
        let schema = format!("provider_kept_{}", std::process::id());
        let provider = super::connect_postgres(url, Some(schema.clone()), None)
            .await
            .unwrap();
        let crate::providers::Backend::Postgres {
            client_kept: kept,
            pool,
            ..
        } = provider.backend().clone()
        else {
            unreachable!()
        };
        let client = duroxide::Client::new(provider.provider());
        let before = kept.served();
        client.start_orchestration("i", "O", "").await.unwrap();
        assert_eq!(kept.served() - before, 1);
        sqlx::raw_sql(&format!("DROP SCHEMA {schema} CASCADE"))
            .execute(&pool)
            .await
            .unwrap();
    }
}

// The JS entry points: their errors reach JS with their `code` (see `errors.rs`).
#[napi(
    js_name = "connectPostgres",
    ts_return_type = "Promise<NativeProvider>"
)]
pub async fn connect_postgres_js(
    database_url: String,
    schema: Option<String>,
    options: Option<PostgresConnectOptions>,
) -> Settled<NativeProvider> {
    Settled(connect_postgres(database_url, schema, options).await)
}

#[napi(
    js_name = "connectPostgresEntra",
    ts_return_type = "Promise<NativeProvider>"
)]
pub async fn connect_postgres_entra_js(
    host: String,
    port: u32,
    database: String,
    user: String,
    schema: Option<String>,
    options: Option<EntraOptions>,
) -> Settled<NativeProvider> {
    Settled(connect_postgres_entra(host, port, database, user, schema, options).await)
}
