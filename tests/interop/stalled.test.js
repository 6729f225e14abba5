// stalled.test.js - crash recovery across implementations: a job whose ferry worker was
// SIGKILLed mid-job is detected as stalled and finished by a Node BullMQ Worker, and a job whose
// Node worker process was SIGKILLed is recovered and finished by a ferry worker. Also: SIGTERM
// makes a ferry worker finish its running job and exit 0.
'use strict';
const assert = require('node:assert');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { Job } = require('bullmq');
const h = require('./lib/harness');

const suite = new h.Suite('stalled: SIGKILLed workers recovered by the other implementation');
const redis = h.newRedis();
suite.onCleanup(() => redis.quit());

suite.check('a job of a SIGKILLed ferry worker is recovered as stalled and completed by a Node Worker', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('stall-f2n'));
  const job = await nq.queue.add('slow', { s: 1 });
  const fw = h.startFerryWorker(nq.name, {
    name: 'ferry-doomed',
    lockDuration: 1000, // the CLI's minimum
    stalledInterval: 1000,
    behave: { slow: { sleepMs: 60000 } },
  });
  await h.waitFor(() => fw.starts(job.id).length === 1, { what: 'ferry handler to start' });
  assert.strictEqual(await (await Job.fromId(nq.queue, job.id)).getState(), 'active');
  const lockKey = `${h.PREFIX}:${nq.name}:${job.id}:lock`;
  const pttl = await redis.pttl(lockKey);
  assert.ok(pttl > 0 && pttl <= 1000, `ferry holds a lock with lockDuration 1000 (pttl ${pttl})`);
  const st = await fw.kill();
  assert.strictEqual(st.signal, 'SIGKILL');
  fw.killOrphans();
  const killedAt = Date.now();

  const stalledSeen = [];
  const nw = h.startNodeWorker(
    nq.name,
    async (j) => ({ rescued: j.id, data: j.data, attemptsMade: j.attemptsMade, attemptsStarted: j.attemptsStarted }),
    { name: 'node-rescuer', stalledInterval: 300 },
  );
  nw.on('stalled', (id) => stalledSeen.push(id));
  const j = await h.nodeJobInState(nq, job.id, 'completed');
  assert.deepStrictEqual(j.returnvalue, { rescued: job.id, data: { s: 1 }, attemptsMade: 0, attemptsStarted: 2 });
  assert.strictEqual(j.processedBy, 'node-rescuer');
  assert.strictEqual(j.stalledCounter, 1, 'stc = 1');
  assert.strictEqual(j.attemptsStarted, 2, 'ats = 2 (ferry + Node)');
  assert.strictEqual(j.attemptsMade, 1, 'atm = 1 (only the completion)');
  assert.ok(j.processedOn >= killedAt, 'Node started it after the kill');
  assert.deepStrictEqual(stalledSeen, [job.id], 'Node worker reported it stalled');
  await nq.waitEvent('stalled', job.id);
  assert.ok(nq.seen('waiting', job.id).some((e) => e.prev === 'active'), 'waiting (prev active) event');
  assert.strictEqual(fw.starts(job.id).length, 1, 'the ferry handler ran once');
});

suite.check('a job of a SIGKILLed Node worker process is recovered as stalled and completed by a ferry worker', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('stall-n2f'));
  const child = h.track(
    spawn(
      process.execPath,
      [path.join(__dirname, 'lib', 'node_worker_child.js'), nq.name, JSON.stringify(h.connection), '1000', '500', 'node-doomed'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    ),
  );
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const exited = new Promise((r) => child.on('close', (code, signal) => r({ code, signal })));
  await h.waitFor(() => out.includes('ready'), { what: 'node child worker ready', timeout: 30000 });
  const job = await nq.queue.add('slow', { n: 2 });
  await h.waitFor(() => out.includes(`started ${job.id}\n`), { what: `node child to start job ${job.id} (output: ${out})` });
  const j0 = await Job.fromId(nq.queue, job.id);
  assert.strictEqual(await j0.getState(), 'active');
  assert.strictEqual(j0.processedBy, 'node-doomed');
  child.kill('SIGKILL');
  assert.strictEqual((await exited).signal, 'SIGKILL');
  const killedAt = Date.now();

  const fw = h.startFerryWorker(nq.name, { name: 'ferry-rescuer', stalledInterval: 1000 });
  const j = await h.nodeJobInState(nq, job.id, 'completed');
  assert.strictEqual(j.processedBy, 'ferry-rescuer');
  assert.strictEqual(j.returnvalue.id, job.id);
  assert.deepStrictEqual(j.returnvalue.data, { n: 2 });
  assert.strictEqual(j.stalledCounter, 1, 'stc = 1');
  assert.strictEqual(j.attemptsStarted, 2, 'ats = 2 (Node + ferry)');
  assert.strictEqual(j.attemptsMade, 1, 'atm = 1');
  const starts = fw.starts(job.id);
  assert.strictEqual(starts.length, 1);
  assert.ok(starts[0].t >= killedAt, 'ferry ran it after the kill');
  await nq.waitEvent('stalled', job.id);
  const st = await fw.stop();
  assert.deepStrictEqual(st, { code: 0, signal: null });
});

suite.check('SIGTERM: a ferry worker finishes its running job, then exits 0; nothing is left active', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('stall-term'));
  const job = await nq.queue.add('slowish', { x: 1 });
  const fw = h.startFerryWorker(nq.name, { behave: { slowish: { sleepMs: 800 } } });
  await h.waitFor(() => fw.starts(job.id).length === 1, { what: 'handler start' });
  const st = await fw.stop();
  assert.deepStrictEqual(st, { code: 0, signal: null }, `exit status (output: ${fw.output})`);
  const j = await Job.fromId(nq.queue, job.id);
  assert.strictEqual(await j.getState(), 'completed');
  assert.strictEqual(j.returnvalue.id, job.id);
  assert.strictEqual(fw.ends(job.id).length, 1);
  assert.deepStrictEqual(await nq.queue.getJobCounts('active', 'waiting'), { active: 0, waiting: 0 });
});

suite.run();
