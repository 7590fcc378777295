//! `PostgresProvider.connect*` constructors. The store is wrapped so that calls
//! cut off by a terminated session run again (`pg_retry.rs`).

use std::sync::Arc;
use std::time::Duration;

use duroxide_pg::{EntraAuthOptions, MigrationPolicy, PostgresProvider, ProviderConfig};
use napi_derive::napi;

use super::kept::KeptConnections;
use super::{Backend, NativeProvider};
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

fn provider_error(what: &str, err: impl std::fmt::Display) -> BridgeError {
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

/// How long the pre-flight connection may take before the server counts as unreachable.
const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(10);

/// duroxide-pg's pool retries a refused connection until its 30 s acquire
/// timeout, so a wrong host or port took half a minute to report, and a server
/// out of connection slots (SQLSTATE 53300) surfaced only as "pool timed out
/// while waiting for an open connection". One direct connection first fails
/// at once when nothing listens or the server refuses for lack of slots, and,
/// when it gets in, reads the server's connection budget for a later message.
/// Anything else the server answers (authentication, ...) is left to the
/// pool, which reports it in its own words.
async fn preflight(database_url: &str, pool_size: u32) -> BridgeResult<Option<Capacity>> {
    use sqlx::{ConnectOptions, Connection};
    let Ok(opts) = database_url.parse::<sqlx::postgres::PgConnectOptions>() else {
        // Let duroxide-pg report a URL it cannot parse in its own words.
        return Ok(None);
    };
    let target = format!("{}:{}", opts.get_host(), opts.get_port());
    match tokio::time::timeout(PREFLIGHT_TIMEOUT, opts.connect()).await {
        Ok(Ok(mut conn)) => {
            let capacity = Capacity::read(&mut conn).await;
            let _ = conn.close().await;
            Ok(capacity)
        }
        Ok(Err(sqlx::Error::Io(e))) => Err(BridgeError::Provider(format!(
            "cannot connect to Postgres at {target}: {e}"
        ))),
        Ok(Err(e)) => match too_many_connections(&e) {
            Some(server_says) => Err(BridgeError::Provider(format!(
                "cannot connect to Postgres at {target}: the server refused a connection \
                 (SQLSTATE 53300, {server_says}); this provider's pool needs up to \
                 {pool_size} connections. {SIZING_HINT}"
            ))),
            None => Ok(None),
        },
        Err(_) => Err(BridgeError::Provider(format!(
            "cannot connect to Postgres at {target}: no answer within {} s",
            PREFLIGHT_TIMEOUT.as_secs()
        ))),
    }
}

const SIZING_HINT: &str = "Every process, runtime and client sharing this server needs \
     connections: use one provider per process and size maxConnections so that \
     processes x (maxConnections + 1) stays below max_connections (docs/operations.md, \
     \"Fleet sizing\")";

/// The server's message when it refused a connection for lack of slots
/// (`max_connections`, a role's or a database's `CONNECTION LIMIT`).
fn too_many_connections(e: &sqlx::Error) -> Option<String> {
    match e {
        sqlx::Error::Database(db) if db.code().as_deref() == Some("53300") => {
            Some(db.message().to_string())
        }
        _ => None,
    }
}

/// The server's connection budget as one connection saw it.
struct Capacity {
    max_connections: i64,
    in_use: i64,
    /// The connecting role's `CONNECTION LIMIT`, -1 for none.
    role_limit: i64,
}

impl Capacity {
    async fn read(conn: &mut sqlx::PgConnection) -> Option<Capacity> {
        let row: (i64, i64, i64) = sqlx::query_as(
            "SELECT current_setting('max_connections')::bigint, \
                    (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'), \
                    COALESCE((SELECT rolconnlimit::bigint FROM pg_roles WHERE rolname = current_user), -1)",
        )
        .fetch_one(conn)
        .await
        .ok()?;
        Some(Capacity {
            max_connections: row.0,
            in_use: row.1,
            role_limit: row.2,
        })
    }

    fn describe(&self) -> String {
        let role = if self.role_limit >= 0 {
            format!(", the role's CONNECTION LIMIT is {}", self.role_limit)
        } else {
            String::new()
        };
        format!(
            "max_connections is {}, {} client connections were open just before{role}",
            self.max_connections, self.in_use
        )
    }
}

/// Why the pool could not connect, when the pool itself only says it timed
/// out: one more direct connection shows whether the server is out of slots.
async fn explain_pool_timeout(
    database_url: &str,
    pool_size: u32,
    capacity: Option<&Capacity>,
) -> Option<String> {
    use sqlx::ConnectOptions;
    let opts = database_url
        .parse::<sqlx::postgres::PgConnectOptions>()
        .ok()?;
    let refused = match tokio::time::timeout(PREFLIGHT_TIMEOUT, opts.connect()).await {
        Ok(Err(e)) => too_many_connections(&e),
        _ => None,
    }?;
    let budget = capacity
        .map(|c| format!("; {}", c.describe()))
        .unwrap_or_default();
    Some(format!(
        "the server refuses new connections (SQLSTATE 53300, {refused}): this provider's \
         pool of {pool_size} connections could not open{budget}. {SIZING_HINT}"
    ))
}

/// The store under its retry layer, with its pool and schema captured.
/// With `migrations: 'verifyOnly'` the schema is not ours to change, so
/// fetches stay the crate's whole-history ones.
async fn stacked(provider: PostgresProvider, may_install: bool) -> NativeProvider {
    let pool = provider.pool().clone();
    let schema = provider.schema_name().to_string();
    let lanes = KeptConnections::lanes(pool.clone());
    let store: Arc<dyn duroxide::providers::Provider> = Arc::new(provider);
    let ack = if may_install {
        super::turn_ack_sql::install(&pool, &schema).await
    } else {
        super::turn_ack_sql::crate_ack(&schema)
    };
    let store = super::kept_calls::over(store, &lanes, &schema, &ack);
    let (store, for_runtimes) = if may_install {
        super::history_tail::over(store, &pool, &schema, lanes.runtime.clone(), &ack).await
    } else {
        (store, None)
    };
    let (ridden, warmer) = for_runtimes.map(|f| (f.ridden, f.warmer)).unzip();
    let backend = Backend::Postgres {
        pool,
        client_kept: lanes.client,
        schema,
        schemas_checked: Default::default(),
        ridden,
        warmer,
    };
    let retried = super::pg_retry::with_terminated_retry(store);
    NativeProvider::with_wakeups(retried, backend)
}

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
    let may_install = options.migrations.as_deref() != Some("verifyOnly");
    Ok(stacked(provider, may_install).await)
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
    Ok(stacked(provider, true).await)
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
        let super::Backend::Postgres {
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
