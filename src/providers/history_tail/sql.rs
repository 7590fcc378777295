//! The tail fetch's SQL function, derived from duroxide-pg's own
//! `fetch_orchestration_item` as installed in the schema, so the lock and
//! queue logic stay the crate's. The derivation changes only the history
//! step (events after what the caller holds, when the caller's copy is of
//! the same instance row and execution) and adds two result columns. Each
//! change is anchored on text that must occur exactly once; when one does
//! not (another duroxide-pg version), nothing is installed and fetches stay
//! the crate's.

use sqlx::PgPool;

use crate::providers::derived_functions::{
    exists, fingerprint, install_once, quote_ident, rewrite, schema_named,
};

/// The plan setting of every function we install. Postgres re-plans a
/// statement of a PL/pgSQL function on every call while its custom plans
/// look cheaper than the generic one, and the queue scans of both fetches
/// (a `CASE` on the tag mode, an `OFFSET` of held candidates) always do:
/// in a hello run that planning cost more server time than running them
/// (0.22 ms a fetch, 2,500 plans per 1,000 orchestrations). The statements
/// it plans are the queue scans of small queues, whose generic plans are
/// the custom ones; a function's setting also holds for the crate's
/// functions it calls, and ends with it.
const GENERIC_PLANS: &str = "SET plan_cache_mode TO 'force_generic_plan'";

/// When the instance row was created, in microseconds: with the execution
/// id and the last event id, what identifies the caller's copy of a history.
const CREATED_US: &str = "(EXTRACT(EPOCH FROM i.created_at) * 1000000)::BIGINT";

/// Text replacements from the crate's function to ours: (anchor, replacement).
fn edits(name: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            " LANGUAGE plpgsql\n",
            format!(" LANGUAGE plpgsql\n {GENERIC_PLANS}\n"),
        ),
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
        // What the caller holds is read in the crate's instance read, not
        // in statements of its own (see `fewer_statements`).
        (
            "SELECT i.orchestration_name, i.orchestration_version, i.current_execution_id",
            format!(
                "SELECT i.orchestration_name, i.orchestration_version, i.current_execution_id,\n\
                 {CREATED_US},\n\
                 (SELECT COALESCE(MAX(k.last_event_id), 0)\n\
                  FROM unnest(p_known_ids, p_known_executions, p_known_last, p_known_created_us)\n\
                    AS k(id, execution_id, last_event_id, created_us)\n\
                  WHERE k.id = i.instance_id AND k.execution_id = i.current_execution_id\n\
                    AND k.created_us = {CREATED_US})"
            ),
        ),
        (
            "INTO v_orchestration_name, v_orchestration_version, v_current_execution_id",
            "INTO v_orchestration_name, v_orchestration_version, v_current_execution_id, \
             v_created_us, v_history_after"
                .into(),
        ),
        (
            "WHERE h.instance_id = v_instance_id AND h.execution_id = v_current_execution_id;",
            "WHERE h.instance_id = v_instance_id AND h.execution_id = v_current_execution_id \
             AND h.event_id > v_history_after;"
                .into(),
        ),
        // A read that finds no instance row sets both to NULL: the history
        // it returns is then the whole one.
        (
            "v_kv_snapshot;",
            "v_kv_snapshot, COALESCE(v_history_after, 0), v_created_us;".into(),
        ),
    ]
}

/// The crate's fetch picks the first visible instance no lock holds and
/// then waits for that instance's advisory lock; fetches running together
/// all pick the same first instance and wait on each other's commits (the
/// server log of 200 hellos on four slots: 377 advisory-lock waits over
/// 2 ms). Ours tries the lock and, when a concurrent fetch or ack holds it,
/// takes the next candidate instead (`OFFSET v_skip`). When every candidate
/// was held it goes back to the crate's way from the first one (`v_block`),
/// so it returns empty only when the crate's fetch would have. `None` when
/// the text is not the one this was written against; the fetch then waits
/// as the crate's does.
fn try_locks(def: &str) -> Option<String> {
    const PICK: &str = "LIMIT 1;";
    const NONE_LEFT: &str = "RETURN;";
    const WAIT: &str = "PERFORM pg_advisory_xact_lock(hashtext(v_instance_id));";
    const DECLARED: &str = "v_lock_acquired INTEGER;";
    // Both candidate queries (with and without a version range), then the
    // return when neither found one, then the wait, in that order.
    let picks: Vec<usize> = def.match_indices(PICK).map(|(at, _)| at).collect();
    let none_left = def.find(NONE_LEFT)?;
    let wait = def.find(WAIT)?;
    let ordered = picks.len() == 2
        && def.matches(WAIT).count() == 1
        && def.matches(DECLARED).count() == 1
        && picks[1] < none_left
        && none_left < wait;
    if !ordered {
        return None;
    }
    let mut def = def.to_string();
    def = def.replacen(
        WAIT,
        "IF v_block THEN\n\
         PERFORM pg_advisory_xact_lock(hashtext(v_instance_id));\n\
         ELSIF NOT pg_try_advisory_xact_lock(hashtext(v_instance_id)) THEN\n\
         v_skip := v_skip + 1;\n\
         CONTINUE;\n\
         END IF;",
        1,
    );
    def.replace_range(
        none_left..none_left + NONE_LEFT.len(),
        "IF v_skip > 0 THEN\n\
         v_skip := 0;\n\
         v_block := true;\n\
         CONTINUE;\n\
         END IF;\n\
         RETURN;",
    );
    def = def.replace(PICK, "LIMIT 1 OFFSET v_skip;");
    Some(def.replacen(
        DECLARED,
        "v_lock_acquired INTEGER;\n            v_skip INTEGER := 0;\n            v_block BOOLEAN := false;",
        1,
    ))
}

/// The crate's candidate query with a version range joins every queued
/// message to `instances` and `executions`. Without fresh statistics (a new
/// schema, or autovacuum behind) Postgres plans those joins as hash joins
/// that read both tables whole on every fetch: 0.7 ms per fetch after 1,000
/// instances, growing with every instance the store keeps, and 40% of the
/// server time of a hello run. Ours orders the visible, unlocked messages
/// first and then checks the version of one candidate at a time by primary
/// key (`OFFSET 0` keeps the planner from merging the two), so a fetch
/// costs the same whatever the tables hold. The version check keeps the
/// crate's meaning: a message of an instance without a row, or of an
/// execution with no pinned version, passes; a version whose parts do not
/// compare does not. `None` when the query is not the one this was written
/// against (compared with white space folded); the crate's then stays.
fn candidates_by_key(def: &str, schema: &str) -> Option<String> {
    let crate_query = format!(
        "SELECT q.instance_id INTO v_instance_id \
         FROM {schema}.orchestrator_queue q \
         LEFT JOIN {schema}.instances i ON i.instance_id = q.instance_id \
         LEFT JOIN {schema}.executions e ON e.instance_id = i.instance_id \
         AND e.execution_id = i.current_execution_id \
         WHERE q.visible_at <= TO_TIMESTAMP(p_now_ms / 1000.0) \
         AND NOT EXISTS ( \
         SELECT 1 FROM {schema}.instance_locks il \
         WHERE il.instance_id = q.instance_id AND il.locked_until > p_now_ms \
         ) \
         AND ( \
         e.duroxide_version_major IS NULL \
         OR (e.duroxide_version_major * 1000000 + e.duroxide_version_minor * 1000 + e.duroxide_version_patch) \
         BETWEEN p_min_version_packed AND p_max_version_packed \
         ) \
         ORDER BY q.visible_at, q.id \
         LIMIT 1;"
    );
    let ours = format!(
        "SELECT c.instance_id INTO v_instance_id\n\
         FROM (SELECT q.id, q.instance_id, q.visible_at\n\
               FROM {schema}.orchestrator_queue q\n\
               WHERE q.visible_at <= TO_TIMESTAMP(p_now_ms / 1000.0)\n\
                 AND NOT EXISTS (\n\
                   SELECT 1 FROM {schema}.instance_locks il\n\
                   WHERE il.instance_id = q.instance_id AND il.locked_until > p_now_ms\n\
                 )\n\
               ORDER BY q.visible_at, q.id\n\
               OFFSET 0) c\n\
         WHERE COALESCE((\n\
           SELECT (e.duroxide_version_major IS NULL\n\
             OR (e.duroxide_version_major * 1000000 + e.duroxide_version_minor * 1000 + e.duroxide_version_patch)\n\
                BETWEEN p_min_version_packed AND p_max_version_packed) IS TRUE\n\
           FROM {schema}.instances i\n\
           JOIN {schema}.executions e ON e.instance_id = i.instance_id\n\
             AND e.execution_id = i.current_execution_id\n\
           WHERE i.instance_id = c.instance_id), true)\n\
         LIMIT 1;"
    );
    rewrite(def, &[(crate_query, ours)])
}

/// Every statement a PL/pgSQL function runs costs something besides its
/// own work (a check of its cached plan, which locks every relation the
/// plan names, an executor start and end, a snapshot), and a hello run is
/// bound by the server's CPU. Three statements fewer a fetch (these two
/// rewrites and the instance read of [`edits`]) took its mean time in a
/// run of 400 hellos from 0.68 to 0.64 ms. The crate's fetch locks the instance's messages in one
/// statement and reads them back by lock token in the next, and reads the
/// instance's KV snapshot in a statement of its own before returning it;
/// ours reads the locked messages from the `UPDATE`'s `RETURNING` and the
/// snapshot in the statement that returns it. Each group of edits applies
/// only to the text it was written against, else the crate's statements
/// stay. `s` is the schema as the crate's text names it; `def` has had
/// [`edits`] applied.
fn fewer_statements(def: String, s: &str) -> String {
    let locked_messages = [(
        format!(
            "UPDATE {s}.orchestrator_queue q
             SET lock_token = v_lock_token,
                 locked_until = v_locked_until,
                 attempt_count = q.attempt_count + 1
             WHERE q.instance_id = v_instance_id
               AND q.visible_at <= TO_TIMESTAMP(p_now_ms / 1000.0)
               AND (q.lock_token IS NULL OR q.locked_until <= p_now_ms);
             SELECT COALESCE(JSONB_AGG(q.work_item::JSONB ORDER BY q.id), '[]'::JSONB),
                    COALESCE(MAX(q.attempt_count), 1)
             INTO v_messages, v_max_attempt_count
             FROM {s}.orchestrator_queue q
             WHERE q.lock_token = v_lock_token;"
        ),
        format!(
            "WITH locked AS (
                 UPDATE {s}.orchestrator_queue q
                 SET lock_token = v_lock_token,
                     locked_until = v_locked_until,
                     attempt_count = q.attempt_count + 1
                 WHERE q.instance_id = v_instance_id
                   AND q.visible_at <= TO_TIMESTAMP(p_now_ms / 1000.0)
                   AND (q.lock_token IS NULL OR q.locked_until <= p_now_ms)
                 RETURNING q.id, q.work_item, q.attempt_count
             )
             SELECT COALESCE(JSONB_AGG(l.work_item::JSONB ORDER BY l.id), '[]'::JSONB),
                    COALESCE(MAX(l.attempt_count), 1)
             INTO v_messages, v_max_attempt_count
             FROM locked l;"
        ),
    )];
    let snapshot = "COALESCE(
             jsonb_object_agg(
                 ks.key,
                 jsonb_build_object('value', ks.value, 'last_updated_at_ms', ks.last_updated_at_ms)
             ),
             '{}'::jsonb
         )";
    let kv_snapshot = [
        (
            format!(
                "SELECT {snapshot}
                 INTO v_kv_snapshot
                 FROM {s}.kv_store ks
                 WHERE ks.instance_id = v_instance_id;"
            ),
            String::new(),
        ),
        (
            "v_max_attempt_count, v_kv_snapshot,".into(),
            format!(
                "v_max_attempt_count,
                 (SELECT {snapshot} FROM {s}.kv_store ks WHERE ks.instance_id = v_instance_id),"
            ),
        ),
    ];
    [&locked_messages[..], &kv_snapshot[..]]
        .into_iter()
        .fold(def, |def, group| rewrite(&def, group).unwrap_or(def))
}

/// Our function's definition from the crate's, named after its own text
/// (a changed derivation or crate function is another function), trying
/// instance locks when `tries` ([`try_locks`]); `None` when an anchor is
/// missing or repeated.
pub(super) fn derive(crate_def: &str, schema: &str, tries: bool) -> Option<(String, String)> {
    const NAME: &str = "duroxide_node_fetch_tail_NAME";
    const HEADER: &str = ".fetch_orchestration_item(";
    let named = schema_named(crate_def, HEADER)?;
    let by_key = candidates_by_key(crate_def, named);
    let crate_def = by_key.as_deref().unwrap_or(crate_def);
    let mut def = try_locks(crate_def)
        .filter(|_| tries)
        .unwrap_or_else(|| crate_def.to_string());
    for (anchor, replacement) in edits(NAME) {
        if def.matches(anchor).count() != 1 {
            return None;
        }
        def = def.replacen(anchor, &replacement, 1);
    }
    let def = fewer_statements(def, named);
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
    // `off`: fetches wait for a held instance as the crate's do (A/B runs).
    let tries = std::env::var("DUROXIDE_NODE_TRY_LOCKS").as_deref() != Ok("off");
    let Some((name, def)) = crate_def.and_then(|d| derive(&d, schema, tries)) else {
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

/// A call that runs something and then fetches, in one transaction and
/// one round trip: an ack (`ride.rs`; the crate's `ack_worker`, or the
/// turn ack of `turn_ack_sql.rs`), or the setting
/// that lets a fetch commit without waiting for its WAL flush; then a
/// fetch function, with the fetch's result. `args` are the SQL parameter
/// declarations, `types` their types (the signature `install_once` looks
/// up).
struct Ride<'a> {
    prefix: &'a str,
    args: &'a str,
    types: &'a str,
    /// Runs first, in the same transaction (`PERFORM`).
    first: String,
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
             {GENERIC_PLANS}\n\
             AS $ride$\n\
             BEGIN\n\
               PERFORM {first};\n\
               RETURN QUERY SELECT * FROM {fetch};\n\
             END\n\
             $ride$",
            schema_q = quote_ident(schema),
            args = self.args,
            first = self.first,
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
        first: format!(
            "{}{s}.ack_worker(p_token, p_instance, p_completion, p_ack_now_ms)",
            activity_ack_prelude()
        ),
        fetch: format!(
            "{tail}(p_known_ids, p_known_executions, p_known_last, p_known_created_us, \
             p_now_ms, p_lock_timeout_ms, p_min_version, p_max_version)"
        ),
        result_of: format!("{tail}(text[],bigint[],bigint[],bigint[],bigint,bigint,bigint,bigint)"),
    }
    .install(pool, schema)
    .await
}

/// The turn ack `ack` (the crate's `ack_orchestration_item` or ours,
/// `turn_ack_sql.rs`, by qualified name) as a ride's first call, on the
/// arguments the rides declare first (`p_lock_token` ..
/// `p_cancelled_activities`, packed as `pg_packing.rs` packs them); `None`
/// when the schema has no such function.
async fn turn_ack(pool: &PgPool, ack: &str) -> Result<Option<String>, sqlx::Error> {
    let signature = format!("{ack}(text,bigint,bigint,jsonb,jsonb,jsonb,jsonb,jsonb)");
    Ok(exists(pool, &signature).await?.then(|| {
        format!(
            "{ack}(p_lock_token, p_now_ms, p_execution_id, p_history_delta, p_worker_items, \
             p_orchestrator_items, p_metadata, p_cancelled_activities)"
        )
    }))
}

/// A turn's ack that also fetches a worker item: the turn ack `ack`, then
/// the crate's `fetch_work_item` for items of no session (any slot may run
/// those); `None` when either is missing.
pub(super) async fn install_turn_ride(
    pool: &PgPool,
    schema: &str,
    ack: &str,
) -> Result<Option<String>, sqlx::Error> {
    let Some(first) = turn_ack(pool, ack).await? else {
        return Ok(None);
    };
    Ride {
        prefix: "duroxide_node_turn_ride",
        args: "p_lock_token text, p_now_ms bigint, p_execution_id bigint, \
               p_history_delta jsonb, p_worker_items jsonb, p_orchestrator_items jsonb, \
               p_metadata jsonb, p_cancelled_activities jsonb, p_lock_timeout_ms bigint, \
               p_tag_filter text[], p_tag_mode text",
        types: "(text,bigint,bigint,jsonb,jsonb,jsonb,jsonb,jsonb,bigint,text[],text)",
        first,
        fetch: format!(
            "{s}.fetch_work_item(p_now_ms, p_lock_timeout_ms, NULL, NULL, p_tag_filter, p_tag_mode)",
            s = quote_ident(schema)
        ),
        result_of: format!(
            "{}.fetch_work_item(bigint,bigint,text,bigint,text[],text)",
            quote_ident(schema)
        ),
    }
    .install(pool, schema)
    .await
}

/// A turn's ack that also fetches the next turn for the slot that acked
/// (it fetches again at once): the turn ack `ack`, then the tail fetch;
/// `None` when the ack is missing.
pub(super) async fn install_next_turn_ride(
    pool: &PgPool,
    schema: &str,
    tail: &str,
    ack: &str,
) -> Result<Option<String>, sqlx::Error> {
    let Some(first) = turn_ack(pool, ack).await? else {
        return Ok(None);
    };
    Ride {
        prefix: "duroxide_node_next_turn",
        args: "p_lock_token text, p_now_ms bigint, p_execution_id bigint, \
               p_history_delta jsonb, p_worker_items jsonb, p_orchestrator_items jsonb, \
               p_metadata jsonb, p_cancelled_activities jsonb, \
               p_known_ids text[], p_known_executions bigint[], p_known_last bigint[], \
               p_known_created_us bigint[], p_lock_timeout_ms bigint, \
               p_min_version bigint, p_max_version bigint",
        types: "(text,bigint,bigint,jsonb,jsonb,jsonb,jsonb,jsonb,text[],bigint[],bigint[],bigint[],bigint,bigint,bigint)",
        first,
        fetch: format!(
            "{tail}(p_known_ids, p_known_executions, p_known_last, p_known_created_us, \
             p_now_ms, p_lock_timeout_ms, p_min_version, p_max_version)"
        ),
        result_of: format!("{tail}(text[],bigint[],bigint[],bigint[],bigint,bigint,bigint,bigint)"),
    }
    .install(pool, schema)
    .await
}

/// A fetch's transaction takes locks and counts an attempt, nothing a
/// user was told of: if the server loses its commit in a crash, the item is
/// fetched again, as when a lock expires. So a plain fetch (not one riding
/// an ack) need not wait for its WAL flush, which on a busy server costs
/// more than the fetch (an fsync per commit, one at a time). Any later
/// commit on the server, such as that fetch's ack, flushes it with itself.
///
/// An activity's ack (`ack_worker`, alone or riding with a turn fetch)
/// records a result no user has seen: it reaches the instance's history and
/// status only through a turn's ack, which stays synchronous, and Postgres
/// flushes its WAL in order, so that turn's commit makes the result durable
/// before anyone is told of it. If the server crashes first, the activity's
/// item comes back when its lock expires and the activity runs again, as it
/// does when a worker dies before its ack: activities run at least once. A
/// turn's ack and every enqueue (client starts, events) wait for their
/// flush.
const ASYNC_COMMIT: &str = "set_config('synchronous_commit', 'off', true)";

/// What an activity's ack calls before `ack_worker`: [`ASYNC_COMMIT`], or
/// nothing with `DUROXIDE_NODE_ASYNC_ACTIVITY_ACK=off` (read when the
/// provider connects), for a deployment that wants each result flushed
/// before the next activity runs, and for A/B runs.
pub(crate) fn activity_ack_prelude() -> String {
    if std::env::var("DUROXIDE_NODE_ASYNC_ACTIVITY_ACK").as_deref() == Ok("off") {
        String::new()
    } else {
        format!("{ASYNC_COMMIT}, ")
    }
}

/// The tail fetch with an asynchronous commit, for fetches that do not
/// ride an ack.
pub(super) async fn install_async_fetch(
    pool: &PgPool,
    schema: &str,
    tail: &str,
) -> Result<Option<String>, sqlx::Error> {
    Ride {
        prefix: "duroxide_node_fetch_async",
        args: "p_known_ids text[], p_known_executions bigint[], p_known_last bigint[], \
               p_known_created_us bigint[], p_now_ms bigint, p_lock_timeout_ms bigint, \
               p_min_version bigint, p_max_version bigint",
        types: "(text[],bigint[],bigint[],bigint[],bigint,bigint,bigint,bigint)",
        first: ASYNC_COMMIT.into(),
        fetch: format!(
            "{tail}(p_known_ids, p_known_executions, p_known_last, p_known_created_us, \
             p_now_ms, p_lock_timeout_ms, p_min_version, p_max_version)"
        ),
        result_of: format!("{tail}(text[],bigint[],bigint[],bigint[],bigint,bigint,bigint,bigint)"),
    }
    .install(pool, schema)
    .await
}

/// The crate's `fetch_work_item` with an asynchronous commit.
pub(super) async fn install_async_work_fetch(
    pool: &PgPool,
    schema: &str,
) -> Result<Option<String>, sqlx::Error> {
    let s = quote_ident(schema);
    let fetch = format!("{s}.fetch_work_item(bigint,bigint,text,bigint,text[],text)");
    if !exists(pool, &fetch).await? {
        return Ok(None);
    }
    Ride {
        prefix: "duroxide_node_fetch_work_async",
        args: "p_now_ms bigint, p_lock_timeout_ms bigint, p_owner_id text, \
               p_session_lock_timeout_ms bigint, p_tag_names text[], p_tag_mode text",
        types: "(bigint,bigint,text,bigint,text[],text)",
        first: ASYNC_COMMIT.into(),
        fetch: format!(
            "{s}.fetch_work_item(p_now_ms, p_lock_timeout_ms, p_owner_id, \
             p_session_lock_timeout_ms, p_tag_names, p_tag_mode)"
        ),
        result_of: fetch,
    }
    .install(pool, schema)
    .await
}

#[cfg(test)]
mod tests;
