-- Orchestrated sagas (see docs/sagas.md). The decisions are made by the C++ state machine
-- (once._saga_decide: definition + state + event -> new state, commands, history); the SQL
-- here loads and locks the saga, stores the decision and sends the commands through the
-- outbox, all in the caller's transaction.

CREATE TABLE once.saga_definitions (
    name        text        NOT NULL,
    version     integer     NOT NULL,
    definition  jsonb       NOT NULL,   -- normalised: every default filled in
    source      jsonb       NOT NULL,   -- as given to saga_define
    created_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    PRIMARY KEY (name, version)
);
COMMENT ON TABLE once.saga_definitions IS 'Saga definitions; a new version per change, running sagas keep theirs';

CREATE TABLE once.saga_instances (
    saga_id     text        PRIMARY KEY,
    name        text        NOT NULL,
    version     integer     NOT NULL,
    input       jsonb,
    data        jsonb       NOT NULL,   -- input merged with every accepted step output
    machine     jsonb       NOT NULL,   -- the state machine's state (core/saga_machine.hpp)
    status      text        NOT NULL CHECK (status IN ('running', 'compensating', 'completed', 'compensated', 'failed')),
    step        text        NOT NULL,   -- the step being executed or compensated
    attempts    integer     NOT NULL DEFAULT 0,
    deadline    timestamptz,            -- when saga_tick must act; NULL only when final or failed
    last_error  text,
    created_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    updated_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    finished_at timestamptz,
    CONSTRAINT saga_instances_definition_fk FOREIGN KEY (name, version) REFERENCES once.saga_definitions,
    CONSTRAINT saga_instances_deadline_check CHECK
        ((status IN ('running', 'compensating')) = (deadline IS NOT NULL)),
    CONSTRAINT saga_instances_failed_reason CHECK (status <> 'failed' OR last_error IS NOT NULL)
);
COMMENT ON TABLE once.saga_instances IS 'One row per saga; every non-final saga has a deadline, every failed one a reason';
CREATE INDEX saga_instances_due ON once.saga_instances (deadline) WHERE deadline IS NOT NULL;
CREATE INDEX saga_instances_finished ON once.saga_instances (finished_at) WHERE finished_at IS NOT NULL;
ALTER TABLE once.saga_instances SET (fillfactor = 80);

CREATE TABLE once.saga_transitions (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    saga_id     text        NOT NULL,
    at          timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
    from_status text        NOT NULL,
    to_status   text        NOT NULL,
    step        text,
    event       text        NOT NULL,
    reason      text,
    message_id  text
);
CREATE INDEX saga_transitions_saga ON once.saga_transitions (saga_id, id);

-- Reply message ids already applied, per saga: a redelivered reply changes nothing.
CREATE TABLE once.saga_replies (
    saga_id     text NOT NULL,
    message_id  text NOT NULL,
    PRIMARY KEY (saga_id, message_id)
);

REVOKE ALL ON TABLE once.saga_definitions, once.saga_instances, once.saga_transitions, once.saga_replies FROM PUBLIC;

-- The pure C++ parts.
CREATE FUNCTION once._saga_compile(name text, definition jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'once_saga_compile' LANGUAGE C IMMUTABLE;
CREATE FUNCTION once._saga_decide(definition jsonb, machine jsonb, event jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'once_saga_decide' LANGUAGE C VOLATILE;
CREATE FUNCTION once._saga_mermaid(name text, definition jsonb) RETURNS text
    AS 'MODULE_PATHNAME', 'once_saga_diagram' LANGUAGE C IMMUTABLE;

CREATE FUNCTION once._saga_ms(ts timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_catalog.floor(pg_catalog.date_part('epoch', ts) * 1000)::bigint $$;  -- floor: a deadline of "now" is due now

-- The saga id is part of every idempotency key ("<saga_id>:<step>"): keep it printable.
CREATE FUNCTION once._saga_check_id(saga_id text) RETURNS void
LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF saga_id IS NULL OR saga_id = '' OR length(saga_id) > 200 OR saga_id ~ '[[:cntrl:]]' THEN
        RAISE EXCEPTION 'invalid saga id'
            USING ERRCODE = '22023',
                  DETAIL = format('The saga id was %s.', coalesce(quote_literal(left(saga_id, 80)), 'NULL')),
                  HINT = 'Use 1 to 200 printable characters, e.g. the order id.';
    END IF;
END
$$;

CREATE FUNCTION once._saga_unknown(saga_id text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'saga not found'
        USING ERRCODE = 'ON402', DETAIL = format('No saga has the id %s.', quote_literal(left(saga_id, 80))),
              HINT = 'Start it with once.saga_start, or check the id (see the once.sagas view).';
END
$$;

-- Stores a decision of the state machine: the new state, its history, the merged output,
-- and sends its commands through the outbox. Called with the saga row locked.
CREATE FUNCTION once._saga_deadline(decision jsonb) RETURNS timestamptz
LANGUAGE sql IMMUTABLE SET search_path = pg_catalog, pg_temp
AS $$ SELECT CASE WHEN decision->'deadline_ms' = 'null' THEN NULL
                  ELSE to_timestamp((decision->>'deadline_ms')::double precision / 1000) END $$;

-- Records a decision's history and sends its commands through the outbox.
CREATE FUNCTION once._saga_emit(p_saga_id text, saga_name text, data jsonb, decision jsonb, message_id text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    c jsonb;
    comp boolean;
BEGIN
    INSERT INTO once.saga_transitions (saga_id, from_status, to_status, step, event, reason, message_id)
    SELECT p_saga_id, h->>'from', h->>'to', h->>'step', h->>'event', h->>'reason', message_id
      FROM jsonb_array_elements(decision->'history') AS h;
    FOR c IN SELECT * FROM jsonb_array_elements(decision->'commands') LOOP
        comp := (c->>'compensate')::boolean;
        -- key = saga id: the outbox keeps a saga's commands in send order, so a compensation
        -- never overtakes the action it undoes.
        PERFORM once.send(
            c->>'topic',
            jsonb_build_object('saga_id', p_saga_id, 'step', c->>'step', 'data', data),
            p_saga_id,
            jsonb_build_object(
                'idempotency_key', p_saga_id || ':' || (c->>'step') || CASE WHEN comp THEN ':compensate' ELSE '' END,
                'saga', saga_name,
                'reply_to', decision->>'reply_to',
                'compensate', CASE WHEN comp THEN 'true' ELSE 'false' END,
                'attempt', c->>'attempt'));   -- header values are strings (HTTP, NATS)
    END LOOP;
END
$$;

-- Stores a decision of the state machine (new state, merged output), then emits it.
-- Called with the saga row locked.
CREATE FUNCTION once._saga_store(inst once.saga_instances, decision jsonb, output jsonb, message_id text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    new_data jsonb := inst.data;
    new_status text := decision->>'status';
BEGIN
    IF (decision->>'merge_output')::boolean AND output IS NOT NULL AND jsonb_typeof(output) = 'object' THEN
        new_data := new_data || (output - 'error');
    END IF;
    UPDATE once.saga_instances s
       SET data = new_data,
           machine = decision->'machine',
           status = new_status,
           step = decision->>'step',
           attempts = (decision->>'attempts')::integer,
           deadline = once._saga_deadline(decision),
           last_error = decision->>'reason',
           updated_at = now(),
           finished_at = CASE WHEN new_status IN ('completed', 'compensated') THEN now() END
     WHERE s.saga_id = inst.saga_id;
    PERFORM once._saga_emit(inst.saga_id, inst.name, new_data, decision, message_id);
END
$$;

-- Applies one event to a saga: lock, decide, store. Returns the decision.
CREATE FUNCTION once._saga_apply(p_saga_id text, event jsonb, output jsonb DEFAULT NULL, message_id text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    inst once.saga_instances;
    def jsonb;
    machine jsonb;
    decision jsonb;
BEGIN
    PERFORM once._saga_check_id(p_saga_id);
    SELECT * INTO inst FROM once.saga_instances s WHERE s.saga_id = p_saga_id FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM once._saga_unknown(p_saga_id);
    END IF;
    IF message_id IS NOT NULL THEN
        INSERT INTO once.saga_replies AS r (saga_id, message_id) VALUES (p_saga_id, message_id)
            ON CONFLICT DO NOTHING;
        IF NOT FOUND THEN
            INSERT INTO once.saga_transitions (saga_id, from_status, to_status, step, event, reason, message_id)
            VALUES (p_saga_id, inst.status, inst.status, event->>'step', 'duplicate message ignored',
                    'reply ' || coalesce(event->>'step', '?') || ' ' || coalesce(event->>'outcome', '?'), message_id);
            RETURN jsonb_build_object('result', 'duplicate', 'status', inst.status, 'step', inst.step);
        END IF;
    END IF;
    SELECT d.definition INTO def FROM once.saga_definitions d WHERE d.name = inst.name AND d.version = inst.version;
    -- The deadline column is the truth about what is due (operators and tests may move it).
    machine := jsonb_set(inst.machine, '{deadline_ms}',
                         coalesce(to_jsonb(once._saga_ms(inst.deadline)), '0'::jsonb));
    decision := once._saga_decide(def, machine,
        event || jsonb_build_object('now_ms', once._saga_ms(now()), 'random', random()));
    PERFORM once._saga_store(inst, decision, output, message_id);
    RETURN decision;
END
$$;

CREATE FUNCTION once.saga_define(name text, definition jsonb) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    normalized jsonb := once._saga_compile(name, definition);
    s jsonb;
    fn text;
    i integer := 0;
    latest record;
BEGIN
    -- Local functions must exist with the documented signature now, not at 3 a.m.
    FOR s IN SELECT * FROM jsonb_array_elements(normalized->'steps') LOOP
        i := i + 1;
        FOREACH fn IN ARRAY ARRAY[s->'action'->>'function', s->'compensation'->>'function'] LOOP
            CONTINUE WHEN fn IS NULL;
            IF to_regprocedure(fn || '(text, jsonb)') IS NULL THEN
                RAISE EXCEPTION 'invalid saga definition: step % (%): function %(text, jsonb) does not exist',
                        i, s->>'name', fn
                    USING ERRCODE = 'ON401',
                          HINT = 'Create it first: CREATE FUNCTION ' || fn || '(saga_id text, data jsonb) RETURNS jsonb ...';
            END IF;
        END LOOP;
    END LOOP;
    PERFORM pg_advisory_xact_lock(1869505381, hashtext('saga_define:' || name));
    SELECT d.version, d.definition INTO latest
      FROM once.saga_definitions d WHERE d.name = saga_define.name ORDER BY d.version DESC LIMIT 1;
    IF FOUND AND latest.definition = normalized THEN
        RETURN latest.version;   -- defining the same thing again is a no-op
    END IF;
    INSERT INTO once.saga_definitions (name, version, definition, source)
    VALUES (saga_define.name, coalesce(latest.version, 0) + 1, normalized, definition);
    RETURN coalesce(latest.version, 0) + 1;
END
$$;
COMMENT ON FUNCTION once.saga_define(text, jsonb) IS
    'Validate and store a saga definition; returns its version (a new one only when it changed)';

CREATE FUNCTION once.saga_start(name text, saga_id text, input jsonb DEFAULT '{}') RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    def record;
    existing once.saga_instances;
    inst once.saga_instances;
    decision jsonb;
BEGIN
    PERFORM once._saga_check_id(saga_id);
    IF input IS NOT NULL AND jsonb_typeof(input) <> 'object' THEN
        RAISE EXCEPTION 'saga input must be a JSON object'
            USING ERRCODE = '22023', DETAIL = format('It was a %s.', jsonb_typeof(input)),
                  HINT = 'Pass e.g. {"order_id": 42}; step outputs are merged into it.';
    END IF;
    SELECT d.version, d.definition INTO def
      FROM once.saga_definitions d WHERE d.name = saga_start.name ORDER BY d.version DESC LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'saga definition not found'
            USING ERRCODE = 'ON402', DETAIL = format('No saga is defined with the name %s.', quote_literal(left(name, 80))),
                  HINT = 'Define it first with once.saga_define.';
    END IF;
    decision := once._saga_decide(def.definition, NULL,
        jsonb_build_object('type', 'start', 'now_ms', once._saga_ms(now()), 'random', random()));
    INSERT INTO once.saga_instances AS s (saga_id, name, version, input, data, machine, status, step,
                                          attempts, deadline)
    VALUES (saga_id, name, def.version, coalesce(input, '{}'), coalesce(input, '{}'), decision->'machine',
            decision->>'status', decision->>'step', (decision->>'attempts')::integer, once._saga_deadline(decision))
    ON CONFLICT ON CONSTRAINT saga_instances_pkey DO NOTHING
    RETURNING * INTO inst;
    IF NOT FOUND THEN
        -- Idempotent: the same start again returns the same saga and sends nothing.
        SELECT * INTO existing FROM once.saga_instances s WHERE s.saga_id = saga_start.saga_id;
        IF existing.name = saga_start.name AND existing.input = coalesce(saga_start.input, '{}') THEN
            RETURN saga_id;
        END IF;
        RAISE EXCEPTION 'saga id already used with another saga or input'
            USING ERRCODE = 'ON404',
                  DETAIL = format('Saga %s was started as %s with input %s.', quote_literal(left(saga_id, 80)),
                                  quote_literal(existing.name), left(existing.input::text, 200)),
                  HINT = 'Use a new saga id for a new saga.';
    END IF;
    PERFORM once._saga_emit(saga_id, name, inst.data, decision, NULL);
    RETURN saga_id;
END
$$;
COMMENT ON FUNCTION once.saga_start(text, text, jsonb) IS
    'Start a saga (idempotent on saga_id); the first command is sent in the caller''s transaction';

CREATE FUNCTION once.saga_reply(saga_id text, step text, outcome text, output jsonb DEFAULT NULL,
                                message_id text DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF step IS NULL OR outcome IS NULL THEN
        RAISE EXCEPTION 'saga reply needs a step and an outcome'
            USING ERRCODE = 'ON406', DETAIL = format('step was %s, outcome was %s.',
                coalesce(quote_literal(step), 'NULL'), coalesce(quote_literal(outcome), 'NULL')),
                  HINT = 'Outcomes: succeeded, failed, compensated, compensation_failed.';
    END IF;
    RETURN once._saga_apply(saga_id,
        jsonb_build_object('type', 'reply', 'step', step, 'outcome', outcome,
                           'reason', CASE WHEN jsonb_typeof(output) = 'object' THEN output->>'error' END),
        output, message_id)->>'result';
END
$$;
COMMENT ON FUNCTION once.saga_reply(text, text, text, jsonb, text) IS
    'Report the outcome of a saga step: applied, duplicate, late (recorded, nothing to do) or rejected (saga failed)';

CREATE FUNCTION once.saga_retry(saga_id text) RETURNS text
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT once._saga_apply(saga_id, '{"type": "retry"}')->>'status' $$;
COMMENT ON FUNCTION once.saga_retry(text) IS 'Resume a failed saga from where it stopped; returns the new status';

CREATE FUNCTION once.saga_abort(saga_id text, reason text) RETURNS text
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT once._saga_apply(saga_id, jsonb_build_object('type', 'abort', 'reason', coalesce(reason, 'by hand')))->>'status' $$;
COMMENT ON FUNCTION once.saga_abort(text, text) IS 'Start compensation by hand; returns the new status';

-- Due sagas for saga_tick, locked (SKIP LOCKED: several relays may tick at once).
CREATE FUNCTION once._saga_due(max integer)
RETURNS TABLE (saga_id text, local jsonb, data jsonb)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.saga_id, s.machine->'local', s.data
      FROM once.saga_instances s
     WHERE s.deadline <= now()
     ORDER BY s.deadline
     LIMIT max
       FOR UPDATE SKIP LOCKED
$$;

CREATE FUNCTION once._saga_local(p_saga_id text)
RETURNS TABLE (local jsonb, data jsonb)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.machine->'local', s.data FROM once.saga_instances s
     WHERE s.saga_id = p_saga_id AND s.machine->>'waiting' = 'local' AND s.status IN ('running', 'compensating')
$$;

-- No SET search_path and no SECURITY DEFINER on purpose: local step functions are the
-- caller's code and run with the caller's rights. pg_once's own references are qualified.
CREATE FUNCTION once.saga_tick(max integer) RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    due record;
    step record;
    result_json jsonb;
    n integer := 0;
    chain integer;
    ok boolean;
    err text;
BEGIN
    IF max IS NULL OR max < 1 THEN
        RAISE EXCEPTION 'max must be a positive number' USING ERRCODE = '22023',
            DETAIL = pg_catalog.format('max was %s.', max);
    END IF;
    FOR due IN SELECT * FROM once._saga_due(max) LOOP
        n := n + 1;
        IF due.local IS NULL THEN
            PERFORM once._saga_apply(due.saga_id, '{"type": "deadline"}');
        END IF;
        -- Local steps (a chain of them runs at once, bounded).
        chain := 0;
        LOOP
            SELECT * INTO step FROM once._saga_local(due.saga_id);
            EXIT WHEN NOT FOUND OR chain >= 100;
            chain := chain + 1;
            BEGIN
                EXECUTE pg_catalog.format('SELECT %s($1, $2)', (step.local->>'function')::pg_catalog.regproc)
                   INTO result_json USING due.saga_id, step.data;
                ok := true;
            EXCEPTION WHEN OTHERS THEN
                ok := false;
                GET STACKED DIAGNOSTICS err = MESSAGE_TEXT;
            END;
            IF ok THEN
                PERFORM once._saga_apply(due.saga_id, pg_catalog.jsonb_build_object('type', 'reply',
                    'step', step.local->>'step',
                    'outcome', CASE WHEN (step.local->>'compensate')::boolean THEN 'compensated' ELSE 'succeeded' END),
                    result_json);
            ELSE
                PERFORM once._saga_apply(due.saga_id, pg_catalog.jsonb_build_object('type', 'reply',
                    'step', step.local->>'step',
                    'outcome', CASE WHEN (step.local->>'compensate')::boolean THEN 'compensation_failed' ELSE 'failed' END,
                    'reason', err));
            END IF;
        END LOOP;
    END LOOP;
    RETURN n;
END
$$;
COMMENT ON FUNCTION once.saga_tick(integer) IS
    'Timeouts (resend with the same key), retries with backoff and local-function steps of due sagas; returns how many were handled';

-- saga_tick() = saga_tick(1000). An overload rather than a parameter default, so that
-- to_regprocedure('once.saga_tick()') finds it (once-relay checks for it that way).
CREATE FUNCTION once.saga_tick() RETURNS integer
LANGUAGE sql
AS $$ SELECT once.saga_tick(1000) $$;
COMMENT ON FUNCTION once.saga_tick() IS 'once.saga_tick(1000)';

CREATE VIEW once.sagas AS
SELECT s.saga_id, s.name, s.version, s.status, s.step, s.data, s.input, s.deadline, s.attempts,
       s.last_error, s.created_at, s.updated_at, s.finished_at
  FROM once.saga_instances s;
COMMENT ON VIEW once.sagas IS 'Sagas: status, current step, data, deadline, attempts, last error';

CREATE VIEW once.saga_history AS
SELECT t.saga_id, t.at, t.from_status, t.to_status, t.step, t.event, t.reason, t.message_id, t.id
  FROM once.saga_transitions t;
COMMENT ON VIEW once.saga_history IS 'Every saga transition with time, reason and the reply message id';

CREATE FUNCTION once.saga_diagram(name text) RETURNS text
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    def jsonb;
BEGIN
    SELECT d.definition INTO def FROM once.saga_definitions d
     WHERE d.name = saga_diagram.name ORDER BY d.version DESC LIMIT 1;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'saga definition not found'
            USING ERRCODE = 'ON402', DETAIL = format('No saga is defined with the name %s.', quote_literal(left(name, 80)));
    END IF;
    RETURN once._saga_mermaid(name, def);
END
$$;
COMMENT ON FUNCTION once.saga_diagram(text) IS 'Mermaid state diagram of the latest version of a saga definition';

-- once.saga_retention (a registered PGC_SUSET setting, at least 1 minute, default 7 days).
-- A C function: calling it loads the library, which registers the setting before it is read.
CREATE FUNCTION once._saga_retention() RETURNS interval
AS 'MODULE_PATHNAME', 'once_saga_retention' LANGUAGE C STABLE;
REVOKE ALL ON FUNCTION once._saga_retention() FROM PUBLIC;

-- Finished sagas (completed/compensated) older than once.saga_retention (default 7 days).
CREATE FUNCTION once.purge_sagas(max_rows integer) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    retention interval := once._saga_retention();  -- the registered setting (settings.cpp)
    ids text[];
BEGIN
    IF max_rows IS NULL OR max_rows < 1 THEN
        RETURN 0;
    END IF;
    SELECT array_agg(s.saga_id) INTO ids FROM (
        SELECT s.saga_id FROM once.saga_instances s
         WHERE s.finished_at < now() - retention
         LIMIT max_rows FOR UPDATE SKIP LOCKED) s;
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    DELETE FROM once.saga_transitions t WHERE t.saga_id = ANY (ids);
    DELETE FROM once.saga_replies r WHERE r.saga_id = ANY (ids);
    DELETE FROM once.saga_instances s WHERE s.saga_id = ANY (ids);
    RETURN cardinality(ids);
END
$$;

-- The built-in inbox handler for replies arriving through a relay: subscribe it to the
-- definition's reply_to topic, e.g.
--   SELECT once.subscribe('saga.campus_cafe_order.reply', 'once.saga_reply_handler(once.inbound)');
-- Reply payload: {"saga_id": "...", "step": "...", "outcome": "succeeded", "output": {...}}
-- (output optional; output.error carries the failure reason).
CREATE FUNCTION once.saga_reply_handler(msg once.inbound) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    p jsonb := (msg).payload;
BEGIN
    IF p IS NULL OR jsonb_typeof(p) <> 'object' OR p->>'saga_id' IS NULL OR p->>'step' IS NULL OR p->>'outcome' IS NULL THEN
        RAISE EXCEPTION 'malformed saga reply'
            USING ERRCODE = 'ON406', DETAIL = format('Message %s payload: %s', (msg).message_id, left(p::text, 200)),
                  HINT = 'A reply is {"saga_id": ..., "step": ..., "outcome": ..., "output": {...}}.';
    END IF;
    PERFORM once.saga_reply(p->>'saga_id', p->>'step', p->>'outcome',
                            CASE WHEN jsonb_typeof(p->'output') = 'object' THEN p->'output' END,
                            (msg).message_id::text);
END
$$;
REVOKE ALL ON FUNCTION once.saga_reply_handler(once.inbound) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.saga_reply_handler(once.inbound) TO once_consumer;


REVOKE ALL ON FUNCTION once._saga_compile(text, jsonb), once._saga_decide(jsonb, jsonb, jsonb),
    once._saga_mermaid(text, jsonb), once._saga_ms(timestamptz), once._saga_check_id(text),
    once._saga_unknown(text), once._saga_store(once.saga_instances, jsonb, jsonb, text),
    once._saga_deadline(jsonb), once._saga_emit(text, text, jsonb, jsonb, text),
    once._saga_apply(text, jsonb, jsonb, text), once.saga_define(text, jsonb),
    once.saga_start(text, text, jsonb), once.saga_reply(text, text, text, jsonb, text),
    once.saga_retry(text), once.saga_abort(text, text), once._saga_due(integer), once._saga_local(text),
    once.saga_tick(integer), once.saga_tick(), once.saga_diagram(text), once.purge_sagas(integer) FROM PUBLIC;
REVOKE ALL ON once.sagas, once.saga_history FROM PUBLIC;

GRANT EXECUTE ON FUNCTION once.saga_define(text, jsonb), once.saga_retry(text), once.saga_abort(text, text),
    once.saga_diagram(text) TO once_admin;
GRANT EXECUTE ON FUNCTION once.saga_start(text, text, jsonb) TO once_producer;
GRANT EXECUTE ON FUNCTION once.saga_reply(text, text, text, jsonb, text) TO once_consumer;
GRANT EXECUTE ON FUNCTION once.saga_tick(integer), once.saga_tick(), once._saga_due(integer), once._saga_local(text),
    once._saga_apply(text, jsonb, jsonb, text) TO once_relay;
GRANT SELECT ON once.sagas, once.saga_history TO once_admin, once_producer;
