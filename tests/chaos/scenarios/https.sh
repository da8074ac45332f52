# HTTPS: the idempotent receiver serves TLS with a certificate from a CA this test makes with
# openssl; the relays verify it. They trust the test CA the way a deployment trusts a private
# CA, through the system bundle: each relay runs in its own mount namespace where
# /etc/ssl/certs/ca-certificates.crt is the test CA (nothing on the machine changes). First a
# relay without the CA must refuse the receiver. Faults, in turn: a 503 storm with
# Retry-After, answers slower than the lease, connection resets, and a receiver that records
# the effect and dies before its 200 leaves (the relay sends again; the restarted receiver
# absorbs the duplicate by its Idempotency-Key).

https_make_ca() {
    local d=$CHAOS_RUN/tls
    mkdir -p "$d"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=pg_once chaos test CA" \
        -keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$d/server.key" -out "$d/server.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$d/ext.cnf"
    openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
        -extfile "$d/ext.cnf" -out "$d/server.pem" 2>/dev/null
    chmod 644 "$d"/*
    TLS_DIR=$d
}

https_start_relay() {
    start_relay "$1" --db "$SRC_DB" --sink "$HTTPS_URL" --lease 2s --sink-timeout 10s --batch 100 \
        --max-in-flight 32 --poll-interval 100ms --reconnect-max 1s
}

https_receiver_down() { ! chaos_receiver_alive web; }
HTTPS_PHASE=0
https_fault() {
    case $((HTTPS_PHASE % 4)) in
        0) chaos_receiver_mode web storm503 1; chaos_fault "503 storm (Retry-After: 1)" ;;
        1) chaos_receiver_mode web slow 3; chaos_fault "answers 3 s late (lease 2 s)" ;;
        2) chaos_receiver_mode web reset 0.3; chaos_fault "connection resets (30% for 3 s)" ;;
        3) chaos_receiver_mode web die_after_record
           once_wait_for "receiver to die after recording" 30 https_receiver_down || fail "receiver did not die"
           chaos_receiver_mode web normal
           chaos_receiver_start web --cert "$TLS_DIR/server.pem" --key "$TLS_DIR/server.key"
           chaos_fault "receiver died after recording, before its 200" ;;
    esac
    HTTPS_PHASE=$((HTTPS_PHASE + 1))
}
https_calm() { chaos_receiver_mode web normal; }

https_request_facts() {
    local log=$CHAOS_RUN/requests-web.log
    chaos_fact "HTTP requests: 200 / 503 / reset" "$(awk '$1 == 200' "$log" | wc -l) / $(awk '$1 == 503' "$log" | wc -l) / $(awk '$1 == "reset"' "$log" | wc -l)"
    chaos_fact "redeliveries absorbed by Idempotency-Key" "$(awk '$1 == 200 && $3 == 1' "$log" | wc -l)"
}

scenario_main() {
    start_postgres
    https_make_ca
    chaos_receiver_start web --cert "$TLS_DIR/server.pem" --key "$TLS_DIR/server.key"
    HTTPS_URL="https://127.0.0.1:$RECEIVER_PORT_web/hook"
    # the relay verifies: without the test CA it refuses the receiver
    if "${RELAY_AS[@]}" "$RELAY_BIN" --db "$SRC_DB" --sink "$HTTPS_URL" --check-config >"$CHAOS_RUN/no-ca.log" 2>&1; then
        fail "the relay accepted a certificate from an unknown CA"
    fi
    grep -qi "certificate" "$CHAOS_RUN/no-ca.log" || fail "no certificate error without the CA: $(cat "$CHAOS_RUN/no-ca.log")"
    # shellcheck disable=SC2016 # $0 and $@ belong to the inner shell
    RELAY_WRAP=(unshare --mount --propagation private sh -c 'mount --bind "$0" /etc/ssl/certs/ca-certificates.crt && exec "$@"' "$TLS_DIR/ca.pem")
    CHAOS_TOPICS=(chaos.h.orders chaos.h.mail chaos.h.stock)
    # A webhook's retry policy: backoff capped at 15 s. With the default cap (1 h) a message
    # that met ten faults in the 10-minute run waits minutes for its next attempt, longer
    # than the drain window (measured: 135 of 22k still waiting 180 s after the load).
    psql -X -q -v ON_ERROR_STOP=1 -d "$SRC_DB" -c \
        "SELECT once.topic_policy(t, backoff_max => '15 seconds') FROM unnest(string_to_array('${CHAOS_TOPICS[*]}', ' ')) t(t)" >/dev/null
    https_start_relay web1; https_start_relay web2
    CHAOS_COLLECTORS=()
    chaos_load "$SRC_DB"
    # each fault lasts 3 s, then 2 s calm
    https_cycle() { https_fault; local until=$((SECONDS + 3)); while (( SECONDS < until )); do sleep 0.2; done; https_calm; }
    chaos_during_load https_cycle 2
    CHAOS_AFTER_DRAIN=(https_request_facts)
    chaos_finish 180
}
