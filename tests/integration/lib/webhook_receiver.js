#!/usr/bin/env node
// HTTP receiver for the relay's signed-webhook and CloudEvents tests. Each request is checked
// with the outside implementations: the standardwebhooks package (the Standard Webhooks
// reference library) verifies it with each --secret-file on its own, and the cloudevents SDK
// parses it (HTTP.toEvent) when it has ce-* headers. One JSON line per request in --log:
// {id, headers, body_b64, verified: {<secret file>: true | "<error>"}, cloudevent | ce_error}.
// Answers 200 when the first secret verifies (or no secret is given), 401 otherwise.
// Usage: webhook_receiver.js --log FILE --port-file FILE [--secret-file FILE]...
"use strict";
const fs = require("fs");
const http = require("http");
const path = require("path");
const modules = path.join(__dirname, "..", "node", "node_modules");
const { Webhook } = require(path.join(modules, "standardwebhooks"));
const { HTTP } = require(path.join(modules, "cloudevents"));

const args = process.argv.slice(2);
let log, portFile;
const secrets = [];
for (let i = 0; i < args.length; i += 2) {
  if (args[i] === "--log") log = args[i + 1];
  else if (args[i] === "--port-file") portFile = args[i + 1];
  else if (args[i] === "--secret-file") secrets.push(args[i + 1]);
  else throw new Error("unknown argument " + args[i]);
}
const hooks = secrets.map((f) => [path.basename(f), new Webhook(fs.readFileSync(f, "utf8").trim())]);

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    const entry = { id: req.headers["webhook-id"] || req.headers["idempotency-key"], headers: req.headers,
                    body_b64: body.toString("base64"), verified: {} };
    for (const [name, wh] of hooks) {
      try {
        wh.verify(body.toString("utf8"), req.headers);
        entry.verified[name] = true;
      } catch (e) {
        entry.verified[name] = String(e.message || e);
      }
    }
    if (Object.keys(req.headers).some((h) => h.startsWith("ce-"))) {
      try {
        const ev = HTTP.toEvent({ headers: req.headers, body: body.toString("utf8") });
        ev.validate();
        entry.cloudevent = JSON.parse(JSON.stringify(ev));
      } catch (e) {
        entry.ce_error = String(e.message || e) + (e.errors ? " " + JSON.stringify(e.errors) : "");
      }
    }
    fs.appendFileSync(log, JSON.stringify(entry) + "\n");
    const ok = hooks.length === 0 || entry.verified[hooks[0][0]] === true;
    res.writeHead(ok ? 200 : 401, { "Content-Type": "text/plain" });
    res.end(ok ? "ok" : "bad signature");
  });
});
server.listen(0, "127.0.0.1", () => fs.writeFileSync(portFile, String(server.address().port)));
