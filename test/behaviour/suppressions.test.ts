// The suppression list and the delivery gate: a hard bounce or a complaint suppresses the
// address, and no email of any type (transactional, marketing, campaign, workflow) reaches a
// suppressed address; the list can be read, added to and removed from.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { eventually, waitForDelivered, type ApiResponse } from '../harness/client.ts';
import { untilIdle } from '../harness/crash.ts';
import { verifiedDomain, type Domain } from '../harness/domains.ts';
import { QUIET_MS, byMode, startInstance, type Instance } from '../harness/instance.ts';
import { buildWorkflow, executions, track, unique, WAIT_MS } from '../harness/workflows.ts';

const DRAIN = byMode({ embedded: 30_000, distributed: 90_000 });

describe('suppressions', () => {
  let instance: Instance;
  let project: ProjectAccess;
  let domain: Domain;

  beforeAll(async () => {
    instance = await startInstance({ env: { EMAIL_RATE_PER_SECOND: '0' } });
    project = await newProject(instance, 'Suppressions');
    domain = await verifiedDomain(instance, project);
  });
  afterAll(() => instance.dispose());

  const address = (tag: string) => `${unique(tag)}@customer.example`;
  const delivered = (to: string) => instance.smtp.messages.filter((m) => m.rcptTo.includes(to));
  const idle = () => untilIdle(instance, () => instance.smtp.messages.length, QUIET_MS, DRAIN, 'the mailer to be idle');
  const eventNames = async (contactId: string) => ((await project.api.get(`/events/contact/${contactId}`)).body.data as { name: string }[]).map((e) => e.name);
  const send = (to: string, extra: Record<string, unknown> = {}) =>
    project.api.post('/v1/send', { to, from: `x@${domain.domain}`, subject: unique('subject'), body: '<p>Hello</p>', ...extra });

  it('a hard bounce suppresses the address, and later email of any type to it is SUPPRESSED, never sent', async () => {
    const to = address('gone');
    instance.smtp.rejectRecipients.add(to);
    const first = await send(to);
    expect(first.status).toBe(200);
    const contactId = first.body.data.emails[0].contact.id as string;
    const entry = await eventually(async () => {
      const res = await project.api.get(`/suppressions/${encodeURIComponent(to)}`);
      return res.status === 200 ? res.body.data : undefined;
    }, DRAIN, 'the address to be suppressed');
    expect(entry).toMatchObject({ email: to, reason: 'hard_bounce', emailId: first.body.data.emails[0].email });
    expect(entry.detail).toMatch(/550/);
    const bounce = ((await project.api.get(`/events/contact/${contactId}`)).body.data as { name: string; data: Record<string, unknown> }[]).find((e) => e.name === 'email.bounce');
    expect(bounce?.data).toMatchObject({ type: 'hard' });

    // The relay would take it now: the gate, not the relay, must stop it.
    instance.smtp.rejectRecipients.delete(to);
    const sentBefore = (await eventNames(contactId)).filter((n) => n === 'email.sent').length;
    const again = await send(to);
    expect(again.status).toBe(200);
    expect(again.body.data.emails).toEqual([expect.objectContaining({ status: 'SUPPRESSED' })]);
    await idle();
    expect(delivered(to)).toEqual([]);
    expect((await eventNames(contactId)).filter((n) => n === 'email.sent')).toHaveLength(sentBefore);
  });

  it('a complaint suppresses the address', async () => {
    const to = address('complains');
    const sent = await send(to);
    // A CI run saw this complaint undo the mailer's DELIVERED on FerretDB: the email stayed SENDING.
    await waitForDelivered(project.api, sent.body.data.emails[0].email, DRAIN);
    expect((await project.api.post('/v1/complaints', { emailId: sent.body.data.emails[0].email })).status).toBe(202);
    const entry = await eventually(async () => {
      const res = await project.api.get(`/suppressions/${encodeURIComponent(to)}`);
      return res.status === 200 ? res.body.data : undefined;
    }, DRAIN, 'the address to be suppressed');
    expect(entry).toMatchObject({ reason: 'complaint' });
  });

  it('by hand: added (201, then 200), looked up, and then skipped by /v1/send, campaigns and workflows alike; removed, it gets email again', async () => {
    const suppressed = address('by-hand');
    const other = address('welcome');
    // Contacts first (subscribed), so the campaign's audience holds both.
    const own = await newProject(instance, 'Suppressions by hand');
    const ownDomain = await verifiedDomain(instance, own);
    for (const email of [suppressed, other]) expect((await own.api.post('/contacts', { email })).status).toBe(201);

    const added = await own.api.post('/suppressions', { email: suppressed.toUpperCase(), reason: 'asked us by phone' });
    expect(added.status).toBe(201);
    expect(added.body.data).toMatchObject({ email: suppressed, reason: 'manual', detail: 'asked us by phone', emailId: null });
    expect((await own.api.post('/suppressions', { email: suppressed })).status).toBe(200);
    expect((await own.api.get(`/suppressions/${encodeURIComponent(suppressed)}`)).body.data).toMatchObject({ reason: 'manual' });
    expect((await own.api.get(`/suppressions/${encodeURIComponent(other)}`)).status).toBe(404);
    // Another project's list is its own.
    expect((await project.api.get(`/suppressions/${encodeURIComponent(suppressed)}`)).status).toBe(404);

    const transactional = await own.api.post('/v1/send', { to: [suppressed, other], from: `x@${ownDomain.domain}`, subject: 'receipt', body: '<p>Thanks</p>' });
    expect(transactional.body.data.emails.map((e: { status: string }) => e.status)).toEqual(['SUPPRESSED', 'QUEUED']);

    const subject = unique('newsletter');
    const campaign = await own.api.post('/campaigns', { name: subject, subject, body: '<p>News {{unsubscribeUrl}}</p>', from: `news@${ownDomain.domain}`, audienceType: 'ALL' });
    expect(campaign.status).toBe(200);
    expect((await own.api.post(`/campaigns/${campaign.body.data.id}/send`, {})).status).toBe(200);
    await eventually(async () => ((await own.api.get(`/campaigns/${campaign.body.data.id}`)).body.data.status === 'SENT' ? true : undefined), DRAIN, 'the campaign to be SENT');

    const flowSubject = unique('flow');
    const template = await own.api.post('/templates', { name: flowSubject, subject: flowSubject, body: '<p>Hi</p>', from: `flows@${ownDomain.domain}`, type: 'TRANSACTIONAL' });
    const event = unique('signed-up');
    const wf = await buildWorkflow(own, { eventName: event, steps: [{ name: 'send', type: 'SEND_EMAIL', templateId: template.body.data.id }] });
    await track(own, suppressed, event);
    await track(own, other, event);
    await eventually(async () => ((await executions(own, wf.id, '&status=COMPLETED')).length === 2 ? true : undefined), WAIT_MS, 'both executions to complete');

    await idle();
    expect(delivered(suppressed)).toEqual([]);
    expect(delivered(other).map((m) => m.parsed.subject).sort()).toEqual(['receipt', flowSubject, subject].sort());

    expect((await own.api.delete(`/suppressions/${encodeURIComponent(suppressed)}`)).status).toBe(204);
    expect((await own.api.delete(`/suppressions/${encodeURIComponent(suppressed)}`)).status).toBe(404);
    const after = await own.api.post('/v1/send', { to: suppressed, from: `x@${ownDomain.domain}`, subject: 'back', body: '<p>Again</p>' });
    expect(after.body.data.emails[0].status).toBe('QUEUED');
    await instance.smtp.waitFor((m) => m.rcptTo.includes(suppressed) && m.parsed.subject === 'back', DRAIN);
  });

  it('lists newest first in the generic list envelope, a page at a time; a cursor it did not make is a 422', async () => {
    const own = await newProject(instance, 'Suppression list');
    const addresses = Array.from({ length: 7 }, (_, i) => `list-${i}-${unique('s')}@customer.example`);
    for (const email of addresses) expect((await own.api.post('/suppressions', { email })).status).toBe(201);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: ApiResponse = await own.api.get(`/suppressions?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ total: 7, hasMore: expect.any(Boolean) });
      seen.push(...res.body.data.items.map((s: { email: string }) => s.email));
      cursor = res.body.data.nextCursor;
      expect(res.body.data.hasMore).toBe(cursor !== null);
    } while (cursor);
    expect(seen).toEqual([...addresses].reverse());
    const bad = await own.api.get('/suppressions?cursor=not-ours');
    expect(bad.status).toBe(422);
    expect(bad.body.error.code).toBe('VALIDATION_ERROR');
  });
});
