// queue_ages_node.js - the Node BullMQ 6.7.0 side of test_queue_ages.c: builds queue state
// with Node's own producer, worker and promote scripts, prints what Node knows about each
// job as one JSON line per queue, then holds one job active until it is killed.
//   node queue_ages_node.js REDIS_URL PREFIX
// Queues (under PREFIX): nplain (a job added 100 s ago), npromoted (added 3600 s ago with a
// delay due 10 s ago, promoted by Node's Job.promote), nretry (failed once by a Node worker,
// moved to delayed with a fixed 1500 ms backoff, promoted by Node's Queue.promoteJobs once
// due; prints its due time from the delayed zset), nactive (held active by a Node worker;
// printed last, as "ACTIVE {...}", then this process waits to be killed).
'use strict';
const { Queue, Worker } = require('bullmq');
const IORedis = require('ioredis');

const [url, prefix] = process.argv.slice(2);
const u = new URL(url);
const connection = { host: u.hostname, port: Number(u.port), maxRetriesPerRequest: null };

function out(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

async function main() {
  const client = new IORedis(connection);
  const now = Date.now();

  const plain = new Queue('nplain', { connection, prefix });
  await plain.add('j', {}, { timestamp: now - 100000 });
  out({ queue: 'nplain' });

  const promoted = new Queue('npromoted', { connection, prefix });
  const pj = await promoted.add('j', {}, { timestamp: now - 3600000, delay: 3590000 });
  await pj.promote();
  out({ queue: 'npromoted', delayField: await client.hget(`${prefix}:npromoted:${pj.id}`, 'delay') });

  const retry = new Queue('nretry', { connection, prefix });
  const rj = await retry.add('j', {}, { attempts: 3, backoff: { type: 'fixed', delay: 1500 } });
  const failed = new Promise((resolve) => {
    const w = new Worker('nretry', async () => { throw new Error('first attempt fails'); },
      { connection, prefix, autorun: false });
    w.on('failed', async () => { await w.close(); resolve(); });
    w.run();
  });
  await failed;
  const score = Number(await client.zscore(`${prefix}:nretry:delayed`, rj.id));
  const due = Math.floor(score / 4096);
  while (Date.now() <= due) await new Promise((r) => setTimeout(r, 50));
  await retry.promoteJobs();
  const h = await client.hgetall(`${prefix}:nretry:${rj.id}`);
  out({ queue: 'nretry', due, processedOn: Number(h.processedOn), ats: h.ats, atm: h.atm,
        state: await (await retry.getJob(rj.id)).getState() });

  const active = new Queue('nactive', { connection, prefix });
  await active.add('j', {});
  let started;
  const running = new Promise((r) => (started = r));
  const holder = new Worker('nactive', async (job) => { started(job); await new Promise(() => {}); },
    { connection, prefix, lockDuration: 600000 });
  const job = await running;
  out({ queue: 'nactive', active: 'ACTIVE', processedOn: job.processedOn });
  void holder;
  await new Promise(() => {}); // killed by the test
}

main().catch((e) => {
  process.stderr.write(`queue_ages_node: ${e.stack || e}\n`);
  process.exit(1);
});
