import { createHmac, createSign, generateKeyPairSync, randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/**
 * Stand-ins for the relay providers: each signs a post the way the provider does (its
 * documented scheme), with the project's key or with a wrong one. Written from the providers'
 * documentation, not from the platform's code, so a mistake on either side fails the tests.
 */
export interface ProviderPost {
  headers: Record<string, string>;
  body: string;
}

/** What a test says about an email: ids as the provider would report them. */
export interface SentEmail {
  emailId: string;
  messageId: string; // `<emailId@domain>`
  to: string;
}

export type Outcome = 'hardBounce' | 'softBounce' | 'complaint' | 'open' | 'click' | 'delivery';

export interface FakeProvider {
  /** The body of PUT /projects/:id/relays/:provider. */
  settings: Record<string, string>;
  post(email: SentEmail, outcome: Outcome, signing: 'right' | 'wrong'): ProviderPost;
}

const CLICKED = 'https://shop.example/offer';

export function fakePostmark(): FakeProvider {
  const password = `pm-${randomUUID()}`;
  const type: Record<Outcome, Record<string, unknown>> = {
    hardBounce: { RecordType: 'Bounce', Type: 'HardBounce', TypeCode: 1, Details: 'smtp;550 5.1.1 The email account that you tried to reach does not exist' },
    softBounce: { RecordType: 'Bounce', Type: 'SoftBounce', TypeCode: 4096, Details: 'smtp;452 4.2.2 Mailbox full' },
    complaint: { RecordType: 'SpamComplaint' },
    open: { RecordType: 'Open', FirstOpen: true },
    click: { RecordType: 'Click', OriginalLink: CLICKED },
    delivery: { RecordType: 'Delivery', Details: 'Test delivery webhook details' },
  };
  return {
    settings: { signingKey: password },
    post: (email, outcome, signing) => ({
      headers: { authorization: `Basic ${Buffer.from(`postmark:${signing === 'right' ? password : `${password}x`}`).toString('base64')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...type[outcome], MessageID: randomUUID(), Recipient: email.to, Email: email.to, Metadata: { 'mailroom-email-id': email.emailId }, MessageStream: 'outbound' }),
    }),
  };
}

export function fakeMailgun(): FakeProvider {
  const key = `key-${randomUUID().replace(/-/g, '')}`;
  const data: Record<Outcome, Record<string, unknown>> = {
    hardBounce: { event: 'failed', severity: 'permanent', reason: 'bounce', 'delivery-status': { code: 550, message: '5.1.1 The email account that you tried to reach does not exist' } },
    softBounce: { event: 'failed', severity: 'temporary', reason: 'generic', 'delivery-status': { code: 452, message: '4.2.2 Mailbox full' } },
    complaint: { event: 'complained' },
    open: { event: 'opened' },
    click: { event: 'clicked', url: CLICKED },
    delivery: { event: 'delivered', 'delivery-status': { code: 250 } },
  };
  return {
    settings: { signingKey: key },
    post: (email, outcome, signing) => {
      const timestamp = String(Math.floor(Date.now() / 1000));
      const token = randomUUID().replace(/-/g, '') + randomUUID().slice(0, 18);
      const signature = createHmac('sha256', signing === 'right' ? key : `${key}x`).update(timestamp + token).digest('hex');
      return {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          signature: { timestamp, token, signature },
          'event-data': { id: randomUUID(), timestamp: Date.now() / 1000, recipient: email.to, ...data[outcome], message: { headers: { 'message-id': email.messageId.slice(1, -1) } } },
        }),
      };
    },
  };
}

export function fakeSendgrid(): FakeProvider {
  const right = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const wrong = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const event: Record<Outcome, Record<string, unknown>> = {
    hardBounce: { event: 'bounce', type: 'bounce', status: '5.1.1', reason: '550 5.1.1 The email account that you tried to reach does not exist' },
    softBounce: { event: 'bounce', type: 'blocked', status: '4.0.0', reason: '450 4.0.0 try again later' },
    complaint: { event: 'spamreport' },
    open: { event: 'open' },
    click: { event: 'click', url: CLICKED },
    delivery: { event: 'delivered', response: '250 OK' },
  };
  return {
    settings: { signingKey: right.publicKey.export({ format: 'der', type: 'spki' }).toString('base64') },
    post: (email, outcome, signing) => {
      const timestamp = String(Math.floor(Date.now() / 1000));
      const body = JSON.stringify([{ email: email.to, timestamp: Number(timestamp), 'smtp-id': email.messageId, sg_event_id: randomUUID(), sg_message_id: randomUUID(), ...event[outcome] }]) + '\r\n';
      const signature = createSign('sha256').update(timestamp + body).sign((signing === 'right' ? right : wrong).privateKey).toString('base64');
      return {
        headers: { 'content-type': 'application/json', 'x-twilio-email-event-webhook-signature': signature, 'x-twilio-email-event-webhook-timestamp': timestamp },
        body,
      };
    },
  };
}

export function fakeResend(): FakeProvider {
  const secret = `whsec_${Buffer.from(randomUUID()).toString('base64')}`;
  const other = `whsec_${Buffer.from(randomUUID()).toString('base64')}`;
  const typed: Record<Outcome, Record<string, unknown>> = {
    hardBounce: { type: 'email.bounced', data: { bounce: { type: 'Permanent', subType: 'General', message: "The recipient's email address does not exist (550 5.1.1)" } } },
    softBounce: { type: 'email.bounced', data: { bounce: { type: 'Transient', subType: 'MailboxFull', message: 'Mailbox full (452 4.2.2)' } } },
    complaint: { type: 'email.complained', data: {} },
    open: { type: 'email.opened', data: {} },
    click: { type: 'email.clicked', data: { click: { link: CLICKED, ipAddress: '203.0.113.9', userAgent: 'Mozilla/5.0' } } },
    delivery: { type: 'email.delivered', data: {} },
  };
  return {
    settings: { signingKey: secret },
    post: (email, outcome, signing) => {
      const { type, data } = typed[outcome] as { type: string; data: Record<string, unknown> };
      const body = JSON.stringify({
        type,
        created_at: new Date().toISOString(),
        data: { email_id: randomUUID(), to: [email.to], subject: 'Hello', headers: [{ name: 'X-Mailroom-Email-Id', value: email.emailId }], ...data },
      });
      const id = `msg_${randomUUID()}`;
      const now = new Date();
      return {
        headers: { 'content-type': 'application/json', 'svix-id': id, 'svix-timestamp': String(Math.floor(now.getTime() / 1000)), 'svix-signature': new Webhook(signing === 'right' ? secret : other).sign(id, now, body) },
        body,
      };
    },
  };
}

/**
 * Amazon SNS carrying SES notifications, signed (SignatureVersion 2, RSA-SHA256) with a key
 * whose public half the instance trusts through `SNS_TEST_CERTIFICATE`.
 */
export function fakeSes(topicArn: string) {
  const right = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const wrong = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const notification: Record<Outcome, Record<string, unknown>> = {
    hardBounce: { notificationType: 'Bounce', bounce: { bounceType: 'Permanent', bounceSubType: 'General', bouncedRecipients: [{ status: '5.1.1', diagnosticCode: 'smtp; 550 5.1.1 user unknown' }] } },
    softBounce: { notificationType: 'Bounce', bounce: { bounceType: 'Transient', bounceSubType: 'MailboxFull', bouncedRecipients: [{ status: '4.2.2', diagnosticCode: 'smtp; 452 4.2.2 mailbox full' }] } },
    complaint: { notificationType: 'Complaint', complaint: { complaintFeedbackType: 'abuse' } },
    open: { eventType: 'Open', open: { ipAddress: '203.0.113.9' } },
    click: { eventType: 'Click', click: { link: CLICKED } },
    delivery: { notificationType: 'Delivery', delivery: { smtpResponse: '250 ok' } },
  };
  /** Signs an SNS message: the canonical string is its fields in this order, each `Name\nvalue\n`. */
  const sign = (m: Record<string, string>, key: typeof right) => {
    const order = m.Type === 'Notification' ? ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type'] : ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'];
    const canonical = order.filter((k) => m[k] !== undefined).map((k) => `${k}\n${m[k]}\n`).join('');
    return { ...m, SignatureVersion: '2', Signature: createSign('RSA-SHA256').update(canonical).sign(key.privateKey).toString('base64') };
  };
  const envelope = (fields: Record<string, string>, signing: 'right' | 'wrong', certUrl = 'https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0000.pem'): ProviderPost => ({
    headers: { 'content-type': 'text/plain; charset=UTF-8', 'x-amz-sns-message-type': fields.Type },
    body: JSON.stringify(sign({ MessageId: randomUUID(), TopicArn: topicArn, Timestamp: new Date().toISOString(), SigningCertURL: certUrl, ...fields }, signing === 'right' ? right : wrong)),
  });
  return {
    publicKeyPem: right.publicKey.export({ format: 'pem', type: 'spki' }).toString(),
    settings: { topicArn },
    envelope,
    post: (email: SentEmail, outcome: Outcome, signing: 'right' | 'wrong') =>
      envelope(
        {
          Type: 'Notification',
          Message: JSON.stringify({ ...notification[outcome], mail: { messageId: `0100018c-${randomUUID()}`, destination: [email.to], commonHeaders: { messageId: email.messageId, to: [email.to] } } }),
        },
        signing,
      ),
  } satisfies FakeProvider & Record<string, unknown>;
}
