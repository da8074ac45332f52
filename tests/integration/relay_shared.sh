#!/usr/bin/env bash
# Two relays on one database share the work: each message is published once (no lease
# expiry), both relays publish some, and per-key order holds at the receiver.
set -euo pipefail
source "$(dirname "$0")/lib/relay_common.sh"
N=${RELAY_TEST_N:-6000}

start_postgres
start_http_receiver shared
send_messages "$N" 200
P1=$(free_port); P2=$(free_port)
start_relay one --db "$SRC_DB" --sink "$HTTP_URL" --batch 50 --max-in-flight 16 --poll-interval 100ms --metrics "127.0.0.1:$P1"
start_relay two --db "$SRC_DB" --sink "$HTTP_URL" --batch 50 --max-in-flight 16 --poll-interval 100ms --metrics "127.0.0.1:$P2"
once_wait_for "all $N delivered" 240 http_has "$HTTP_LOG" "$N" || fail "$(http_count "$HTTP_LOG") delivered"
once_wait_for "outbox drained" 30 outbox_empty || fail "outbox has $(outbox_left)"
a=$(curl -sf "http://127.0.0.1:$P1/metrics" | awk '$1 == "once_relay_acked_total" {print $2}')
b=$(curl -sf "http://127.0.0.1:$P2/metrics" | awk '$1 == "once_relay_acked_total" {print $2}')
stop_relay one; stop_relay two
say "relay one acked $a, relay two acked $b"
[ "$a" -gt 0 ] && [ "$b" -gt 0 ] || fail "work not shared ($a / $b)"
[ $((a + b)) = "$N" ] || fail "acked $((a + b)) for $N messages"
total=$(jq -r .id "$HTTP_LOG" | wc -l)
[ "$total" = "$N" ] || fail "$total requests for $N messages: something was published twice"
inversions=$(jq -rs 'group_by(.key) | map(sort_by(.t) | map(.payload.n) | . as $ns | [range(1; length) | select($ns[.] < $ns[. - 1])] | length) | add' "$HTTP_LOG")
[ "$inversions" = 0 ] || fail "per-key order broken: $inversions inversions"
say "relay_shared: OK"
