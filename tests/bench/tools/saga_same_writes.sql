-- A hand-written orchestrator of the CampusCafe saga that makes the same writes as pg_once's
-- saga_start and saga_reply: copies of pg_once's saga, history, reply and outbox tables (their
-- columns, defaults, constraints and indexes: LIKE ... INCLUDING ALL), a saga row whose step
-- moves an indexed deadline, a history row per event, a reply id per reply (a redelivered
-- reply changes nothing), and each command as a keyed outbox row. One function call per step,
-- as saga_start / saga_reply are. What it lacks is the logic: no definition is read, the
-- steps are fixed in the code, no compensation, no retries, no per-key ordering of the sends.
-- Used by tests/bench/saga.sh and saga_cost.sh (the "same writes" baseline).
CREATE TABLE hw_sagas (LIKE once.saga_instances INCLUDING ALL) WITH (fillfactor = 80);
ALTER TABLE hw_sagas ADD FOREIGN KEY (name, version) REFERENCES once.saga_definitions;
CREATE TABLE hw_transitions (LIKE once.saga_transitions INCLUDING ALL);
CREATE TABLE hw_replies (LIKE once.saga_replies INCLUDING ALL);
CREATE TABLE hw_outbox (LIKE once.outbox INCLUDING ALL) WITH (fillfactor = 40);

CREATE FUNCTION hw_send(p_saga text, p_step text, p_topic text, p_data jsonb) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO hw_outbox (id, visible_at, key_seq, topic, key, payload, headers, key_owner)
    VALUES (gen_random_uuid(), now(), gen_random_uuid(), p_topic, p_saga,
            jsonb_build_object('saga_id', p_saga, 'step', p_step, 'data', p_data, 'saga', 'campus_cafe_order'),
            jsonb_build_object('idempotency_key', p_saga || ':' || p_step, 'saga', 'campus_cafe_order',
                               'reply_to', 'saga.campus_cafe_order.reply', 'compensate', 'false', 'attempt', '1'),
            10)
$$;

CREATE FUNCTION hw_saga_start(p_saga text, p_input jsonb) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO hw_sagas (saga_id, name, version, input, data, machine, status, step, attempts, deadline, started_by)
    VALUES (p_saga, 'campus_cafe_order', 1, p_input, p_input,
            '{"status": "running", "cursor": 0, "attempts": 1, "deadline_ms": 0, "waiting": "reply",
              "steps": ["running", "pending", "pending"]}', 'running', 'reserve_stock', 1,
            now() + interval '5 seconds', 10);
    INSERT INTO hw_transitions (saga_id, from_status, to_status, step, event, name)
    VALUES (p_saga, 'new', 'running', 'reserve_stock', 'start', 'campus_cafe_order');
    PERFORM hw_send(p_saga, 'reserve_stock', 'stock.reserve', p_input);
    RETURN 'running';
END $$;

CREATE FUNCTION hw_saga_reply(p_saga text, p_step text, p_output jsonb, p_message_id text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    steps  constant text[] := '{reserve_stock,capture_payment,notify}';
    topics constant text[] := '{stock.reserve,payment.capture,notify.send}';
    s hw_sagas;
    next int;
    new_data jsonb;
BEGIN
    SELECT * INTO s FROM hw_sagas WHERE saga_id = p_saga FOR UPDATE;
    INSERT INTO hw_replies VALUES (p_saga, p_message_id) ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
        INSERT INTO hw_transitions (saga_id, from_status, to_status, step, event, reason, message_id, name)
        VALUES (p_saga, s.status, s.status, p_step, 'duplicate message ignored', 'reply', p_message_id, s.name);
        RETURN 'duplicate';
    END IF;
    next := array_position(steps, p_step) + 1;
    IF next <= 3 THEN
        UPDATE hw_sagas SET data = data || COALESCE(p_output, '{}'),
               machine = jsonb_set(machine, '{cursor}', to_jsonb(next - 1)), step = steps[next], attempts = 1,
               deadline = now() + interval '5 seconds', updated_at = now()
         WHERE name = s.name AND saga_id = p_saga RETURNING data INTO new_data;
    ELSE
        UPDATE hw_sagas SET data = data || COALESCE(p_output, '{}'),
               machine = jsonb_set(machine, '{status}', '"completed"'), status = 'completed', attempts = 0,
               deadline = NULL, updated_at = now(), finished_at = now()
         WHERE name = s.name AND saga_id = p_saga;
    END IF;
    INSERT INTO hw_transitions (saga_id, from_status, to_status, step, event, message_id, name)
    VALUES (p_saga, 'running', CASE WHEN next <= 3 THEN 'running' ELSE 'completed' END, p_step,
            'reply ' || p_step || ' succeeded', p_message_id, s.name);
    IF next <= 3 THEN
        PERFORM hw_send(p_saga, steps[next], topics[next], new_data);
    END IF;
    RETURN 'accepted';
END $$;
