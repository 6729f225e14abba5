// app.js - the dashboard's entry: /api/info, sign-in, the live status, and the hash router
// that hands each route to a page module (pages_*.js).

import { h, clear, errorBox } from './dom.js';
import { session, loadInfo, whoami, setToken, signOut, feed, ApiError } from './api.js';
import { flash, flashError } from './ui.js';
import { overviewPage } from './pages_overview.js';
import { queuesPage, queuePage, jobPage } from './pages_queues.js';
import { deadLettersPage } from './pages_deadletters.js';
import { outboxPage, schedulersPage, tracePage, tasksPage, auditPage } from './pages_misc.js';

const main = document.getElementById('main');
let generation = 0;
let cleanups = [];

// ---- routes ----

function parseHash() {
  let raw = window.location.hash.replace(/^#/, '');
  if (!raw.startsWith('/')) raw = '/' + raw;
  const qi = raw.indexOf('?');
  const path = qi < 0 ? raw : raw.slice(0, qi);
  const query = new URLSearchParams(qi < 0 ? '' : raw.slice(qi + 1));
  const parts = path.split('/').filter((p) => p !== '').map((p) => {
    try {
      return decodeURIComponent(p);
    } catch (e) {
      return p;
    }
  });
  return { parts, query };
}

function pick(parts) {
  const [a, b, c, d] = parts;
  if (!a) return { page: overviewPage, nav: 'overview' };
  if (a === 'queues' && parts.length === 1) return { page: queuesPage, nav: 'queues' };
  if (a === 'queues' && parts.length === 2) return { page: queuePage, nav: 'queues', name: b };
  if (a === 'queues' && c === 'jobs' && parts.length === 4) {
    return { page: jobPage, nav: 'queues', name: b, id: d };
  }
  if (a === 'dead-letters' && parts.length === 1) {
    return { page: deadLettersPage, nav: 'dead-letters' };
  }
  if (a === 'outbox' && parts.length === 1) return { page: outboxPage, nav: 'outbox' };
  if (a === 'schedulers' && parts.length === 1) {
    return { page: schedulersPage, nav: 'schedulers' };
  }
  if (a === 'trace' && parts.length <= 2) return { page: tracePage, nav: 'trace', id: b };
  if (a === 'tasks' && parts.length === 1) return { page: tasksPage, nav: 'tasks' };
  if (a === 'audit' && parts.length === 1) return { page: auditPage, nav: 'audit' };
  return null;
}

function route() {
  generation += 1;
  const mine = generation;
  for (const fn of cleanups) {
    try {
      fn();
    } catch (e) {
      console.error(e);
    }
  }
  cleanups = [];
  clear(main);
  const { parts, query } = parseHash();
  const r = pick(parts);
  for (const a of document.querySelectorAll('.nav a')) {
    if (r && a.getAttribute('data-testid') === 'nav-' + r.nav) {
      a.setAttribute('aria-current', 'page');
    } else {
      a.removeAttribute('aria-current');
    }
  }
  if (!r) {
    main.appendChild(errorBox('No such page: ' + window.location.hash));
    return;
  }
  if (session.info && session.info.readsNeedToken && !session.who) {
    main.appendChild(h('section', { class: 'panel', testid: 'signin-needed' },
      h('h1', null, 'Sign in needed'),
      h('p', null, 'This server needs a token to read. Sign in to see its data.'),
      h('button', { type: 'button', class: 'primary', on: { click: openSignIn } },
        'Sign in')));
    return;
  }
  const ctx = {
    main,
    parts,
    query,
    route: r,
    alive: () => mine === generation,
    onCleanup: (fn) => cleanups.push(fn),
    rerender: () => {
      if (mine === generation) route();
    },
  };
  Promise.resolve().then(() => r.page(ctx)).catch((e) => {
    if (!ctx.alive()) return;
    main.appendChild(errorBox(e && e.message ? e.message : String(e)));
  });
}

// ---- chrome: live status, sign-in ----

function showLive(status) {
  const el = document.querySelector('[data-testid="live-status"]');
  el.textContent = status;
  el.setAttribute('data-state', status);
  el.title = status === 'live' ? 'updates stream from /api/stream' :
    status === 'polling' ? 'the stream is not available: /api/overview every 5 s' :
      'the server cannot be reached (or needs sign-in)';
}

function renderWho() {
  const box = clear(document.getElementById('who'));
  if (session.who) {
    box.appendChild(h('span', { class: 'signed' }, 'signed in as ',
      h('strong', { testid: 'signed-in-as', title: 'scopes: ' +
        (session.who.scopes || []).join(', ') }, session.who.actor)));
    box.appendChild(h('button', { type: 'button', testid: 'signout', on: { click: () => {
      signOut();
      renderWho();
      flash('Signed out', 'ok');
      restartFeed();
      route();
    } } }, 'Sign out'));
  } else {
    box.appendChild(h('button', { type: 'button', testid: 'signin-open', class: 'primary',
      on: { click: openSignIn } }, 'Sign in'));
  }
}

const dlg = document.getElementById('signin-dialog');
const tokenInput = document.getElementById('signin-token');
const remember = document.getElementById('signin-remember');
const signinError = document.getElementById('signin-error');

function openSignIn() {
  signinError.textContent = '';
  tokenInput.value = '';
  remember.checked = false;
  if (!dlg.open) dlg.showModal();
  tokenInput.focus();
}

document.getElementById('signin-cancel').addEventListener('click', () => dlg.close());
document.getElementById('signin-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const token = tokenInput.value.trim();
  signinError.textContent = '';
  if (!token) {
    signinError.textContent = 'Enter a token.';
    return;
  }
  try {
    const who = await whoami(token);
    setToken(token, remember.checked);
    session.who = who;
    tokenInput.value = '';
    dlg.close();
    renderWho();
    flash('Signed in as ' + who.actor, 'ok');
    restartFeed();
    route();
  } catch (e) {
    signinError.textContent = e instanceof ApiError && e.status === 401 ?
      'The server refused this token (401).' : (e.message || String(e));
  }
});

function restartFeed() {
  if (session.info && session.info.readsNeedToken && !session.who) {
    feed.stop();
  } else {
    feed.restart();
  }
}

function renderBanners() {
  const box = clear(document.getElementById('banners'));
  if (session.info && session.info.readOnly) {
    box.appendChild(h('p', { class: 'banner', testid: 'readonly-banner', role: 'note' },
      'Read-only server (ferry serve --read-only): every action is disabled.'));
  }
}

async function boot() {
  feed.onStatus(showLive);
  window.addEventListener('hashchange', route);
  try {
    await loadInfo();
  } catch (e) {
    flashError(e);
  }
  renderBanners();
  if (session.token) {
    try {
      session.who = await whoami(session.token);
    } catch (e) {
      if (e instanceof ApiError && (e.status === 401 || e.status === 403)) {
        setToken(null, false);
        flash('The saved token was refused; sign in again.', 'error');
      } else {
        flashError(e);
      }
    }
  }
  renderWho();
  restartFeed();
  route();
  if (session.info && session.info.readsNeedToken && !session.who) openSignIn();
}

boot();
