#!/usr/bin/env python3
"""Stands in for systemd's NOTIFY_SOCKET: appends every sd_notify datagram to a file."""
import os, socket, sys
path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
os.chmod(path, 0o777)
with open(out, "a", buffering=1) as f:
    while True:
        f.write(s.recv(4096).decode(errors="replace").replace("\n", " ") + "\n")
