-- duroxide-node fast path `workerFetch`: the crate's fetch_work_item under a
-- generic plan, committing without waiting for the WAL flush when p_relaxed
-- (the provider's relaxedDurability option), and looking at the front of
-- the queue first.
--
-- A fetch's commit records only a lock and an attempt: lost in a server
-- crash, the item is fetched again, as when a lock expires.
--
-- What differs from the crate's text: its queue scan reads every visible
-- row and sorts them by id (a sequential scan with thousands of activities
-- queued: 5.5 ms a fetch with 4,000), so each fetch of a fan-out cost more
-- the larger the fan-out. Here the queue's 64 oldest rows are read from the
-- primary key, and those no live lock holds are tried one at a time, in id
-- order, with the crate's conditions; the crate's scan of the whole queue
-- runs only when none of those may be taken. A row found among the oldest is the row the crate's scan finds:
-- every older row was tried, and was not eligible or was locked by another
-- fetch (skipped, as the crate's SKIP LOCKED skips it). The rest is the
-- crate's body.
--
-- Why one row at a time (v3): v2 joined the 64 ids to the queue in one
-- statement. Its generic plan is made once per connection, from the
-- statistics of that moment; made while the queue was small, it was a merge
-- join over a bitmap scan of every visible row, so with 10,000 activities
-- queued each fetch read the whole queue (650 buffers, 3-5 ms, in a fan-out
-- of 20,000). A lookup by primary key has no other plan.
--
-- requires: fetch_work_item(bigint,bigint,text,bigint,text[],text) 779b395799f0fa43
CREATE OR REPLACE FUNCTION {schema}.duroxide_node_fetch_work_v3(
    p_relaxed boolean,
    p_now_ms bigint,
    p_lock_timeout_ms bigint,
    p_owner_id text,
    p_session_lock_timeout_ms bigint,
    p_tag_filter text[],
    p_tag_mode text)
 RETURNS TABLE(out_work_item text, out_lock_token text, out_attempt_count integer)
 LANGUAGE plpgsql
 -- The queue scan (a CASE on the tag mode) is re-planned at every call
 -- otherwise.
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
        DECLARE
            v_id BIGINT;
            v_session_id TEXT;
            v_session_locked_until BIGINT;
            v_front BIGINT[];
            v_candidate BIGINT;
        BEGIN
            IF p_relaxed THEN
                PERFORM set_config('synchronous_commit', 'off', true);
            END IF;
            IF p_tag_mode = 'none' THEN
                RETURN;
            END IF;
            -- Rows locked by a fetch whose lock holds are left out here, so
            -- that a fetch among busy workers does not try each of theirs.
            v_front := ARRAY(
                SELECT f.id
                FROM (SELECT q.id, q.lock_token, q.locked_until
                      FROM {schema}.worker_queue q ORDER BY q.id LIMIT 64) f
                WHERE f.lock_token IS NULL OR f.locked_until <= p_now_ms
                ORDER BY f.id);
            IF p_owner_id IS NOT NULL THEN
                FOREACH v_candidate IN ARRAY v_front LOOP
                    SELECT q.id, q.session_id INTO v_id, v_session_id
                    FROM {schema}.worker_queue q
                    LEFT JOIN {schema}.sessions s ON s.session_id = q.session_id AND s.locked_until > p_now_ms
                    WHERE q.id = v_candidate
                      AND q.visible_at <= TO_TIMESTAMP(p_now_ms / 1000.0)
                      AND (q.lock_token IS NULL OR q.locked_until <= p_now_ms)
                      AND (
                        q.session_id IS NULL
                        OR s.worker_id = p_owner_id
                        OR s.session_id IS NULL
                      )
                      AND (
                        CASE p_tag_mode
                            WHEN 'default_only' THEN q.tag IS NULL
                            WHEN 'tags' THEN q.tag = ANY(p_tag_filter)
                            WHEN 'default_and' THEN (q.tag IS NULL OR q.tag = ANY(p_tag_filter))
                            WHEN 'any' THEN TRUE
                            ELSE FALSE
                        END
                      )
                    FOR UPDATE OF q SKIP LOCKED;
                    EXIT WHEN FOUND;
                END LOOP;
                IF v_id IS NULL THEN
                    SELECT q.id, q.session_id INTO v_id, v_session_id
                    FROM {schema}.worker_queue q
                    LEFT JOIN {schema}.sessions s ON s.session_id = q.session_id AND s.locked_until > p_now_ms
                    WHERE q.visible_at <= TO_TIMESTAMP(p_now_ms / 1000.0)
                      AND (q.lock_token IS NULL OR q.locked_until <= p_now_ms)
                      AND (
                        q.session_id IS NULL
                        OR s.worker_id = p_owner_id
                        OR s.session_id IS NULL
                      )
                      AND (
                        CASE p_tag_mode
                            WHEN 'default_only' THEN q.tag IS NULL
                            WHEN 'tags' THEN q.tag = ANY(p_tag_filter)
                            WHEN 'default_and' THEN (q.tag IS NULL OR q.tag = ANY(p_tag_filter))
                            WHEN 'any' THEN TRUE
                            ELSE FALSE
                        END
                      )
                    ORDER BY q.id
                    LIMIT 1
                    FOR UPDATE OF q SKIP LOCKED;
                END IF;
            ELSE
                FOREACH v_candidate IN ARRAY v_front LOOP
                    SELECT q.id, q.session_id INTO v_id, v_session_id
                    FROM {schema}.worker_queue q
                    WHERE q.id = v_candidate
                      AND q.visible_at <= TO_TIMESTAMP(p_now_ms / 1000.0)
                      AND (q.lock_token IS NULL OR q.locked_until <= p_now_ms)
                      AND q.session_id IS NULL
                      AND (
                        CASE p_tag_mode
                            WHEN 'default_only' THEN q.tag IS NULL
                            WHEN 'tags' THEN q.tag = ANY(p_tag_filter)
                            WHEN 'default_and' THEN (q.tag IS NULL OR q.tag = ANY(p_tag_filter))
                            WHEN 'any' THEN TRUE
                            ELSE FALSE
                        END
                      )
                    FOR UPDATE OF q SKIP LOCKED;
                    EXIT WHEN FOUND;
                END LOOP;
                IF v_id IS NULL THEN
                    SELECT q.id, q.session_id INTO v_id, v_session_id
                    FROM {schema}.worker_queue q
                    WHERE q.visible_at <= TO_TIMESTAMP(p_now_ms / 1000.0)
                      AND (q.lock_token IS NULL OR q.locked_until <= p_now_ms)
                      AND q.session_id IS NULL
                      AND (
                        CASE p_tag_mode
                            WHEN 'default_only' THEN q.tag IS NULL
                            WHEN 'tags' THEN q.tag = ANY(p_tag_filter)
                            WHEN 'default_and' THEN (q.tag IS NULL OR q.tag = ANY(p_tag_filter))
                            WHEN 'any' THEN TRUE
                            ELSE FALSE
                        END
                      )
                    ORDER BY q.id
                    LIMIT 1
                    FOR UPDATE OF q SKIP LOCKED;
                END IF;
            END IF;
            IF v_id IS NULL THEN
                RETURN;
            END IF;
            out_lock_token := 'lock_' || gen_random_uuid()::TEXT;
            UPDATE {schema}.worker_queue
            SET lock_token = out_lock_token,
                locked_until = p_now_ms + p_lock_timeout_ms,
                attempt_count = attempt_count + 1
            WHERE id = v_id;
            SELECT work_item, attempt_count
            INTO out_work_item, out_attempt_count
            FROM {schema}.worker_queue
            WHERE id = v_id;
            IF v_session_id IS NOT NULL AND p_owner_id IS NOT NULL THEN
                v_session_locked_until := p_now_ms + COALESCE(p_session_lock_timeout_ms, p_lock_timeout_ms);
                INSERT INTO {schema}.sessions (session_id, worker_id, locked_until, last_activity_at)
                VALUES (v_session_id, p_owner_id, v_session_locked_until, p_now_ms)
                ON CONFLICT (session_id) DO UPDATE
                SET worker_id = p_owner_id,
                    locked_until = v_session_locked_until,
                    last_activity_at = p_now_ms
                WHERE {schema}.sessions.locked_until <= p_now_ms OR {schema}.sessions.worker_id = p_owner_id;
                IF NOT FOUND THEN
                    UPDATE {schema}.worker_queue
                    SET lock_token = NULL,
                        locked_until = NULL,
                        attempt_count = attempt_count - 1
                    WHERE id = v_id;
                    RETURN;
                END IF;
            END IF;
            RETURN NEXT;
        END;
        $function$;
