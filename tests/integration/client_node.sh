#!/usr/bin/env bash
# The node-postgres example (examples/clients/node): POST /payments with an Idempotency-Key on
# once.key_acquire/checkpoint/complete. Installs its npm dependencies with `npm ci` (from the
# committed package-lock.json), then runs its tests with node's built-in test runner against a
# throwaway cluster: SQLSTATE -> HTTP mapping checked against README.md; 20 concurrent
# retries of one request (one charge, 409 while in progress, then the same response); a
# kill -9 right after the checkpoint (the retry resumes, the card is charged once); 422 on a
# reused key with another body; a stored decline; a released key after a provider outage.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
example=$(cd "$here/../../examples/clients/node" && pwd)
source "$here/../lib/cluster.sh"

command -v node >/dev/null && command -v npm >/dev/null || { echo "FAIL: node and npm are needed (scripts/setup)"; exit 1; }
once_cluster_start fsync=off
trap once_cluster_stop EXIT

psql -qX -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE payments" >/dev/null
psql -qX -v ON_ERROR_STOP=1 -d payments -f "$example/schema.sql" >/dev/null

(cd "$example" && npm ci --no-audit --no-fund --loglevel=error)
cd "$example"
PGDATABASE=payments PAYMENTS_IT=1 node --test test/*.test.js
