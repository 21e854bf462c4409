import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { eventually, sleep, waitForDelivered } from '../harness/client.ts';
import { verifiedDomain, type Domain } from '../harness/domains.ts';
import { QUIET_MS, byMode, startInstance, type Instance } from '../harness/instance.ts';
import { untilIdle } from '../harness/crash.ts';
import { emailIdOf, type ReceivedMessage } from '../harness/smtp-sink.ts';

let n = 0;
const unique = (tag: string) => `${tag}-${++n}-${Date.now().toString(36)}`;

interface Setup {
  project: ProjectAccess;
  domain: Domain;
}

async function setup(instance: Instance): Promise<Setup> {
  const project = await newProject(instance, 'Campaigns');
  return { project, domain: await verifiedDomain(instance, project) };
}

async function addContacts(s: Setup, contacts: { email: string; subscribed?: boolean; data?: Record<string, unknown> }[]) {
  for (const c of contacts) {
    const res = await s.project.api.post('/contacts', { subscribed: true, ...c });
    expect(res.status).toBeLessThan(300);
  }
}

const campaignBody = (s: Setup, subject: string, extra: Record<string, unknown> = {}) => ({
  name: 'Spring sale',
  subject,
  body: '<p>Hello {{name ?? friend}}, spring is here. <a href="https://shop.example/sale">Shop</a></p>',
  from: `news@${s.domain.domain}`,
  fromName: 'Shop',
  audienceType: 'ALL',
  ...extra,
});

async function createCampaign(s: Setup, subject: string, extra: Record<string, unknown> = {}) {
  const res = await s.project.api.post('/campaigns', campaignBody(s, subject, extra));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as { id: string; status: string };
}

async function waitForStatus(s: Setup, id: string, status: string, timeoutMs = byMode({ embedded: 20_000, distributed: 60_000 })) {
  return eventually(
    async () => {
      const res = await s.project.api.get(`/campaigns/${id}`);
      return res.body.data?.status === status ? res.body.data : undefined;
    },
    timeoutMs,
    `campaign ${id} to be ${status}`,
  );
}

const recipientsOf = (instance: Instance, subject: string) =>
  instance.smtp.messages.filter((m) => m.parsed.subject === subject).flatMap((m) => m.rcptTo).sort();

const expectInvalidState = (res: { status: number; body: any }) => {
  expect(res.status, JSON.stringify(res.body)).toBe(409);
  expect(res.body.error.code).toBe('INVALID_STATE');
};

describe('campaigns', () => {
  let instance: Instance;

  beforeAll(async () => {
    instance = await startInstance({ env: { EMAIL_RATE_PER_SECOND: '0' } });
  });
  afterAll(() => instance?.dispose());

  it('every forbidden move answers 409 INVALID_STATE, through DRAFT, SENDING, SENT, SCHEDULED and CANCELLED', async () => {
    const s = await setup(instance);
    await addContacts(s, [{ email: `${unique('a')}@customer.example` }]);
    const subject = unique('rules');
    const c = await createCampaign(s, subject);
    expect(c.status).toBe('DRAFT');
    expectInvalidState(await s.project.api.post(`/campaigns/${c.id}/cancel`));

    const sent = await s.project.api.post(`/campaigns/${c.id}/send`, {});
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body).toMatchObject({ success: true, data: { id: c.id }, message: expect.any(String) });
    expect(['SENDING', 'SENT']).toContain(sent.body.data.status);

    const done = await waitForStatus(s, c.id, 'SENT');
    expect(done).toMatchObject({ recipientCount: 1, sentAt: expect.any(String) });
    expectInvalidState(await s.project.api.put(`/campaigns/${c.id}`, { name: 'Renamed' }));
    expectInvalidState(await s.project.api.delete(`/campaigns/${c.id}`));
    expectInvalidState(await s.project.api.post(`/campaigns/${c.id}/send`, {}));
    expectInvalidState(await s.project.api.post(`/campaigns/${c.id}/cancel`));

    const later = await createCampaign(s, unique('later'));
    const scheduledFor = new Date(Date.now() + 3_600_000).toISOString();
    const scheduled = await s.project.api.post(`/campaigns/${later.id}/send`, { scheduledFor });
    expect(scheduled.body.data).toMatchObject({ status: 'SCHEDULED', scheduledFor });
    expectInvalidState(await s.project.api.delete(`/campaigns/${later.id}`));
    const renamed = await s.project.api.put(`/campaigns/${later.id}`, { name: 'Renamed' });
    expect(renamed.body.data).toMatchObject({ name: 'Renamed', status: 'SCHEDULED' });
    const cancelled = await s.project.api.post(`/campaigns/${later.id}/cancel`);
    expect(cancelled.body.data.status).toBe('CANCELLED');
    expectInvalidState(await s.project.api.put(`/campaigns/${later.id}`, { name: 'Again' }));
    expectInvalidState(await s.project.api.post(`/campaigns/${later.id}/send`, {}));
    expectInvalidState(await s.project.api.post(`/campaigns/${later.id}/cancel`));
    const deleted = await s.project.api.delete(`/campaigns/${later.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ success: true, message: expect.any(String) });
    expect((await s.project.api.get(`/campaigns/${later.id}`)).status).toBe(404);

    const draft = await createCampaign(s, unique('draft'));
    expect((await s.project.api.delete(`/campaigns/${draft.id}`)).status).toBe(200);
  });

  it('a past scheduledFor, an empty audience, a bad condition and an unverified sender are refused', async () => {
    const s = await setup(instance);
    const c = await createCampaign(s, unique('empty'));
    const past = await s.project.api.post(`/campaigns/${c.id}/send`, { scheduledFor: new Date(Date.now() - 60_000).toISOString() });
    expect(past.status).toBe(422);
    expect(past.body.error.errors[0].field).toBe('scheduledFor');
    const empty = await s.project.api.post(`/campaigns/${c.id}/send`, {});
    expect(empty.status).toBe(422);
    expect((await s.project.api.get(`/campaigns/${c.id}`)).body.data.status).toBe('DRAFT');

    const bad = await s.project.api.post('/campaigns', campaignBody(s, 'x', {
      audienceType: 'FILTERED',
      audienceCondition: { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'bogus', value: 'x' }] }] },
    }));
    expect(bad.status).toBe(422);
    expect(bad.body.error.errors[0].field).toBe('audienceCondition.groups.0.filters.0');
    const noCondition = await s.project.api.post('/campaigns', campaignBody(s, 'x', { audienceType: 'FILTERED' }));
    expect(noCondition.body.error.errors[0].field).toBe('audienceCondition');
    const noSegment = await s.project.api.post('/campaigns', campaignBody(s, 'x', { audienceType: 'SEGMENT' }));
    expect(noSegment.body.error.errors[0].field).toBe('segmentId');
    const unknownSegment = await s.project.api.post('/campaigns', campaignBody(s, 'x', { audienceType: 'SEGMENT', segmentId: 'nope' }));
    expect(unknownSegment.body.error.errors[0].field).toBe('segmentId');
    const unverified = await s.project.api.post('/campaigns', campaignBody(s, 'x', { from: 'news@elsewhere.example' }));
    expect(unverified.status).toBe(403);
    expect(unverified.body.error.code).toBe('DOMAIN_NOT_VERIFIED');

    const other = await setup(instance);
    expect((await other.project.api.get(`/campaigns/${c.id}`)).status).toBe(404);
    expect((await other.project.api.post(`/campaigns/${c.id}/send`, {})).status).toBe(404);
  });

  it('each audience is received by exactly its subscribed contacts, never an unsubscribed one', async () => {
    const s = await setup(instance);
    const tag = unique('aud');
    const email = (name: string) => `${tag}-${name}@customer.example`;
    await addContacts(s, [
      { email: email('pro1'), data: { plan: 'pro', name: 'Pia' } },
      { email: email('pro2'), data: { plan: 'pro' } },
      { email: email('free'), data: { plan: 'free' } },
      { email: email('prooff'), subscribed: false, data: { plan: 'pro' } },
      { email: email('off'), subscribed: false },
    ]);
    const condition = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] };
    const dynamic = await s.project.api.post('/segments', { name: unique('pros'), condition });
    const fixed = await s.project.api.post('/segments', { name: unique('picked'), type: 'STATIC' });
    await s.project.api.post(`/segments/${fixed.body.data.id}/members`, { emails: [email('free'), email('off'), email('pro2')] });

    const cases: [string, Record<string, unknown>, string[]][] = [
      ['all', { audienceType: 'ALL' }, ['pro1', 'pro2', 'free']],
      ['dynamic', { audienceType: 'SEGMENT', segmentId: dynamic.body.data.id }, ['pro1', 'pro2']],
      ['static', { audienceType: 'SEGMENT', segmentId: fixed.body.data.id }, ['free', 'pro2']],
      ['filtered', { audienceType: 'FILTERED', audienceCondition: { logic: 'OR', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'free' }] }] } }, ['free']],
    ];
    const started: [string, string, string[]][] = [];
    for (const [name, audience, expected] of cases) {
      const subject = unique(`${name}`);
      const c = await createCampaign(s, subject, audience);
      const res = await s.project.api.post(`/campaigns/${c.id}/send`, {});
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      started.push([c.id, subject, expected.map(email).sort()]);
    }
    for (const [id, subject, expected] of started) {
      const done = await waitForStatus(s, id, 'SENT');
      expect(done.recipientCount).toBe(expected.length);
      await eventually(async () => (recipientsOf(instance, subject).length >= expected.length ? true : undefined), 20_000, subject);
      await untilIdle(instance, () => recipientsOf(instance, subject).length, QUIET_MS, 30_000, `${subject}: nothing more`);
      expect(recipientsOf(instance, subject)).toEqual(expected);
    }
    const personal = instance.smtp.messages.find((m) => m.parsed.subject === started[0][1] && m.rcptTo.includes(email('pro1')))!;
    expect(personal.parsed.html).toContain('Hello Pia');
    expect(personal.parsed.headers.some((h) => h.key === 'list-unsubscribe')).toBe(true);

    // A deleted segment makes a send fail clearly, not go to nobody.
    const orphan = await createCampaign(s, unique('orphan'), { audienceType: 'SEGMENT', segmentId: dynamic.body.data.id });
    await s.project.api.delete(`/segments/${dynamic.body.data.id}`);
    const refused = await s.project.api.post(`/campaigns/${orphan.id}/send`, {});
    expect(refused.status).toBe(422);
    expect(refused.body.error.errors[0].field).toBe('segmentId');
  });

  it('a scheduled campaign waits, then is received and becomes SENT; a cancelled one sends nothing', async () => {
    const s = await setup(instance);
    const to = `${unique('sched')}@customer.example`;
    await addContacts(s, [{ email: to }]);
    const subject = unique('scheduled');
    const c = await createCampaign(s, subject);
    const dropped = unique('dropped');
    const d = await createCampaign(s, dropped);

    const soon = new Date(Date.now() + 3_000).toISOString();
    expect((await s.project.api.post(`/campaigns/${c.id}/send`, { scheduledFor: soon })).body.data.status).toBe('SCHEDULED');
    expect((await s.project.api.post(`/campaigns/${d.id}/send`, { scheduledFor: soon })).body.data.status).toBe('SCHEDULED');
    expect((await s.project.api.post(`/campaigns/${d.id}/cancel`)).body.data.status).toBe('CANCELLED');
    const listed = await s.project.api.get('/campaigns?status=SCHEDULED');
    expect(listed.body.data).toMatchObject({ total: 1, page: 1, pageSize: 20, totalPages: 1 });
    expect(recipientsOf(instance, subject)).toEqual([]);

    await instance.smtp.waitFor((m) => m.parsed.subject === subject, byMode({ embedded: 20_000, distributed: 60_000 }));
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(soon));
    await waitForStatus(s, c.id, 'SENT');
    await untilIdle(instance, () => recipientsOf(instance, subject).length, QUIET_MS, 30_000, `${subject}: nothing more`);
    expect(recipientsOf(instance, subject)).toEqual([to]);
    expect(recipientsOf(instance, dropped)).toEqual([]);
    expect((await s.project.api.get(`/campaigns/${d.id}`)).body.data.status).toBe('CANCELLED');
  });

  it('stats count deliveries, bounces and opens; test emails and duplicates', async () => {
    const s = await setup(instance);
    const tag = unique('stats');
    const good = [`${tag}-1@customer.example`, `${tag}-2@customer.example`];
    const bouncing = `${tag}-bounce@customer.example`;
    instance.smtp.rejectRecipients.add(bouncing);
    await addContacts(s, [...good.map((email) => ({ email })), { email: bouncing }]);
    const subject = unique('stats');
    const c = await createCampaign(s, subject);

    const test = await s.project.api.post(`/campaigns/${c.id}/test`, { email: 'reviewer@agency.example' });
    expect(test.status, JSON.stringify(test.body)).toBe(200);
    const testMail = await instance.smtp.waitFor((m) => m.rcptTo.includes('reviewer@agency.example') && m.parsed.subject === `[TEST] ${subject}`, 20_000);
    expect(testMail.parsed.html).toContain('Hello friend');

    await s.project.api.post(`/campaigns/${c.id}/send`, {});
    await waitForStatus(s, c.id, 'SENT');
    const mail: ReceivedMessage = await instance.smtp.waitFor((m) => m.parsed.subject === subject && m.rcptTo.includes(good[0]), 20_000);
    await waitForDelivered(s.project.api, emailIdOf(mail), 20_000); // the open updates the email
    const pixel = /src="([^"]*\/t\/open\/[^"]+)"/.exec(mail.parsed.html ?? '')![1].replace(/&amp;/g, '&');
    expect((await fetch(pixel)).status).toBe(200);

    let last: unknown;
    const stats = await eventually(async () => {
      const res = await s.project.api.get(`/campaigns/${c.id}/stats`);
      last = res.body;
      return res.body.data?.opens === 1 ? res.body : undefined;
    }, byMode({ embedded: 20_000, distributed: 60_000 }), 'the open to be counted').catch((err) => {
      throw new Error(`${(err as Error).message}; last stats: ${JSON.stringify(last)}`);
    });
    expect(stats).toEqual({ success: true, data: { delivered: 2, opens: 1, clicks: 0, bounces: 1, complaints: 0 } });

    const copy = await s.project.api.post(`/campaigns/${c.id}/duplicate`);
    expect(copy.status).toBe(201);
    expect(copy.body.data).toMatchObject({ status: 'DRAFT', subject, name: 'Spring sale', audienceType: 'ALL', recipientCount: 0, sentAt: null });
    expect(copy.body.data.id).not.toBe(c.id);
    const list = await s.project.api.get('/campaigns?pageSize=1');
    expect(list.body.data).toMatchObject({ total: 2, pageSize: 1, totalPages: 2 });
    expect(list.body.data.campaigns[0].id).toBe(copy.body.data.id);
    expect((await s.project.api.get('/campaigns?pageSize=101')).status).toBe(422);
  });

  it('a sent campaign’s stats are history: deleting its recipients leaves delivered, opens, bounces and complaints as they were', async () => {
    const s = await setup(instance);
    const tag = unique('history');
    const [opener, complainer, quiet] = [`${tag}-open@customer.example`, `${tag}-complain@customer.example`, `${tag}-quiet@customer.example`];
    const bouncing = `${tag}-bounce@customer.example`;
    instance.smtp.rejectRecipients.add(bouncing);
    await addContacts(s, [{ email: opener }, { email: complainer }, { email: quiet }, { email: bouncing }]);
    const subject = unique('history');
    const c = await createCampaign(s, subject);
    await s.project.api.post(`/campaigns/${c.id}/send`, {});
    await waitForStatus(s, c.id, 'SENT');
    const mailTo = (to: string) => instance.smtp.waitFor((m) => m.parsed.subject === subject && m.rcptTo.includes(to), 20_000);
    const [opened, complained] = [await mailTo(opener), await mailTo(complainer)];
    // The open and the complaint update the email: they come once the mailer is done with it.
    for (const m of [opened, complained]) await waitForDelivered(s.project.api, emailIdOf(m), 20_000);
    const pixel = /src="([^"]*\/t\/open\/[^"]+)"/.exec(opened.parsed.html ?? '')![1].replace(/&amp;/g, '&');
    expect((await fetch(pixel)).status).toBe(200);
    const complainedId = emailIdOf(complained);
    expect((await s.project.api.post('/v1/complaints', { emailId: complainedId })).status).toBe(202);

    const full = { delivered: 3, opens: 1, clicks: 0, bounces: 1, complaints: 1 };
    const stats = async () => (await s.project.api.get(`/campaigns/${c.id}/stats`)).body.data;
    let last: unknown;
    await eventually(async () => {
      last = await stats();
      return JSON.stringify(last) === JSON.stringify(full) ? true : undefined;
    }, byMode({ embedded: 20_000, distributed: 60_000 }), 'the open and the complaint to be counted').catch((err) => {
      throw new Error(`${(err as Error).message}; last stats: ${JSON.stringify(last)}`);
    });

    for (const address of [opener, complainer, bouncing]) {
      const found = await s.project.api.get(`/contacts?search=${encodeURIComponent(address)}`);
      expect((await s.project.api.delete(`/contacts/${found.body.data.contacts[0].id}`)).status).toBe(204);
    }
    expect(await stats()).toEqual(full);
    // The deleted contact's email names no one any more: a later complaint about it finds nothing.
    expect((await s.project.api.post('/v1/complaints', { emailId: complainedId })).status).toBe(404);
  });
});

describe('cancelling a campaign while it sends', () => {
  let instance: Instance;
  // A slow send (a few emails a second, small batches) leaves time to cancel in the middle.
  const rate = byMode({ embedded: 10, distributed: 5 });
  beforeAll(async () => {
    instance = await startInstance({ env: { EMAIL_RATE_PER_SECOND: String(rate), CAMPAIGN_BATCH_SIZE: '5' } });
  });
  afterAll(() => instance?.dispose());

  it('stops it: the remaining recipients get nothing, CANCELLED, and the stats add up', async () => {
    const s = await setup(instance);
    const total = byMode({ embedded: 60, distributed: 40 });
    const tag = unique('cancel');
    const addresses = Array.from({ length: total }, (_, i) => `${tag}-${i}@customer.example`);
    const fixed = await s.project.api.post('/segments', { name: unique('everyone'), type: 'STATIC' });
    await s.project.api.post(`/segments/${fixed.body.data.id}/members`, { emails: addresses });
    const subject = unique('cancelled');
    const c = await createCampaign(s, subject);

    // No body at all means "send now", like {}.
    const sent = await s.project.api.post(`/campaigns/${c.id}/send`);
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body.data.status).toBe('SENDING');
    await eventually(async () => (recipientsOf(instance, subject).length >= 3 ? true : undefined), byMode({ embedded: 20_000, distributed: 60_000 }), 'the first emails');

    const cancelled = await s.project.api.post(`/campaigns/${c.id}/cancel`);
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect(cancelled.body.data.status).toBe('CANCELLED');
    const atCancel = recipientsOf(instance, subject).length;

    // What the mailer was handing over at that moment may still arrive; then nothing more.
    let settled = -1;
    let since = Date.now();
    await eventually(async () => {
      const now = recipientsOf(instance, subject).length;
      if (now !== settled) [settled, since] = [now, Date.now()];
      return Date.now() - since >= 2_000 ? true : undefined;
    }, 30_000, 'the sends in flight to finish');
    await sleep(2 * QUIET_MS);
    const got = recipientsOf(instance, subject);
    expect(got.length).toBe(settled);
    expect(new Set(got).size).toBe(got.length); // nobody twice
    expect(got.length).toBeLessThan(total); // the rest got nothing
    // After the cancel, at most the emails that already had their send slot: one second's worth.
    expect(got.length - atCancel).toBeLessThanOrEqual(rate);

    const campaign = (await s.project.api.get(`/campaigns/${c.id}`)).body.data;
    expect(campaign.status).toBe('CANCELLED');
    expect(campaign.recipientCount).toBeGreaterThanOrEqual(got.length);
    expect(campaign.recipientCount).toBeLessThan(total);
    const stats = (await s.project.api.get(`/campaigns/${c.id}/stats`)).body.data;
    expect(stats).toEqual({ delivered: got.length, opens: 0, clicks: 0, bounces: 0, complaints: 0 });
    // It stays cancelled: no wake-up sends the rest later.
    await sleep(2 * QUIET_MS);
    expect(recipientsOf(instance, subject).length).toBe(got.length);
    expect((await s.project.api.get(`/campaigns/${c.id}`)).body.data.status).toBe('CANCELLED');
  }, 120_000);
});

describe('the connections to the relay', () => {
  let instance: Instance;
  beforeAll(async () => {
    instance = await startInstance({ env: { EMAIL_RATE_PER_SECOND: '0', SMTP_CONNECTIONS: '2' } });
  });
  afterAll(() => instance?.dispose());

  it('SMTP_CONNECTIONS bounds the connections the mailer opens, and every recipient still gets the campaign once', async () => {
    const s = await setup(instance);
    const tag = unique('conn');
    const addresses = Array.from({ length: 60 }, (_, i) => `${tag}-${i}@customer.example`);
    const fixed = await s.project.api.post('/segments', { name: unique('all'), type: 'STATIC' });
    await s.project.api.post(`/segments/${fixed.body.data.id}/members`, { emails: addresses });
    const subject = unique('connections');
    const c = await createCampaign(s, subject, { audienceType: 'SEGMENT', segmentId: fixed.body.data.id });
    expect((await s.project.api.post(`/campaigns/${c.id}/send`, {})).status).toBe(200);
    await waitForStatus(s, c.id, 'SENT');
    await eventually(async () => (recipientsOf(instance, subject).length >= addresses.length ? true : undefined), 20_000, subject);
    await untilIdle(instance, () => recipientsOf(instance, subject).length, QUIET_MS, 30_000, `${subject}: nothing more`);
    expect(recipientsOf(instance, subject)).toEqual([...addresses].sort());
    // 60 emails at once would have opened the default 16 (one mailer in either mode).
    expect(instance.smtp.peakConnections).toBeGreaterThanOrEqual(1);
    expect(instance.smtp.peakConnections).toBeLessThanOrEqual(2);
  });
});
