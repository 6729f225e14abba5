// harness.js - shared plumbing for the ferry <-> Node BullMQ interop tests: reads the test
// environment (FERRY_TESTENV/env, FERRY_BIN), runs checks and prints the `N passed, M failed`
// summary CTest and CI read, polls conditions with deadlines (never fixed sleeps as
// synchronisation), drives the `ferry` CLI and cleans up the keys of the queues a test used.
'use strict';
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const crypto = require('node:crypto');
const { spawn } = require('node:child_process');

const IORedis = require('ioredis');

// ---- environment -------------------------------------------------------------------------

function readEnvFile(file) {
  const out = {};
  for (const raw of fs.readFileSync(file, 'utf8').split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!m) continue;
    let v = m[2];
    if ((v.startsWith('"') && v.endsWith('"')) || (v.startsWith("'") && v.endsWith("'"))) v = v.slice(1, -1);
    out[m[1]] = v;
  }
  return out;
}

function loadEnv() {
  const dir = process.env.FERRY_TESTENV;
  let fileEnv = {};
  if (dir && fs.existsSync(path.join(dir, 'env'))) fileEnv = readEnvFile(path.join(dir, 'env'));
  const redisUrl = fileEnv.REDIS_URL || process.env.REDIS_URL;
  if (!redisUrl) throw new Error('REDIS_URL not found: set FERRY_TESTENV (with an env file) or REDIS_URL');
  const bin = process.env.FERRY_BIN;
  if (!bin) throw new Error('FERRY_BIN is not set (path of the built ferry CLI)');
  if (!fs.existsSync(bin)) throw new Error(`FERRY_BIN ${bin} does not exist (build the ferry CLI first)`);
  const databaseUrl = fileEnv.DATABASE_URL || process.env.DATABASE_URL || null;
  return { redisUrl, bin, testenvDir: dir || null, databaseUrl };
}

let ENV;
try {
  ENV = loadEnv();
} catch (e) {
  // Still end with the summary line the CI parses.
  console.log(`FAIL - test environment: ${e.message}`);
  console.log('0 passed, 1 failed');
  process.exit(1);
}

// ioredis/BullMQ connection options from redis://[user:pass@]host:port[/db] or unix:///path.
function connectionFromUrl(url) {
  const u = new URL(url);
  const opts = { maxRetriesPerRequest: null, enableOfflineQueue: true };
  if (u.username) opts.username = decodeURIComponent(u.username);
  if (u.password) opts.password = decodeURIComponent(u.password);
  if (u.protocol === 'unix:' || u.protocol === 'redis+unix:') {
    opts.path = u.pathname;
    const db = u.searchParams.get('db');
    if (db) opts.db = Number(db);
  } else {
    opts.host = u.hostname || '127.0.0.1';
    opts.port = Number(u.port || 6379);
    const db = u.pathname.replace(/^\//, '');
    if (db) opts.db = Number(db);
    if (u.protocol === 'rediss:') opts.tls = {};
  }
  return opts;
}

const connection = connectionFromUrl(ENV.redisUrl);
const PREFIX = 'bull';

function newRedis() {
  return new IORedis({ ...connection });
}

function uniqueQueue(tag) {
  return `ix-${tag}-${process.pid}-${crypto.randomBytes(4).toString('hex')}`;
}

// ---- polling -----------------------------------------------------------------------------

const tick = (ms) => new Promise((r) => setTimeout(r, ms));

// Poll `fn` until it returns a truthy value; returns that value. Throws after `timeout` ms
// with `what` and the last value seen, so a failure says what was being waited for.
async function waitFor(fn, { timeout = 20000, interval = 25, what = 'condition' } = {}) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    if (workerDied) {
      const d = workerDied;
      throw new Error(`ferry worker for ${d.queue} exited on its own (code ${d.code}, signal ${d.signal}) while waiting for ${what}: ${d.output.trimEnd().split('\n').slice(-5).join(' | ')}`);
    }
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      const shown = last instanceof Error ? last.message : JSON.stringify(last);
      throw new Error(`timed out after ${timeout} ms waiting for ${what} (last: ${shown})`);
    }
    await tick(interval);
  }
}

// Set when a ferry worker exits non-zero without having been told to stop: waitFor then fails
// at once with its output instead of waiting for its deadline. Reset before every check.
let workerDied = null;

// Observe for `ms` that `fn` keeps returning truthy (used for "must NOT happen" checks such as
// "a paused queue is not processed"); fails at the first falsy value.
async function holdsFor(ms, fn, what) {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const v = await fn();
    if (!v) throw new Error(`expected ${what} to hold for ${ms} ms, it stopped holding`);
    await tick(50);
  }
}

// ---- check runner ------------------------------------------------------------------------

// Runs named checks in order; prints one line per check and the final summary; exits 0 only if
// everything passed. `cleanup` functions run at the end whatever happened.
class Suite {
  constructor(title) {
    this.title = title;
    this.checks = [];
    this.cleanups = [];
  }
  check(name, fn) {
    this.checks.push({ name, fn });
  }
  onCleanup(fn) {
    this.cleanups.push(fn);
  }
  async run() {
    let passed = 0;
    let failed = 0;
    const t0 = Date.now();
    console.log(`# ${this.title} (redis ${ENV.redisUrl}, ferry ${ENV.bin})`);
    for (const c of this.checks) {
      const t = Date.now();
      workerDied = null;
      try {
        await c.fn();
        passed++;
        console.log(`ok - ${c.name} (${Date.now() - t} ms)`);
      } catch (e) {
        failed++;
        console.log(`FAIL - ${c.name} (${Date.now() - t} ms)`);
        console.log(String(e && e.stack ? e.stack : e).split('\n').map((l) => `#   ${l}`).join('\n'));
        for (const w of workers) {
          const tail = w.output.trimEnd().split('\n').slice(-15);
          console.log(`#   ferry worker ${w.queue} output (last ${tail.length} lines):`);
          console.log(tail.map((l) => `#     ${l}`).join('\n'));
        }
      }
      await closeNodeWorkers();
      await killChildren();
    }
    for (const fn of this.cleanups.reverse()) {
      try {
        await fn();
      } catch (e) {
        console.log(`# cleanup error: ${e && e.message}`);
      }
    }
    console.log(`# ${this.title}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    console.log(`${passed} passed, ${failed} failed`);
    process.exit(failed === 0 ? 0 : 1);
  }
}

// ---- child processes ---------------------------------------------------------------------

const children = new Set();

function track(proc) {
  children.add(proc);
  proc.once('exit', () => children.delete(proc));
  return proc;
}

// SIGKILL anything a check left running (also orphaned handler commands recorded by pid).
async function killChildren() {
  for (const w of workers) w.abandon();
  for (const p of children) {
    try {
      p.kill('SIGKILL');
    } catch (_) {
      /* already gone */
    }
  }
  children.clear();
  for (const w of workers) w.cleanup();
  workers.clear();
}
const workers = new Set();
process.on('exit', () => {
  for (const p of children) {
    try {
      p.kill('SIGKILL');
    } catch (_) {
      /* ignore */
    }
  }
  for (const w of workers) w.cleanup();
});

// Run a command to its end; resolves {code, signal, stdout, stderr}. `env` adds to this
// process's environment; SIGKILLed (and rejected) after `timeout` ms.
function run(cmd, args, { input, env, timeout = 30000 } = {}) {
  return new Promise((resolve, reject) => {
    const opts = { stdio: ['pipe', 'pipe', 'pipe'] };
    if (env) opts.env = { ...process.env, ...env };
    const p = track(spawn(cmd, args, opts));
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
      reject(new Error(`${path.basename(cmd)} ${args.join(' ')} did not finish in ${timeout} ms; stderr: ${stderr}`));
    }, timeout);
    p.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
    if (input !== undefined) p.stdin.end(input);
    else p.stdin.end();
  });
}

// Run the ferry CLI (see run). Always passes --redis.
function ferry(args, opts) {
  return run(ENV.bin, [...args, '--redis', ENV.redisUrl], opts);
}

async function ferryOk(args, opts) {
  const r = await ferry(args, opts);
  if (r.code !== 0) {
    throw new Error(`ferry ${args.join(' ')} exited ${r.code}${r.signal ? ' (' + r.signal + ')' : ''}: ${r.stderr.trim()}`);
  }
  return r.stdout;
}

// `ferry queue add` -> the job id it printed.
async function ferryAdd(queue, name, data, { opts, jobId, stdin = false } = {}) {
  const args = ['queue', 'add', queue, name];
  let input;
  if (data !== undefined) {
    const text = typeof data === 'string' ? data : JSON.stringify(data);
    if (stdin) {
      args.push('-');
      input = text;
    } else {
      args.push(text);
    }
  }
  if (opts !== undefined) args.push('--opts', typeof opts === 'string' ? opts : JSON.stringify(opts));
  if (jobId !== undefined) args.push('--job-id', jobId);
  const out = (await ferryOk(args, { input })).trim();
  assert.ok(out.length > 0 && !out.includes('\n'), `ferry queue add printed ${JSON.stringify(out)}, expected one id`);
  return out;
}

async function ferryCounts(queue) {
  return JSON.parse(await ferryOk(['queue', 'counts', queue, '--json']));
}

async function ferryJob(queue, id) {
  return JSON.parse(await ferryOk(['job', 'show', queue, id, '--json']));
}

// ---- ferry worker running tests/interop/lib/handler.js -----------------------------------

const HANDLER = path.join(__dirname, 'handler.js');

// Start `ferry worker QUEUE ... -- node handler.js STATEDIR`. `behave` maps job names to
// handler behaviours (see handler.js). Returns an object to read what the handler saw and to
// stop (SIGTERM) or kill (SIGKILL) the worker.
function startFerryWorker(queue, { behave = {}, concurrency, lockDuration, stalledInterval, name, maxJobs, idleExit, extraArgs = [], cmd } = {}) {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-ix-'));
  fs.writeFileSync(path.join(stateDir, 'behave.json'), JSON.stringify(behave));
  const args = ['worker', queue, '--redis', ENV.redisUrl];
  if (concurrency !== undefined) args.push('--concurrency', String(concurrency));
  if (lockDuration !== undefined) args.push('--lock-duration', String(lockDuration));
  if (stalledInterval !== undefined) args.push('--stalled-interval', String(stalledInterval));
  if (maxJobs !== undefined) args.push('--max-jobs', String(maxJobs));
  if (idleExit !== undefined) args.push('--idle-exit', String(idleExit));
  if (name !== undefined) args.push('--name', name);
  args.push(...extraArgs);
  args.push('--', ...(cmd || [process.execPath, HANDLER, stateDir]));
  const proc = track(spawn(ENV.bin, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
  let output = '';
  proc.stdout.on('data', (d) => (output += d));
  proc.stderr.on('data', (d) => (output += d));
  let stopping = false;
  const exited = new Promise((resolve) =>
    proc.on('close', (code, signal) => {
      if (!stopping && code !== 0 && !workerDied) workerDied = { queue, code, signal, output };
      resolve({ code, signal });
    }),
  );
  const w = {
    proc,
    queue,
    stateDir,
    exited,
    get output() {
      return output;
    },
    // Handler records: [{ev:'start', id, name, queue, attempt, t, pid} | {ev:'end', id, t, code}]
    runs() {
      const f = path.join(stateDir, 'runs.jsonl');
      if (!fs.existsSync(f)) return [];
      return fs
        .readFileSync(f, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
    },
    starts(id) {
      return w.runs().filter((r) => r.ev === 'start' && (id === undefined || r.id === id));
    },
    ends(id) {
      return w.runs().filter((r) => r.ev === 'end' && (id === undefined || r.id === id));
    },
    // Graceful stop; resolves the exit status, fails if it takes longer than `timeout`.
    async stop(timeout = 15000) {
      stopping = true;
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), timeout);
      const st = await exited;
      clearTimeout(t);
      return st;
    },
    // Forget about this worker (the check is over); it is SIGKILLed with the other children.
    abandon() {
      stopping = true;
    },
    async kill() {
      stopping = true;
      proc.kill('SIGKILL');
      return exited;
    },
    // Kill handler processes left behind by a SIGKILLed worker (runs with no end record, so
    // a pid that has since been reused by something else is never signalled).
    killOrphans() {
      const ended = new Set(w.ends().map((e) => `${e.id}/${e.run}`));
      for (const s of w.starts().filter((r) => !ended.has(`${r.id}/${r.run}`))) {
        try {
          process.kill(s.pid, 'SIGKILL');
        } catch (_) {
          /* gone */
        }
      }
    },
    cleanup() {
      w.killOrphans();
      fs.rmSync(stateDir, { recursive: true, force: true });
    },
  };
  workers.add(w);
  return w;
}

// ---- Node BullMQ side -------------------------------------------------------------------

const EVENT_NAMES = ['added', 'waiting', 'delayed', 'active', 'progress', 'completed', 'failed', 'retries-exhausted',
  'stalled', 'duplicated', 'deduplicated', 'removed', 'paused', 'resumed', 'drained'];

// A Node Queue plus a QueueEvents that reads the stream from its start (lastEventId 0-0, so no
// event is missed however late the listener is ready) and logs every event. Registered for
// cleanup on `suite`: closes both and deletes the queue's keys.
async function nodeQueue(suite, queueName) {
  const { Queue, QueueEvents } = require('bullmq');
  const queue = new Queue(queueName, { connection });
  const events = new QueueEvents(queueName, { connection, lastEventId: '0-0' });
  const log = [];
  for (const ev of EVENT_NAMES) {
    events.on(ev, (args) => log.push({ event: ev, ...(args && typeof args === 'object' ? args : {}) }));
  }
  await queue.waitUntilReady();
  await events.waitUntilReady();
  const h = {
    name: queueName,
    queue,
    events,
    log,
    // events named `ev` (optionally for one job id)
    seen(ev, jobId) {
      return log.filter((e) => e.event === ev && (jobId === undefined || e.jobId === jobId));
    },
    waitEvent(ev, jobId, timeout = 20000) {
      return waitFor(() => h.seen(ev, jobId)[0], { timeout, what: `QueueEvents '${ev}' for job ${jobId} on ${queueName}` });
    },
    async close() {
      await events.close();
      await queue.close();
      const r = newRedis();
      try {
        await deleteQueueKeys(r, queueName);
      } finally {
        r.disconnect();
      }
    },
  };
  suite.onCleanup(() => h.close());
  return h;
}

// Wait until job `id` is in `state`, then return Node's Job. The state is read first and the
// job after it: a finished job's hash no longer changes, so the Job is the finished one (read
// the other way round, a Job read while active could be paired with a later 'completed').
async function nodeJobInState(nq, id, state, timeout = 20000) {
  const { Job } = require('bullmq');
  await waitFor(async () => (await nq.queue.getJobState(id)) === state, { timeout, what: `job ${id} to be ${state}` });
  const j = await Job.fromId(nq.queue, id);
  if (!j) throw new Error(`job ${id} vanished after reaching ${state}`);
  return j;
}

const nodeWorkers = new Set();

// An in-process Node BullMQ Worker, closed (force) after the check that started it.
function startNodeWorker(queueName, processor, opts = {}) {
  const { Worker } = require('bullmq');
  const w = new Worker(queueName, processor, { connection, ...opts });
  w.on('error', (e) => console.log(`# node worker error (${queueName}): ${e && e.message}`));
  nodeWorkers.add(w);
  return w;
}

async function closeNodeWorkers() {
  for (const w of nodeWorkers) {
    try {
      await w.close(true);
    } catch (_) {
      /* closing anyway */
    }
  }
  nodeWorkers.clear();
}

// ---- Redis-side helpers ------------------------------------------------------------------

// Delete every key of a queue (SCAN, never KEYS).
async function deleteQueueKeys(redis, queue, prefix = PREFIX) {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:${queue}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.del(...keys);
  } while (cursor !== '0');
}

async function jobHash(redis, queue, id, prefix = PREFIX) {
  return redis.hgetall(`${prefix}:${queue}:${id}`);
}

module.exports = {
  ENV,
  PREFIX,
  connection,
  newRedis,
  uniqueQueue,
  tick,
  waitFor,
  holdsFor,
  Suite,
  run,
  ferry,
  ferryOk,
  ferryAdd,
  ferryCounts,
  ferryJob,
  startFerryWorker,
  deleteQueueKeys,
  jobHash,
  nodeQueue,
  nodeJobInState,
  startNodeWorker,
  track,
  killChildren,
};
