//! `PostgresProvider.connect*` constructors. The store is wrapped so that calls
//! cut off by a terminated session run again (`pg_retry.rs`).

use std::sync::Arc;
use std::time::Duration;

use duroxide_pg::{EntraAuthOptions, MigrationPolicy, PostgresProvider, ProviderConfig};
use napi_derive::napi;

use super::NativeProvider;
use crate::errors::{BridgeError, BridgeResult};

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
/// timeout, so a wrong host or port took half a minute to report. One direct
/// connection first fails at once when nothing listens. Only network errors
/// fail here; anything the server itself answers (authentication, too many
/// clients) is left to the pool, which reports or retries it as before.
async fn preflight(database_url: &str) -> BridgeResult<()> {
    use sqlx::{ConnectOptions, Connection};
    let Ok(opts) = database_url.parse::<sqlx::postgres::PgConnectOptions>() else {
        // Let duroxide-pg report a URL it cannot parse in its own words.
        return Ok(());
    };
    let target = format!("{}:{}", opts.get_host(), opts.get_port());
    match tokio::time::timeout(PREFLIGHT_TIMEOUT, opts.connect()).await {
        Ok(Ok(conn)) => {
            let _ = conn.close().await;
            Ok(())
        }
        Ok(Err(sqlx::Error::Io(e))) => Err(BridgeError::Provider(format!(
            "cannot connect to Postgres at {target}: {e}"
        ))),
        Ok(Err(_)) => Ok(()),
        Err(_) => Err(BridgeError::Provider(format!(
            "cannot connect to Postgres at {target}: no answer within {} s",
            PREFLIGHT_TIMEOUT.as_secs()
        ))),
    }
}

/// Connects with a `postgres://` URL; `schema` defaults to `public`.
#[napi]
pub async fn connect_postgres(
    database_url: String,
    schema: Option<String>,
    options: Option<PostgresConnectOptions>,
) -> napi::Result<NativeProvider> {
    let options = options.unwrap_or_default();
    if let Some(schema) = &schema {
        validate_schema(schema)?;
    }
    if options.max_connections == Some(0) {
        return Err(
            BridgeError::InvalidOption("maxConnections must be at least 1, got 0".into()).into(),
        );
    }
    check_url(&database_url)?;
    let policy = migration_policy(&options)?;
    preflight(&database_url).await?;
    let mut config = ProviderConfig::url(database_url);
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
    let provider = result.map_err(|e| {
        provider_error(
            &format!(
                "cannot connect to Postgres (schema {})",
                schema.as_deref().unwrap_or("public")
            ),
            e,
        )
    })?;
    Ok(NativeProvider::new(
        super::pg_retry::with_terminated_retry(Arc::new(provider)),
        "postgres",
    ))
}

/// Connects to Azure Database for PostgreSQL with a Microsoft Entra ID token.
#[napi]
pub async fn connect_postgres_entra(
    host: String,
    port: u32,
    database: String,
    user: String,
    schema: Option<String>,
    options: Option<EntraOptions>,
) -> napi::Result<NativeProvider> {
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
        return Err(BridgeError::InvalidArgument("host must be a non-empty string".into()).into());
    }
    let mut entra = EntraAuthOptions::new();
    if let Some(a) = options.audience {
        entra = entra.audience(a);
    }
    if let Some(m) = options.max_connections {
        if m == 0 {
            return Err(BridgeError::InvalidOption(
                "maxConnections must be at least 1, got 0".into(),
            )
            .into());
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
    Ok(NativeProvider::new(
        super::pg_retry::with_terminated_retry(Arc::new(provider)),
        "postgres",
    ))
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
}
