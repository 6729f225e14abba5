// metrics_driver.js - starts tests/interop/lib/metrics_worker.c (built as
// interop_metrics_worker, named by FERRY_METRICS_WORKER, which tests/CMakeLists.txt sets): a
// ferry worker run through the C API with options the `ferry worker` CLI does not take
// (bullmq_metrics_max_points). Jobs by name: "perm" fails for good, "flaky" fails every
// attempt, "later" asks to run later once, anything else completes with {"ok":true}.
'use strict';
const assert = require('node:assert');
const { spawn } = require('node:child_process');
const h = require('./harness');

// Resolves once the worker says "ready"; stop() sends SIGTERM and checks it exits 0.
async function startMetricsWorker(queue, maxPoints, concurrency = 8) {
  const bin = process.env.FERRY_METRICS_WORKER;
  if (!bin) throw new Error('FERRY_METRICS_WORKER is not set (tests/CMakeLists.txt sets it)');
  const proc = h.track(spawn(bin, [h.ENV.redisUrl, queue, String(maxPoints), String(concurrency)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  }));
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (out += d));
  proc.on('error', (e) => (out += `spawn failed: ${e.message}`));
  const exited = new Promise((resolve) => proc.on('close', (code, signal) => resolve({ code, signal })));
  await h.waitFor(() => out.includes('ready') || out.includes('spawn failed') || proc.exitCode !== null, {
    what: `metrics worker on ${queue} to start`,
  });
  if (!out.includes('ready')) throw new Error(`metrics worker did not start: ${out}`);
  return {
    async stop() {
      proc.kill('SIGTERM');
      const st = await exited;
      assert.strictEqual(st.code, 0, `metrics worker exit status (output: ${out})`);
    },
  };
}

module.exports = { startMetricsWorker };
