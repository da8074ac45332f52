#!/usr/bin/env python3
"""The chaos suite's verdict, from the producers' and the receivers' own records.

    verdict.py RUN_DIR SCENARIO RESULT_FILE

RUN_DIR holds:
  committed-*.log   "producer first last topic keyed": a transaction whose COMMIT returned OK
  uncertain-*.log   same, for a transaction whose outcome the producer could not see (the
                    connection died around COMMIT): it may or may not have been committed
  effects-*.tsv     one line per effect at a receiver:
                    sink  message_id  producer  seq  key  t_sent  t_effect  order
  facts.txt         "name<TAB>value" lines reported as they are (faults, RSS, outbox size, ...)

Checks: every committed message has an effect (lost otherwise); no message (producer, seq)
and no message id has two effects (duplicate effects); per key, the first effects come in
sequence order within each sink (order violations); an effect of a message nobody sent is
counted as foreign. Prints one table, writes it to RESULT_FILE, exits 1 on any loss,
duplicate, order violation or foreign effect.
"""
import glob
import os
import sys
from collections import defaultdict


def ranges(pattern):
    out = []
    for path in glob.glob(pattern):
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3:
                    out.append((int(parts[0]), int(parts[1]), int(parts[2])))
    return out


def pct(sorted_values, q):
    if not sorted_values:
        return float("nan")
    i = min(len(sorted_values) - 1, max(0, int(round(q * (len(sorted_values) - 1)))))
    return sorted_values[i]


def main():
    run_dir, scenario, result_file = sys.argv[1], sys.argv[2], sys.argv[3]
    committed = set()
    for p, lo, hi in ranges(os.path.join(run_dir, "committed-*.log")):
        committed.update((p, s) for s in range(lo, hi + 1))
    uncertain = set()
    for p, lo, hi in ranges(os.path.join(run_dir, "uncertain-*.log")):
        uncertain.update((p, s) for s in range(lo, hi + 1))

    effects = defaultdict(list)        # (p, s) -> [(sink, order, key, t_sent, t_effect)]
    by_id = defaultdict(int)
    sinks = defaultdict(int)
    for path in sorted(glob.glob(os.path.join(run_dir, "effects-*.tsv"))):
        with open(path) as f:
            for line in f:
                cols = line.rstrip("\n").split("\t")
                if len(cols) < 8 or cols[2] in ("None", ""):
                    continue
                sink, mid, p, s, key, t_sent, t_eff, order = cols[:8]
                effects[(int(p), int(s))].append((sink, int(order), key, float(t_sent), float(t_eff)))
                by_id[(sink, mid)] += 1
                sinks[sink] += 1

    lost = sorted(m for m in committed if m not in effects)
    duplicates = sum(len(v) - 1 for v in effects.values() if len(v) > 1)
    duplicate_ids = sum(n - 1 for n in by_id.values() if n > 1)
    foreign = sum(1 for m in effects if m not in committed and m not in uncertain)
    uncertain_arrived = sum(1 for m in uncertain if m in effects)

    # per-key order: within a sink, a key's first effects sorted by the sink's own order
    per_key = defaultdict(list)
    latencies = []
    for (p, s), evs in effects.items():
        sink, order, key, t_sent, t_eff = min(evs, key=lambda e: (e[1], e[4]))
        latencies.append(max(0.0, t_eff - t_sent))
        if key:
            per_key[(sink, key)].append((order, s))
    violations = 0
    for evs in per_key.values():
        evs.sort()
        last = -1
        for _, s in evs:
            if s < last:
                violations += 1
            last = max(last, s)
    latencies.sort()

    facts = []
    facts_path = os.path.join(run_dir, "facts.txt")
    if os.path.exists(facts_path):
        with open(facts_path) as f:
            facts = [tuple(line.rstrip("\n").split("\t", 1)) for line in f if "\t" in line]

    rows = [
        ("scenario", scenario),
        ("messages sent (committed)", str(len(committed))),
        ("  outcome unknown to the producer", f"{len(uncertain)} ({uncertain_arrived} of them arrived)"),
        ("delivered (first effects)", f"{len(effects)}  [" + ", ".join(f"{k} {v}" for k, v in sorted(sinks.items())) + "]"),
        ("lost", str(len(lost))),
        ("duplicate effects", str(duplicates + duplicate_ids)),
        ("order violations (per key)", str(violations)),
        ("effects of unknown messages", str(foreign)),
        ("delivery latency p50 / p99", f"{pct(latencies, 0.5) * 1000:.1f} ms / {pct(latencies, 0.99) * 1000:.1f} ms"),
    ] + [(k, v) for k, v in facts]
    width = max(len(k) for k, _ in rows)
    table = "\n".join(f"| {k.ljust(width)} | {v} |" for k, v in rows)
    ok = not lost and duplicates == 0 and duplicate_ids == 0 and violations == 0 and foreign == 0
    verdict = "PASS" if ok else "FAIL"
    text = f"{table}\n| {'verdict'.ljust(width)} | {verdict} |\n"
    if lost:
        text += "first lost (producer, seq): " + " ".join(f"{p}:{s}" for p, s in lost[:20]) + "\n"
    print(text, end="")
    os.makedirs(os.path.dirname(os.path.abspath(result_file)), exist_ok=True)
    with open(result_file, "w") as f:
        f.write(text)
    sys.exit(0 if ok else 1)


main()
