// dlq_sync.test.js - dead letters of jobs a Node BullMQ 6.7.0 worker failed for good:
// `ferry dlq sync` records each (an UnrecoverableError, attempts exhausted) once, with Node's
// failedReason, attemptsMade and data, a second sync records nothing, and a redrive
// re-enqueues them under fresh ids that Node's worker then completes with the same data.
'use strict';
const assert = require('node:assert');
const { UnrecoverableError } = require('bullmq');
const h = require('./lib/harness');

const suite = new h.Suite('dlq sync: Node worker failures recorded and redriven');
const db = h.ENV.databaseUrl;
const schema = `dlqi${process.pid}`;
const dbArgs = ['--database', db, '--schema', schema];

// A database-only command (no --redis): its stdout, or a thrown error naming the exit.
async function ferryDb(args) {
  const r = await h.run(h.ENV.bin, args);
  if (r.code !== 0) throw new Error(`ferry ${args.join(' ')} exited ${r.code}: ${r.stderr.trim()}`);
  return r.stdout;
}

suite.check('Node final failures are synced once and redriven under fresh ids', async () => {
  assert.ok(db, 'DATABASE_URL is in the test environment');
  await ferryDb(['migrate', ...dbArgs]);
  const nq = await h.nodeQueue(suite, h.uniqueQueue('dlq-sync'));
  let fixed = false;
  const w = h.startNodeWorker(nq.name, async (job) => {
    if (job.name === 'poison' && !fixed) throw new UnrecoverableError(`bad order ${job.data.order}`);
    if (job.name === 'flaky' && !fixed) throw new Error('gateway timeout');
    return { ok: job.data.order };
  });
  const ok = await nq.queue.add('ok', { order: 1 });
  const poison = [await nq.queue.add('poison', { order: 2, note: 'ünïcode' }, { attempts: 3 }),
                  await nq.queue.add('poison', { order: 3 }, { attempts: 3 })];
  const flaky = await nq.queue.add('flaky', { order: 4 }, { attempts: 2 });
  await h.nodeJobInState(nq, ok.id, 'completed');
  const failed = [];
  for (const j of [...poison, flaky]) failed.push(await h.nodeJobInState(nq, j.id, 'failed'));

  const out = await h.ferryOk(['dlq', 'sync', nq.name, ...dbArgs]);
  assert.match(out, /scanned 3 failed jobs: recorded 3, already recorded 0/);
  const rows = (await ferryDb(['dlq', 'list', '--queue', nq.name, '--json', ...dbArgs]))
    .trim().split('\n').map((l) => JSON.parse(l));
  assert.strictEqual(rows.length, 3);
  for (const j of failed) {
    const r = rows.find((x) => x.jobId === j.id);
    assert.ok(r, `row for job ${j.id}`);
    assert.strictEqual(r.name, j.name);
    assert.strictEqual(r.error, j.failedReason);
    assert.strictEqual(r.attemptsMade, j.attemptsMade);
    assert.strictEqual(r.recordedBy, 'sync');
    assert.strictEqual(r.prefix, h.PREFIX);
    assert.strictEqual(r.failedAtMs, j.finishedOn);
    const shown = JSON.parse(await ferryDb(['dlq', 'show', r.id, '--json', ...dbArgs]));
    assert.deepStrictEqual(shown.data, j.data);
  }
  assert.strictEqual(rows.find((x) => x.name === 'flaky').attemptsMade, 2);

  const again = await h.ferryOk(['dlq', 'sync', nq.name, ...dbArgs]);
  assert.match(again, /recorded 0, already recorded 3/);

  fixed = true;
  const red = await h.ferryOk(['dlq', 'redrive', '--queue', nq.name, '--name', 'poison', '--execute', '--actor', 'interop', ...dbArgs]);
  assert.match(red, /2 rows redriven/);
  for (const p of poison) {
    const r = rows.find((x) => x.jobId === p.id);
    const newId = `dlq-${r.id}-1`;
    const done = await h.nodeJobInState(nq, newId, 'completed');
    assert.deepStrictEqual(done.data, p.data, 'the redriven job carries the same data');
    assert.strictEqual(done.name, 'poison');
    assert.strictEqual(done.opts.attempts, 3, 'its options come along');
    assert.deepStrictEqual(done.returnvalue, { ok: p.data.order });
  }
  assert.strictEqual(await nq.queue.getJobState(flaky.id), 'failed', 'rows outside the filter are left alone');
  await w.close();
});

suite.run();
