// dom.js - the only way the dashboard builds elements.
//
// Rendering rule: every piece of text (job data, names, errors, logs, anything the API gave)
// goes into the page through createTextNode / textContent. Attributes go through setAttribute
// with an allow-list; links only to "#..." or "/..." addresses. Nothing here uses innerHTML,
// insertAdjacentHTML, document.write or eval, and no inline handlers or styles are made.

const ATTRS = new Set([
  'class', 'id', 'href', 'title', 'type', 'name', 'value', 'placeholder', 'role', 'for',
  'min', 'max', 'step', 'disabled', 'checked', 'hidden', 'autocomplete', 'tabindex',
  'colspan', 'scope', 'open', 'lang', 'datetime', 'spellcheck', 'inputmode', 'size',
  'maxlength', 'rel', 'selected', 'readonly', 'required',
]);
const BOOL = new Set(['disabled', 'checked', 'hidden', 'open', 'selected', 'readonly',
  'required']);

function attrAllowed(name) {
  return ATTRS.has(name) || name.startsWith('data-') || name.startsWith('aria-');
}

function safeHref(v) {
  const s = String(v);
  return s.startsWith('#') || (s.startsWith('/') && !s.startsWith('//')) ? s : '#/';
}

function append(el, child) {
  if (child === null || child === undefined || child === false) return;
  if (Array.isArray(child)) {
    for (const c of child) append(el, c);
  } else if (child instanceof Node) {
    el.appendChild(child);
  } else {
    el.appendChild(document.createTextNode(String(child)));
  }
}

function setAttrs(el, attrs) {
  if (!attrs) return;
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'on') {
      for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
      continue;
    }
    if (k === 'testid') {
      if (v !== null && v !== undefined) el.setAttribute('data-testid', String(v));
      continue;
    }
    if (k === 'raw') {
      if (v !== null && v !== undefined) el.setAttribute('data-raw', String(v));
      continue;
    }
    if (!attrAllowed(k)) throw new Error('dom: attribute not allowed: ' + k);
    if (v === null || v === undefined || v === false) continue;
    if (BOOL.has(k)) {
      if (v) el.setAttribute(k, '');
      if (k === 'checked') el.checked = !!v;
      continue;
    }
    el.setAttribute(k, k === 'href' ? safeHref(v) : String(v));
  }
}

// h('tag', {attrs}, ...children): an element. attrs: allow-listed attributes, `testid`
// (data-testid), `raw` (data-raw), `on: {event: fn}`. Children: nodes, text (always a text
// node), arrays, null (skipped).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVGNS = 'http://www.w3.org/2000/svg';
const SVG_ATTRS = new Set(['viewBox', 'width', 'height', 'points', 'class', 'role',
  'aria-label', 'preserveAspectRatio', 'x1', 'x2', 'y1', 'y2', 'focusable']);

export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'testid') {
      if (v !== null && v !== undefined) el.setAttribute('data-testid', String(v));
    }
    else if (SVG_ATTRS.has(k) || k.startsWith('data-')) el.setAttribute(k, String(v));
    else throw new Error('dom: svg attribute not allowed: ' + k);
  }
  for (const c of children) {
    if (c instanceof Node) el.appendChild(c);
    else if (c !== null && c !== undefined) el.appendChild(document.createTextNode(String(c)));
  }
  return el;
}

// A sparkline of one or more series (arrays of numbers, oldest first), inline SVG built with
// createElementNS; the aria-label gives the numbers.
export function sparkline(label, series, extraTestid) {
  const w = 120;
  const hgt = 28;
  const all = series.flatMap((s) => s.values.filter((n) => typeof n === 'number'));
  const max = Math.max(1, ...all);
  const text = series.map((s) => s.name + ': ' + (s.values.length ? s.values.join(', ') :
    'no data')).join('; ');
  const el = svg('svg', {
    viewBox: '0 0 ' + w + ' ' + hgt, width: w, height: hgt, class: 'sparkline', role: 'img',
    'aria-label': label + ' (oldest first) ' + text, testid: 'sparkline', focusable: 'false',
    'data-series': extraTestid || label,
  });
  el.appendChild(svg('title', {}, label + ': ' + text));
  series.forEach((s, i) => {
    const v = s.values.filter((n) => typeof n === 'number');
    if (v.length === 0) return;
    const step = v.length > 1 ? w / (v.length - 1) : 0;
    const pts = v.map((n, j) => {
      const x = v.length > 1 ? j * step : w / 2;
      const y = hgt - 2 - (n / max) * (hgt - 4);
      return x.toFixed(1) + ',' + y.toFixed(1);
    }).join(' ');
    el.appendChild(svg('polyline', { points: pts, class: 'spark-line spark-' + i }));
  });
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

// ---- formatting ----

export function fmtCount(n) {
  if (n === null || n === undefined || Number.isNaN(n)) return '–';
  const a = Math.abs(n);
  if (a < 1000) return String(n);
  if (a < 1e6) return (n / 1e3).toFixed(a < 1e4 ? 1 : 0).replace(/\.0$/, '') + 'k';
  if (a < 1e9) return (n / 1e6).toFixed(a < 1e7 ? 1 : 0).replace(/\.0$/, '') + 'M';
  return (n / 1e9).toFixed(1).replace(/\.0$/, '') + 'G';
}

// Seconds into "3m 4s", "2h 5m", "4d 1h", "0.4s".
export function fmtAge(sec) {
  if (sec === null || sec === undefined || Number.isNaN(sec)) return '–';
  if (sec < 0) sec = 0;
  if (sec < 10) return (Math.round(sec * 10) / 10) + 's';
  let s = Math.floor(sec);
  const d = Math.floor(s / 86400); s -= d * 86400;
  const hr = Math.floor(s / 3600); s -= hr * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  if (d) return d + 'd ' + hr + 'h';
  if (hr) return hr + 'h ' + m + 'm';
  if (m) return m + 'm ' + s + 's';
  return s + 's';
}

function toDate(t) {
  if (t === null || t === undefined || t === '') return null;
  const d = typeof t === 'number' ? new Date(t) : new Date(String(t));
  return Number.isNaN(d.getTime()) ? null : d;
}

export function isoOf(t) {
  const d = toDate(t);
  return d ? d.toISOString() : '';
}

// A number as shown: text formatted, data-raw the number as the API gave it.
export function num(testid, value, kind) {
  const text = kind === 'age' ? fmtAge(value) : fmtCount(value);
  const attrs = { class: 'num', raw: value === null || value === undefined ? '' : value };
  if (testid) attrs.testid = testid;
  if (kind === 'age' && value !== null && value !== undefined) attrs.title = value + ' s';
  return h('span', attrs, text);
}

// A time (ms or ISO text) as a relative age ("3m 4s ago") with the ISO time in the title.
export function when(t, testid) {
  const d = toDate(t);
  if (!d) return h('span', { class: 'muted', testid }, '–');
  const ago = (Date.now() - d.getTime()) / 1000;
  const text = ago >= 0 ? fmtAge(ago) + ' ago' : 'in ' + fmtAge(-ago);
  return h('time', { datetime: d.toISOString(), title: d.toISOString(), testid,
    raw: typeof t === 'number' ? t : d.getTime() }, text);
}

export function pretty(v) {
  if (v === undefined) return '';
  try {
    return JSON.stringify(v, null, 2);
  } catch (e) {
    return String(v);
  }
}

// A table in its own horizontally scrolling container.
export function table(testid, headers, rows, caption) {
  return h('div', { class: 'table-wrap' },
    h('table', { testid },
      caption ? h('caption', null, caption) : null,
      h('thead', null, h('tr', null, headers.map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', null, rows)));
}

export function cell(col, ...children) {
  return h('td', { 'data-col': col }, ...children);
}

export function errorBox(text, testid) {
  return h('p', { class: 'error-box', role: 'alert', testid: testid || 'page-error' }, text);
}

export function section(title, testid, ...children) {
  return h('section', { class: 'panel', testid }, h('h2', null, title), ...children);
}
