// bullmq_bench.js - the BullMQ 6.7.0 Node baseline that bench/run.sh runs against `ferry bench`
// on the same private Redis. Prints one JSON line with the same keys as `ferry bench --json`.
//
//   node bullmq_bench.js --mode addbulk|add|fill|process|latency --jobs N [--warmup W]
//        [--concurrency K] [--payload BYTES] [--batch 1000] [--rate R] [--queue bench] [--no-fill]
//        [--wait MS] --redis URL
//
// A failed job voids a process or latency run (the processor does nothing, so something is
// wrong): it exits 1 at once, naming the job. So does no completion for --wait ms (default
// 120000, as `ferry bench --wait`), instead of hanging until run.sh's time limit.
//
// --warmup W: untimed work of the same kind first, in the same process, so that start-up and
// V8's warm-up stay out of the figures (as `ferry bench --warmup W`): add modes add W jobs before
// the timer starts; process mode fills N+W jobs (with --no-fill the queue must hold N+W) and
// times from the W-th completion to the last; latency mode adds N+W jobs and drops the first W
// samples. Every job is added with removeOnComplete:true, as ferry bench adds them.
//
// addbulk  Queue.addBulk in batches of --batch, one batch in flight (timed: the N adds after
//          the W warm-up adds)
// add      `await queue.add` loop (timed: the N adds after the W warm-up adds)
// fill     addBulk of N+W jobs with removeOnComplete:true (untimed helper for process runs)
// process  fill (unless --no-fill), then a Worker with concurrency K and a no-op processor;
//          timed from the W-th completion (from worker start when W is 0) to the (N+W)-th;
//          timed_jobs = the completions after the timer started
// latency  an idle Worker (concurrency K) in this process, a producer child adding N+W jobs at
//          --rate jobs/s; latency = processor start - producer's clock at add (sub-ms clock),
//          the first W samples dropped; timed_jobs = N+W (the producer's rate covers them all)
// client_cpu_us_per_job is this process's CPU (plus the producer child's in latency mode)
// during the timed phase divided by timed_jobs (N in add modes); in process mode
// redis_cpu_us_per_job is the INFO cpu delta of redis-server over the timed phase divided by
// timed_jobs (as `ferry bench` reports it).
'use strict';
const { fork } = require('node:child_process');
const { performance } = require('node:perf_hooks');
const { Queue, Worker } = require('bullmq');
const IORedis = require('ioredis');
const { parseArgs, connectionFromUrl, payload, cpuSince, redisCpuSeconds, percentile, emit } = require('./common');

const args = parseArgs(process.argv.slice(2), {
  mode: 'process',
  jobs: '10000',
  concurrency: '1',
  payload: '100',
  batch: '1000',
  rate: '500',
  queue: 'bench',
  warmup: '0',
  wait: '120000',
});
const N = Number(args.jobs);
const W = Number(args.warmup);
const K = Number(args.concurrency);
const BATCH = Number(args.batch);
const WAIT_MS = Number(args.wait);
if (!(WAIT_MS >= 1)) throw new Error(`--wait must be a positive number of ms, not ${args.wait}`);
if (!args.redis) throw new Error('--redis URL is required');
const connection = connectionFromUrl(args.redis);
const data = payload(Number(args.payload));
const wallMs = () => performance.timeOrigin + performance.now();
const jobOpts = { removeOnComplete: true };

async function addBulkAll(queue, n, opts) {
  for (let done = 0; done < n; done += BATCH) {
    const size = Math.min(BATCH, n - done);
    const batch = new Array(size);
    for (let i = 0; i < size; i++) batch[i] = { name: 'bench', data, opts };
    await queue.addBulk(batch);
  }
}

async function modeAdd(bulk) {
  const queue = new Queue(args.queue, { connection });
  await queue.waitUntilReady();
  const addAll = async (n) => {
    if (bulk) await addBulkAll(queue, n, jobOpts);
    else for (let i = 0; i < n; i++) await queue.add('bench', data, jobOpts);
  };
  if (W > 0) await addAll(W);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await addAll(N);
  const dt = performance.now() - t0;
  const cpu = cpuSince(cpu0);
  await queue.close();
  return { mode: bulk ? 'addbulk' : 'add', jobs: N, seconds: dt / 1000, jobs_per_s: (N * 1000) / dt, client_cpu_us_per_job: cpu / N };
}

async function modeFill() {
  const queue = new Queue(args.queue, { connection });
  await addBulkAll(queue, N + W, jobOpts);
  await queue.close();
  return { mode: 'fill', jobs: N + W };
}

// A worker's run ends early on a failed job or when no job completes for WAIT_MS:
// `guard.failed` rejects then. progress() marks a completion. stop() clears the timer.
function runGuard(worker, total, countSoFar) {
  let fail;
  let last = performance.now();
  const failed = new Promise((_, reject) => (fail = reject));
  failed.catch(() => {}); // raced below; an unraced rejection must not end the process early
  worker.on('failed', (job, err) => {
    fail(new Error(`job ${job ? job.id : '?'} failed (${err ? err.message : 'no reason'}); the run is void`));
  });
  const timer = setInterval(() => {
    if (performance.now() - last > WAIT_MS)
      fail(new Error(`only ${countSoFar()} of ${total} jobs completed (no progress for ${WAIT_MS} ms)`));
  }, 100);
  return {
    failed,
    progress: () => (last = performance.now()),
    stop: () => clearInterval(timer),
  };
}

async function modeProcess() {
  if (!args['no-fill']) await modeFill();
  const total = N + W;
  let done = 0;
  let finish;
  let warm;
  const finished = new Promise((r) => (finish = r));
  const warmedUp = new Promise((r) => (warm = r));
  const info = new IORedis(connection);
  await info.ping();
  const mark = async () => {
    // Redis first, then the clock and the completions so far (as ferry bench does)
    const redis = await redisCpuSeconds(info);
    return { redis, cpu: process.cpuUsage(), t: performance.now(), done };
  };
  let start = W > 0 ? null : await mark();
  const worker = new Worker(args.queue, async () => {}, { connection, concurrency: K });
  const guard = runGuard(worker, total, () => done);
  worker.on('completed', () => {
    ++done;
    guard.progress();
    if (done === W) warm();
    if (done === total) finish(performance.now());
  });
  worker.on('error', (e) => process.stderr.write(`worker error: ${e.message}\n`));
  if (W > 0) {
    await Promise.race([warmedUp, guard.failed]);
    start = await mark();
  }
  const t1 = await Promise.race([finished, guard.failed]);
  guard.stop();
  const cpu = cpuSince(start.cpu);
  const redis1 = await redisCpuSeconds(info);
  info.disconnect();
  await worker.close();
  const counted = total - start.done;
  if (counted < 1) throw new Error('every job completed before the timer started (raise --jobs or lower --warmup)');
  const dt = t1 - start.t;
  return {
    mode: 'process', jobs: N, warmup: W, timed_jobs: counted, concurrency: K, seconds: dt / 1000,
    jobs_per_s: (counted * 1000) / dt, client_cpu_us_per_job: cpu / counted,
    redis_cpu_us_per_job: ((redis1 - start.redis) * 1e6) / counted,
  };
}

async function modeLatency() {
  const lat = [];
  let seen = 0;
  let finish;
  const finished = new Promise((r) => (finish = r));
  let guard = null;
  const worker = new Worker(
    args.queue,
    async (job) => {
      const ms = wallMs() - job.data.t;
      if (guard) guard.progress();
      if (++seen > W) lat.push(ms);
      if (seen === N + W) finish(performance.now());
    },
    { connection, concurrency: K },
  );
  guard = runGuard(worker, N + W, () => seen);
  worker.on('error', (e) => process.stderr.write(`worker error: ${e.message}\n`));
  await worker.waitUntilReady();
  const cpu0 = process.cpuUsage();
  const childArgs = ['--mode', 'latency-producer', '--jobs', String(N + W), '--payload', args.payload, '--rate', args.rate,
    '--queue', args.queue, '--redis', args.redis];
  const child = fork(__filename, childArgs, { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const childDone = new Promise((resolve, reject) => {
    child.on('message', (m) => resolve(m));
    child.on('exit', (code) => (code ? reject(new Error(`producer exited ${code}`)) : null));
  });
  // (a producer that dies ends the wait too: childDone rejects)
  await Promise.race([finished, guard.failed, childDone.then(() => new Promise(() => {}))]);
  guard.stop();
  const producer = await childDone;
  const cpu = cpuSince(cpu0) + producer.cpu_us;
  await worker.close();
  lat.sort((a, b) => a - b);
  // jobs/s here is the rate the producer achieved over all N+W adds (its start-up is not part of it)
  return {
    mode: 'latency', jobs: N, warmup: W, timed_jobs: N + W, concurrency: K, rate: Number(args.rate), seconds: producer.seconds,
    jobs_per_s: (N + W) / producer.seconds,
    client_cpu_us_per_job: cpu / (N + W),
    p50_ms: percentile(lat, 0.5), p99_ms: percentile(lat, 0.99), max_ms: lat[lat.length - 1],
  };
}

// Child of modeLatency: add N jobs at --rate per second on an absolute schedule (no drift), the
// add time in the data as a sub-millisecond wall clock.
async function modeLatencyProducer() {
  const queue = new Queue(args.queue, { connection });
  await queue.waitUntilReady();
  const rate = Number(args.rate);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const due = t0 + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    await queue.add('lat', { ...data, t: wallMs() }, jobOpts);
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = cpuSince(cpu0);
  await queue.close();
  process.send({ cpu_us: cpu, seconds }, () => process.exit(0));
}

const modes = { addbulk: () => modeAdd(true), add: () => modeAdd(false), fill: modeFill, process: modeProcess, latency: modeLatency, 'latency-producer': modeLatencyProducer };

(async () => {
  const run = modes[args.mode];
  if (!run) throw new Error(`unknown --mode ${args.mode}`);
  const res = await run();
  if (res) emit({ impl: 'bullmq-node', ...res });
  if (args.mode !== 'latency-producer') process.exit(0);
})().catch((e) => {
  process.stderr.write(`bullmq_bench: ${e && e.stack ? e.stack : e}\n`);
  process.exit(1);
});
