-- duroxide-node fast path `turnAck`: a turn's ack that writes each row once.
--
-- Derived from duroxide-pg's ack_orchestration_item (migration 0026), with the
-- same signature, errors, locks and rows written. What differs:
--   * the instance row and the execution row are each written once
--     (INSERT ... ON CONFLICT DO UPDATE with the values the crate's separate
--     INSERT and UPDATEs end with), instead of up to three times;
--   * a terminal turn merges key-value changes only when kv_delta has rows
--     for the instance;
--   * the turn's worker items are queued by one INSERT ... SELECT, in the
--     array's order, instead of one INSERT per item.
-- Lock order is the crate's: the instance's advisory lock, then the turn's
-- orchestrator_queue rows, then its instance_locks row.
--
-- requires: ack_orchestration_item(text,bigint,bigint,jsonb,jsonb,jsonb,jsonb,jsonb) 5ee90a8096a02667
CREATE OR REPLACE FUNCTION {schema}.duroxide_node_ack_turn_v1(p_lock_token text, p_now_ms bigint, p_execution_id bigint, p_history_delta jsonb, p_worker_items jsonb, p_orchestrator_items jsonb, p_metadata jsonb, p_cancelled_activities jsonb DEFAULT '[]'::jsonb)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
        DECLARE
            v_instance_id TEXT;
            v_orchestration_name TEXT;
            v_orchestration_version TEXT;
            v_parent_instance_id TEXT;
            v_status TEXT;
            v_output TEXT;
            v_completed_at TIMESTAMPTZ;
            v_elem JSONB;
            v_visible_at TIMESTAMPTZ;
            v_fire_at_ms BIGINT;
            v_item_instance_id TEXT;
            v_item_execution_id BIGINT;
            v_item_activity_id BIGINT;
            v_item_session_id TEXT;
            v_item_tag TEXT;
            v_now_ts TIMESTAMPTZ;
            v_custom_status_action TEXT;
            v_custom_status_value TEXT;
            v_current_execution_id BIGINT;
            v_kv_mutations JSONB;
            v_kv_item JSONB;
            v_kv_action TEXT;
            v_i INTEGER;
            v_is_terminal BOOLEAN;
            v_rows_affected INTEGER;
        BEGIN
            v_now_ts := TO_TIMESTAMP(p_now_ms / 1000.0);
            SELECT il.instance_id INTO v_instance_id
            FROM {schema}.instance_locks il
            WHERE il.lock_token = p_lock_token AND il.locked_until > p_now_ms;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'Invalid lock token';
            END IF;
            PERFORM pg_advisory_xact_lock(hashtext(v_instance_id));
            PERFORM 1
            FROM {schema}.instance_locks il
            WHERE il.instance_id = v_instance_id
              AND il.lock_token = p_lock_token;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'Invalid lock token';
            END IF;
            v_orchestration_name := p_metadata->>'orchestration_name';
            v_orchestration_version := p_metadata->>'orchestration_version';
            v_parent_instance_id := p_metadata->>'parent_instance_id';
            v_status := p_metadata->>'status';
            v_output := p_metadata->>'output';
            v_current_execution_id := p_execution_id;
            v_is_terminal := v_status IN ('Completed', 'ContinuedAsNew', 'Failed');
            IF v_orchestration_name IS NOT NULL AND v_orchestration_version IS NOT NULL THEN
                 INSERT INTO {schema}.instances AS i (instance_id, orchestration_name, orchestration_version, current_execution_id, parent_instance_id, created_at, updated_at)
                 VALUES (v_instance_id, v_orchestration_name, v_orchestration_version, p_execution_id, v_parent_instance_id, v_now_ts, v_now_ts)
                 ON CONFLICT (instance_id) DO UPDATE
                 SET orchestration_name = EXCLUDED.orchestration_name,
                     orchestration_version = EXCLUDED.orchestration_version,
                     parent_instance_id = COALESCE(i.parent_instance_id, EXCLUDED.parent_instance_id),
                     current_execution_id = GREATEST(i.current_execution_id, EXCLUDED.current_execution_id),
                     updated_at = EXCLUDED.updated_at;
             ELSE
                 UPDATE {schema}.instances i
                 SET current_execution_id = GREATEST(i.current_execution_id, p_execution_id),
                     updated_at = v_now_ts
                 WHERE i.instance_id = v_instance_id;
             END IF;
             IF v_status IS NOT NULL THEN
                 v_completed_at := CASE
                     WHEN v_status IN ('Completed', 'Failed') THEN v_now_ts
                     ELSE NULL
                 END;
                 INSERT INTO {schema}.executions AS e (instance_id, execution_id, status, started_at, output, completed_at)
                 VALUES (v_instance_id, p_execution_id, v_status, v_now_ts, v_output, v_completed_at)
                 ON CONFLICT (instance_id, execution_id) DO UPDATE
                 SET status = EXCLUDED.status, output = EXCLUDED.output, completed_at = EXCLUDED.completed_at;
             ELSE
                 INSERT INTO {schema}.executions (instance_id, execution_id, status, started_at)
                 VALUES (v_instance_id, p_execution_id, 'Running', v_now_ts)
                 ON CONFLICT (instance_id, execution_id) DO NOTHING;
             END IF;
            IF p_history_delta IS NOT NULL AND JSONB_ARRAY_LENGTH(p_history_delta) > 0 THEN
                INSERT INTO {schema}.history (instance_id, execution_id, event_id, event_type, event_data, created_at)
                SELECT
                    v_instance_id,
                    p_execution_id,
                    (elem->>'event_id')::BIGINT,
                    elem->>'event_type',
                    elem->>'event_data',
                    v_now_ts
                FROM JSONB_ARRAY_ELEMENTS(p_history_delta) AS elem;
            END IF;
            
            IF p_metadata ? 'pinned_duroxide_version' AND p_metadata->'pinned_duroxide_version' IS NOT NULL
               AND p_metadata->>'pinned_duroxide_version' != 'null' THEN
                UPDATE {schema}.executions
                SET duroxide_version_major = (p_metadata->'pinned_duroxide_version'->>'major')::INTEGER,
                    duroxide_version_minor = (p_metadata->'pinned_duroxide_version'->>'minor')::INTEGER,
                    duroxide_version_patch = (p_metadata->'pinned_duroxide_version'->>'patch')::INTEGER
                WHERE instance_id = v_instance_id AND execution_id = p_execution_id;
            END IF;
            v_custom_status_action := p_metadata->>'custom_status_action';
            IF v_custom_status_action = 'set' THEN
                v_custom_status_value := p_metadata->>'custom_status_value';
                UPDATE {schema}.instances
                SET custom_status = v_custom_status_value,
                    custom_status_version = custom_status_version + 1
                WHERE instance_id = v_instance_id;
            ELSIF v_custom_status_action = 'clear' THEN
                UPDATE {schema}.instances
                SET custom_status = NULL,
                    custom_status_version = custom_status_version + 1
                WHERE instance_id = v_instance_id;
            END IF;
            v_kv_mutations := p_metadata->'kv_mutations';
            IF v_kv_mutations IS NOT NULL AND jsonb_array_length(v_kv_mutations) > 0 THEN
                FOR v_i IN 0..jsonb_array_length(v_kv_mutations) - 1 LOOP
                    v_kv_item := v_kv_mutations->v_i;
                    v_kv_action := v_kv_item->>'action';
                    IF v_kv_action = 'set' THEN
                        INSERT INTO {schema}.kv_delta (instance_id, key, value, last_updated_at_ms)
                        VALUES (v_instance_id, v_kv_item->>'key', v_kv_item->>'value', COALESCE((v_kv_item->>'last_updated_at_ms')::BIGINT, p_now_ms))
                        ON CONFLICT (instance_id, key)
                        DO UPDATE SET value = EXCLUDED.value, last_updated_at_ms = EXCLUDED.last_updated_at_ms;
                    ELSIF v_kv_action = 'clear_key' THEN
                        INSERT INTO {schema}.kv_delta (instance_id, key, value, last_updated_at_ms)
                        VALUES (v_instance_id, v_kv_item->>'key', NULL, p_now_ms)
                        ON CONFLICT (instance_id, key)
                        DO UPDATE SET value = NULL, last_updated_at_ms = EXCLUDED.last_updated_at_ms;
                    ELSIF v_kv_action = 'clear_all' THEN
                        UPDATE {schema}.kv_delta
                        SET value = NULL,
                            last_updated_at_ms = p_now_ms
                        WHERE instance_id = v_instance_id;
                        INSERT INTO {schema}.kv_delta (instance_id, key, value, last_updated_at_ms)
                        SELECT ks.instance_id, ks.key, NULL, p_now_ms
                        FROM {schema}.kv_store ks
                        WHERE ks.instance_id = v_instance_id
                        ON CONFLICT (instance_id, key) DO NOTHING;
                    END IF;
                END LOOP;
            END IF;
            IF v_is_terminal AND EXISTS (
                 SELECT 1 FROM {schema}.kv_delta kd WHERE kd.instance_id = v_instance_id
             ) THEN
                INSERT INTO {schema}.kv_store (instance_id, key, value, execution_id, last_updated_at_ms)
                SELECT kd.instance_id, kd.key, kd.value, p_execution_id, kd.last_updated_at_ms
                FROM {schema}.kv_delta kd
                WHERE kd.instance_id = v_instance_id AND kd.value IS NOT NULL
                ON CONFLICT (instance_id, key)
                DO UPDATE SET value = EXCLUDED.value,
                              execution_id = EXCLUDED.execution_id,
                              last_updated_at_ms = EXCLUDED.last_updated_at_ms;
                DELETE FROM {schema}.kv_store ks
                WHERE ks.instance_id = v_instance_id
                  AND ks.key IN (
                      SELECT kd.key
                      FROM {schema}.kv_delta kd
                      WHERE kd.instance_id = v_instance_id
                        AND kd.value IS NULL
                  );
                DELETE FROM {schema}.kv_delta kd
                WHERE kd.instance_id = v_instance_id;
            END IF;
            IF p_worker_items IS NOT NULL AND JSONB_ARRAY_LENGTH(p_worker_items) > 0 THEN
                INSERT INTO {schema}.worker_queue (work_item, visible_at, created_at, instance_id, execution_id, activity_id, session_id, tag)
                SELECT w.item::TEXT, v_now_ts, v_now_ts,
                       w.item->'ActivityExecute'->>'instance',
                       (w.item->'ActivityExecute'->>'execution_id')::BIGINT,
                       (w.item->'ActivityExecute'->>'id')::BIGINT,
                       w.item->'ActivityExecute'->>'session_id',
                       w.item->'ActivityExecute'->>'tag'
                FROM JSONB_ARRAY_ELEMENTS(p_worker_items) WITH ORDINALITY AS w(item, n)
                ORDER BY w.n;
            END IF;
            IF p_cancelled_activities IS NOT NULL AND JSONB_ARRAY_LENGTH(p_cancelled_activities) > 0 THEN
                FOR v_elem IN SELECT value FROM JSONB_ARRAY_ELEMENTS(p_cancelled_activities) LOOP
                    DELETE FROM {schema}.worker_queue
                    WHERE instance_id = v_elem->>'instance'
                      AND execution_id = (v_elem->>'execution_id')::BIGINT
                      AND activity_id = (v_elem->>'activity_id')::BIGINT;
                END LOOP;
            END IF;
            IF p_orchestrator_items IS NOT NULL AND JSONB_ARRAY_LENGTH(p_orchestrator_items) > 0 THEN
                FOR v_elem IN SELECT value FROM JSONB_ARRAY_ELEMENTS(p_orchestrator_items) LOOP
                    IF v_elem ? 'StartOrchestration' THEN
                        v_item_instance_id := v_elem->'StartOrchestration'->>'instance';
                    ELSIF v_elem ? 'ContinueAsNew' THEN
                        v_item_instance_id := v_elem->'ContinueAsNew'->>'instance';
                    ELSIF v_elem ? 'TimerFired' THEN
                        v_item_instance_id := v_elem->'TimerFired'->>'instance';
                        v_fire_at_ms := (v_elem->'TimerFired'->>'fire_at_ms')::BIGINT;
                    ELSIF v_elem ? 'ActivityCompleted' THEN
                        v_item_instance_id := v_elem->'ActivityCompleted'->>'instance';
                    ELSIF v_elem ? 'ActivityFailed' THEN
                        v_item_instance_id := v_elem->'ActivityFailed'->>'instance';
                    ELSIF v_elem ? 'ExternalRaised' THEN
                        v_item_instance_id := v_elem->'ExternalRaised'->>'instance';
                    ELSIF v_elem ? 'CancelInstance' THEN
                        v_item_instance_id := v_elem->'CancelInstance'->>'instance';
                    ELSIF v_elem ? 'SubOrchCompleted' THEN
                        v_item_instance_id := v_elem->'SubOrchCompleted'->>'parent_instance';
                    ELSIF v_elem ? 'SubOrchFailed' THEN
                        v_item_instance_id := v_elem->'SubOrchFailed'->>'parent_instance';
                    ELSIF v_elem ? 'QueueMessage' THEN
                        v_item_instance_id := v_elem->'QueueMessage'->>'instance';
                    ELSE
                        v_item_instance_id := v_instance_id;
                    END IF;
                    IF v_elem ? 'TimerFired' AND v_fire_at_ms IS NOT NULL AND v_fire_at_ms > 0 THEN
                        v_visible_at := TO_TIMESTAMP(v_fire_at_ms / 1000.0);
                    ELSE
                        v_visible_at := v_now_ts;
                    END IF;
                    INSERT INTO {schema}.orchestrator_queue (instance_id, work_item, visible_at, created_at)
                    VALUES (v_item_instance_id, v_elem::TEXT, v_visible_at, v_now_ts);
                    v_fire_at_ms := NULL;
                END LOOP;
            END IF;
            -- The crate's order: the turn's messages, then the instance lock.
            -- abandon_orchestration_item takes no advisory lock and writes
            -- the same rows in this order; the other order can deadlock.
            DELETE FROM {schema}.orchestrator_queue q WHERE q.lock_token = p_lock_token;
            DELETE FROM {schema}.instance_locks il
            WHERE il.instance_id = v_instance_id AND il.lock_token = p_lock_token;
            GET DIAGNOSTICS v_rows_affected = ROW_COUNT;
            IF v_rows_affected = 0 THEN
                RAISE EXCEPTION 'Invalid lock token';
            END IF;
        END;
        $function$;
