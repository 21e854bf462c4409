import { emails, OUTBOUND_TOPIC, type OutboundMessage } from '../../domain/mail/outbound.ts';
import type { Platform } from '../../runtime/platform.ts';
import { createTransport } from './transport.ts';

/**
 * The mailer: consumes `email.outbound` and hands each email to SMTP once.
 * The QUEUED→SENDING claim makes a redelivered message a no-op once the email was handed over.
 */
export function startMailer(p: Platform): { close(): void } {
  const transport = createTransport(p.config, p.log);

  p.pubsub.subscribe<OutboundMessage>(OUTBOUND_TOPIC, async ({ emailId }) => {
    const collection = emails(p);
    const email = await collection.findOneAndUpdate(
      { _id: emailId, status: { $in: ['QUEUED', 'SENDING'] } },
      { $set: { status: 'SENDING' } },
    );
    if (!email) return; // sent already, or deleted with its contact
    try {
      const result = await transport.send({
        from: email.from,
        to: email.to,
        subject: email.subject,
        html: email.html,
        text: email.text,
      });
      await collection.updateOne({ _id: emailId }, { $set: { status: 'SENT', sentAt: new Date().toISOString(), messageId: result.messageId } });
    } catch (err) {
      // Leave it SENDING: the pub/sub redelivers with backoff until SMTP takes it.
      p.log.warn({ emailId, err: (err as Error).message }, 'send failed; will retry');
      throw err;
    }
  });

  return { close: () => transport.close() };
}
