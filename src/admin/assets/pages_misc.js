// pages_misc.js - #/outbox, #/schedulers, #/trace[/<id>], #/tasks, #/audit.

import { h, clear, num, table, cell, when, errorBox, section } from './dom.js';
import { get, post, q, qs } from './api.js';
import { flash, actionButton, go, field, loading, traceHref, jobHref, queueHref } from
  './ui.js';

async function load(ctx, box, path) {
  clear(box).appendChild(loading());
  try {
    const r = await get(path);
    if (ctx.alive()) clear(box);
    return ctx.alive() ? r : null;
  } catch (e) {
    if (ctx.alive()) clear(box).appendChild(errorBox(e.message));
    return null;
  }
}

// ---- outbox ----

export async function outboxPage(ctx) {
  ctx.main.appendChild(h('h1', null, 'Outbox'));
  const box = h('div');
  ctx.main.appendChild(box);
  const r = await load(ctx, box, '/api/outbox');
  if (!r) return;
  box.appendChild(h('div', { class: 'hops' },
    h('article', { class: 'hop' }, h('h2', null, 'Unpublished'),
      num('outbox-unpublished', r.unpublished)),
    h('article', { class: 'hop' }, h('h2', null, 'Oldest'),
      num('outbox-oldest-age', r.oldestUnpublishedAgeSeconds, 'age')),
    h('article', { class: 'hop' }, h('h2', null, 'With errors'),
      num('outbox-with-errors', r.withErrors)),
    h('article', { class: 'hop' }, h('h2', null, 'Quarantined'),
      num('outbox-quarantined', r.quarantined)),
    h('article', { class: 'hop' }, h('h2', null, 'Unrouted rows'),
      r.routesGiven ? num('outbox-unrouted', r.unroutedRows) :
        h('span', { class: 'muted' }, 'routes not given'))));
  const routed = (t) => !r.routesGiven ? 'routes not given' : t.routed ? 'routed' :
    'unknown topic';
  box.appendChild(section('Topics', null, table('outbox-topics', ['topic', 'unpublished',
    'with errors', 'quarantined', 'oldest', 'route'], (r.topics || []).map((t) =>
    h('tr', { testid: 'topic-row', 'data-topic': t.topic },
      h('th', { scope: 'row' }, t.topic),
      cell('unpublished', num(null, t.unpublished)), cell('errors', num(null, t.withErrors)),
      cell('quarantined', num(null, t.quarantined)),
      cell('oldest', num(null, t.oldestAgeSeconds, 'age')),
      cell('routed', h('span', { class: 'state state-' + routed(t).replace(/ /g, '-') },
        routed(t)))))),
  r.topicsTruncated ? h('p', { class: 'muted' }, 'Only the first topics are listed.') : null,
  !r.routesGiven ? h('p', { class: 'muted small' }, 'Start ferry serve with --routes FILE ' +
    'to flag topics without a route.') : null));
}

// ---- schedulers ----

function inZone(ms, tz) {
  try {
    return new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit',
      day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false,
      timeZoneName: 'short' }).format(new Date(ms));
  } catch (e) {
    return null;
  }
}

export async function schedulersPage(ctx) {
  ctx.main.appendChild(h('h1', null, 'Schedulers'));
  const box = h('div');
  ctx.main.appendChild(box);
  const list = await load(ctx, box, '/api/queues');
  if (!list) return;
  const rows = [];
  const errors = [];
  const queues = list.queues || [];
  const results = await Promise.all(queues.map((qu) =>
    get('/api/queues/' + q(qu.name) + '/schedulers' + qs({ limit: 1000 }))
      .then((r) => ({ qu, r }), (e) => ({ qu, e }))));
  if (!ctx.alive()) return;
  for (const { qu, r, e } of results) {
    if (e) {
      errors.push(qu.name + ': ' + e.message);
      continue;
    }
    for (const s of r.schedulers || []) {
      const tz = s.tz || null;
      const local = s.next !== null && s.next !== undefined && tz ? inZone(s.next, tz) : null;
      const utc = s.next !== null && s.next !== undefined ? inZone(s.next, 'UTC') : null;
      rows.push(h('tr', { testid: 'scheduler-row', 'data-key': s.key, 'data-queue': qu.name },
        h('th', { scope: 'row' }, s.key),
        cell('queue', h('a', { href: queueHref(qu.name) }, qu.name)),
        cell('name', s.name || ''),
        cell('repeat', s.pattern ? s.pattern : s.every ? 'every ' + s.every + ' ms' : '–'),
        cell('tz', tz || '–'),
        cell('next', s.next === null || s.next === undefined ? '–' : h('span', { raw: s.next,
          title: s.nextIso || '' },
        tz ? [h('span', { class: 'local' }, local || s.nextLocal || '?', ' (' + tz + ')'),
          h('br'), h('span', { class: 'utc' }, utc || s.nextIso)] :
          h('span', { class: 'utc' }, utc || s.nextIso), ' · ', when(s.next))),
        cell('iterations', num(null, s.iterationCount))));
    }
  }
  box.appendChild(rows.length ? table('schedulers-table', ['key', 'queue', 'job name',
    'repeat', 'zone', 'next run (zone / UTC)', 'iterations'], rows) :
    h('p', { class: 'muted', testid: 'schedulers-empty' }, 'No job schedulers.'));
  for (const e of errors) box.appendChild(errorBox(e, 'schedulers-error'));
}

// ---- trace ----

export async function tracePage(ctx) {
  ctx.main.appendChild(h('h1', null, 'Trace an outbox event'));
  const input = h('input', { testid: 'trace-input', type: 'text', size: 40, placeholder:
    'event id (UUID)', 'aria-label': 'event id', value: ctx.route.id || '' });
  const goTrace = () => {
    const id = input.value.trim();
    if (!id) {
      flash('Give an event id', 'error');
      return;
    }
    go(traceHref(id));
  };
  input.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') goTrace();
  });
  ctx.main.appendChild(h('div', { class: 'row' }, field('Event id', input),
    h('button', { type: 'button', testid: 'trace-go', class: 'primary', on: { click: goTrace } },
      'Trace')));
  if (!ctx.route.id) return;
  const box = h('div', { testid: 'trace-result' }, loading());
  ctx.main.appendChild(box);
  let r;
  try {
    r = await get('/api/trace/' + q(ctx.route.id));
  } catch (e) {
    if (!ctx.alive()) return;
    clear(box).appendChild(e.status === 404 && !/no such endpoint/.test(e.message) ? h('p', { testid: 'trace-none', class: 'muted' },
      'Nothing knows event ' + ctx.route.id + ' (no outbox row, job, inbox marker or dead ' +
      'letter).') : errorBox(e.message));
    return;
  }
  if (!ctx.alive()) return;
  clear(box);
  const o = r.outbox;
  box.appendChild(section('Outbox row', 'trace-outbox', o ? h('dl', { class: 'kv' },
    [['topic', o.topic], ['aggregate', o.aggregateId], ['trace id', o.traceId],
      ['attempts', o.attempts], ['last error', o.lastError]].map(([k, v]) =>
      [h('dt', null, k), h('dd', null, v === null || v === undefined ? '–' : String(v))]),
    h('dt', null, 'created'), h('dd', null, when(o.createdAt)),
    h('dt', null, 'published'), h('dd', { 'data-field': 'published' }, o.publishedAt ?
      when(o.publishedAt) : 'not published'),
    h('dt', null, 'quarantined'), h('dd', null, o.quarantinedAt ? when(o.quarantinedAt) :
      'no')) : h('p', { class: 'muted' }, 'No outbox row (published rows may be pruned).'),
  (r.routes || []).length ? h('p', null, 'Routes: ', r.routes.map((x) => x.queue + ' → ' +
    x.name).join(', ')) : null));
  box.appendChild(section('Jobs', 'trace-jobs', (r.jobs || []).length ? table(null, ['queue',
    'id', 'state', 'name', 'attempts', 'created', 'finished', 'reason', 'redrive of'],
  r.jobs.map((j) => h('tr', { testid: 'trace-job', 'data-queue': j.queue, 'data-job-id': j.id },
    cell('queue', j.queue), cell('id', h('a', { href: jobHref(j.queue, j.id) }, j.id)),
    cell('state', j.state || ''), cell('name', j.name || ''),
    cell('attempts', num(null, j.attemptsMade)), cell('created', when(j.timestamp)),
    cell('finished', j.finishedOn ? when(j.finishedOn) : '–'),
    cell('reason', j.failedReason || ''), cell('redrive-of', j.redriveOf || '–')))) :
    h('p', { class: 'muted' }, 'No job found.')));
  box.appendChild(section('Inbox', 'trace-inbox', (r.inbox || []).length ? h('ul', null,
    r.inbox.map((m) => h('li', { 'data-consumer': m.consumer }, m.consumer + ' processed it ',
      when(m.processedAt)))) : h('p', { class: 'muted' }, 'No consumer marked it processed.')));
  box.appendChild(section('Dead letters', 'trace-dead-letters', (r.deadLetters || []).length ?
    table(null, ['id', 'queue', 'job', 'error', 'failed', 'redriven'], r.deadLetters.map((d) =>
      h('tr', { 'data-id': d.id }, cell('id', d.id), cell('queue', d.queue || ''),
        cell('job', d.jobId || ''), cell('error', d.error || ''), cell('failed', when(d.failedAt)),
        cell('redriven', d.redrivenAt ? 'yes, by ' + (d.redrivenBy || '?') + ' as ' +
          (d.redriveJobId || '?') : 'no')))) : h('p', { class: 'muted' }, 'None.')));
  box.appendChild(section('Redrives', 'trace-redrives', (r.redrives || []).length ?
    table(null, ['dead letter', 'queue', 'job', 'new job', 'action', 'by', 'at'],
      r.redrives.map((x) => h('tr', null, cell('dead-letter', x.deadLetterId || ''),
        cell('queue', x.queue || ''), cell('job', x.jobId || ''), cell('new-job',
          x.newJobId || '–'), cell('action', x.action + (x.dryRun ? ' (dry run)' : '')),
        cell('by', x.redrivenBy || ''), cell('at', when(x.redrivenAt))))) :
    h('p', { class: 'muted' }, 'None.')));
}

// ---- tasks ----

export async function tasksPage(ctx) {
  ctx.main.appendChild(h('h1', null, 'Tasks'));
  const box = h('div');
  ctx.main.appendChild(box);
  let timer = null;
  ctx.onCleanup(() => clearTimeout(timer));
  const draw = async (first) => {
    let r;
    try {
      r = await get('/api/tasks');
    } catch (e) {
      if (ctx.alive()) clear(box).appendChild(errorBox(e.message));
      return;
    }
    if (!ctx.alive()) return;
    clear(box);
    const tasks = r.tasks || [];
    box.appendChild(tasks.length ? table('tasks-table', ['id', 'kind', 'queue', 'selector',
      'state', 'progress', 'by', 'created', 'finished', ''], tasks.map((t) =>
      h('tr', { testid: 'task-row', 'data-task-id': t.id, 'data-state': t.state },
        h('th', { scope: 'row' }, t.id), cell('kind', t.kind), cell('queue', t.queue),
        cell('selector', Object.entries(t.selector || {}).filter(([, v]) => v !== null)
          .map(([k, v]) => k + '=' + v).join(', ')),
        cell('state', t.state),
        cell('counts', 'scanned ' + t.scanned + ' of ' + t.total + ', matched ' + t.matched +
          ', retried ' + t.retried + ', skipped ' + t.skipped +
          (t.error || t.message ? ' (' + (t.error || t.message) + ')' : '')),
        cell('by', t.createdBy || ''), cell('created', when(t.createdAt)),
        cell('finished', t.finishedAt ? when(t.finishedAt) : '–'),
        cell('actions', t.state === 'running' ? actionButton('task-cancel', 'Cancel', 'act',
          async () => {
            await post('/api/tasks/' + q(t.id) + '/cancel', {});
            flash('Task ' + t.id + ' cancel requested', 'ok');
            draw(false);
          }) : null)))) :
      h('p', { class: 'muted', testid: 'tasks-empty' }, 'No tasks yet.'));
    if (tasks.some((t) => t.state === 'running')) timer = setTimeout(() => draw(false), 1000);
    return first;
  };
  box.appendChild(loading());
  await draw(true);
}

// ---- audit ----

export async function auditPage(ctx) {
  ctx.main.appendChild(h('h1', null, 'Audit'));
  const actor = h('input', { testid: 'audit-filter-actor', type: 'text', value:
    ctx.query.get('actor') || '' });
  const path = h('input', { testid: 'audit-filter-path', type: 'text', value:
    ctx.query.get('pathContains') || '' });
  const box = h('div');
  const more = h('div');
  const rows = [];
  const tbody = [];
  let before = null;
  const loadPage = async (reset) => {
    if (reset) {
      rows.length = 0;
      before = null;
      tbody.length = 0;
      clear(box).appendChild(loading());
    }
    let r;
    try {
      r = await get('/api/audit' + qs({ actor: actor.value.trim(), pathContains: path.value,
        limit: 100, before }));
    } catch (e) {
      if (ctx.alive()) clear(box).appendChild(errorBox(e.message));
      return;
    }
    if (!ctx.alive()) return;
    for (const a of r.audit || []) {
      rows.push(h('tr', { testid: 'audit-row', 'data-id': a.id },
        cell('at', when(a.at)), cell('actor', a.actor || ''), cell('method', a.method || ''),
        cell('path', a.path || ''), cell('status', num(null, a.status)),
        cell('summary', a.summary || ''), cell('request', a.requestId || '')));
      before = a.id;
    }
    clear(box).appendChild(table('audit-table', ['at', 'actor', 'method', 'path', 'status',
      'summary', 'request id'], rows));
    clear(more);
    if (r.more) {
      more.appendChild(h('button', { type: 'button', testid: 'audit-more',
        on: { click: () => loadPage(false) } }, 'Older…'));
    }
  };
  ctx.main.appendChild(h('div', { class: 'row' }, field('Actor', actor),
    field('Path contains', path), h('button', { type: 'button', class: 'primary',
      testid: 'audit-apply', on: { click: () => loadPage(true) } }, 'Apply')));
  ctx.main.appendChild(box);
  ctx.main.appendChild(more);
  await loadPage(true);
}
