#!/usr/bin/env bash
# once-console stays usable for a logged-in admin while it is attacked without a login
# (docs/security.md, "once-console"): 100 concurrent clients post wrong passwords, and 300
# connections trickle a header line every 2 s without ever finishing a request. Throughout,
# every page of the admin and every /healthz must answer within 0.5 s, and the server must
# close each slow connection within its request deadline (4 s here, plus slack). The attack
# is bounded (tests/integration/lib/console_siege.py: 15 s, at most 40 answers per guesser).
# Then: the failed logins were refused by their budget (429 with Retry-After) before any
# hashing, a login from another address still works, and the console logged each failure.
set -euo pipefail
: "${ONCE_STAGE_DIR:?}" "${ONCE_BUILD_DIR:?}" "${ONCE_SOURCE_DIR:?}"
source "$ONCE_SOURCE_DIR/tests/lib/cluster.sh"
source "$ONCE_SOURCE_DIR/tests/integration/lib/console_common.sh"
[ -x "$CONSOLE_BIN" ] || { echo "once-console is not built"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/console-attack.XXXXXX")
chmod 755 "$T"
cleanup() {
    console_stop
    once_cluster_stop
    if [ "${KEEP_TEST_DIR:-0}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
say() { echo "[$(date +%T)] $*"; }
fail() { echo "FAIL: $*" >&2; echo "--- console log (tail)" >&2; tail -20 "$T/console.log" >&2 || true; exit 1; }

console_setup "$T"
VIEWER_SECRET=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
printf 'viewer viewer %s\n' "$(printf '%s\n' "$VIEWER_SECRET" | "$CONSOLE_BIN" --hash-secret)" >>"$T/users"
# The deadline is short so that the bound is seen within the attack; the other limits are
# the defaults (16 connections per address, 10 failed logins per address and per user).
console_start "$T" "request-timeout = 4s" || fail "once-console did not start"

say "the admin logs in before the attack"
code=$(console_login_cookie admin "$ADMIN_SECRET" "$T/admin.jar")
[ "$code" = 303 ] || fail "the admin's login got HTTP $code"
session=$(awk '$6 == "once_console_session" { print $7 }' "$T/admin.jar")
[ ${#session} = 64 ] || fail "no session cookie after the admin's login"

say "attack: 100 password guessers and 300 slow clients for 15 s"
out=$(python3 "$ONCE_SOURCE_DIR/tests/integration/lib/console_siege.py" "$CONSOLE_PORT" \
      "once_console_session=$session" 15 7 0.5 2>&1) || fail "$out"
say "$out"
# Only the budget's worth of guesses got as far as a wrong password; the others were answered
# 429 (over the budget) or 503 (two logins hashing already), without hashing.
guessed=$(grep -o '[ :]401=[0-9]*' <<<"$out" | cut -d= -f2)
limited=$(grep -o ' 429=[0-9]*' <<<"$out" | cut -d= -f2)
[ -n "$limited" ] || fail "no guess was refused by the failed-login budget: $out"
[ "${guessed:-0}" -le 10 ] || fail "$guessed wrong passwords were checked, more than the budget of 10"

say "a refused login carries Retry-After; the admin's session still works"
token=$(curl -sf -c "$T/guess.jar" --interface 127.0.0.2 "$CONSOLE_URL/login" | grep -o 'name=csrf value="[0-9a-f]*"' | cut -d'"' -f2)
headers=$(curl -s -D - -o /dev/null -b "$T/guess.jar" --interface 127.0.0.2 --data "csrf=$token&user=nobody&secret=x" \
          "$CONSOLE_URL/login")
grep -q '^HTTP/1.1 429' <<<"$headers" || fail "a guess from the limited address was not refused: $headers"
grep -qi '^Retry-After: [1-9][0-9]*' <<<"$headers" || fail "429 without Retry-After: $headers"
code=$(curl -s -o /dev/null -w '%{http_code}' -b "$T/admin.jar" "$CONSOLE_URL/dead")
[ "$code" = 200 ] || fail "the admin's session got HTTP $code after the attack"
# The guessers went for "admin", whose own budget is spent too; another user from another
# address is not affected.
code=$(console_login_cookie viewer "$VIEWER_SECRET" "$T/viewer.jar")
[ "$code" = 303 ] || fail "the viewer's login got HTTP $code"
# Each checked guess was logged, once, with its address; the refused ones were not.
logged=$(grep -c 'login failed for user "admin" from 127.0.0.2' "$T/console.log" || true)
[ "$logged" = "${guessed:-0}" ] || fail "$logged failed logins logged for ${guessed:-0} checked"
say "console_under_attack: OK"
