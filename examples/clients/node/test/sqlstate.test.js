'use strict';
// sqlstate.js against README.md's SQLSTATE table: every row the README documents must map to
// the HTTP status the README gives it, so the helper and the docs cannot drift apart.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { httpStatusFor, errorBody, STATUS_BY_SQLSTATE } = require('../sqlstate');

function readmeTable() {
  const readme = fs.readFileSync(path.join(__dirname, '../../../../README.md'), 'utf8');
  const rows = [];
  for (const line of readme.split('\n')) {
    const m = line.match(/^\| `([0-9A-Z]{5})` \|.*\| (\d{3}) \|$/);
    if (m) rows.push({ code: m[1], status: Number(m[2]) });
  }
  return rows;
}

test('every SQLSTATE in README.md maps to its HTTP status', () => {
  const rows = readmeTable();
  assert.ok(rows.length >= 30, `found only ${rows.length} rows in README's table`);
  for (const { code, status } of rows) {
    assert.strictEqual(httpStatusFor({ code }), status, `SQLSTATE ${code}`);
  }
  // and the helper knows no code the README does not document
  assert.deepStrictEqual(Object.keys(STATUS_BY_SQLSTATE).sort(), rows.map((r) => r.code).sort());
});

test('errors pg_once does not raise', () => {
  assert.strictEqual(httpStatusFor({ code: '40P01' }), 503);  // deadlock victim: retry
  assert.strictEqual(httpStatusFor({ code: '08006' }), 503);  // connection failure
  assert.strictEqual(httpStatusFor({ code: '57P01' }), 503);  // server shutting down
  assert.strictEqual(httpStatusFor({ code: '53300' }), 503);  // too many connections
  assert.strictEqual(httpStatusFor({ code: '23505' }), 500);  // the service's own bug
  assert.strictEqual(httpStatusFor(new Error('ECONNREFUSED')), 500);
  assert.strictEqual(httpStatusFor(undefined), 500);
});

test('error bodies show the SQLSTATE and hint, except for internal errors', () => {
  assert.deepStrictEqual(errorBody({ code: 'ON102', message: 'reused', hint: 'use a new key' }),
                         { error: 'reused', sqlstate: 'ON102', hint: 'use a new key' });
  assert.deepStrictEqual(errorBody({ code: 'XX000', message: 'secret detail' }), { error: 'internal error' });
  assert.deepStrictEqual(errorBody({ code: '40001', message: 'could not serialize' }),
                         { error: 'could not serialize', sqlstate: '40001' });
});
