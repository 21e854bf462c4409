import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectAccess } from '../harness/accounts.ts';
import { axeViolations } from '../harness/axe.ts';
import { errors, launchBrowser, newUserPage, signedInPage } from '../harness/browser.ts';
import { eventually } from '../harness/client.ts';
import { startWithProject, stopDashboard, submitSignIn } from '../harness/dashboard.ts';
import type { Domain } from '../harness/domains.ts';
import { byMode, type Instance } from '../harness/instance.ts';
import { buildWorkflow, executionOf, statusIs, track } from '../harness/workflows.ts';

/**
 * Issue #16: "keyboard navigation and labels meet WCAG 2.1 AA on the main flows". Every screen of
 * the dashboard, in its full state (a project with a verified domain, contacts, a segment, a
 * template, a sent campaign, a workflow with executions, events), passes axe-core's WCAG 2.1 A
 * and AA rules, and so do its dialogs and editors; the main flows work from the keyboard alone,
 * focus lands where the user expects and is always visible. What axe cannot judge is listed in
 * docs/decisions.md ("Dashboard: accessibility").
 */
const WAIT = byMode({ embedded: 20_000, distributed: 90_000 });
let instance: Instance;
let browser: Browser;
let page: Page;
let project: ProjectAccess;
let domain: Domain;
const ids = { contact: '', segment: '', template: '', campaign: '', workflow: '' };
const screen = (rest = '') => `/p/${project.projectId}${rest}`;

/** Fails with every violation axe finds on the page as it is now, one line each. */
async function expectNoViolations(what: string) {
  expect(await axeViolations(page), `WCAG 2.1 AA violations on ${what}`).toEqual([]);
}

/** Role and accessible name of the focused element, as a screen reader announces it ("button Sign in"). */
const focused = (p: Page = page) =>
  p.evaluate<string>(`(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return 'body';
    const role = el.getAttribute('role') || ({ A: 'link', BUTTON: 'button', SELECT: 'combobox', TEXTAREA: 'textbox', H1: 'heading', H2: 'heading', H3: 'heading' })[el.tagName]
      || (el.tagName === 'INPUT' ? ({ checkbox: 'checkbox', radio: 'radio', submit: 'button', button: 'button' })[el.type] || 'textbox' : el.tagName.toLowerCase());
    const byId = (ids) => ids.split(' ').map((id) => document.getElementById(id)?.textContent ?? '').join(' ');
    const name = el.getAttribute('aria-label') || (el.getAttribute('aria-labelledby') && byId(el.getAttribute('aria-labelledby')))
      || (el.labels && el.labels[0]?.textContent) || (el.tagName === 'INPUT' && (el.type === 'submit' || el.type === 'button') ? el.value : el.textContent) || '';
    return role + ' ' + name.replace(/\\s+/g, ' ').trim();
  })()`);

/**
 * The focus indicator of the focused element as the browser draws it after a key press: its
 * outline or box-shadow, or, for a composite widget such as CodeMirror whose focused part is
 * its inner text area, the ring on the widget's frame (an ancestor inside the same label).
 * 'none' means the user cannot see where they are.
 */
const focusIndicator = (p: Page = page) =>
  p.evaluate<string>(`(() => {
    // At least 2 px: a hairline (a library's 0.5 px shadow) is not something a user finds on a page.
    const ring = (el) => {
      const style = getComputedStyle(el);
      if (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2) return 'outline ' + style.outlineWidth + ' ' + style.outlineStyle + ' ' + style.outlineColor;
      const widest = Math.max(0, ...(style.boxShadow.match(/-?[\d.]+px/g) || []).map((l) => Math.abs(parseFloat(l))));
      return style.boxShadow !== 'none' && widest >= 2 ? 'box-shadow ' + style.boxShadow : '';
    };
    const el = document.activeElement;
    if (!el || el === document.body) return 'none (nothing focused)';
    const own = ring(el);
    if (own) return own;
    const frame = el.closest('.cm-editor');
    return (frame && ring(frame)) || 'none';
  })()`);

/** Presses Tab (or Shift+Tab) until the focused element is `target`, at most `max` times; fails naming where focus went. */
async function tabTo(target: string | RegExp, { back = false, max = 40, p = page } = {}) {
  const seen: string[] = [];
  for (let i = 0; i < max; i++) {
    await p.keyboard.press(back ? 'Shift+Tab' : 'Tab');
    const now = await focused(p);
    if (typeof target === 'string' ? now === target : target.test(now)) {
      // Polled: CodeMirror marks its frame focused a moment after the focus event.
      await expect.poll(() => focusIndicator(p), { message: `no visible focus indicator on ${now}`, timeout: 2_000 }).toMatch(/^(outline|box-shadow)/);
      return;
    }
    seen.push(now);
  }
  throw new Error(`${String(target)} not reached by ${back ? 'Shift+Tab' : 'Tab'}; focus went: ${seen.join(' → ')}`);
}

/**
 * Every stop of the page's Tab order, from the skip link round to it again: the stops that show
 * no focus indicator, that a screen reader cannot reach (inside role="img" or aria-hidden: focus
 * lands on something it does not announce), or that Tab cannot leave (a trap).
 */
async function tabStopProblems(max = 150): Promise<string[]> {
  await tabTo('link Skip to content', { back: true, max: 60 });
  const missing: string[] = [];
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    const now = await focused();
    if (now === 'link Skip to content') return missing;
    // Past the last stop the focus leaves the page (the browser's own controls) before it comes round.
    if (now === 'body') continue;
    // A date input's month, day and year are stops of their own inside the one input (Chromium's
    // own control, which marks the field being edited): the input was checked on arrival.
    const sameDateInput = await page.evaluate<boolean>(`window.__lastStop === document.activeElement && document.activeElement.matches('input[type=date], input[type=datetime-local], input[type=time]')`);
    if (sameDateInput) continue;
    // Read again for a moment: CodeMirror marks its frame focused a little after the focus event.
    let ring = await focusIndicator();
    for (let tries = 0; ring.startsWith('none') && tries < 10; tries++) ring = await page.waitForTimeout(100).then(() => focusIndicator());
    const shown = ring.startsWith('none') ? ring : '';
    const where = await page.evaluate<string>('document.activeElement.outerHTML.slice(0, 120)');
    if (shown) missing.push(`${now}: no focus indicator: ${where}`);
    if (await page.evaluate<boolean>(`!!document.activeElement.parentElement.closest('[role=img], [role=presentation], [aria-hidden=true]')`)) {
      missing.push(`${now}: hidden from screen readers (inside role=img or aria-hidden): ${where}`);
    }
    const stuck = await page.evaluate<boolean>('(() => { const same = window.__lastStop === document.activeElement; window.__lastStop = document.activeElement; return same; })()');
    if (stuck) missing.push(`${now}: Tab did not move on (${where})`);
  }
  throw new Error(`Tab did not come round to the skip link in ${max} presses (a keyboard trap?)`);
}

beforeAll(async () => {
  ({ instance, project, domain } = await startWithProject('Accessible shop', { domain: true }));
  const people = [
    { email: 'ann@a11y.example', data: { plan: 'pro', visits: 5, name: 'Ann' } },
    { email: 'bob@a11y.example', data: { plan: 'pro', visits: 1 } },
    { email: 'cat@a11y.example', data: { plan: 'free', visits: 9 }, subscribed: false },
  ];
  for (const person of people) {
    const res = await project.api.post('/contacts', { subscribed: true, ...person });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    if (person.email.startsWith('ann')) ids.contact = res.body.data.id;
  }
  const condition = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] };
  const segment = await project.api.post('/segments', { name: 'Pro customers', condition });
  expect(segment.status, JSON.stringify(segment.body)).toBe(201);
  ids.segment = segment.body.data.id;
  const template = await project.api.post('/templates', {
    name: 'Welcome', subject: 'Welcome, {{name ?? friend}}', body: '<p>Hello {{name ?? friend}}</p>', from: `hello@${domain.domain}`, type: 'MARKETING',
  });
  expect(template.status, JSON.stringify(template.body)).toBe(201);
  ids.template = template.body.data.id;
  // A workflow that ran: its executions list and an execution's path have something to show.
  const flow = await buildWorkflow(project, {
    eventName: 'signed-up',
    chain: false,
    steps: [
      { name: 'Is pro', type: 'CONDITION', config: { field: 'data.plan', operator: 'equals', value: 'pro' } },
      { name: 'Welcome pro', type: 'SEND_EMAIL', templateId: ids.template },
      { name: 'Not pro', type: 'EXIT', config: { reason: 'not pro' } },
    ],
    links: [
      { from: 'Is pro', to: 'Welcome pro', branch: 'yes' },
      { from: 'Is pro', to: 'Not pro', branch: 'no' },
    ],
  });
  ids.workflow = flow.id;
  const tracked = await track(project, 'ann@a11y.example', 'signed-up');
  await executionOf(project, flow.id, tracked.contact, statusIs('COMPLETED'), WAIT);
  await track(project, 'bob@a11y.example', 'viewed-pricing', { page: '/pricing' });
  // A campaign sent to the segment, so its page shows the stats.
  const campaign = await project.api.post('/campaigns', {
    name: 'Spring launch', subject: 'Spring is here', body: '<p>Spring</p>', from: `news@${domain.domain}`, audienceType: 'SEGMENT', segmentId: ids.segment,
  });
  expect(campaign.status, JSON.stringify(campaign.body)).toBe(200);
  ids.campaign = campaign.body.data.id;
  expect((await project.api.post(`/campaigns/${ids.campaign}/send`, {})).status).toBeLessThan(300);
  await eventually(async () => ((await project.api.get(`/campaigns/${ids.campaign}`)).body.data.status === 'SENT' ? true : undefined), WAIT, 'the campaign to be sent');
});

afterAll(() => stopDashboard(browser, instance));

describe('the dashboard meets WCAG 2.1 AA (axe-core) on every screen', { timeout: byMode({ embedded: 60_000, distributed: 180_000 }) }, () => {
  // In a test, not in beforeAll: without Chromium the tests fail, they are not reported as skipped.
  it('Chromium starts', async () => {
    browser = await launchBrowser();
  });

  it('signed out: sign-in and sign-up', async () => {
    const visitor = await newUserPage(browser, instance.url);
    page = visitor;
    await page.goto('/signin');
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await expectNoViolations('sign-in');
    // A failed sign-in: the error is shown and announced.
    await submitSignIn(page, { email: project.email, password: 'not the password' });
    await page.getByRole('alert').waitFor();
    await expectNoViolations('sign-in with an error');
    await page.goto('/signup');
    await page.getByRole('heading', { name: 'Create your account' }).waitFor();
    await expectNoViolations('sign-up');
    await visitor.context().close();
  });

  it('the project home, new project and the keys shown once', async () => {
    page = await signedInPage(browser, instance.url, project, '/new-project');
    await page.getByRole('heading', { name: 'New project' }).waitFor();
    await expectNoViolations('new project');
    await page.goto(screen('/settings'));
    await page.getByRole('heading', { name: 'Settings' }).waitFor();
    await expectNoViolations('settings');
    await page.getByRole('button', { name: 'Rotate keys' }).click();
    await expectNoViolations('settings, confirming key rotation');
    await page.getByRole('button', { name: 'Rotate now' }).click();
    await page.getByLabel('Secret key').waitFor();
    await expectNoViolations('settings, new keys shown once');
    project.secretKey = await page.getByLabel('Secret key').inputValue();
    project.api = instance.api.as(project.secretKey);
  });

  it('Overview', async () => {
    await page.goto(screen('/overview'));
    await page.getByRole('heading', { name: 'Recent events' }).waitFor();
    await page.locator('.recharts-surface').first().waitFor();
    await page.getByText("The chart's figures").click();
    await page.getByRole('table', { name: 'Email events per day' }).waitFor();
    await expectNoViolations('overview');
  });

  it('Contacts: the list, a new contact, the CSV import with its row errors, a contact', async () => {
    await page.goto(screen('/contacts'));
    await page.getByRole('link', { name: 'ann@a11y.example' }).waitFor();
    await expectNoViolations('contacts');
    await page.getByRole('button', { name: 'New contact' }).click();
    await page.getByRole('heading', { name: 'New contact' }).waitFor();
    await page.getByRole('button', { name: 'Create contact' }).click();
    await page.getByText(/email/i).and(page.locator('.field-error')).first().waitFor();
    await expectNoViolations('contacts, new contact with errors');
    await page.getByRole('button', { name: 'Cancel' }).click();
    await page.getByLabel('CSV file').setInputFiles({ name: 'people.csv', mimeType: 'text/csv', buffer: Buffer.from('email,plan\ndan@a11y.example,pro\nnot-an-email,free\n') });
    await page.getByRole('button', { name: 'Import' }).click();
    await page.getByText(/1 failed/).first().waitFor({ timeout: WAIT });
    await expectNoViolations('contacts, import done with a row error');
    await page.getByRole('link', { name: 'ann@a11y.example' }).click();
    await page.getByRole('heading', { name: 'ann@a11y.example' }).waitFor();
    await page.getByRole('heading', { name: 'Timeline' }).waitFor();
    await expectNoViolations('a contact');
    await page.getByRole('button', { name: 'Edit contact' }).click();
    await expectNoViolations('a contact, editing');
  });

  it('Segments: the list, a segment with its members, a new segment', async () => {
    await page.goto(screen('/segments'));
    await page.getByRole('link', { name: 'Pro customers' }).waitFor();
    await expectNoViolations('segments');
    await page.goto(screen(`/segments/${ids.segment}`));
    await page.getByRole('heading', { name: 'Pro customers' }).waitFor();
    await page.getByText(/\d+ contacts? match/).first().waitFor({ timeout: WAIT });
    await expectNoViolations('a segment');
    await page.goto(screen('/segments/new'));
    await page.getByRole('heading', { name: 'New segment' }).waitFor();
    await expectNoViolations('new segment');
  });

  it('Templates: the list and the editor with its preview', async () => {
    await page.goto(screen('/templates'));
    await page.getByRole('link', { name: 'Welcome' }).waitFor();
    await expectNoViolations('templates');
    await page.goto(screen(`/templates/${ids.template}`));
    await page.getByRole('textbox', { name: 'HTML body' }).waitFor();
    await expectNoViolations('a template');
  });

  it('Campaigns: the list, compose, a sent campaign with its stats', async () => {
    await page.goto(screen('/campaigns'));
    await page.getByRole('link', { name: 'Spring launch' }).waitFor();
    await expectNoViolations('campaigns');
    await page.goto(screen('/campaigns/new'));
    await page.getByRole('heading', { name: 'New campaign' }).waitFor();
    await page.getByText(/recipients?/).first().waitFor();
    await expectNoViolations('compose a campaign');
    await page.getByRole('radio', { name: 'Contacts matching a filter' }).check();
    await expectNoViolations('compose a campaign, filter audience');
    await page.goto(screen(`/campaigns/${ids.campaign}`));
    await page.getByRole('heading', { name: 'Spring launch' }).waitFor();
    await page.getByText('Delivered', { exact: true }).first().waitFor({ timeout: WAIT });
    await expectNoViolations('a sent campaign');
  });

  it('Workflows: the list, the editor with its side panel, an execution path', async () => {
    await page.goto(screen('/workflows'));
    await page.getByRole('link', { name: /^wf-/ }).first().waitFor();
    await expectNoViolations('workflows');
    await page.goto(screen(`/workflows/${ids.workflow}`));
    await page.locator('.react-flow__node').first().waitFor();
    await page.getByRole('button', { name: 'Show path' }).first().waitFor({ timeout: WAIT });
    await expectNoViolations('a workflow');
    await page.getByRole('button', { name: 'Show path' }).first().click();
    await page.locator('.react-flow__node.on-path').first().waitFor();
    await page.locator('.react-flow__node', { hasText: 'Is pro' }).click();
    await page.getByRole('complementary').waitFor();
    await expectNoViolations('a workflow, a step in the side panel, a path shown');
  });

  it('Events, Domains and a page that does not exist', async () => {
    await page.goto(screen('/events'));
    await page.getByRole('cell', { name: 'viewed-pricing' }).first().waitFor();
    await expectNoViolations('events');
    await page.goto(screen('/domains'));
    await page.getByText(domain.domain).first().waitFor();
    await expectNoViolations('domains');
    await page.goto(screen('/nowhere'));
    await page.getByRole('heading').first().waitFor();
    await expectNoViolations('not found');
    await page.context().close();
  });
});

describe('the main flows by keyboard alone', { timeout: byMode({ embedded: 60_000, distributed: 180_000 }) }, () => {
  it('sign in: the skip link, each field, Enter submits; focus lands on the new page heading', async () => {
    page = await newUserPage(browser, instance.url);
    await page.goto(screen('/contacts'));
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await expect.poll(() => focused()).toBe('heading Sign in');
    await tabTo('textbox Email');
    await page.keyboard.type(project.email);
    await tabTo('textbox Password');
    await page.keyboard.type(project.password);
    await tabTo('button Sign in');
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => url.pathname === screen('/contacts'));
    await expect.poll(() => focused()).toBe('heading Contacts');
  });

  it('a skip link is the first stop and moves to the main content', async () => {
    await page.goto(screen('/contacts'));
    await expect.poll(() => focused()).toBe('heading Contacts');
    // Back from the heading: the navigation, the top bar, then the skip link before everything.
    await tabTo('link Skip to content', { back: true });
    const first = `document.querySelector('a[href], button, input, select, textarea, [tabindex]:not([tabindex="-1"])') === document.activeElement`;
    expect(await page.evaluate(first), 'the skip link is the first focusable element').toBe(true);
    await page.keyboard.press('Enter');
    // The next Tab starts inside main, not in the top bar or the navigation.
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('button New contact');
  });

  it('a contact opened from the list and back', async () => {
    await tabTo('link ann@a11y.example');
    await page.keyboard.press('Enter');
    await expect.poll(() => focused()).toBe('heading ann@a11y.example');
    await tabTo('link All contacts');
    await page.keyboard.press('Enter');
    await expect.poll(() => focused()).toBe('heading Contacts');
  });

  it('a dialog opened and closed from the keyboard gives focus back to its button (New contact, Escape or Cancel)', async () => {
    await tabTo('button New contact', { back: true });
    await page.keyboard.press('Enter');
    await expect.poll(() => focused()).toBe('textbox Email');
    await page.keyboard.press('Escape');
    await expect.poll(() => focused()).toBe('button New contact');
    await page.keyboard.press('Space');
    await expect.poll(() => focused()).toBe('textbox Email');
    await tabTo('button Cancel');
    await page.keyboard.press('Enter');
    await expect.poll(() => focused()).toBe('button New contact');
    expect(await focusIndicator()).toMatch(/^(outline|box-shadow)/);
  });

  it('key rotation: the confirmation closes back onto its button', async () => {
    await page.goto(screen('/settings'));
    await expect.poll(() => focused()).toBe('heading Settings');
    await tabTo('button Rotate keys');
    await page.keyboard.press('Enter');
    await expect.poll(() => focused()).toBe('button Rotate now');
    await page.keyboard.press('Escape');
    await expect.poll(() => focused()).toBe('button Rotate keys');
  });

  it('a campaign composed up to its test send', async () => {
    await page.goto(screen('/campaigns'));
    await expect.poll(() => focused()).toBe('heading Campaigns');
    await tabTo('link New campaign');
    await page.keyboard.press('Enter');
    await expect.poll(() => focused()).toBe('heading New campaign');
    await tabTo('textbox Campaign name');
    await page.keyboard.type('Keyboard launch');
    await tabTo('textbox Subject');
    await page.keyboard.type('Typed, not clicked');
    await tabTo('textbox From address');
    await page.keyboard.type('news');
    await tabTo('textbox HTML body');
    await page.keyboard.type('<p>Hello from the keyboard</p>');
    // CodeMirror keeps Tab for moving on after Escape: the user is not trapped in the editor.
    await page.keyboard.press('Escape');
    // A radio group is one Tab stop; the arrows choose within it.
    await tabTo('radio All subscribed contacts');
    await page.keyboard.press('ArrowDown');
    await expect.poll(() => focused()).toBe('radio A segment');
    await tabTo('combobox Segment');
    await page.keyboard.press('ArrowDown');
    await tabTo('button Save draft');
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => /\/campaigns\/(?!new$)[^/]+$/.test(url.pathname));
    await expect.poll(() => focused()).toBe('heading Keyboard launch');
    const id = new URL(page.url()).pathname.split('/').pop()!;
    expect((await project.api.get(`/campaigns/${id}`)).body.data).toMatchObject({ subject: 'Typed, not clicked', from: `news@${domain.domain}`, audienceType: 'SEGMENT', segmentId: ids.segment });
    await tabTo('textbox Test address');
    await page.keyboard.type('keyboard@example.com');
    await tabTo('button Send test');
    await page.keyboard.press('Enter');
    // Announced: the result lands in a live region.
    await page.getByRole('status').filter({ hasText: 'Test sent to keyboard@example.com.' }).waitFor();
    const mail = await instance.smtp.waitForMailTo('keyboard@example.com', WAIT);
    expect(mail.parsed.subject).toBe('[TEST] Typed, not clicked');
  });

  it('every Tab stop of the busiest screens shows where the focus is, and is announced', async () => {
    for (const path of ['/overview', '/contacts', `/contacts/${ids.contact}`, '/campaigns/new', `/campaigns/${ids.campaign}`, `/templates/${ids.template}`, `/workflows/${ids.workflow}`, '/events', '/domains', '/settings']) {
      await page.goto(screen(path));
      await page.locator('h1').waitFor();
      await page.waitForLoadState('networkidle');
      expect(await tabStopProblems(), `Tab stops on ${path}`).toEqual([]);
    }
  });

  it('at 320 CSS pixels wide (a 1280 px window at 400%) the screens reflow: no page-wide horizontal scrolling', async () => {
    await page.setViewportSize({ width: 320, height: 640 });
    const wide: string[] = [];
    for (const path of ['/overview', '/contacts', `/contacts/${ids.contact}`, '/segments', `/segments/${ids.segment}`, '/campaigns/new', `/campaigns/${ids.campaign}`, '/templates', `/templates/${ids.template}`, '/workflows', '/events', '/domains', '/settings']) {
      await page.goto(screen(path));
      await page.locator('h1').waitFor();
      await page.waitForLoadState('networkidle');
      const overflow = await page.evaluate<string>(`(() => {
        const over = document.documentElement.scrollWidth - document.documentElement.clientWidth;
        if (over <= 0) return '';
        const culprits = [...document.querySelectorAll('main *')].filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth + 1 && !el.closest('table, .graph, .cm-editor'))
          .filter((el, i, all) => !all.some((other) => other !== el && other.contains(el)));
        return over + ' px: ' + culprits.slice(0, 5).map((el) => el.outerHTML.slice(0, 100)).join(', ');
      })()`);
      if (overflow) wide.push(`${path} scrolls sideways by ${overflow}`);
    }
    await page.setViewportSize({ width: 1280, height: 800 });
    expect(wide).toEqual([]);
  });

  it('no page error happened', () => {
    expect(errors).toEqual([]);
  });
});
