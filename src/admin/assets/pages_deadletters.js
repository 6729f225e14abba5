// pages_deadletters.js - #/dead-letters: filters and list, redrive as dry run → plan → execute
// the same plan (ids), purge (dry run, confirm, delete exactly the dry run's ids), and the audit.

import { h, clear, num, table, cell, when, errorBox, section } from './dom.js';
import { get, post, qs, feed } from './api.js';
import { flash, confirmDialog, actionButton, field, loading, jobHref } from './ui.js';

function filterOf(inputs) {
  const f = {};
  const v = (k) => inputs[k].value.trim();
  if (v('queue')) f.queue = v('queue');
  if (v('name')) f.name = v('name');
  if (inputs.error.value !== '') f.errorContains = inputs.error.value;
  if (v('since')) f.since = v('since');
  if (v('until')) f.until = v('until');
  return f;
}

function itemRows(items) {
  return items.map((it) => h('tr', { testid: 'dl-plan-sample', 'data-id': it.id },
    cell('queue', it.queue || ''), cell('job', it.jobId || ''), cell('name', it.name || ''),
    cell('new-job', it.newJobId || '–'), cell('status', it.status || ''),
    cell('reason', it.reason || '')));
}

export async function deadLettersPage(ctx) {
  ctx.main.appendChild(h('h1', null, 'Dead letters'));
  const inputs = {
    queue: h('input', { testid: 'dl-filter-queue', type: 'text', placeholder: 'exact queue' }),
    name: h('input', { testid: 'dl-filter-name', type: 'text', placeholder: 'exact job name' }),
    error: h('input', { testid: 'dl-filter-error', type: 'text', placeholder:
      'text in the error' }),
    since: h('input', { testid: 'dl-filter-since', type: 'text', placeholder:
      '2026-12-03T00:00:00Z' }),
    until: h('input', { testid: 'dl-filter-until', type: 'text', placeholder:
      'ISO time, date or ms' }),
  };
  for (const k of ['queue', 'name', 'error', 'since', 'until']) {
    const v = ctx.query.get(k);
    if (v) inputs[k].value = v;
  }
  const listBox = h('div', null);
  const planBox = h('div', { testid: 'dl-plan-box' });
  const auditBox = h('div', null);

  const loadList = async () => {
    clear(listBox).appendChild(loading());
    const f = filterOf(inputs);
    let r;
    try {
      r = await get('/api/dead-letters' + qs(Object.assign({ limit: 100 }, f)));
    } catch (e) {
      if (ctx.alive()) clear(listBox).appendChild(errorBox(e.message));
      return;
    }
    if (!ctx.alive()) return;
    clear(listBox);
    listBox.appendChild(h('p', null, num('dl-total', r.total), ' dead letter(s) match',
      r.total > r.deadLetters.length ? '; the oldest ' + r.deadLetters.length + ' shown' : ''));
    listBox.appendChild(table('dl-table', ['failed', 'queue', 'job', 'name', 'error',
      'attempts', 'redriven'], r.deadLetters.map((d) => h('tr', { testid: 'dl-row',
      'data-id': d.id },
    cell('failed', when(d.failedAt)), cell('queue', d.queue || ''),
    cell('job', h('a', { href: jobHref(d.queue, d.jobId) }, d.jobId || '')),
    cell('name', d.name || ''),
    cell('error', h('span', { class: 'clip', title: d.error || '' }, d.error || '')),
    cell('attempts', num(null, d.attemptsMade)),
    cell('redriven', d.redrivenAt ? ['yes (', num(null, d.redriveCount), ') by ',
      d.redrivenBy || '?', ' ', when(d.redrivenAt)] : 'no')))));
  };

  const loadAudit = async () => {
    clear(auditBox).appendChild(loading());
    let r;
    try {
      r = await get('/api/dead-letters/audit' + qs({ limit: 50 }));
    } catch (e) {
      if (ctx.alive()) clear(auditBox).appendChild(errorBox(e.message));
      return;
    }
    if (!ctx.alive()) return;
    clear(auditBox).appendChild(table('dl-audit', ['at', 'action', 'dry run', 'actor',
      'queue', 'job', 'new job', 'note'], r.audit.map((a) => h('tr', { testid: 'audit-row',
      'data-id': a.id },
    cell('at', when(a.atIso || a.at)), cell('action', a.action || ''),
    cell('dry-run', a.dryRun ? 'dry run' : 'executed'), cell('actor', a.actor || ''),
    cell('queue', a.queue || ''), cell('job', a.jobId || ''),
    cell('new-job', a.newJobId || '–'), cell('note', a.note || '')))));
  };

  const showPlan = (r, f) => {
    clear(planBox);
    const items = r.items || [];
    const ids = items.map((it) => it.id);
    const groups = r.groups || [];
    const exec = actionButton('dl-execute', 'Execute this plan…', 'redrive', async () => {
      const ok = await confirmDialog('Redrive the ' + ids.length + ' dead letter(s) of this ' +
        'plan? Each becomes a new job in its queue.', 'Redrive');
      if (!ok) return;
      const body = Object.assign({}, f, { dryRun: false, ids });
      const x = await post('/api/dead-letters/redrive', body);
      flash('Redrive done: ' + x.done + ' redriven, ' + x.skipped + ' skipped, ' + x.refused +
        ' refused of ' + x.matched + ' matched', x.refused ? 'error' : 'ok');
      clear(planBox);
      feed.refresh();
      loadList();
      loadAudit();
    }, ids.length ? null : { disabled: true, title: 'the plan is empty' });
    planBox.appendChild(h('div', { class: 'plan', testid: 'dl-plan' },
      h('h3', null, 'Redrive plan (dry run)'),
      h('p', null, num('dl-plan-total', r.matched), ' row(s) matched; ',
        num('dl-plan-would', r.would), ' would be redriven, ', num(null, r.skipped),
        ' skipped, ', num(null, r.refused), ' refused'),
      table('dl-plan-groups', ['queue', 'name', 'reason', 'count'], groups.map((g) =>
        h('tr', { testid: 'dl-plan-group' }, cell('queue', g.queue || ''),
          cell('name', g.name || ''), cell('reason', g.reason || ''),
          cell('count', num(null, g.count))))),
      h('h4', null, 'Rows', items.length > 50 ? ' (the first 50 of ' + items.length + ')' : ''),
      h('div', { testid: 'dl-plan-samples' }, table(null, ['queue', 'job', 'name', 'new job',
        'status', 'reason'], itemRows(items.slice(0, 50)))),
      exec));
  };

  const dryRun = actionButton('dl-dry-run', 'Redrive: dry run', 'redrive', async () => {
    const f = filterOf(inputs);
    const r = await post('/api/dead-letters/redrive', Object.assign({ dryRun: true }, f));
    showPlan(r, f);
    loadAudit();
    flash('Dry run: ' + r.matched + ' row(s) in the plan, nothing changed', 'ok');
  });
  // Purge deletes exactly the rows its dry run counted (their ids), as redrive executes its
  // plan: a row that starts matching the filter between the two requests is not deleted.
  const purge = actionButton('dl-purge', 'Purge…', 'redrive', async () => {
    const f = filterOf(inputs);
    const r = await post('/api/dead-letters/purge', Object.assign({ dryRun: true }, f));
    const ids = (r.items || []).filter((it) => it.status === 'would').map((it) => it.id);
    if (!ids.length) {
      flash('Purge: no row matches', 'ok');
      return;
    }
    const ok = await confirmDialog('Delete ' + ids.length + ' dead letter(s) for good? ' +
      'Their audit history stays.', 'Delete');
    if (!ok) return;
    const x = await post('/api/dead-letters/purge', Object.assign({}, f, { dryRun: false, ids }));
    flash('Purged ' + x.done + ' dead letter(s)' + (x.skipped ? ', ' + x.skipped +
      ' skipped (changed since the dry run)' : ''), 'ok');
    feed.refresh();
    loadList();
    loadAudit();
  }, { class: 'action danger' });
  const apply = h('button', { type: 'button', testid: 'dl-apply', class: 'primary',
    on: { click: () => {
      clear(planBox);
      loadList();
    } } }, 'Apply filters');

  ctx.main.appendChild(section('Filters', 'dl-filters',
    h('div', { class: 'row' }, field('Queue', inputs.queue), field('Name', inputs.name),
      field('Error contains', inputs.error), field('Since', inputs.since),
      field('Until', inputs.until), apply),
    h('div', { class: 'row' }, dryRun, purge),
    planBox));
  ctx.main.appendChild(section('Dead letters', 'dl-list', listBox));
  ctx.main.appendChild(section('Redrive and purge history', 'dl-history', auditBox));
  loadList();
  loadAudit();
}
