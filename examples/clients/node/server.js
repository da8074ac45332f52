'use strict';
// POST /payments with an Idempotency-Key header, on pg_once's once.key_* functions.
//
// A payment has an outside side effect (the card charge at the payment provider), so it
// cannot be one database transaction (that is what once.run is for). It runs in two phases,
// each recorded with the key:
//   1. charge the card at the provider, with a charge id derived from the idempotency key so
//      the provider itself refuses to charge twice; then once.key_checkpoint('charged').
//   2. in ONE transaction: the local business write (the payments row), the outbox message
//      payment.captured (once.send), and once.key_complete with the response.
// A retry while the first request runs gets 409; a retry after it finished gets the stored
// status and body; the same key with another body gets 422 (ON102). A process that dies after
// the checkpoint leaves the key leased: once the lease runs out the next retry gets
// "acquired" with recovery_point 'charged' and the charge from the checkpoint, and goes
// straight to phase 2. The `attempt` that key_acquire returns is passed to every later call:
// an attempt whose lease was taken over can no longer checkpoint or complete (ON104), so a
// slow first attempt and its successor cannot both finish.
//
// Configuration (environment): PGHOST, PGPORT, PGUSER, PGDATABASE, ... (libpq's variables,
// read by node-postgres), PORT (default 3000; 0 = any free port), PSP_URL (the payment
// provider, default http://127.0.0.1:4000), PAYMENTS_LEASE (default "30 seconds": how long a
// crashed request blocks its key), PAYMENTS_CRASH_AFTER_CHECKPOINT=1 (tests: die with SIGKILL
// right after the checkpoint).
const http = require('node:http');
const crypto = require('node:crypto');
const { Pool } = require('pg');
const { httpStatusFor, errorBody } = require('./sqlstate');

const SCOPE = 'POST /payments';
const PSP_URL = process.env.PSP_URL || 'http://127.0.0.1:4000';
const LEASE = process.env.PAYMENTS_LEASE || '30 seconds';
const CRASH_AFTER_CHECKPOINT = process.env.PAYMENTS_CRASH_AFTER_CHECKPOINT === '1';

const pool = new Pool({ max: 10, application_name: 'node-payments' });
pool.on('error', (err) => console.error('idle database connection failed:', err.message));

class HttpError extends Error {
  constructor(status, body) {
    super(body.error);
    this.status = status;
    this.body = body;
  }
}

function send(res, status, body, headers = {}) {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function readBody(req, limit = 64 * 1024) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > limit) reject(new HttpError(413, { error: 'request body too large' }));
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function parsePayment(text) {
  let body;
  try { body = JSON.parse(text); } catch { throw new HttpError(400, { error: 'body is not JSON' }); }
  const ok = body && typeof body === 'object' && !Array.isArray(body) &&
    Number.isInteger(body.amount) && body.amount > 0 &&
    typeof body.currency === 'string' && /^[A-Z]{3}$/.test(body.currency) &&
    typeof body.card === 'string' && body.card.length > 0;
  if (!ok) throw new HttpError(400, { error: 'body must be {"amount": positive integer, "currency": "JPY", "card": "tok_…"}' });
  return body;
}

// The provider's charge id for this key: the same request always asks for the same charge, so
// a retry after any crash (before or after the provider answered) cannot charge twice.
function chargeIdFor(key) {
  return 'ch_' + crypto.createHash('sha256').update(`${SCOPE}\n${key}`).digest('hex').slice(0, 32);
}

// Phase 1. Returns {charge} or {declined}; throws {transient: true} when the provider did not
// give an answer we can keep (unreachable, 5xx, timeout).
async function chargeCard(key, payment) {
  let res;
  try {
    res = await fetch(`${PSP_URL}/charges`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ id: chargeIdFor(key), amount: payment.amount, currency: payment.currency, card: payment.card }),
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err) {
    throw Object.assign(new Error(`payment provider unreachable: ${err.message}`), { transient: true });
  }
  const body = await res.json().catch(() => null);
  if (res.status === 402) return { declined: body };
  if (res.ok && body) return { charge: body };
  throw Object.assign(new Error(`payment provider answered ${res.status}`), { transient: true });
}

// Phase 2: the payments row, the payment.captured message and the stored response commit
// together. key_complete raises ON104 if this attempt lost its lease meanwhile, which rolls
// back the row and the message too. The response comes back from the database as jsonb, so
// the first answer is byte for byte what every replay will get.
async function recordPayment(key, attempt, payment, charge) {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows: [row] } = await client.query(
      `INSERT INTO payments (idempotency_key, charge_id, amount, currency)
       VALUES ($1, $2, $3, $4) RETURNING id`,
      [key, charge.id, payment.amount, payment.currency]);
    const response = { payment_id: row.id, charge_id: charge.id, amount: payment.amount,
                       currency: payment.currency, status: 'captured' };
    await client.query('SELECT once.send($1, $2::jsonb, $3)',
                       ['payment.captured', JSON.stringify(response), `payment-${row.id}`]);
    const { rows: [done] } = await client.query(
      'SELECT once.key_complete($1, $2, $3::jsonb, 201, $4), $3::jsonb AS response',
      [SCOPE, key, JSON.stringify(response), attempt]);
    await client.query('COMMIT');
    return done.response;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

async function postPayment(req, res) {
  const key = req.headers['idempotency-key'];
  if (!key) throw new HttpError(400, { error: 'Idempotency-Key header required' });
  const payment = parsePayment(await readBody(req));

  // A reused key with another body raises ON102 here (-> 422 via sqlstate.js).
  const { rows: [k] } = await pool.query(
    'SELECT state, response, status, attempt, recovery_point, checkpoint FROM once.key_acquire($1, $2, $3::jsonb, $4::interval)',
    [SCOPE, key, JSON.stringify(payment), LEASE]);
  if (k.state === 'replay') return send(res, k.status, k.response);
  if (k.state === 'busy') {
    return send(res, 409, { error: 'a request with this Idempotency-Key is in progress; retry later' }, { 'Retry-After': '1' });
  }

  let charge;
  if (k.recovery_point === 'charged') {
    charge = k.checkpoint.charge;              // resumed: the card was charged by an attempt that died
  } else {
    let result;
    try {
      result = await chargeCard(key, payment);
    } catch (err) {
      if (!err.transient) throw err;
      // Nothing we know of happened: forget this attempt so the client's retry starts over
      // (with the same charge id, so a charge that did happen is found, not repeated).
      await pool.query('SELECT once.key_release($1, $2, $3)', [SCOPE, key, k.attempt]);
      return send(res, 503, { error: 'payment provider unavailable; retry' }, { 'Retry-After': '1' });
    }
    if (result.declined) {
      // A decline is the request's final answer: stored, so every retry sees the same 402.
      const { rows: [done] } = await pool.query(
        'SELECT once.key_complete($1, $2, $3::jsonb, 402, $4), $3::jsonb AS response',
        [SCOPE, key, JSON.stringify({ error: 'card_declined', charge_id: result.declined.id }), k.attempt]);
      return send(res, 402, done.response);
    }
    charge = result.charge;
    await pool.query('SELECT once.key_checkpoint($1, $2, $3, $4::jsonb, $5)',
                     [SCOPE, key, 'charged', JSON.stringify({ charge }), k.attempt]);
    if (CRASH_AFTER_CHECKPOINT) process.kill(process.pid, 'SIGKILL');
  }
  // If phase 2 fails the key stays leased with its checkpoint: a retry after the lease
  // resumes here instead of charging again.
  send(res, 201, await recordPayment(key, k.attempt, payment, charge));
}

const server = http.createServer((req, res) => {
  if (req.method !== 'POST' || req.url !== '/payments') return send(res, 404, { error: 'not found' });
  postPayment(req, res).catch((err) => {
    if (err instanceof HttpError) return send(res, err.status, err.body);
    const status = httpStatusFor(err);
    if (status >= 500) console.error(`POST /payments failed: ${err.code || ''} ${err.message}`);
    send(res, status, errorBody(err));
  });
});

server.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`listening on 127.0.0.1:${server.address().port}`);
});

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    server.close(() => pool.end().then(() => process.exit(0)));
    server.closeIdleConnections();
  });
}
