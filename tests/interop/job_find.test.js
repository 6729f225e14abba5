// job_find.test.js - `ferry job find` (ferry_queue_find_jobs) on jobs Node BullMQ 6.7.0 added
// and moved through its states (waiting, prioritized, delayed, completed, failed) finds the same
// jobs as a Node scan does: Queue.getJobs over every state, filtered the same way (exact name;
// the data's JSON text as Node stored it contains the text, bytes, case-sensitive), each with
// the state Node's job.getState() gives; --state narrows the scan to one state as
// getJobs([state]); --limit stops at N matches and says so; the progress lines name the
// states scanned.
'use strict';
const assert = require('node:assert');
const h = require('./lib/harness');

const suite = new h.Suite('job_find: ferry job find = a Node getJobs scan filtered the same way');

const ALL_STATES = ['waiting', 'prioritized', 'delayed', 'active', 'waiting-children', 'paused', 'failed', 'completed'];
const asNodeState = (s) => (s === 'wait' ? 'waiting' : s);

async function ferryFind(queue, args) {
  const r = await h.ferry(['job', 'find', queue, '--json', ...args]);
  assert.strictEqual(r.code, 0, `ferry job find ${args.join(' ')}: exit ${r.code}: ${r.stderr}`);
  const found = r.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .map((j) => ({ id: j.id, name: j.name, state: asNodeState(j.state) }));
  return { found: found.sort((a, b) => a.id.localeCompare(b.id)), stderr: r.stderr };
}

// Node's answer: every job of `states`, filtered, with its state.
async function nodeFind(queue, { name, dataContains, states = ALL_STATES } = {}) {
  const jobs = (await queue.getJobs(states, 0, -1)).filter(Boolean);
  const out = [];
  for (const j of jobs) {
    if (name !== undefined && j.name !== name) continue;
    if (dataContains !== undefined && !JSON.stringify(j.data).includes(dataContains)) continue;
    out.push({ id: j.id, name: j.name, state: await j.getState() });
  }
  return out.sort((a, b) => a.id.localeCompare(b.id));
}

suite.check('by name, by data text, both, per state: the same jobs as Node finds', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('find'));
  const q = nq.queue;
  // jobs to finish first (a Node worker completes "alpha", fails "beta")
  await q.addBulk([
    { name: 'alpha', data: { customer: 'acme-42', n: 1 } },
    { name: 'beta', data: { customer: 'acme-7', n: 2 } },
    { name: 'alpha', data: { customer: 'globex', note: 'résumé "quoted"' } },
  ]);
  const w = h.startNodeWorker(nq.name, async (job) => {
    if (job.name === 'beta') throw new Error('beta fails');
    return { ok: true };
  });
  await h.waitFor(async () => {
    const c = await q.getJobCounts('completed', 'failed');
    return c.completed === 2 && c.failed === 1;
  }, { what: 'the first jobs to finish' });
  await w.close();
  // jobs that stay: waiting, prioritized, delayed
  await q.add('alpha', { customer: 'acme-42', n: 4 });
  await q.add('beta', { customer: 'initech', tags: ['acme'] });
  await q.add('alpha', { customer: 'acme-99' }, { priority: 3 });
  await q.add('gamma', { customer: 'ACME' }, { delay: 600000 });
  await q.add('alpha', 'acme as a plain string');

  // [ferry's options, the same filter for Node, how many jobs match]
  const cases = [
    [['--name', 'alpha'], { name: 'alpha' }, 5],
    [['--name', 'beta'], { name: 'beta' }, 2],
    [['--name', 'nobody'], { name: 'nobody' }, 0],
    [['--data-contains', 'acme'], { dataContains: 'acme' }, 6],
    [['--data-contains', '"customer":"acme-42"'], { dataContains: '"customer":"acme-42"' }, 2],
    [['--data-contains', 'résumé \\"quoted\\"'], { dataContains: 'résumé \\"quoted\\"' }, 1],
    [['--name', 'alpha', '--data-contains', 'acme'], { name: 'alpha', dataContains: 'acme' }, 4],
    [['--name', 'alpha', '--state', 'completed'], { name: 'alpha', states: ['completed'] }, 2],
    [['--data-contains', 'acme', '--state', 'failed'], { dataContains: 'acme', states: ['failed'] }, 1],
    [['--data-contains', 'acme', '--state', 'prioritized'], { dataContains: 'acme', states: ['prioritized'] }, 1],
    [['--state', 'delayed'], { states: ['delayed'] }, 1],
    [[], {}, 8],
  ];
  for (const [args, filter, want] of cases) {
    const mine = await ferryFind(nq.name, args);
    const node = await nodeFind(q, filter);
    assert.deepStrictEqual(mine.found, node, `ferry job find ${args.join(' ')}`);
    assert.strictEqual(node.length, want, `matches of ${args.join(' ')}`);
  }
  // the scan covered every job and said where it was
  const all = await ferryFind(nq.name, []);
  assert.strictEqual(all.found.length, 8);
  assert.match(all.stderr, /scanned 8 jobs \(now in completed\), 8 matches/);
  // case-sensitive: 'ACME' only in gamma's data
  const upper = await ferryFind(nq.name, ['--data-contains', 'ACME']);
  assert.deepStrictEqual(upper.found.map((j) => j.name), ['gamma']);
});

suite.check('--limit stops at N matches and says so', async () => {
  const nq = await h.nodeQueue(suite, h.uniqueQueue('find-limit'));
  await nq.queue.addBulk([1, 2, 3, 4, 5].map((n) => ({ name: 'x', data: { n } })));
  const r = await ferryFind(nq.name, ['--name', 'x', '--limit', '2']);
  assert.strictEqual(r.found.length, 2);
  const ids = new Set((await nodeFind(nq.queue, { name: 'x' })).map((j) => j.id));
  for (const j of r.found) assert.ok(ids.has(j.id), `${j.id} is one of Node's`);
  assert.match(r.stderr, /stopped at --limit 2 matches/);
});

suite.run();
