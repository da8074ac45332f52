#!/usr/bin/env node
// Load for once-relay --listen-webhooks: CLIENTS kept-alive connections, each posting
// Standard Webhooks requests (signed by the standardwebhooks library, a fresh webhook-id
// each) one after another for SECONDS. Prints one JSON line: requests answered, by status,
// requests per second of 200s, and latency percentiles in ms.
//   webhook_load.js URL SECRET_FILE CLIENTS SECONDS ID_PREFIX
"use strict";
const fs = require("fs");
const http = require("http");
const path = require("path");
const { Webhook } = require(path.join(__dirname, "..", "..", "integration", "node", "node_modules", "standardwebhooks"));

const [url, secretFile, clientsArg, secondsArg, prefix] = process.argv.slice(2);
const wh = new Webhook(fs.readFileSync(secretFile, "utf8").trim().split(/\s+/)[0]);
const clients = Number(clientsArg);
const until = Date.now() + Number(secondsArg) * 1000;
const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
const statuses = {};
const latencies = [];
let seq = 0;

function one(done) {
  if (Date.now() >= until) return done();
  const id = `${prefix}-${++seq}`;
  const body = `{"id": ${seq}}`;
  const now = new Date();
  const headers = {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
    "webhook-signature": wh.sign(id, now, body),
    "content-length": Buffer.byteLength(body),
  };
  const t0 = process.hrtime.bigint();
  const req = http.request(url, { method: "POST", headers, agent }, (res) => {
    res.resume();
    res.on("end", () => {
      statuses[res.statusCode] = (statuses[res.statusCode] || 0) + 1;
      latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      one(done);
    });
  });
  req.on("error", () => { statuses.error = (statuses.error || 0) + 1; one(done); });
  req.end(body);
}

const start = Date.now();
let running = clients;
for (let i = 0; i < clients; i++) one(() => {
  if (--running > 0) return;
  const elapsed = (Date.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] : 0);
  console.log(JSON.stringify({ requests: latencies.length, statuses, rps: Math.round((statuses[200] || 0) / elapsed),
                               p50_ms: +pct(0.5).toFixed(2), p99_ms: +pct(0.99).toFixed(2) }));
  agent.destroy();
});
