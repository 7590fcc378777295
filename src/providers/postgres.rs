//! `PostgresProvider.connect*` constructors.

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
    let policy = migration_policy(&options)?;
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
    Ok(NativeProvider::new(Arc::new(provider), "postgres"))
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
    let provider = PostgresProvider::new_with_config(config)
        .await
        .map_err(|e| {
            provider_error(&format!("cannot connect to {host}:{port} with Entra ID"), e)
        })?;
    Ok(NativeProvider::new(Arc::new(provider), "postgres"))
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
}
