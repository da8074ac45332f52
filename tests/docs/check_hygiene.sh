#!/usr/bin/env bash
# Source, SQL, test and documentation files explain themselves: no line cites an issue or a
# review finding by number ("issue 20", "issue #20", "finding 5", "findings 7 and 9", "(#20)"),
# which a reader of the repository cannot follow. The history behind a change belongs in CHANGELOG.md.
# Not checked: CHANGELOG.md and other changelogs, the dated diaries of docs/measurements/,
# node_modules, and the released scripts sql/pg_once--0.1.sql, --0.2.sql and --0.1--0.2.sql, which must stay
# byte for byte as released; and this script, which spells out the forms it looks for.
# Prints each offending line as file:line:text; exits 1 if any.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

pattern='\bissues? ?#?[0-9]+|\bfindings? #?[0-9]+|\(#[0-9]+\)'

# The pattern itself, on lines it must flag and lines it must not: a check that flags nothing
# because its pattern broke would pass for ever.
must_flag=('-- Who may start (issue 20, finding 5).' '# Issue 23, item 3: CloudEvents'
           '// a frozen relay (issue #20, item 3)' '-- findings 7 and 9' '// see (#42)'
           "-- issue 11's reproduction" '-- the squat of finding 5')
must_pass=('// RFC 9110 section 5.6.2: token = 1*tchar.' '-- an issued token lives 5 minutes'
           '# the issuer 3 times' "SELECT data #>> '{a}' FROM t" '-- no finding at all')
for line in "${must_flag[@]}"; do
    grep -qiE -- "$pattern" <<<"$line" || { echo "check_hygiene: pattern misses: $line" >&2; exit 2; }
done
for line in "${must_pass[@]}"; do
    if grep -qiE -- "$pattern" <<<"$line"; then echo "check_hygiene: pattern flags: $line" >&2; exit 2; fi
done

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    list_files() { git ls-files --cached --others --exclude-standard; }
else
    list_files() { find . -type f -not -path './.git/*' -not -path '*/build*/*' | sed 's|^\./||'; }
fi

offending=$(list_files \
    | grep -vE '(^|/)node_modules/' \
    | grep -vE '^docs/measurements/|^CHANGELOG\.md$|(^|/)changelog$' \
    | grep -vxE 'sql/pg_once--0\.1\.sql|sql/pg_once--0\.2\.sql|sql/pg_once--0\.1--0\.2\.sql' \
    | grep -vxF 'tests/docs/check_hygiene.sh' \
    | while IFS= read -r f; do [[ -f $f ]] && printf '%s\0' "$f"; done \
    | xargs -0 -r grep -nIiE -- "$pattern" || true)

if [[ -n $offending ]]; then
    echo "Lines that cite an issue or finding number (say what the code does and why instead;" \
         "the history goes in CHANGELOG.md):"
    echo "$offending"
    echo "check_hygiene: $(wc -l <<<"$offending") offending line(s)"
    exit 1
fi
echo "check_hygiene: no issue or finding numbers in source, SQL or test files"
