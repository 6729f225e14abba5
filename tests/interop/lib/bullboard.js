// bullboard.js - bull-board's API (@bull-board/api, pinned in package.json) without a web
// server: createBullBoard() hands its routes to a server adapter (IServerAdapter); this one
// keeps them and calls a route's handler with the request an HTTP adapter would build
// (@bull-board/express passes queues, uiConfig, query and params as Express parses them:
// strings, body as parsed JSON, headers), so a test sees exactly what the UI's fetches get.
'use strict';

class CaptureServerAdapter {
  constructor() {
    this.routes = [];
    this.queues = null;
    this.uiConfig = {};
  }
  setQueues(queues) {
    this.queues = queues;
    return this;
  }
  setViewsPath() {
    return this;
  }
  setStaticPath() {
    return this;
  }
  setEntryRoute() {
    return this;
  }
  setErrorHandler(fn) {
    this.errorHandler = fn;
    return this;
  }
  setApiRoutes(routes) {
    this.routes = routes;
    return this;
  }
  setUIConfig(config) {
    this.uiConfig = config;
    return this;
  }

  // `method` `path` (query string allowed) -> {status, body}; the first route that matches,
  // as Express tries them in order. Thrown errors go through bull-board's error handler.
  async call(method, url, body = {}) {
    const u = new URL(url, 'http://board.invalid');
    const parts = u.pathname.split('/').filter(Boolean);
    for (const r of this.routes) {
      const methods = [].concat(r.method);
      if (!methods.includes(method)) continue;
      for (const pattern of [].concat(r.route)) {
        const pp = pattern.split('/').filter(Boolean);
        if (pp.length !== parts.length) continue;
        const params = {};
        let ok = true;
        for (let i = 0; i < pp.length && ok; i++) {
          if (pp[i].startsWith(':')) params[pp[i].slice(1)] = decodeURIComponent(parts[i]);
          else ok = pp[i] === parts[i];
        }
        if (!ok) continue;
        const request = {
          queues: this.queues,
          uiConfig: this.uiConfig,
          query: Object.fromEntries(u.searchParams),
          params,
          body,
          headers: {},
        };
        try {
          const res = await r.handler(request);
          return { status: res.status || 200, body: res.body };
        } catch (e) {
          const res = this.errorHandler(e);
          return { status: res.status || 500, body: res.body };
        }
      }
    }
    throw new Error(`no bull-board route for ${method} ${url}`);
  }
}

// A board over BullMQ Queues (BullMQAdapter each); returns the adapter to call.
function board(queues) {
  const { createBullBoard } = require('@bull-board/api');
  const { BullMQAdapter } = require('@bull-board/api/bullMQAdapter');
  const serverAdapter = new CaptureServerAdapter();
  createBullBoard({ queues: queues.map((q) => new BullMQAdapter(q)), serverAdapter });
  return serverAdapter;
}

module.exports = { CaptureServerAdapter, board };
