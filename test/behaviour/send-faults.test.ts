import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { eventually } from '../harness/client.ts';
import { verifiedDomain, type Domain } from '../harness/domains.ts';
import { byMode, startInstance, type Instance } from '../harness/instance.ts';

// Every accepted email reaches the SMTP server exactly once, whatever fails in between.
describe('sending under faults', () => {
  let instance: Instance;
  let project: ProjectAccess;
  let domain: Domain;

  beforeAll(async () => {
    // A rate limit stretches each burst over seconds (longer than accepting it takes on a busy
    // machine: at 40/s a burst of 120 was all out before the test looked), so the faults land in the middle of it.
    instance = await startInstance({ process: true, env: { EMAIL_RATE_PER_SECOND: '20', API_RATE_PER_MINUTE: '0' } });
    project = await newProject(instance, 'Faults');
    domain = await verifiedDomain(instance, project);
  });
  afterAll(() => instance.dispose());

  /** Accepts `count` emails in requests of ten recipients; returns the addresses. */
  async function burst(tag: string, count: number): Promise<string[]> {
    const to = Array.from({ length: count }, (_, i) => `${tag}-${i}@customer.example`);
    for (let i = 0; i < count; i += 10) {
      const res = await project.api.post('/v1/send', { to: to.slice(i, i + 10), from: `ops@${domain.domain}`, subject: `${tag}`, body: '<p>{{email}}</p>' });
      expect(res.status).toBe(200);
    }
    return to;
  }

  const receivedCount = (tag: string) => instance.smtp.messages.filter((m) => m.parsed.subject === tag).length;

  async function expectEachExactlyOnce(tag: string, to: string[]): Promise<void> {
    await eventually(async () => (to.every((addr) => instance.smtp.messages.some((m) => m.rcptTo.includes(addr))) ? true : undefined), byMode({ embedded: 60_000, distributed: 90_000 }), `all ${to.length} "${tag}" emails`);
    await new Promise((r) => setTimeout(r, 2_000)); // a late duplicate would show up now
    const counts = new Map<string, number>();
    for (const m of instance.smtp.messages) for (const addr of m.rcptTo) counts.set(addr, (counts.get(addr) ?? 0) + 1);
    const wrong = to.filter((addr) => counts.get(addr) !== 1).map((addr) => `${addr}: ${counts.get(addr) ?? 0}`);
    expect(wrong).toEqual([]);
    expect(receivedCount(tag)).toBe(to.length);
  }

  // Distributed: longer than a round of Dapr's retries (about a minute), after which the component
  // drops a message its handler still refused unless the round outlasted processingTimeout
  // (adapters/dapr/pubsub.ts, RETRY_HOLD_MS).
  const outageMs = byMode({ embedded: 4_000, distributed: 75_000 });

  it('an SMTP outage during a burst holds the mail; once the relay is back each email arrives once', { timeout: byMode({ embedded: 180_000, distributed: 300_000 }) }, async () => {
    const to = await burst('outage', 120);
    await eventually(async () => (receivedCount('outage') >= 10 ? true : undefined), 30_000, 'the burst to start');
    await instance.smtp.stop();
    try {
      const atStop = receivedCount('outage');
      await new Promise((r) => setTimeout(r, outageMs));
      expect(receivedCount('outage')).toBe(atStop);
      expect(atStop).toBeLessThan(to.length);
    } finally {
      await instance.smtp.start(); // the next test needs the relay, whatever happened here
    }
    await expectEachExactlyOnce('outage', to);
  });

  it('a mailer killed in the middle of a burst and restarted sends each email once', { timeout: 180_000 }, async () => {
    const to = await burst('crash', 150);
    await eventually(async () => (receivedCount('crash') >= 20 ? true : undefined), 30_000, 'the burst to start');
    await instance.stop(); // SIGKILL, with SMTP transactions in flight
    expect(receivedCount('crash')).toBeLessThan(to.length);
    await instance.restart();
    await expectEachExactlyOnce('crash', to);
  });
});
