#!/usr/bin/env python3
"""Reads once-relay stdout-sink JSON lines whose payload carries "t" (epoch seconds taken in
the producing transaction) and prints "count p50_ms p99_ms p99.9_ms" at EOF. With a file
argument, it also writes there one line per message: "arrival_epoch latency_ms"."""
import json, sys, time
arrivals = open(sys.argv[1], "w") if len(sys.argv) > 1 else None
lat = []
for line in sys.stdin:
    now = time.time()
    try:
        t = json.loads(line)["payload"]["t"]
    except (ValueError, KeyError, TypeError):
        continue
    ms = (now - float(t)) * 1000
    lat.append(ms)
    if arrivals:
        arrivals.write("%.6f %.3f\n" % (now, ms))
if arrivals:
    arrivals.close()
lat.sort()
if not lat:
    print("0 0 0 0")
else:
    print(len(lat), "%.2f" % lat[len(lat) // 2], "%.2f" % lat[len(lat) * 99 // 100],
          "%.2f" % lat[len(lat) * 999 // 1000])
