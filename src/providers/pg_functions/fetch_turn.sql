-- duroxide-node fast path `tailFetch`: an orchestration fetch that reads only
-- the history the caller does not hold.
--
-- Derived from duroxide-pg's fetch_orchestration_item (migration 0025/0026):
-- the same queue, lease and lock logic, the same result for a caller that
-- holds nothing. What differs:
--   * the caller names the histories it holds (instance, execution, last
--     event id, identity); for the fetched instance, when execution and
--     identity match, only the events after the last one held are returned
--     (out_history_after says after which). The identity is the md5 of the
--     stored first event of the execution and that row's xmin: a deleted and
--     re-created instance has another, whatever the clocks said;
--   * history and messages are returned as JSON text built from the stored
--     text, not cast through jsonb: no \u0000 escape in a stored message can
--     make the fetch fail, and nothing is parsed twice. With no instance row
--     yet, the names come back NULL and the caller reads them from the first
--     event or message, as the crate's SQL does;
--   * the instance's advisory lock is tried (pg_try_advisory_xact_lock) and a
--     held instance is skipped for the next candidate; when every candidate
--     was held, it waits on the first as the crate does, so it returns empty
--     only when the crate's fetch would;
--   * the candidate query with a version range checks the version of one
--     candidate at a time by primary key instead of joining every queued
--     message to instances and executions;
--   * the candidates are the first 8 (and the skipped) eligible messages
--     in the order of idx_orch_visible, sorted by (visible_at, id); the
--     first 64 when the 8 end among messages of the first candidate's
--     visible_at. The crate's ORDER BY visible_at, id reads every visible
--     message of equal visible_at before it can take the first (the index
--     orders by visible_at, lock_token): all of them when one ack queued
--     them, as a turn starting 4,000 sub-orchestrations does, at every
--     fetch (18.5 million rows read for that fan-out, in v1). The oldest
--     message is the crate's whenever fewer than 64 share its visible_at;
--     past that, ties of equal visible_at go in index order. A front
--     shorter than it may be is the whole eligible queue; with a version
--     range, a full front with no candidate of the versions falls back to
--     the crate's scan;
--   * locked messages are read from the UPDATE's RETURNING, and the KV
--     snapshot in the statement that returns the row;
--   * p_relaxed = true commits without waiting for the WAL flush
--     (the provider's relaxedDurability option); false keeps the server's
--     synchronous_commit.
--
-- requires: fetch_orchestration_item(bigint,bigint,bigint,bigint) f99ade6d97c260ca
CREATE OR REPLACE FUNCTION {schema}.duroxide_node_fetch_turn_v2(
    p_relaxed boolean,
    p_known_ids text[],
    p_known_executions bigint[],
    p_known_last bigint[],
    p_known_identities text[],
    p_now_ms bigint,
    p_lock_timeout_ms bigint,
    p_min_version_packed bigint DEFAULT NULL::bigint,
    p_max_version_packed bigint DEFAULT NULL::bigint)
 RETURNS TABLE(out_instance_id text, out_orchestration_name text, out_orchestration_version text,
               out_execution_id bigint, out_history text, out_messages text, out_lock_token text,
               out_attempt_count integer, out_kv_snapshot jsonb, out_history_after bigint,
               out_identity text)
 LANGUAGE plpgsql
 -- The queue scans re-planned at every call cost more than they run.
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
        DECLARE
            v_instance_id TEXT;
            v_lock_token TEXT;
            v_locked_until BIGINT;
            v_lease_base_ms BIGINT;
            v_orchestration_name TEXT;
            v_orchestration_version TEXT;
            v_current_execution_id BIGINT;
            v_history TEXT;
            v_messages TEXT;
            v_lock_acquired INTEGER;
            v_skip INTEGER := 0;
            v_block BOOLEAN := false;
            v_max_attempt_count INTEGER;
            v_history_after BIGINT := 0;
            v_identity TEXT;
            v_front TEXT[];
            v_front_at TIMESTAMPTZ[];
            v_size INTEGER;
        BEGIN
            IF p_relaxed THEN
                PERFORM set_config('synchronous_commit', 'off', true);
            END IF;
            LOOP
                v_instance_id := NULL;
                -- The front: the first eligible messages in index order, then
                -- in the crate's order (header). 8 first; 64 when the 8 end
                -- among messages of the first candidate's visible_at.
                v_size := 8;
                LOOP
                    SELECT array_agg(f.instance_id ORDER BY f.visible_at, f.id),
                           array_agg(f.visible_at ORDER BY f.visible_at, f.id)
                    INTO v_front, v_front_at
                    FROM (SELECT q.id, q.instance_id, q.visible_at
                          FROM {schema}.orchestrator_queue q
                          WHERE q.visible_at <= TO_TIMESTAMP(p_now_ms / 1000.0)
                            AND NOT EXISTS (
                              SELECT 1 FROM {schema}.instance_locks il
                              WHERE il.instance_id = q.instance_id AND il.locked_until > p_now_ms
                            )
                          ORDER BY q.visible_at
                          LIMIT v_size + v_skip) f;
                    EXIT WHEN v_size = 64
                        OR COALESCE(cardinality(v_front), 0) < v_size + v_skip
                        OR v_front_at[cardinality(v_front)] > v_front_at[v_skip + 1];
                    v_size := 64;
                END LOOP;
                IF p_min_version_packed IS NOT NULL THEN
                    SELECT c.instance_id INTO v_instance_id
                    FROM unnest(v_front) WITH ORDINALITY AS c(instance_id, n)
                    WHERE COALESCE((
                      SELECT (e.duroxide_version_major IS NULL
                        OR (e.duroxide_version_major * 1000000 + e.duroxide_version_minor * 1000 + e.duroxide_version_patch)
                           BETWEEN p_min_version_packed AND p_max_version_packed) IS TRUE
                      FROM {schema}.instances i
                      JOIN {schema}.executions e ON e.instance_id = i.instance_id
                        AND e.execution_id = i.current_execution_id
                      WHERE i.instance_id = c.instance_id), true)
                    ORDER BY c.n
                    LIMIT 1 OFFSET v_skip;
                    IF v_instance_id IS NULL AND cardinality(v_front) = v_size + v_skip THEN
                        -- A full front with no candidate of the versions:
                        -- the crate's scan of the whole queue.
                        SELECT c.instance_id INTO v_instance_id
                        FROM (SELECT q.id, q.instance_id, q.visible_at
                              FROM {schema}.orchestrator_queue q
                              WHERE q.visible_at <= TO_TIMESTAMP(p_now_ms / 1000.0)
                                AND NOT EXISTS (
                                  SELECT 1 FROM {schema}.instance_locks il
                                  WHERE il.instance_id = q.instance_id AND il.locked_until > p_now_ms
                                )
                              ORDER BY q.visible_at, q.id
                              OFFSET 0) c
                        WHERE COALESCE((
                          SELECT (e.duroxide_version_major IS NULL
                            OR (e.duroxide_version_major * 1000000 + e.duroxide_version_minor * 1000 + e.duroxide_version_patch)
                               BETWEEN p_min_version_packed AND p_max_version_packed) IS TRUE
                          FROM {schema}.instances i
                          JOIN {schema}.executions e ON e.instance_id = i.instance_id
                            AND e.execution_id = i.current_execution_id
                          WHERE i.instance_id = c.instance_id), true)
                        LIMIT 1 OFFSET v_skip;
                    END IF;
                ELSE
                    v_instance_id := v_front[v_skip + 1];
                END IF;
                IF v_instance_id IS NULL THEN
                    IF v_skip > 0 THEN
                        -- Every candidate was held: wait on the first, as the crate does.
                        v_skip := 0;
                        v_block := true;
                        CONTINUE;
                    END IF;
                    RETURN;
                END IF;
                IF v_block THEN
                    PERFORM pg_advisory_xact_lock(hashtext(v_instance_id));
                ELSIF NOT pg_try_advisory_xact_lock(hashtext(v_instance_id)) THEN
                    v_skip := v_skip + 1;
                    CONTINUE;
                END IF;
                IF p_min_version_packed IS NOT NULL THEN
                    SELECT q.instance_id INTO v_instance_id
                    FROM {schema}.orchestrator_queue q
                    LEFT JOIN {schema}.instances i ON i.instance_id = q.instance_id
                    LEFT JOIN {schema}.executions e ON e.instance_id = i.instance_id
                        AND e.execution_id = i.current_execution_id
                    WHERE q.instance_id = v_instance_id
                      AND q.visible_at <= TO_TIMESTAMP(p_now_ms / 1000.0)
                      AND NOT EXISTS (
                        SELECT 1 FROM {schema}.instance_locks il
                        WHERE il.instance_id = q.instance_id AND il.locked_until > p_now_ms
                      )
                      AND (
                        e.duroxide_version_major IS NULL
                        OR (e.duroxide_version_major * 1000000 + e.duroxide_version_minor * 1000 + e.duroxide_version_patch)
                           BETWEEN p_min_version_packed AND p_max_version_packed
                      )
                    FOR UPDATE OF q SKIP LOCKED;
                ELSE
                    SELECT q.instance_id INTO v_instance_id
                    FROM {schema}.orchestrator_queue q
                    WHERE q.instance_id = v_instance_id
                      AND q.visible_at <= TO_TIMESTAMP(p_now_ms / 1000.0)
                      AND NOT EXISTS (
                        SELECT 1 FROM {schema}.instance_locks il
                        WHERE il.instance_id = q.instance_id AND il.locked_until > p_now_ms
                      )
                    FOR UPDATE OF q SKIP LOCKED;
                END IF;
                IF NOT FOUND THEN
                    CONTINUE;
                END IF;
                v_lease_base_ms := GREATEST(
                    p_now_ms + (EXTRACT(EPOCH FROM (clock_timestamp() - statement_timestamp())) * 1000)::BIGINT,
                    (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT
                );
                v_lock_token := 'lock_' || gen_random_uuid()::TEXT;
                v_locked_until := v_lease_base_ms + p_lock_timeout_ms;
                INSERT INTO {schema}.instance_locks (instance_id, lock_token, locked_until, locked_at)
                VALUES (v_instance_id, v_lock_token, v_locked_until, p_now_ms)
                ON CONFLICT(instance_id) DO UPDATE
                SET lock_token = EXCLUDED.lock_token,
                    locked_until = EXCLUDED.locked_until,
                    locked_at = EXCLUDED.locked_at
                WHERE {schema}.instance_locks.locked_until <= p_now_ms;
                GET DIAGNOSTICS v_lock_acquired = ROW_COUNT;
                IF v_lock_acquired = 0 THEN
                    CONTINUE;
                END IF;
                WITH locked AS (
                    UPDATE {schema}.orchestrator_queue q
                    SET lock_token = v_lock_token,
                        locked_until = v_locked_until,
                        attempt_count = q.attempt_count + 1
                    WHERE q.instance_id = v_instance_id
                      AND q.visible_at <= TO_TIMESTAMP(p_now_ms / 1000.0)
                      AND (q.lock_token IS NULL OR q.locked_until <= p_now_ms)
                    RETURNING q.id, q.work_item, q.attempt_count
                )
                SELECT '[' || COALESCE(string_agg(l.work_item, ',' ORDER BY l.id), '') || ']',
                       COALESCE(MAX(l.attempt_count), 1)
                INTO v_messages, v_max_attempt_count
                FROM locked l;
                SELECT i.orchestration_name, i.orchestration_version, i.current_execution_id, f.identity,
                       (SELECT COALESCE(MAX(k.last_event_id), 0)
                        FROM unnest(p_known_ids, p_known_executions, p_known_last, p_known_identities)
                          AS k(id, execution_id, last_event_id, identity)
                        WHERE k.id = i.instance_id AND k.execution_id = i.current_execution_id
                          AND k.identity = f.identity)
                INTO v_orchestration_name, v_orchestration_version, v_current_execution_id,
                     v_identity, v_history_after
                FROM {schema}.instances i
                LEFT JOIN LATERAL (
                    SELECT md5(h.event_data) || ':' || h.xmin::text AS identity
                    FROM {schema}.history h
                    WHERE h.instance_id = i.instance_id
                      AND h.execution_id = i.current_execution_id
                      AND h.event_id = 1
                ) f ON true
                WHERE i.instance_id = v_instance_id;
                IF FOUND THEN
                    SELECT '[' || COALESCE(string_agg(h.event_data, ',' ORDER BY h.event_id), '') || ']'
                    INTO v_history
                    FROM {schema}.history h
                    WHERE h.instance_id = v_instance_id
                      AND h.execution_id = v_current_execution_id
                      AND h.event_id > v_history_after;
                    v_orchestration_version := COALESCE(v_orchestration_version, 'unknown');
                ELSE
                    -- No instance row yet: the crate's fetch reads the names
                    -- from the first event or message, casting them to jsonb;
                    -- the caller does so from the text returned instead
                    -- (NULL names), so that no stored text can fail the fetch.
                    v_history_after := 0;
                    SELECT '[' || COALESCE(string_agg(h.event_data, ',' ORDER BY h.execution_id, h.event_id), '') || ']'
                    INTO v_history
                    FROM {schema}.history h
                    WHERE h.instance_id = v_instance_id;
                END IF;
                RETURN QUERY SELECT
                    v_instance_id,
                    v_orchestration_name,
                    v_orchestration_version,
                    v_current_execution_id,
                    v_history,
                    v_messages,
                    v_lock_token,
                    v_max_attempt_count,
                    (SELECT COALESCE(
                        jsonb_object_agg(
                            ks.key,
                            jsonb_build_object('value', ks.value, 'last_updated_at_ms', ks.last_updated_at_ms)
                        ),
                        '{}'::jsonb)
                     FROM {schema}.kv_store ks WHERE ks.instance_id = v_instance_id),
                    v_history_after,
                    v_identity;
                RETURN;
            END LOOP;
        END;
        $function$;
