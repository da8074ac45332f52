#!/usr/bin/env bash
# W3C trace context end to end: a producer sets it once for its transaction, and the
# trace continues through a relay into another database's inbox, the saga a handler starts
# there, and that saga's step command, relayed to NATS JetStream.
#   src: SET LOCAL once.traceparent = TP; once.send('order.placed', ...)
#   relay "in":  src -> dst inbox (postgresql:// sink); once.deliver runs the handler under TP
#   dst: the handler calls once.saga_start; the saga keeps TP
#   relay "out": dst -> NATS; the step command carries TP's trace id with a new span id
# The command's traceparent is read back with OpenTelemetry's own W3C propagator
# (@opentelemetry/core, tests/integration/node), not with pg_once's parser.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
NODE_DIR="$ONCE_SOURCE_DIR/tests/integration/node"
command -v node >/dev/null || fail "node is needed (scripts/setup)"
[ -d "$NODE_DIR/node_modules/@opentelemetry/core" ] ||
    (cd "$NODE_DIR" && npm ci --no-audit --no-fund --loglevel=error) || fail "npm ci in $NODE_DIR"
TP=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01

start_postgres
start_nats
psql_dst >/dev/null <<'SQL'
SELECT once.saga_define('traced_order', '{"steps": [{"name": "charge", "action": {"topic": "cafe.charge"}}]}');
CREATE FUNCTION public.start_order(msg once.inbound) RETURNS void LANGUAGE sql AS $$
    SELECT once.saga_start('traced_order', msg.payload ->> 'order', msg.payload) $$;
SELECT once.subscribe('order.placed', 'public.start_order(once.inbound)');
SQL
psql -X -q -v ON_ERROR_STOP=1 -d src >/dev/null <<SQL
BEGIN;
SET LOCAL once.traceparent = '$TP';
SELECT once.send('order.placed', '{"order": "o-1"}');
COMMIT;
SQL
[ "$(psql_src -c "SELECT headers ->> 'traceparent' FROM once.outbox")" = "$TP" ] ||
    fail "the producer's message does not carry the transaction's traceparent"

start_relay in --db "$SRC_DB" --sink "$DST_URI"
saga_started() { [ "$(psql_dst -c "SELECT count(*) FROM once.saga_instances WHERE saga_id = 'o-1'")" = 1 ]; }
once_wait_for "the handler in dst to start the saga" 30 saga_started || fail "no saga o-1 in dst"
[ "$(psql_dst -c "SELECT traceparent FROM once.saga_instances WHERE saga_id = 'o-1'")" = "$TP" ] ||
    fail "the saga started by the handler does not keep the delivered message's trace context"
say "ok - the handler in dst ran under the producer's trace context; its saga keeps it"

start_relay out --db "host=$PGHOST port=$PGPORT user=postgres dbname=dst" \
    --sink "nats://127.0.0.1:$NATS_PORT?stream=TRC&subject_prefix=trc.&create_stream=1" --topics 'cafe.>'
once_wait_for "the saga's command in JetStream" 30 stream_has TRC 1 || fail "stream TRC has $(stream_msgs TRC) messages"
m=$(python3 "$RELAY_LIB/nats_stream_get.py" "$NATS_PORT" TRC 1) || fail "cannot read the command from TRC"
cmd_tp=$(jq -r '.headers[] | select(.[0] | ascii_downcase == "traceparent") | .[1]' <<<"$m")
otel=$(node "$RELAY_LIB/trace_extract.js" "$TP" "$cmd_tp") || fail "OpenTelemetry's propagator failed"
start=$(sed -n 1p <<<"$otel") command=$(sed -n 2p <<<"$otel")
[ "$(jq -r .valid <<<"$command")" = true ] || fail "OpenTelemetry does not accept the command's traceparent '$cmd_tp'"
[ "$(jq -r .traceId <<<"$command")" = "$(jq -r .traceId <<<"$start")" ] ||
    fail "the command's traceparent '$cmd_tp' is not in the producer's trace"
[ "$(jq -r .spanId <<<"$command")" != "$(jq -r .spanId <<<"$start")" ] || fail "the command reuses the start's span id: $cmd_tp"
[ "$(jq -r .traceFlags <<<"$command")" = "$(jq -r .traceFlags <<<"$start")" ] || fail "the command lost the trace flags: $cmd_tp"
say "ok - the step command reached NATS in the producer's trace with a span of its own ($cmd_tp)"
echo "PASS"
