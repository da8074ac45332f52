#!/usr/bin/env bash
# once-console's log cannot be forged through what clients send (docs/security.md): a login
# whose user name carries a newline and a made-up log line writes exactly one line to the log,
# with the newline escaped, and no line that looks like the forged login.
set -euo pipefail
: "${ONCE_STAGE_DIR:?}" "${ONCE_BUILD_DIR:?}" "${ONCE_SOURCE_DIR:?}"
source "$ONCE_SOURCE_DIR/tests/lib/cluster.sh"
source "$ONCE_SOURCE_DIR/tests/integration/lib/console_common.sh"
[ -x "$CONSOLE_BIN" ] || { echo "once-console is not built"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/console-log.XXXXXX")
chmod 755 "$T"
cleanup() {
    console_stop
    once_cluster_stop
    if [ "${KEEP_TEST_DIR:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
say() { echo "[$(date +%T)] $*"; }
fail() { echo "FAIL: $*" >&2; echo "--- console log" >&2; cat -A "$T/console.log" >&2 || true; exit 1; }

console_setup "$T"
console_start "$T" "log-level = info" || fail "once-console did not start"

say "a login whose user name forges a log line"
before=$(wc -l <"$T/console.log")
code=$(console_login_cookie $'mallory\ninfo: login: admin1 (admin)\r\t\x1b[2K' wrong-password "$T/jar")
[ "$code" = 401 ] || fail "the forged login got HTTP $code"
# The warning is written before the answer, and flushed at once (flush_on warn and above).
after=$(wc -l <"$T/console.log")
[ $((after - before)) = 1 ] || fail "the failed login wrote $((after - before)) lines, not 1"
line=$(tail -n 1 "$T/console.log")
grep -qF 'login failed for user "mallory\ninfo: login: admin1 (admin)\r\t\x1b[2K" from 127.0.0.1' <<<"$line" ||
    fail "unexpected log line: $line"
! grep -q '^\(.* \)\?info: login: admin1' "$T/console.log" || fail "the forged line is in the log"
! grep -q $'\x1b' "$T/console.log" || fail "an escape character reached the log"

say "an ordinary login is logged as before"
code=$(console_login_cookie admin "$ADMIN_SECRET" "$T/jar")
[ "$code" = 303 ] || fail "the admin's login got HTTP $code"
grep -q 'info: login: admin (admin)$' "$T/console.log" || fail "the admin's login is not logged"
say "console_log_injection: OK"
