#!/usr/bin/env bash
# The idempotency demo: a payment API whose clients retry. Shows once.run absorbing retries and
# concurrent duplicates, refusing a reused key with another body, and once.key_* recovering a
# payment whose worker crashed halfway (lease takeover resumes from the checkpoint).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
export ONCE_STAGE_DIR=$root/build/stage
source "$root/tests/lib/cluster.sh"
once_cluster_start
trap once_cluster_stop EXIT
q() { psql -qX -v ON_ERROR_STOP=1 -d postgres "$@"; }

q -f "$root/examples/idempotency/schema.sql" >/dev/null
say() { printf '\n\033[1m%s\033[0m\n' "$*"; }

say "1. POST /payments with Idempotency-Key: order-17 — the client times out and retries twice"
for attempt in 1 2 3; do
    q -tA -c "SELECT format('attempt %s: replayed=%s response=%s', $attempt, replayed, response)
              FROM api.post_payment('order-17', '{\"amount\": 450, \"currency\": \"JPY\", \"card\": \"tok_visa\"}')"
done
q -tA -c "SELECT format('charges in the ledger for order-17: %s', count(*)) FROM api.charges WHERE order_ref = 'order-17'"

say "2. The same key with a different body is refused (SQLSTATE ON102 -> HTTP 422)"
q -tA -c "SELECT api.post_payment('order-17', '{\"amount\": 9999, \"currency\": \"JPY\", \"card\": \"tok_visa\"}')" 2>&1 |
    sed 's/^/  /' || true

say "3. Ten concurrent duplicates of order-18 (a double-clicked button, a retrying proxy)"
for i in $(seq 1 10); do
    q -tA -c "SELECT response FROM api.post_payment('order-18', '{\"amount\": 300, \"currency\": \"JPY\", \"card\": \"tok_visa\"}')" &
done
wait
q -tA -c "SELECT format('charges in the ledger for order-18: %s', count(*)) FROM api.charges WHERE order_ref = 'order-18'"

say "4. Work with outside side effects: a worker acquires order-19, charges the card, checkpoints, then crashes"
q -tA -c "SELECT format('worker A: %s (attempt %s)', state, attempt) FROM once.key_acquire('payments', 'order-19', '{\"amount\": 800}', lease => '1 second')"
q -tA -c "SELECT once.key_checkpoint('payments', 'order-19', 'card_charged', '{\"charge_id\": \"ch_19\"}', attempt => 1)" >/dev/null
echo "worker A recorded checkpoint card_charged (charge ch_19) and died before completing"
q -tA -c "SELECT format('a retry while A''s lease runs: %s', state) FROM once.key_acquire('payments', 'order-19', '{\"amount\": 800}')"
lease_expired() { test "$(q -tA -c "SELECT locked_until < now() FROM once.keys WHERE key = 'order-19'")" = t; }
once_wait_for "worker A's lease to expire" 10 lease_expired
q -tA -c "SELECT format('worker B: %s (attempt %s), resumes after %s with %s', state, attempt, recovery_point, checkpoint)
          FROM once.key_acquire('payments', 'order-19', '{\"amount\": 800}')"
echo "worker B skips the charge (already done: ch_19), sends the receipt, completes"
q -tA -c "SELECT once.key_complete('payments', 'order-19', '{\"status\": \"paid\", \"charge_id\": \"ch_19\"}', 201, attempt => 2)" >/dev/null
q -tA -c "SELECT once.key_complete('payments', 'order-19', '{}', 200, attempt => 1)" 2>&1 | head -1 | sed 's/^/worker A, late: /' || true
q -tA -c "SELECT format('a later retry: %s, status %s, %s', state, status, response) FROM once.key_acquire('payments', 'order-19', '{\"amount\": 800}')"

say "Summary"
q -tA -c "SELECT format('%s keys stored, %s charges in the ledger, every order charged once: %s',
                 (SELECT count(*) FROM once.keys), (SELECT count(*) FROM api.charges),
                 (SELECT bool_and(n = 1) FROM (SELECT count(*) n FROM api.charges GROUP BY order_ref) c))"
