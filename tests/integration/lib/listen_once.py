#!/usr/bin/env python3
"""LISTENs on a channel: writes "listening" to READY_FILE once it listens, then counts the
notifications that arrive within SECONDS and prints the count.
Usage: listen_once.py CONNINFO CHANNEL READY_FILE SECONDS"""
import select, sys, time
import psycopg

conninfo, channel, ready_file, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
got = []
conn = psycopg.connect(conninfo, autocommit=True)
conn.add_notify_handler(lambda n: got.append(n.payload))
conn.execute(f'LISTEN "{channel}"')
with open(ready_file, "w") as f:
    f.write("listening\n")
deadline = time.monotonic() + seconds
while time.monotonic() < deadline and not got:
    if select.select([conn.fileno()], [], [], max(0.0, deadline - time.monotonic()))[0]:
        conn.execute("SELECT 1")   # reads the pending input, which runs the handler
print(len(got))
