//! What a Postgres connect checks before it hands the URL to duroxide-pg's
//! pool: that something listens and has a connection slot, and, when the
//! pool later times out, why.

use std::time::Duration;

use crate::errors::{BridgeError, BridgeResult};

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
pub(crate) async fn preflight(
    database_url: &str,
    pool_size: u32,
) -> BridgeResult<Option<Capacity>> {
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
pub(crate) struct Capacity {
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
pub(crate) async fn explain_pool_timeout(
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
