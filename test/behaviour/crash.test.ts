// kill -9 in the middle of work: a load of /v1/track, a load of /v1/send, a CSV import and a
// campaign, each cut off by a SIGKILL of the platform and then started again on the same data.
// After the restart every acknowledged write is there, retried requests (same Idempotency-Key)
// do their work once, the import ends with exact counters and nobody gets an email twice.
// Both projects run these: in distributed mode `stop()` SIGKILLs every app and sidecar, while the
// datastores keep running.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { allContacts, emailFinished, eventually, waitForEmail, type Job, type ApiClient, type ApiResponse, type EventRecord } from '../harness/client.ts';
import { loadUntilKilled, notOnce, receivedBy, untilIdle, type LoadUnderCrash } from '../harness/crash.ts';
import { verifiedDomain, type Domain } from '../harness/domains.ts';
import { byMode, startInstance, type Instance } from '../harness/instance.ts';

/** How long the platform may take to drain its work after a restart. */
const DRAIN = byMode({ embedded: 60_000, distributed: 180_000 });
/** How long nothing may arrive before "nothing more arrives" is believed. */
const QUIET = byMode({ embedded: 2_000, distributed: 5_000 });

let n = 0;
const unique = (tag: string) => `${tag}-${++n}-${Date.now().toString(36)}`;

/** The proof that the kill came in the middle of the load, not before or after it. */
function expectCutOffMidLoad(load: LoadUnderCrash) {
  // Some requests were on the wire and never answered, and fewer were answered than sent.
  expect(load.cutOff.length).toBeGreaterThan(0);
  expect(load.answered.size).toBeLessThan(load.sent);
  expect(load.answered.size + load.cutOff.length).toBe(load.sent);
  // The process died: nothing it answered was an error of its own.
  expect([...load.answered.values()].map((r) => r.status).filter((s) => s !== 200)).toEqual([]);
}

function upload(api: ApiClient, csv: string): Promise<ApiResponse> {
  const form = new FormData();
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'contacts.csv');
  return api.post('/contacts/import', undefined, { raw: form });
}

const finished = (api: ApiClient, jobId: string, timeoutMs: number): Promise<Job> =>
  eventually(async () => {
    const job = (await api.get(`/contacts/import/${jobId}`)).body.data as Job;
    if (job.status === 'FAILED') throw new Error(`job failed: ${JSON.stringify(job)}`);
    return job.status === 'COMPLETED' ? job : undefined;
  }, timeoutMs, `import ${jobId} to complete`);

describe('kill -9 in the middle of work', () => {
  let instance: Instance;
  let project: ProjectAccess;
  let domain: Domain;

  beforeAll(async () => {
    // No request budget (the loads and the polling must not be refused); a send rate that
    // stretches delivery over seconds, and small campaign batches, so a kill lands mid-send.
    instance = await startInstance({ process: true, env: { API_RATE_PER_MINUTE: '0', EMAIL_RATE_PER_SECOND: '20', CAMPAIGN_BATCH_SIZE: '5' } });
    project = await newProject(instance, 'Crash');
    domain = await verifiedDomain(instance, project);
  });
  afterAll(() => instance?.dispose());

  it('/v1/track: every acknowledged call is there after the restart, and each Idempotency-Key records one event', { timeout: 180_000 }, async () => {
    const tag = unique('track');
    const call = (i: number) => ({
      key: `${tag}-key-${i}`,
      email: `${tag}-${i}@example.com`,
      body: { email: `${tag}-${i}@example.com`, event: tag, data: { key: `${tag}-key-${i}`, i } },
    });
    const post = (i: number) => project.api.post('/v1/track', call(i).body, { headers: { 'idempotency-key': call(i).key } });

    const load = await loadUntilKilled(instance, { count: 2_000, inFlight: 16, killAfter: byMode({ embedded: 60, distributed: 20 }) }, post);
    expectCutOffMidLoad(load);
    await instance.restart();

    // Every acknowledged call: its contact, with the call's data, and its one event.
    for (const [i, res] of load.answered) {
      const contact = await project.api.get(`/contacts/${res.body.data.contact}`);
      expect(contact.status, call(i).email).toBe(200);
      expect(contact.body.data).toMatchObject({ email: call(i).email, data: { key: call(i).key, i } });
      const events = (await project.api.get(`/events/contact/${res.body.data.contact}`)).body.data as EventRecord[];
      expect(events.filter((e) => !e.system).map((e) => ({ id: e.id, name: e.name, data: e.data }))).toStrictEqual([
        { id: res.body.data.event, name: tag, data: { key: call(i).key, i } },
      ]);
    }

    // The client retries every call it sent, with its key: the answered ones are replayed as they
    // were, the cut-off ones complete now (after the claim a crashed call left expires).
    const sent = [...load.answered.keys(), ...load.cutOff];
    const retries = new Map(await Promise.all(sent.map(async (i) => [i, await post(i)] as const)));
    expect([...retries].filter(([, r]) => r.status !== 200).map(([i, r]) => `${i}: ${r.status} ${JSON.stringify(r.body)}`)).toEqual([]);
    for (const [i, res] of load.answered) {
      expect(retries.get(i)!.headers.get('idempotent-replayed')).toBe('true');
      expect(retries.get(i)!.body).toStrictEqual(res.body);
    }

    // One event per key, counted, not just found: each key's contact has exactly the event its
    // answer names, and the project has as many such events as keys sent.
    for (const i of sent) {
      const { contact, event } = retries.get(i)!.body.data;
      const events = (await project.api.get(`/events/contact/${contact}`)).body.data as EventRecord[];
      const tracked = events.filter((e) => !e.system);
      expect(tracked.map((e) => e.data.key), call(i).key).toEqual([call(i).key]);
      expect(tracked[0].id).toBe(event);
    }
    const stats = (await project.api.get('/events/stats')).body.data as { events: { name: string; count: number }[] };
    expect(stats.events.find((e) => e.name === tag)?.count).toBe(sent.length);
    // One contact per address, and none for a call never sent.
    const mine = (await allContacts(project.api)).filter((c) => c.email.startsWith(`${tag}-`));
    expect(mine.map((c) => c.email).sort()).toEqual(sent.map((i) => call(i).email).sort());
  });

  it('/v1/send: every accepted email is delivered once after the restart, and a retried request sends nothing twice', { timeout: 300_000 }, async () => {
    const tag = unique('send');
    const template = await project.api.post('/templates', {
      name: tag, type: 'TRANSACTIONAL', subject: `${tag} {{i}}`, body: '<p>Number {{i}}</p>', from: `orders@${domain.domain}`,
    });
    expect(template.status).toBe(201);
    const to = (i: number) => `${tag}-${i}@customer.example`;
    const post = (i: number) =>
      project.api.post('/v1/send', { to: to(i), template: template.body.data.id, data: { i } }, { headers: { 'idempotency-key': `${tag}-key-${i}` } });

    const load = await loadUntilKilled(instance, { count: 2_000, inFlight: 12, killAfter: byMode({ embedded: 40, distributed: 15 }) }, post);
    expectCutOffMidLoad(load);
    const deliveredAtKill = receivedBy(instance, (s) => s.startsWith(`${tag} `)).size;
    await instance.restart();

    // The client retries every request it sent, with its key.
    const sent = [...load.answered.keys(), ...load.cutOff];
    const retries = new Map(await Promise.all(sent.map(async (i) => [i, await post(i)] as const)));
    expect([...retries].filter(([, r]) => r.status !== 200).map(([i, r]) => `${i}: ${r.status} ${JSON.stringify(r.body)}`)).toEqual([]);
    for (const [i, res] of load.answered) {
      expect(res.body.data.emails).toMatchObject([{ contact: { email: to(i) }, status: 'QUEUED' }]);
      expect(retries.get(i)!.body).toStrictEqual(res.body);
    }

    const everyone = sent.map(to);
    await eventually(async () => {
      const got = receivedBy(instance, (s) => s.startsWith(`${tag} `));
      return everyone.every((a) => got.has(a)) ? true : undefined;
    }, DRAIN, `all ${everyone.length} emails`);
    await untilIdle(instance, () => instance.smtp.messages.length, QUIET, DRAIN, 'the mailer to finish');
    const got = receivedBy(instance, (s) => s.startsWith(`${tag} `));
    // Exactly once each: no loss, no duplicate, and nothing for a request never sent.
    expect(notOnce(got, everyone)).toEqual([]);
    expect([...got.keys()].sort()).toEqual([...everyone].sort());
    // The emails delivered are the ones the answers named (Message-ID carries the email id).
    for (const [i, res] of retries) {
      const mail = instance.smtp.messages.find((m) => m.rcptTo.includes(to(i)))!;
      expect(mail.parsed.messageId).toBe(`<${res.body.data.emails[0].email}@${domain.domain}>`);
      expect(mail.parsed.subject).toBe(`${tag} ${i}`);
    }
    // Some were still waiting for the mailer at the kill (rate-limited): delivery resumed too.
    expect(deliveredAtKill).toBeLessThan(everyone.length);
  });

  it('a mailer killed after the whole message went out and before the server answered does not send it again', { timeout: 300_000 }, async () => {
    const to = `${unique('held')}@customer.example`;
    instance.smtp.holdAnswers.add(to);
    const res = await project.api.post('/v1/send', { to, from: `hello@${domain.domain}`, subject: 'Held', body: '<p>Held</p>' });
    expect(res.status).toBe(200);
    const emailId = res.body.data.emails[0].email as string;
    // The server has the whole message and has not answered: the kill comes now. Mid-attempt, as
    // the claim left it: written (SENDING), or held in the embedded mailer's memory (QUEUED).
    await instance.smtp.waitForMailTo(to, DRAIN);
    expect((await project.api.get(`/emails/${emailId}`)).body.data.status).toBe(byMode({ embedded: 'QUEUED', distributed: 'SENDING' }));
    await instance.stop();
    instance.smtp.holdAnswers.delete(to);
    await instance.restart();

    const email = await waitForEmail(project.api, emailId, emailFinished, DRAIN, `email ${emailId} to be finished`);
    expect(email.status).toBe('DELIVERED');
    await untilIdle(instance, () => instance.smtp.messages.length, QUIET, DRAIN, 'the mailer to finish');
    expect(instance.smtp.messages.filter((m) => m.rcptTo.includes(to))).toHaveLength(1);
  });

  it('a CSV import killed while RUNNING completes after the restart with exact counters, every contact once', { timeout: 300_000 }, async () => {
    const tag = unique('import');
    const fresh = byMode({ embedded: 3_000, distributed: 300 });
    const known = byMode({ embedded: 150, distributed: 30 });
    const old = (i: number) => `${tag}-old-${i}@example.com`;
    const created = await upload(project.api, ['email,origin', ...Array.from({ length: known }, (_, i) => `${old(i)},before`)].join('\n'));
    expect(created.status).toBe(202);
    expect(await finished(project.api, created.body.data.jobId, DRAIN)).toMatchObject({ created: known, failed: 0 });

    // New addresses, with every 20th row an address the project has, ten bad rows and ten new
    // addresses given twice: all spread through the file, so every chunk has some of each.
    const lines = ['email,n,origin'];
    const expected = new Map<string, { n: number; origin: string }>();
    const badLines: number[] = [];
    let updated = 0;
    for (let i = 0; i < fresh; i++) {
      const email = `${tag}-new-${i}@example.com`;
      lines.push(`${email},${i},csv`);
      expected.set(email, { n: i, origin: 'csv' });
      if (i % 20 === 0 && i / 20 < known) {
        lines.push(`${old(i / 20)},${i},again`);
        expected.set(old(i / 20), { n: i, origin: 'again' });
        updated++;
      }
      if (i % Math.floor(fresh / 10) === 5) {
        lines.push(`not-an-email-${i},${i},bad`);
        badLines.push(lines.length);
      }
      if (i % Math.floor(fresh / 10) === 7) {
        lines.push(`${tag}-new-${i - 7}@example.com,${i},twice`);
        expected.set(`${tag}-new-${i - 7}@example.com`, { n: i, origin: 'twice' });
        updated++;
      }
    }
    for (let i = known; i-- > 0; ) if (!expected.has(old(i))) expected.set(old(i), { n: NaN, origin: 'before' });
    const total = lines.length - 1;

    const res = await upload(project.api, lines.join('\n'));
    expect(res.status).toBe(202);
    const jobId = res.body.data.jobId as string;
    // Killed while it runs: some chunks done, the rest not.
    const atKill = await eventually(async () => {
      const job = (await project.api.get(`/contacts/import/${jobId}`)).body.data as Job;
      return job.status !== 'QUEUED' && job.processed > 10 ? job : undefined;
    }, DRAIN, 'the import to make progress');
    const killedAt = Date.now();
    await instance.stop();
    expect(atKill.status).toBe('RUNNING');
    expect(atKill.processed).toBeLessThan(total);
    await instance.restart();

    const job = await finished(project.api, jobId, DRAIN);
    // It finished after the restart: it was not done at the kill.
    expect(Date.parse(job.finishedAt!)).toBeGreaterThan(killedAt);
    expect(job).toMatchObject({ status: 'COMPLETED', total, processed: total, created: fresh, updated, failed: badLines.length });
    expect(job.created + job.updated + job.failed).toBe(job.total);
    expect(job.errors.map((e) => e.row)).toEqual(badLines);

    const mine = (await allContacts(project.api)).filter((c) => c.email.startsWith(`${tag}-`));
    expect(mine).toHaveLength(fresh + known);
    expect(new Set(mine.map((c) => c.email)).size).toBe(mine.length);
    for (const c of mine) {
      const want = expected.get(c.email)!;
      expect(c.data, c.email).toStrictEqual(Number.isNaN(want.n) ? { origin: 'before' } : { n: want.n, origin: want.origin });
    }
  });

  it('a campaign killed mid-send: after the restart every recipient gets one email, SENT, and the stats add up', { timeout: 300_000 }, async () => {
    const tag = unique('campaign');
    // A project of its own: its audience (everyone subscribed) is exactly these addresses.
    const own = await newProject(instance, 'Crash campaign');
    const ownDomain = await verifiedDomain(instance, own);
    const total = byMode({ embedded: 300, distributed: 120 });
    const audience = Array.from({ length: total }, (_, i) => `${tag}-${i}@customer.example`);
    for (let i = 0; i < total; i += 100) {
      const segment = await own.api.post('/segments', { name: unique('everyone'), type: 'STATIC' });
      expect((await own.api.post(`/segments/${segment.body.data.id}/members`, { emails: audience.slice(i, i + 100) })).status).toBeLessThan(300);
    }
    expect((await own.api.get('/contacts?limit=1')).body.data.total).toBe(total);
    const created = await own.api.post('/campaigns', {
      name: tag, subject: tag, body: '<p>Hello {{email}}</p>', from: `news@${ownDomain.domain}`, audienceType: 'ALL',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const id = created.body.data.id as string;
    const received = () => receivedBy(instance, (s) => s === tag);

    expect((await own.api.post(`/campaigns/${id}/send`, {})).status).toBe(200);
    await eventually(async () => (received().size >= 20 ? true : undefined), DRAIN, 'the first emails');
    const queued = (await own.api.get(`/campaigns/${id}`)).body.data.recipientCount as number;
    const killedAt = Date.now();
    await instance.stop();
    const atKill = received().size;
    // Killed mid-send: some emails out, not all, and the audience not yet walked to its end.
    expect(atKill).toBeGreaterThan(0);
    expect(atKill).toBeLessThan(audience.length);
    expect(queued).toBeLessThan(audience.length);
    await instance.restart();

    const campaign = await eventually(async () => {
      const res = await own.api.get(`/campaigns/${id}`);
      return res.body.data?.status === 'SENT' ? res.body.data : undefined;
    }, DRAIN, 'the campaign to be SENT');
    expect(Date.parse(campaign.completedAt)).toBeGreaterThan(killedAt);
    await untilIdle(instance, () => instance.smtp.messages.length, QUIET, DRAIN, 'the mailer to finish');
    const got = received();
    expect(notOnce(got, audience)).toEqual([]);
    expect(got.size).toBe(audience.length);
    expect(campaign.recipientCount).toBe(audience.length);
    const stats = (await own.api.get(`/campaigns/${id}/stats`)).body.data;
    expect(stats).toEqual({ delivered: audience.length, opens: 0, clicks: 0, bounces: 0, complaints: 0 });
    // Each recipient's email.sent and email.delivery recorded once, counted (not just found),
    // wherever the kill fell between a send, the record of its result and the email's finish.
    const recorded = async () => {
      const { events } = (await own.api.get('/events/stats')).body.data as { events: { name: string; count: number }[] };
      return Object.fromEntries(['email.sent', 'email.delivery'].map((name) => [name, events.find((e) => e.name === name)?.count ?? 0]));
    };
    await eventually(async () => ((await recorded())['email.delivery'] >= audience.length ? true : undefined), DRAIN, 'every delivery recorded');
    expect(await recorded()).toEqual({ 'email.sent': audience.length, 'email.delivery': audience.length });
  });
});
