import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../../domain/limits.ts';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { eventually, type ApiResponse, type Job } from '../harness/client.ts';
import { verifiedDomain } from '../harness/domains.ts';
import { startInstance, type Instance } from '../harness/instance.ts';

/**
 * Every size a client controls has a limit (domain/limits.ts). One past it is refused with a 413
 * PAYLOAD_TOO_LARGE (a body or file) or a 422 VALIDATION_ERROR naming the field, and nothing is
 * stored. Requests stay cheap enough for the distributed run: one instance, one project.
 */
const keys = (n: number, prefix = 'k') => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, i]));
const emails = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `${tag}-${i}@example.com`);
const condition = (groups: number, filters = 1) => ({
  logic: 'OR',
  groups: Array.from({ length: groups }, () => ({
    filters: Array.from({ length: filters }, () => ({ field: 'email', operator: 'contains', value: 'x' })),
  })),
});

function expectRefused(res: ApiResponse, status: 413 | 422, field?: string): void {
  expect(res.status, JSON.stringify(res.body).slice(0, 500)).toBe(status);
  expect(res.body.success).toBe(false);
  expect(res.body.error.code).toBe(status === 413 ? 'PAYLOAD_TOO_LARGE' : 'VALIDATION_ERROR');
  expect(res.body.error.statusCode).toBe(status);
  if (field) expect(res.body.error.errors.map((e: { field: string }) => e.field)).toContain(field);
}

/** Each case (what it is, its request, the field named) is a 422 naming its field; a failure names the case. */
async function expectEachRefused(cases: [string, Promise<ApiResponse>, string][]): Promise<void> {
  for (const [what, res, field] of cases) {
    try {
      expectRefused(await res, 422, field);
    } catch (err) {
      throw new Error(`${what}: ${(err as Error).message}`);
    }
  }
}

describe('input limits', () => {
  let instance: Instance;
  let project: ProjectAccess;
  let from: string;

  /** How many of each kind the project has: a refused request must leave these as they were. */
  const counts = async () => {
    const [contacts, templates, segments, campaigns, events] = await Promise.all([
      project.api.get('/contacts'),
      project.api.get('/templates'),
      project.api.get('/segments'),
      project.api.get('/campaigns'),
      project.api.get('/events?limit=100'),
    ]);
    return {
      contacts: contacts.body.data.total,
      templates: templates.body.data.total,
      segments: segments.body.data.length,
      campaigns: campaigns.body.data.total,
      events: events.body.data.length,
    };
  };

  beforeAll(async () => {
    instance = await startInstance();
    project = await newProject(instance, 'Limits');
    from = `news@${(await verifiedDomain(instance, project)).domain}`;
  });
  afterAll(() => instance?.dispose());

  it('string lengths: names, subjects, bodies, emails, event names, descriptions; each one past the limit is a 422 naming it', async () => {
    const before = await counts();
    const over = (n: number) => 'x'.repeat(n + 1);
    const template = { name: 'T', subject: 'S', body: '<p>B</p>', from };
    const campaign = { name: 'C', subject: 'S', body: '<p>B</p>', from, audienceType: 'ALL' };
    const cases: [string, Promise<ApiResponse>, string][] = [
      ['contact email', project.api.post('/contacts', { email: `${over(LIMITS.email - '@example.com'.length)}@example.com` }), 'email'],
      ['event name', project.api.post('/v1/track', { email: 'a@example.com', event: over(LIMITS.eventName) }), 'event'],
      ['template name', project.api.post('/templates', { ...template, name: over(LIMITS.name) }), 'name'],
      ['template subject', project.api.post('/templates', { ...template, subject: over(LIMITS.subject) }), 'subject'],
      ['template body', project.api.post('/templates', { ...template, body: over(LIMITS.htmlBodyBytes) }), 'body'],
      ['template description', project.api.post('/templates', { ...template, description: over(LIMITS.description) }), 'description'],
      ['campaign name', project.api.post('/campaigns', { ...campaign, name: over(LIMITS.name) }), 'name'],
      ['campaign body', project.api.post('/campaigns', { ...campaign, body: over(LIMITS.htmlBodyBytes) }), 'body'],
      ['segment name', project.api.post('/segments', { name: over(LIMITS.name), type: 'STATIC' }), 'name'],
      ['send subject', project.api.post('/v1/send', { to: 'a@example.com', from, subject: over(LIMITS.subject), body: 'b' }), 'subject'],
      ['send body', project.api.post('/v1/send', { to: 'a@example.com', from, subject: 's', body: over(LIMITS.sendBodyChars) }), 'body'],
      ['project name', instance.api.post('/projects', { name: over(LIMITS.projectName) }, { auth: project.token }), 'name'],
      ['contact search', project.api.get(`/contacts?search=${over(LIMITS.search)}`), 'search'],
    ];
    await expectEachRefused(cases);
    expect(await counts()).toEqual(before);
    const projects = await instance.api.get('/projects', { auth: project.token });
    expect(projects.body.data).toHaveLength(1);
  });

  it('`data` on contacts, /v1/track and /v1/send: key count, key length, value length and depth', async () => {
    const before = await counts();
    const cases: [string, Promise<ApiResponse>, string][] = [
      ['too many keys', project.api.post('/contacts', { email: 'd1@example.com', data: keys(LIMITS.data.keysPerRequest + 1) }), 'data'],
      ['long key', project.api.post('/contacts', { email: 'd2@example.com', data: { ['k'.repeat(LIMITS.data.keyLength + 1)]: 1 } }), `data.${'k'.repeat(LIMITS.data.keyLength + 1)}`],
      ['long value', project.api.post('/contacts', { email: 'd3@example.com', data: { note: 'x'.repeat(LIMITS.data.stringValue + 1) } }), 'data.note'],
      ['nested object', project.api.post('/contacts', { email: 'd4@example.com', data: { address: { city: 'Paris' } } }), 'data.address'],
      ['array value', project.api.post('/contacts', { email: 'd5@example.com', data: { tags: ['a', 'b'] } }), 'data.tags'],
      ['track: too many keys', project.api.post('/v1/track', { email: 'd6@example.com', event: 'e', data: keys(LIMITS.data.keysPerRequest + 1) }), 'data'],
      ['track: nested in a non-persistent value', project.api.post('/v1/track', { email: 'd7@example.com', event: 'e', data: { a: { value: { b: 1 }, persistent: false } } }), 'data.a'],
      ['send: too many keys', project.api.post('/v1/send', { to: 'd8@example.com', from, subject: 's', body: 'b', data: keys(LIMITS.data.keysPerRequest + 1) }), 'data'],
    ];
    await expectEachRefused(cases);
    expect(await counts()).toEqual(before);
  });

  it(`a contact keeps at most ${LIMITS.data.keysPerContact} data keys: the call that would pass it is refused and the contact stays as it was`, async () => {
    const email = 'many-keys@example.com';
    const created = await project.api.post('/contacts', { email, data: keys(100, 'a') });
    expect(created.status).toBe(201);
    expect((await project.api.post('/v1/track', { email, event: 'grew', data: keys(100, 'b') })).status).toBe(200);
    const eventsBefore = (await counts()).events;

    const refused = await project.api.post('/v1/track', { email, event: 'grew', data: keys(100, 'c') });
    expectRefused(refused, 422, 'data');
    expectRefused(await project.api.patch(`/contacts/${created.body.data.id}`, { data: keys(51, 'd') }), 422, 'data');
    const contact = await project.api.get(`/contacts/${created.body.data.id}`);
    expect(Object.keys(contact.body.data.data)).toHaveLength(200);
    expect((await counts()).events).toBe(eventsBefore);
    // Under the cap, and removing keys, still work.
    expect((await project.api.patch(`/contacts/${created.body.data.id}`, { data: { ...keys(50, 'd'), a0: null } })).status).toBe(200);
    const after = await project.api.get(`/contacts/${created.body.data.id}`);
    expect(Object.keys(after.body.data.data)).toHaveLength(249);
  });

  it('arrays: send recipients, attachments, bulk ids, static segment members and filter groups', async () => {
    const segment = await project.api.post('/segments', { name: 'Hand picked', type: 'STATIC' });
    expect(segment.status).toBe(201);
    const before = await counts();
    const attachment = { filename: 'a.txt', content: Buffer.from('hello').toString('base64'), contentType: 'text/plain' };
    const cases: [string, Promise<ApiResponse>, string][] = [
      ['recipients', project.api.post('/v1/send', { to: emails(LIMITS.send.recipients + 1, 'to'), from, subject: 's', body: 'b' }), 'to'],
      ['attachments', project.api.post('/v1/send', { to: 'att@example.com', from, subject: 's', body: 'b', attachments: Array(LIMITS.send.attachments + 1).fill(attachment) }), 'attachments'],
      ['headers', project.api.post('/v1/send', { to: 'hdr@example.com', from, subject: 's', body: 'b', headers: Object.fromEntries(Array.from({ length: LIMITS.send.headers + 1 }, (_, i) => [`X-H${i}`, 'v'])) }), 'headers'],
      ['bulk ids', project.api.post('/contacts/bulk-delete', { contactIds: Array.from({ length: LIMITS.bulkIds + 1 }, (_, i) => `id-${i}`) }), 'contactIds'],
      ['segment members', project.api.post(`/segments/${segment.body.data.id}/members`, { emails: emails(LIMITS.segmentMembers + 1, 'member') }), 'emails'],
      ['filter groups', project.api.post('/segments', { name: 'Too wide', condition: condition(LIMITS.filter.groups + 1) }), 'condition.groups'],
      ['filters in a group', project.api.post('/segments', { name: 'Too deep', condition: condition(1, LIMITS.filter.filtersPerGroup + 1) }), 'condition.groups.0.filters'],
    ];
    await expectEachRefused(cases);
    expect(await counts()).toEqual(before);
    const members = await project.api.get(`/segments/${segment.body.data.id}/contacts`);
    expect(members.body.data.total).toBe(0);
  });

  it('attachments over 10 MB together are a 422 on attachments; a send body over its limit is a 413; nothing is sent', async () => {
    const before = await counts();
    // Two attachments of 5.5 MB: each fine, together over 10 MB; the request (~15 MB of JSON) fits the body limit.
    const half = Buffer.alloc(Math.ceil(LIMITS.send.attachmentBytes / 2) + 512 * 1024, 7).toString('base64');
    const big = { to: 'big@example.com', from, subject: 's', body: 'b', attachments: [1, 2].map((i) => ({ filename: `${i}.bin`, content: half, contentType: 'application/octet-stream' })) };
    expect(JSON.stringify(big).length).toBeLessThan(LIMITS.body.sendBytes);
    expectRefused(await project.api.post('/v1/send', big), 422, 'attachments');

    const huge = { ...big, attachments: [{ filename: 'x.bin', content: 'A'.repeat(LIMITS.body.sendBytes), contentType: 'application/octet-stream' }] };
    expectRefused(await project.api.post('/v1/send', huge), 413);
    expect(await counts()).toEqual(before);
    expect(instance.smtp.messages.filter((m) => m.rcptTo.includes('big@example.com'))).toHaveLength(0);
  });

  it('JSON bodies past their route limit are a 413 PAYLOAD_TOO_LARGE, and nothing is stored', async () => {
    const before = await counts();
    const over = 'x'.repeat(LIMITS.body.defaultBytes);
    expectRefused(await project.api.post('/v1/track', { email: 'large@example.com', event: 'e', data: { a: over } }), 413);
    expectRefused(await project.api.post('/segments', { name: 'Large', description: over }), 413);
    const content = 'x'.repeat(LIMITS.body.contentBytes);
    expectRefused(await project.api.post('/templates', { name: 'T', subject: 'S', body: content, from }), 413);
    expect(await counts()).toEqual(before);
  });

  it('a JSON body that is not an object (null, an array, a string) is a 422 on body and does nothing', async () => {
    // Found by the fuzzer: `null` was read as `{}`, and POST /campaigns/:id/send with it sent the campaign.
    const campaign = await project.api.post('/campaigns', { name: 'Not yet', subject: 's', body: '<p>b</p>', from, audienceType: 'ALL' });
    expect(campaign.status).toBe(200);
    const before = await counts();
    const json = { 'content-type': 'application/json' };
    for (const raw of ['null', '[]', '"x"', '42']) {
      expectRefused(await project.api.post(`/campaigns/${campaign.body.data.id}/send`, undefined, { raw, headers: json }), 422, 'body');
      expectRefused(await project.api.post('/contacts', undefined, { raw, headers: json }), 422, 'body');
    }
    expect((await project.api.get(`/campaigns/${campaign.body.data.id}`)).body.data.status).toBe('DRAFT');
    expect(await counts()).toEqual(before);
  });

  it(`objects and arrays nested more than ${LIMITS.body.depth} deep anywhere in a body are a 422 on body, never a 500, and change nothing`, async () => {
    // Found by probing: a 5,000-deep triggerConfig overflowed the stack (a 500). Written as JSON
    // text: JSON.stringify itself cannot go that deep.
    const nest = (levels: number) => `${'[{"a":'.repeat(levels)}1${'}]'.repeat(levels)}`;
    const json = { 'content-type': 'application/json' };
    const post = (path: string, raw: string) => project.api.post(path, undefined, { raw, headers: json });
    const before = await counts();
    const workflowsBefore = (await project.api.get('/workflows')).body.data.total;
    for (const levels of [LIMITS.body.depth / 2, 2_500]) {
      const deep = nest(levels);
      expectRefused(await post('/workflows', `{"name":"Deep","triggerType":"EVENT","eventName":"deep","triggerConfig":${deep}}`), 422, 'body');
      expectRefused(await post('/contacts', `{"email":"deep@example.com","data":{"x":${deep}}}`), 422, 'body');
      expectRefused(await post('/segments', `{"name":"Deep","condition":${deep}}`), 422, 'body');
    }
    expect(await counts()).toEqual(before);
    expect((await project.api.get('/workflows')).body.data.total).toBe(workflowsBefore);
  });

  it('a body with a "__proto__" key anywhere is a 422 on body and changes nothing', async () => {
    // JSON.parse makes it an own key; copied into an object, it would set that object's prototype.
    const before = await counts();
    const json = { 'content-type': 'application/json' };
    for (const raw of ['{"email":"proto@example.com","data":{"__proto__":"x"}}', '{"__proto__":{"email":"proto@example.com"}}']) {
      expectRefused(await project.api.post('/contacts', undefined, { raw, headers: json }), 422, 'body');
    }
    expect(await counts()).toEqual(before);
  });

  it(`CSV import: a file over 5 MB is a 413 (no job); over ${LIMITS.csvRows} rows the job fails saying so; no contacts either way`, async () => {
    const before = await counts();
    const upload = (csv: string) => {
      const form = new FormData();
      form.append('file', new Blob([csv], { type: 'text/csv' }), 'contacts.csv');
      return project.api.post('/contacts/import', undefined, { raw: form });
    };
    const row = 'someone-with-a-long-address@example.com,a note that pads the row\n';
    const tooBig = `email,note\n${row.repeat(Math.ceil(LIMITS.body.csvBytes / row.length) + 1)}`;
    expectRefused(await upload(tooBig), 413);

    const rows = Array.from({ length: LIMITS.csvRows + 1 }, (_, i) => `r${i}@x.io`);
    const tooMany = `email\n${rows.join('\n')}\n`;
    expect(Buffer.byteLength(tooMany)).toBeLessThan(LIMITS.body.csvBytes);
    // Rows are counted by the job, which reads the file off the request path.
    const accepted = await upload(tooMany);
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202);
    const failed = await eventually(async () => {
      const job = (await project.api.get(`/contacts/import/${accepted.body.data.jobId}`)).body.data as Job;
      return job.status === 'QUEUED' || job.status === 'RUNNING' ? undefined : job;
    }, 30_000, 'the import to end');
    expect(failed).toMatchObject({ status: 'FAILED', processed: 0, created: 0, updated: 0 });
    expect(failed.errors.map((e) => e.message)).toEqual([`The CSV has more than ${LIMITS.csvRows} rows; at most ${LIMITS.csvRows} per import (split the file)`]);
    expect(await counts()).toEqual(before);

    // A file within both limits is taken (a job is queued; its contacts are not waited for here).
    const fits = await upload(`email\n${rows.slice(0, 3).join('\n')}\n`);
    expect(fits.status, JSON.stringify(fits.body)).toBe(202);
  });
});
