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
