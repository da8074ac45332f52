#!/usr/bin/env node
// Sends one webhook to once-relay --listen-webhooks, signed by the Standard Webhooks reference
// library (standardwebhooks) and, for CloudEvents, built by the CloudEvents SDK (cloudevents),
// both from tests/integration/node. Prints one JSON line: {"status", "body", "retry_after"}.
//
//   webhook_send.js --url URL --secret-file FILE --id ID [--body JSON] [--path /webhooks/t]
//                   [--mode standard|ce-binary|ce-structured] [--type TYPE]
//                   [--ts-offset SECONDS] [--tamper] [--omit HEADER] [--content-type CT]
//
// --tamper changes the body after signing; --omit leaves a header out; --ts-offset signs with
// a timestamp that many seconds from now (negative: in the past).
"use strict";
const fs = require("fs");
const http = require("http");
const path = require("path");
const modules = path.join(__dirname, "..", "node", "node_modules");
const { Webhook } = require(path.join(modules, "standardwebhooks"));
const { CloudEvent, HTTP } = require(path.join(modules, "cloudevents"));

const args = { mode: "standard", path: "/webhooks", "ts-offset": "0", body: "{}", omit: [] };
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const k = argv[i].replace(/^--/, "");
  if (k === "tamper") { args.tamper = true; continue; }
  if (k === "omit") { args.omit.push(argv[++i].toLowerCase()); continue; }
  args[k] = argv[++i];
}

let headers = { "content-type": "application/json" };
let body = args.body;
if (args.mode !== "standard") {
  const ce = new CloudEvent({ id: args.id, type: args.type, source: "/tests/webhook_send", subject: "order 42",
                              data: JSON.parse(args.body) });
  const m = args.mode === "ce-binary" ? HTTP.binary(ce) : HTTP.structured(ce);
  headers = { ...m.headers };
  body = m.body;
}
if (args["content-type"]) headers["content-type"] = args["content-type"];
const secret = fs.readFileSync(args["secret-file"], "utf8").trim().split(/\s+/)[0];
const ts = new Date((Math.floor(Date.now() / 1000) + Number(args["ts-offset"])) * 1000);
headers["webhook-id"] = args.id;
headers["webhook-timestamp"] = String(Math.floor(ts.getTime() / 1000));
headers["webhook-signature"] = new Webhook(secret).sign(args.id, ts, body);
if (args.tamper) body = body.replace(/}$/, ', "tampered": true}');
for (const h of args.omit) delete headers[h];

const url = new URL(args.url.replace(/\/$/, "") + args.path);
const data = Buffer.from(body, "utf8");
headers["content-length"] = String(data.length);
const req = http.request(url, { method: "POST", headers }, (res) => {
  const chunks = [];
  res.on("data", (c) => chunks.push(c));
  res.on("end", () => {
    console.log(JSON.stringify({ status: res.statusCode, body: Buffer.concat(chunks).toString("utf8"),
                                 retry_after: res.headers["retry-after"] || null }));
  });
});
req.on("error", (e) => { console.log(JSON.stringify({ status: 0, body: String(e.message) })); });
req.end(data);
