import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { eventually } from '../harness/client.ts';
import { verifiedDomain, type Domain } from '../harness/domains.ts';
import { startInstance, type Instance } from '../harness/instance.ts';
import { sample } from '../harness/metrics.ts';

const TOKEN = 'metrics-token-for-the-test';

describe('GET /metrics', () => {
  let instance: Instance;
  let project: ProjectAccess;
  let domain: Domain;

  beforeAll(async () => {
    instance = await startInstance({ env: { EMAIL_RATE_PER_SECOND: '0', METRICS_TOKEN: TOKEN } });
    project = await newProject(instance, 'Measured');
    domain = await verifiedDomain(instance, project);
  });
  afterAll(() => instance.dispose());

  const scrape = async (base: string) => {
    const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return res.text();
  };

  it('answers only with the METRICS_TOKEN when one is set', async () => {
    for (const base of new Set([instance.url, instance.mailerUrl])) {
      expect((await fetch(`${base}/metrics`)).status).toBe(401);
      expect((await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
      expect((await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
    }
  });

  it('reports latency by route pattern, the queue, reminders, workflow executions and the mailer', async () => {
    await project.api.get('/contacts/not-a-contact');
    await project.api.get('/no/such/route');
    const api = await scrape(instance.url);
    const mailer = await scrape(instance.mailerUrl);
    for (const name of ['mailroom_http_request_duration_seconds', 'mailroom_outbound_queue_depth', 'mailroom_reminders_pending', 'mailroom_workflow_executions']) {
      expect(api).toContain(`# TYPE ${name} `);
    }
    for (const name of ['mailroom_emails_total', 'mailroom_mailer_circuit_state']) expect(mailer).toContain(`# TYPE ${name} `);
    for (const text of [api, mailer]) expect(text).toContain('# TYPE process_cpu_user_seconds_total counter');

    // The route's pattern, never the raw path: ids and unknown paths do not become label values.
    expect(sample(api, 'mailroom_http_request_duration_seconds_count', { method: 'GET', route: '/contacts/:id', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(sample(api, 'mailroom_http_request_duration_seconds_count', { method: 'GET', route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(api).not.toContain('not-a-contact');
    expect(api).not.toContain('/no/such/route');
    // The segment sweep keeps one reminder set at all times.
    expect(sample(api, 'mailroom_reminders_pending')).toBeGreaterThanOrEqual(1);
    for (const status of ['PENDING', 'RUNNING', 'WAITING', 'COMPLETED', 'CANCELLED', 'FAILED']) {
      expect(sample(api, 'mailroom_workflow_executions', { status })).toEqual(expect.any(Number));
    }
    expect(sample(mailer, 'mailroom_mailer_circuit_state', { state: 'closed' })).toBe(1);
    expect(sample(mailer, 'mailroom_mailer_circuit_state', { state: 'open' })).toBe(0);
  });

  it('counts a sent email as sent and delivered, and the queue drains', async () => {
    const before = await scrape(instance.mailerUrl);
    const sent = sample(before, 'mailroom_emails_total', { outcome: 'sent' }) ?? 0;
    const delivered = sample(before, 'mailroom_emails_total', { outcome: 'delivered' }) ?? 0;

    const to = `measured-${Date.now()}@customer.example`;
    const res = await project.api.post('/v1/send', { to, from: `hello@${domain.domain}`, subject: 'Counted', body: '<p>Hi</p>' });
    expect(res.status).toBe(200);
    await instance.smtp.waitForMailTo(to, 20_000);

    await eventually(
      async () => {
        const after = await scrape(instance.mailerUrl);
        return sample(after, 'mailroom_emails_total', { outcome: 'delivered' }) === delivered + 1 ? after : undefined;
      },
      20_000,
      'the delivered counter to move',
    ).then((after) => expect(sample(after, 'mailroom_emails_total', { outcome: 'sent' })).toBe(sent + 1));
    await eventually(async () => (sample(await scrape(instance.url), 'mailroom_outbound_queue_depth') === 0 ? true : undefined), 20_000, 'an empty queue');

    const api = await scrape(instance.url);
    expect(sample(api, 'mailroom_http_request_duration_seconds_count', { method: 'POST', route: '/v1/send', status: '200' })).toBeGreaterThanOrEqual(1);
  });
});
