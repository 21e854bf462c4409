import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { errors, launchBrowser, newUserPage, signedInPage } from '../harness/browser.ts';
import { startWithProject, stopDashboard, submitSignIn } from '../harness/dashboard.ts';
import { byMode, type Instance } from '../harness/instance.ts';

/**
 * What the dashboard's API client does for every screen, in a real browser: a session that ends
 * elsewhere sends the user to sign-in and back to where they were; a 429 shows how long to wait;
 * the API's own error message reaches the user.
 */
const RATE = 100;
let instance: Instance;
let browser: Browser;
let page: Page;
let owner: ProjectAccess;

const at = (p: Page, pathname: string) => p.waitForURL((url) => url.pathname === pathname);

const signIn = (p: Page, email: string, password: string) => submitSignIn(p, { email, password });

beforeAll(async () => {
  ({ instance, project: owner } = await startWithProject('Client shop', { env: { API_RATE_PER_MINUTE: String(RATE) } }));
});

afterAll(() => stopDashboard(browser, instance));

describe("the dashboard's API client", { timeout: byMode({ embedded: 60_000, distributed: 180_000 }) }, () => {
  it('Chromium starts', async () => {
    browser = await launchBrowser();
    page = await newUserPage(browser, instance.url);
  });

  it("the API's message is what the user reads when a call fails", async () => {
    await page.goto('/signin');
    await signIn(page, owner.email, 'not the password');
    await page.getByRole('alert').filter({ hasText: 'Invalid email or password' }).waitFor();
  });

  it('a session ended elsewhere sends the user to sign-in, and signing in brings them back to the page', async () => {
    await signIn(page, owner.email, owner.password);
    await at(page, `/p/${owner.projectId}/overview`);
    await page.getByRole('heading', { name: 'Recent events' }).waitFor();
    // The user signs out in another tab: the session ends on the server.
    const cookie = (await page.context().cookies()).find((c) => c.name === 'mailroom_session')!;
    const headers = { cookie: `mailroom_session=${cookie.value}` };
    const { csrfToken } = (await instance.api.get('/auth/session', { headers })).body.data;
    expect((await instance.api.delete('/auth/session', undefined, { headers: { ...headers, 'x-csrf-token': csrfToken } })).status).toBe(204);

    // The next call finds out: the user's click, or the page's own refresh if it comes first.
    await page
      .getByRole('navigation', { name: 'Project screens' })
      .getByRole('link', { name: 'Settings' })
      .click({ timeout: 5_000 })
      .catch(() => undefined);
    await at(page, '/signin');
    const back = new URL(page.url()).searchParams.get('next');
    expect([`/p/${owner.projectId}/settings`, `/p/${owner.projectId}/overview`]).toContain(back);
    await signIn(page, owner.email, owner.password);
    await at(page, back!);
    await page.getByRole('heading', { name: back!.endsWith('/settings') ? 'Members' : 'Recent events' }).waitFor();
  });

  it("a project the user is not in, and a page the app does not have, say so (the shell stays usable)", async () => {
    const stranger = await newProject(instance, 'Not yours');
    // Another browser of the owner's, signed in without the form.
    const other = await signedInPage(browser, instance.url, owner, `/p/${owner.projectId}/settings`);
    await other.getByRole('heading', { name: 'Members' }).waitFor();
    await other.context().close();
    await page.goto(`/p/${stranger.projectId}/settings`);
    await page.getByRole('heading', { name: 'Project not found' }).waitFor();
    await page.goto(`/p/${owner.projectId}/no-such-screen`);
    await page.getByRole('heading', { name: 'Page not found' }).waitFor();
    await page.getByRole('navigation', { name: 'Project screens' }).getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('heading', { name: 'Members' }).waitFor();
  });

  it('past the request budget, the user is told how long to wait', async () => {
    // The user's budget is RATE calls a minute, counted across their tabs: spend what is left, then use the app.
    const cookie = (await page.context().cookies()).find((c) => c.name === 'mailroom_session')!;
    const spend = () => instance.api.get('/projects', { headers: { cookie: `mailroom_session=${cookie.value}` } });
    for (let i = 0; i <= RATE && (await spend()).status !== 429; i++);
    expect((await spend()).status).toBe(429);
    await page.getByRole('navigation', { name: 'Project screens' }).getByRole('link', { name: 'Overview' }).click();
    const notice = page.getByRole('alert').filter({ hasText: 'Too many requests' });
    await notice.waitFor();
    expect(await notice.textContent()).toMatch(/Try again in \d+ s\./);
  });

  it('no page threw', () => {
    expect(errors).toEqual([]);
  });
});
