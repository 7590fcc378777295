//! The guard's own Postgres queries: read-only, through the provider's pool.
//!
//! - Rows whose `attempt_count` exceeds `maxAttempts + 1`: the runtime poisons
//!   a message at `maxAttempts + 1`, so a higher count means even the poison
//!   ack failed and the message is retried forever (the livelock signature).
//! - Other schemas of the same database that hold an `orchestrator_queue`:
//!   duroxide-pg keys its advisory locks by `hashtext(instance_id)` without the
//!   schema, so equal instance ids in two schemas serialize each other's
//!   fetches and acks.

use sqlx::PgPool;

use super::Queue;

/// One queue row group over the attempt threshold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OverAttempts {
    pub instance: String,
    pub attempt: u32,
    pub queue: Queue,
}

/// Instances with messages fetched more than `threshold` times, highest first
/// (at most 100 per queue, so a flood costs one bounded query).
pub(crate) async fn over_attempts(
    pool: &PgPool,
    schema: &str,
    threshold: u32,
) -> Result<Vec<OverAttempts>, sqlx::Error> {
    let mut found = Vec::new();
    for (table, queue) in [
        ("orchestrator_queue", Queue::Orchestrator),
        ("worker_queue", Queue::Worker),
    ] {
        // `schema` was validated as a plain identifier when the provider connected,
        // and is spelled unquoted as duroxide-pg spells it.
        let sql = format!(
            "SELECT instance_id, MAX(attempt_count) FROM {schema}.{table} \
             WHERE attempt_count > $1 AND instance_id IS NOT NULL \
             GROUP BY instance_id ORDER BY 2 DESC LIMIT 100"
        );
        let rows: Vec<(String, i32)> = sqlx::query_as(&sql)
            .bind(threshold as i32)
            .fetch_all(pool)
            .await?;
        found.extend(rows.into_iter().map(|(instance, attempt)| OverAttempts {
            instance,
            attempt: attempt.max(0) as u32,
            queue,
        }));
    }
    Ok(found)
}

/// Other schemas of this database with an `orchestrator_queue` table.
pub(crate) async fn other_schemas(pool: &PgPool, schema: &str) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT table_schema::text FROM information_schema.tables \
         WHERE table_name = 'orchestrator_queue' AND table_schema <> $1 \
         ORDER BY 1",
    )
    .bind(schema)
    .fetch_all(pool)
    .await
}

/// How many of the other schemas the warning names: a database shared by
/// many (a test database, one schema per tenant) would fill the line.
const NAMES_SHOWN: usize = 3;

/// The first few names and how many more: `a, b, c and 57 more`.
fn few(names: &[String]) -> String {
    let shown = names
        .iter()
        .take(NAMES_SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    match names.len().saturating_sub(NAMES_SHOWN) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// Warns when other duroxide schemas share the database (once per provider:
/// see `Backend::first_schema_check`). `false` if it could not look.
pub(crate) async fn warn_other_schemas(pool: PgPool, schema: String) -> bool {
    let database: String = match sqlx::query_scalar("SELECT current_database()::text")
        .fetch_one(&pool)
        .await
    {
        Ok(d) => d,
        Err(_) => return false,
    };
    match other_schemas(&pool, &schema).await {
        Ok(others) if !others.is_empty() => tracing::warn!(
            target: "duroxide_node::guard",
            schema = %schema,
            other_schemas = others.len(),
            "{} other duroxide schemas share database '{database}' with schema '{schema}' ({}): \
             duroxide-pg's advisory locks are keyed by instance id without the schema, so equal \
             instance ids across them serialize each other's fetches and acks; prefer one \
             database per fleet, or instance ids unique across schemas",
            others.len(),
            few(&others)
        ),
        Ok(_) => {}
        Err(e) => {
            tracing::debug!(target: "duroxide_node::guard", error = %e, "schema check failed");
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::few;

    #[test]
    fn the_warning_names_a_few_schemas_and_counts_the_rest() {
        let names: Vec<String> = (1..=60).map(|i| format!("s{i:02}")).collect();
        assert_eq!(few(&names), "s01, s02, s03 and 57 more");
        assert_eq!(few(&names[..2]), "s01, s02");
        assert_eq!(few(&names[..3]), "s01, s02, s03");
    }
}
