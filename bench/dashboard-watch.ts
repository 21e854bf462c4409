/**
 * Timing a dashboard screen in the browser (bench/dashboard-screens.ts): the page measures itself,
 * on its own clock, from the click (the click event's timestamp) or from the navigation's start
 * to the first animation frame after the screen's readiness condition holds, so the latency of
 * the DevTools protocol between the benchmark and Chromium never enters a figure. The requests
 * the page made meanwhile are logged from the benchmark's side (Playwright's resource timing).
 */
import type { BrowserContext, Page, Request } from 'playwright-core';

/**
 * One part of a screen's readiness: at least `count` (default 1) elements match `css`, whose text
 * matches `text` (a regular expression's source) when given, and which are laid out (a box, not
 * `visibility: hidden`) when `visible`. A screen is ready when every part holds.
 */
export interface Part {
  css: string;
  text?: string;
  count?: number;
  visible?: boolean;
}

// The page's own globals, for the code below that runs in Chromium (the project's types have no DOM).
interface Element {
  textContent: string | null;
  getBoundingClientRect(): { width: number; height: number };
}
declare const window: { addEventListener(type: 'click', listener: (event: { timeStamp: number }) => void, options: object): void };
declare const document: { querySelectorAll(css: string): Iterable<Element> & ArrayLike<Element> };
declare const MutationObserver: new (callback: () => void) => { observe(target: unknown, options: object): void; disconnect(): void };
declare const requestAnimationFrame: (callback: () => void) => void;
declare const getComputedStyle: (el: Element) => { visibility: string };

interface Watch {
  startAt: number;
  readyAt: number;
  paintedAt: number;
}

/**
 * In the page: watches the DOM until every part holds, then stamps that moment and the next
 * animation frame (the frame that paints it). `from: 'click'` starts at the next click (capture
 * phase, so before the app's handler), `from: 'load'` at the navigation's start (0). No eval:
 * the dashboard's Content-Security-Policy allows none.
 */
function watchInPage({ parts, from }: { parts: Part[]; from: 'click' | 'load' }): void {
  const state: Watch = { startAt: from === 'load' ? 0 : -1, readyAt: -1, paintedAt: -1 };
  (window as unknown as { __benchWatch: Watch }).__benchWatch = state;
  const shown = (el: Element) => {
    const box = el.getBoundingClientRect();
    return box.width > 0 && box.height > 0 && getComputedStyle(el).visibility !== 'hidden';
  };
  const holds = (part: Part) => {
    let n = 0;
    for (const el of document.querySelectorAll(part.css)) {
      if (part.text !== undefined && !new RegExp(part.text).test(el.textContent ?? '')) continue;
      if (part.visible && !shown(el)) continue;
      if (++n >= (part.count ?? 1)) return true;
    }
    return false;
  };
  const observer = new MutationObserver(() => check());
  const check = () => {
    if (state.startAt < 0 || state.readyAt >= 0 || !parts.every(holds)) return;
    state.readyAt = performance.now();
    observer.disconnect();
    requestAnimationFrame(() => (state.paintedAt = performance.now()));
  };
  const start = () => {
    observer.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
    check();
  };
  if (from === 'load') start();
  else
    window.addEventListener(
      'click',
      (event) => {
        state.startAt = event.timeStamp;
        start();
      },
      { capture: true, once: true },
    );
}

/**
 * `watchInPage` called with `arg`, as script text: tsx compiles named functions with esbuild's
 * keepNames, whose `__name` helper the page does not have, so the text brings its own.
 */
const script = (arg: Parameters<typeof watchInPage>[0]) => `(() => { const __name = (f) => f; (${watchInPage.toString()})(${JSON.stringify(arg)}); })()`;

/** Arms the watch in the current document: the next click starts it. */
export async function armClick(page: Page, parts: Part[]): Promise<void> {
  await page.evaluate(script({ parts, from: 'click' }));
}

/** Arms the watch in every document the context loads from now on, from its navigation's start. */
export async function armLoad(context: BrowserContext, parts: Part[]): Promise<void> {
  await context.addInitScript(script({ parts, from: 'load' }));
}

export interface Timing {
  /** Start (the click, or 0 for a load) → the first frame after ready, ms. */
  ms: number;
  /** The start as an epoch instant (ms), to match the requests' timing against. */
  startEpochMs: number;
  readyEpochMs: number;
}

/** Waits for the armed watch to see its screen ready; on a timeout, says which parts never held. */
export async function readiness(page: Page, parts: Part[], timeoutMs: number): Promise<Timing> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await page.evaluate(() => ({ watch: (window as unknown as { __benchWatch?: Watch }).__benchWatch, origin: performance.timeOrigin }));
    if (got.watch && got.watch.paintedAt >= 0) {
      return { ms: got.watch.paintedAt - got.watch.startAt, startEpochMs: got.origin + got.watch.startAt, readyEpochMs: got.origin + got.watch.paintedAt };
    }
    if (Date.now() > deadline) {
      const missing: string[] = [];
      for (const part of parts) {
        const held = await page.evaluate((p) => [...document.querySelectorAll(p.css)].filter((el) => p.text === undefined || new RegExp(p.text).test(el.textContent ?? '')).length, part);
        if (held < (part.count ?? 1)) missing.push(`${part.css}${part.text ? ` /${part.text}/` : ''}: ${held} of ${part.count ?? 1}`);
      }
      throw new Error(`not ready within ${timeoutMs / 1000} s at ${page.url()} (${got.watch?.startAt === -1 ? 'no click seen' : 'clicked'}); missing: ${missing.join('; ') || '(a frame after ready)'}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export interface Fetched {
  /** Path and query, e.g. `/contacts?limit=25`. */
  path: string;
  method: string;
  startEpochMs: number;
  /** Request start → last byte of the response, as Chromium timed it. */
  ms: number;
  failed: boolean;
}

/** Every request of a page, as it finishes; and how many are still under way. */
export class RequestLog {
  readonly done: Fetched[] = [];
  #inFlight = 0;

  constructor(page: Page) {
    page.on('request', () => this.#inFlight++);
    const finish = (failed: boolean) => (request: Request) => {
      this.#inFlight--;
      const timing = request.timing();
      const url = new URL(request.url());
      this.done.push({ path: url.pathname + url.search, method: request.method(), startEpochMs: timing.startTime, ms: Math.max(0, timing.responseEnd), failed });
    };
    page.on('requestfinished', finish(false));
    page.on('requestfailed', finish(true));
  }

  /** Resolves once no request has been under way for `quietMs` (or after `maxMs`). */
  async settle(quietMs: number, maxMs: number): Promise<void> {
    const deadline = Date.now() + maxMs;
    let quietSince = Date.now();
    while (Date.now() < deadline) {
      if (this.#inFlight > 0) quietSince = Date.now();
      else if (Date.now() - quietSince >= quietMs) return;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** The requests that started in [from, to] (epoch ms). */
  between(fromEpochMs: number, toEpochMs: number): Fetched[] {
    return this.done.filter((r) => r.startEpochMs >= fromEpochMs - 1 && r.startEpochMs <= toEpochMs);
  }
}

/** Whether a request is one of the API's (not the app's own files). */
export const isApiCall = (r: Fetched) => !r.path.startsWith('/assets/') && !r.path.startsWith('/p/') && r.path !== '/signin' && r.path !== '/favicon.svg';
