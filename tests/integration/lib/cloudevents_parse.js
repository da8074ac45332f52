#!/usr/bin/env node
// Reads stored NATS messages (nats_stream_get.py's JSON, one per line on stdin) and parses
// each with the CloudEvents JavaScript SDK. The SDK has no NATS binding; the NATS binding's
// binary mode uses the same ce-<attribute> header names as HTTP's, so the message's headers
// go through HTTP.toEvent (binary mode: ce-specversion present) and event.validate().
// Prints one JSON line per message: the event's attributes and data, or {"error": ...}.
"use strict";
const path = require("path");
const { HTTP } = require(path.join(__dirname, "..", "node", "node_modules", "cloudevents"));

let input = "";
process.stdin.on("data", (c) => (input += c));
process.stdin.on("end", () => {
  for (const line of input.split("\n").filter(Boolean)) {
    const m = JSON.parse(line);
    const headers = {};
    for (const [k, v] of m.headers) headers[k.toLowerCase()] = v;
    try {
      const ev = HTTP.toEvent({ headers, body: m.data });
      ev.validate();
      console.log(JSON.stringify(ev));
    } catch (e) {
      console.log(JSON.stringify({ error: String(e.message || e), detail: e.errors || null, headers }));
    }
  }
});
