// ui.js - what every page shares: the flash line, the confirmation dialog, action buttons
// that know the scope they need, and navigation.

import { h } from './dom.js';
import { can } from './api.js';

// flash(text, kind): the last action's result ("ok") or error ("error") in the status line.
export function flash(text, kind) {
  const el = document.querySelector('[data-testid="flash"]');
  if (!el) return;
  el.textContent = String(text);
  el.setAttribute('data-kind', kind === 'error' ? 'error' : 'ok');
  el.hidden = false;
}

export function flashError(e) {
  flash(e && e.message ? e.message : String(e), 'error');
}

// confirmDialog(text, okLabel) -> Promise<boolean>: true only when the user pressed OK.
export function confirmDialog(text, okLabel) {
  const dlg = document.querySelector('[data-testid="confirm-dialog"]');
  const ok = dlg.querySelector('[data-testid="confirm-ok"]');
  const cancel = dlg.querySelector('[data-testid="confirm-cancel"]');
  dlg.querySelector('[data-testid="confirm-text"]').textContent = text;
  ok.textContent = okLabel || 'Confirm';
  return new Promise((resolve) => {
    let done = false;
    const finish = (v) => {
      if (done) return;
      done = true;
      ok.removeEventListener('click', onOk);
      cancel.removeEventListener('click', onCancel);
      dlg.removeEventListener('close', onClose);
      if (dlg.open) dlg.close();
      resolve(v);
    };
    const onOk = () => finish(true);
    const onCancel = () => finish(false);
    const onClose = () => finish(false);
    ok.addEventListener('click', onOk);
    cancel.addEventListener('click', onCancel);
    dlg.addEventListener('close', onClose);
    dlg.showModal();
    cancel.focus();
  });
}

// A button for an action needing `scope`; disabled, with a title saying why, when the
// user may not run it. onClick gets the button; errors it throws go to the flash line.
export function actionButton(testid, label, scope, onClick, extra) {
  const why = can(scope);
  const b = h('button', Object.assign({ type: 'button', testid, class: 'action',
    disabled: !!why, title: why || undefined }, extra || {}), label);
  b.addEventListener('click', async () => {
    if (b.disabled) return;
    b.disabled = true;
    b.setAttribute('aria-busy', 'true');
    try {
      await onClick(b);
    } catch (e) {
      flashError(e);
    } finally {
      b.removeAttribute('aria-busy');
      b.disabled = !!can(scope);
    }
  });
  return b;
}

export function go(hash) {
  if (window.location.hash === hash) window.dispatchEvent(new HashChangeEvent('hashchange'));
  else window.location.hash = hash;
}

export function queueHref(name, query) {
  return '#/queues/' + encodeURIComponent(name) + (query || '');
}

export function jobHref(queue, id) {
  return '#/queues/' + encodeURIComponent(queue) + '/jobs/' + encodeURIComponent(id);
}

export function traceHref(id) {
  return '#/trace/' + encodeURIComponent(id);
}

export function field(label, input) {
  return h('label', { class: 'field' }, h('span', null, label), input);
}

export function loading() {
  return h('p', { class: 'muted', testid: 'loading' }, 'Loading…');
}
