// queue_events.test.js - `ferry queue events` sees the events stream as Node BullMQ 6.7.0's
// QueueEvents sees it: for the same operations (adds by Node and by ferry, a delayed add,
// jobs completed and failed by a ferry worker and by a Node worker) a QueueEvents listener
// reading from the start and `ferry queue events --json --from 0` give the same events in
// the same order (names and jobIds, and the fields QueueEvents passes: returnvalue parsed
// as JSON, failedReason, prev, delay); `--follow` shows an event written after it started
// as QueueEvents does, and exits 0 on SIGTERM.
'use strict';
const assert = require('node:assert');
const { spawn } = require('node:child_process');
const h = require('./lib/harness');

const suite = new h.Suite('queue_events: ferry queue events shows what Node QueueEvents sees');

// The events QueueEvents emits by name (its log keeps only these), as ferry prints them.
async function ferryEvents(queue) {
  const out = await h.ferryOk(['queue', 'events', queue, '--json', '--from', '0', '--count', '10000']);
  return out
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

// One event as QueueEvents hands it over (queue-events.js consumeEvents): its fields without
// the stream id, with progress data and completed returnvalue JSON.parsed and delayed delay
// made a Number (ferry prints every field as the stored string).
function asQueueEvents(e) {
  const o = { ...e };
  delete o.id;
  if (o.event === 'progress' && o.data !== undefined) o.data = JSON.parse(o.data);
  if (o.event === 'completed' && o.returnvalue !== undefined) o.returnvalue = JSON.parse(o.returnvalue);
  if (o.event === 'delayed') o.delay = Number(o.delay);
  return o;
}

suite.check('the same events, names, jobIds and fields, as QueueEvents for the same operations', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('events'));
  const fromNode = (await nq.queue.add('node-ok', { n: 1 })).id;
  const fromFerry = await h.ferryAdd(nq.name, 'ferry-ok', { n: 2 });
  const bad = await h.ferryAdd(nq.name, 'ferry-bad', { n: 3 });
  const later = await h.ferryAdd(nq.name, 'later', { n: 4 }, { opts: { delay: 600000 } });
  const fw = h.startFerryWorker(nq.name, { behave: { 'ferry-bad': { exit: 65, stderr: 'bad input\n' } } });
  await nq.waitEvent('completed', fromNode);
  await nq.waitEvent('completed', fromFerry);
  await nq.waitEvent('failed', bad);
  await fw.stop();
  // a Node worker fails one ferry added
  const nodeBad = await h.ferryAdd(nq.name, 'node-bad', {});
  h.startNodeWorker(nq.name, async (job) => {
    if (job.name === 'node-bad') throw new Error('node says no');
    return { ok: job.id };
  });
  await nq.waitEvent('failed', nodeBad);

  const mine = await ferryEvents(nq.name);
  const known = new Set(['added', 'waiting', 'delayed', 'active', 'progress', 'completed', 'failed',
    'retries-exhausted', 'stalled', 'duplicated', 'deduplicated', 'removed', 'paused', 'resumed', 'drained']);
  const compared = mine.filter((e) => known.has(e.event)).map(asQueueEvents);
  // QueueEvents may still be reading the last entries ferry already printed, and the Node
  // worker may add one (drained) after ferry read: compare what both have seen
  await h.waitFor(() => nq.log.length >= compared.length, { what: 'QueueEvents caught up' });
  const theirs = nq.log.slice(0, compared.length);
  assert.deepStrictEqual(compared.map((e) => `${e.event}:${e.jobId}`), theirs.map((e) => `${e.event}:${e.jobId}`));
  assert.deepStrictEqual(compared, theirs);
  assert.ok(compared.length >= 20, `only ${compared.length} events`);
  for (const e of mine) assert.match(e.id, /^\d+-\d+$/);

  // the fields each kind carries
  const one = (ev, id) => compared.find((e) => e.event === ev && e.jobId === id);
  assert.strictEqual(one('added', fromFerry).name, 'ferry-ok');
  assert.strictEqual(one('completed', fromFerry).prev, 'active');
  assert.strictEqual(one('completed', fromFerry).returnvalue.name, 'ferry-ok');
  assert.strictEqual(one('failed', bad).failedReason, 'bad input');
  assert.strictEqual(one('failed', nodeBad).failedReason, 'node says no');
  assert.ok(one('delayed', later).delay > Date.now(), 'delayed carries the due time');
  assert.strictEqual(one('active', fromNode).prev, 'waiting');

  // the text form: one line per event, the same count
  const text = await h.ferryOk(['queue', 'events', nq.name, '--from', '0', '--count', '10000']);
  assert.strictEqual(text.split('\n').filter(Boolean).length, mine.length);
  assert.match(text, new RegExp(`^\\d+-\\d+ failed jobId=${bad} failedReason=bad input .*prev=active$`, 'm'));
  // --count: the newest N
  const last2 = (await h.ferryOk(['queue', 'events', nq.name, '--json', '--count', '2'])).split('\n').filter(Boolean).map((l) => JSON.parse(l));
  assert.deepStrictEqual(last2, mine.slice(-2));
});

suite.check('--follow shows a new event as QueueEvents does and exits 0 on SIGTERM', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('follow'));
  const first = await h.ferryAdd(nq.name, 'first', {});
  await nq.waitEvent('waiting', first);
  const p = h.track(spawn(h.ENV.bin, ['queue', 'events', nq.name, '--follow', '--json', '--redis', h.ENV.redisUrl],
    { stdio: ['ignore', 'pipe', 'pipe'] }));
  let out = '';
  let err = '';
  p.stdout.on('data', (d) => (out += d));
  p.stderr.on('data', (d) => (err += d));
  const exited = new Promise((resolve) => p.on('close', (code, signal) => resolve({ code, signal })));
  const lines = () => out.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  await h.waitFor(() => lines().some((e) => e.event === 'waiting' && e.jobId === first), { what: 'follow printed the first job' });
  const job = await nq.queue.add('second', { n: 2 });
  await nq.waitEvent('waiting', job.id);
  await h.waitFor(() => lines().some((e) => e.event === 'waiting' && e.jobId === job.id), { what: 'follow printed the new job' });
  p.kill('SIGTERM');
  const { code, signal } = await exited;
  assert.strictEqual(signal, null);
  assert.strictEqual(code, 0, `exit ${code}; stderr ${err}`);
  assert.strictEqual(err, '');
  assert.deepStrictEqual(lines().map(asQueueEvents), nq.log);
});

suite.run();
