// node_worker_child.js - a Node BullMQ Worker in its own process, for the stalled-job test that
// SIGKILLs it mid-job: `node node_worker_child.js QUEUE CONNECTION_JSON LOCK_MS STALLED_MS NAME`.
// Its processor prints `started <jobId>` and never finishes, so the job stays active with a lock
// that expires once the process is gone.
'use strict';
const { Worker } = require('bullmq');

const [queue, connJson, lockMs, stalledMs, name] = process.argv.slice(2);
const worker = new Worker(
  queue,
  async (job) => {
    process.stdout.write(`started ${job.id}\n`);
    await new Promise(() => {});
  },
  { connection: JSON.parse(connJson), lockDuration: Number(lockMs), stalledInterval: Number(stalledMs), name },
);
worker.on('error', (e) => process.stderr.write(`worker error: ${e.message}\n`));
worker.waitUntilReady().then(() => process.stdout.write('ready\n'));
