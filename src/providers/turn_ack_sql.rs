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
//! merges key-values only when the instance has changes to merge. It also
//! queues a turn's worker items in one `INSERT`, where the crate runs a
//! loop's query and an insert per item, and deletes the turn's messages and
//! its lock in one statement: each PL/pgSQL statement costs a plan check,
//! an executor start and end and a snapshot besides its work.
//!
//! Each edit replaces a block of the crate's text that must occur exactly
//! once (compared with white space folded); when one does not (another
//! duroxide-pg version), nothing is installed and acks stay the crate's.

use sqlx::PgPool;

use super::derived_functions::{fingerprint, install_once, quote_ident, rewrite, schema_named};

/// The argument types of the crate's ack and ours.
const ARGS: &str = "(text,bigint,bigint,jsonb,jsonb,jsonb,jsonb,jsonb)";

/// The crate's ack, qualified, as acks call it when ours is not installed.
pub(crate) fn crate_ack(schema: &str) -> String {
    format!("{}.ack_orchestration_item", quote_ident(schema))
}

/// (the crate's text, ours) in `s`, the schema as the crate's text names it.
fn edits(s: &str) -> [(String, String); 5] {
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
        // The worker items in one statement, in the array's order, which
        // is the order of their ids.
        (
            format!(
                "FOR v_elem IN SELECT value FROM JSONB_ARRAY_ELEMENTS(p_worker_items) LOOP
                    IF v_elem ? 'ActivityExecute' THEN
                        v_item_instance_id := v_elem->'ActivityExecute'->>'instance';
                        v_item_execution_id := (v_elem->'ActivityExecute'->>'execution_id')::BIGINT;
                        v_item_activity_id := (v_elem->'ActivityExecute'->>'id')::BIGINT;
                        v_item_session_id := v_elem->'ActivityExecute'->>'session_id';
                        v_item_tag := v_elem->'ActivityExecute'->>'tag';
                    ELSE
                        v_item_instance_id := NULL;
                        v_item_execution_id := NULL;
                        v_item_activity_id := NULL;
                        v_item_session_id := NULL;
                        v_item_tag := NULL;
                    END IF;
                    INSERT INTO {s}.worker_queue (work_item, visible_at, created_at, instance_id, execution_id, activity_id, session_id, tag)
                    VALUES (v_elem::TEXT, v_now_ts, v_now_ts, v_item_instance_id, v_item_execution_id, v_item_activity_id, v_item_session_id, v_item_tag);
                END LOOP;"
            ),
            format!(
                "INSERT INTO {s}.worker_queue (work_item, visible_at, created_at, instance_id, execution_id, activity_id, session_id, tag)
                SELECT w.item::TEXT, v_now_ts, v_now_ts,
                       w.item->'ActivityExecute'->>'instance',
                       (w.item->'ActivityExecute'->>'execution_id')::BIGINT,
                       (w.item->'ActivityExecute'->>'id')::BIGINT,
                       w.item->'ActivityExecute'->>'session_id',
                       w.item->'ActivityExecute'->>'tag'
                FROM JSONB_ARRAY_ELEMENTS(p_worker_items) WITH ORDINALITY AS w(item, n)
                ORDER BY w.n;"
            ),
        ),
        // The turn's messages and its lock released in one statement; the
        // row count checked is still the lock's.
        (
            format!(
                "DELETE FROM {s}.orchestrator_queue q WHERE q.lock_token = p_lock_token;
                DELETE FROM {s}.instance_locks il"
            ),
            format!(
                "WITH acked AS (
                    DELETE FROM {s}.orchestrator_queue q WHERE q.lock_token = p_lock_token
                )
                DELETE FROM {s}.instance_locks il"
            ),
        ),
    ]
}

/// Our function's qualified name and definition from the crate's, named
/// after its own text; `None` when a block is missing or repeated.
pub(crate) fn derive(crate_def: &str, schema: &str) -> Option<(String, String)> {
    const HEADER: &str = ".ack_orchestration_item(";
    const NAME: &str = "duroxide_node_ack_turn_NAME";
    let named = schema_named(crate_def, HEADER)?;
    let mut def = rewrite(crate_def, &edits(named))?;
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
