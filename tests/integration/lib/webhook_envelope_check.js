#!/usr/bin/env node
// Checks requests captured by webhook_receiver.js from an http sink with --http-body envelope,
// through the standardwebhooks library, and prints one JSON line per request:
//   id, type, key, headers, data   what the verified body says (Webhook.verify's result)
//   valid                          the request as received verifies with SECRET_FILE
//   tampered_type, tampered_key,   the body with its "type", "key" or "headers" changed
//   tampered_headers               ("pass" would mean the signature does not cover them)
//   header_topic_swapped           X-Once-Topic changed, the body kept: still verifies (the
//                                  signature covers no header but webhook-id/-timestamp);
//                                  the receiver reads the topic from the verified body
// Usage: webhook_envelope_check.js LOG SECRET_FILE
"use strict";
const fs = require("fs");
const path = require("path");
const { Webhook } = require(path.join(__dirname, "..", "node", "node_modules", "standardwebhooks"));

const [log, secretFile] = process.argv.slice(2);
const wh = new Webhook(fs.readFileSync(secretFile, "utf8").trim());
const verdict = (fn) => { try { fn(); return "pass"; } catch (e) { return "fail: " + e.message; } };

for (const line of fs.readFileSync(log, "utf8").split("\n").filter(Boolean)) {
  const r = JSON.parse(line);
  const body = Buffer.from(r.body_b64, "base64").toString("utf8");
  const h = r.headers;
  let env = null;
  const valid = verdict(() => { env = wh.verify(body, h); });
  const parsed = JSON.parse(body);
  const with_ = (k, v) => JSON.stringify({ ...parsed, [k]: v });
  console.log(JSON.stringify({
    id: env && env.id, type: env && env.type, key: env && env.key, headers: env && env.headers,
    data: env && env.data, timestamp: env && env.timestamp, x_once_topic: h["x-once-topic"],
    valid,
    tampered_type: verdict(() => wh.verify(with_("type", "payments.refund"), h)),
    tampered_key: verdict(() => wh.verify(with_("key", "someone-else"), h)),
    tampered_headers: verdict(() => wh.verify(with_("headers", { h: "forged" }), h)),
    header_topic_swapped: verdict(() => wh.verify(body, { ...h, "x-once-topic": "payments.refund" })),
  }));
}
