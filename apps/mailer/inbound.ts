import { createHash } from 'node:crypto';
import { simpleParser } from 'mailparser';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import { keepRawMessage } from '../../domain/inbound/raw.ts';
import { destinationOf, type Destination } from '../../domain/inbound/recipients.ts';
import { receivedMail, RECEIVED_TOPIC, senderOf, type ReceivedMail } from '../../domain/inbound/received.ts';
import { applyReport } from '../../domain/inbound/reports-intake.ts';
import { readReport } from '../../domain/inbound/reports.ts';
import { LIMITS } from '../../domain/limits.ts';
import type { Platform } from '../../runtime/platform.ts';

/** An SMTP answer: smtp-server sends `responseCode` and the message. */
const reply = (code: number, message: string) => Object.assign(new Error(message), { responseCode: code });

/**
 * The inbound SMTP listener (INBOUND_SMTP_PORT, mailer role): bounce and feedback reports sent to
 * the emails' Return-Paths, and mail to the projects' verified domains. Each RCPT is decided
 * before the message is taken (domain/inbound/recipients.ts), so mail for anyone else is refused
 * at RCPT; the message is then handled per recipient. A failure while handling answers 451, and
 * the sender tries again later (everything it records is idempotent).
 */
export async function startInboundListener(p: Platform): Promise<{ close(): Promise<void> }> {
  const destinations = new Map<string, Map<string, Destination>>();
  const server = new SMTPServer({
    name: p.config.inboundHost,
    banner: 'mailroom inbound',
    size: LIMITS.inbound.messageBytes,
    authOptional: true,
    disabledCommands: ['AUTH'],
    logger: false,
    onRcptTo(address, session, callback) {
      const taken = destinations.get(session.id) ?? new Map<string, Destination>();
      if (taken.size >= LIMITS.inbound.recipients) return callback(reply(452, '4.5.3 Too many recipients'));
      destinationOf(p, address.address).then(
        (destination) => {
          if (destination.kind === 'refused') return callback(reply(550, `5.1.1 ${destination.reason}`));
          taken.set(address.address, destination);
          destinations.set(session.id, taken);
          callback();
        },
        (err: Error) => {
          p.log.error({ err, rcptTo: address.address }, 'inbound RCPT could not be checked');
          callback(reply(451, '4.3.0 Try again later'));
        },
      );
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const taken = destinations.get(session.id) ?? new Map<string, Destination>();
        destinations.delete(session.id); // the next transaction on this connection starts afresh
        if (stream.sizeExceeded) return callback(reply(552, `5.3.4 Message larger than ${LIMITS.inbound.messageBytes} bytes`));
        handle(p, Buffer.concat(chunks), session, taken).then(
          () => callback(),
          (err: Error & { responseCode?: number }) => {
            if (err.responseCode) return callback(err);
            p.log.error({ err }, 'inbound message could not be handled; the sender will retry');
            callback(reply(451, '4.3.0 Try again later'));
          },
        );
      });
    },
    onClose(session) {
      destinations.delete(session.id);
    },
  });
  server.on('error', (err) => p.log.warn({ err }, 'inbound SMTP connection error'));
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(p.config.inboundSmtpPort, () => resolve());
  });
  p.log.info({ port: p.config.inboundSmtpPort, host: p.config.inboundHost }, 'inbound SMTP listening');
  return { close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

async function handle(p: Platform, raw: Buffer, session: SMTPServerSession, taken: Map<string, Destination>): Promise<void> {
  const mail = await simpleParser(raw, { keepDeliveryStatus: true });
  const report = readReport(mail);
  const envelopeFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : undefined;
  const mailboxes = [...taken].filter(([, d]) => d.kind === 'mailbox');
  const sender = senderOf(mail, envelopeFrom);
  if (mailboxes.length > 0 && !sender && envelopeFrom !== undefined) throw reply(550, '5.1.7 No sender address in From or MAIL FROM');

  const digest = createHash('sha256').update(raw).digest('hex');
  const received = new Map<string, ReceivedMail[]>();
  for (const [address, destination] of taken) {
    if (destination.kind === 'returnPath' || destination.kind === 'feedbackLoop') {
      const about = destination.kind === 'returnPath' ? { emailId: destination.emailId } : { quoted: bodyOf(raw) };
      const recorded = await applyReport(p, report, about);
      p.log.info({ rcptTo: address, report: report.kind, recorded }, 'inbound report');
    } else if (destination.kind === 'mailbox') {
      // Mail with a null sender (a bounce, an auto-notification: RFC 5321 4.5.5) has nobody to answer.
      if (!envelopeFrom || !sender) continue;
      const project = received.get(destination.projectId) ?? [];
      project.push(receivedMail(destination.projectId, mail, sender, address.toLowerCase(), digest));
      received.set(destination.projectId, project);
    }
  }
  // The raw message is kept before any event names it (and before the sender hears 250).
  for (const [projectId, items] of received) {
    await keepRawMessage(p, projectId, items.map((item) => item.eventId), raw, digest);
    for (const item of items) {
      await p.pubsub.publish<ReceivedMail>(RECEIVED_TOPIC, item);
      p.log.info({ rcptTo: item.data.to, projectId }, 'inbound mail received');
    }
  }
}

/** The message after its own header: a report's Message-ID is the quoted one, not the report's. */
function bodyOf(raw: Buffer): string {
  const text = raw.toString('utf8');
  const end = text.search(/\r?\n\r?\n/);
  return end < 0 ? '' : text.slice(end);
}
