# Sagas: randomized CampusCafe orders (tests/integration/saga_random.sh: declined cards, sold
# out, notification outages, duplicate, out-of-order, lost, late and very late replies,
# failing compensations) while relays are killed (-9) and restarted; afterwards every saga
# is final and the cross-database invariants hold. Orders scale with the run: 300 in the
# short version, 1000 per minute of --minutes.
scenario_main() {
    local orders=300 rc=0 t0=$SECONDS
    [ $CHAOS_LONG = 1 ] && orders=$((CHAOS_SECONDS * 1000 / 60))
    CAFE_TRANSPORT=$CHAOS_TRANSPORT SAGA_RANDOM_ORDERS=$orders "$ONCE_SOURCE_DIR/tests/integration/saga_random.sh" >"$CHAOS_RUN/saga_random.log" 2>&1 || rc=$?
    local restarts resends
    restarts=$(grep -o 'with [0-9]* relay restarts' "$CHAOS_RUN/saga_random.log" | tail -1 | grep -o '[0-9]*' || echo '?')
    resends=$(grep -A2 '^resends' "$CHAOS_RUN/saga_random.log" | tr '\n' ' ' | sed 's/  */ /g')
    {
        printf '| scenario | sagas |\n'
        printf '| transport | %s |\n' "$CHAOS_TRANSPORT"
        printf '| orders placed | %s |\n' "$orders"
        printf '| faults injected | relay kill -9 or restart × %s, plus the per-order faults of saga_random |\n' "$restarts"
        printf '| saga events | %s |\n' "${resends:-?}"
        printf '| outcomes | %s |\n' "$(grep '^settled' "$CHAOS_RUN/saga_random.log" | tail -1)"
        printf '| duration | %s s |\n' "$((SECONDS - t0))"
        printf '| invariants | %s |\n' "$([ $rc = 0 ] && echo 'all hold' || echo "BROKEN (exit $rc)")"
        printf '| verdict | %s |\n' "$([ $rc = 0 ] && echo PASS || echo FAIL)"
    } | tee "$CHAOS_RESULTS/$CHAOS_RESULT_NAME.txt"
    [ $rc = 0 ] || { tail -30 "$CHAOS_RUN/saga_random.log" >&2; exit 1; }
}
