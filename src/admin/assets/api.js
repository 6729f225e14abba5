// api.js - talking to ferry serve: the token, fetch with errors as text, /api/info and
// /api/whoami, and the live feed (/api/stream read with a ReadableStream, falling back to
// polling /api/overview).
//
// The token lives in memory, or in sessionStorage when the user ticks "remember"; never in
// localStorage, the URL or a cookie.

const TOKEN_KEY = 'ferry.token';

export const session = {
  token: null,
  info: null, // /api/info
  who: null, // /api/whoami: {actor, scopes}
};

try {
  const t = window.sessionStorage.getItem(TOKEN_KEY);
  if (t) session.token = t;
} catch (e) {
  // storage refused: memory only
}

export function setToken(token, remember) {
  session.token = token;
  try {
    if (token && remember) window.sessionStorage.setItem(TOKEN_KEY, token);
    else window.sessionStorage.removeItem(TOKEN_KEY);
  } catch (e) {
    // storage refused: memory only
  }
}

export function signOut() {
  setToken(null, false);
  session.who = null;
}

export class ApiError extends Error {
  constructor(status, message, body) {
    super(message);
    this.status = status;
    this.body = body;
  }
}

function headers(extra, token) {
  const hd = Object.assign({ Accept: 'application/json' }, extra || {});
  const t = token === undefined ? session.token : token;
  if (t) hd.Authorization = 'Bearer ' + t;
  return hd;
}

// api(method, path, body?, {token}?) -> the parsed JSON answer. Throws ApiError with the
// server's {"error"} text (or the status) on any non-2xx answer, and on network failure
// (status 0).
export async function api(method, path, body, opts) {
  const init = { method, headers: headers(body !== undefined ? {
    'Content-Type': 'application/json' } : null, opts && opts.token), cache: 'no-store' };
  if (body !== undefined) init.body = JSON.stringify(body);
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, 'cannot reach the server (' + (e && e.message ? e.message : e) +
      ')', null);
  }
  let data = null;
  const text = await res.text();
  if (text) {
    try {
      data = JSON.parse(text);
    } catch (e) {
      data = null;
    }
  }
  if (!res.ok) {
    let msg = data && typeof data.error === 'string' ? data.error : null;
    if (!msg) msg = res.status + ' ' + (res.statusText || 'error');
    throw new ApiError(res.status, method + ' ' + path + ': ' + msg, data);
  }
  return data;
}

export const get = (path) => api('GET', path);
export const post = (path, body) => api('POST', path, body === undefined ? {} : body);
export const del = (path) => api('DELETE', path);

export function q(name) {
  return encodeURIComponent(name);
}

export function qs(params) {
  const parts = [];
  for (const [k, v] of Object.entries(params)) {
    if (v === null || v === undefined || v === '') continue;
    parts.push(encodeURIComponent(k) + '=' + encodeURIComponent(String(v)));
  }
  return parts.length ? '?' + parts.join('&') : '';
}

export async function loadInfo() {
  session.info = await get('/api/info');
  return session.info;
}

// Check a token with /api/whoami. Returns {actor, scopes}; throws ApiError (401 when refused).
export async function whoami(token) {
  return api('GET', '/api/whoami', undefined, { token });
}

// can(scope) -> null when allowed, else the reason (used as the disabled button's title).
export function can(scope) {
  if (session.info && session.info.readOnly) {
    return 'the server is read-only (ferry serve --read-only)';
  }
  if (!session.who) return 'sign in with a token holding the ' + scope + ' scope';
  if (!session.who.scopes || !session.who.scopes.includes(scope)) {
    return 'your token (' + session.who.actor + ') lacks the ' + scope + ' scope';
  }
  return null;
}

// ---- Server-sent events over fetch ----

// Parse SSE text incrementally: feed(chunk) calls onFrame({event, data}) for every frame a
// blank line ends, onRetry(ms) for "retry:", and ignores comments.
export function sseParser(onFrame, onRetry) {
  let buf = '';
  let event = '';
  let data = [];
  function line(l) {
    if (l === '') {
      if (data.length) onFrame({ event: event || 'message', data: data.join('\n') });
      event = '';
      data = [];
      return;
    }
    if (l.startsWith(':')) return;
    const i = l.indexOf(':');
    const field = i < 0 ? l : l.slice(0, i);
    let value = i < 0 ? '' : l.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
    else if (field === 'retry' && /^\d+$/.test(value)) onRetry(Number(value));
  }
  return function feed(chunk) {
    buf += chunk;
    for (;;) {
      const m = /\r\n|\r|\n/.exec(buf);
      if (!m) break;
      // a lone \r at the end may be the first half of \r\n: wait for more
      if (m[0] === '\r' && m.index === buf.length - 1) break;
      line(buf.slice(0, m.index));
      buf = buf.slice(m.index + m[0].length);
    }
  };
}

const POLL_MS = 5000;
const STREAM_RETRY_MS = 30000;
const SILENCE_MS = 15000;

// The live feed: one overview at a time to every subscriber; status "live" (stream),
// "polling" (stream failed or refused, /api/overview every 5 s) or "offline".
export class LiveFeed {
  constructor() {
    this.subs = new Set();
    this.statusSubs = new Set();
    this.last = null;
    this.status = 'offline';
    this.running = false;
    this.retryMs = 3000;
    this.abort = null;
    this.pollTimer = null;
    this.streamTimer = null;
  }

  subscribe(fn) {
    this.subs.add(fn);
    if (this.last) fn(this.last);
    return () => this.subs.delete(fn);
  }

  onStatus(fn) {
    this.statusSubs.add(fn);
    fn(this.status);
  }

  setStatus(s) {
    if (this.status === s) return;
    this.status = s;
    for (const fn of this.statusSubs) fn(s);
  }

  publish(ov) {
    this.last = ov;
    for (const fn of this.subs) {
      try {
        fn(ov);
      } catch (e) {
        console.error(e);
      }
    }
  }

  start() {
    if (this.running) return;
    this.running = true;
    this.openStream();
  }

  stop() {
    this.running = false;
    if (this.abort) this.abort.abort();
    clearTimeout(this.pollTimer);
    clearTimeout(this.streamTimer);
    this.pollTimer = null;
    this.setStatus('offline');
  }

  restart() {
    this.stop();
    this.start();
  }

  async openStream() {
    if (!this.running) return;
    clearTimeout(this.streamTimer);
    const ctl = new AbortController();
    this.abort = ctl;
    let silence = null;
    const arm = () => {
      clearTimeout(silence);
      silence = setTimeout(() => ctl.abort(), SILENCE_MS);
    };
    let gotFrame = false;
    try {
      const res = await fetch('/api/stream', { headers: headers({ Accept:
        'text/event-stream' }), cache: 'no-store', signal: ctl.signal });
      if (!res.ok || !res.body) throw new Error('stream refused: ' + res.status);
      const reader = res.body.getReader();
      const dec = new TextDecoder();
      const feed = sseParser((f) => {
        if (f.event !== 'overview') return;
        let ov;
        try {
          ov = JSON.parse(f.data);
        } catch (e) {
          return;
        }
        gotFrame = true;
        this.stopPolling();
        this.setStatus('live');
        this.publish(ov);
      }, (ms) => {
        this.retryMs = ms;
      });
      arm();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        arm();
        feed(dec.decode(value, { stream: true }));
      }
      clearTimeout(silence);
      // A normal end (streamSeconds): reconnect after the server's retry.
      if (this.running && gotFrame) {
        this.streamTimer = setTimeout(() => this.openStream(), this.retryMs);
        return;
      }
      throw new Error('stream ended');
    } catch (e) {
      clearTimeout(silence);
      if (!this.running || this.abort !== ctl) return;
      this.startPolling();
      this.streamTimer = setTimeout(() => this.openStream(), STREAM_RETRY_MS);
    }
  }

  startPolling() {
    if (this.pollTimer !== null) return;
    const tick = async () => {
      if (!this.running) return;
      try {
        const ov = await get('/api/overview');
        if (this.pollTimer === null) return; // the stream took over
        this.setStatus('polling');
        this.publish(ov);
      } catch (e) {
        if (this.pollTimer !== null) this.setStatus('offline');
      }
      if (this.pollTimer !== null) this.pollTimer = setTimeout(tick, POLL_MS);
    };
    this.pollTimer = setTimeout(tick, 0);
  }

  stopPolling() {
    clearTimeout(this.pollTimer);
    this.pollTimer = null;
  }

  // A fresh overview now (after an action), through the poll endpoint.
  async refresh() {
    try {
      this.publish(await get('/api/overview'));
    } catch (e) {
      // the feed will say
    }
  }
}

export const feed = new LiveFeed();
