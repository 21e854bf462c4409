// kill -9 of the distributed stack's infrastructure in the middle of work: Redis (actor state,
// topics, rate limits), the Dapr scheduler (reminders), Dapr placement (where actors live), and
// every process at once, as a machine's crash. Each time a campaign is mid-send and workflow
// executions are waiting in a DELAY: afterwards the campaign is SENT with every recipient emailed
// exactly once, and every execution wakes and sends its one email.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject } from '../harness/accounts.ts';
import { eventually, sleep } from '../harness/client.ts';
import { notOnce, receivedBy, untilIdle } from '../harness/crash.ts';
import { verifiedDomain } from '../harness/domains.ts';
import { startInstance, type InfrastructureProcess, type Instance } from '../harness/instance.ts';
import { buildWorkflow, executions, track, unique } from '../harness/workflows.ts';

/** How long the stack may take to finish its work after the crash. */
const DRAIN = 180_000;
/** How long nothing may arrive before "nothing more arrives" is believed. */
const QUIET = 5_000;
/** The DELAY the executions wait in: they fall due while the stack is down or recovering. */
const DELAY_S = 4;

describe('kill -9 of the infrastructure mid-campaign, with executions waiting', () => {
  let instance: Instance;
  beforeAll(async () => {
    // A send rate that stretches the campaign over seconds, small batches: the kill lands mid-send.
    instance = await startInstance({ env: { API_RATE_PER_MINUTE: '0', EMAIL_RATE_PER_SECOND: '20', CAMPAIGN_BATCH_SIZE: '5' } });
  });
  afterAll(() => instance?.dispose());

  const cases: { crash: InfrastructureProcess | 'everything'; what: string }[] = [
    { crash: 'redis', what: 'Redis' },
    { crash: 'scheduler', what: 'the Dapr scheduler' },
    { crash: 'placement', what: 'Dapr placement' },
    { crash: 'everything', what: 'every process of the stack at once' },
  ];

  for (const { crash, what } of cases) {
    it(`${what}: the campaign ends SENT with every recipient emailed once, and every waiting execution wakes`, { timeout: 420_000 }, async () => {
      const tag = unique(`crash-${crash}`);
      // The campaign's project: its audience (everyone subscribed) is exactly these addresses.
      const campaigns = await newProject(instance, `Crash ${crash}: campaign`);
      const campaignDomain = await verifiedDomain(instance, campaigns);
      const audience = Array.from({ length: 100 }, (_, i) => `${tag}-${i}@customer.example`);
      const segment = await campaigns.api.post('/segments', { name: unique('everyone'), type: 'STATIC' });
      const added = await campaigns.api.post(`/segments/${segment.body.data.id}/members`, { emails: audience });
      expect(added.status, JSON.stringify(added.body)).toBeLessThan(300);
      const created = await campaigns.api.post('/campaigns', {
        name: tag, subject: tag, body: '<p>Hello {{email}}</p>', from: `news@${campaignDomain.domain}`, audienceType: 'ALL',
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const campaignId = created.body.data.id as string;

      // The workflows' project: a DELAY, then an email.
      const flows = await newProject(instance, `Crash ${crash}: workflows`);
      const flowDomain = await verifiedDomain(instance, flows);
      const flowSubject = `${tag}-after-the-delay`;
      const template = await flows.api.post('/templates', { name: flowSubject, subject: flowSubject, body: '<p>Later</p>', from: `flows@${flowDomain.domain}`, type: 'TRANSACTIONAL' });
      expect(template.status).toBe(201);
      const event = unique('waits');
      const wf = await buildWorkflow(flows, {
        eventName: event,
        steps: [{ name: 'pause', type: 'DELAY', config: { amount: DELAY_S, unit: 'seconds' } }, { name: 'send', type: 'SEND_EMAIL', templateId: template.body.data.id }],
      });
      const waiting = Array.from({ length: 5 }, (_, i) => `${tag}-waits-${i}@people.example`);

      const campaignMail = () => receivedBy(instance, (s) => s === tag);
      const flowMail = () => receivedBy(instance, (s) => s === flowSubject);
      expect((await campaigns.api.post(`/campaigns/${campaignId}/send`, {})).status).toBe(200);
      for (const address of waiting) await track(flows, address, event);
      await eventually(async () => ((await executions(flows, wf.id, '&status=WAITING')).length === waiting.length ? true : undefined), 60_000, 'every execution waiting');
      await eventually(async () => (campaignMail().size >= 10 ? true : undefined), DRAIN, 'the first campaign emails');

      const crashedAt = Date.now();
      if (crash === 'everything') {
        await instance.stop('everything');
        const atKill = campaignMail().size;
        // Killed mid-send, and before the executions' delay was over.
        expect(atKill).toBeGreaterThan(0);
        expect(atKill).toBeLessThan(audience.length);
        expect(flowMail().size).toBe(0);
        await sleep(DELAY_S * 1_000); // the delays fall due while everything is down
        await instance.restart();
      } else {
        const atKill = campaignMail().size;
        await instance.crashInfrastructure(crash, 3_000);
        expect(atKill).toBeLessThan(audience.length);
        expect(flowMail().size).toBe(0);
      }

      const campaign = await eventually(async () => {
        const res = await campaigns.api.get(`/campaigns/${campaignId}`);
        return res.body.data?.status === 'SENT' ? res.body.data : undefined;
      }, DRAIN, 'the campaign to be SENT');
      expect(Date.parse(campaign.completedAt)).toBeGreaterThan(crashedAt);
      await eventually(
        async () => ((await executions(flows, wf.id, '&status=COMPLETED')).length === waiting.length ? true : undefined),
        DRAIN,
        'every execution to complete',
      ).catch(async (err) => {
        throw new Error(`${(err as Error).message}: ${JSON.stringify((await executions(flows, wf.id)).map((e) => [e.status, e.reason]))}`);
      });
      await untilIdle(instance, () => instance.smtp.messages.length, QUIET, DRAIN, 'the mailer to finish');
      expect(notOnce(campaignMail(), audience)).toEqual([]);
      expect(campaignMail().size).toBe(audience.length);
      expect(notOnce(flowMail(), waiting)).toEqual([]);
      expect(flowMail().size).toBe(waiting.length);
      const stats = (await campaigns.api.get(`/campaigns/${campaignId}/stats`)).body.data;
      expect(stats).toMatchObject({ delivered: audience.length, bounces: 0 });
    });
  }
});
