// outcomes.test.js - the worker outcomes across ferry and Node BullMQ 6.7.0:
// retry-later (ferry exit 118 / Node DelayedError), throttled (ferry exit 119 with a limiter /
// Node queue.rateLimit + RateLimitError), a limiter shared by two ferry workers and a Node
// worker, and the `capped` backoff on a Node-produced job. Timing is only ever checked as a
// lower bound ("not before"), which load on the box cannot break.
'use strict';
const assert = require('node:assert');
const { Job, Worker, DelayedError } = require('bullmq');
const h = require('./lib/harness');

const suite = new h.Suite('outcomes: retry-later, throttled, shared limiter, capped backoff');
const redis = h.newRedis();
suite.onCleanup(() => redis.quit());

const limiterKey = (q) => `${h.PREFIX}:${q}:limiter`;

// Wall-clock ms at which the queue's manual rate limit (BullMQ rateLimit: the limiter key
// set to 2^53-1) expires, once it is set. A limited worker's own fetches also create the key
// (value 1, TTL = its duration), so the value is what tells the two apart.
async function limiterExpiry(queue) {
  const ttl = await h.waitFor(async () => {
    const [v, t] = await redis.multi().get(limiterKey(queue)).pttl(limiterKey(queue)).exec();
    return v[1] === '9007199254740991' && t[1] > 0 ? t[1] : 0;
  }, { what: `manual rate limit on ${queue}` });
  return Date.now() + ttl;
}

suite.check('ferry exit 118 (retry-later): Node sees a delayed job with no attempt spent, then the job completes', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('oc-later'));
  const job = await nq.queue.add('later', { n: 1 }, { attempts: 1 });
  const w = h.startFerryWorker(nq.name, {
    behave: { later: { exit: 118, failAttempts: 1, failStdout: 'FERRY_RETRY_AFTER_MS=400\n', stderr: 'gateway: HTTP 503\n' } },
  });
  const ev = await nq.waitEvent('delayed', job.id);
  const delayed = await h.nodeJobInState(nq, job.id, 'delayed');
  assert.strictEqual(delayed.attemptsMade, 0, 'retry-later spends no attempt (attempts: 1 would otherwise fail it)');
  assert.strictEqual(delayed.attemptsStarted, 1);
  assert.strictEqual(delayed.delay, 400, 'job.delay = the requested delay');
  const starts = () => w.starts(job.id);
  const done = await h.nodeJobInState(nq, job.id, 'completed');
  const s = starts();
  assert.strictEqual(s.length, 2, 'ran twice');
  assert.ok(s[1].t - s[0].t >= 400 - 20, `second run ${s[1].t - s[0].t} ms after the first, asked 400`);
  assert.ok(Number(ev.delay) >= s[0].t + 400 - 20, 'the delayed event carries the due time');
  assert.strictEqual(done.attemptsMade, 1);
  assert.strictEqual(done.attemptsStarted, 2);
  assert.strictEqual(s[1].attempt, '1', 'FERRY_ATTEMPT is still 1: no attempt was spent');
});

suite.check('Node DelayedError (job.moveToDelayed) is picked up by a ferry worker after the delay, attempt unspent', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('oc-nodedelay'));
  const job = await nq.queue.add('later', { n: 2 }, { attempts: 1 });
  let due = 0;
  const nw = h.startNodeWorker(nq.name, async (j, token) => {
    due = Date.now() + 500;
    await j.moveToDelayed(due, token);
    throw new DelayedError();
  });
  await nq.waitEvent('delayed', job.id);
  await nw.close();
  const w = h.startFerryWorker(nq.name);
  const done = await h.nodeJobInState(nq, job.id, 'completed');
  const s = w.starts(job.id);
  assert.strictEqual(s.length, 1);
  assert.ok(s[0].t >= due - 20, `ferry ran it ${due - s[0].t} ms before it was due`);
  assert.strictEqual(s[0].attempt, '1');
  assert.strictEqual(done.attemptsMade, 1);
  assert.strictEqual(done.attemptsStarted, 2);
});

suite.check('maxStartedAttempts counts starts on both sides: a job Node postponed 3 times fails in ferry with max 3', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('oc-maxstarted'));
  const job = await nq.queue.add('loop', {}, { attempts: 5 });
  let runs = 0;
  const nw = h.startNodeWorker(nq.name, async (j, token) => {
    runs++;
    // the third postponement is long enough for the Node worker to be closed before it is due
    await j.moveToDelayed(Date.now() + (runs < 3 ? 50 : 1500), token);
    throw new DelayedError();
  });
  await h.waitFor(async () => runs >= 3 && (await nq.queue.getJobState(job.id)) === 'delayed', { what: '3 postponed runs in Node' });
  await nw.close();
  const w = h.startFerryWorker(nq.name, { extraArgs: ['--max-started-attempts', '3'] });
  const failed = await h.nodeJobInState(nq, job.id, 'failed');
  assert.strictEqual(failed.failedReason, 'job started more than allowable limit');
  assert.strictEqual(failed.attemptsStarted, 4, 'Node\'s three starts + the refused ferry fetch');
  assert.strictEqual(w.starts(job.id).length, 0, 'ferry never ran it');
});

suite.check('ferry exit 119 with a limiter rate-limits the queue: a Node worker with a limiter waits, the job is not charged an attempt', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('oc-throttle'));
  const t = await nq.queue.add('throttle', { n: 3 }, { attempts: 1 });
  const w = h.startFerryWorker(nq.name, {
    concurrency: 1,
    extraArgs: ['--limiter-max', '1000', '--limiter-duration', '1000'],
    behave: { throttle: { exit: 119, failAttempts: 1, failStdout: 'FERRY_RETRY_AFTER_MS=1500\n' } },
  });
  const expiry = await limiterExpiry(nq.name);
  // The throttled job is back in wait, at the front, without an attempt spent.
  const waiting = await h.nodeJobInState(nq, t.id, 'waiting');
  assert.strictEqual(waiting.attemptsMade, 0);
  const others = [];
  for (let i = 0; i < 4; i++) others.push((await nq.queue.add('normal', { i })).id);
  const seenByNode = [];
  h.startNodeWorker(nq.name, async (j) => {
    seenByNode.push({ id: j.id, t: Date.now() });
    return 'node';
  }, { limiter: { max: 1000, duration: 1000 } });
  await h.waitFor(async () => (await nq.queue.getJobCounts('completed')).completed === 5, { what: 'all 5 jobs completed' });
  for (const r of seenByNode) assert.ok(r.t >= expiry - 50, `Node ran job ${r.id} ${expiry - r.t} ms before the limit expired`);
  for (const r of w.starts()) {
    if (r.id === t.id && r.run === 1) continue;
    assert.ok(r.t >= expiry - 50, `ferry ran job ${r.id} ${expiry - r.t} ms before the limit expired`);
  }
  const done = await Job.fromId(nq.queue, t.id);
  assert.strictEqual(done.attemptsMade, 1, 'only the successful run counted');
  assert.ok(done.attemptsStarted >= 2);
});

suite.check('ferry exit 119 without a limiter behaves as retry-later (delayed, no attempt spent)', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('oc-throttle-nolim'));
  const t = await nq.queue.add('throttle', {}, { attempts: 1 });
  h.startFerryWorker(nq.name, { behave: { throttle: { exit: 119, failAttempts: 1, failStdout: 'FERRY_RETRY_AFTER_MS=300\n' } } });
  await nq.waitEvent('delayed', t.id);
  assert.strictEqual(await redis.exists(limiterKey(nq.name)), 0, 'no queue-wide limit without a limiter');
  const done = await h.nodeJobInState(nq, t.id, 'completed');
  assert.strictEqual(done.attemptsMade, 1);
});

suite.check('Node queue.rateLimit + RateLimitError holds back a ferry worker that has a limiter', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('oc-node-ratelimit'));
  const t = await nq.queue.add('throttle', {}, { attempts: 1 });
  let thrown = false;
  const nw = h.startNodeWorker(nq.name, async () => {
    if (!thrown) {
      thrown = true;
      await nq.queue.rateLimit(1500);
      throw Worker.RateLimitError();
    }
    return 'node';
  }, { limiter: { max: 1000, duration: 1000 } });
  const expiry = await limiterExpiry(nq.name);
  await h.nodeJobInState(nq, t.id, 'waiting');
  await nw.close(true);
  const w = h.startFerryWorker(nq.name, { extraArgs: ['--limiter-max', '1000', '--limiter-duration', '1000'] });
  const done = await h.nodeJobInState(nq, t.id, 'completed');
  const s = w.starts(t.id);
  assert.strictEqual(s.length, 1, 'ferry ran it once');
  assert.ok(s[0].t >= expiry - 50, `ferry ran it ${expiry - s[0].t} ms before the limit expired`);
  assert.strictEqual(done.attemptsMade, 1);
});

suite.check('a limiter {max 3, 1000 ms} is shared by two ferry workers and a Node worker', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('oc-shared'));
  const N = 21;
  await nq.queue.addBulk(Array.from({ length: N }, (_, i) => ({ name: 'job', data: { i } })));
  const lim = ['--limiter-max', '3', '--limiter-duration', '1000'];
  h.startFerryWorker(nq.name, { name: 'ferry-a', concurrency: 2, extraArgs: lim });
  h.startFerryWorker(nq.name, { name: 'ferry-b', concurrency: 2, extraArgs: lim });
  h.startNodeWorker(nq.name, async () => 'node', { name: 'node-c', concurrency: 2, limiter: { max: 3, duration: 1000 } });
  await h.waitFor(async () => (await nq.queue.getJobCounts('completed')).completed === N, { timeout: 40000, what: `${N} jobs completed` });
  const jobs = await nq.queue.getJobs(['completed'], 0, -1);
  assert.strictEqual(jobs.length, N);
  const starts = jobs.map((j) => j.processedOn).sort((a, b) => a - b);
  // Fixed windows of 1000 ms with at most 3 starts each: any 7 consecutive starts touch three
  // windows, so a whole window lies between the first and the last. Slack for the gap between
  // a client's clock reading and its call reaching Redis.
  for (let i = 0; i + 6 < N; i++) {
    const span = starts[i + 6] - starts[i];
    assert.ok(span >= 750, `starts ${i}..${i + 6} within ${span} ms: more than 3 per window`);
  }
  const by = {};
  for (const j of jobs) by[j.processedBy] = (by[j.processedBy] || 0) + 1;
  console.log(`#   processed by: ${JSON.stringify(by)}`);
  assert.ok(Object.keys(by).length >= 2, 'more than one worker took part');
});

suite.check('a Node-produced job with backoff {type: "capped"} is retried by ferry with a delay in the upper half', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('oc-capped'));
  const job = await nq.queue.add('flaky', {}, { attempts: 2, backoff: { type: 'capped', delay: 400 } });
  const w = h.startFerryWorker(nq.name, { behave: { flaky: { exit: 75, failAttempts: 1 } } });
  const delayed = await h.nodeJobInState(nq, job.id, 'delayed');
  assert.ok(delayed.delay >= 200 && delayed.delay <= 400, `capped first retry delay ${delayed.delay} not in [200, 400]`);
  await h.nodeJobInState(nq, job.id, 'completed');
  const s = w.starts(job.id);
  assert.strictEqual(s.length, 2);
  assert.ok(s[1].t - s[0].t >= 200 - 20, `retried after ${s[1].t - s[0].t} ms`);
});

suite.run();
