// Bounces, complaints, opens and clicks reported by relay providers' webhooks (Amazon SES through
// SNS, Postmark, Mailgun, SendGrid, Resend): a post signed with the project's settings records
// its events, once however often the provider retries; a wrongly signed one is a 401 and records
// nothing.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { eventually, waitForDelivered } from '../harness/client.ts';
import { verifiedDomain, type Domain } from '../harness/domains.ts';
import { byMode, QUIET_MS, startInstance, type Instance } from '../harness/instance.ts';
import { fakeMailgun, fakePostmark, fakeResend, fakeSendgrid, fakeSes, type FakeProvider, type ProviderPost, type SentEmail } from '../harness/relays.ts';
import { sleep } from '../harness/client.ts';
import { unique } from '../harness/workflows.ts';

const DRAIN = byMode({ embedded: 20_000, distributed: 60_000 });
const TOPIC = 'arn:aws:sns:eu-west-1:123456789012:mailroom-ses';

describe('relay provider webhooks', () => {
  let instance: Instance;
  let project: ProjectAccess;
  let domain: Domain;
  const ses = fakeSes(TOPIC);
  const providers: Record<string, FakeProvider> = { ses, postmark: fakePostmark(), mailgun: fakeMailgun(), sendgrid: fakeSendgrid(), resend: fakeResend() };

  beforeAll(async () => {
    const certificate = join(await mkdtemp(join(tmpdir(), 'mailroom-sns-')), 'sns.pem');
    await writeFile(certificate, ses.publicKeyPem);
    instance = await startInstance({ env: { SNS_TEST_CERTIFICATE: certificate } });
    project = await newProject(instance, 'Relay webhooks');
    domain = await verifiedDomain(instance, project);
    for (const [name, provider] of Object.entries(providers)) {
      const set = await instance.api.put(`/projects/${project.projectId}/relays/${name}`, provider.settings, { auth: project.token });
      expect(set.status, JSON.stringify(set.body)).toBe(200);
    }
  });
  afterAll(() => instance?.dispose());

  const deliver = async (provider: string, post: ProviderPost, projectId = project.projectId): Promise<{ status: number; body: any }> => {
    const res = await fetch(`${instance.url}/v1/relay-events/${provider}/${projectId}`, { method: 'POST', headers: post.headers, body: post.body });
    return { status: res.status, body: await res.json() };
  };

  /** A sent email to a fresh address, and its contact. */
  const sendOne = async (tag: string): Promise<SentEmail & { contactId: string }> => {
    const to = `${unique(tag)}@customer.example`;
    const sent = await project.api.post('/v1/send', { to, from: `news@${domain.domain}`, subject: 'Hello', body: '<p>Hello</p>' });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const { email: emailId, contact } = sent.body.data.emails[0];
    return { emailId, messageId: `<${emailId}@${domain.domain}>`, to, contactId: contact.id };
  };
  // A relay reports on mail it has: each report below comes once the sink has the message.
  const handedOver = (email: { to: string }) => instance.smtp.waitForMailTo(email.to, DRAIN);
  const eventsOf = async (contactId: string) => (await project.api.get(`/events/contact/${contactId}`)).body.data as { name: string; data: Record<string, unknown> }[];
  const named = async (contactId: string, name: string) => (await eventsOf(contactId)).filter((e) => e.name === name);
  const suppression = async (to: string) => project.api.get(`/suppressions/${encodeURIComponent(to)}`);

  for (const name of ['ses', 'postmark', 'mailgun', 'sendgrid', 'resend']) {
    it(`${name}: a wrongly signed bounce is a 401 and records nothing; a correctly signed one records a hard email.bounce and suppresses the address, once however often it is retried`, async () => {
      const provider = providers[name];
      const email = await sendOne(`${name}-bounce`);
      await handedOver(email);

      const forged = await deliver(name, provider.post(email, 'hardBounce', 'wrong'));
      expect(forged.status, JSON.stringify(forged.body)).toBe(401);
      expect(forged.body).toMatchObject({ success: false, error: { code: 'UNAUTHORIZED' } });
      await sleep(QUIET_MS);
      expect((await suppression(email.to)).status).toBe(404);
      expect(await named(email.contactId, 'email.bounce')).toEqual([]);

      const post = provider.post(email, 'hardBounce', 'right');
      const first = await deliver(name, post);
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      expect(first.body.data).toEqual({ events: 1, recorded: 1 });
      const entry = await eventually(async () => {
        const res = await suppression(email.to);
        return res.status === 200 ? res.body.data : undefined;
      }, DRAIN, 'the address to be suppressed');
      expect(entry).toMatchObject({ reason: 'hard_bounce', emailId: email.emailId });
      const bounces = await eventually(async () => {
        const found = await named(email.contactId, 'email.bounce');
        return found.length ? found : undefined;
      }, DRAIN, 'email.bounce to be recorded');
      expect(bounces).toEqual([expect.objectContaining({ data: expect.objectContaining({ emailId: email.emailId, type: 'hard', status: expect.stringMatching(/^5\.1\.1$/) }) })]);
      expect((await project.api.get(`/contacts/${email.contactId}`)).body.data.subscribed).toBe(false);

      // The provider retries the same post: nothing new.
      const again = await deliver(name, post);
      expect(again.status).toBe(200);
      expect(again.body.data).toEqual({ events: 1, recorded: 0 });
      await sleep(QUIET_MS);
      expect(await named(email.contactId, 'email.bounce')).toHaveLength(1);
    });
  }

  it('every email names itself to the providers: our Message-ID, X-Mailroom-Email-Id, and the metadata header Postmark reports back', async () => {
    const email = await sendOne('headers');
    const message = await handedOver(email);
    const head = message.raw.toString('utf8').split(/\r?\n\r?\n/)[0];
    expect(head).toMatch(new RegExp(`^Message-ID:\\s+${email.messageId}$`, 'im')); // folded or not
    expect(head).toMatch(new RegExp(`^X-Mailroom-Email-Id: ${email.emailId}$`, 'im'));
    expect(head).toMatch(new RegExp(`^X-PM-Metadata-mailroom-email-id: ${email.emailId}$`, 'im'));
  });

  it('a soft bounce records a soft email.bounce and neither suppresses nor unsubscribes', async () => {
    const email = await sendOne('soft');
    await handedOver(email);
    const subscribed = (await project.api.get(`/contacts/${email.contactId}`)).body.data.subscribed;
    expect((await deliver('mailgun', providers.mailgun.post(email, 'softBounce', 'right'))).body.data).toEqual({ events: 1, recorded: 1 });
    const [bounce] = await eventually(async () => {
      const found = await named(email.contactId, 'email.bounce');
      return found.length ? found : undefined;
    }, DRAIN, 'the soft bounce to be recorded');
    expect(bounce.data).toMatchObject({ type: 'soft', status: '4.2.2' });
    expect((await suppression(email.to)).status).toBe(404);
    expect((await project.api.get(`/contacts/${email.contactId}`)).body.data.subscribed).toBe(subscribed);
  });

  it('a complaint records email.complaint and suppresses; opens and clicks record email.open and email.click {url}, each once per provider event', async () => {
    const email = await sendOne('engaged');
    await waitForDelivered(project.api, email.emailId, DRAIN); // the open, the click and the complaint update the email
    const open = providers.resend.post(email, 'open', 'right');
    expect((await deliver('resend', open)).body.data).toEqual({ events: 1, recorded: 1 });
    expect((await deliver('resend', open)).body.data).toEqual({ events: 1, recorded: 0 });
    expect((await deliver('sendgrid', providers.sendgrid.post(email, 'click', 'right'))).body.data).toEqual({ events: 1, recorded: 1 });
    expect((await deliver('postmark', providers.postmark.post(email, 'complaint', 'right'))).body.data).toEqual({ events: 1, recorded: 1 });

    const events = await eventually(async () => {
      const found = await eventsOf(email.contactId);
      return found.some((e) => e.name === 'email.complaint') ? found : undefined;
    }, DRAIN, 'the complaint to be recorded');
    expect((await suppression(email.to)).body.data.reason).toBe('complaint');
    expect(events.filter((e) => e.name === 'email.open')).toHaveLength(1);
    expect(events.filter((e) => e.name === 'email.click').map((e) => e.data)).toEqual([{ emailId: email.emailId, url: 'https://shop.example/offer' }]);
    expect(events.filter((e) => e.name === 'email.complaint')).toHaveLength(1);
  });

  it("a post for a project without that provider's settings, or for another project's email, records nothing", async () => {
    const other = await newProject(instance, 'No relays');
    const email = await sendOne('elsewhere');
    const unset = await deliver('mailgun', providers.mailgun.post(email, 'hardBounce', 'right'), other.projectId);
    expect(unset.status).toBe(401);
    expect(unset.body.error.code).toBe('UNAUTHORIZED');
    // The other project signs with its own key, but the email is not its own.
    const key = providers.postmark.settings;
    expect((await instance.api.put(`/projects/${other.projectId}/relays/postmark`, key, { auth: other.token })).status).toBe(200);
    expect((await deliver('postmark', providers.postmark.post(email, 'hardBounce', 'right'), other.projectId)).body.data).toEqual({ events: 1, recorded: 0 });
    await sleep(QUIET_MS);
    expect((await suppression(email.to)).status).toBe(404);
  });

  it("SNS: a message from another topic, or naming a certificate off SNS's hosts, is a 401; a forged subscription confirmation is a 401 and fetches nothing", async () => {
    const email = await sendOne('sns');
    const otherTopic = fakeSes('arn:aws:sns:eu-west-1:210987654321:someone-else');
    // Same signing key the instance trusts: only the topic differs.
    const foreignTopic = JSON.parse(otherTopic.post(email, 'hardBounce', 'right').body);
    const signedForeign = ses.envelope({ Type: 'Notification', Message: foreignTopic.Message, TopicArn: 'arn:aws:sns:eu-west-1:210987654321:someone-else' }, 'right');
    expect((await deliver('ses', signedForeign)).status).toBe(401);
    const offHost = ses.envelope({ Type: 'Notification', Message: foreignTopic.Message }, 'right', 'https://sns.eu-west-1.amazonaws.com.evil.example/cert.pem');
    expect((await deliver('ses', offHost)).status).toBe(401);
    const confirmation = ses.envelope({ Type: 'SubscriptionConfirmation', Message: 'You have chosen to subscribe', Token: 'token', SubscribeURL: 'https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&Token=token' }, 'wrong');
    expect((await deliver('ses', confirmation)).status).toBe(401);
    expect((await suppression(email.to)).status).toBe(404);
  });

  it('settings: checked per provider (422 naming the field), listed with their webhook URLs and never the secret, removed (then posts are 401)', async () => {
    const own = await newProject(instance, 'Relay settings');
    const put = (provider: string, body: unknown) => instance.api.put(`/projects/${own.projectId}/relays/${provider}`, body, { auth: own.token });
    const refused = await put('resend', { signingKey: 'not-a-whsec-secret' });
    expect(refused.status).toBe(422);
    expect(refused.body.error.errors).toEqual([expect.objectContaining({ field: 'signingKey' })]);
    expect((await put('ses', { signingKey: 'x'.repeat(20) })).body.error.errors).toEqual([expect.objectContaining({ field: 'signingKey' })]);
    expect((await put('ses', {})).body.error.errors).toEqual([expect.objectContaining({ field: 'topicArn' })]);
    expect((await put('sendgrid', { signingKey: 'bm90IGEga2V5' })).status).toBe(422);
    expect((await put('nosuchprovider', { signingKey: 'x'.repeat(20) })).status).toBe(422);

    const mailgun = fakeMailgun();
    expect((await put('mailgun', mailgun.settings)).status).toBe(200);
    expect((await put('ses', { topicArn: TOPIC })).status).toBe(200);
    const listed = await instance.api.get(`/projects/${own.projectId}/relays`, { auth: own.token });
    expect(listed.body.data).toEqual([
      { provider: 'ses', webhookUrl: `${instance.url}/v1/relay-events/ses/${own.projectId}`, topicArn: TOPIC, updatedAt: expect.any(String) },
      { provider: 'mailgun', webhookUrl: `${instance.url}/v1/relay-events/mailgun/${own.projectId}`, updatedAt: expect.any(String) },
    ]);
    expect(JSON.stringify(listed.body)).not.toContain(mailgun.settings.signingKey);

    expect((await instance.api.delete(`/projects/${own.projectId}/relays/mailgun`, undefined, { auth: own.token })).status).toBe(204);
    expect((await instance.api.delete(`/projects/${own.projectId}/relays/mailgun`, undefined, { auth: own.token })).status).toBe(404);
    const email = await sendOne('removed');
    expect((await deliver('mailgun', mailgun.post(email, 'hardBounce', 'right'), own.projectId)).status).toBe(401);
  });

  it('a malformed post is a 422 after its signature checks out, never a 500', async () => {
    const mailgun = providers.mailgun;
    expect((await deliver('mailgun', { headers: { 'content-type': 'application/json' }, body: '{not json' })).status).toBe(422);
    expect((await deliver('mailgun', { headers: { 'content-type': 'application/json' }, body: '[]' })).status).toBe(401);
    const email = await sendOne('malformed');
    const post = JSON.parse(mailgun.post(email, 'open', 'right').body);
    delete post['event-data'].id;
    expect((await deliver('mailgun', { headers: { 'content-type': 'application/json' }, body: JSON.stringify(post) })).status).toBe(422);
    expect((await deliver('ses', { headers: { 'content-type': 'text/plain' }, body: '' })).status).toBe(422);
    expect((await deliver('sendgrid', { headers: {}, body: '' })).status).toBe(401);
  });
});
