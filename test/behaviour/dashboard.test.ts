import { stat } from 'node:fs/promises';
import type { Browser, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifiedUser, type ProjectAccess } from '../harness/accounts.ts';
import { eventually } from '../harness/client.ts';
import { verifiedDomain } from '../harness/domains.ts';
import { errors, launchBrowser, newUserPage, screenshot, unlabelledControls } from '../harness/browser.ts';
import { stopDashboard, submitSignIn } from '../harness/dashboard.ts';
import { byMode, startInstance, type Instance } from '../harness/instance.ts';

/**
 * The dashboard in a real browser, as a new user meets it: sign up, verify through the link of
 * the email at the SMTP sink, sign in, create a project, rotate its keys (shown once), add a
 * member who sees no admin action, sign out. The keys the screens show are checked against the API.
 */
let instance: Instance;
let browser: Browser;
let owner: Page;
const email = `dash-${Date.now()}@example.com`;
const password = 'a long dashboard password';
let projectId = '';
let shownSecretKey = '';
let rotatedSecretKey = '';

/** The element that has focus: after a route change, the new page's heading. */
const focused = (page: Page) => page.evaluate<string>('`${document.activeElement?.tagName} ${document.activeElement?.textContent}`');

/** Waits for the page to be at `pathname` (any query). */
const at = (page: Page, pathname: string | RegExp) =>
  page.waitForURL((url) => (typeof pathname === 'string' ? url.pathname === pathname : pathname.test(url.pathname)));

const signInAs = (page: Page, who: string, secret: string) => submitSignIn(page, { email: who, password: secret });

beforeAll(async () => {
  instance = await startInstance();
});

afterAll(() => stopDashboard(browser, instance));

describe('the dashboard, signup to sign-out', { timeout: byMode({ embedded: 60_000, distributed: 180_000 }) }, () => {
  // In a test, not in beforeAll: without Chromium the tests fail, they are not reported as skipped.
  it('Chromium starts', async () => {
    browser = await launchBrowser();
    owner = await newUserPage(browser, instance.url);
  });

  it('a visitor is sent to sign-in; signup signs them in and asks them to verify their address', async () => {
    await owner.goto('/');
    await at(owner, '/signin');
    expect(new URL(owner.url()).searchParams.get('next')).toBe('/');
    await expect.poll(() => focused(owner)).toBe('H1 Sign in');
    await screenshot(owner, 'sign-in');
    expect(await unlabelledControls(owner)).toEqual([]);

    await owner.getByRole('link', { name: 'Create one' }).click();
    await owner.getByRole('heading', { name: 'Create your account' }).waitFor();
    // The form checks with the API's own schema before sending anything.
    await owner.getByLabel('Email').fill(email);
    await owner.getByLabel('Password').fill('short');
    await owner.getByRole('button', { name: 'Create account' }).click();
    await owner.getByText('Too small: expected string to have >=8 characters').waitFor();
    await owner.getByLabel('Password').fill(password);
    await screenshot(owner, 'sign-up');
    expect(await unlabelledControls(owner)).toEqual([]);
    await owner.getByRole('button', { name: 'Create account' }).click();

    await at(owner, '/new-project');
    await owner.getByText(`Verify your email address: open the link we sent to ${email}`).waitFor();
  });

  it('the link of the verification email opens a page of the app that verifies the address', async () => {
    const mail = await instance.smtp.waitFor((m) => m.rcptTo.includes(email) && /verify/i.test(m.parsed.subject ?? ''));
    const link = /https?:\/\/\S+\/auth\/verify\?token=[\w-]+/.exec(mail.parsed.text ?? '')?.[0];
    expect(link, mail.parsed.text).toBeTruthy();
    await owner.goto(link!);
    await owner.getByRole('heading', { name: 'Email address verified' }).waitFor();
    await owner.getByText(`${email} is verified.`).waitFor();
    // The token leaves the address bar (and the history) once used.
    expect(new URL(owner.url()).search).toBe('');
    await screenshot(owner, 'verify');
    const me = await instance.api.post('/auth/login', { email, password });
    expect(me.body.data.user.emailVerified).toBe(true);
  });

  it('sign-out ends the session; sign-in brings the user back, to create their first project', async () => {
    await owner.getByRole('link', { name: 'Continue to your projects' }).click();
    await at(owner, '/new-project');
    await owner.getByRole('heading', { name: 'New project' }).waitFor();
    // The address is verified: the banner asking for it is gone.
    expect(await owner.getByText('Verify your email address').count()).toBe(0);
    await owner.getByRole('button', { name: 'Sign out' }).click();
    await at(owner, '/signin');

    await signInAs(owner, email, 'a wrong password');
    await owner.getByRole('alert').filter({ hasText: 'Invalid email or password' }).waitFor();
    // From the keyboard alone: Tab from the heading to each field, Enter submits.
    await owner.getByRole('heading', { name: 'Sign in' }).focus();
    await owner.keyboard.press('Tab');
    await owner.keyboard.press('ControlOrMeta+A');
    await owner.keyboard.type(email);
    await owner.keyboard.press('Tab');
    await owner.keyboard.type(password);
    await owner.keyboard.press('Enter');
    await at(owner, '/new-project');
    await expect.poll(() => focused(owner)).toBe('H1 New project');
  });

  it('a new project shows its keys once, and they are the keys of that project', async () => {
    await owner.getByLabel('Project name').fill('Browser shop');
    await screenshot(owner, 'new-project');
    expect(await unlabelledControls(owner)).toEqual([]);
    await owner.getByRole('button', { name: 'Create project' }).click();
    await owner.getByRole('heading', { name: 'Browser shop is ready' }).waitFor();
    shownSecretKey = await owner.getByLabel('Secret key').inputValue();
    expect(shownSecretKey).toMatch(/^sk_/);
    expect((await instance.api.get('/contacts', { auth: shownSecretKey })).status).toBe(200);

    await owner.getByRole('link', { name: 'Continue to the project' }).click();
    await at(owner, /^\/p\/[^/]+\/overview$/);
    projectId = new URL(owner.url()).pathname.split('/')[2];
    await expect.poll(() => focused(owner)).toBe('H1 Overview');
  });

  it('the shell links every screen of the issue; one not built yet says so', async () => {
    const nav = owner.getByRole('navigation', { name: 'Project screens' });
    const names = await nav.getByRole('link').allTextContents();
    expect(names).toEqual(['Overview', 'Contacts', 'Segments', 'Templates', 'Campaigns', 'Workflows', 'Events', 'Domains', 'Settings']);
    await nav.getByRole('link', { name: 'Workflows' }).click();
    await owner.getByRole('heading', { name: 'Workflows' }).waitFor();
    await expect.poll(() => focused(owner)).toBe('H1 Workflows');
  });

  it('settings: rotating the keys shows the new ones once, and the old ones stop working', async () => {
    await owner.getByRole('navigation', { name: 'Project screens' }).getByRole('link', { name: 'Settings' }).click();
    await owner.getByRole('heading', { name: 'Settings' }).waitFor();
    await owner.getByRole('button', { name: 'Rotate keys' }).click();
    await owner.getByRole('button', { name: 'Rotate now' }).click();
    const rotated = await owner.getByLabel('Secret key').inputValue();
    expect(rotated).toMatch(/^sk_/);
    expect(rotated).not.toBe(shownSecretKey);
    expect((await instance.api.get('/contacts', { auth: shownSecretKey })).status).toBe(401);
    expect((await instance.api.get('/contacts', { auth: rotated })).status).toBe(200);
    rotatedSecretKey = rotated;
    await screenshot(owner, 'settings');
    expect(await unlabelledControls(owner)).toEqual([]);

    // Shown once: away and back, the keys are gone from the page.
    await owner.getByRole('link', { name: 'Overview' }).click();
    await owner.getByRole('link', { name: 'Settings' }).click();
    await owner.getByRole('heading', { name: 'API keys' }).waitFor();
    expect(await owner.getByLabel('Secret key').count()).toBe(0);
  });

  it('settings: renaming the project is saved through the API', async () => {
    await owner.getByLabel('Project name').fill('Browser shop EU');
    await owner.getByRole('button', { name: 'Save', exact: true }).click();
    await owner.getByText('Saved.').waitFor();
    const project = await instance.api.get(`/projects/${projectId}`, { auth: (await instance.api.post('/auth/login', { email, password })).body.data.token });
    expect(project.body.data.name).toBe('Browser shop EU');
  });

  it("the overview shows the project's contacts and recent events as the API has them", async () => {
    for (const email of ['ann@example.com', 'bob@example.com']) {
      const tracked = await instance.api.post('/v1/track', { email, event: 'signed-up' }, { auth: rotatedSecretKey });
      expect(tracked.status, JSON.stringify(tracked.body)).toBe(200);
    }
    // One email sent and delivered (to the SMTP sink) from a verified domain, for the totals and the chart.
    const token = (await instance.api.post('/auth/login', { email, password })).body.data.token;
    const domain = await verifiedDomain(instance, { token, projectId } as ProjectAccess);
    const sent = await instance.api.post(
      '/v1/send',
      { to: 'ann@example.com', from: `news@${domain.domain}`, subject: 'Hello', body: '<p>Hello</p>' },
      { auth: rotatedSecretKey },
    );
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    await instance.smtp.waitForMailTo('ann@example.com');
    const stats = await eventually(async () => {
      const res = await instance.api.get('/events/stats', { auth: rotatedSecretKey });
      const names = res.body.data.events.map((e: { name: string }) => e.name);
      return names.includes('email.sent') && names.includes('email.delivery') ? res.body.data : undefined;
    }, byMode({ embedded: 20_000, distributed: 90_000 }), 'email.sent and email.delivery');
    const countOf = (name: string) => String(stats.events.find((e: { name: string }) => e.name === name).count);
    const events = await instance.api.get('/events?limit=10', { auth: rotatedSecretKey });
    await owner.getByRole('link', { name: 'Overview' }).click();
    await owner.getByRole('heading', { name: 'Recent events' }).waitFor();
    const contacts = owner.locator('.stat', { hasText: 'Contacts' }).locator('dd');
    await expect.poll(() => contacts.textContent()).toBe('2');
    const rows = owner.getByRole('region', { name: 'Recent events' }).getByRole('row');
    await expect.poll(() => rows.count()).toBe(events.body.data.length + 1);
    expect(await rows.nth(1).getByRole('cell').first().textContent()).toBe(events.body.data[0].name);
    const statsCalls: string[] = [];
    const countStats = (request: Request) => {
      if (new URL(request.url()).pathname === '/events/stats') statsCalls.push(request.url());
    };
    owner.on('request', countStats);
    await owner.getByRole('combobox', { name: 'Range' }).selectOption({ label: 'Last 7 days' });
    await owner.getByRole('heading', { name: 'Email, last 7 days' }).waitFor();
    const stat = (label: string) => owner.locator('.stat', { has: owner.getByText(label, { exact: true }) }).locator('dd').first();
    await expect.poll(() => stat('Sent').textContent()).toBe(countOf('email.sent'));
    await expect.poll(() => stat('Delivered').textContent()).toBe(countOf('email.delivery'));
    await owner.getByRole('img', { name: 'Email events per day, last 7 days' }).locator('svg').first().waitFor();
    owner.off('request', countStats);
    expect(statsCalls, 'the totals and the chart of a range come from one call').toHaveLength(1);
    await screenshot(owner, 'overview');
    expect(await unlabelledControls(owner)).toEqual([]);
    await owner.getByRole('navigation', { name: 'Project screens' }).getByRole('link', { name: 'Settings' }).click();
    await owner.getByRole('heading', { name: 'Members' }).waitFor();
  });

  it('a screen opened for the first time keeps the one before on view while its code loads', async () => {
    // The Domains screen's code is held on its way, as a slow network would.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let asked = false;
    const chunk = /\/assets\/Domains-[\w-]+\.js$/;
    await owner.route(chunk, async (route) => {
      asked = true;
      await held;
      await route.continue();
    });
    await owner.getByRole('navigation', { name: 'Project screens' }).getByRole('link', { name: 'Domains' }).click();
    await expect.poll(() => asked).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 200));
    // Settings stays, not a page with nothing but "Loading…" (whose end React holds back for 300 ms).
    expect(await owner.getByRole('heading', { name: 'Settings', level: 1 }).count(), 'Settings still on view').toBe(1);
    expect(await owner.getByRole('status').filter({ hasText: /^Loading…$/ }).count()).toBe(0);
    release();
    await owner.getByRole('heading', { name: 'Domains', level: 1 }).waitFor();
    await owner.unroute(chunk);
    await owner.getByRole('navigation', { name: 'Project screens' }).getByRole('link', { name: 'Settings' }).click();
    await owner.getByRole('heading', { name: 'Members' }).waitFor();
  });

  it('signing in fetches the code of the pages it leads to while the password is checked', async () => {
    const page = await newUserPage(browser, instance.url);
    await page.goto('/signin');
    const fetched = new Set<string>();
    page.on('request', (request) => {
      const chunk = /\/assets\/(Home|ProjectShell|Overview)-[\w-]+\.js$/.exec(request.url());
      if (chunk) fetched.add(chunk[1]);
    });
    // The password check is held until the three are asked for (or 5 s went by).
    let whileChecking: string[] = [];
    await page.route('**/auth/session', async (route) => {
      if (route.request().method() !== 'POST') return route.continue();
      for (const until = Date.now() + 5_000; fetched.size < 3 && Date.now() < until; ) await new Promise((resolve) => setTimeout(resolve, 20));
      whileChecking = [...fetched].sort();
      await route.continue();
    });
    await signInAs(page, email, password);
    await page.getByRole('heading', { name: 'Overview', level: 1 }).waitFor();
    expect(whileChecking, 'the code asked for before the session was answered').toEqual(['Home', 'Overview', 'ProjectShell']);
    await page.context().close();
  });

  it('a MEMBER sees the settings but none of the admin actions', async () => {
    const member = await verifiedUser(instance);
    await owner.getByLabel('Email of a signed-up user').fill(member.email);
    await owner.getByLabel('Role', { exact: true }).selectOption('MEMBER');
    await owner.getByRole('button', { name: 'Save member' }).click();
    await owner.getByRole('cell', { name: member.email }).waitFor();

    const page = await newUserPage(browser, instance.url);
    await page.goto(`/p/${projectId}/settings`);
    await at(page, '/signin');
    await signInAs(page, member.email, member.password);
    await at(page, `/p/${projectId}/settings`);
    await page.getByRole('heading', { name: 'Members' }).waitFor();
    await page.getByText('You are a member of this project').waitFor();
    await page.getByRole('cell', { name: email }).waitFor();
    expect(await page.getByRole('button', { name: 'Rotate keys' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Save member' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Save', exact: true }).count()).toBe(0);
    expect(await page.getByLabel('Project name').isDisabled()).toBe(true);
    await screenshot(page, 'settings-member');
    await page.context().close();
  });

  it('sign-out from a project screen; its address then asks to sign in again', async () => {
    await owner.getByRole('button', { name: 'Sign out' }).click();
    await at(owner, '/signin');
    await owner.goto(`/p/${projectId}/settings`);
    await at(owner, '/signin');
    await owner.getByRole('heading', { name: 'Sign in' }).waitFor();
  });

  it('no page threw, and the screenshots were written', async () => {
    expect(errors).toEqual([]);
    expect((await stat(await screenshot(owner, 'sign-in'))).size).toBeGreaterThan(1000);
  });
});
