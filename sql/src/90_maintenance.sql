-- Maintenance: once.purge removes what has outlived its retention, in bounded batches.

CREATE FUNCTION once.purge(max_rows integer DEFAULT 10000) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    purged bigint := 0;
BEGIN
    IF max_rows IS NULL OR max_rows < 1 THEN
        RAISE EXCEPTION 'max_rows must be a positive number'
            USING ERRCODE = '22023', DETAIL = pg_catalog.format('max_rows was %s.', max_rows);
    END IF;
    -- Each concern gets what is left of the budget, in this order.
    purged := purged + once.purge_keys(max_rows - purged::integer);
    purged := purged + once.purge_outbox(max_rows - purged::integer);
    purged := purged + once.purge_inbox(max_rows - purged::integer);   -- 0 when nothing is left
    purged := purged + once.purge_sagas(max_rows - purged::integer);
    RETURN purged;
END
$$;
COMMENT ON FUNCTION once.purge(integer) IS
    'Delete expired idempotency keys, expired delivered-outbox history, inbox ids past their source''s retention (and, later, finished sagas); at most max_rows rows per call';

REVOKE ALL ON FUNCTION once.purge(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.purge(integer) TO once_relay, once_admin;

-- One relay at a time runs the timers (saga_tick, purge): the one whose session holds this
-- lock. It is pg_once's own lock tag, which SQL's advisory lock functions cannot take or wait
-- for (docs/security.md, "Locks"), and it is held until the session ends.
CREATE FUNCTION once.relay_maintenance_lock() RETURNS boolean
AS 'MODULE_PATHNAME', 'once_relay_maintenance_lock' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION once.relay_maintenance_lock() IS
    'Take the relays'' maintenance lock for this session if it is free; true when this session holds it';
REVOKE ALL ON FUNCTION once.relay_maintenance_lock() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION once.relay_maintenance_lock() TO once_relay, once_admin;
