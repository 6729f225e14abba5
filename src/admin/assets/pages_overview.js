// pages_overview.js - #/ : the pipeline as hop cards (outbox → relay → queues → workers →
// inbox → dead letters) with sparklines, and the per-queue table. Fed by the live feed.

import { h, clear, num, sparkline, table, cell, when, errorBox } from './dom.js';
import { feed, get } from './api.js';
import { queueHref, loading } from './ui.js';

function sumBuckets(queues, key) {
  let out = [];
  for (const qd of queues) {
    const arr = qd.throughput && Array.isArray(qd.throughput[key]) ? qd.throughput[key] : [];
    if (arr.length > out.length) {
      out = out.concat(new Array(arr.length - out.length).fill(0));
    }
    // align the newest buckets (arrays are oldest first)
    const off = out.length - arr.length;
    arr.forEach((n, i) => {
      out[off + i] += n;
    });
  }
  return out;
}

function card(testid, title, body, spark, note) {
  return h('article', { class: 'hop', testid },
    h('h2', null, title), h('div', { class: 'hop-body' }, body),
    spark || null, note ? h('p', { class: 'muted small' }, note) : null);
}

function stat(label, node) {
  return h('div', { class: 'stat' }, h('span', { class: 'stat-label' }, label), node);
}

function queueState(qd) {
  if (qd.paused) return 'paused';
  if (qd.rateLimitedMs > 0) return 'rate-limited';
  return 'running';
}

// Redrawn on every live frame: keep keyboard focus on the same link across the redraw.
function render(box, ov) {
  const act = document.activeElement;
  const keep = act && box.contains(act) ? act.getAttribute('href') : null;
  draw(box, ov);
  if (keep) {
    for (const a of box.querySelectorAll('a')) {
      if (a.getAttribute('href') === keep) {
        a.focus();
        break;
      }
    }
  }
}

function draw(box, ov) {
  clear(box);
  const hist = ov.history || {};
  const queues = Array.isArray(ov.queues) ? ov.queues : [];
  const totals = ov.totals || {};
  const bucket = queues.length && queues[0].throughput ? queues[0].throughput.bucketSeconds :
    10;
  const completed = sumBuckets(queues, 'completed');
  const failed = sumBuckets(queues, 'failed');
  const every = (hist.intervalSeconds || 5) + ' s';

  const ob = ov.outbox;
  const hops = h('div', { class: 'hops' },
    card('hop-outbox', 'Outbox', ob ? [
      stat('unpublished', num('outbox-unpublished', ob.unpublished)),
      stat('oldest', num('outbox-oldest-age', ob.oldestAgeSeconds, 'age')),
    ] : errorBox(ov.outboxError || 'no outbox data', 'outbox-error'),
    sparkline('unpublished rows every ' + every, [{ name: 'unpublished', values:
      hist.outboxUnpublished || [] }], 'outbox-unpublished')),
    card('hop-relay', 'Relay', ob ? [
      stat('with errors', num('relay-with-errors', ob.withErrors)),
      stat('quarantined', num('relay-quarantined', ob.quarantined)),
      stat('unrouted rows', num('relay-unrouted', ob.unroutedRows)),
    ] : h('p', { class: 'muted' }, 'no outbox data'), null,
    ob ? 'lag: the oldest unpublished row waits ' + (ob.oldestAgeSeconds || 0).toFixed(1) +
      ' s' : null),
    card('hop-queues', 'Queues', [
      stat('ready', num('queues-ready', totals.ready)),
      stat('oldest ready', num('queues-oldest-ready-age', totals.oldestReadyAgeSeconds,
        'age')),
      stat('delayed', num('queues-delayed', totals.delayed)),
    ], sparkline('ready jobs every ' + every, [{ name: 'ready', values: hist.ready || [] }],
      'ready'), ov.queuesComplete === false ? 'only the first 200 queues in detail' : null),
    card('hop-workers', 'Workers', [
      stat('active jobs', num('workers-active', totals.active)),
      stat('workers', num('workers-count', totals.workers)),
      stat('failed', num('queues-failed', totals.failed)),
    ], sparkline('jobs finished per ' + bucket + ' s', [
      { name: 'completed', values: completed }, { name: 'failed', values: failed }],
    'throughput'), 'completed (line 1) and failed (line 2) per ' + bucket + ' s'),
    card('hop-inbox', 'Inbox', ov.inbox ? [
      stat('markers', num('inbox-markers', ov.inbox.markers)),
      h('ul', { class: 'plain small' }, (ov.inbox.consumers || []).map((c) =>
        h('li', { 'data-consumer': c.consumer }, c.consumer + ': ', num(null, c.markers)))),
    ] : h('p', { class: 'muted' }, 'no inbox data')),
    card('hop-dead-letters', 'Dead letters', ov.deadLetters ? [
      stat('not redriven', num('dead-letters-count', ov.deadLetters.notRedriven)),
      stat('oldest', num('dead-letters-oldest-age', ov.deadLetters.oldestAgeSeconds, 'age')),
    ] : errorBox(ov.deadLettersError || 'no dead-letter data', 'dead-letters-error'),
    sparkline('dead letters every ' + every, [{ name: 'dead letters', values:
      hist.deadLetters || [] }], 'dead-letters')));
  box.appendChild(hops);

  const rows = queues.map((qd) => {
    const c = qd.counts || {};
    return h('tr', { 'data-queue': qd.name },
      h('th', { scope: 'row' }, h('a', { href: queueHref(qd.name) }, qd.name)),
      cell('ready', num(null, (c.wait || 0) + (c.prioritized || 0) + (c.paused || 0))),
      cell('active', num(null, c.active)),
      cell('delayed', num(null, c.delayed)),
      cell('failed', num(null, c.failed)),
      cell('completed', num(null, c.completed)),
      cell('oldest-ready', num(null, qd.oldestReadyAgeSeconds, 'age')),
      cell('oldest-active', num(null, qd.oldestActiveAgeSeconds, 'age')),
      cell('workers', num(null, qd.workers)),
      cell('throughput', sparkline(qd.name + ': finished per ' + bucket + ' s', [
        { name: 'completed', values: (qd.throughput || {}).completed || [] },
        { name: 'failed', values: (qd.throughput || {}).failed || [] }], 'queue')),
      cell('state', queueState(qd)));
  });
  box.appendChild(h('section', { class: 'panel' }, h('h2', null, 'Queues'),
    rows.length ? table('overview-queues', ['queue', 'ready', 'active', 'delayed', 'failed',
      'completed', 'oldest ready', 'oldest active', 'workers', 'finished', 'state'], rows) :
      h('p', { class: 'muted', testid: 'overview-queues-empty' }, 'No queues under this prefix.')));
  box.appendChild(h('p', { class: 'muted small' }, 'snapshot ', when(ov.at, 'overview-at')));
}

export function overviewPage(ctx) {
  ctx.main.appendChild(h('h1', null, 'Overview'));
  const box = h('div', { testid: 'overview' }, loading());
  ctx.main.appendChild(box);
  const unsub = feed.subscribe((ov) => {
    if (ctx.alive()) render(box, ov);
  });
  ctx.onCleanup(unsub);
  if (!feed.last) {
    get('/api/overview').then((ov) => feed.publish(ov)).catch((e) => {
      if (ctx.alive() && !feed.last) clear(box).appendChild(errorBox(e.message));
    });
  }
}
