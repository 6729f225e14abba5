// scheduler.test.js - job schedulers between ferry and Node BullMQ 6.7.0: schedulers upserted
// with `ferry scheduler upsert` are what Node's getJobSchedulers() reports and a Node Worker keeps
// producing their iterations; Node's schedulers are what `ferry scheduler list --json` prints;
// re-upserting the same scheduler from either side leaves one pending iteration at the same
// millis; `ferry scheduler remove` removes Node's; bad CLI arguments exit 2 with one line.
// The checks marked [ferry worker] show the ferry worker producing next iterations (it calls
// ferry__scheduler_on_fetch before the handler runs, see docs/schedulers.md).
'use strict';
const assert = require('node:assert');
const h = require('./lib/harness');


const suite = new h.Suite('scheduler: ferry <-> Node job schedulers');
const redis = h.newRedis();
suite.onCleanup(() => redis.quit());

const DAY = 86400000;

async function ferryList(queue) {
  const out = await h.ferryOk(['scheduler', 'list', queue, '--json']);
  return out.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

// Ids of a scheduler's iterations that are pending (waiting, delayed or prioritized).
async function pendingIterations(queue, id) {
  const base = `${h.PREFIX}:${queue}:`;
  const all = [
    ...(await redis.lrange(`${base}wait`, 0, -1)),
    ...(await redis.zrange(`${base}delayed`, 0, -1)),
    ...(await redis.zrange(`${base}prioritized`, 0, -1)),
  ];
  return all.filter((j) => j.startsWith(`repeat:${id}:`));
}

const millisOf = (jobId) => Number(jobId.split(':').pop());

suite.check('schedulers upserted by ferry are what Node getJobSchedulers() / getJobScheduler() report', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('sch-f2n'));
  const t0 = Date.now();
  const start = t0 + 3600000;
  const e = await h.ferryOk(['scheduler', 'upsert', nq.name, 'every-1500', '--every', '1500', '--name', 'tick',
    '--data', '{"a":1}', '--opts', '{"attempts":2,"removeOnComplete":3}']);
  assert.match(e.trim(), /^repeat:every-1500:\d+$/);
  const c = JSON.parse(await h.ferryOk(['scheduler', 'upsert', nq.name, 's-cron', '--cron', '0 3 * * *',
    '--tz', 'Asia/Ho_Chi_Minh', '--name', 'c', '--json']));
  assert.strictEqual(c.id, 's-cron');
  assert.strictEqual(millisOf(c.jobId) % DAY, 20 * 3600000, '03:00 +07 = 20:00 UTC the day before');
  assert.ok(c.delay > 0 && c.delay <= DAY);
  await h.ferryOk(['scheduler', 'upsert', nq.name, 'limited', '--every', '60000', '--limit', '5', '--start', String(start)]);

  const list = await nq.queue.getJobSchedulers(0, -1, true);
  const by = Object.fromEntries(list.map((s) => [s.key, s]));
  assert.deepStrictEqual(Object.keys(by).sort(), ['every-1500', 'limited', 's-cron']);
  const ev = by['every-1500'];
  assert.deepStrictEqual(ev, {
    key: 'every-1500', name: 'tick', next: millisOf(e.trim()), iterationCount: 1, every: 1500,
    offset: millisOf(e.trim()) % 1500, template: { data: { a: 1 }, opts: { attempts: 2, removeOnComplete: 3 } },
  });
  assert.deepStrictEqual(by['s-cron'], {
    key: 's-cron', name: 'c', next: millisOf(c.jobId), iterationCount: 1, tz: 'Asia/Ho_Chi_Minh', pattern: '0 3 * * *', offset: 0,
  });
  assert.deepStrictEqual(by.limited, {
    key: 'limited', name: 'limited', next: start, iterationCount: 1, limit: 5, startDate: start, every: 60000, offset: start % 60000,
  });
  assert.deepStrictEqual(await nq.queue.getJobScheduler('s-cron'), by['s-cron']);
  assert.strictEqual(await nq.queue.getJobSchedulersCount(), 3);
  // the pending iterations are ordinary Node jobs with the scheduler's key
  const j = await nq.queue.getJob(c.jobId);
  assert.strictEqual(j.repeatJobKey, 's-cron');
  assert.strictEqual(j.name, 'c');
  assert.deepStrictEqual(j.opts.repeat, { pattern: '0 3 * * *', tz: 'Asia/Ho_Chi_Minh', count: 1 });
  assert.strictEqual(await j.getState(), 'delayed');
});

suite.check('a Node Worker keeps producing the iterations of ferry-upserted every and cron+tz schedulers', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('sch-nw'));
  await h.ferryOk(['scheduler', 'upsert', nq.name, 'fast', '--every', '400', '--name', 'tick', '--data', '{"t":1}',
    '--opts', '{"removeOnComplete":100}']);
  await h.ferryOk(['scheduler', 'upsert', nq.name, 'sec', '--cron', '* * * * * *', '--tz', 'Europe/Berlin', '--name', 'cron']);
  const seen = [];
  h.startNodeWorker(nq.name, async (job) => {
    seen.push({ id: job.id, name: job.name, data: job.data, key: job.repeatJobKey, count: job.opts.repeat.count });
  });
  await h.waitFor(() => seen.filter((s) => s.key === 'fast').length >= 4 && seen.filter((s) => s.key === 'sec').length >= 2,
    { what: '4 fast + 2 cron iterations', timeout: 20000 });
  const fast = seen.filter((s) => s.key === 'fast');
  assert.deepStrictEqual(fast.slice(0, 4).map((s) => s.count), [1, 2, 3, 4], 'counts follow each other');
  // every 400 ms on the scheduler's grid (a late worker skips missed ticks, as in Node)
  for (let i = 1; i < 4; i++) {
    const gap = millisOf(fast[i].id) - millisOf(fast[i - 1].id);
    assert.ok(gap > 0 && gap % 400 === 0, `gap ${gap} is a positive multiple of 400`);
  }
  assert.ok(fast.every((s) => s.name === 'tick' && s.data.t === 1));
  const sec = seen.filter((s) => s.key === 'sec');
  assert.ok(sec.every((s) => millisOf(s.id) % 1000 === 0), 'cron slots on whole seconds');
  assert.strictEqual(new Set(seen.map((s) => s.id)).size, seen.length, 'no iteration ran twice');
  const s = await nq.queue.getJobScheduler('fast');
  assert.ok(s.iterationCount >= 5, `iterationCount ${s.iterationCount}`);
});

suite.check('schedulers upserted by Node are listed by `ferry scheduler list --json` with the same fields', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('sch-n2f'));
  const end = Date.now() + 7200000;
  await nq.queue.upsertJobScheduler('every-1500', { every: 1500 }, { name: 'tick', data: { a: 1 }, opts: { attempts: 2, removeOnComplete: 3 } });
  await nq.queue.upsertJobScheduler('cron-2s', { pattern: '*/2 * * * * *', tz: 'UTC' }, { name: 'cronjob', data: { c: true } });
  await nq.queue.upsertJobScheduler('off', { every: 10000, offset: 2500, endDate: end, limit: 3 }, { name: 'o', opts: { priority: 3, keepLogs: 5 } });
  const node = await nq.queue.getJobSchedulers(0, -1, true);
  const ferry = await ferryList(nq.name);
  assert.deepStrictEqual(ferry, node);
  const human = await h.ferryOk(['scheduler', 'list', nq.name]);
  assert.match(human, /cron-2s\s+cronjob\s+cron '\*\/2 \* \* \* \* \*' UTC/);
  assert.match(human, /off\s+o\s+every 10000 ms \+2500 ms\s+\S+Z\s+1 of 3/);
});

suite.check('re-upserting from ferry and Node leaves one pending iteration at the same millis', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('sch-reup'));
  const a = await nq.queue.upsertJobScheduler('s-every', { every: 60000 }, { name: 'e' });
  const b = (await h.ferryOk(['scheduler', 'upsert', nq.name, 's-every', '--every', '60000', '--name', 'e', '--data', '{"v":2}'])).trim();
  const c = await nq.queue.upsertJobScheduler('s-every', { every: 60000 }, { name: 'e', data: { v: 3 } });
  assert.strictEqual(b, a.id);
  assert.strictEqual(c.id, a.id);
  assert.deepStrictEqual(await pendingIterations(nq.name, 's-every'), [a.id]);
  assert.deepStrictEqual((await nq.queue.getJob(a.id)).data, { v: 3 });

  const x = (await h.ferryOk(['scheduler', 'upsert', nq.name, 's-cron', '--cron', '0 3 * * *', '--tz', 'Asia/Ho_Chi_Minh', '--name', 'c'])).trim();
  const y = await nq.queue.upsertJobScheduler('s-cron', { pattern: '0 3 * * *', tz: 'Asia/Ho_Chi_Minh' }, { name: 'c' });
  const z = (await h.ferryOk(['scheduler', 'upsert', nq.name, 's-cron', '--cron', '0 3 * * *', '--tz', 'Asia/Ho_Chi_Minh', '--name', 'c'])).trim();
  assert.strictEqual(y.id, x);
  assert.strictEqual(z, x);
  assert.deepStrictEqual(await pendingIterations(nq.name, 's-cron'), [x]);
  const s = await nq.queue.getJobScheduler('s-cron');
  assert.strictEqual(s.iterationCount, 1);
  assert.strictEqual(s.next, millisOf(x));
});

suite.check('`ferry scheduler remove` removes a Node scheduler and its delayed iteration (QueueEvents removed)', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('sch-rm'));
  const job = await nq.queue.upsertJobScheduler('nightly', { pattern: '0 3 * * *', tz: 'Asia/Ho_Chi_Minh' }, { name: 'n' });
  await h.ferryOk(['scheduler', 'remove', nq.name, 'nightly']);
  assert.deepStrictEqual(await nq.queue.getJobSchedulers(), []);
  assert.strictEqual(await nq.queue.getJob(job.id), undefined);
  const ev = await nq.waitEvent('removed', job.id);
  assert.strictEqual(ev.prev, 'delayed');
  const again = await h.ferry(['scheduler', 'remove', nq.name, 'nightly']);
  assert.strictEqual(again.code, 1);
  assert.match(again.stderr, /no job scheduler nightly/);
});

suite.check('bad `ferry scheduler` arguments exit 2 with one line on stderr', async () => {
  const q = h.uniqueQueue('sch-args');
  const cases = [
    [['scheduler', 'upsert', q, 'x'], /give --cron EXPR or --every MS/],
    [['scheduler', 'upsert', q, 'x', '--cron', '0 3 * * *', '--every', '5'], /not both/],
    [['scheduler', 'upsert', q, 'x', '--cron', '0 25 * * *'], /hour field/],
    [['scheduler', 'upsert', q, 'x', '--cron', '0 3 * * *', '--tz', 'Nowhere/Land'], /Nowhere\/Land/],
    [['scheduler', 'upsert', q, 'x', '--every', '-5'], /--every/],
    [['scheduler', 'upsert', q, 'x', '--every', '1000', '--tz', 'UTC'], /--tz applies to --cron only/],
    [['scheduler', 'upsert', q, 'x', '--every', '1000', '--opts', '{"jobId":"j"}'], /opts.jobId/],
    [['scheduler', 'upsert', q, 'x', '--every', '1000', '--end', '1000'], /in the past/],
    [['scheduler', 'upsert', q], /QUEUE ID|argument/],
    [['scheduler', 'list', q, '--bogus'], /bogus/],
  ];
  for (const [args, re] of cases) {
    const r = await h.ferry(args);
    assert.strictEqual(r.code, 2, `${args.join(' ')}: exit ${r.code} (${r.stderr.trim()})`);
    assert.match(r.stderr, re, args.join(' '));
    assert.strictEqual(r.stderr.trim().split('\n').length, 1, `one line: ${r.stderr}`);
  }
  assert.strictEqual(await redis.exists(`${h.PREFIX}:${q}:repeat`), 0);
  const help = await h.ferryOk(['scheduler', 'upsert', '--help']);
  assert.match(help, /--cron EXPR/);
  assert.match(help, /--every MS/);
  await h.deleteQueueKeys(redis, q);
});

// ---- [ferry worker] ---------------------------------------------------------------------------

suite.check('[ferry worker] a ferry worker continues a Node scheduler; Node sees the iteration count grow', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('sch-fw'));
  await nq.queue.upsertJobScheduler('tick', { every: 1000 }, { name: 'tick', data: { t: 1 }, opts: { removeOnComplete: 50 } });
  await nq.queue.upsertJobScheduler('sec', { pattern: '* * * * * *', tz: 'America/New_York' }, { name: 'sec' });
  const fw = h.startFerryWorker(nq.name, { concurrency: 4 });
  await h.waitFor(() => fw.starts().filter((r) => r.name === 'tick').length >= 3 && fw.starts().filter((r) => r.name === 'sec').length >= 3,
    { what: '3 iterations of each scheduler run by ferry', timeout: 30000 });
  const ticks = fw.starts().filter((r) => r.name === 'tick').map((r) => millisOf(r.id));
  for (let i = 1; i < 3; i++) {
    const gap = ticks[i] - ticks[i - 1];
    assert.ok(gap > 0 && gap % 1000 === 0, `gap ${gap} is a positive multiple of 1000`);
  }
  const s = await nq.queue.getJobScheduler('tick');
  assert.ok(s.iterationCount >= 4, `iterationCount ${s.iterationCount}`);
  assert.ok(s.next > ticks[2]);
  await fw.stop();
});

suite.check('[ferry worker] ferry and Node workers sharing a ferry scheduler run each iteration once', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('sch-mix'));
  await h.ferryOk(['scheduler', 'upsert', nq.name, 'mix', '--every', '300', '--name', 'mix']);
  const nodeSeen = [];
  h.startNodeWorker(nq.name, async (job) => {
    nodeSeen.push(job.id);
  });
  const fw = h.startFerryWorker(nq.name, { concurrency: 2 });
  await h.waitFor(async () => (await nq.queue.getJobScheduler('mix')).iterationCount >= 12, { what: '12 iterations', timeout: 30000 });
  await fw.stop();
  const ferrySeen = fw.starts().map((r) => r.id);
  const all = [...nodeSeen, ...ferrySeen];
  assert.strictEqual(new Set(all).size, all.length, `an iteration ran twice: ${all.sort().join(' ')}`);
  const ms = [...new Set(all)].map(millisOf).sort((a, b) => a - b);
  for (let i = 1; i < ms.length; i++) assert.strictEqual((ms[i] - ms[0]) % 300, 0, 'all on the 300 ms grid');
  console.log(`#   iterations run by ferry: ${ferrySeen.length}, by Node: ${nodeSeen.length}`);
  // the check is about sharing: both sides must have taken part
  assert.ok(ferrySeen.length > 0 && nodeSeen.length > 0, `ferry ran ${ferrySeen.length}, Node ${nodeSeen.length}`);
});

suite.check('[ferry worker] a ferry worker continues Node schedulers with limit \'2\' (a string), every \'400\' and every 500.5 as Node does', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('sch-loose'));
  // Node only checks that every is truthy and compares count > limit with JS coercion
  await nq.queue.upsertJobScheduler('lim', { every: 300, limit: '2' }, { name: 'lim' });
  await nq.queue.upsertJobScheduler('str', { every: '400' }, { name: 'str' });
  await nq.queue.upsertJobScheduler('frac', { every: 500.5 }, { name: 'frac' });
  const fw = h.startFerryWorker(nq.name, { concurrency: 4 });
  const ran = (name) => fw.starts().filter((r) => r.name === name);
  await h.waitFor(() => ran('str').length >= 3 && ran('frac').length >= 3 && ran('lim').length >= 2,
    { what: '3 iterations of str and frac, 2 of lim, run by ferry', timeout: 30000 });
  // lim's third slot was due long before str and frac ran three times: the limit held
  assert.strictEqual(ran('lim').length, 2, `lim ran ${ran('lim').length} times, limit '2'`);
  assert.strictEqual((await nq.queue.getJobScheduler('lim')).iterationCount, 2);
  assert.deepStrictEqual(await pendingIterations(nq.name, 'lim'), []);
  const str = ran('str').map((r) => millisOf(r.id));
  for (let i = 1; i < 3; i++) assert.ok(str[i] > str[i - 1] && (str[i] - str[i - 1]) % 400 === 0, `str gap ${str[i] - str[i - 1]}`);
  const frac = ran('frac').map((r) => millisOf(r.id));
  for (let i = 1; i < 3; i++) assert.ok(Number.isInteger(frac[i]) && frac[i] > frac[i - 1], `frac ${frac[i]} after ${frac[i - 1]}`);
  assert.ok((await nq.queue.getJobScheduler('frac')).iterationCount >= 4);
  await fw.stop();
  assert.doesNotMatch(fw.output, /scheduler job/, 'the worker reported no scheduler error');
});

suite.run();
