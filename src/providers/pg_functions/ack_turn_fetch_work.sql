-- duroxide-node fast path `ackRides`: a turn's ack that also fetches an
-- activity it scheduled, in one transaction and one round trip.
--
-- duroxide_node_ack_turn_v1 (ack_turn.sql), then duroxide_node_fetch_work_v3
-- (fetch_work.sql: the crate's fetch_work_item, looking at the front of the
-- queue first) for items of no session (any worker slot may run those). The caller rides
-- it when one of its worker slots is free: the item waits for that slot's
-- next fetch. A turn's ack is never relaxed: a client may read what it wrote.
--
-- requires: ack_orchestration_item(text,bigint,bigint,jsonb,jsonb,jsonb,jsonb,jsonb) 5ee90a8096a02667
-- requires: fetch_work_item(bigint,bigint,text,bigint,text[],text) 779b395799f0fa43
CREATE OR REPLACE FUNCTION {schema}.duroxide_node_ack_turn_fetch_work_v3(
    p_lock_token text,
    p_now_ms bigint,
    p_execution_id bigint,
    p_history_delta jsonb,
    p_worker_items jsonb,
    p_orchestrator_items jsonb,
    p_metadata jsonb,
    p_cancelled_activities jsonb,
    p_lock_timeout_ms bigint,
    p_tag_filter text[],
    p_tag_mode text)
 RETURNS TABLE(out_work_item text, out_lock_token text, out_attempt_count integer)
 LANGUAGE plpgsql
 -- Also holds for the worker fetch, whose queue scan (a CASE on the tag
 -- mode) is re-planned at every call otherwise.
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
        BEGIN
            PERFORM {schema}.duroxide_node_ack_turn_v1(
                p_lock_token, p_now_ms, p_execution_id, p_history_delta, p_worker_items,
                p_orchestrator_items, p_metadata, p_cancelled_activities);
            RETURN QUERY SELECT * FROM {schema}.duroxide_node_fetch_work_v3(
                false, p_now_ms, p_lock_timeout_ms, NULL, NULL, p_tag_filter, p_tag_mode);
        END;
        $function$;
