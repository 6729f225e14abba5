#!/usr/bin/env node
// node_relay.js - a typical polling outbox relay (pg + BullMQ) as a standalone Node process, the
// baseline `ferry relay` is measured against:
// every 500 ms (setInterval), drain: while a batch comes back full, in one transaction
// SELECT ... FOR UPDATE SKIP LOCKED (oldest first, LIMIT 100), drop unknown topics, group
// the jobs by queue, one queue.addBulk per queue (Promise.all), UPDATE published_at, COMMIT.
//
//   node node_relay.js --database URL --redis URL --routes FILE [--schema S] [--prefix P]
//                      [--batch N] [--interval MS]
// SIGTERM: stop the timer, let the running drain finish, close, exit 0.
'use strict';

const fs = require('fs');
const { Client } = require('pg');
const { Queue } = require('bullmq');

function args() {
  const o = { schema: 'public', prefix: 'bull', batch: 100, interval: 500 };
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i += 2) {
    const k = a[i].replace(/^--/, '');
    if (!(k in o) && !['database', 'redis', 'routes'].includes(k)) throw new Error(`unknown option ${a[i]}`);
    o[k] = ['batch', 'interval'].includes(k) ? Number(a[i + 1]) : a[i + 1];
  }
  for (const k of ['database', 'redis', 'routes']) if (!o[k]) throw new Error(`--${k} is required`);
  return o;
}

// Same file format as `ferry relay --routes`.
function loadRoutes(path) {
  const routes = {};
  for (const raw of fs.readFileSync(path, 'utf8').split('\n')) {
    const words = raw.replace(/#.*/, '').trim().split(/\s+/).filter(Boolean);
    if (!words.length) continue;
    routes[words[0]] = words.slice(1).map((t) => {
      const i = t.indexOf(':');
      return { queue: t.slice(0, i), jobName: t.slice(i + 1) };
    });
  }
  return routes;
}

function redisConnection(url) {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port || 6379), maxRetriesPerRequest: null };
}

async function main() {
  const o = args();
  const table = `"${o.schema.replace(/"/g, '""')}".outbox_events`;
  const db = new Client({ connectionString: o.database });
  await db.connect();
  const connection = redisConnection(o.redis);
  const queues = new Map();
  const routes = {};
  for (const [topic, targets] of Object.entries(loadRoutes(o.routes))) {
    routes[topic] = targets.map(({ queue, jobName }) => {
      if (!queues.has(queue)) queues.set(queue, new Queue(queue, { connection, prefix: o.prefix }));
      return { queue: queues.get(queue), jobName };
    });
  }

  let running;
  let stopping = false;

  // One transaction per batch.
  async function publishBatch() {
    await db.query('BEGIN');
    try {
      const { rows } = await db.query(
        `SELECT id, topic, payload, trace_id FROM ${table}
         WHERE published_at IS NULL ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [o.batch],
      );
      if (rows.length === 0) {
        await db.query('COMMIT');
        return 0;
      }
      const known = rows.filter((row) => row.topic in routes);
      if (known.length < rows.length) console.warn(`${rows.length - known.length} outbox row(s) with unknown topic`);
      const byQueue = new Map();
      for (const row of known) {
        for (const { queue, jobName } of routes[row.topic]) {
          const data = { eventId: row.id, traceId: row.trace_id ?? undefined, payload: row.payload };
          const jobs = byQueue.get(queue) ?? [];
          jobs.push({ name: jobName, data, opts: { jobId: row.id } });
          byQueue.set(queue, jobs);
        }
      }
      await Promise.all([...byQueue].map(([queue, jobs]) => queue.addBulk(jobs)));
      const ids = known.map((row) => row.id);
      await db.query(`UPDATE ${table} SET published_at = now() WHERE id = ANY($1::uuid[])`, [ids]);
      await db.query('COMMIT');
      return rows.length;
    } catch (e) {
      await db.query('ROLLBACK').catch(() => {});
      throw e;
    }
  }

  async function drain() {
    while (!stopping && (await publishBatch()) === o.batch) {}
  }

  const timer = setInterval(() => {
    running ??= drain()
      .catch((error) => console.error('Outbox relay failed', error))
      .finally(() => (running = undefined));
  }, o.interval);

  process.on('SIGTERM', async () => {
    stopping = true;
    clearInterval(timer);
    await running;
    await Promise.all([...queues.values()].map((q) => q.close()));
    await db.end();
    process.exit(0);
  });
  console.error(`node relay: started (batch ${o.batch}, interval ${o.interval} ms)`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
