import { SMTPServer } from 'smtp-server';
import PostalMime, { type Email } from 'postal-mime';
import type { AddressInfo } from 'node:net';

export interface ReceivedMessage {
  /** Envelope recipients as the server saw them. */
  rcptTo: string[];
  mailFrom: string;
  raw: Buffer;
  parsed: Email;
}

export interface SmtpSink {
  url: string;
  port: number;
  messages: ReceivedMessage[];
  /** Resolves with the first message (present or future) that satisfies `match`. */
  waitFor(match: (m: ReceivedMessage) => boolean, timeoutMs?: number): Promise<ReceivedMessage>;
  /** Next answers to RCPT TO are 5xx (hard bounce) for these addresses. */
  rejectRecipients: Set<string>;
  close(): Promise<void>;
}

/** A real SMTP server on loopback that keeps every message it accepts. */
export async function startSmtpSink(): Promise<SmtpSink> {
  const messages: ReceivedMessage[] = [];
  const waiters: { match: (m: ReceivedMessage) => boolean; resolve: (m: ReceivedMessage) => void }[] = [];
  const rejectRecipients = new Set<string>();

  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    size: 50 * 1024 * 1024,
    onRcptTo(address, _session, callback) {
      if (rejectRecipients.has(address.address.toLowerCase())) {
        const err = Object.assign(new Error('550 5.1.1 mailbox unavailable'), { responseCode: 550 });
        callback(err);
        return;
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', async () => {
        const raw = Buffer.concat(chunks);
        const message: ReceivedMessage = {
          raw,
          parsed: await PostalMime.parse(raw),
          rcptTo: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
          mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
        };
        messages.push(message);
        for (const waiter of [...waiters]) {
          if (waiter.match(message)) {
            waiters.splice(waiters.indexOf(waiter), 1);
            waiter.resolve(message);
          }
        }
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;

  return {
    url: `smtp://127.0.0.1:${port}`,
    port,
    messages,
    rejectRecipients,
    waitFor(match, timeoutMs = 10_000) {
      const found = messages.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const waiter = { match, resolve };
        waiters.push(waiter);
        setTimeout(() => {
          const i = waiters.indexOf(waiter);
          if (i >= 0) {
            waiters.splice(i, 1);
            reject(new Error(`no matching email within ${timeoutMs} ms (${messages.length} received)`));
          }
        }, timeoutMs).unref();
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
