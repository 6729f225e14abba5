// pages_queues.js - #/queues (every queue), #/queues/<name> (jobs paged by state, search,
// actions, retry-all task) and #/queues/<name>/jobs/<id> (one job).

import { h, clear, num, table, cell, when, errorBox, pretty, section } from './dom.js';
import { get, post, del, q, qs, feed } from './api.js';
import { flash, confirmDialog, actionButton, go, queueHref, jobHref, field, loading }
  from './ui.js';

const STATES = ['wait', 'active', 'delayed', 'prioritized', 'failed', 'completed', 'paused',
  'waiting-children'];
const PAGE = 25;

function countOf(c, state) {
  if (!c) return null;
  if (state === 'wait') return c.wait !== undefined ? c.wait : c.waiting;
  return c[state];
}

// ---- #/queues ----

export async function queuesPage(ctx) {
  ctx.main.appendChild(h('h1', null, 'Queues'));
  const box = h('div', null, loading());
  ctx.main.appendChild(box);
  let list;
  try {
    list = await get('/api/queues');
  } catch (e) {
    if (ctx.alive()) clear(box).appendChild(errorBox(e.message));
    return;
  }
  if (!ctx.alive()) return;
  const byName = new Map();
  const fill = (ov) => {
    byName.clear();
    for (const qd of (ov && ov.queues) || []) byName.set(qd.name, qd);
  };
  const draw = () => {
    clear(box);
    const rows = (list.queues || []).map((qu) => {
      const od = byName.get(qu.name);
      const c = qu.counts || {};
      let state = qu.paused ? 'paused' : 'running';
      if (!qu.paused && od && od.rateLimitedMs > 0) state = 'rate-limited';
      return h('tr', { testid: 'queue-row', 'data-queue': qu.name },
        h('th', { scope: 'row' }, h('a', { href: queueHref(qu.name) }, qu.name)),
        STATES.filter((s) => s !== 'waiting-children').map((s) =>
          cell(s, num(null, countOf(c, s)))),
        cell('oldest-ready', od ? num(null, od.oldestReadyAgeSeconds, 'age') :
          h('span', { class: 'muted', title: 'not in the overview snapshot' }, '–')),
        cell('workers', od ? num(null, od.workers) : '–'),
        cell('state', h('span', { class: 'state state-' + state }, state)));
    });
    box.appendChild(rows.length ? table('queues-table', ['queue', 'wait', 'active', 'delayed',
      'prioritized', 'failed', 'completed', 'paused', 'oldest ready', 'workers', 'state'], rows) :
      h('p', { class: 'muted', testid: 'queues-empty' }, 'No queues under prefix ' +
        (list.prefix || '') + '.'));
    if (list.complete === false) {
      box.appendChild(h('p', { class: 'muted' }, 'The scan stopped at its bound: not every ' +
        'queue is listed.'));
    }
  };
  fill(feed.last);
  draw();
  ctx.onCleanup(feed.subscribe((ov) => {
    if (!ctx.alive()) return;
    fill(ov);
    draw();
  }));
  if (!feed.last) {
    get('/api/overview').then((ov) => feed.publish(ov)).catch(() => {});
  }
}

// ---- #/queues/<name> ----

function jobRow(queue, j) {
  return h('tr', { testid: 'job-row', 'data-job-id': j.id },
    h('th', { scope: 'row' }, h('a', { href: jobHref(queue, j.id) }, j.id)),
    cell('name', j.name || ''),
    cell('state', j.state || ''),
    cell('attempts', j.attemptsMade !== undefined ? num(null, j.attemptsMade) : ''),
    cell('timestamp', j.timestamp !== undefined ? when(j.timestamp) : ''),
    cell('finished', j.finishedOn ? when(j.finishedOn) : ''),
    cell('reason', j.failedReason ? h('span', { class: 'clip', title: j.failedReason },
      j.failedReason) : ''));
}

function taskPanel(queue, task, onDone) {
  const progress = h('progress', { testid: 'task-progress', max: 1, value: 0 });
  const state = h('strong', { testid: 'task-state' }, '');
  const counts = h('span', { testid: 'task-counts' }, '');
  const error = h('p', { class: 'error-text', testid: 'task-error' }, '');
  let timer = null;
  let stopped = false;
  const cancel = actionButton('task-cancel', 'Cancel task', 'act', async () => {
    const r = await post('/api/tasks/' + q(task.id) + '/cancel', {});
    show(r.task);
    flash('Task ' + task.id + ' cancel requested', 'ok');
  });
  const panel = h('div', { class: 'task-panel', testid: 'task-panel', 'data-task-id': task.id },
    h('p', null, 'Task ', h('code', null, task.id), ' (' + task.kind + ' on ' + queue + '): ',
      state), progress, h('p', null, counts), error, cancel);
  function show(t) {
    const total = t.total || 0;
    progress.setAttribute('max', String(Math.max(total, 1)));
    progress.setAttribute('value', String(Math.min(t.scanned || 0, Math.max(total, 1))));
    progress.value = Math.min(t.scanned || 0, Math.max(total, 1));
    progress.max = Math.max(total, 1);
    progress.setAttribute('data-raw', String(t.scanned || 0));
    progress.setAttribute('aria-label', 'scanned ' + (t.scanned || 0) + ' of ' + total);
    state.textContent = t.state;
    counts.textContent = 'scanned ' + (t.scanned || 0) + ' of ' + total + ', matched ' +
      (t.matched || 0) + ', retried ' + (t.retried || 0) + ', skipped ' + (t.skipped || 0);
    counts.setAttribute('data-retried', String(t.retried || 0));
    counts.setAttribute('data-matched', String(t.matched || 0));
    error.textContent = t.error || t.message || '';
    if (t.state !== 'running') {
      cancel.hidden = true;
      if (!stopped) {
        stopped = true;
        clearTimeout(timer);
        onDone(t);
      }
    }
  }
  const poll = async () => {
    if (stopped || !panel.isConnected) return;
    try {
      const r = await get('/api/tasks/' + q(task.id));
      show(r.task);
    } catch (e) {
      error.textContent = e.message;
    }
    if (!stopped && panel.isConnected) timer = setTimeout(poll, 500);
  };
  show(task);
  if (!stopped) timer = setTimeout(poll, 500);
  return panel;
}

export async function queuePage(ctx) {
  const name = ctx.route.name;
  const state = STATES.includes(ctx.query.get('state')) ? ctx.query.get('state') : 'failed';
  let page = Number.parseInt(ctx.query.get('page') || '0', 10);
  if (!Number.isFinite(page) || page < 0) page = 0;
  const href = (st, pg) => queueHref(name, qs({ state: st, page: pg }));

  ctx.main.appendChild(h('p', { class: 'crumbs' }, h('a', { href: '#/queues' }, 'Queues'), ' / '));
  const title = h('h1', { testid: 'queue-title' }, name);
  ctx.main.appendChild(title);
  const summary = h('div', { class: 'summary' }, loading());
  ctx.main.appendChild(summary);

  let info = null;
  try {
    info = await get('/api/queues/' + q(name));
  } catch (e) {
    if (ctx.alive()) clear(summary).appendChild(errorBox(e.message));
  }
  if (!ctx.alive()) return;
  if (info) {
    clear(summary);
    const qstate = info.paused ? 'paused' : 'running';
    summary.appendChild(h('p', null, 'State: ', h('strong', { testid: 'queue-state',
      class: 'state state-' + qstate }, qstate), ' · workers ',
    info.workers === null || info.workers === undefined ? h('span', { title:
      info.workersError || '' }, 'unknown') : num('queue-workers', info.workers),
    ' · schedulers ', num('queue-schedulers', info.schedulers),
    info.globalConcurrency ? [' · global concurrency ', num(null, info.globalConcurrency)] :
      null,
    info.globalRateLimit ? [' · rate limit ', String(info.globalRateLimit.max), ' per ',
      String(info.globalRateLimit.duration), ' ms'] : null));
  }

  // state tabs and the page of jobs
  const tabs = h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'job states' },
    STATES.map((s) => {
      const n = info ? countOf(info.counts, s) : null;
      return h('a', { href: href(s, 0), testid: 'state-tab', 'data-state': s, role: 'tab',
        'aria-selected': String(s === state), class: s === state ? 'tab current' : 'tab' },
      s, n !== null && n !== undefined ? [' ', num(null, n)] : null);
    }));
  const jobsBox = h('div', null, loading());
  ctx.main.appendChild(h('section', { class: 'panel', testid: 'queue-jobs' },
    h('h2', null, 'Jobs'), tabs, jobsBox));

  // actions
  const cleanState = h('select', { testid: 'clean-state' }, ['completed', 'failed', 'delayed',
    'wait', 'paused', 'prioritized'].map((s) => h('option', { value: s }, s)));
  const cleanGrace = h('input', { testid: 'clean-grace', type: 'text', value: '1h', size: 6,
    'aria-label': 'grace period' });
  const after = (msg) => {
    flash(msg, 'ok');
    feed.refresh();
    ctx.rerender();
  };
  const actions = section('Actions', 'queue-actions',
    h('div', { class: 'row' },
      actionButton('action-pause', 'Pause', 'act', async () => {
        await post('/api/queues/' + q(name) + '/pause', undefined);
        after('Queue ' + name + ' paused');
      }),
      actionButton('action-resume', 'Resume', 'act', async () => {
        await post('/api/queues/' + q(name) + '/resume', undefined);
        after('Queue ' + name + ' resumed');
      }),
      actionButton('action-promote-all', 'Promote all delayed', 'act', async () => {
        const r = await post('/api/queues/' + q(name) + '/promote', {});
        after('Promoted ' + r.moved + ' delayed job(s) of ' + name);
      })),
    h('div', { class: 'row' },
      field('Clean state', cleanState), field('older than', cleanGrace),
      actionButton('action-clean', 'Clean…', 'act', async () => {
        const st = cleanState.value;
        const g = cleanGrace.value.trim();
        if (!g) {
          flash('Give a grace period (ms, or 90s, 30m, 1h, 7d)', 'error');
          return;
        }
        const ok = await confirmDialog('Delete every ' + st + ' job of ' + name +
          ' older than ' + g + '? This cannot be undone.', 'Delete');
        if (!ok) return;
        const r = await post('/api/queues/' + q(name) + '/clean', { state: st,
          grace: /^\d+$/.test(g) ? Number(g) : g });
        after('Cleaned ' + r.deleted + ' ' + st + ' job(s) of ' + name);
      }, { class: 'action danger' })));
  ctx.main.appendChild(actions);

  // retry all (server-side task)
  const raState = h('select', { testid: 'retry-all-state' }, ['failed', 'completed'].map((s) =>
    h('option', { value: s }, s)));
  const raName = h('input', { testid: 'retry-all-name', type: 'text', placeholder:
    'exact job name', 'aria-label': 'job name' });
  const raReason = h('input', { testid: 'retry-all-reason', type: 'text', placeholder:
    'text in the failed reason', 'aria-label': 'reason contains' });
  const raData = h('input', { testid: 'retry-all-data', type: 'text', placeholder:
    'text in the data', 'aria-label': 'data contains' });
  const taskBox = h('div', { testid: 'task-box' });
  const startTask = async () => {
    const body = { state: raState.value };
    if (raName.value.trim()) body.name = raName.value.trim();
    if (raReason.value !== '') body.reasonContains = raReason.value;
    if (raData.value !== '') body.dataContains = raData.value;
    const r = await post('/api/queues/' + q(name) + '/retry-all', body);
    clear(taskBox).appendChild(taskPanel(name, r.task, (t) => {
      flash('Task ' + t.id + ' ' + t.state + ': retried ' + t.retried + ' of ' + t.matched +
        ' matched, ' + t.scanned + ' scanned' +
        (t.error || t.message ? ' (' + (t.error || t.message) + ')' : ''),
      t.state === 'failed' ? 'error' : 'ok');
      feed.refresh();
    }));
    flash('Task ' + r.task.id + ' started', 'ok');
  };
  ctx.main.appendChild(section('Retry all', 'retry-all',
    h('p', { class: 'muted small' }, 'Runs on the server in chunks; only jobs finished ' +
      'before it starts are considered.'),
    h('div', { class: 'row' }, field('State', raState), field('Name', raName),
      field('Reason contains', raReason), field('Data contains', raData),
      actionButton('retry-all-start', 'Retry matching jobs', 'act', startTask)),
    taskBox));

  // search
  const searchId = h('input', { testid: 'job-search-id', type: 'text', placeholder: 'job id',
    'aria-label': 'job id' });
  const openById = () => {
    const id = searchId.value.trim();
    if (!id) {
      flash('Give a job id', 'error');
      return;
    }
    go(jobHref(name, id));
  };
  searchId.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') openById();
  });
  const findName = h('input', { testid: 'find-name', type: 'text', placeholder: 'exact name',
    'aria-label': 'job name' });
  const findData = h('input', { testid: 'find-data', type: 'text', placeholder:
    'text in the data JSON', 'aria-label': 'data contains' });
  const findBox = h('div', { testid: 'find-box' });
  const runFind = async () => {
    const n = findName.value.trim();
    const d = findData.value;
    if (!n && !d) {
      flash('Give a name or a text to find in the data', 'error');
      return;
    }
    clear(findBox).appendChild(loading());
    let r;
    try {
      r = await get('/api/queues/' + q(name) + '/find' + qs({ name: n, dataContains: d,
        limit: 100 }));
    } catch (e) {
      clear(findBox).appendChild(errorBox(e.message));
      return;
    }
    if (!ctx.alive()) return;
    clear(findBox);
    findBox.appendChild(h('p', { testid: 'find-complete', 'data-complete':
      String(!!r.complete), raw: r.scanned }, r.complete ?
      'complete: ' + r.jobs.length + ' found, ' + r.scanned + ' jobs scanned' :
      'incomplete: ' + r.jobs.length + ' found, stopped after ' + r.scanned +
        ' jobs scanned (bound ' + r.maxScan + ' scanned or 100 found)'));
    findBox.appendChild(table('find-results', ['id', 'name', 'state'], r.jobs.map((j) =>
      h('tr', { testid: 'job-row', 'data-job-id': j.id },
        h('th', { scope: 'row' }, h('a', { href: jobHref(name, j.id) }, j.id)),
        cell('name', j.name || ''), cell('state', j.state || '')))));
  };
  const findGo = h('button', { type: 'button', testid: 'find-go', on: { click: runFind } },
    'Find');
  ctx.main.appendChild(section('Find', 'queue-search',
    h('div', { class: 'row' }, field('Open job by id', searchId),
      h('button', { type: 'button', testid: 'job-search-go', on: { click: openById } }, 'Open')),
    h('div', { class: 'row' }, field('Name', findName), field('Data contains', findData),
      findGo),
    h('p', { class: 'muted small' }, 'A bounded scan (BullMQ keeps no index).'), findBox));

  const start = page * PAGE;
  let r;
  try {
    r = await get('/api/queues/' + q(name) + '/jobs' + qs({ state, start, end: start + PAGE -
      1 }));
  } catch (e) {
    if (ctx.alive()) clear(jobsBox).appendChild(errorBox(e.message));
    return;
  }
  if (!ctx.alive()) return;
  clear(jobsBox);
  const total = r.total || 0;
  const last = Math.max(0, Math.ceil(total / PAGE) - 1);
  const prev = h('button', { type: 'button', testid: 'page-prev', disabled: page <= 0,
    on: { click: () => go(href(state, page - 1)) } }, '← Newer');
  const next = h('button', { type: 'button', testid: 'page-next', disabled: page >= last,
    on: { click: () => go(href(state, page + 1)) } }, 'Older →');
  const shown = r.jobs.length;
  jobsBox.appendChild(h('div', { class: 'pager' }, prev,
    h('span', { testid: 'page-info', 'data-page': page, 'data-total': total, raw: total },
      shown ? (start + 1) + '–' + (start + shown) + ' of ' + total + ' ' + state :
        'none of ' + total + ' ' + state), next));
  jobsBox.appendChild(table('jobs-table', ['id', 'name', 'state', 'attempts', 'created',
    'finished', 'reason'], r.jobs.map((j) => jobRow(name, j))));
}

// ---- #/queues/<name>/jobs/<id> ----

function pre(testid, text) {
  return h('pre', { testid, class: 'code', tabindex: 0 }, text);
}

export async function jobPage(ctx) {
  const { name, id } = ctx.route;
  ctx.main.appendChild(h('p', { class: 'crumbs' }, h('a', { href: '#/queues' }, 'Queues'), ' / ',
    h('a', { href: queueHref(name) }, name), ' / '));
  const box = h('div', null, loading());
  ctx.main.appendChild(box);
  let j;
  try {
    j = await get('/api/queues/' + q(name) + '/jobs/' + q(id));
  } catch (e) {
    if (ctx.alive()) {
      clear(box).appendChild(h('h1', null, 'Job ', h('span', { testid: 'job-id' }, id)));
      box.appendChild(errorBox(e.message));
    }
    return;
  }
  if (!ctx.alive()) return;
  clear(box);
  box.appendChild(h('h1', null, 'Job ', h('span', { testid: 'job-id' }, j.id)));
  box.appendChild(h('p', null, 'State: ', h('strong', { testid: 'job-state', class:
    'state state-' + j.state }, j.state || 'unknown'), ' · name: ',
  h('span', { testid: 'job-name' }, j.name || '')));

  const after = (msg, hash) => {
    flash(msg, 'ok');
    feed.refresh();
    if (hash) go(hash);
    else ctx.rerender();
  };
  box.appendChild(h('div', { class: 'row', testid: 'job-actions' },
    actionButton('job-retry', 'Retry', 'act', async () => {
      const body = j.state === 'completed' ? { state: 'completed' } : {};
      const r = await post('/api/queues/' + q(name) + '/jobs/' + q(j.id) + '/retry', body);
      after('Job ' + j.id + ' retried (from ' + r.from + ')');
    }, j.state === 'failed' || j.state === 'completed' ? null : { title:
      'only a failed or completed job can be retried', disabled: true }),
    actionButton('job-promote', 'Promote', 'act', async () => {
      await post('/api/queues/' + q(name) + '/jobs/' + q(j.id) + '/promote', {});
      after('Job ' + j.id + ' promoted');
    }),
    actionButton('job-remove', 'Remove…', 'act', async () => {
      const ok = await confirmDialog('Remove job ' + j.id + ' of ' + name + '? This cannot ' +
        'be undone.', 'Remove');
      if (!ok) return;
      await del('/api/queues/' + q(name) + '/jobs/' + q(j.id));
      after('Job ' + j.id + ' removed', queueHref(name));
    }, { class: 'action danger' })));

  const ts = [['created', j.timestamp], ['processed', j.processedOn], ['finished',
    j.finishedOn]];
  box.appendChild(section('Timing and attempts', 'job-meta',
    h('dl', { class: 'kv', testid: 'job-timestamps' }, ts.map(([k, v]) => [h('dt', null, k),
      h('dd', { 'data-field': k }, v ? when(v) : '–')]),
    h('dt', null, 'delay'), h('dd', null, num(null, j.delay)),
    h('dt', null, 'priority'), h('dd', null, num(null, j.priority)),
    h('dt', null, 'progress'), h('dd', null, pretty(j.progress))),
    h('dl', { class: 'kv', testid: 'job-attempts' },
      h('dt', null, 'attempts made'), h('dd', null, num('job-attempts-made', j.attemptsMade)),
      h('dt', null, 'attempts started'), h('dd', null, num(null, j.attemptsStarted)),
      h('dt', null, 'stalled'), h('dd', null, num(null, j.stalledCounter)),
      h('dt', null, 'processed by'), h('dd', null, j.processedBy || '–'))));

  box.appendChild(section('Data', null, pre('job-data', pretty(j.data))));
  box.appendChild(section('Options', null, pre('job-opts', pretty(j.opts))));
  box.appendChild(section('Return value', null, pre('job-returnvalue',
    pretty(j.returnvalue === undefined ? null : j.returnvalue))));
  box.appendChild(section('Failure', null,
    h('p', { testid: 'job-failed-reason', class: j.failedReason ? 'error-text' : 'muted' },
      j.failedReason || '(none)'),
    pre('job-stacktrace', Array.isArray(j.stacktrace) ? j.stacktrace.join('\n\n') :
      (j.stacktrace || ''))));

  const logs = h('div', { testid: 'job-logs' }, loading());
  box.appendChild(section('Logs', null, logs));
  try {
    const lr = await get('/api/queues/' + q(name) + '/jobs/' + q(j.id) + '/logs');
    if (!ctx.alive()) return;
    clear(logs);
    logs.setAttribute('data-raw', String(lr.count));
    logs.appendChild(h('p', { class: 'muted small' }, lr.count + ' line(s)' +
      (lr.count > lr.logs.length ? ', the first ' + lr.logs.length + ' shown' : '')));
    logs.appendChild(h('ol', { class: 'logs' }, lr.logs.map((l) => h('li', null, l))));
  } catch (e) {
    if (ctx.alive()) clear(logs).appendChild(errorBox(e.message));
  }
}
