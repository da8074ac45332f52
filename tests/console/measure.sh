#!/usr/bin/env bash
# Measures once-console's page times on a big database (tests/console/fill_big.sql: 1M-message
# backlog, 100k dead letters, 100k sagas): a throwaway cluster, the fill, the console, then
# each page N times with curl; prints median and maximum per page. Not part of CTest (the
# fill takes minutes); docs/console.md has the figures.
#   tests/console/measure.sh [N]        (after scripts/build; default N = 20; KEEP=1 keeps the cluster,
#                                        REUSE_PGHOST=DIR measures a kept one again without filling)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
n=${1:-20}
export ONCE_STAGE_DIR=$root/build/stage ONCE_BUILD_DIR=$root/build
source "$root/tests/lib/cluster.sh"
bin=$root/build/daemon/console/once-console
T=$(mktemp -d "${TMPDIR:-/tmp}/console-measure.XXXXXX"); chmod 755 "$T"
pid= url= secret=
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    if [ "${KEEP:-0}" = 1 ]; then echo "kept: PGHOST=$PGHOST PGDATABASE=big, console $url (user admin, password $secret)"
    else once_cluster_stop; rm -rf "$T"; fi
}
trap cleanup EXIT
if [ -n "${REUSE_PGHOST:-}" ]; then
    export PGHOST=$REUSE_PGHOST PGPORT=5432 PGUSER=postgres PGDATABASE=big KEEP=1
else
    once_cluster_start
    psql -X -q -d postgres -c "CREATE DATABASE big"
    export PGDATABASE=big
    start=$SECONDS
    psql -X -q -v ON_ERROR_STOP=1 -f "$root/tests/console/fill_big.sql" >/dev/null
fi
echo "filled in $((SECONDS - ${start:-$SECONDS})) s: $(psql -X -At -c "SELECT count(*) FILTER (WHERE dead_at IS NULL) || ' pending, ' ||
      count(*) FILTER (WHERE dead_at IS NOT NULL) || ' dead, ' || (SELECT count(*) FROM once.saga_instances) || ' sagas'
      FROM once.outbox")"
psql -X -q -c "DO \$\$ BEGIN CREATE ROLE console_login LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END \$\$" \
     -c "GRANT once_console_admin TO console_login"
secret=measure-secret-$$
printf 'admin admin %s\n' "$(printf '%s\n' "$secret" | "$bin" --hash-secret)" >"$T/users"
chmod 600 "$T/users"
as=(); [ "$(id -u)" = 0 ] && { chown postgres: "$T/users"; as=(setpriv --reuid=postgres --regid=postgres --init-groups --); }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${as[@]}" "$bin" --db "host=$PGHOST port=$PGPORT user=console_login dbname=big" --credentials "$T/users" \
    --listen "127.0.0.1:$port" 2>"$T/log" &
pid=$!
url=http://127.0.0.1:$port
up() { curl -sf "$url/healthz"; }
once_wait_for "console" 30 up
token=$(curl -sf -c "$T/jar" "$url/login" | grep -o 'name=csrf value="[0-9a-f]*"' | cut -d'"' -f2)
curl -sf -b "$T/jar" -c "$T/jar" -o /dev/null --data "csrf=$token&user=admin&secret=$secret" "$url/login"
dead=$(psql -X -At -c "SELECT id FROM once.outbox WHERE dead_at IS NOT NULL LIMIT 1")
before=$(curl -sf -b "$T/jar" "$url/dead" | grep -o 'id=older href="[^"]*"' | cut -d'"' -f2 | sed 's/&amp;/\&/g')
retrying_next=$(curl -sf -b "$T/jar" "$url/retrying" | grep -o 'id=more href="[^"]*"' | cut -d'"' -f2 | sed 's/&amp;/\&/g')
retrying_id=$(psql -X -At -c "SELECT id FROM once.outbox WHERE attempt > 0 AND dead_at IS NULL LIMIT 1")
pages=("/" "/dead" "$before" "/dead?error=unreachable&topic=payment.capture" "/dead?key=pay-77777" "/dead/$dead"
       "/blocked" "/sagas" "/sagas?status=failed" "/sagas?name=cafe_order&status=running" "/sagas?q=n%3D77" "/saga?name=cafe_order&id=order-21" "/inbox" "/keys?scope=x&key=y" "/actions"
       "/retrying" "$retrying_next" "/wal" "/find?id=$dead" "/find?id=$retrying_id" "/find?id=msg-nowhere"
       "/dead/bulk?topic=payment.capture&key_prefix=pay-7777&count=1" "/dead/bulk?error=unreachable&until=2030-01-01")
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
printf '%-48s %8s %10s %8s\n' page "min ms" "median ms" "max ms"
for p in "${pages[@]}"; do
    times=()
    for ((i = 0; i < n; i++)); do
        times+=("$(curl -s -o /dev/null -w '%{http_code} %{time_total}' -b "$T/jar" "$url$p")")
    done
    bad=$(printf '%s\n' "${times[@]}" | awk '$1 != 200 { print $1; exit }')
    printf '%s\n' "${times[@]}" | awk '{ print $2 * 1000 }' | sort -n | awk -v page="$p" -v bad="$bad" '{ t[NR] = $1 }
        END { printf "%-48s %8.1f %10.1f %8.1f%s\n", substr(page, 1, 48), t[1], t[int((NR + 1) / 2)], t[NR], bad ? "  (HTTP " bad ")" : "" }'
done
# once.outbox_stats counts the whole table (docs/operations.md says what it costs)
for i in 1 2 3; do
    psql -X -At -c "EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) SELECT * FROM once.outbox_stats" |
        python3 -c 'import json,sys; print("once.outbox_stats: %.0f ms" % json.load(sys.stdin)[0]["Execution Time"])'
done
