import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectAccess } from '../harness/accounts.ts';
import { allContacts, eventually } from '../harness/client.ts';
import { errors, launchBrowser, screenshot } from '../harness/browser.ts';
import { signInThroughForm, startWithProject, stopDashboard } from '../harness/dashboard.ts';
import { byMode, type Instance } from '../harness/instance.ts';

/**
 * The Contacts and Events screens in a real browser, as a marketer uses them: a CSV imported with
 * its progress and row errors, a contact created, edited and deleted with typed data, a bulk
 * unsubscribe on a selection, a contact's timeline after a tracked event, and the events
 * explorer and counts. What the screens show and do is checked against the API.
 */
let instance: Instance;
let browser: Browser;
let page: Page;
let project: ProjectAccess;

interface Contact {
  id: string;
  email: string;
  subscribed: boolean;
  data: Record<string, unknown>;
}

const contactsUrl = () => `/p/${project.projectId}/contacts`;
const byEmail = async (email: string) => (await allContacts<Contact>(project.api)).find((c) => c.email === email);
const nav = () => page.getByRole('navigation', { name: 'Project screens' });
const table = () => page.getByRole('table', { name: 'Contacts' });
/** The emails in the contacts table, top to bottom. */
const emailsShown = async () => table().locator('tbody tr td:nth-child(2)').allTextContents();

beforeAll(async () => {
  ({ instance, project } = await startWithProject('Contacts shop'));
});

afterAll(() => stopDashboard(browser, instance));

describe('the Contacts and Events screens', { timeout: byMode({ embedded: 60_000, distributed: 180_000 }) }, () => {
  it('Chromium starts and the user signs in to their project', async () => {
    browser = await launchBrowser();
    page = await signInThroughForm(browser, instance, project, contactsUrl());
    await page.getByRole('heading', { name: 'Contacts', level: 1 }).waitFor();
    await page.getByText('No contacts yet.').waitFor();
  });

  it('a CSV import shows its progress to COMPLETED, the row it could not import, and its contacts in the table and the API', async () => {
    const csv = ['email,plan,seats', 'ann@example.com,pro,5', 'bob@example.com,free,1', 'not-an-email,pro,2', 'carol@example.com,pro,3'].join('\n');
    const accepted = page.waitForResponse((r) => new URL(r.url()).pathname === '/contacts/import' && r.request().method() === 'POST');
    await page.getByLabel('CSV file').setInputFiles({ name: 'contacts.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    const jobId = (await (await accepted).json()).data.jobId as string;

    const progress = page.getByRole('progressbar', { name: 'Import progress' });
    await page.getByRole('status').filter({ hasText: /^Completed: / }).waitFor();
    expect(await progress.getAttribute('value')).toBe('4');
    expect(await progress.getAttribute('max')).toBe('4');
    const job = (await project.api.get(`/contacts/import/${jobId}`)).body.data;
    expect(job).toMatchObject({ status: 'COMPLETED', total: 4, created: 3, failed: 1 });
    const errorRows = page.getByRole('table', { name: 'Import progress: errors' }).locator('tbody tr');
    expect(await errorRows.count()).toBe(1);
    expect(await errorRows.first().locator('td').allTextContents()).toEqual([String(job.errors[0].row), job.errors[0].message]);

    await expect.poll(emailsShown).toEqual(['carol@example.com', 'bob@example.com', 'ann@example.com']);
    const ann = await byEmail('ann@example.com');
    expect(ann).toMatchObject({ subscribed: true, data: { plan: 'pro', seats: 5 } });
    await page.getByText('3 contacts', { exact: false }).waitFor();
    await screenshot(page, 'contacts');
  });

  it('a new contact is checked with the API schema, created with typed data, edited, and deleted', async () => {
    await page.getByRole('button', { name: 'New contact' }).click();
    // The form takes the focus, and refuses what the API would.
    await expect.poll(() => page.evaluate<string>('document.activeElement?.getAttribute("name") ?? ""')).toBe('email');
    const form = page.getByRole('form', { name: 'New contact' });
    await form.getByLabel('Email', { exact: true }).fill('dana@');
    await form.getByRole('button', { name: 'Create contact' }).click();
    await form.getByText('Invalid email address').waitFor();
    await form.getByLabel('Email', { exact: true }).fill('Dana@Example.com');

    const addField = async (key: string, type: string, value: string) => {
      await form.getByRole('button', { name: 'Add field' }).click();
      const row = form.getByRole('group', { name: /^New field \d+$/ }).last();
      await row.getByLabel('Key').fill(key);
      const named = form.getByRole('group', { name: `Field ${key}` });
      await named.getByLabel('Type').selectOption({ label: type });
      if (type === 'Yes/no') await named.getByLabel('Value').selectOption({ label: value });
      else await named.getByLabel('Value').fill(value);
    };
    await addField('plan', 'Text', 'team');
    await addField('seats', 'Number', '12');
    await addField('trial', 'Yes/no', 'Yes');
    await addField('renewsAt', 'Date', '2027-01-15T10:30');
    await form.getByRole('button', { name: 'Create contact' }).click();

    await page.getByRole('heading', { name: 'dana@example.com', level: 1 }).waitFor();
    const id = new URL(page.url()).pathname.split('/').pop()!;
    const created = (await project.api.get(`/contacts/${id}`)).body.data;
    expect(created).toMatchObject({ email: 'dana@example.com', subscribed: true, data: { plan: 'team', seats: 12, trial: true } });
    // The date is the user's local time, stored as an ISO 8601 instant (a date for segments).
    expect(created.data.renewsAt).toBe(await page.evaluate(() => new Date('2027-01-15T10:30').toISOString()));
    const data = page.getByRole('table', { name: 'Data' });
    expect(await data.getByRole('row', { name: /seats/ }).getByRole('cell').textContent()).toBe('12');

    // Edit: a number changed, a key removed.
    await page.getByRole('button', { name: 'Edit contact' }).click();
    const edit = page.getByRole('form', { name: 'Edit dana@example.com' });
    await edit.getByRole('group', { name: 'Field seats' }).getByLabel('Value').fill('15');
    await edit.getByRole('button', { name: 'Remove plan' }).click();
    await edit.getByRole('button', { name: 'Save contact' }).click();
    await data.getByRole('row', { name: /seats/ }).getByRole('cell', { name: '15' }).waitFor();
    // Back from the form, the focus is where the user left for it.
    await expect.poll(() => page.evaluate<string>('document.activeElement?.textContent ?? ""')).toBe('Edit contact');
    const edited = (await project.api.get(`/contacts/${id}`)).body.data;
    expect(edited.data).toEqual({ seats: 15, trial: true, renewsAt: created.data.renewsAt });

    // The subscription switch.
    await page.getByRole('switch', { name: 'Subscribed to marketing email' }).uncheck();
    await eventually(async () => ((await project.api.get(`/contacts/${id}`)).body.data.subscribed === false ? true : undefined), 10_000, 'unsubscribed');
    await screenshot(page, 'contact');

    await page.getByRole('button', { name: 'Delete…' }).click();
    await page.getByRole('button', { name: 'Delete contact' }).click();
    await page.getByRole('heading', { name: 'Contacts', level: 1 }).waitFor();
    expect((await project.api.get(`/contacts/${id}`)).status).toBe(404);
    await expect.poll(emailsShown).not.toContain('dana@example.com');
  });

  it('a bulk unsubscribe of a selection unsubscribes exactly those contacts; the filter then lists them', async () => {
    await table().getByRole('checkbox', { name: 'Select ann@example.com' }).check();
    await table().getByRole('checkbox', { name: 'Select bob@example.com' }).check();
    await page.getByText('2 selected').waitFor();
    await page.getByRole('button', { name: 'Unsubscribe selected' }).click();
    await page.getByRole('status').filter({ hasText: /Completed: 2 of 2 processed/ }).waitFor();
    const all = await allContacts<Contact>(project.api);
    expect(Object.fromEntries(all.map((c) => [c.email, c.subscribed]))).toEqual({
      'ann@example.com': false,
      'bob@example.com': false,
      'carol@example.com': true,
    });
    await page.getByText('0 selected').waitFor();

    await page.getByLabel('Subscription').selectOption({ label: 'Unsubscribed' });
    await page.getByRole('button', { name: 'Apply' }).click();
    const unsubscribed = (await project.api.get('/contacts?subscribed=false')).body.data.contacts.map((c: Contact) => c.email);
    await expect.poll(emailsShown).toEqual(unsubscribed);
    expect(unsubscribed).toEqual(['bob@example.com', 'ann@example.com']);
    await page.getByLabel('Search by email').fill('ann');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(emailsShown).toEqual(['ann@example.com']);
  });

  it("a contact's page shows its timeline after a /v1/track, and its segments", async () => {
    const tracked = await project.api.post('/v1/track', { email: 'ann@example.com', event: 'plan-upgraded', data: { to: 'enterprise' } });
    expect(tracked.status).toBe(200);
    const ann = (await byEmail('ann@example.com'))!;
    const vip = await project.api.post('/segments', { name: 'VIP', type: 'STATIC' });
    await project.api.post(`/segments/${vip.body.data.id}/members`, { emails: ['ann@example.com'] });

    await table().getByRole('link', { name: 'ann@example.com' }).click();
    await page.getByRole('heading', { name: 'ann@example.com', level: 1 }).waitFor();
    const timeline = page.getByRole('list', { name: 'Events, newest first' });
    const events = (await project.api.get(`/events/contact/${ann.id}`)).body.data as { name: string }[];
    await expect.poll(() => timeline.locator('li .mono').allTextContents()).toEqual(events.map((e) => e.name));
    expect(events[0].name).toBe('plan-upgraded');
    await timeline.getByText('to: enterprise').waitFor();
    await page.getByRole('list', { name: 'Segments of this contact' }).getByRole('link', { name: 'VIP' }).waitFor();
    expect((await project.api.get(`/contacts/${ann.id}/segments`)).body.data.map((s: { name: string }) => s.name)).toEqual(['VIP']);
  });

  it('the Events screen: names with their counts, the explorer by name and contact, and counts over a range, as the API has them', async () => {
    await project.api.post('/v1/track', { email: 'bob@example.com', event: 'plan-upgraded' });
    await nav().getByRole('link', { name: 'Events' }).click();
    await page.getByRole('heading', { name: 'Events', level: 1 }).waitFor();

    const stats = (await project.api.get('/events/stats')).body.data as { total: number; events: { name: string; count: number }[] };
    const names = page.getByRole('table', { name: 'Event names' });
    await expect
      .poll(async () => (await names.locator('tbody tr').allInnerTexts()).map((t) => t.split('\t').slice(0, 2).map((s) => s.trim())))
      .toEqual(stats.events.map((e) => [e.name, String(e.count)]));
    // System names cannot be deleted, so none is offered.
    expect(await names.getByRole('button', { name: 'Delete contact.unsubscribed…' }).count()).toBe(0);

    // A name picks the explorer's filter.
    await names.getByRole('button', { name: 'Explore plan-upgraded' }).click();
    await expect.poll(() => page.evaluate<string>('document.activeElement?.textContent ?? ""')).toBe('Explorer');
    const explorer = page.getByRole('table', { name: 'Events' });
    const byName = (await project.api.get('/events?name=plan-upgraded')).body.data as { id: string }[];
    await expect.poll(() => explorer.locator('tbody tr').count()).toBe(byName.length);
    expect(byName).toHaveLength(2);

    // And a contact narrows it to theirs.
    await page.getByLabel('Contact email').fill('bob@example.com');
    await page.getByRole('button', { name: 'Show events' }).click();
    const bob = (await byEmail('bob@example.com'))!;
    const bobs = (await project.api.get(`/events/contact/${bob.id}?name=plan-upgraded`)).body.data as { id: string }[];
    await expect.poll(() => explorer.locator('tbody tr').count()).toBe(bobs.length);
    expect(bobs).toHaveLength(1);
    // The row names the contact by email once the contact is known (the ids come first).
    await expect.poll(() => explorer.locator('tbody tr td').nth(1).textContent()).toBe('bob@example.com');

    // Counts over the last 30 days (the default range) match the API's for the same days.
    const range = page.getByRole('table', { name: 'Counts in the range' });
    await page.getByRole('img', { name: /^Events per name from / }).locator('svg').first().waitFor();
    const counts = Object.fromEntries(stats.events.map((e) => [e.name, String(e.count)]));
    const shown = Object.fromEntries((await range.locator('tbody tr').allInnerTexts()).map((t) => t.split('\t').map((s) => s.trim())));
    expect(shown).toEqual(counts);
    await screenshot(page, 'events');

    // An email no contact has is said so, in the field.
    await page.getByLabel('Contact email').fill('nobody@example.com');
    await page.getByRole('button', { name: 'Show events' }).click();
    await page.getByText('No contact has the email nobody@example.com').waitFor();

    // A range that ends before it starts: the API's own message.
    await page.getByLabel('From', { exact: true }).fill('2026-02-10');
    await page.getByLabel('To', { exact: true }).fill('2026-02-01');
    await page.getByRole('button', { name: 'Show counts' }).click();
    await page.getByRole('alert').filter({ hasText: 'start must not be after end' }).waitFor();
  });

  it('a custom event name is deleted from the Events screen with all its records; one a segment uses is refused with the reason', async () => {
    await project.api.post('/v1/track', { email: 'carol@example.com', event: 'obsolete' });
    const used = { logic: 'AND', groups: [{ filters: [{ field: 'event.plan-upgraded', operator: 'triggered' }] }] };
    expect((await project.api.post('/segments', { name: 'Upgraded', condition: used })).status).toBe(201);
    await page.reload();
    const names = page.getByRole('table', { name: 'Event names' });
    await names.getByRole('button', { name: 'Delete obsolete…' }).click();
    await names.getByRole('button', { name: 'Delete obsolete events' }).click();
    await expect.poll(() => names.getByRole('button', { name: 'Explore obsolete' }).count()).toBe(0);
    expect((await project.api.get('/events/names')).body.data).not.toContain('obsolete');

    await names.getByRole('button', { name: 'Delete plan-upgraded…' }).click();
    await names.getByRole('button', { name: 'Delete plan-upgraded events' }).click();
    await page.getByRole('alert').filter({ hasText: 'Event "plan-upgraded" is in use by' }).waitFor();
    expect((await project.api.get('/events?name=plan-upgraded')).body.data).toHaveLength(2);
  });

  it('the table pages by cursor: Next shows the next contacts as the API pages them, Previous comes back; a selection spans pages', async () => {
    for (let i = 0; i < 26; i++) expect((await project.api.post('/contacts', { email: `page${String(i).padStart(2, '0')}@example.com` })).status).toBe(201);
    await nav().getByRole('link', { name: 'Contacts' }).click();
    await page.getByRole('heading', { name: 'Contacts', level: 1 }).waitFor();
    const first = (await project.api.get('/contacts?limit=25')).body.data;
    const second = (await project.api.get(`/contacts?limit=25&cursor=${first.cursor}`)).body.data;
    await expect.poll(emailsShown).toEqual(first.contacts.map((c: Contact) => c.email));
    await page.getByText(`Page 1 · ${first.total} contacts`).waitFor();
    await page.getByRole('checkbox', { name: 'Select every contact on this page' }).check();
    await page.getByText('25 selected').waitFor();

    await page.getByRole('button', { name: 'Next page' }).click();
    await expect.poll(emailsShown).toEqual(second.contacts.map((c: Contact) => c.email));
    await page.getByText('Page 2').waitFor();
    expect(await page.getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);
    await table().getByRole('checkbox', { name: `Select ${second.contacts[0].email}` }).check();
    await page.getByText('26 selected').waitFor();
    await page.getByRole('button', { name: 'Previous page' }).click();
    await expect.poll(emailsShown).toEqual(first.contacts.map((c: Contact) => c.email));
    // Unselecting this page keeps the one chosen on the other.
    await page.getByRole('checkbox', { name: 'Select every contact on this page' }).uncheck();
    await page.getByText('1 selected').waitFor();
  });

  it('no page threw', () => {
    expect(errors).toEqual([]);
  });
});
