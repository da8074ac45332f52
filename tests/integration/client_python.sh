#!/usr/bin/env bash
# The psycopg 3 example (examples/clients/python): CampusCafe's payment step as a Python
# worker. once.receive, the payment and once.saga_reply in one transaction per command:
# duplicate deliveries (a second delivery, a kill -9 between commit and ack) are processed
# once; a handler failure rolls back the payment and the inbox record together, and the
# retried command then runs once; the saga advances on the reply; a resent command gets the
# stored reply; a permanent error (by the SQLSTATE helper) is dead-lettered. Plus the SQLSTATE
# -> HTTP helper against README.md's table.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
example=$(cd "$here/../../examples/clients/python" && pwd)
source "$here/../lib/cluster.sh"

# Debian's python3-psycopg belongs to the system interpreter; a python3 earlier on PATH (pyenv,
# a virtualenv) may not have it.
python=
for candidate in python3 /usr/bin/python3; do
    if "$candidate" -c 'import psycopg' 2>/dev/null; then python=$candidate; break; fi
done
[ -n "$python" ] || { echo "FAIL: no python3 with psycopg 3 (Debian python3-psycopg, scripts/setup)"; exit 1; }

once_cluster_start fsync=off shared_preload_libraries=pg_once
trap once_cluster_stop EXIT
psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE cafe" >/dev/null
psql -qX -v ON_ERROR_STOP=1 -d cafe -f "$example/schema.sql" >/dev/null

cd "$example"
PGDATABASE=cafe CAFE_PAYMENT_IT=1 "$python" -m unittest discover -v -s tests -t .
