#!/usr/bin/env bash
# scripts/demo --via nats, short: CampusCafe with its four databases connected only through
# NATS JetStream (each an outbox relay to the stream and an inbound relay from it, once-relay
# --source); 40 orders over every scenario; the demo itself exits non-zero when a scenario
# ends unexpectedly or an invariant breaks.
set -euo pipefail
: "${ONCE_STAGE_DIR:?}" "${ONCE_BUILD_DIR:?}" "${ONCE_SOURCE_DIR:?}"
out=$(mktemp "${TMPDIR:-/tmp}/demo-via-nats.XXXXXX")
trap 'rm -f "$out"' EXIT
rc=0
CAFE_VIA=nats "$ONCE_SOURCE_DIR/examples/campus_cafe/demo.sh" 40 >"$out" 2>&1 || rc=$?
if [ $rc -ne 0 ] || ! grep -q "All invariants hold." "$out" || ! grep -q "starting eight relays" "$out"; then
    echo "FAIL: demo --via nats exited $rc"; tail -40 "$out"; exit 1
fi
grep -E "^ (happy|duplicates|card_declined) " "$out"
echo "demo_via_nats: OK"
