import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { eventually } from './client.ts';
import { deliverMail, type SmtpAnswer } from './smtp-client.ts';

export interface RelayedMessage {
  mailFrom: string;
  rcptTo: string[];
  raw: string;
}

export interface Relay {
  url: string;
  messages: RelayedMessage[];
  /** Where DSNs go: the platform's inbound SMTP port (set once the instance runs). */
  inboundPort?: number;
  /** Where mail for the other recipients goes on: the instance's SMTP sink (set once it runs). */
  nextHopPort?: number;
  /** Recipients the relay takes (250) and then fails to deliver, with the next hop's answer. */
  undeliverable: Map<string, { status: string; diagnostic: string }>;
  /** The DSNs it sent, to whom, and how the platform answered. */
  reports: { to: string; answer: SmtpAnswer }[];
  waitForReport(to: (address: string) => boolean): Promise<{ to: string; answer: SmtpAnswer }>;
  close(): Promise<void>;
}

/**
 * A relay as SMTP_URL: a real SMTP server that accepts every message and passes it on to the next
 * hop (the instance's sink, so the harness sees account mail), and for a recipient it cannot
 * deliver later sends a delivery status notification (RFC 3464, Postfix's shape) from the
 * null sender to the message's envelope sender, through the platform's inbound listener: what a
 * real relay does with the Return-Path it was given.
 */
export async function startRelay(): Promise<Relay> {
  const relay: Relay = {
    url: '',
    messages: [],
    undeliverable: new Map(),
    reports: [],
    waitForReport: (to) => eventually(async () => relay.reports.find((r) => to(r.to)), 10_000, 'a DSN from the relay'),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const message: RelayedMessage = {
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          rcptTo: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
          raw: Buffer.concat(chunks).toString('utf8'),
        };
        relay.messages.push(message);
        callback(); // 250: taken; the failure comes later, as a report
        // A hop that is gone (the instance disposed) is the end of this message, not a test failure.
        setTimeout(() => void bounce(relay, message).catch(() => {}), 50);
      });
    },
  });
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  relay.url = `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`;
  return relay;
}

async function bounce(relay: Relay, message: RelayedMessage): Promise<void> {
  for (const recipient of message.rcptTo) {
    const failure = relay.undeliverable.get(recipient);
    if (!failure && relay.nextHopPort) await deliverMail(relay.nextHopPort, { from: message.mailFrom, to: [recipient] }, message.raw);
    if (!failure || !message.mailFrom || !relay.inboundPort) continue;
    const answer = await deliverMail(relay.inboundPort, { from: '', to: [message.mailFrom] }, postfixDsn(message, recipient, failure));
    relay.reports.push({ to: message.mailFrom, answer });
  }
}

/** The quoted headers of the original, as Postfix returns them (text/rfc822-headers). */
const headersOf = (raw: string) => raw.slice(0, raw.search(/\r?\n\r?\n/));

export function postfixDsn(message: RelayedMessage, recipient: string, failure: { status: string; diagnostic: string }): string {
  const boundary = 'dsn-boundary-7Q2';
  return [
    'From: MAILER-DAEMON@relay.test (Mail Delivery System)',
    `To: ${message.mailFrom}`,
    'Subject: Undelivered Mail Returned to Sender',
    'Auto-Submitted: auto-replied',
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=delivery-status; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=us-ascii',
    '',
    `<${recipient}>: host mx.example said: ${failure.diagnostic}`,
    '',
    `--${boundary}`,
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; relay.test',
    `X-Postfix-Sender: rfc822; ${message.mailFrom}`,
    '',
    `Final-Recipient: rfc822; ${recipient}`,
    `Action: ${failure.status.startsWith('4') ? 'delayed' : 'failed'}`,
    `Status: ${failure.status}`,
    `Diagnostic-Code: smtp; ${failure.diagnostic}`,
    '',
    `--${boundary}`,
    'Content-Type: text/rfc822-headers',
    '',
    headersOf(message.raw),
    '',
    `--${boundary}--`,
    '',
  ].join('\r\n');
}
