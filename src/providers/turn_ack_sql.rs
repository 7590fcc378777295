//! The turn ack's SQL function, derived from duroxide-pg's own
//! `ack_orchestration_item` as installed in the schema, with fewer
//! statements and the same rows written.
//!
//! The crate's ack writes the instance row up to three times a turn (insert
//! if missing, then its name, then its current execution) and the execution
//! row twice (insert if missing, then its status), and on a terminal turn
//! runs three statements that merge the instance's key-value changes even
//! when it has none. In a hello run that is 5 of about 25 statements a
//! hello's two acks run, each a row version and a WAL record on a server
//! whose CPU bounds the run. Ours writes each row once (`INSERT ... ON
//! CONFLICT DO UPDATE` with the values the crate's statements end with) and
//! merges key-values only when the instance has changes to merge.
//!
//! Each edit replaces a block of the crate's text that must occur exactly
//! once (compared with white space folded); when one does not (another
//! duroxide-pg version), nothing is installed and acks stay the crate's.

use sqlx::PgPool;

use super::derived_functions::{fingerprint, install_once, quote_ident};

/// The argument types of the crate's ack and ours.
const ARGS: &str = "(text,bigint,bigint,jsonb,jsonb,jsonb,jsonb,jsonb)";

/// The crate's ack, qualified, as acks call it when ours is not installed.
pub(crate) fn crate_ack(schema: &str) -> String {
    format!("{}.ack_orchestration_item", quote_ident(schema))
}

/// (the crate's text, ours) in `s`, the schema as the crate's text names it.
fn edits(s: &str) -> [(String, String); 3] {
    [
        // Step 7 (the execution's status) moves into the execution's insert.
        (
            format!(
                "IF v_status IS NOT NULL THEN
                 v_completed_at := CASE
                     WHEN v_status IN ('Completed', 'Failed') THEN v_now_ts
                     ELSE NULL
                 END;
                 UPDATE {s}.executions e
                 SET status = v_status, output = v_output, completed_at = v_completed_at
                 WHERE e.instance_id = v_instance_id AND e.execution_id = p_execution_id;
             END IF;"
            ),
            String::new(),
        ),
        // Steps 3 to 5: the instance row and the execution row, each once.
        (
            format!(
                "IF v_orchestration_name IS NOT NULL AND v_orchestration_version IS NOT NULL THEN
                 INSERT INTO {s}.instances (instance_id, orchestration_name, orchestration_version, current_execution_id, parent_instance_id, created_at, updated_at)
                 VALUES (v_instance_id, v_orchestration_name, v_orchestration_version, p_execution_id, v_parent_instance_id, v_now_ts, v_now_ts)
                 ON CONFLICT (instance_id) DO NOTHING;
                 UPDATE {s}.instances i
                 SET orchestration_name = v_orchestration_name,
                     orchestration_version = v_orchestration_version,
                     parent_instance_id = COALESCE(i.parent_instance_id, v_parent_instance_id),
                     updated_at = v_now_ts
                 WHERE i.instance_id = v_instance_id;
             END IF;
             INSERT INTO {s}.executions (instance_id, execution_id, status, started_at)
             VALUES (v_instance_id, p_execution_id, 'Running', v_now_ts)
             ON CONFLICT (instance_id, execution_id) DO NOTHING;
             UPDATE {s}.instances i
             SET current_execution_id = GREATEST(i.current_execution_id, p_execution_id),
                 updated_at = v_now_ts
             WHERE i.instance_id = v_instance_id;"
            ),
            format!(
                "IF v_orchestration_name IS NOT NULL AND v_orchestration_version IS NOT NULL THEN
                 INSERT INTO {s}.instances AS i (instance_id, orchestration_name, orchestration_version, current_execution_id, parent_instance_id, created_at, updated_at)
                 VALUES (v_instance_id, v_orchestration_name, v_orchestration_version, p_execution_id, v_parent_instance_id, v_now_ts, v_now_ts)
                 ON CONFLICT (instance_id) DO UPDATE
                 SET orchestration_name = EXCLUDED.orchestration_name,
                     orchestration_version = EXCLUDED.orchestration_version,
                     parent_instance_id = COALESCE(i.parent_instance_id, EXCLUDED.parent_instance_id),
                     current_execution_id = GREATEST(i.current_execution_id, EXCLUDED.current_execution_id),
                     updated_at = EXCLUDED.updated_at;
             ELSE
                 UPDATE {s}.instances i
                 SET current_execution_id = GREATEST(i.current_execution_id, p_execution_id),
                     updated_at = v_now_ts
                 WHERE i.instance_id = v_instance_id;
             END IF;
             IF v_status IS NOT NULL THEN
                 v_completed_at := CASE
                     WHEN v_status IN ('Completed', 'Failed') THEN v_now_ts
                     ELSE NULL
                 END;
                 INSERT INTO {s}.executions AS e (instance_id, execution_id, status, started_at, output, completed_at)
                 VALUES (v_instance_id, p_execution_id, v_status, v_now_ts, v_output, v_completed_at)
                 ON CONFLICT (instance_id, execution_id) DO UPDATE
                 SET status = EXCLUDED.status, output = EXCLUDED.output, completed_at = EXCLUDED.completed_at;
             ELSE
                 INSERT INTO {s}.executions (instance_id, execution_id, status, started_at)
                 VALUES (v_instance_id, p_execution_id, 'Running', v_now_ts)
                 ON CONFLICT (instance_id, execution_id) DO NOTHING;
             END IF;"
            ),
        ),
        // Step 7e reads and deletes only the instance's `kv_delta` rows.
        (
            "IF v_is_terminal THEN".into(),
            format!(
                "IF v_is_terminal AND EXISTS (
                 SELECT 1 FROM {s}.kv_delta kd WHERE kd.instance_id = v_instance_id
             ) THEN"
            ),
        ),
    ]
}

/// Where `pattern`'s words occur in `text` as whole words separated by
/// white space, any run of it standing for any other (the crate's
/// indentation is not ours to pin).
fn find_folded(text: &str, pattern: &str) -> Vec<(usize, usize)> {
    let words: Vec<&str> = pattern.split_whitespace().collect();
    let Some(first) = words.first() else {
        return Vec::new();
    };
    let ends_word = |at: usize| text[at..].chars().next().is_none_or(char::is_whitespace);
    let starts_word = |at: usize| {
        text[..at]
            .chars()
            .next_back()
            .is_none_or(char::is_whitespace)
    };
    let mut found = Vec::new();
    for (start, _) in text.match_indices(first) {
        if !starts_word(start) {
            continue;
        }
        let mut at = start;
        let whole = words.iter().enumerate().all(|(i, word)| {
            let rest = &text[at..];
            let gap = rest.len() - rest.trim_start().len();
            if (i > 0 && gap == 0) || !rest[gap..].starts_with(word) {
                return false;
            }
            at += gap + word.len();
            ends_word(at)
        });
        if whole {
            found.push((start, at));
        }
    }
    found
}

/// Our function's qualified name and definition from the crate's, named
/// after its own text; `None` when a block is missing or repeated.
pub(crate) fn derive(crate_def: &str, schema: &str) -> Option<(String, String)> {
    const HEADER: &str = ".ack_orchestration_item(";
    const NAME: &str = "duroxide_node_ack_turn_NAME";
    let header = crate_def.find("FUNCTION ")? + "FUNCTION ".len();
    let named = &crate_def[header..header + crate_def[header..].find(HEADER)?];
    let mut def = crate_def.to_string();
    for (theirs, ours) in edits(named) {
        let [(start, end)] = find_folded(&def, &theirs)[..] else {
            return None;
        };
        def.replace_range(start..end, &ours);
    }
    if def.matches(HEADER).count() != 1 {
        return None;
    }
    def = def.replacen(HEADER, &format!(".{NAME}("), 1);
    let name = format!("duroxide_node_ack_turn_{:08x}", fingerprint(&def));
    let def = def.replacen(NAME, &name, 1);
    Some((format!("{}.{}", quote_ident(schema), name), def))
}

/// Installs our turn ack in `schema` unless it is there; returns the
/// qualified name of the turn ack to call: ours, or the crate's when
/// `DUROXIDE_NODE_DERIVED_ACK=off` (read when the provider connects; for
/// A/B runs) or when the crate's could not be derived or ours installed.
pub(crate) async fn install(pool: &PgPool, schema: &str) -> String {
    match try_install(pool, schema).await {
        Ok(Some(name)) => name,
        Ok(None) => {
            tracing::debug!(target: "duroxide_node::providers", schema, "duroxide-pg's turn ack is not the one ours derives from; acks stay the crate's");
            crate_ack(schema)
        }
        Err(e) => {
            tracing::debug!(target: "duroxide_node::providers", schema, error = %e, "could not install the derived turn ack; acks stay the crate's");
            crate_ack(schema)
        }
    }
}

async fn try_install(pool: &PgPool, schema: &str) -> Result<Option<String>, sqlx::Error> {
    if std::env::var("DUROXIDE_NODE_DERIVED_ACK").as_deref() == Ok("off") {
        return Ok(None);
    }
    // NULL when the schema has no such function.
    let crate_def: Option<String> =
        sqlx::query_scalar("SELECT pg_get_functiondef(to_regprocedure($1))")
            .bind(format!("{}{ARGS}", crate_ack(schema)))
            .fetch_one(pool)
            .await?;
    let Some((name, def)) = crate_def.and_then(|d| derive(&d, schema)) else {
        return Ok(None);
    };
    install_once(pool, &name, ARGS, &def, "duroxide_node_ack_turn").await?;
    Ok(Some(name))
}

#[cfg(test)]
mod tests;
