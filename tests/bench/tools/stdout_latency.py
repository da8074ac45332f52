#!/usr/bin/env python3
"""Reads once-relay stdout-sink JSON lines whose payload carries "t" (epoch seconds taken in
the producing transaction) and prints "count p50_ms p99_ms p99.9_ms" at EOF."""
import json, sys, time
lat = []
for line in sys.stdin:
    now = time.time()
    try:
        t = json.loads(line)["payload"]["t"]
    except (ValueError, KeyError, TypeError):
        continue
    lat.append((now - float(t)) * 1000)
lat.sort()
if not lat:
    print("0 0 0 0")
else:
    print(len(lat), "%.2f" % lat[len(lat) // 2], "%.2f" % lat[len(lat) * 99 // 100],
          "%.2f" % lat[len(lat) * 999 // 1000])
