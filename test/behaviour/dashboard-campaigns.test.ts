import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectAccess } from '../harness/accounts.ts';
import { eventually } from '../harness/client.ts';
import { signInThroughForm, startWithProject, stopDashboard } from '../harness/dashboard.ts';
import type { Domain } from '../harness/domains.ts';
import { errors, launchBrowser, screenshot } from '../harness/browser.ts';
import { byMode, type Instance } from '../harness/instance.ts';

/**
 * The Segments and Campaigns screens in a real browser, as a marketer uses them: a segment built
 * in the filter builder whose live count is the API's; a static segment's members added and
 * removed; a campaign composed with an audience filter, test-sent and sent, its emails at the SMTP
 * sink and its stats on screen; a campaign scheduled in the user's time zone (sent as UTC), then
 * cancelled and deleted. What the screens show is checked against the API, and what they do by
 * what the API answers afterwards.
 */
let instance: Instance;
let browser: Browser;
let page: Page;
let project: ProjectAccess;
let domain: Domain;
let proSegmentId = '';
let sentCampaignId = '';

const WAIT = byMode({ embedded: 20_000, distributed: 90_000 });
const screen = (rest = '') => `/p/${project.projectId}${rest}`;
const at = (pathname: RegExp) => page.waitForURL((url) => pathname.test(url.pathname));
/** A filter row of the builder: "Group 1, filter 2". */
const filterRow = (scope: Page | Locator, group: number, filter: number) => scope.getByRole('group', { name: `Group ${group}, filter ${filter}`, exact: true });
const liveCount = () => page.getByRole('status').filter({ hasText: /match|recipient|Complete the filters|Counting/ });
/** The number the live count shows, once it has settled. */
async function shownCount(): Promise<number> {
  let text = '';
  await expect.poll(async () => (text = (await liveCount().textContent()) ?? ''), { timeout: WAIT }).toMatch(/^[\d,]+ (contacts? match|recipients?)(?! .*updating)/);
  return Number(text.replace(/[^\d].*$/, '').replace(/,/g, ''));
}

const condition = {
  logic: 'OR',
  groups: [
    { filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }, { field: 'data.visits', operator: 'greaterThanOrEqual', value: '3' }] },
    { filters: [{ field: 'event.signed-up', operator: 'triggeredWithin', value: 7, unit: 'days' }] },
  ],
};

beforeAll(async () => {
  ({ instance, project, domain } = await startWithProject('Campaign shop', { domain: true }));
  const people = [
    { email: 'ann@shop.example', data: { plan: 'pro', visits: 5, name: 'Ann' } },
    { email: 'bob@shop.example', data: { plan: 'pro', visits: 1 } },
    { email: 'cat@shop.example', data: { plan: 'free', visits: 9 } },
    { email: 'dan@shop.example', data: { plan: 'pro', visits: 4 }, subscribed: false },
    { email: 'eve@shop.example', data: { plan: 'free', visits: 0 } },
  ];
  for (const person of people) {
    const res = await project.api.post('/contacts', { subscribed: true, ...person });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  const tracked = await project.api.post('/v1/track', { email: 'cat@shop.example', event: 'signed-up' });
  expect(tracked.status, JSON.stringify(tracked.body)).toBe(200);
  // The contacts' projection has caught up (distributed mode applies it a moment later).
  await eventually(async () => ((await project.api.post('/segments/count', { condition })).body.data.count === 3 ? true : undefined), WAIT, 'the contacts and the event to be counted');
});

afterAll(() => stopDashboard(browser, instance));

describe('the Segments and Campaigns screens', { timeout: byMode({ embedded: 90_000, distributed: 240_000 }) }, () => {
  it('Chromium starts and the user signs in', async () => {
    browser = await launchBrowser();
    page = await signInThroughForm(browser, instance, project, screen('/segments'));
    await at(/\/segments$/);
    await page.getByText('No segments yet').waitFor();
  });

  it('a segment built in the builder: its live count is what the API counts, and saving keeps that condition', async () => {
    await page.getByRole('link', { name: 'New segment' }).click();
    await page.getByRole('heading', { name: 'New segment' }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('Pro customers');
    // The first filter starts as "email contains …": with no value, the API's own message shows on the row.
    await filterRow(page, 1, 1).getByText('contains needs a non-empty text').waitFor();

    const first = filterRow(page, 1, 1);
    await first.getByLabel('Field').selectOption('data.');
    await first.getByLabel('Data key').fill('plan');
    await first.getByLabel('Operator').selectOption('equals');
    await first.getByLabel('Value').fill('pro');
    const onlyPro = { logic: 'AND', groups: [{ filters: [condition.groups[0].filters[0]] }] };
    expect(await shownCount()).toBe((await project.api.post('/segments/count', { condition: onlyPro })).body.data.count);

    await page.getByRole('button', { name: 'Add a filter to group 1' }).click();
    const second = filterRow(page, 1, 2);
    await second.getByLabel('Field').selectOption('data.');
    await second.getByLabel('Data key').fill('visits');
    await second.getByLabel('Operator').selectOption('greaterThanOrEqual');
    await second.getByLabel('Value').fill('3');
    await page.getByRole('button', { name: 'Add a group' }).click();
    const third = filterRow(page, 2, 1);
    await third.getByLabel('Field').selectOption('event.');
    await third.getByLabel('Event name').fill('signed-up');
    await third.getByLabel('Operator').selectOption('triggeredWithin');
    await third.getByLabel('Amount').fill('7');
    expect(await third.getByLabel('Unit').inputValue()).toBe('days');
    await page.getByLabel('Groups combine with').selectOption('OR');

    // A filter added and removed by keyboard: focus goes on to the group's add button, not to the page.
    await page.getByRole('button', { name: 'Add a filter to group 2' }).click();
    await page.getByRole('button', { name: 'Remove group 2, filter 2' }).focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.evaluate<string>('document.activeElement?.textContent')).toBe('Add a filter to group 2');
    expect(await filterRow(page, 2, 2).count()).toBe(0);

    const api = (await project.api.post('/segments/count', { condition })).body.data.count;
    expect(api).toBe(3); // ann and dan (pro with 3 visits or more; subscribed or not), cat (signed up today)
    expect(await shownCount()).toBe(api);
    await screenshot(page, 'segments');

    await page.getByRole('button', { name: 'Create segment' }).click();
    await at(/\/segments\/(?!new$)[^/]+$/);
    proSegmentId = new URL(page.url()).pathname.split('/').pop()!;
    await page.getByRole('heading', { name: 'Pro customers' }).waitFor();
    const saved = (await project.api.get(`/segments/${proSegmentId}`)).body.data;
    expect(saved.condition).toEqual(condition);
    expect(saved.memberCount).toBe(api);
    const contacts = (await project.api.get(`/segments/${proSegmentId}/contacts`)).body.data.contacts.map((c: { email: string }) => c.email);
    const rows = page.getByRole('region', { name: 'Contacts in the segment' }).getByRole('row');
    await expect.poll(() => rows.count()).toBe(contacts.length + 1);
    for (const email of contacts) await page.getByRole('cell', { name: email }).waitFor();
    await page.getByRole('checkbox', { name: /Record segment entry and exit events/ }).check();
    await eventually(async () => ((await project.api.get(`/segments/${proSegmentId}`)).body.data.trackMembership ? true : undefined), WAIT, 'trackMembership on');
  });

  it("a segment's page asks the API for its member count once", async () => {
    // A tab of its own: the first one may still be refreshing after the previous test's change.
    const tab = await page.context().newPage();
    const counting: string[] = [];
    tab.on('request', (request) => {
      const url = new URL(request.url());
      const asks =
        (request.method() === 'GET' && url.pathname === `/segments/${proSegmentId}`) ||
        (request.method() === 'POST' && url.pathname === '/segments/count') ||
        (url.pathname === `/segments/${proSegmentId}/contacts` && url.searchParams.get('total') !== 'false');
      if (asks) counting.push(`${request.method()} ${url.pathname}${url.search}`);
    });
    await tab.goto(screen(`/segments/${proSegmentId}`));
    await tab.getByRole('heading', { name: 'Pro customers' }).waitFor();
    const saved = (await project.api.get(`/segments/${proSegmentId}`)).body.data.memberCount;
    await expect.poll(() => tab.getByRole('status').filter({ hasText: /match/ }).textContent()).toBe(`${saved} contacts match`);
    const rows = tab.getByRole('region', { name: 'Contacts in the segment' }).getByRole('row');
    await expect.poll(() => rows.count()).toBe(saved + 1);
    await tab.waitForTimeout(600); // past the live count's 400 ms debounce, should it ask again
    await tab.close();
    expect(counting, 'requests that count the members').toEqual([`GET /segments/${proSegmentId}`]);
  });

  it("a static segment: members added and removed by email change the API's members", async () => {
    await page.getByRole('navigation', { name: 'Project screens' }).getByRole('link', { name: 'Segments' }).click();
    await page.getByRole('cell', { name: 'Pro customers' }).waitFor();
    await page.getByRole('link', { name: 'New segment' }).click();
    await page.getByLabel('Name', { exact: true }).fill('VIP');
    await page.getByRole('radio', { name: /Static/ }).check();
    expect(await page.getByRole('group', { name: 'Condition' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Create segment' }).click();
    await page.getByRole('heading', { name: 'VIP' }).waitFor();
    const id = new URL(page.url()).pathname.split('/').pop()!;
    await page.getByText('No contact is in this segment now.').waitFor();

    await page.getByLabel('Emails to add or remove').fill('ann@shop.example, nobody-at-shop');
    await page.getByRole('button', { name: 'Add members' }).click();
    await page.getByText('nobody-at-shop: Invalid email address').waitFor();
    await page.getByLabel('Emails to add or remove').fill('ann@shop.example\nnew@shop.example');
    await page.getByRole('button', { name: 'Add members' }).click();
    await page.getByText('Added 2 (1 new contact); 0 already members.').waitFor();
    await page.getByRole('cell', { name: 'new@shop.example' }).waitFor();
    const members = async () => (await project.api.get(`/segments/${id}/contacts`)).body.data.contacts.map((c: { email: string }) => c.email).sort();
    expect(await members()).toEqual(['ann@shop.example', 'new@shop.example']);

    await page.getByLabel('Emails to add or remove').fill('ann@shop.example');
    await page.getByRole('button', { name: 'Remove members' }).click();
    await page.getByText('Removed 1; 0 were not members.').waitFor();
    expect(await members()).toEqual(['new@shop.example']);
    await expect.poll(() => page.getByRole('cell', { name: 'ann@shop.example' }).count()).toBe(0);

    // The members list pages by 20, newest first, as the API pages it.
    const many = Array.from({ length: 21 }, (_, i) => `member${String(i + 1).padStart(2, '0')}@shop.example`);
    await page.getByLabel('Emails to add or remove').fill(many.join('\n'));
    await page.getByRole('button', { name: 'Add members' }).click();
    await page.getByText('Added 21 (21 new contacts); 0 already members.').waitFor();
    await page.getByText('Page 1 of 2 (22 contacts)').waitFor();
    const rows = page.getByRole('region', { name: 'Contacts in the segment' }).getByRole('row');
    // The page count comes with the segment (memberCount), the rows with their own request.
    await expect.poll(() => rows.count()).toBe(21);
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByText('Page 2 of 2 (22 contacts)').waitFor();
    const second = (await project.api.get(`/segments/${id}/contacts?page=2&pageSize=20`)).body.data.contacts.map((c: { email: string }) => c.email);
    await expect.poll(() => rows.count()).toBe(second.length + 1);
    for (const email of second) await page.getByRole('cell', { name: email, exact: true }).waitFor();

    await page.getByRole('button', { name: 'Delete segment' }).click();
    await page.getByRole('button', { name: 'Delete now' }).click();
    await at(/\/segments$/);
    await page.getByRole('cell', { name: 'Pro customers' }).waitFor();
    expect((await project.api.get(`/segments/${id}`)).status).toBe(404);
  });

  it('a campaign composed with a filter audience, test-sent and sent: the emails reach the sink and the stats show', async () => {
    const template = await project.api.post('/templates', {
      name: 'Spring template',
      subject: 'Spring is here',
      body: '<p>Hello {{name ?? friend}}, spring is here.</p>',
      from: `news@${domain.domain}`,
      fromName: 'Shop',
      type: 'MARKETING',
    });
    expect(template.status, JSON.stringify(template.body)).toBe(201);
    await page.getByRole('navigation', { name: 'Project screens' }).getByRole('link', { name: 'Campaigns' }).click();
    await page.getByText('No campaigns yet').waitFor();
    // The domains answer late (as on a slow link): a template picked meanwhile must still bring its sender.
    const lateDomains = '**/domains/project/**';
    await page.route(lateDomains, async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await route.continue();
    });
    await page.getByRole('link', { name: 'New campaign' }).click();
    await page.getByRole('heading', { name: 'New campaign' }).waitFor();
    await page.getByLabel('Campaign name').fill('Spring launch');
    await page.getByLabel('From address').fill('sales');
    // Starting from a template copies its content (and its sender, on a verified domain).
    await page.getByLabel('Start from a template').selectOption({ label: 'Spring template' });
    expect(await page.getByLabel('Subject', { exact: true }).inputValue()).toBe('Spring is here');
    expect(await page.getByLabel('Sender name (optional)').inputValue()).toBe('Shop');
    expect(await page.getByLabel('From address').inputValue()).toBe('news');
    expect(await page.getByLabel('Sending domain').inputValue()).toBe(domain.domain);
    await page.unroute(lateDomains);
    await expect.poll(() => page.getByRole('textbox', { name: 'HTML body' }).textContent()).toBe('<p>Hello {{name ?? friend}}, spring is here.</p>');

    // The audience: everyone first (subscribed only), then a filter built with the segment builder.
    const all = (await project.api.post('/campaigns/audience/count', { audienceType: 'ALL' })).body.data.count;
    expect(await shownCount()).toBe(all);
    await page.getByRole('radio', { name: 'A segment' }).check();
    await page.getByLabel('Segment', { exact: true }).selectOption(proSegmentId);
    const inSegment = (await project.api.post('/campaigns/audience/count', { audienceType: 'SEGMENT', segmentId: proSegmentId })).body.data.count;
    expect(inSegment).toBe(2); // ann and cat; dan is in the segment but unsubscribed
    expect(await shownCount()).toBe(inSegment);
    await page.getByRole('radio', { name: 'Contacts matching a filter' }).check();
    const row = filterRow(page, 1, 1);
    await row.getByLabel('Field').selectOption('data.');
    await row.getByLabel('Data key').fill('plan');
    await row.getByLabel('Operator').selectOption('equals');
    await row.getByLabel('Value').fill('pro');
    const audience = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] };
    const recipients = (await project.api.post('/campaigns/audience/count', { audienceType: 'FILTERED', audienceCondition: audience })).body.data.count;
    expect(recipients).toBe(2); // ann and bob; dan is pro but unsubscribed
    expect(await shownCount()).toBe(recipients);
    await screenshot(page, 'campaign-compose');
    // The form checks with the API's own schema: a blank name is refused without asking the API.
    const creates: string[] = [];
    const onRequest = (request: { method(): string; url(): string }) => {
      if (request.method() === 'POST' && new URL(request.url()).pathname === '/campaigns') creates.push(request.url());
    };
    page.on('request', onRequest);
    await page.getByLabel('Campaign name').fill('   ');
    await page.getByRole('button', { name: 'Save draft' }).click();
    await page.getByText('Name is required').waitFor();
    page.off('request', onRequest);
    expect(creates).toEqual([]);
    await page.getByLabel('Campaign name').fill('Spring launch');
    await page.getByRole('button', { name: 'Save draft' }).click();
    await at(/\/campaigns\/(?!new$)[^/]+$/);
    sentCampaignId = new URL(page.url()).pathname.split('/').pop()!;
    await page.getByRole('heading', { name: 'Spring launch' }).waitFor();
    const draft = (await project.api.get(`/campaigns/${sentCampaignId}`)).body.data;
    expect(draft).toMatchObject({
      status: 'DRAFT',
      subject: 'Spring is here',
      from: `news@${domain.domain}`,
      fromName: 'Shop',
      audienceType: 'FILTERED',
      audienceCondition: audience,
      body: '<p>Hello {{name ?? friend}}, spring is here.</p>',
    });
    // A draft: edit, send, duplicate and delete; nothing to cancel.
    expect(await page.getByRole('button', { name: 'Cancel campaign' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Delete' }).waitFor();

    await page.getByLabel('Test address').fill('tester@example.com');
    await page.getByRole('button', { name: 'Send test' }).click();
    await page.getByText('Test sent to tester@example.com.').waitFor();
    const testMail = await instance.smtp.waitForMailTo('tester@example.com', WAIT);
    expect(testMail.parsed.subject).toBe('[TEST] Spring is here');

    await page.getByRole('button', { name: 'Send now' }).click();
    await page.getByText('Send to 2 recipients (subscribed contacts) now? This cannot be undone.').waitFor();
    await page.getByRole('button', { name: 'Yes, send now' }).click();
    for (const email of ['ann@shop.example', 'bob@shop.example']) {
      const mail = await instance.smtp.waitFor((m) => m.rcptTo.includes(email) && m.parsed.subject === 'Spring is here', WAIT);
      if (email === 'ann@shop.example') expect(mail.parsed.html).toContain('Hello Ann, spring is here.');
    }
    const sent = await eventually(async () => {
      const c = (await project.api.get(`/campaigns/${sentCampaignId}`)).body.data;
      return c.status === 'SENT' ? c : undefined;
    }, WAIT, 'the campaign to be SENT');
    expect(sent.recipientCount).toBe(2);
    await page.locator('.status-badge', { hasText: 'Sent' }).waitFor({ timeout: WAIT });
    const stats = (await project.api.get(`/campaigns/${sentCampaignId}/stats`)).body.data;
    const stat = (label: string) => page.locator('.stat', { has: page.getByText(label, { exact: true }) }).locator('dd').first();
    await expect.poll(() => stat('Delivered').textContent(), { timeout: WAIT }).toBe(String(stats.delivered));
    expect(await stat('Recipients').textContent()).toBe('2');
    expect(stats.delivered).toBe(2);
    await page.getByText('100.0% of recipients').first().waitFor();
    // Sent: only duplicate is left (no edit, send, cancel or delete).
    for (const name of ['Send now', 'Cancel campaign', 'Stop sending', 'Delete', 'Schedule']) {
      expect(await page.getByRole('button', { name, exact: true }).count(), name).toBe(0);
    }
    expect(await page.getByRole('link', { name: 'Edit' }).count()).toBe(0);
    await screenshot(page, 'campaign');
  });

  it("a campaign scheduled in the user's time zone is sent the UTC instant; cancelled, then deleted", async () => {
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Emulation.setTimezoneOverride', { timezoneId: 'Asia/Tokyo' });
    await page.reload();
    await page.getByRole('button', { name: 'Duplicate' }).click();
    await page.locator('.status-badge', { hasText: 'Draft' }).waitFor();
    const copyId = new URL(page.url()).pathname.split('/').pop()!;
    expect(copyId).not.toBe(sentCampaignId);

    // Tomorrow at 10:00 in Tokyo (UTC+9, no daylight saving) is 01:00 UTC that day.
    const tokyoTomorrow = new Date(Date.now() + 9 * 3_600_000 + 86_400_000).toISOString().slice(0, 10);
    await page.getByLabel('Send at (your time, Asia/Tokyo)').fill(`${tokyoTomorrow}T10:00`);
    await page.getByText(`That is ${tokyoTomorrow} 01:00 UTC.`).waitFor();
    await page.getByRole('button', { name: 'Schedule', exact: true }).click();
    await page.locator('.status-badge', { hasText: 'Scheduled' }).waitFor();
    const scheduled = (await project.api.get(`/campaigns/${copyId}`)).body.data;
    expect(scheduled).toMatchObject({ status: 'SCHEDULED', scheduledFor: `${tokyoTomorrow}T01:00:00.000Z` });
    await page.getByText('(Asia/Tokyo)').first().waitFor();
    expect(await page.getByRole('button', { name: 'Delete' }).count()).toBe(0);

    await page.getByRole('button', { name: 'Cancel campaign' }).click();
    await page.getByRole('button', { name: 'Yes, cancel it' }).click();
    await page.locator('.status-badge', { hasText: 'Cancelled' }).waitFor();
    expect((await project.api.get(`/campaigns/${copyId}`)).body.data.status).toBe('CANCELLED');
    expect(await page.getByRole('button', { name: 'Send now' }).count()).toBe(0);

    // The list by status shows what the API lists.
    await page.getByRole('link', { name: '← All campaigns' }).click();
    await page.getByLabel('Status').selectOption('CANCELLED');
    const cancelled = (await project.api.get('/campaigns?status=CANCELLED')).body.data.campaigns;
    const rows = page.getByRole('table').getByRole('row');
    await expect.poll(() => rows.count()).toBe(cancelled.length + 1);
    await page.getByLabel('Status').selectOption('');
    await expect.poll(() => rows.count()).toBe(3);

    await page.getByLabel('Status').selectOption('CANCELLED');
    await expect.poll(() => rows.count()).toBe(cancelled.length + 1);
    await page.getByRole('link', { name: 'Spring launch' }).click();
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('button', { name: 'Yes, delete it' }).click();
    await at(/\/campaigns$/);
    expect((await project.api.get(`/campaigns/${copyId}`)).status).toBe(404);
  });

  it('the segments list shows 20 a page, newest first, as the API lists them', async () => {
    for (let i = 0; i < 20; i++) expect((await project.api.post('/segments', { name: `Hand picked ${i}`, type: 'STATIC' })).status).toBe(201);
    const all = (await project.api.get('/segments')).body.data.map((s: { name: string }) => s.name);
    expect(all.length).toBeGreaterThan(20);
    await page.getByRole('navigation', { name: 'Project screens' }).getByRole('link', { name: 'Segments' }).click();
    await page.getByRole('heading', { name: 'Segments', level: 1 }).waitFor();
    const names = () => page.getByRole('table').getByRole('row').locator('td:first-child').allTextContents();
    await expect.poll(names).toEqual(all.slice(0, 20));
    await page.getByRole('button', { name: 'Next page' }).click();
    await expect.poll(names).toEqual(all.slice(20));
    expect(await page.getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Previous page' }).click();
    await expect.poll(names).toEqual(all.slice(0, 20));
  });

  it('no page threw', () => {
    expect(errors).toEqual([]);
  });
});
