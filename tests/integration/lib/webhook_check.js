#!/usr/bin/env node
// Replays requests captured by webhook_receiver.js through the standardwebhooks library and
// prints one line per check: "<check> <pass|fail: reason>". Checks, for each captured request:
//   valid          the request as received verifies with SECRET_FILE
//   tampered-body  one byte of the body changed
//   tampered-ts    webhook-timestamp moved by one second, the signature kept
//   replayed-late  the unchanged request verified 10 minutes after it was sent
//   wrong-secret   verified with WRONG_SECRET_FILE
// Usage: webhook_check.js LOG SECRET_FILE WRONG_SECRET_FILE
"use strict";
const fs = require("fs");
const path = require("path");
const { Webhook } = require(path.join(__dirname, "..", "node", "node_modules", "standardwebhooks"));

const [log, secretFile, wrongFile] = process.argv.slice(2);
const good = new Webhook(fs.readFileSync(secretFile, "utf8").trim());
const wrong = new Webhook(fs.readFileSync(wrongFile, "utf8").trim());
const verdict = (fn) => { try { fn(); return "pass"; } catch (e) { return "fail: " + e.message; } };

for (const line of fs.readFileSync(log, "utf8").split("\n").filter(Boolean)) {
  const r = JSON.parse(line);
  const body = Buffer.from(r.body_b64, "base64").toString("utf8");
  const h = r.headers;
  const tampered = body.replace(/\d/, (d) => String((Number(d) + 1) % 10));
  const realNow = Date.now;
  const out = {
    valid: verdict(() => good.verify(body, h)),
    "tampered-body": tampered === body ? "fail: nothing to tamper" : verdict(() => good.verify(tampered, h)),
    "tampered-ts": verdict(() => good.verify(body, { ...h, "webhook-timestamp": String(Number(h["webhook-timestamp"]) + 1) })),
    "replayed-late": (() => {
      const sent = Number(h["webhook-timestamp"]) * 1000;
      Date.now = () => sent + 10 * 60 * 1000;
      try { return verdict(() => good.verify(body, h)); } finally { Date.now = realNow; }
    })(),
    "wrong-secret": verdict(() => wrong.verify(body, h)),
  };
  for (const [k, v] of Object.entries(out)) console.log(`${r.id} ${k} ${v}`);
}
