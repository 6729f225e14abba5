// bench.test.js - the benchmark tools fail loudly instead of hanging or reporting success:
// the BullMQ Node baseline (bench/node/bullmq_bench.js) ends a process run at once, exit 1,
// when a job fails (here a job with a deferred failure, `defa`, which BullMQ fails without
// running it); bench/run.sh exits 1 when a run failed, after printing the table, and it and
// bench/relay/run.sh refuse a ferry CLI that names a debug build.
// (`ferry bench` itself: test_queue_obliterate.c.)
'use strict';
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const h = require('./lib/harness');

const suite = new h.Suite('bench: the baseline and run.sh on failed runs');
const redis = h.newRedis();
suite.onCleanup(() => redis.quit());
const SRC = process.env.FERRY_SOURCE_DIR || path.resolve(__dirname, '../..');
const NODE_BENCH = path.join(SRC, 'bench/node/bullmq_bench.js');
const RUN_SH = path.join(SRC, 'bench/run.sh');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-bench-test-'));
suite.onCleanup(() => fs.rmSync(tmp, { recursive: true, force: true }));

const run = (cmd, args, opts = {}) => h.run(cmd, args, { timeout: 120000, ...opts });

// A stand-in ferry CLI: names BUILD on `--version`, lists the flags run.sh looks for on
// `bench --help`, and fails every benchmark run.
function fakeFerry(name, build) {
  const file = path.join(tmp, name);
  fs.writeFileSync(
    file,
    `#!/bin/sh
case "$1" in
--version) printf 'ferry 0.0.0-fake\\nbuild: ${build}\\n' ;;
bench) if [ "$2" = --help ]; then echo '--queue Q --no-fill --keep'; else echo 'fake bench failure' >&2; exit 3; fi ;;
*) exit 2 ;;
esac
`,
    { mode: 0o755 },
  );
  return file;
}

suite.check('Node baseline: a failed job ends a process run at once, exit 1, naming it', async () => {
  const q = h.uniqueQueue('bench');
  try {
    let r = await run('node', [NODE_BENCH, '--mode', 'fill', '--jobs', '40', '--queue', q, '--redis', h.ENV.redisUrl]);
    assert.strictEqual(r.code, 0, r.stderr);
    // job 20 fails without running (BullMQ's deferred failure)
    assert.strictEqual(await redis.hset(`${h.PREFIX}:${q}:20`, 'defa', 'bench test failure'), 1);
    // --wait 600000: without the failed-job check this would wait out the 120 s timeout
    r = await run('node', [NODE_BENCH, '--mode', 'process', '--no-fill', '--jobs', '40', '--concurrency', '4', '--queue', q,
      '--wait', '600000', '--redis', h.ENV.redisUrl]);
    assert.strictEqual(r.code, 1, `exit ${r.code}; stdout ${r.stdout}; stderr ${r.stderr}`);
    assert.match(r.stderr, /job 20 failed \(bench test failure\); the run is void/);
    assert.strictEqual(r.stdout, '', 'a void run prints no result line');
  } finally {
    await h.deleteQueueKeys(redis, q);
  }
});

suite.check('Node baseline: no completion for --wait ms ends the run, exit 1', async () => {
  const q = h.uniqueQueue('bench');
  try {
    // an empty queue: nothing ever completes
    const r = await run('node', [NODE_BENCH, '--mode', 'process', '--no-fill', '--jobs', '5', '--queue', q, '--wait', '300',
      '--redis', h.ENV.redisUrl]);
    assert.strictEqual(r.code, 1, `exit ${r.code}; stderr ${r.stderr}`);
    assert.match(r.stderr, /only 0 of 5 jobs completed \(no progress for 300 ms\)/);
  } finally {
    await h.deleteQueueKeys(redis, q);
  }
});

suite.check('run.sh: a failed run still gives the table, then exit 1 naming the count', async () => {
  const build = path.join(tmp, 'build-fail');
  fs.mkdirSync(build);
  const r = await run('bash', [RUN_SH, build], {
    env: { FERRY_BIN: fakeFerry('ferry-fails', 'Release'), BENCH_ONLY: 'process-c1', BENCH_ROUNDS: '1', BENCH_JOBS: '200' },
    timeout: 240000,
  });
  assert.strictEqual(r.code, 1, `exit ${r.code}; stderr ${r.stderr}`);
  assert.match(r.stderr, /ferry process-c1 round 1 failed \(exit 3\): fake bench failure/);
  assert.match(r.stderr, /bench: error: 1 of 2 runs failed/);
  assert.match(r.stdout, /\| process, concurrency 1/, 'the table is printed');
  const lines = fs.readFileSync(path.join(build, 'bench-results.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepStrictEqual(lines.map((l) => [l.impl, !!l.error]).sort(), [['ferry', true], ['node', false]]);
  assert.ok(lines.find((l) => l.impl === 'node').jobs_per_s > 0);
});

suite.check('run.sh and relay/run.sh: refuse a ferry CLI that names a debug or sanitizer build', async () => {
  for (const build of ['Debug', 'Debug, ASan+UBSan', 'RelWithDebInfo, ASan+UBSan']) {
    const dir = path.join(tmp, 'build-debug');
    fs.mkdirSync(dir, { recursive: true });
    const r = await run('bash', [RUN_SH, dir], { env: { FERRY_BIN: fakeFerry('ferry-debug', build) } });
    assert.strictEqual(r.code, 1, `${build}: exit ${r.code}; stderr ${r.stderr}`);
    assert.ok(r.stderr.includes(`is a "${build}" build: benchmark an optimised one`), `${build}: ${r.stderr}`);
    assert.ok(!fs.existsSync(path.join(dir, 'bench-results.jsonl')), `${build}: nothing was run`);
    // the relay benchmark too, before it starts any server
    const rr = await run('bash', [path.join(SRC, 'bench/relay/run.sh'), dir], { env: { FERRY_BIN: fakeFerry('ferry-debug', build) } });
    assert.strictEqual(rr.code, 1, `relay ${build}: exit ${rr.code}; stderr ${rr.stderr}`);
    assert.ok(rr.stderr.includes(`is a "${build}" build`), `relay ${build}: ${rr.stderr}`);
  }
});

suite.run();
