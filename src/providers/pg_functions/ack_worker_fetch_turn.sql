-- duroxide-node fast path `ackRides`: an activity's ack that also fetches the
-- next turn, in one transaction and one round trip.
--
-- The crate's ack_worker, then duroxide_node_fetch_turn_v2 (fetch_turn.sql).
-- The caller rides it when one of its orchestration slots is free: the turn
-- it fetches waits for that slot's next fetch. If the call fails, both halves
-- rolled back.
--
-- requires: ack_worker(text,text,text,bigint) aac9320eca6cca68
-- requires: fetch_orchestration_item(bigint,bigint,bigint,bigint) f99ade6d97c260ca
CREATE OR REPLACE FUNCTION {schema}.duroxide_node_ack_worker_fetch_turn_v2(
    p_token text,
    p_instance text,
    p_completion text,
    p_ack_now_ms bigint,
    p_relaxed boolean,
    p_known_ids text[],
    p_known_executions bigint[],
    p_known_last bigint[],
    p_known_identities text[],
    p_now_ms bigint,
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
            PERFORM {schema}.ack_worker(p_token, p_instance, p_completion, p_ack_now_ms);
            RETURN QUERY SELECT * FROM {schema}.duroxide_node_fetch_turn_v2(
                p_relaxed, p_known_ids, p_known_executions, p_known_last, p_known_identities,
                p_now_ms, p_lock_timeout_ms, p_min_version_packed, p_max_version_packed);
        END;
        $function$;
