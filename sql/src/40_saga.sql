-- Orchestrated sagas (see docs/sagas.md). The decisions are made by the C++ state machine
-- (core/saga_machine.hpp), called directly by the C++ entry points (extension/src/pg/saga/saga.cpp,
-- saga_store.cpp, saga_tick.cpp), which load and lock the saga with saved plans, store the
-- decision and send the commands through the outbox, all in the caller's transaction.

CREATE TABLE once.saga_definitions (
    name        text        NOT NULL,
    version     integer     NOT NULL,
    definition  jsonb       NOT NULL,   -- normalised: every default filled in
    source      jsonb       NOT NULL,   -- as given to saga_define
    created_at  timestamptz NOT NULL DEFAULT pg_catalog.now(),
    run_as      regrole,                -- (0.3) the role local steps run as; NULL: each function's owner
    PRIMARY KEY (name, version)
);
COMMENT ON TABLE once.saga_definitions IS 'Saga definitions; a new version per change, running sagas keep theirs';

-- A saga's identity is (name, saga_id): ids are unique per definition, so a role that may
-- start one definition cannot take the ids of another's sagas.
CREATE TABLE once.saga_instances (
    saga_id     text        NOT NULL,
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
    started_by  oid,                    -- the role that called saga_start (NULL: started before 0.3)
    traceparent text,                   -- (0.3) the W3C trace context it was started under, if any
    failure_cause text,                 -- the failure that made it compensate or stop (0.3); last_error
                                        -- is the latest one (a compensation that timed out, say)
    CONSTRAINT saga_instances_pkey PRIMARY KEY (name, saga_id),
    CONSTRAINT saga_instances_definition_fk FOREIGN KEY (name, version) REFERENCES once.saga_definitions,
    CONSTRAINT saga_instances_deadline_check CHECK
        ((status IN ('running', 'compensating')) = (deadline IS NOT NULL)),
    CONSTRAINT saga_instances_failed_reason CHECK (status <> 'failed' OR last_error IS NOT NULL)
);
COMMENT ON TABLE once.saga_instances IS 'One row per saga; every non-final saga has a deadline, every failed one a reason';
CREATE INDEX saga_instances_due ON once.saga_instances (deadline) WHERE deadline IS NOT NULL;
-- Replies and admins may name a saga by its id alone (when only one definition has it).
CREATE INDEX saga_instances_saga_id ON once.saga_instances (saga_id);
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
    message_id  text,
    name        text                    -- the saga's definition (0.3; saga ids are unique per definition)
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
CREATE FUNCTION once._saga_mermaid(name text, definition jsonb) RETURNS text
    AS 'MODULE_PATHNAME', 'once_saga_diagram' LANGUAGE C IMMUTABLE;

-- The role a local step function runs as (extension/src/pg/common/run_as.hpp): run_as, or the
-- function's owner; ON306 when the owner could rewrite the function to act as run_as.
CREATE FUNCTION once._function_run_as(fn regprocedure, run_as regrole, what text) RETURNS regrole
    AS 'MODULE_PATHNAME', 'once_function_run_as' LANGUAGE C VOLATILE;

-- Applies one event to a saga (lock, decide, store, send); returns {"result", "status", "step"}.
-- For the events without an entry point of their own: retry, abort, and saga_tick's.
CREATE FUNCTION once._saga_apply(p_saga_id text, event jsonb, output jsonb DEFAULT NULL, message_id text DEFAULT NULL,
                                  p_name text DEFAULT NULL)
RETURNS jsonb
    AS 'MODULE_PATHNAME', 'once_saga_apply' LANGUAGE C VOLATILE;

-- Internal: once.saga_define of one name at a time (pg_once's own lock: SQL's advisory lock
-- functions cannot take it first).
CREATE FUNCTION once._saga_define_lock(name text) RETURNS void
AS 'MODULE_PATHNAME', 'once_saga_define_lock' LANGUAGE C VOLATILE STRICT;
REVOKE ALL ON FUNCTION once._saga_define_lock(text) FROM PUBLIC;

CREATE FUNCTION once.saga_define(name text, definition jsonb, run_as regrole DEFAULT NULL) RETURNS integer
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
            -- ON306 when its owner could rewrite it to act as run_as (checked again at each run)
            PERFORM once._function_run_as(to_regprocedure(fn || '(text, jsonb)'), saga_define.run_as,
                                          'saga step function');
        END LOOP;
    END LOOP;
    PERFORM once._saga_define_lock(name);
    SELECT d.version, d.definition, d.run_as INTO latest
      FROM once.saga_definitions d WHERE d.name = saga_define.name ORDER BY d.version DESC LIMIT 1;
    IF FOUND AND latest.definition = normalized
       AND coalesce(latest.run_as = saga_define.run_as, latest.run_as IS NULL AND saga_define.run_as IS NULL) THEN
        RETURN latest.version;   -- defining the same thing again is a no-op
    END IF;
    INSERT INTO once.saga_definitions (name, version, definition, source, run_as)
    VALUES (saga_define.name, coalesce(latest.version, 0) + 1, normalized, definition, saga_define.run_as);
    RETURN coalesce(latest.version, 0) + 1;
END
$$;
COMMENT ON FUNCTION once.saga_define(text, jsonb, regrole) IS
    'Validate and store a saga definition, its local steps run as run_as (NULL: each function''s owner); returns its version (a new one only when it changed)';

-- Who may start which definition: a producer that could start any definition could take
-- that definition's saga ids first (ON404 for the rightful starter, or its own saga handed
-- over). A definition with no grant
-- may be started by every producer, as in 0.2; once it has one, once.saga_start needs a grant
-- of the caller or of a role whose privileges it has (ON407 otherwise).
CREATE TABLE once.saga_start_grants (
    name       text        NOT NULL,   -- a saga definition's name (it need not be defined yet)
    grantee    oid         NOT NULL,   -- a role (regrole): it and its members may start it
    granted_at timestamptz NOT NULL DEFAULT pg_catalog.now(),
    granted_by oid         NOT NULL,
    PRIMARY KEY (name, grantee)
);
COMMENT ON TABLE once.saga_start_grants IS 'Roles that may start each saga definition; a definition without rows: every producer';
REVOKE ALL ON TABLE once.saga_start_grants FROM PUBLIC;
GRANT SELECT ON TABLE once.saga_start_grants TO once_admin;

CREATE FUNCTION once.grant_saga_start(role regrole, name text) RETURNS boolean
    AS 'MODULE_PATHNAME', 'once_grant_saga_start' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.grant_saga_start(regrole, text) IS
    'Let role (and its members) start the saga definition; once a definition has a grant, only granted roles may; false if already granted';

CREATE FUNCTION once.revoke_saga_start(role regrole, name text DEFAULT NULL) RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    WITH gone AS (
        DELETE FROM once.saga_start_grants
         WHERE grantee = $1::oid AND ($2 IS NULL OR name = $2)
        RETURNING 1)
    SELECT count(*)::integer FROM gone
$$;
COMMENT ON FUNCTION once.revoke_saga_start(regrole, text) IS
    'Remove the role''s start grant of the definition (of every definition when NULL); returns how many';

REVOKE ALL ON FUNCTION once.grant_saga_start(regrole, text), once.revoke_saga_start(regrole, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.grant_saga_start(regrole, text), once.revoke_saga_start(regrole, text) TO once_admin;

CREATE FUNCTION once.saga_start(name text, saga_id text, input jsonb DEFAULT '{}') RETURNS text
    AS 'MODULE_PATHNAME', 'once_saga_start' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.saga_start(text, text, jsonb) IS
    'Start a saga (idempotent on saga_id); the first command is sent in the caller''s transaction';

CREATE FUNCTION once.saga_reply(saga_id text, step text, outcome text, output jsonb DEFAULT NULL,
                                message_id text DEFAULT NULL, name text DEFAULT NULL)
RETURNS text
    AS 'MODULE_PATHNAME', 'once_saga_reply' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.saga_reply(text, text, text, jsonb, text, text) IS
    'Report the outcome of a saga step (name: the saga''s definition, needed when several have the id): applied, duplicate, late (recorded, nothing to do) or rejected (saga failed)';

CREATE FUNCTION once.saga_retry(saga_id text, name text DEFAULT NULL) RETURNS text
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT once._saga_apply(saga_id, '{"type": "retry"}', NULL, NULL, name)->>'status' $$;
COMMENT ON FUNCTION once.saga_retry(text, text) IS 'Resume a failed saga (name: its definition, needed when several have the id) from where it stopped; returns the new status';

CREATE FUNCTION once.saga_abort(saga_id text, reason text, name text DEFAULT NULL) RETURNS text
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$ SELECT once._saga_apply(saga_id, jsonb_build_object('type', 'abort', 'reason', coalesce(reason, 'by hand')), NULL, NULL, name)->>'status' $$;
COMMENT ON FUNCTION once.saga_abort(text, text, text) IS 'Start compensation by hand (name: the saga''s definition, needed when several have the id); returns the new status';

-- Due sagas for saga_tick, locked (SKIP LOCKED: several relays may tick at once).
CREATE FUNCTION once._saga_due(max integer)
RETURNS TABLE (saga_id text, local jsonb, data jsonb, name text)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.saga_id, s.machine->'local', s.data, s.name
      FROM once.saga_instances s
     WHERE s.deadline <= now()
     ORDER BY s.deadline
     LIMIT max
       FOR UPDATE SKIP LOCKED
$$;

CREATE FUNCTION once._saga_local(p_saga_id text, p_name text)
RETURNS TABLE (local jsonb, data jsonb, run_as regrole)
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
    SELECT s.machine->'local', s.data, d.run_as
      FROM once.saga_instances s
      JOIN once.saga_definitions d ON d.name = s.name AND d.version = s.version
     WHERE s.saga_id = p_saga_id AND s.name = p_name AND s.machine->>'waiting' = 'local' AND s.status IN ('running', 'compensating')
$$;

-- The timer, in C++ (extension/src/pg/saga/saga_tick.cpp). Neither SECURITY DEFINER nor
-- search_path-pinned on purpose: a local step function's name is resolved under the caller's
-- search_path; the function then runs as its run_as role or owner, restricted and under a
-- pinned search_path (extension/src/pg/common/restricted_call.hpp). Its own statements run as the
-- extension owner through the internal functions above (granted to nobody) and are fully
-- schema-qualified, operators included, so a hostile search_path changes nothing in them.
CREATE FUNCTION once.saga_tick(max integer) RETURNS integer
    AS 'MODULE_PATHNAME', 'once_saga_tick' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.saga_tick(integer) IS
    'Timeouts (resend with the same key), retries with backoff and local-function steps of due sagas; returns how many were handled';

-- saga_tick() = saga_tick(1000). An overload rather than a parameter default, so that
-- to_regprocedure('once.saga_tick()') finds it (once-relay checks for it that way).
CREATE FUNCTION once.saga_tick() RETURNS integer
    AS 'MODULE_PATHNAME', 'once_saga_tick' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.saga_tick() IS 'once.saga_tick(1000)';

-- The sagas (and their transitions) that the calling role, or a role whose privileges it has,
-- started: the views' branch for everyone but once_admin (C++, extension/src/pg/saga/saga_views.cpp).
-- The planner pushes no condition into a function, so a caller's conditions apply to these
-- rows only. ROWS 100: their estimate stays small in once_admin's plans, which never run them.
CREATE FUNCTION once._own_sagas()
RETURNS TABLE (saga_id text, name text, version integer, status text, step text, data jsonb, input jsonb,
               deadline timestamptz, attempts integer, last_error text, created_at timestamptz,
               updated_at timestamptz, finished_at timestamptz, failure_cause text)
AS 'MODULE_PATHNAME', 'once_own_sagas' LANGUAGE C STABLE ROWS 100;
CREATE FUNCTION once._own_saga_history()
RETURNS TABLE (saga_id text, at timestamptz, from_status text, to_status text, step text, event text,
               reason text, message_id text, id bigint, name text)
AS 'MODULE_PATHNAME', 'once_own_saga_history' LANGUAGE C STABLE ROWS 100;
REVOKE ALL ON FUNCTION once._own_sagas(), once._own_saga_history() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once._own_sagas(), once._own_saga_history() TO once_admin, once_producer;
-- The sagas a role started, for those functions.
CREATE INDEX saga_instances_started_by ON once.saga_instances (started_by);

-- A saga's data holds step outputs (payment tokens, addresses): a role sees the sagas that
-- it, or a role whose privileges it has, started; once_admin sees all.
-- Sagas started before 0.3 have no starter and are shown to once_admin only. The views are
-- security barriers, so a caller's leaky function in a WHERE clause never sees other rows
-- (current_user in a view is the querying role).
--
-- A caller's leakproof conditions (saga_id >= $1, say) are still pushed below a security
-- barrier, into an index scan that runs before the row filter, where EXPLAIN ANALYZE would
-- count the hidden rows they match. So each view has two branches: once_admin's, whose filter
-- involves no row and is tested once before anything is scanned (for anyone else the scan never
-- runs; for once_admin a keyed lookup stays an index scan), and everyone else's, the caller's
-- own rows from the functions above.
CREATE VIEW once.sagas WITH (security_barrier) AS
SELECT s.saga_id, s.name, s.version, s.status, s.step, s.data, s.input, s.deadline, s.attempts,
       s.last_error, s.created_at, s.updated_at, s.finished_at, s.failure_cause
  FROM once.saga_instances s
 WHERE pg_catalog.pg_has_role(current_user, 'once_admin', 'USAGE')
UNION ALL
SELECT o.saga_id, o.name, o.version, o.status, o.step, o.data, o.input, o.deadline, o.attempts,
       o.last_error, o.created_at, o.updated_at, o.finished_at, o.failure_cause
  FROM once._own_sagas() o
 WHERE NOT pg_catalog.pg_has_role(current_user, 'once_admin', 'USAGE');
COMMENT ON VIEW once.sagas IS 'Sagas: status, current step, data, deadline, attempts, last error, failure cause (the caller''s own, or all for once_admin)';

CREATE VIEW once.saga_history WITH (security_barrier) AS
SELECT t.saga_id, t.at, t.from_status, t.to_status, t.step, t.event, t.reason, t.message_id, t.id, t.name
  FROM once.saga_transitions t
 WHERE pg_catalog.pg_has_role(current_user, 'once_admin', 'USAGE')
UNION ALL
SELECT o.saga_id, o.at, o.from_status, o.to_status, o.step, o.event, o.reason, o.message_id, o.id, o.name
  FROM once._own_saga_history() o
 WHERE NOT pg_catalog.pg_has_role(current_user, 'once_admin', 'USAGE');
COMMENT ON VIEW once.saga_history IS 'Every saga transition with time, reason and the reply message id (of the sagas the caller sees)';

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
    names text[];
BEGIN
    IF max_rows IS NULL OR max_rows < 1 THEN
        RETURN 0;
    END IF;
    SELECT array_agg(s.saga_id), array_agg(s.name) INTO ids, names FROM (
        SELECT s.saga_id, s.name FROM once.saga_instances s
         WHERE s.finished_at < now() - retention
         LIMIT max_rows FOR UPDATE SKIP LOCKED) s;
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    -- (name, saga_id) is a saga's identity; replies are recorded per saga id, so they go once
    -- no saga of any definition has the id any more.
    DELETE FROM once.saga_transitions t USING unnest(ids, names) p(saga_id, name)
     WHERE t.saga_id = p.saga_id AND t.name = p.name;
    DELETE FROM once.saga_instances s USING unnest(ids, names) p(saga_id, name)
     WHERE s.saga_id = p.saga_id AND s.name = p.name;
    DELETE FROM once.saga_replies r
     WHERE r.saga_id = ANY (ids)
       AND NOT EXISTS (SELECT FROM once.saga_instances s WHERE s.saga_id = r.saga_id);
    RETURN cardinality(ids);
END
$$;

-- The built-in inbox handler for replies arriving through a relay: subscribe it to the
-- definition's reply_to topic, e.g.
--   SELECT once.subscribe('saga.campus_cafe_order.reply', 'once.saga_reply_handler(once.inbound)');
-- Reply payload: {"saga_id": "...", "step": "...", "outcome": "succeeded", "output": {...}}
-- (output optional; output.error carries the failure reason).
CREATE FUNCTION once.saga_reply_handler(msg once.inbound) RETURNS void
    AS 'MODULE_PATHNAME', 'once_saga_reply_handler' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION once.saga_reply_handler(once.inbound) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.saga_reply_handler(once.inbound) TO once_consumer;


REVOKE ALL ON FUNCTION once._saga_compile(text, jsonb), once._function_run_as(regprocedure, regrole, text),
    once._saga_mermaid(text, jsonb),
    once._saga_apply(text, jsonb, jsonb, text, text), once.saga_define(text, jsonb, regrole),
    once.saga_start(text, text, jsonb), once.saga_reply(text, text, text, jsonb, text, text),
    once.saga_retry(text, text), once.saga_abort(text, text, text), once._saga_due(integer), once._saga_local(text, text),
    once.saga_tick(integer), once.saga_tick(), once.saga_diagram(text), once.purge_sagas(integer) FROM PUBLIC;
REVOKE ALL ON once.sagas, once.saga_history FROM PUBLIC;

GRANT EXECUTE ON FUNCTION once.saga_define(text, jsonb, regrole), once.saga_retry(text, text), once.saga_abort(text, text, text),
    once.saga_diagram(text) TO once_admin;
GRANT EXECUTE ON FUNCTION once.saga_start(text, text, jsonb) TO once_producer;
GRANT EXECUTE ON FUNCTION once.saga_reply(text, text, text, jsonb, text, text) TO once_consumer;
-- Internal _saga_* functions are granted to nobody: saga_tick calls them as the owner, so a
-- relay can drive the timer but cannot apply an event (abort, a forged reply) of its own.
GRANT EXECUTE ON FUNCTION once.saga_tick(integer), once.saga_tick() TO once_relay;
GRANT SELECT ON once.sagas, once.saga_history TO once_admin, once_producer;
