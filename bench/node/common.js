// common.js - shared pieces of the BullMQ Node baseline benchmarks (bench/node/bullmq_bench.js):
// argument parsing, the Redis connection from a URL, the job payload, client CPU accounting and
// the one-line JSON result that bench/run.sh collects (same keys as `ferry bench --json`).
'use strict';

function parseArgs(argv, defaults) {
  const out = { ...defaults };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const key = a.slice(2);
    if (key === 'json' || key === 'no-fill') {
      out[key] = true;
      continue;
    }
    if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
    out[key] = argv[++i];
  }
  return out;
}

// ioredis options from redis://[user:pass@]host:port[/db].
function connectionFromUrl(url) {
  const u = new URL(url);
  const opts = { maxRetriesPerRequest: null };
  if (u.username) opts.username = decodeURIComponent(u.username);
  if (u.password) opts.password = decodeURIComponent(u.password);
  opts.host = u.hostname || '127.0.0.1';
  opts.port = Number(u.port || 6379);
  const db = u.pathname.replace(/^\//, '');
  if (db) opts.db = Number(db);
  return opts;
}

// A JSON object whose serialization is exactly `bytes` long (min 8): {"p":"xxx..."}.
function payload(bytes) {
  const pad = Math.max(0, bytes - '{"p":""}'.length);
  return { p: 'x'.repeat(pad) };
}

// Process CPU (user + system) in microseconds since an earlier snapshot.
function cpuSince(start) {
  const d = process.cpuUsage(start);
  return d.user + d.system;
}

// redis-server CPU (used_cpu_user + used_cpu_sys, seconds) from INFO cpu over `client`.
async function redisCpuSeconds(client) {
  const info = await client.info('cpu');
  let s = 0;
  for (const line of info.split('\n')) {
    const m = /^used_cpu_(?:user|sys):([0-9.]+)/.exec(line.trim());
    if (m) s += Number(m[1]);
  }
  return s;
}

function percentile(sorted, q) {
  if (!sorted.length) return null;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[idx];
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

module.exports = { parseArgs, connectionFromUrl, payload, cpuSince, redisCpuSeconds, percentile, emit };
