#!/usr/bin/env python3
"""The docs against the code: every fact users look up has its row, and no row names what is gone.

  tests/docs/check_docs.py SOURCE_DIR RELAY_BIN CONSOLE_BIN

- SQLSTATEs: every ONxxx code of the registry (extension/src/core/sqlstates.def) has a row in
  README.md's SQLSTATE table with the same HTTP status, and every ONxxx that a doc, the SQL or
  the code names is in the registry.
- Options: every option of `once-relay --help` has its row in docs/relay.md's option table,
  every option of `once-console --help` in docs/console.md's, and every row names a real one.
- Settings: every once.* setting the extension defines (extension/src/pg/common/settings.cpp) has its
  row in docs/settings.md, that table names no other, and no other page has a settings table.
- Tests: every integration test (tests/integration/*.sh) and chaos scenario
  (tests/chaos/scenarios/*.sh) is described in docs/tests.md, and docs/tests.md names no
  test that is gone.
- Metrics are checked by tests/monitoring/check.sh (every exported metric is in docs/relay.md).
Prints TAP-like `ok` / `not ok` lines; exits 1 on any `not ok`.
"""
import glob
import os
import re
import subprocess
import sys

root, relay_bin, console_bin = sys.argv[1:4]
bad = 0


def check(ok, what):
    global bad
    print(("ok - " if ok else "not ok - ") + what)
    if not ok:
        bad += 1


def read(path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read()


docs = {p: read(p) for p in ["README.md"] + sorted(os.path.relpath(p, root) for p in glob.glob(f"{root}/docs/**/*.md", recursive=True))}

# --- SQLSTATEs: extension/src/core/sqlstates.def is the registry
registry = {m[1]: (m[0], int(m[2])) for m in re.findall(
    r'^ONCE_ERROR\((\w+),\s*"(\w{5})",\s*(\d+)\)', read("extension/src/core/sqlstates.def"), re.M)}
raised = {code for code in registry if code.startswith("ON")}
check(len(raised) >= 30, f"{len(raised)} pg_once SQLSTATEs in sqlstates.def")
table = dict(re.findall(r"^\| `(ON\d{3})` \|.*\| (\d{3}) \|$", docs["README.md"], re.M))
for code in sorted(raised - set(table)):
    check(False, f"{code} is in sqlstates.def but has no row in README.md's SQLSTATE table")
for code, http in sorted(table.items()):
    if code not in raised:
        check(False, f"README.md's SQLSTATE table has {code}, which sqlstates.def lacks")
    elif int(http) != registry[code][1]:
        check(False, f"README.md gives {code} HTTP {http}, sqlstates.def {registry[code][1]}")
# Every ON code named anywhere (docs, SQL, code) is a registered one.
named_in = dict(docs)
for pattern in ["sql/src/*.sql", "extension/src/**/*.cpp", "extension/src/**/*.hpp", "daemon/**/*.cpp", "daemon/**/*.hpp"]:
    for p in glob.glob(f"{root}/{pattern}", recursive=True):
        named_in[os.path.relpath(p, root)] = open(p, encoding="utf-8").read()
for path, text in sorted(named_in.items()):
    for code in sorted(set(re.findall(r"\b(ON\d{3})\b", text)) - raised):
        check(False, f"{path} names SQLSTATE {code}, which sqlstates.def lacks")
check(True, f"{len(raised)} SQLSTATEs: each has its README row with its HTTP status, every named one exists")


# --- daemon options
def options_of(binary):
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30).stdout
    return set(re.findall(r"^\s+(?:-\w \[ )?--([a-z][a-z0-9-]*)", out, re.M))


for name, binary, page in [("once-relay", relay_bin, "docs/relay.md"), ("once-console", console_bin, "docs/console.md")]:
    opts = options_of(binary)
    check(len(opts) >= 8, f"{name} --help lists {len(opts)} options")
    # The page's option table: rows that start with `--option`, one or more per row.
    rows = re.findall(r"^\| (`--[^|]*)\|", docs[page], re.M)
    documented = {o for row in rows for o in re.findall(r"`--([a-z][a-z0-9-]*)", row)}
    for o in sorted(opts - documented):
        check(False, f"{name} option --{o} has no row in {page}'s option table")
    for o in sorted(documented - opts):
        check(False, f"{page}'s option table has --{o}, which {name} does not have")
    check(True, f"{name}: {len(opts)} options checked against {page}")

# --- GUCs
settings_cpp = read("extension/src/pg/common/settings.cpp")
gucs = set(re.findall(r'Define\w+Variable\(\s*"(once\.[a-z_]+)"', settings_cpp))
check(len(gucs) >= 5, f"{len(gucs)} once.* settings defined in settings.cpp")
rows = set(re.findall(r"^\| `(once\.[a-z_]+)` \|", docs["docs/settings.md"], re.M))
for g in sorted(gucs - rows):
    check(False, f"setting {g} has no row in docs/settings.md")
for g in sorted(rows - gucs):
    check(False, f"docs/settings.md has a row for {g}, which the extension does not define")
# (no second settings table elsewhere: a GUC's row lives in settings.md only)
for path, text in docs.items():
    if path != "docs/settings.md":
        for g in sorted(set(re.findall(r"^\| `(once\.[a-z_]+)` \|", text, re.M)) & gucs):
            check(False, f"{path} has a table row for setting {g}: its one home is docs/settings.md")
check(True, f"{len(gucs)} settings checked against the docs' tables")

# --- tests: docs/tests.md describes each integration test and chaos scenario
tests_md = docs["docs/tests.md"]
scripts = {os.path.basename(p)[:-3] for p in glob.glob(f"{root}/tests/integration/*.sh")}
scenarios = {os.path.basename(p)[:-3] for p in glob.glob(f"{root}/tests/chaos/scenarios/*.sh")}
for name in sorted(scripts | scenarios):
    if not re.search(rf"`(?:integration_|chaos_)?{re.escape(name)}(?:\.sh)?`", tests_md):
        check(False, f"test {name} is not described in docs/tests.md")
check(True, f"{len(scripts)} integration tests and {len(scenarios)} chaos scenarios checked against docs/tests.md")

sys.exit(1 if bad else 0)
