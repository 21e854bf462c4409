import { existsSync } from 'node:fs';
import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { byMode } from './instance.ts';

/**
 * A real browser for the dashboard tests: Debian's Chromium (scripts/runtime/ensure.sh installs
 * it; Playwright's own download cannot work here), headless. One browser per test file; each
 * user is a context of its own (own cookies). A missing Chromium fails the file, never skips it.
 */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`Chromium is not installed at ${CHROMIUM_PATH}: run scripts/runtime/ensure.sh (apt-get install chromium) or set CHROMIUM_PATH`);
  }
  // Chromium's sandbox refuses to start as root (CI containers run as root).
  const args = process.getuid?.() === 0 ? ['--no-sandbox'] : [];
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args });
}

/** A signed-out user at a fixed window size (screenshots compare run to run). */
export async function newUserPage(browser: Browser, baseURL: string): Promise<Page> {
  const context = await browser.newContext({ baseURL, viewport: { width: 1280, height: 800 } });
  // How long a wait for an element or a navigation may take: a distributed hop is slower.
  context.setDefaultTimeout(byMode({ embedded: 15_000, distributed: 60_000 }));
  const page = await context.newPage();
  // A failed script or an uncaught error is a test failure, not a silent blank page.
  page.on('pageerror', (error) => errors.push(`${page.url()}: ${error.message}`));
  return page;
}

/** Uncaught page errors of every page opened with newUserPage; a test asserts it stays empty. */
export const errors: string[] = [];

const SCREENSHOTS = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
let scratch: string | undefined;

/**
 * A full-page screenshot of `screen`: into docs/screenshots/<screen>.png (shown in the README)
 * with UPDATE_SCREENSHOTS=1, else into a temporary directory, so an ordinary test run leaves the
 * tree as it was. Returns the file written.
 */
export async function screenshot(page: Page, screen: string): Promise<string> {
  const dir = process.env.UPDATE_SCREENSHOTS === '1' ? SCREENSHOTS : (scratch ??= await mkdtemp(join(tmpdir(), 'mailroom-screens-')));
  await mkdir(dir, { recursive: true });
  const path = join(dir, `${screen}.png`);
  await page.screenshot({ path, fullPage: true, animations: 'disabled' });
  return path;
}

/**
 * Form controls on the page that have no accessible name (no <label>, aria-label or
 * aria-labelledby), described by tag and name: every screen's test expects none (WCAG 1.3.1, 4.1.2).
 */
export function unlabelledControls(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(`[...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
    .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label') && !el.getAttribute('aria-labelledby'))
    .map((el) => el.tagName.toLowerCase() + (el.name ? '[name=' + el.name + ']' : ''))`);
}

/**
 * A page already signed in as `user` (through POST /auth/session, its cookie put in a fresh
 * context), opened at `path`: the start of a screen's test, without going through the sign-in form.
 */
export async function signedInPage(browser: Browser, baseURL: string, user: { email: string; password: string }, path = '/'): Promise<Page> {
  const res = await fetch(`${baseURL}/auth/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: user.email, password: user.password }),
  });
  if (res.status !== 200) throw new Error(`sign-in of ${user.email} failed: ${res.status} ${await res.text()}`);
  const pair = res.headers.getSetCookie().map((c) => c.split(';')[0]).find((c) => c.startsWith('mailroom_session='));
  if (!pair) throw new Error('POST /auth/session set no session cookie');
  const page = await newUserPage(browser, baseURL);
  await page.context().addCookies([{ name: 'mailroom_session', value: pair.slice('mailroom_session='.length), url: baseURL, httpOnly: true, sameSite: 'Lax' }]);
  await page.goto(path);
  return page;
}
