'use strict';
// The payments service end to end: a real PostgreSQL with pg_once (PG* environment variables,
// schema.sql loaded), the fake payment provider and the service as child processes on
// loopback ports. Run by tests/integration/client_node.sh; skipped when PAYMENTS_IT is unset
// (plain `npm test` without a database runs only the unit tests).
const test = require('node:test');
const assert = require('node:assert');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { Client } = require('pg');

const here = path.join(__dirname, '..');
const skip = process.env.PAYMENTS_IT ? false : 'PAYMENTS_IT not set (needs a database; see tests/integration/client_node.sh)';

// Polls fn until it returns a truthy value or the deadline passes (no fixed sleeps).
async function waitFor(what, seconds, fn) {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${seconds}s waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// Starts `node script` and resolves with {child, url} once it prints "listening on HOST:PORT".
function start(script, env = {}) {
  const child = spawn(process.execPath, [path.join(here, script)], {
    env: { ...process.env, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  child.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const m = out.match(/listening on (\S+)/);
      if (m) resolve({ child, url: `http://${m[1]}` });
    });
    child.exited.then(({ code, signal }) => reject(new Error(`${script} exited (${code ?? signal}) before listening`)));
  });
}

async function stop(proc) {
  if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill('SIGTERM');
  await proc.child.exited;
}

async function post(url, key, body) {
  const res = await fetch(`${url}/payments`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(key ? { 'Idempotency-Key': key } : {}) },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

test('POST /payments', { skip }, async (t) => {
  const db = new Client();
  await db.connect();
  const psp = await start('fake_psp.js');
  let service = await start('server.js', { PSP_URL: psp.url, PAYMENTS_LEASE: '1 second' });
  const pspState = async () => (await fetch(`${psp.url}/charges`)).json();
  const count = async (sql, params) => Number((await db.query(sql, params)).rows[0].n);
  t.after(async () => {
    await stop(service);
    await stop(psp);
    await db.end();
  });

  await t.test('20 concurrent retries of one request: one charge, one response', async () => {
    const body = { amount: 450, currency: 'JPY', card: 'tok_visa' };
    // The provider parks the first charge request, so the first request is held mid-flight
    // while all the others arrive: each of those must get 409, none may reach the provider.
    await fetch(`${psp.url}/hold`, { method: 'POST' });
    const results = [];
    const pending = Array.from({ length: 20 }, () => post(service.url, 'order-17', body).then((r) => results.push(r)));
    await waitFor('19 answers while the first request is held', 20, () => results.length === 19);
    assert.deepStrictEqual(results.map((r) => r.status), Array(19).fill(409));
    assert.strictEqual((await pspState()).waiting, 1, 'exactly one request reached the provider');
    await fetch(`${psp.url}/release`, { method: 'POST' });
    await Promise.all(pending);
    const first = results[19];
    assert.strictEqual(first.status, 201, first.text);
    // The 19 clients that got 409 retry: each gets the stored response, byte for byte.
    const retries = await Promise.all(Array.from({ length: 19 }, () => post(service.url, 'order-17', body)));
    for (const r of retries) assert.deepStrictEqual(r, first);

    const state = await pspState();
    assert.strictEqual(state.charges.length, 1);
    assert.strictEqual(Object.values(state.requests)[0], 1);
    assert.strictEqual(await count("SELECT count(*) n FROM payments WHERE idempotency_key = 'order-17'"), 1);
    assert.strictEqual(await count("SELECT count(*) n FROM once.outbox WHERE topic = 'payment.captured' AND payload @> $1::jsonb",
                                   [JSON.stringify({ charge_id: JSON.parse(first.text).charge_id })]), 1);
  });

  await t.test('the same key with another body is refused with 422', async () => {
    const r = await post(service.url, 'order-17', { amount: 9999, currency: 'JPY', card: 'tok_visa' });
    assert.strictEqual(r.status, 422);
    assert.strictEqual(JSON.parse(r.text).sqlstate, 'ON102');
    assert.strictEqual(await count("SELECT count(*) n FROM payments WHERE idempotency_key = 'order-17'"), 1);
  });

  await t.test('a crash right after the checkpoint: the retry resumes, the card is charged once', async () => {
    await stop(service);
    service = await start('server.js', { PSP_URL: psp.url, PAYMENTS_LEASE: '1 second', PAYMENTS_CRASH_AFTER_CHECKPOINT: '1' });
    const body = { amount: 800, currency: 'JPY', card: 'tok_visa' };
    await assert.rejects(post(service.url, 'order-19', body));      // the connection dies with the process
    assert.deepStrictEqual(await service.child.exited, { code: null, signal: 'SIGKILL' });
    const key = (await db.query("SELECT state, recovery_point FROM once.keys WHERE key = 'order-19'")).rows[0];
    assert.deepStrictEqual(key, { state: 'in_progress', recovery_point: 'charged' });
    assert.strictEqual(await count("SELECT count(*) n FROM payments WHERE idempotency_key = 'order-19'"), 0);

    service = await start('server.js', { PSP_URL: psp.url, PAYMENTS_LEASE: '1 second' });
    // 409 until the dead attempt's lease (1 second) runs out, then the retry takes over.
    const r = await waitFor('the retry to get past the dead lease', 20, async () => {
      const res = await post(service.url, 'order-19', body);
      return res.status === 409 ? null : res;
    });
    assert.strictEqual(r.status, 201, r.text);
    const state = await pspState();
    const chargeId = JSON.parse(r.text).charge_id;
    assert.strictEqual(state.requests[chargeId], 1, 'the resumed attempt did not call the provider again');
    assert.strictEqual(state.charges.filter((c) => c.id === chargeId).length, 1);
    assert.strictEqual(await count("SELECT count(*) n FROM payments WHERE idempotency_key = 'order-19'"), 1);
    assert.strictEqual(await count("SELECT count(*) n FROM once.outbox WHERE topic = 'payment.captured' AND payload->>'charge_id' = $1", [chargeId]), 1);
    assert.strictEqual(await count("SELECT attempt n FROM once.keys WHERE key = 'order-19'"), 2);
    assert.deepStrictEqual(await post(service.url, 'order-19', body), r);
  });

  await t.test('a declined card is stored: every retry gets the same 402', async () => {
    const body = { amount: 300, currency: 'JPY', card: 'tok_declined' };
    const r = await post(service.url, 'order-20', body);
    assert.strictEqual(r.status, 402);
    assert.deepStrictEqual(await post(service.url, 'order-20', body), r);
    assert.strictEqual(await count("SELECT count(*) n FROM payments WHERE idempotency_key = 'order-20'"), 0);
  });

  await t.test('an unreachable provider releases the key: 503, then the retry works', async () => {
    await stop(service);
    service = await start('server.js', { PSP_URL: 'http://127.0.0.1:1', PAYMENTS_LEASE: '1 second' });
    const body = { amount: 120, currency: 'JPY', card: 'tok_visa' };
    assert.strictEqual((await post(service.url, 'order-21', body)).status, 503);
    assert.strictEqual(await count("SELECT count(*) n FROM once.keys WHERE key = 'order-21'"), 0);
    await stop(service);
    service = await start('server.js', { PSP_URL: psp.url, PAYMENTS_LEASE: '1 second' });
    assert.strictEqual((await post(service.url, 'order-21', body)).status, 201);
  });

  await t.test('bad requests: 400 without a key or with a bad body, nothing stored', async () => {
    assert.strictEqual((await post(service.url, null, { amount: 1, currency: 'JPY', card: 'x' })).status, 400);
    assert.strictEqual((await post(service.url, 'order-22', { amount: -1, currency: 'JPY', card: 'x' })).status, 400);
    const tooLong = await post(service.url, 'k'.repeat(300), { amount: 1, currency: 'JPY', card: 'x' });
    assert.strictEqual(tooLong.status, 400);                        // ON101 from key_acquire
    assert.strictEqual(JSON.parse(tooLong.text).sqlstate, 'ON101');
    assert.strictEqual(await count("SELECT count(*) n FROM once.keys WHERE key = 'order-22'"), 0);
  });
});
