// Each relay provider's post: its signature checked by the provider's documented scheme, and its
// events mapped to ours (delivery, hard or soft bounce, complaint, open, click).
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { emailIdIn } from '../../domain/mail/relays/events.ts';
import { PROVIDERS, type RelayProviderName } from '../../domain/mail/relays/providers.ts';
import type { RelayRequest } from '../../domain/mail/relays/request.ts';
import { verifySendgrid } from '../../domain/mail/relays/sendgrid.ts';
import { canonicalString, isSnsUrl, type SnsMessage } from '../../domain/mail/relays/sns.ts';
import { fakeMailgun, fakePostmark, fakeResend, fakeSendgrid, fakeSes, type FakeProvider, type Outcome, type ProviderPost } from '../harness/relays.ts';

const request = (post: ProviderPost): RelayRequest => ({ body: Buffer.from(post.body), headers: post.headers });

describe('SendGrid signatures', () => {
  // The example of SendGrid's own libraries (sendgrid-nodejs, -java, -csharp: EventWebhook tests).
  const documented = {
    publicKey: 'MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEDr2LjtURuePQzplybdC+u4CwrqDqBaWjcMMsTbhdbcwHBcepxo7yAQGhHPTnlvFYPAZFceEu/1FwCM/QmGUhA==',
    payload: '{"category":"example_payload","event":"test_event","message_id":"message_id"}',
    signature: 'MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH2j/0=',
    timestamp: '1588788367',
  };
  const post = (payload: string, signature: string, timestamp: string): RelayRequest => ({
    body: Buffer.from(payload),
    headers: { 'x-twilio-email-event-webhook-signature': signature, 'x-twilio-email-event-webhook-timestamp': timestamp },
  });

  it("verifies SendGrid's documented example, and refuses it with another payload, timestamp or key", () => {
    const { publicKey, payload, signature, timestamp } = documented;
    expect(() => verifySendgrid(post(payload, signature, timestamp), publicKey)).not.toThrow();
    expect(() => verifySendgrid(post(payload.replace('test_event', 'test_evenT'), signature, timestamp), publicKey)).toThrow(/signature/);
    expect(() => verifySendgrid(post(payload, signature, '1388788367'), publicKey)).toThrow(/signature/);
    const otherKey = 'MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEqTxd43gyp8IOEto2LdIfjRQrIbsd4SXZkLW6jDutdhXSJCWHw8REntlo7aNDthvj+y7GjUuFDb/R1NGe1OPzpA==';
    expect(() => verifySendgrid(post(payload, signature, timestamp), otherKey)).toThrow(/signature/);
  });
});

describe('SNS', () => {
  it('trusts certificates and subscription links only on sns.<region>.amazonaws.com over https', () => {
    expect(isSnsUrl('https://sns.us-east-1.amazonaws.com/SimpleNotificationService-9c6465fa7f48f5cacd23014631ec1136.pem', '.pem')).toBe(true);
    expect(isSnsUrl('https://sns.cn-north-1.amazonaws.com.cn/SimpleNotificationService-1.pem', '.pem')).toBe(true);
    for (const url of [
      'http://sns.us-east-1.amazonaws.com/cert.pem',
      'https://sns.us-east-1.amazonaws.com.evil.example/cert.pem',
      'https://evil.example/sns.us-east-1.amazonaws.com/cert.pem',
      'https://sns.us-east-1.amazonaws.com@evil.example/cert.pem',
      'https://sns.us-east-1.amazonaws.com:8443/cert.pem',
      'https://s3.amazonaws.com/cert.pem',
      'https://sns.us-east-1.amazonaws.com/cert.txt',
      'not a url',
    ]) {
      expect(isSnsUrl(url, '.pem'), url).toBe(false);
    }
  });

  it('signs the fields of each message type in their fixed order, leaving out an absent Subject', () => {
    const base = { MessageId: 'm1', TopicArn: 'arn:t', Message: 'hello', Timestamp: '2026-01-01T00:00:00.000Z', SignatureVersion: '1', Signature: '', SigningCertURL: '' };
    expect(canonicalString({ ...base, Type: 'Notification' } as SnsMessage)).toBe('Message\nhello\nMessageId\nm1\nTimestamp\n2026-01-01T00:00:00.000Z\nTopicArn\narn:t\nType\nNotification\n');
    expect(canonicalString({ ...base, Type: 'Notification', Subject: 'S' } as SnsMessage)).toContain('MessageId\nm1\nSubject\nS\nTimestamp\n');
    expect(canonicalString({ ...base, Type: 'SubscriptionConfirmation', SubscribeURL: 'https://u', Token: 'tk' } as SnsMessage)).toBe(
      'Message\nhello\nMessageId\nm1\nSubscribeURL\nhttps://u\nTimestamp\n2026-01-01T00:00:00.000Z\nToken\ntk\nTopicArn\narn:t\nType\nSubscriptionConfirmation\n',
    );
  });
});

describe('finding our email in what a provider reports', () => {
  const id = randomUUID();
  it('reads our Message-ID with or without brackets, or the bare id; anything else is not ours', () => {
    expect(emailIdIn([`<${id}@mail.example.com>`])).toBe(id);
    expect(emailIdIn([`${id}@mail.example.com`])).toBe(id);
    expect(emailIdIn([undefined, 42, id.toUpperCase()])).toBe(id);
    expect(emailIdIn(['<20130503182626.18666.16540@sandbox.mailgun.org>', '<not-ours@x>', ''])).toBeUndefined();
  });
});

describe('each provider maps its events to ours', () => {
  const TOPIC = 'arn:aws:sns:eu-west-1:123456789012:mailroom';
  const ses = fakeSes(TOPIC);
  const fakes: Record<RelayProviderName, FakeProvider> = { ses, postmark: fakePostmark(), mailgun: fakeMailgun(), sendgrid: fakeSendgrid(), resend: fakeResend() };
  const effects = { certificate: async () => ses.publicKeyPem, confirm: async () => undefined };
  const email = { emailId: randomUUID(), messageId: '', to: 'someone@customer.example' };
  email.messageId = `<${email.emailId}@news.example.com>`;
  const expected: Record<Outcome, unknown> = {
    delivery: { kind: 'delivery' },
    hardBounce: { kind: 'bounce', bounce: expect.objectContaining({ type: 'hard', status: '5.1.1', diagnostic: expect.any(String) }) },
    softBounce: { kind: 'bounce', bounce: expect.objectContaining({ type: 'soft', status: expect.stringMatching(/^4\./) }) },
    complaint: { kind: 'complaint' },
    open: { kind: 'open' },
    click: { kind: 'click', url: 'https://shop.example/offer' },
  };

  for (const name of Object.keys(fakes) as RelayProviderName[]) {
    it(`${name}: delivery, hard and soft bounces, complaints, opens and clicks, each naming our email; a wrong signature is refused`, async () => {
      const fake = fakes[name];
      const setting = Object.values(fake.settings)[0];
      for (const outcome of Object.keys(expected) as Outcome[]) {
        const events = await PROVIDERS[name].read(request(fake.post(email, outcome, 'right')), setting, effects);
        expect(events, `${name} ${outcome}`).toEqual([{ id: expect.any(String), refs: expect.any(Array), outcome: expected[outcome] }]);
        expect(emailIdIn(events[0].refs), `${name} ${outcome}`).toBe(email.emailId);
        await expect(Promise.resolve().then(() => PROVIDERS[name].read(request(fake.post(email, outcome, 'wrong')), setting, effects))).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
      }
    });
  }

  it('a Postmark auto-reply (sent as a bounce) says nothing of the address: no event', async () => {
    const postmark = fakes.postmark;
    const autoReply = postmark.post(email, 'hardBounce', 'right');
    autoReply.body = JSON.stringify({ ...JSON.parse(autoReply.body), Type: 'AutoResponder' });
    expect(await PROVIDERS.postmark.read(request(autoReply), postmark.settings.signingKey, effects)).toEqual([]);
  });
});
