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
    let signature =
        format!("{name}(text[],bigint[],bigint[],bigint[],bigint,bigint,bigint,bigint)");
    let exists: bool = sqlx::query_scalar("SELECT to_regprocedure($1) IS NOT NULL")
        .bind(&signature)
        .fetch_one(pool)
        .await?;
    if !exists {
        // Processes starting together would otherwise race on the catalog
        // row; the lock makes the second replace the first's equal text.
        let script = format!(
            "BEGIN; SELECT pg_advisory_xact_lock(hashtext('duroxide_node_fetch_tail')); {def}; COMMIT;"
        );
        sqlx::raw_sql(&script).execute(pool).await?;
    }
    Ok(Some(name))
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
