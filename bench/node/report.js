// report.js - turns bench/run.sh's per-run results (JSON lines) into the Markdown table it prints
// and writes to BUILD/bench-results.md: per scenario and metric, the median [min..max] of each
// implementation over its rounds and the ratio of the medians ferry/Node.
//
//   node report.js RESULTS.jsonl META_JSON
'use strict';
const fs = require('node:fs');

const [file, metaJson] = process.argv.slice(2);
const meta = JSON.parse(metaJson || '{}');
const runs = fs
  .readFileSync(file, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l));

const SCENARIOS = [
  ['addbulk', 'addBulk, batches of 1000'],
  ['add', '`add` loop, one at a time'],
  ['process-c1', 'process, concurrency 1, removeOnComplete'],
  ['process-c10', 'process, concurrency 10, removeOnComplete'],
  ['process-c100', 'process, concurrency 100, removeOnComplete'],
  ['latency', `add → start latency at ${meta.latency_rate || 500} jobs/s, idle worker`],
];
// metric key, label
const METRICS = [
  ['jobs_per_s', 'jobs/s'],
  ['client_cpu_us_per_job', 'client CPU µs/job'],
  ['redis_cpu_us_per_job', 'Redis CPU µs/job'],
  ['p50_ms', 'p50 ms'],
  ['p99_ms', 'p99 ms'],
  ['max_ms', 'max ms'],
];

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function fmt(x) {
  if (x === null || x === undefined || Number.isNaN(x)) return '–';
  const a = Math.abs(x);
  if (a >= 1000) return Math.round(x).toLocaleString('en-US');
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

function stats(impl, scen, key) {
  const xs = runs.filter((r) => r.impl === impl && r.scenario === scen && !r.error && typeof r[key] === 'number').map((r) => r[key]);
  if (!xs.length) return null;
  return { n: xs.length, med: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
}

const cell = (s) => (s ? `${fmt(s.med)} [${fmt(s.min)}..${fmt(s.max)}]` : '–');

const out = [];
out.push('# ferry vs BullMQ Node — benchmark results');
out.push('');
out.push(
  `${meta.date || ''} · ${meta.host || ''} (${meta.cores || '?'} cores) · Redis ${meta.redis || '?'} · Node ${meta.node || '?'} · ` +
    `bullmq ${meta.bullmq || '?'} · ${meta.ferry || 'ferry ?'} · ${meta.rounds || '?'} round(s) each, alternating (Node first in odd rounds, ferry in even), each run after an untimed warm-up · ` +
    `payload ${meta.payload || '?'} B · took ${meta.elapsed_s || '?'} s`,
);
out.push('');
out.push('Median [min..max] over the rounds; ratio = ferry median / Node median (jobs/s: higher is better; CPU and latency: lower is better).');
out.push('');
out.push('| scenario | metric | BullMQ Node | ferry | ferry/Node |');
out.push('|---|---|---:|---:|---:|');
const notes = new Set();
for (const [scen, label] of SCENARIOS) {
  const present = runs.some((r) => r.scenario === scen);
  if (!present) continue;
  const jobs = (runs.find((r) => r.scenario === scen && r.raw && r.raw.jobs) || {}).raw;
  const title = `${label}${jobs && jobs.jobs ? `, ${jobs.jobs.toLocaleString('en-US')} jobs` : ''}`;
  let first = true;
  for (const [key, mlabel] of METRICS) {
    const n = stats('node', scen, key);
    const f = stats('ferry', scen, key);
    if (!n && !f) continue;
    let ratio = '–';
    if (n && f && n.med) {
      ratio = `${(f.med / n.med).toFixed(2)}×`;
    }
    let mcell = mlabel;
    if (key === 'redis_cpu_us_per_job' && runs.some((r) => r.scenario === scen && r.redis_cpu_source === 'tool')) {
      mcell += ' ¹';
      notes.add('¹ process runs: Redis CPU over the timed phase as each tool measures it (INFO cpu before/after processing), so filling the queue is left out on both sides.');
    } else if (key === 'redis_cpu_us_per_job' && scen.startsWith('process')) {
      mcell += ' ²';
      notes.add('² measured by run.sh around the whole run (a tool did not report its own figure); a tool that fills its own queue has the fill included here.');
    }
    out.push(`| ${first ? title : ''} | ${mcell} | ${cell(n)} | ${cell(f)} | ${ratio} |`);
    first = false;
  }
  const failed = runs.filter((r) => r.scenario === scen && r.error);
  if (failed.length) notes.add(`${scen}: ${failed.length} failed run(s) (${failed.map((r) => `${r.impl} round ${r.round}`).join(', ')}) left out.`);
}
if (notes.size) {
  out.push('');
  for (const n of notes) out.push(n);
}
out.push('');
out.push('Client CPU = CPU of the benchmark process(es) during the timed phase / jobs; Redis CPU = redis-server `INFO cpu` (used_cpu_user + used_cpu_sys) delta around the run / jobs. Process runs drain a queue filled beforehand with `removeOnComplete: true` jobs. See bench/README.md.');
process.stdout.write(out.join('\n') + '\n');
