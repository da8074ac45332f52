#!/usr/bin/env python3
"""An upgrade script is a diff: each object is created (or replaced) at most once in it.

  tests/upgrade/created_once.py SCRIPT...

A script that defines a function, view, table, index, type or trigger twice is a log of
changes rather than a diff: squash the definitions into one before the release. Function
bodies and comments are not read (a CREATE inside a body is not one of the script's own).
A function is named with its argument types: overloads are different objects. An object
the script creates and then drops again is a step of a log too.
Prints one line per object created more than once; exits 1 if there is any.
"""
import re
import sys

KINDS = r"FUNCTION|PROCEDURE|VIEW|MATERIALIZED\s+VIEW|TABLE|UNIQUE\s+INDEX|INDEX|TYPE|TRIGGER|SEQUENCE|AGGREGATE"
CREATE = re.compile(rf"\bCREATE\s+(?:OR\s+REPLACE\s+)?({KINDS})\s+(?:IF\s+NOT\s+EXISTS\s+)?([\w.\"]+)", re.I)
MULTIWORD_TYPES = ("double", "character", "timestamp", "time", "bit")


def strip(sql):
    """The script without comments, string literals and dollar-quoted bodies."""
    out, i = [], 0
    while i < len(sql):
        if sql.startswith("--", i):
            i = sql.find("\n", i) if sql.find("\n", i) >= 0 else len(sql)
        elif sql.startswith("/*", i):
            j = sql.index("*/", i) + 2
            out.append("\n" * sql.count("\n", i, j))
            i = j
        elif sql[i] == "'":
            j = i + 1
            while True:
                j = sql.index("'", j)
                if sql.startswith("''", j):
                    j += 2
                    continue
                break
            out.append("''" + "\n" * sql.count("\n", i, j))
            i = j + 1
        elif sql[i] == "$" and re.match(r"\$\w*\$", sql[i:]):
            tag = re.match(r"\$\w*\$", sql[i:]).group(0)
            j = sql.index(tag, i + len(tag))
            out.append("$$" + "\n" * sql.count("\n", i, j))
            i = j + len(tag)
        else:
            out.append(sql[i])
            i += 1
    return "".join(out)


def argument_types(args):
    types, depth, cur = [], 0, ""
    for ch in args + ",":
        if ch == "," and depth == 0:
            a = re.sub(r"\s+DEFAULT\s+.*$|\s*=.*$", "", cur.strip(), flags=re.I | re.S)
            words = a.split()
            if words and words[0].upper() in ("IN", "OUT", "INOUT", "VARIADIC"):
                words = words[1:]
            if len(words) >= 2 and words[0].lower() not in MULTIWORD_TYPES:
                words = words[1:]
            if words:
                types.append(" ".join(words).lower())
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    return ", ".join(types)


bad = 0
for path in sys.argv[1:]:
    sql = strip(open(path, encoding="utf-8").read())
    seen = {}
    for m in CREATE.finditer(sql):
        kind, name = re.sub(r"\s+", " ", m.group(1).upper()), m.group(2).replace('"', "")
        key = (kind.replace("UNIQUE ", ""), name)
        if kind in ("FUNCTION", "PROCEDURE", "AGGREGATE"):
            rest = sql[m.end():]
            depth, end = 0, 0
            for end, ch in enumerate(rest):
                depth += ch == "("
                depth -= ch == ")"
                if depth == 0 and ch == ")":
                    break
            key = (kind, f"{name}({argument_types(rest[rest.index('(') + 1:end])})")
        line = sql.count("\n", 0, m.start()) + 1
        seen.setdefault(key, []).append(line)
    # Created, then dropped again: a step of a log, not of a diff.
    for m in re.finditer(rf"\bDROP\s+({KINDS})\s+(?:IF\s+EXISTS\s+)?([\w.\"]+)\s*(\(([^)]*)\))?", sql, re.I):
        kind, name = re.sub(r"\s+", " ", m.group(1).upper()).replace("UNIQUE ", ""), m.group(2).replace('"', "")
        if kind in ("FUNCTION", "PROCEDURE", "AGGREGATE"):
            name = f"{name}({argument_types(m.group(4) or '')})"
        line = sql.count("\n", 0, m.start()) + 1
        created = [c for c in seen.get((kind, name), []) if c < line]
        if created:
            print(f"not ok - {path}: {kind} {name} is created (line {created[0]}) and dropped again (line {line})")
            bad += 1
    for (kind, name), lines in sorted(seen.items()):
        if len(lines) > 1:
            print(f"not ok - {path}: {kind} {name} is created {len(lines)} times (lines {', '.join(map(str, lines))})")
            bad += 1
    print(f"{'ok' if not bad else 'not ok'} - {path}: {len(seen)} objects, each created once" if not bad else
          f"# {path}: {bad} objects created more than once: squash them into one definition each")
sys.exit(1 if bad else 0)
