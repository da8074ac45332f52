-- The tag of a pg_once WAL message (extension/src/core/wal_message.hpp) computed in SQL,
-- independently of the extension and the relay, for tests that emit messages themselves with
-- pg_logical_emit_message: the first 16 bytes of HMAC-SHA256(once.wal_secret(), origin || body),
-- the origin being this cluster's system identifier, this database's oid and the 32-bit xid of
-- the current transaction (pg_once_test_tagged must run in the emitting transaction). Needs a
-- role that may read once.wal_secret() and pg_control_system().
-- HMAC-SHA256 (RFC 2104) from sha256(), for keys up to 64 bytes.
CREATE FUNCTION public.pg_once_test_hmac_sha256(key bytea, msg bytea) RETURNS bytea LANGUAGE sql AS $$
  WITH k AS (SELECT key || decode(repeat('00', 64 - octet_length(key)), 'hex') AS k),
       pads AS (SELECT decode(string_agg(lpad(to_hex(get_byte(k, i) # 54), 2, '0'), '' ORDER BY i), 'hex') AS ipad,
                       decode(string_agg(lpad(to_hex(get_byte(k, i) # 92), 2, '0'), '' ORDER BY i), 'hex') AS opad
                  FROM k, generate_series(0, 63) i)
  SELECT sha256(opad || sha256(ipad || msg)) FROM pads
$$;
CREATE FUNCTION public.pg_once_test_origin() RETURNS bytea LANGUAGE sql AS $$
  SELECT int8send((SELECT system_identifier FROM pg_control_system()))
      || substring(int8send((SELECT oid FROM pg_database WHERE datname = current_database())::bigint) FROM 5)
      || substring(int8send((pg_current_xact_id()::text::numeric % 4294967296)::bigint) FROM 5)
$$;
CREATE FUNCTION public.pg_once_test_tagged(body bytea) RETURNS bytea LANGUAGE sql AS $$
  SELECT body || substring(public.pg_once_test_hmac_sha256(once.wal_secret(), public.pg_once_test_origin() || body) FOR 16)
$$;
