#!/usr/bin/env bash
# The shipped monitoring files (packaging/monitoring): the alert rules pass promtool's check
# and their unit tests; the dashboard is valid JSON; every metric the rules and the dashboard
# query is one once-relay or once-console exports, and every exported metric is listed in the docs.
# Exported = the metric names in the relay's source (metrics.cpp, outbox_gauges.cpp,
# inbound/inbound_metrics.cpp), or, with
# an argument, the names in that file of a real relay's /metrics output (relay_outage_logs.sh).
# (plus the once_wal_* names of the source, which only a --transport wal relay renders).
# once-console's /metrics (the database's view: once_db_*, daemon/console/db_metrics.cpp)
# counts as exported too; its metrics are listed in docs/console.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
mon=$root/packaging/monitoring
promtool check rules "$mon/once-relay-alerts.yml"
(cd "$mon" && promtool test rules once-relay-alerts.test.yml)
python3 - "$root" "${1:-}" <<'PY'
import json, re, sys
root, scraped = sys.argv[1], sys.argv[2]
name = re.compile(r'\bonce_[a-z_]+\b')
if scraped:
    exported = {l.split()[2] for l in open(scraped) if l.startswith('# TYPE ')}
    types = {l.split()[2]: l.split()[3] for l in open(scraped) if l.startswith('# TYPE ')}
    # The WAL transport's gauges are rendered only by a relay with --transport wal; a scraped
    # table-transport relay lacks them, so they are taken from the source.
    exported |= set(re.findall(r'"(once_wal_[a-z_]+)', open(f'{root}/daemon/relay/metrics.cpp').read()))
else:
    src = (open(f'{root}/daemon/relay/metrics.cpp').read() + open(f'{root}/daemon/relay/outbox_gauges.cpp').read()
           + open(f'{root}/daemon/relay/inbound/inbound_metrics.cpp').read())
    exported = set(re.findall(r'"(once_[a-z_]+)', src)) - {'once_relay_publish_latency_seconds_bucket'}
    types = {n: 'histogram' for n in exported if n == 'once_relay_publish_latency_seconds'}
console = set(re.findall(r'"(once_db_[a-z_]+)', open(f'{root}/daemon/console/db_metrics.cpp').read()))
assert len(console) >= 10, f'too few console metrics found: {sorted(console)}'
exported |= console
def base(n):
    for suffix in ('_bucket', '_sum', '_count'):
        if n.endswith(suffix) and types.get(n[:-len(suffix)]) == 'histogram':
            return n[:-len(suffix)]
    return n
assert len(exported) >= 20, f'too few metrics found: {sorted(exported)}'
dash = json.load(open(f'{root}/packaging/monitoring/once-relay-dashboard.json'))
exprs = [t['expr'] for p in dash['panels'] for t in p.get('targets', [])]
assert exprs, 'the dashboard queries nothing'
rules = open(f'{root}/packaging/monitoring/once-relay-alerts.yml').read()
rule_exprs = re.findall(r'expr: \|?\n?((?:.*\n)*?)\s+(?:for|labels):', rules)
bad = 0
for where, text in [('dashboard', '\n'.join(exprs)), ('alert rules', '\n'.join(rule_exprs))]:
    used = {base(n) for n in name.findall(text)}
    for n in sorted(used - exported):
        print(f'not ok - the {where} query {n}, which neither the relay nor the console exports'); bad += 1
    print(f'ok - the {where} query {len(used)} metrics, all exported')
docs = {'relay': open(f'{root}/docs/relay.md').read(), 'console': open(f'{root}/docs/console.md').read()}
for n in sorted(exported):
    page = 'console' if n in console else 'relay'
    if f'`{n}' not in docs[page]:
        print(f'not ok - {n} is not in docs/{page}.md'); bad += 1
print(f'ok - {len(exported)} exported metrics checked against docs/relay.md and docs/console.md')
sys.exit(1 if bad else 0)
PY
echo "monitoring: OK"
