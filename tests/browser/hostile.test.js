// hostile.test.js - attacker-controlled text in Chromium: job names, data, failed reasons,
// logs and stack traces, queue names, dead letters, outbox topics, scheduler ids, the audit
// and the route itself hold <script>, <img onerror>, javascript: links, unicode bidi controls
// and 100 KB strings. Every page shows them literally as text, runs none of it
// (window.__pwned stays undefined, no dialog, no element made from them), and the page
// itself causes no console error or CSP violation. The CSP header is on / and on the API.
'use strict';
const d = require('./lib/dash');
const { h, assert } = d;

const suite = new d.Suite('browser: hostile content');
const prefix = d.uniqueName('ho');
const ks = d.keyspace(suite, prefix);

const SCRIPT = '<script>window.__pwned=1</script>';
const IMG = '<img src=x onerror="window.__pwned=1">';
const LINK = 'javascript:window.__pwned=1';
const BIDI = 'invoice\u202Egpj.exe\u202C \u2066rtl\u2069 \u200Ftail';
const BIG = 'B'.repeat(100 * 1024) + '-END-OF-BIG';
const Q = `<img src=x onerror="window.__pwned=1">q`; // a queue name
const Q2 = 'plain';
const CSP_UI = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const ctx = {};

const jobRoute = (q, id) => `#/queues/${encodeURIComponent(q)}/jobs/${encodeURIComponent(id)}`;

// Nothing of the hostile text ran or became markup.
async function assertInert(page, where) {
  const r = await page.evaluate(() => ({
    pwned: typeof window.__pwned,
    imgs: document.querySelectorAll('img[src="x"], img[onerror]').length,
    scripts: [...document.querySelectorAll('script')].map((s) => s.src || 'inline:' + s.textContent.slice(0, 40)),
    jsLinks: [...document.querySelectorAll('a[href]')].filter((a) => /^\s*javascript:/i.test(a.getAttribute('href'))).length,
    handlers: [...document.querySelectorAll('*')].filter((e) => [...e.attributes].some((a) => /^on/i.test(a.name))).length,
  }));
  assert.strictEqual(r.pwned, 'undefined', `${where}: window.__pwned`);
  assert.strictEqual(r.imgs, 0, `${where}: no <img src=x> made`);
  assert.ok(r.scripts.every((s) => !s.startsWith('inline:')), `${where}: no inline script: ${r.scripts}`);
  assert.strictEqual(r.jsLinks, 0, `${where}: no javascript: link`);
  assert.strictEqual(r.handlers, 0, `${where}: no inline event handler attribute`);
}

async function textOf(page, testid) {
  const loc = page.getByTestId(testid).first();
  await loc.waitFor({ state: 'attached' });
  return (await loc.textContent()) || '';
}

suite.check('chromium starts and the hostile state is made', async () => {
  ctx.browser = await d.launch();
  suite.onCleanup(() => ctx.browser.close());
  ctx.schema = await d.newSchema(suite, 'ho');
  const s = ctx.schema;
  for (const q of [Q, Q2]) {
    const queue = ks.queue(q);
    await queue.add(`${SCRIPT}${IMG}`, { html: SCRIPT, img: IMG, link: LINK, url: LINK, bidi: BIDI, big: BIG }, { attempts: 1 });
    await ks.work(q, async (job) => {
      await job.log(SCRIPT);
      await job.log(IMG);
      await job.log(LINK);
      await job.log(BIDI);
      await job.log(BIG);
      const e = new Error(`${IMG} ${SCRIPT} ${BIDI} ${LINK}`);
      e.stack = `Error: ${SCRIPT}\n    at ${IMG} (${LINK}:1:1)\n    at ${BIDI}\n    ${BIG}`;
      throw e;
    }, async () => (await queue.getJobCounts('failed')).failed === 1);
    // A waiting job with the hostile name too (the queue page's wait tab).
    await queue.add(IMG, { link: LINK });
  }
  ctx.jobId = (await ks.queue(Q).getFailed())[0].id;
  ctx.jobId2 = (await ks.queue(Q2).getFailed())[0].id;
  await ks.ferry(['scheduler', 'upsert', Q2, `${SCRIPT}key`, '--cron', '0 3 * * *', '--name', IMG, '--data', JSON.stringify({ link: LINK })]);
  await d.sql(`INSERT INTO ${s}.dead_letters (prefix, queue, job_name, job_id, data, error, attempts_made, stacktrace, job_timestamp)
    VALUES ('${prefix}', $$${Q2}$$, $$${IMG}$$, $$${SCRIPT}$$, $$${JSON.stringify({ html: SCRIPT, link: LINK })}$$::jsonb,
            $$${IMG} ${BIDI} ${LINK}$$, 1, $$${SCRIPT}$$, 1),
           ('${prefix}', $$${Q2}$$, 'big', 'big1', '{}', $$${BIG}$$, 1, NULL, 2)`);
  await d.sql(`INSERT INTO ${s}.outbox_events (id, topic, aggregate_id, payload)
    VALUES (gen_random_uuid(), $$${SCRIPT}$$, gen_random_uuid(), $$${JSON.stringify({ img: IMG })}$$::jsonb),
           (gen_random_uuid(), $$${IMG}${BIDI}$$, gen_random_uuid(), '{}')`);
  ctx.srv = await d.startServe(suite, { prefix, schema: s });
  // Audit and task rows with hostile text: an action on the hostile queue, a retry-all whose
  // selector is hostile.
  const admin = ctx.srv.tokens.admin;
  await d.apiOk(ctx.srv, 'POST', `/api/queues/${encodeURIComponent(Q)}/pause`, { token: admin });
  await d.apiOk(ctx.srv, 'POST', `/api/queues/${encodeURIComponent(Q)}/resume`, { token: admin });
  const t = await d.api(ctx.srv, 'POST', `/api/queues/${encodeURIComponent(Q2)}/retry-all`,
    { token: admin, body: { name: SCRIPT, reasonContains: IMG, dataContains: LINK } });
  assert.strictEqual(t.status, 202, `retry-all: ${t.text}`);
});

suite.check('the CSP and the other security headers are on / and on the API', async () => {
  const r = await d.api(ctx.srv, 'GET', '/');
  assert.strictEqual(r.status, 200);
  assert.strictEqual(r.headers.get('content-security-policy'), CSP_UI);
  assert.strictEqual(r.headers.get('x-frame-options'), 'DENY');
  assert.strictEqual(r.headers.get('referrer-policy'), 'no-referrer');
  assert.strictEqual(r.headers.get('x-content-type-options'), 'nosniff');
  assert.match(r.headers.get('content-type') || '', /^text\/html/);
  const js = await d.api(ctx.srv, 'GET', '/ui/app.js');
  assert.strictEqual(js.status, 200);
  assert.strictEqual(js.headers.get('content-security-policy'), CSP_UI);
  assert.match(js.headers.get('content-type') || '', /javascript/);
  const a = await d.api(ctx.srv, 'GET', '/api/queues');
  assert.strictEqual(a.headers.get('content-security-policy'), "default-src 'none'; frame-ancestors 'none'");
  // The UI's own files use no sink that turns text into markup.
  const dir = require('node:path').join(process.env.FERRY_SOURCE_DIR || `${__dirname}/../..`, 'src/admin/assets');
  const files = require('node:fs').readdirSync(dir).filter((f) => f.endsWith('.js'));
  assert.ok(files.length > 0, `the UI's scripts in ${dir}`);
  for (const f of files) {
    // Comments stripped: they may name the sinks they avoid.
    const src = (await d.api(ctx.srv, 'GET', `/ui/${f}`)).text
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/(^|[^:'"\\])\/\/.*$/gm, '$1');
    assert.doesNotMatch(src, /\.innerHTML\s*=|\.outerHTML\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function\(/, `/ui/${f} uses no HTML sink`);
  }
});

suite.check('the job page shows name, data, reason, logs and stacktrace as text', async () => {
  const page = await d.openPage(ctx.browser, ctx.srv);
  ctx.page = page;
  await d.load(page, jobRoute(Q, ctx.jobId));
  await d.waitText(page.getByTestId('job-id'), new RegExp(ctx.jobId), 'job-id');
  const name = await textOf(page, 'job-name');
  assert.ok(name.includes(SCRIPT) && name.includes(IMG), `job-name literal: ${name.slice(0, 200)}`);
  const data = await textOf(page, 'job-data');
  assert.ok(data.includes(SCRIPT), 'job-data shows the <script> text');
  assert.ok(data.includes('javascript:window.__pwned=1'), 'job-data shows the javascript: text');
  assert.ok(data.includes(BIDI) || data.includes(JSON.stringify(BIDI).slice(1, -1)), 'job-data shows the bidi text');
  assert.ok(data.includes('B'.repeat(2000)), 'job-data shows the 100 KB string');
  const reason = await textOf(page, 'job-failed-reason');
  assert.ok(reason.includes(IMG) && reason.includes(SCRIPT) && reason.includes(LINK), `failed reason literal: ${reason.slice(0, 200)}`);
  const stack = await textOf(page, 'job-stacktrace');
  assert.ok(stack.includes(SCRIPT) && stack.includes(IMG), 'stacktrace literal');
  const logs = page.getByTestId('job-logs');
  await d.waitText(logs, (t) => t.includes(SCRIPT) && t.includes(IMG) && t.includes(LINK) && t.includes('B'.repeat(2000)), 'job-logs literal');
  // Literal text is visible to the user, not only in the DOM.
  assert.ok(await page.getByText(SCRIPT).first().isVisible(), 'the <script> text is visible');
  await assertInert(page, 'job page');
});

suite.check('queues, queue, overview and hostile routes render the queue name as text', async () => {
  const page = ctx.page;
  await d.go(page, '#/');
  await page.getByTestId('hop-queues').waitFor();
  await page.locator('[data-testid="overview-queues"] [data-queue]').first().waitFor();
  await assertInert(page, 'overview');
  await d.go(page, '#/queues');
  const row = page.locator(`[data-testid="queue-row"][data-queue="${Q.replace(/"/g, '\\"')}"]`);
  await row.waitFor();
  assert.ok(((await row.textContent()) || '').includes(Q), 'queues row shows the name literally');
  await assertInert(page, 'queues');
  await d.go(page, `#/queues/${encodeURIComponent(Q)}?state=failed&page=0`);
  await d.waitText(page.getByTestId('queue-title'), (t) => t.includes(Q), 'queue-title literal');
  await page.locator('[data-testid="jobs-table"] [data-testid="job-row"]').first().waitFor();
  assert.ok(((await page.getByTestId('jobs-table').textContent()) || '').includes(SCRIPT), 'jobs table shows the name');
  await assertInert(page, 'queue page');
  await d.go(page, `#/queues/${encodeURIComponent(Q)}?state=wait`);
  await page.locator('[data-testid="jobs-table"] [data-testid="job-row"]').first().waitFor();
  await assertInert(page, 'queue page, wait');
  // Markup in the hash itself (not encoded): nothing made of it.
  await d.go(page, `#/queues/${IMG}`);
  await page.waitForTimeout(300);
  await assertInert(page, 'raw markup in the route');
  await d.go(page, `#/trace/${encodeURIComponent(SCRIPT)}`);
  await page.waitForTimeout(300);
  await assertInert(page, 'trace of a non-UUID');
});

suite.check('dead letters, outbox, schedulers, tasks and audit render the text literally', async () => {
  const page = ctx.page;
  await d.go(page, '#/dead-letters');
  const dl = page.locator('[data-testid="dl-table"] [data-testid="dl-row"]');
  await h.waitFor(async () => (await dl.count()) === 2, { what: '2 dl-row' });
  const dlText = (await page.getByTestId('dl-table').textContent()) || '';
  assert.ok(dlText.includes(IMG), 'dead letter error / name literal');
  await assertInert(page, 'dead letters');

  await d.go(page, '#/outbox');
  const topics = page.locator('[data-testid="outbox-topics"] [data-testid="topic-row"]');
  await h.waitFor(async () => (await topics.count()) === 2, { what: '2 topic-row' });
  const tText = (await page.getByTestId('outbox-topics').textContent()) || '';
  assert.ok(tText.includes(SCRIPT), 'topic literal');
  await assertInert(page, 'outbox');

  await d.go(page, `#/schedulers`);
  await page.locator('[data-testid="schedulers-table"] [data-testid="scheduler-row"]').first().waitFor();
  assert.ok(((await page.getByTestId('schedulers-table').textContent()) || '').includes(`${SCRIPT}key`), 'scheduler key literal');
  await assertInert(page, 'schedulers');

  await d.go(page, '#/tasks');
  await page.locator('[data-testid="tasks-table"] [data-testid="task-row"]').first().waitFor();
  await assertInert(page, 'tasks');

  await d.go(page, '#/audit');
  const audit = page.locator('[data-testid="audit-table"] [data-testid="audit-row"]');
  await audit.first().waitFor();
  await assertInert(page, 'audit');
  assert.ok(await audit.count() >= 2, 'audit rows of the actions on the hostile queue');
});

suite.check('no dialog, no CSP violation, no console error on any page', async () => {
  const page = ctx.page;
  await assertInert(page, 'end');
  // The route tests above make the server answer 400/404 to the UI's requests; Chromium logs
  // those as "Failed to load resource". Nothing else may be logged.
  d.assertClean(page, { allow: [/Failed to load resource: the server responded with a status of 40[04]/] });
  await page.context().close();
});

suite.check('ferry serve stops on SIGTERM with exit 0', async () => {
  await ctx.srv.stop();
});

suite.run();
