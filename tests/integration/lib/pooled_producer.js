// Producers through a transaction pool (PgBouncer pool_mode=transaction), with node-postgres.
//
//   node pooled_producer.js SRC_URL DST_URL TAG ROUNDS CLIENTS     documented settings
//   node pooled_producer.js --control SRC_URL                      named queries
//
// The documented setting: no named queries (node-postgres then sends each parameterised query
// as an unnamed statement, parsed, bound and run in one round trip). The same traffic as
// pooled_producer.py: CLIENTS clients, reused for every round, each round sent at once: once.run
// on one key (one caller runs the command, every duplicate gets its stored response), one
// once.send per client, once.receive of one event id (one true), once.deliver of one message id
// into DST ('processed' once). Any error or broken guarantee: exit 1. Prints a JSON summary.
//
// --control sends the same queries as named queries (node-postgres prepares each name once per
// client) and prints how many transactions failed.
'use strict';
const crypto = require('node:crypto');
const { Client } = require('pg');

const errors = [];

async function connectAll(url, n) {
  const clients = [];
  for (let i = 0; i < n; i++) {
    const c = new Client({ connectionString: url });
    await c.connect();
    clients.push(c);
  }
  return clients;
}

// fn(i, client) inside BEGIN/COMMIT on every client at once; failures are collected.
async function allAtOnce(clients, fn) {
  return Promise.all(clients.map(async (c, i) => {
    try {
      await c.query('BEGIN');
      const v = await fn(i, c);
      await c.query('COMMIT');
      return v;
    } catch (e) {
      errors.push(`client ${i}: ${e.code || ''} ${e.message}`);
      await c.query('ROLLBACK').catch(() => {});
      return undefined;
    }
  }));
}

function uuidFor(text) {   // a stable uuid per text (the database never parses its version)
  const h = crypto.createHash('sha256').update(text).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

async function documented(src, dst, tag, rounds, n) {
  const srcs = await connectAll(src, n);
  const dsts = await connectAll(dst, n);
  let runs = 0, sends = 0, receives = 0, delivers = 0;
  for (let r = 0; r < rounds; r++) {
    const key = `${tag}-${r}`;
    const answers = await allAtOnce(srcs, async (i, c) => (await c.query(
      `SELECT replayed, response FROM once.run('pool', $1, $2::jsonb, $$
         INSERT INTO pool_charges (tag, round) VALUES ($1->>'tag', ($1->>'round')::int)
         RETURNING jsonb_build_object('charge', id) $$)`,
      [key, JSON.stringify({ tag, round: r })])).rows[0]);
    if (!answers.includes(undefined)) {
      const ran = answers.filter((a) => !a.replayed).length;
      if (ran !== 1) errors.push(`once.run ${key}: ${ran} callers ran the command`);
      if (new Set(answers.map((a) => JSON.stringify(a.response))).size !== 1) errors.push(`once.run ${key}: different responses`);
      runs += answers.length;
    }
    const ids = await allAtOnce(srcs, async (i, c) => (await c.query(
      'SELECT once.send($1, $2::jsonb, $3) AS id', [`pool.${tag}`, JSON.stringify({ round: r, client: i }), key])).rows[0].id);
    sends += ids.filter(Boolean).length;
    const got = await allAtOnce(srcs, async (i, c) => {
      const first = (await c.query("SELECT once.receive('ext', $1, 'invoice.paid') AS first", [`evt-${key}`])).rows[0].first;
      if (first) await c.query('INSERT INTO pool_effects (tag, event) VALUES ($1, $2)', [tag, `evt-${key}`]);
      return first;
    });
    if (!got.includes(undefined) && got.filter(Boolean).length !== 1) errors.push(`once.receive evt-${key}: ${got}`);
    receives += got.length;
    const messageId = uuidFor(`pg_once-pool/${key}`);
    const statuses = await allAtOnce(dsts, async (i, c) => (await c.query(
      "SELECT once.deliver($1, $2::uuid, 'pool.deliver', $3::jsonb, jsonb_build_object('key', $4::text)) AS status",
      [`pool-${tag}`, messageId, JSON.stringify({ round: r }), key])).rows[0].status);
    if (!statuses.includes(undefined)) {
      const processed = statuses.filter((s) => s === 'processed').length;
      const duplicate = statuses.filter((s) => s === 'duplicate').length;
      if (processed !== 1 || duplicate !== n - 1) errors.push(`once.deliver ${messageId}: ${statuses}`);
    }
    delivers += statuses.length;
  }
  await Promise.all([...srcs, ...dsts].map((c) => c.end()));
  console.log(JSON.stringify({ client: 'node-postgres', runs, sends, receives, delivers, errors: errors.slice(0, 5) }));
  return errors.length ? 1 : 0;
}

async function control(src) {
  const clients = await connectAll(src, 8);
  const before = errors.length;
  for (let r = 0; r < 10; r++) {
    await allAtOnce(clients, async (i, c) => {
      await c.query({ name: 'pool_a', text: 'SELECT $1::int + 1 AS v', values: [r] });
      await c.query({ name: 'pool_b', text: "SELECT $1::text || 'x' AS v", values: [String(i)] });
    });
  }
  await Promise.all(clients.map((c) => c.end().catch(() => {})));
  console.log(JSON.stringify({ client: 'node-postgres', named_queries: true, failed: errors.length - before, of: 80,
                               sample: errors.slice(0, 2) }));
  return 0;
}

(async () => {
  const a = process.argv.slice(2);
  const rc = a[0] === '--control' ? await control(a[1]) : await documented(a[0], a[1], a[2], Number(a[3]), Number(a[4]));
  process.exit(rc);
})().catch((e) => { console.error(e); process.exit(1); });
