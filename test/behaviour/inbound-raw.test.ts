// The raw message behind an email.received event: kept as the listener took it, byte for byte,
// for INBOUND_RAW_RETENTION_DAYS, served to the project's secret key as message/rfc822, and gone
// (404) once that time is over; another project's key finds nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { eventually, sleep, type EventRecord } from '../harness/client.ts';
import { verifiedDomain, type Domain } from '../harness/domains.ts';
import { byMode, startInstance, type Instance } from '../harness/instance.ts';
import { deliverMail } from '../harness/smtp-client.ts';
import { unique } from '../harness/workflows.ts';

/** 17.28 s: long enough to find the event first in either mode, short enough to wait out. */
const RETENTION_DAYS = 0.0002;
const RETENTION_MS = RETENTION_DAYS * 86_400_000;
const DRAIN = byMode({ embedded: 10_000, distributed: 30_000 });

describe('the raw inbound message', () => {
  let instance: Instance;
  let project: ProjectAccess;
  let other: ProjectAccess;
  let domain: Domain;

  beforeAll(async () => {
    instance = await startInstance({ env: { INBOUND_RAW_RETENTION_DAYS: String(RETENTION_DAYS) } });
    [project, other] = await Promise.all([newProject(instance, 'Raw inbound'), newProject(instance, 'Someone else')]);
    domain = await verifiedDomain(instance, project);
  });
  afterAll(() => instance?.dispose());

  const raw = (from: string, to: string) =>
    Buffer.from(
      [
        `From: "Zoë Écrivain" <${from}>`,
        `To: ${to}`,
        'Subject: =?utf-8?q?R=C3=A9clamation?=',
        `Message-ID: <${unique('raw')}@customer.example>`,
        'MIME-Version: 1.0',
        'Content-Type: text/plain; charset=utf-8',
        'Content-Transfer-Encoding: 8bit',
        '',
        'Bonjour, ma commande n’est pas arrivée. Ünïcödé in 8 bits.',
        '.a line that starts with a dot, stuffed on the wire and not in the message',
        `${'x'.repeat(900)}`,
        '',
      ].join('\r\n'),
    );
  const fetchRaw = (eventId: string, key: string) => fetch(`${instance.url}/inbound/${encodeURIComponent(eventId)}/raw`, { headers: { authorization: `Bearer ${key}` } });

  it('is served byte for byte as message/rfc822 to the project, to nobody else, and is gone once INBOUND_RAW_RETENTION_DAYS is over', { timeout: RETENTION_MS + DRAIN * 3 }, async () => {
    const from = `${unique('writer')}@customer.example`;
    const to = `support@${domain.domain}`;
    const message = raw(from, to);
    const deliveredAt = Date.now();
    expect((await deliverMail(instance.inboundPort, { from, to: [to] }, message)).accepted).toEqual([to]);

    const received = await eventually(async () => {
      const res = await project.api.get('/events?name=email.received');
      return (res.body.data as EventRecord[] | undefined)?.find((e) => e.data.from === from);
    }, DRAIN, 'the email.received event');
    // The event's data is DESIGN's: the raw message is not in it.
    expect(Object.keys(received.data).sort()).toEqual(['attachments', 'from', 'messageId', 'subject', 'text', 'to']);

    const res = await fetchRaw(received.id, project.secretKey);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('message/rfc822');
    expect(Buffer.from(await res.arrayBuffer()).equals(message), 'the bytes as sent').toBe(true);

    const elsewhere = await fetchRaw(received.id, other.secretKey);
    expect(elsewhere.status).toBe(404);
    expect(await elsewhere.json()).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
    expect((await fetchRaw('no-such-event', project.secretKey)).status).toBe(404);
    expect((await fetchRaw(received.id, project.publicKey)).status).toBe(403);

    await sleep(Math.max(0, deliveredAt + RETENTION_MS - Date.now()) + 500);
    const expired = await fetchRaw(received.id, project.secretKey);
    expect(expired.status).toBe(404);
    expect(await expired.json()).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
  });
});
