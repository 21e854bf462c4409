import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectAccess } from '../harness/accounts.ts';
import { errors, launchBrowser, screenshot } from '../harness/browser.ts';
import { signInThroughForm, startWithProject, stopDashboard } from '../harness/dashboard.ts';
import { publishRecords, uniqueDomain, type Domain, type DomainRecord } from '../harness/domains.ts';
import { byMode, type Instance } from '../harness/instance.ts';

/**
 * The Domains and Templates screens in a real browser: a domain added on screen, the records it
 * shows published in the test DNS server and verified with the Verify button; a template written
 * in the HTML editor whose sandboxed preview shows a contact's data, saved and test-sent to the
 * SMTP sink. What the screens show is checked against the API.
 */
/** How long a check of the page or the API may take to come true (a distributed hop is slower). */
const POLL = { timeout: byMode({ embedded: 10_000, distributed: 60_000 }) };
let instance: Instance;
let browser: Browser;
let page: Page;
let project: ProjectAccess;
const domainName = uniqueDomain('dash');

const domains = async () => (await instance.api.get(`/domains/project/${project.projectId}`, { auth: project.token })).body.data as Domain[];
const preview = () => page.frameLocator('iframe[title="Preview of the email"]').locator('body');

beforeAll(async () => {
  ({ instance, project } = await startWithProject('Template shop'));
  const contact = await project.api.post('/contacts', { email: 'ann@example.com', data: { firstName: 'Ann', company: 'Acme & Co' } });
  expect(contact.status, JSON.stringify(contact.body)).toBe(201);
});

afterAll(() => stopDashboard(browser, instance));

describe('the Domains and Templates screens', { timeout: byMode({ embedded: 60_000, distributed: 180_000 }) }, () => {
  it('Chromium starts and the admin signs in to the Domains screen', async () => {
    browser = await launchBrowser();
    page = await signInThroughForm(browser, instance, project, `/p/${project.projectId}/domains`);
    await page.getByRole('heading', { name: 'Domains', level: 1 }).waitFor();
    await page.getByText('No domain yet').waitFor();
  });

  it("a domain the API refuses shows the API's message on the field and adds nothing", async () => {
    const refused = await instance.api.post('/domains', { projectId: project.projectId, domain: 'https://example.com/path' }, { auth: project.token });
    expect(refused.status).toBe(422);
    const message = refused.body.error.errors.find((e: { field: string }) => e.field === 'domain').message;
    await page.getByLabel('Domain name').fill('https://example.com/path');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.getByText(message, { exact: true }).waitFor();
    expect(await page.getByLabel('Domain name').getAttribute('aria-invalid')).toBe('true');
    expect(await domains()).toEqual([]);
  });

  it('a domain verified against the test DNS server: the records shown are published, Verify finds them', async () => {
    await page.getByLabel('Domain name').fill(domainName);
    await page.getByRole('button', { name: 'Add domain' }).click();
    const card = page.getByRole('region', { name: domainName });
    await card.getByText('Not verified').waitFor();

    // The records as the screen shows them, in the API's order.
    const [added] = await domains();
    const rows = card.getByRole('row');
    await expect.poll(() => rows.count(), POLL).toBe(added.records.length + 1);
    const shown: DomainRecord[] = [];
    for (let i = 1; i <= added.records.length; i++) {
      const cells = rows.nth(i).getByRole('cell');
      shown.push({
        type: (await cells.nth(0).textContent()) as DomainRecord['type'],
        name: (await cells.nth(1).locator('.record-value').textContent())!,
        value: (await cells.nth(2).locator('.record-value').textContent())!,
        required: (await cells.nth(3).textContent()) === 'Required',
      });
      await cells.nth(1).getByRole('button', { name: /^Copy / }).waitFor();
      await cells.nth(2).getByRole('button', { name: /^Copy / }).waitFor();
    }
    expect(shown).toEqual(added.records);

    // Nothing published yet: Verify says which records are missing.
    await card.getByRole('button', { name: `Verify ${domainName}` }).click();
    await expect.poll(() => rows.nth(1).getByRole('cell').nth(4).textContent(), POLL).toBe('Missing');
    expect((await domains())[0].verified).toBe(false);

    publishRecords(instance.dns, shown);
    await card.getByRole('button', { name: `Verify ${domainName}` }).click();
    await card.getByText('Verified', { exact: true }).waitFor();
    for (let i = 1; i <= shown.length; i++) expect(await rows.nth(i).getByRole('cell').nth(4).textContent()).toBe('Found');
    const [verified] = await domains();
    expect(verified.verified).toBe(true);
    expect(verified.verifiedAt).not.toBeNull();
    await screenshot(page, 'domains');
  });

  it('a new template is checked with the API schema; its preview renders the chosen contact’s data, escaped, in a sandbox', async () => {
    await page.getByRole('navigation', { name: 'Project screens' }).getByRole('link', { name: 'Templates' }).click();
    await page.getByText('No template yet').waitFor();
    await page.getByRole('link', { name: 'New template' }).click();
    await page.getByRole('heading', { name: 'New template' }).waitFor();

    await page.getByRole('button', { name: 'Create template' }).click();
    await page.getByText('Subject is required').waitFor();
    expect((await project.api.get('/templates')).body.data.total).toBe(0);

    await page.getByLabel('Name', { exact: true }).fill('Welcome');
    await page.getByLabel('Subject').fill('Hi {{ firstName ?? there }}');
    await page.getByLabel('From address').fill(`hello@${domainName}`);
    const editor = page.getByRole('textbox', { name: 'HTML body' });
    await editor.click();
    await page.keyboard.press('ControlOrMeta+a');
    await page.keyboard.press('Delete');
    await editor.pressSequentially('<h1>Hello {{ firstName ?? friend }}</h1><p>from {{ company }}', { delay: 5 });

    // No contact chosen: fallbacks.
    await expect.poll(() => preview().textContent(), POLL).toContain('Hello friend');
    await page.getByLabel('Find a contact by email').fill('ann@');
    await page.getByLabel('Preview with contact').selectOption({ label: 'ann@example.com' });
    await expect.poll(() => preview().textContent(), POLL).toContain('Hello Ann');
    await expect.poll(() => preview().locator('p').textContent(), POLL).toContain('from Acme & Co');
    expect(await page.getByTestId('preview-subject').textContent()).toBe('Hi Ann');
    expect(await page.locator('iframe[title="Preview of the email"]').getAttribute('sandbox')).toBe('');

    await page.getByRole('button', { name: 'Create template' }).click();
    await page.getByRole('heading', { name: 'Template Welcome' }).waitFor();
    const { templates } = (await project.api.get('/templates')).body.data;
    expect(templates).toHaveLength(1);
    expect(templates[0]).toMatchObject({ name: 'Welcome', subject: 'Hi {{ firstName ?? there }}', from: `hello@${domainName}`, type: 'TRANSACTIONAL' });
    expect(templates[0].body).toContain('<h1>Hello {{ firstName ?? friend }}</h1><p>from {{ company }}');
  });

  it('the template is test-sent to the contact and reaches the SMTP sink, marked as a test, rendered with its data', async () => {
    await page.getByLabel('Preview with contact').selectOption({ label: 'ann@example.com' });
    await expect.poll(() => page.getByLabel('Send the test to').inputValue(), POLL).toBe('ann@example.com');
    await page.getByRole('button', { name: 'Send test' }).click();
    await page.getByText('Sent to ann@example.com.').waitFor();
    const mail = await instance.smtp.waitForMailTo('ann@example.com', byMode({ embedded: 20_000, distributed: 90_000 }));
    expect(mail.parsed.subject).toBe('[TEST] Hi Ann');
    expect(mail.parsed.html).toContain('Hello Ann');
    expect(mail.parsed.html).toContain('from Acme &amp; Co');
    await screenshot(page, 'templates');
  });

  it('an edit is saved as a PATCH; the list finds templates by name and type as the API does', async () => {
    await page.getByLabel('Type').selectOption('MARKETING');
    await page.getByRole('button', { name: 'Save template' }).click();
    await expect.poll(async () => (await project.api.get('/templates')).body.data.templates[0].type, POLL).toBe('MARKETING');
    await project.api.post('/templates', { name: 'Receipt', subject: 'Your receipt', body: '<p>Thanks</p>', from: `billing@${domainName}` });

    await page.getByRole('navigation', { name: 'Project screens' }).getByRole('link', { name: 'Templates' }).click();
    const rows = page.getByRole('row');
    await expect.poll(() => rows.count(), POLL).toBe(3);
    await page.getByLabel('Type').selectOption('MARKETING');
    const marketing = (await project.api.get('/templates?type=MARKETING')).body.data.templates;
    await expect.poll(() => rows.count(), POLL).toBe(marketing.length + 1);
    await rows.nth(1).getByRole('link', { name: 'Welcome' }).waitFor();
    await page.getByLabel('Type').selectOption('');
    await page.getByLabel('Search by name').fill('rece');
    await expect.poll(() => rows.count(), POLL).toBe(2);
    await rows.nth(1).getByRole('link', { name: 'Receipt' }).waitFor();
    expect(errors).toEqual([]);
  });
});
