'use strict';
// A stand-in for a card payment provider: the outside side effect that cannot roll back with
// a database transaction. Like real providers it is idempotent by the charge id the caller
// chooses: charging the same id again returns the first charge instead of charging twice.
//
//   POST /charges {id, amount, currency, card}  201 new charge, 200 the same id again,
//                                                402 declined (card "tok_declined", stored too)
//   GET  /charges                                every charge and how often each id was requested
//   POST /hold, POST /release                    tests only: park charge requests until released
//                                                (GET /charges says how many are waiting)
//
// Run: node fake_psp.js  (prints "listening on 127.0.0.1:PORT"; PORT env var, default 0 = any).
const http = require('node:http');

const charges = new Map();   // id -> {charge, status}
const requests = new Map();  // id -> number of POST /charges for it
let holding = false;
let waiting = [];            // resolve functions of parked requests

function readJson(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      try { resolve(JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null')); } catch (e) { reject(e); }
    });
    req.on('error', reject);
  });
}

function send(res, status, body) {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function charge(req, res) {
  const c = await readJson(req);
  if (!c || typeof c.id !== 'string' || !Number.isInteger(c.amount)) return send(res, 400, { error: 'id and amount required' });
  requests.set(c.id, (requests.get(c.id) || 0) + 1);
  if (holding) await new Promise((resolve) => waiting.push(resolve));
  const known = charges.get(c.id);
  if (known) return send(res, known.status === 201 ? 200 : known.status, known.charge);
  const declined = c.card === 'tok_declined';
  const stored = {
    status: declined ? 402 : 201,
    charge: { id: c.id, amount: c.amount, currency: c.currency, status: declined ? 'declined' : 'succeeded' },
  };
  charges.set(c.id, stored);
  send(res, stored.status, stored.charge);
}

const server = http.createServer((req, res) => {
  const route = `${req.method} ${req.url}`;
  if (route === 'POST /charges') return void charge(req, res).catch(() => send(res, 400, { error: 'bad JSON' }));
  if (route === 'GET /charges') {
    return send(res, 200, {
      charges: [...charges.values()].map((s) => s.charge),
      requests: Object.fromEntries(requests),
      waiting: waiting.length,
    });
  }
  if (route === 'POST /hold') { holding = true; return send(res, 200, {}); }
  if (route === 'POST /release') {
    holding = false;
    const parked = waiting;
    waiting = [];
    parked.forEach((resolve) => resolve());
    return send(res, 200, { released: parked.length });
  }
  send(res, 404, { error: 'not found' });
});

server.listen(Number(process.env.PORT || 0), '127.0.0.1', () => {
  console.log(`listening on 127.0.0.1:${server.address().port}`);
});
