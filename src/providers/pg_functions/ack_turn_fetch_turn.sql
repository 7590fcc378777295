-- duroxide-node fast path `ackRides`: a turn's ack that also fetches the next
-- turn for the slot that acked, in one transaction and one round trip.
--
-- duroxide_node_ack_turn_v1 (ack_turn.sql), then duroxide_node_fetch_turn_v2
-- (fetch_turn.sql) with the ack's clock. The acking slot fetches again as
-- soon as its ack returns, so the turn fetched here is that fetch's answer.
-- A turn's ack is never relaxed: a client may read what it wrote.
--
-- requires: ack_orchestration_item(text,bigint,bigint,jsonb,jsonb,jsonb,jsonb,jsonb) 5ee90a8096a02667
-- requires: fetch_orchestration_item(bigint,bigint,bigint,bigint) f99ade6d97c260ca
CREATE OR REPLACE FUNCTION {schema}.duroxide_node_ack_turn_fetch_turn_v2(
    p_lock_token text,
    p_now_ms bigint,
    p_execution_id bigint,
    p_history_delta jsonb,
    p_worker_items jsonb,
    p_orchestrator_items jsonb,
    p_metadata jsonb,
    p_cancelled_activities jsonb,
    p_known_ids text[],
    p_known_executions bigint[],
    p_known_last bigint[],
    p_known_identities text[],
    p_lock_timeout_ms bigint,
    p_min_version_packed bigint,
    p_max_version_packed bigint)
 RETURNS TABLE(out_instance_id text, out_orchestration_name text, out_orchestration_version text,
               out_execution_id bigint, out_history text, out_messages text, out_lock_token text,
               out_attempt_count integer, out_kv_snapshot jsonb, out_history_after bigint,
               out_identity text)
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
        BEGIN
            PERFORM {schema}.duroxide_node_ack_turn_v1(
                p_lock_token, p_now_ms, p_execution_id, p_history_delta, p_worker_items,
                p_orchestrator_items, p_metadata, p_cancelled_activities);
            RETURN QUERY SELECT * FROM {schema}.duroxide_node_fetch_turn_v2(
                false, p_known_ids, p_known_executions, p_known_last, p_known_identities,
                p_now_ms, p_lock_timeout_ms, p_min_version_packed, p_max_version_packed);
        END;
        $function$;
