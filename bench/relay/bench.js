#!/usr/bin/env node
// bench.js - `ferry relay` against a polling outbox relay in Node (node_relay.js), on the same
// PostgreSQL and Redis, alternating implementations round by round (the box's speed drifts,
// so the table reports medians of A B A B ... runs):
//   drain-1, drain-2  50,000 pre-inserted order.placed rows (fan-out to 2 queues, so 100,000
//                     jobs) drained by 1 / 2 relays. Rate over the rows published after the
//                     first 10% (a warm-up on both sides: process start-up and Node's JIT
//                     warm-up stay out): rows published after T / (last published_at - T),
//                     T = the published_at of the row at the 10th percentile, on the server's
//                     own clock.
//   latency           a producer commits one row every 5 ms (200 rows/s) for LAT_SECONDS;
//                     latency = the moment the job's "added" event is read from the queue's
//                     events stream (XREAD BLOCK) - the moment the producer sent COMMIT,
//                     both on this process's monotonic clock (so commit processing and the
//                     observer's own read are included: an upper bound).
// Every run starts from an empty outbox (TRUNCATE) and an empty Redis (FLUSHDB) and is
// checked: every row published, each queue holding exactly one job per row.
//
// Environment: DATABASE_URL, REDIS_URL, FERRY_BIN (required); BENCH_ROUNDS (2), BENCH_ROWS
// (50000), LAT_SECONDS (15), LAT_RATE (200), BENCH_ONLY ("drain-1 drain-2 latency"),
// FERRY_BATCH (ferry's --batch; default: ferry's own default), BENCH_SCHEMA (bench_relay).
'use strict';

const { spawn, execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { randomUUID } = require('crypto');
const { Client } = require('pg');
const IORedis = require('ioredis');

const env = process.env;
for (const k of ['DATABASE_URL', 'REDIS_URL', 'FERRY_BIN'])
  if (!env[k]) throw new Error(`${k} is required`);
const ROUNDS = Number(env.BENCH_ROUNDS || 2);
const ROWS = Number(env.BENCH_ROWS || 50000);
const LAT_SECONDS = Number(env.LAT_SECONDS || 15);
const LAT_RATE = Number(env.LAT_RATE || 200);
const ONLY = (env.BENCH_ONLY || 'drain-1 drain-2 latency').split(/\s+/).filter(Boolean);
const SCHEMA = env.BENCH_SCHEMA || 'bench_relay';
const PREFIX = 'benchrelay';
const TABLE = `"${SCHEMA}".outbox_events`;
const BATCH = 100; // the Node relay's batch size
const ROUTES = path.join(os.tmpdir(), `ferry-bench-routes-${process.pid}`);
fs.writeFileSync(ROUTES, 'order.placed payments:capture-payment notifications:order-confirmation\n');
process.on('exit', () => fs.rmSync(ROUTES, { force: true }));

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

function startRelay(impl) {
  const common = ['--routes', ROUTES, '--schema', SCHEMA, '--prefix', PREFIX];
  let cmd, args;
  if (impl === 'ferry') {
    cmd = env.FERRY_BIN;
    args = ['relay', ...common, '--database', env.DATABASE_URL, '--redis', env.REDIS_URL, '--retention-days', '0'];
    if (env.FERRY_BATCH) args.push('--batch', env.FERRY_BATCH);
  } else {
    cmd = process.execPath;
    args = [path.join(__dirname, 'node_relay.js'), ...common, '--database', env.DATABASE_URL, '--redis',
      env.REDIS_URL, '--batch', String(BATCH)];
  }
  const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  child.log = '';
  child.stderr.on('data', (d) => (child.log += d));
  child.exited = new Promise((resolve) => child.on('exit', (code, sig) => resolve(code ?? 128)));
  return child;
}

async function stopRelay(child) {
  child.kill('SIGTERM');
  const code = await Promise.race([child.exited, sleep(30000).then(() => 'timeout')]);
  if (code !== 0) throw new Error(`relay exit ${code}:\n${child.log}`);
}

async function reset(db, redis) {
  await db.query(`TRUNCATE ${TABLE}`);
  await redis.flushdb();
}

async function verify(db, redis, rows) {
  const { rows: r } = await db.query(`SELECT count(*)::int AS n FROM ${TABLE} WHERE published_at IS NULL`);
  if (r[0].n !== 0) throw new Error(`${r[0].n} rows unpublished`);
  for (const q of ['payments', 'notifications']) {
    const n = await redis.llen(`${PREFIX}:${q}:wait`);
    if (n !== rows) throw new Error(`queue ${q} holds ${n} jobs for ${rows} rows`);
  }
}

async function drain(db, redis, impl, relays) {
  await reset(db, redis);
  await db.query(
    `INSERT INTO ${TABLE} (id, topic, aggregate_id, payload, created_at)
     SELECT gen_random_uuid(), 'order.placed', gen_random_uuid(),
            jsonb_build_object('orderId', gen_random_uuid(), 'customerId', gen_random_uuid(), 'total', g * 1000),
            clock_timestamp()
     FROM generate_series(1, $1) g`,
    [ROWS],
  );
  await db.query(`VACUUM ANALYZE ${TABLE}`);
  const t0 = Date.now();
  const children = Array.from({ length: relays }, () => startRelay(impl));
  // "Any row left?" through the relays' own partial index (oldest first, LIMIT 1): ~0.2 ms.
  // A count(*) here is a sequential scan of the whole table, ~10 ms every 20 ms, i.e. a third
  // of a core taken from the relays being measured.
  const anyLeft = `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${TABLE} WHERE published_at IS NULL
                   ORDER BY created_at LIMIT 1) x`;
  for (;;) {
    const { rows } = await db.query(anyLeft);
    if (rows[0].n === 0) break;
    if (Date.now() - t0 > 600000) throw new Error('drain took more than 10 minutes');
    for (const c of children) if (c.exitCode !== null) throw new Error(`relay died:\n${c.log}`);
    await sleep(20);
  }
  const wall = (Date.now() - t0) / 1000;
  for (const c of children) await stopRelay(c);
  // published_at is the batch transaction's start time (now()): every row of a batch shares it
  const { rows } = await db.query(
    `WITH t AS (SELECT percentile_disc(0.1) WITHIN GROUP (ORDER BY published_at) AS t10 FROM ${TABLE})
     SELECT extract(epoch FROM max(published_at) - (SELECT t10 FROM t))::float8 AS span,
            count(*) FILTER (WHERE published_at > (SELECT t10 FROM t))::int AS n
     FROM ${TABLE}`,
  );
  await verify(db, redis, ROWS);
  if (!(rows[0].span > 0) || rows[0].n < 1) throw new Error(`drain: no timed rows (span ${rows[0].span}, rows ${rows[0].n})`);
  return { rate: rows[0].n / rows[0].span, wall };
}

async function latency(db, redis, impl) {
  await reset(db, redis);
  const relay = startRelay(impl);
  await sleep(1500); // started and idle (the Node relay's first tick is at 500 ms)
  const sub = new IORedis(env.REDIS_URL, { maxRetriesPerRequest: null });
  const committed = new Map(); // id -> when COMMIT was sent
  const seen = new Map(); // id -> when its job's "added" event was read
  let stop = false;
  const total = LAT_SECONDS * LAT_RATE;
  const observer = (async () => {
    let last = '0'; // the stream is new (Redis was flushed): read it from the start, so no
    // entry falls between two XREAD calls
    while (!stop) {
      const res = await sub.xread('BLOCK', 200, 'STREAMS', `${PREFIX}:payments:events`, last);
      const now = process.hrtime.bigint();
      if (!res) continue;
      for (const [id, fields] of res[0][1]) {
        last = id;
        if (fields[1] === 'added') seen.set(fields[3], now);
      }
    }
  })();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < total; i++) {
    const due = t0 + BigInt(Math.round((i * 1e9) / LAT_RATE));
    const wait = Number(due - process.hrtime.bigint()) / 1e6;
    if (wait > 0) await sleep(wait);
    const id = randomUUID();
    await db.query('BEGIN');
    await db.query(
      `INSERT INTO ${TABLE} (id, topic, aggregate_id, payload) VALUES ($1, 'order.placed', $2, $3)`,
      [id, randomUUID(), JSON.stringify({ orderId: id, total: i })],
    );
    // The clock starts when COMMIT is sent: the job can be in Redis before this process has
    // read the COMMIT reply, so "reply received" would undercount.
    committed.set(id, process.hrtime.bigint());
    await db.query('COMMIT');
  }
  const deadline = Date.now() + 10000;
  while (seen.size < total && Date.now() < deadline) await sleep(20);
  stop = true;
  await observer;
  sub.disconnect();
  await stopRelay(relay);
  await verify(db, redis, total);
  const lat = [];
  for (const [id, t] of committed) if (seen.has(id)) lat.push(Number(seen.get(id) - t) / 1e6);
  if (lat.length !== total) throw new Error(`saw ${lat.length} of ${total} jobs`);
  lat.sort((a, b) => a - b);
  return { p50: pct(lat, 50), p99: pct(lat, 99), max: lat[lat.length - 1] };
}

async function main() {
  const db = new Client({ connectionString: env.DATABASE_URL });
  await db.connect();
  await db.query('SET client_min_messages = warning');
  execFileSync(env.FERRY_BIN, ['migrate', '--schema', SCHEMA, '--database', env.DATABASE_URL], { stdio: 'ignore' });
  const redis = new IORedis(env.REDIS_URL, { maxRetriesPerRequest: null });
  const results = {};
  const add = (name, impl, r) => ((results[name] ??= { node: [], ferry: [] })[impl].push(r));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const name of ONLY) {
      for (const impl of ['node', 'ferry']) {
        let r;
        if (name === 'drain-1') r = await drain(db, redis, impl, 1);
        else if (name === 'drain-2') r = await drain(db, redis, impl, 2);
        else if (name === 'latency') r = await latency(db, redis, impl);
        else throw new Error(`unknown scenario ${name}`);
        add(name, impl, r);
        console.error(`round ${round} ${name} ${impl}: ${JSON.stringify(r, (k, v) => (typeof v === 'number' ? Math.round(v * 100) / 100 : v))}`);
      }
    }
  }
  const batch = env.FERRY_BATCH ? `--batch ${env.FERRY_BATCH}` : 'default batch';
  console.log(`\n### ferry relay vs a polling Node relay (${ROUNDS} round(s), medians; ferry ${batch}, Node batch ${BATCH})\n`);
  // Ratios are taken per round (the two runs of a round are back to back, so they see the
  // same machine), then the median of those; the rate columns are plain medians.
  const ratio = (r, f) => median(r.ferry.map((x, i) => f(r.node[i], x)));
  console.log('| scenario | Node relay | ferry relay | ferry vs Node (median of rounds) |');
  console.log('|---|---|---|---|');
  for (const name of ONLY) {
    const r = results[name];
    if (name.startsWith('drain')) {
      const n = median(r.node.map((x) => x.rate)), f = median(r.ferry.map((x) => x.rate));
      const x = ratio(r, (a, b) => b.rate / a.rate);
      console.log(`| ${name} (${ROWS} rows, rows/s) | ${n.toFixed(0)} | ${f.toFixed(0)} | ${x.toFixed(1)}x faster |`);
    } else {
      for (const k of ['p50', 'p99', 'max']) {
        const n = median(r.node.map((x) => x[k])), f = median(r.ferry.map((x) => x[k]));
        const x = ratio(r, (a, b) => a[k] / b[k]);
        console.log(`| latency ${k} at ${LAT_RATE} rows/s (ms) | ${n.toFixed(1)} | ${f.toFixed(2)} | ${x.toFixed(0)}x lower |`);
      }
    }
  }
  console.log('\nper round: ' + ONLY.map((name) => `${name}: ` + results[name].ferry.map((x, i) => {
    const a = results[name].node[i];
    return name.startsWith('drain') ? `${(x.rate / a.rate).toFixed(2)}x` : `p99 ${x.p99.toFixed(2)} ms`;
  }).join(' ')).join('; '));
  await db.end();
  redis.disconnect();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
