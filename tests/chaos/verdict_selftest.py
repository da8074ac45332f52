#!/usr/bin/env python3
"""The verdict must be able to fail: records with one lost message, one duplicate effect, one
per-key order violation or an unknown message each give exit 1; clean records give 0; an
uncertain transaction that never arrived is not lost."""
import os
import subprocess
import sys
import tempfile

VERDICT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "verdict.py")


def run(effects, committed="1 1 3 chaos.a 1\n", uncertain=""):
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, "committed-1.log"), "w").write(committed)
        open(os.path.join(d, "uncertain-1.log"), "w").write(uncertain)
        open(os.path.join(d, "effects-x.tsv"), "w").write(
            "".join(f"inbox\tid{s}\t1\t{s}\tk\t100.0\t100.01\t{o}\n" for s, o in effects))
        return subprocess.run([sys.executable, VERDICT, d, "selftest", os.path.join(d, "out.txt")],
                              stdout=subprocess.DEVNULL).returncode


cases = [
    ("clean", [(1, 1), (2, 2), (3, 3)], {}, 0),
    ("lost", [(1, 1), (3, 2)], {}, 1),
    ("duplicate effect", [(1, 1), (2, 2), (2, 3), (3, 4)], {}, 1),
    ("order violation", [(1, 1), (3, 2), (2, 3)], {}, 1),
    ("unknown message", [(1, 1), (2, 2), (3, 3), (9, 4)], {}, 1),
    ("uncertain, not arrived", [(1, 1), (2, 2), (3, 3)], {"uncertain": "1 4 5 chaos.a 1\n"}, 0),
    ("uncertain, arrived", [(1, 1), (2, 2), (3, 3), (4, 4)], {"uncertain": "1 4 5 chaos.a 1\n"}, 0),
]
failed = 0
for name, effects, kw, want in cases:
    got = run(effects, **kw)
    print(f"{'ok' if got == want else 'FAIL'}: {name} (exit {got}, want {want})")
    failed += got != want
sys.exit(1 if failed else 0)
