//! The tail fetch's SQL function, derived from duroxide-pg's own
//! `fetch_orchestration_item` as installed in the schema, so the lock and
//! queue logic stay the crate's. The derivation changes only the history
//! step (events after what the caller holds, when the caller's copy is of
//! the same instance row and execution) and adds two result columns. Each
//! change is anchored on text that must occur exactly once; when one does
//! not (another duroxide-pg version), nothing is installed and fetches stay
//! the crate's.

use sqlx::PgPool;

/// Text replacements from the crate's function to ours: (anchor, replacement).
fn edits(name: &str, instances: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            ".fetch_orchestration_item(p_now_ms bigint",
            format!(
                ".{name}(p_known_ids text[], p_known_executions bigint[], p_known_last bigint[], \
                 p_known_created_us bigint[], p_now_ms bigint"
            ),
        ),
        (
            "out_kv_snapshot jsonb)",
            "out_kv_snapshot jsonb, out_history_after bigint, out_created_us bigint)".into(),
        ),
        (
            "v_max_attempt_count INTEGER;",
            "v_max_attempt_count INTEGER;\n            v_history_after BIGINT := 0;\n            v_created_us BIGINT;".into(),
        ),
        (
            "IF FOUND THEN",
            format!(
                "IF FOUND THEN\n\
                 SELECT (EXTRACT(EPOCH FROM i.created_at) * 1000000)::BIGINT INTO v_created_us\n\
                 FROM {instances} i WHERE i.instance_id = v_instance_id;\n\
                 SELECT COALESCE(MAX(k.last_event_id), 0) INTO v_history_after\n\
                 FROM unnest(p_known_ids, p_known_executions, p_known_last, p_known_created_us)\n\
                   AS k(id, execution_id, last_event_id, created_us)\n\
                 WHERE k.id = v_instance_id AND k.execution_id = v_current_execution_id\n\
                   AND k.created_us = v_created_us;"
            ),
        ),
        (
            "WHERE h.instance_id = v_instance_id AND h.execution_id = v_current_execution_id;",
            "WHERE h.instance_id = v_instance_id AND h.execution_id = v_current_execution_id \
             AND h.event_id > v_history_after;"
                .into(),
        ),
        (
            "v_kv_snapshot;",
            "v_kv_snapshot, v_history_after, v_created_us;".into(),
        ),
    ]
}

/// FNV-1a: a name that is the same in every process for the same text.
fn fingerprint(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

fn quote_ident(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

/// Our function's definition from the crate's, named after its own text
/// (a changed derivation or crate function is another function); `None`
/// when an anchor is missing or repeated.
pub(super) fn derive(crate_def: &str, schema: &str) -> Option<(String, String)> {
    const NAME: &str = "duroxide_node_fetch_tail_NAME";
    let instances = format!("{}.instances", quote_ident(schema));
    let mut def = crate_def.to_string();
    for (anchor, replacement) in edits(NAME, &instances) {
        if def.matches(anchor).count() != 1 {
            return None;
        }
        def = def.replacen(anchor, &replacement, 1);
    }
    let name = format!("duroxide_node_fetch_tail_{:08x}", fingerprint(&def));
    let def = def.replacen(NAME, &name, 1);
    Some((format!("{}.{}", quote_ident(schema), name), def))
}

/// Installs the tail fetch in `schema` unless it is there; returns its
/// qualified name, or `None` when the crate's function could not be derived.
pub(super) async fn install(pool: &PgPool, schema: &str) -> Result<Option<String>, sqlx::Error> {
    let crate_fn = format!(
        "{}.fetch_orchestration_item(bigint,bigint,bigint,bigint)",
        quote_ident(schema)
    );
    let crate_def: Option<String> =
        sqlx::query_scalar("SELECT pg_get_functiondef(to_regprocedure($1))")
            .bind(&crate_fn)
            .fetch_one(pool)
            .await?;
    let Some((name, def)) = crate_def.and_then(|d| derive(&d, schema)) else {
        return Ok(None);
    };
    install_once(
        pool,
        &name,
        "(text[],bigint[],bigint[],bigint[],bigint,bigint,bigint,bigint)",
        &def,
        "duroxide_node_fetch_tail",
    )
    .await?;
    Ok(Some(name))
}

/// A call that acks and then fetches, in one transaction and one round
/// trip (`ride.rs`): the crate's own ack function, then a fetch function,
/// with the fetch's result. `args` are the SQL parameter declarations,
/// `types` their types (the signature `install_once` looks up).
struct Ride<'a> {
    prefix: &'a str,
    args: &'a str,
    types: &'a str,
    ack: String,
    fetch: String,
    /// The fetch function whose result type this one returns.
    result_of: String,
}

impl Ride<'_> {
    async fn install(&self, pool: &PgPool, schema: &str) -> Result<Option<String>, sqlx::Error> {
        let result: Option<String> =
            sqlx::query_scalar("SELECT pg_get_function_result(to_regprocedure($1))")
                .bind(&self.result_of)
                .fetch_one(pool)
                .await?;
        let Some(result) = result else {
            return Ok(None);
        };
        let placeholder = format!("{}_NAME", self.prefix);
        let def = format!(
            "CREATE OR REPLACE FUNCTION {schema_q}.{placeholder}({args})\n\
             RETURNS {result}\n\
             LANGUAGE plpgsql\n\
             AS $ride$\n\
             BEGIN\n\
               PERFORM {ack};\n\
               RETURN QUERY SELECT * FROM {fetch};\n\
             END\n\
             $ride$",
            schema_q = quote_ident(schema),
            args = self.args,
            ack = self.ack,
            fetch = self.fetch,
        );
        let name = format!("{}_{:08x}", self.prefix, fingerprint(&def));
        let def = def.replacen(&placeholder, &name, 1);
        let name = format!("{}.{}", quote_ident(schema), name);
        install_once(pool, &name, self.types, &def, self.prefix).await?;
        Ok(Some(name))
    }
}

/// A worker's ack that also fetches the next turn: the crate's
/// `ack_worker`, then the tail fetch; `None` when either is missing.
pub(super) async fn install_worker_ride(
    pool: &PgPool,
    schema: &str,
    tail: &str,
) -> Result<Option<String>, sqlx::Error> {
    let s = quote_ident(schema);
    if !exists(pool, &format!("{s}.ack_worker(text,text,text,bigint)")).await? {
        return Ok(None);
    }
    Ride {
        prefix: "duroxide_node_ride",
        args: "p_token text, p_instance text, p_completion text, p_ack_now_ms bigint, \
               p_known_ids text[], p_known_executions bigint[], p_known_last bigint[], \
               p_known_created_us bigint[], p_now_ms bigint, p_lock_timeout_ms bigint, \
               p_min_version bigint, p_max_version bigint",
        types:
            "(text,text,text,bigint,text[],bigint[],bigint[],bigint[],bigint,bigint,bigint,bigint)",
        ack: format!("{s}.ack_worker(p_token, p_instance, p_completion, p_ack_now_ms)"),
        fetch: format!(
            "{tail}(p_known_ids, p_known_executions, p_known_last, p_known_created_us, \
             p_now_ms, p_lock_timeout_ms, p_min_version, p_max_version)"
        ),
        result_of: format!("{tail}(text[],bigint[],bigint[],bigint[],bigint,bigint,bigint,bigint)"),
    }
    .install(pool, schema)
    .await
}

/// A turn's ack that also fetches a worker item: the crate's
/// `ack_orchestration_item`, then its `fetch_work_item` for items of no
/// session (any slot may run those); `None` when either is missing.
pub(super) async fn install_turn_ride(
    pool: &PgPool,
    schema: &str,
) -> Result<Option<String>, sqlx::Error> {
    let s = quote_ident(schema);
    let ack =
        format!("{s}.ack_orchestration_item(text,bigint,bigint,jsonb,jsonb,jsonb,jsonb,jsonb)");
    if !exists(pool, &ack).await? {
        return Ok(None);
    }
    Ride {
        prefix: "duroxide_node_turn_ride",
        args: "p_lock_token text, p_now_ms bigint, p_execution_id bigint, \
               p_history_delta jsonb, p_worker_items jsonb, p_orchestrator_items jsonb, \
               p_metadata jsonb, p_cancelled_activities jsonb, p_lock_timeout_ms bigint, \
               p_tag_filter text[], p_tag_mode text",
        types: "(text,bigint,bigint,jsonb,jsonb,jsonb,jsonb,jsonb,bigint,text[],text)",
        ack: format!(
            "{s}.ack_orchestration_item(p_lock_token, p_now_ms, p_execution_id, \
             p_history_delta, p_worker_items, p_orchestrator_items, p_metadata, \
             p_cancelled_activities)"
        ),
        fetch: format!(
            "{s}.fetch_work_item(p_now_ms, p_lock_timeout_ms, NULL, NULL, p_tag_filter, p_tag_mode)"
        ),
        result_of: format!("{s}.fetch_work_item(bigint,bigint,text,bigint,text[],text)"),
    }
    .install(pool, schema)
    .await
}

async fn exists(pool: &PgPool, signature: &str) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar("SELECT to_regprocedure($1) IS NOT NULL")
        .bind(signature)
        .fetch_one(pool)
        .await
}

/// Creates `def` unless `name` with `args` exists. Processes starting
/// together would otherwise race on the catalog row; the lock makes the
/// second replace the first's equal text.
async fn install_once(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_without_the_anchors_is_not_derived() {
        assert!(derive("CREATE FUNCTION s.other() RETURNS void", "s").is_none());
    }

    #[test]
    fn the_name_follows_the_crate_text() {
        let a = fingerprint("one definition");
        assert_eq!(a, fingerprint("one definition"));
        assert_ne!(a, fingerprint("another definition"));
    }
}
