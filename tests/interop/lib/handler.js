// handler.js - the job command the interop tests give to `ferry worker ... -- node handler.js
// STATEDIR`. It reads the job data from stdin and the job identity from the FERRY_* environment,
// records every run (start/end, wall-clock ms, pid) in STATEDIR/runs.jsonl so the test can see
// order, attempts and retry gaps, and behaves according to STATEDIR/behave.json, keyed by job
// name:
//   (no entry)                 exit 0, stdout = JSON {id, name, queue, attempt, data}
//   {exit: N, failAttempts: k} exit N on runs 1..k of this job (every run if k is absent),
//                              printing `stderr` (if given) to stderr and `failStdout`
//                              (if given) to stdout first (e.g. "FERRY_RETRY_AFTER_MS=300")
//   {stdout: "text"}           on success print this text verbatim instead of the echo
//   {sleepMs: n}               sleep n ms after recording the start (for stalled tests)
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const stateDir = process.argv[2];
if (!stateDir) {
  process.stderr.write('usage: handler.js STATEDIR\n');
  process.exit(64);
}
const runsFile = path.join(stateDir, 'runs.jsonl');
const env = process.env;
const id = env.FERRY_JOB_ID;
const name = env.FERRY_JOB_NAME;

// One write per record with O_APPEND: small lines are appended atomically, so concurrent
// handlers never interleave records.
function record(obj) {
  fs.appendFileSync(runsFile, JSON.stringify(obj) + '\n');
}

function previousRuns() {
  if (!fs.existsSync(runsFile)) return 0;
  return fs
    .readFileSync(runsFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((r) => r.ev === 'start' && r.id === id).length;
}

let behave = {};
try {
  behave = JSON.parse(fs.readFileSync(path.join(stateDir, 'behave.json'), 'utf8'))[name] || {};
} catch (_) {
  behave = {};
}

const input = fs.readFileSync(0, 'utf8');
const run = previousRuns() + 1;
record({ ev: 'start', id, name, queue: env.FERRY_QUEUE, attempt: env.FERRY_ATTEMPT, run, t: Date.now(), pid: process.pid });

function finish(code) {
  record({ ev: 'end', id, run, t: Date.now(), code });
  process.exit(code);
}

function main() {
  const failing = behave.exit !== undefined && (behave.failAttempts === undefined || run <= behave.failAttempts);
  if (failing) {
    if (behave.stderr !== undefined) process.stderr.write(behave.stderr);
    if (behave.failStdout !== undefined) process.stdout.write(behave.failStdout);
    finish(behave.exit);
    return;
  }
  if (behave.stdout !== undefined) {
    process.stdout.write(behave.stdout);
  } else {
    let data;
    try {
      data = JSON.parse(input);
    } catch (_) {
      data = { unparsable: input };
    }
    process.stdout.write(JSON.stringify({ id, name, queue: env.FERRY_QUEUE, attempt: env.FERRY_ATTEMPT, data }));
  }
  finish(0);
}

if (behave.sleepMs) setTimeout(main, behave.sleepMs);
else main();
