#!/usr/bin/env bash
# Benchmark: webhooks into the inbox through once-relay --listen-webhooks (HTTP, Standard
# Webhooks signature checked, once.deliver, answer after the commit) against the same
# handler called through plain SQL (pgbench, prepared): once.deliver as one transaction per
# message, and the handler alone. 1, 8 and 32 clients, interleaved, best of $BENCH_ROUNDS.
# The HTTP load comes from tests/bench/tools/webhook_load.js on the same machine (its
# signing and Node's HTTP client cost CPU the receiver then lacks). Each line has the load
# average at its end: the machine is shared.
# Usage: tests/bench/webhook_inbound.sh   (ONCE_STAGE_DIR as for the tests; BENCH_SECONDS=5)
set -euo pipefail
here_bench=$(cd "$(dirname "$0")" && pwd)
source "$here_bench/server.sh"
source "$here_bench/../lib/cluster.sh"
seconds=${BENCH_SECONDS:-5}
rounds=${BENCH_ROUNDS:-2}
out=$(bench_results webhook_inbound)
work=$(mktemp -d "${TMPDIR:-/tmp}/pg_once-bench-webhook.XXXXXX")
chmod 755 "$work"
relay_pid=
trap '[ -n "$relay_pid" ] && kill "$relay_pid" 2>/dev/null; wait 2>/dev/null; once_cluster_stop; rm -rf "$work"' EXIT
relay_bin="$ONCE_BUILD_DIR/daemon/once-relay"
as_user=()
[ "$(id -u)" = 0 ] && as_user=(setpriv --reuid=postgres --regid=postgres --init-groups --)

bench_tps() {
    local clients=$1 script=$2
    pgbench -n -M prepared -d bench -c "$clients" -j "$clients" -T "$seconds" -f "$script" 2>"$work/pgbench.err" |
        awk '/^tps = / { printf "%d\n", $3 }' | grep . || { cat "$work/pgbench.err" >&2; return 1; }
}
http_rps() {
    local clients=$1 prefix=$2 line
    line=$(node "$here_bench/tools/webhook_load.js" "http://127.0.0.1:$port/webhooks/order.created" "$work/secret" \
        "$clients" "$seconds" "$prefix")
    [ "$(jq -r '.statuses | keys | join(",")' <<<"$line")" = 200 ] || { echo "non-200 answers: $line" >&2; return 1; }
    echo "$line" >>"$work/http.jsonl"
    jq -r .rps <<<"$line"
}
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

cat >"$work/deliver.sql" <<'SQL'
SELECT once.deliver('bench-sql', nextval('ids')::text, 'order.created', '{"id": 1}', NULL);
SQL
cat >"$work/direct.sql" <<'SQL'
SELECT bench_handler(ROW('bench', nextval('ids')::text, 'order.created', '{"id": 1}', NULL)::once.inbound);
SQL
echo "whsec_$(openssl rand -base64 32)" >"$work/secret"
chmod 600 "$work/secret"
[ "$(id -u)" = 0 ] && chown postgres: "$work/secret"

: >"$out"
log() { echo "$*" | tee -a "$out"; }
log "# webhooks into the inbox, $(date -u +%F), best of $rounds interleaved ${seconds}s runs, $(nproc) cores shared with other work (load average at the end of each line)"
log "# handler: plpgsql, inserts one row. http: once-relay --listen-webhooks, webhook_load.js clients on the same machine"
log "# mode | clients | http req/s | SQL once.deliver tps | SQL handler alone tps | http/deliver | loadavg 1 5 15"
for mode in "synchronous_commit=on fsync=on" "synchronous_commit=off fsync=off"; do
    # shellcheck disable=SC2086
    once_cluster_start $mode shared_buffers=512MB max_wal_size=4GB
    chmod 755 "$ONCE_CLUSTER_DIR"
    psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE bench" >/dev/null
    psql -qX -v ON_ERROR_STOP=1 -d bench >/dev/null <<'SQL'
CREATE EXTENSION pg_once;
CREATE SEQUENCE ids;
CREATE TABLE effects (id bigserial PRIMARY KEY, message_id text NOT NULL, payload jsonb);
CREATE FUNCTION bench_handler(msg once.inbound) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO effects (message_id, payload) VALUES (msg.message_id, msg.payload);
END $$;
SELECT once.subscribe('order.*', 'bench_handler(once.inbound)');
SQL
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    "${as_user[@]}" "$relay_bin" --db "host=$PGHOST port=$PGPORT user=postgres dbname=bench" \
        --listen-webhooks "127.0.0.1:$port" --webhooks-secret-file "$work/secret" --webhooks-source bench-http \
        --webhooks-concurrency 256 --log-level warn >"$work/relay.log" 2>&1 &
    relay_pid=$!
    up() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/webhooks")" = 405 ]; }
    once_wait_for "the receiver" 20 up || { cat "$work/relay.log" >&2; exit 1; }
    for clients in 1 8 32; do
        h=0 d=0 a=0
        for i in $(seq 1 "$rounds"); do
            t=$(bench_tps "$clients" "$work/direct.sql"); [ "$t" -gt "$a" ] && a=$t
            t=$(bench_tps "$clients" "$work/deliver.sql"); [ "$t" -gt "$d" ] && d=$t
            t=$(http_rps "$clients" "c$clients-r$i"); [ "$t" -gt "$h" ] && h=$t
        done
        log "$mode | $clients | $h | $d | $a | $(awk -v h="$h" -v d="$d" 'BEGIN { printf "%.2f", h / d }') | $(loadavg)"
    done
    effects=$(psql -qtAX -d bench -c "SELECT count(*) FROM effects e JOIN once.inbox i ON i.message_id = e.message_id AND i.source = 'bench-http'")
    dups=$(psql -qtAX -d bench -c "SELECT count(*) - count(DISTINCT message_id) FROM effects")
    log "# $mode: $effects effects from the HTTP runs, $dups duplicated effects; last HTTP run: $(tail -1 "$work/http.jsonl")"
    kill "$relay_pid"; wait "$relay_pid" || true; relay_pid=
    once_cluster_stop
done
