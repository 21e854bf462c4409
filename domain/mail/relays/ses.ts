import { AppError, invalid } from '../../errors.ts';
import { bounceOf, EMAIL_ID_HEADER, headerIn, type RelayEvent, type RelayOutcome } from './events.ts';
import { badSignature, field, type RelayProvider, type RelayRequest } from './request.ts';
import { isSnsUrl, snsMessageOf, verifySns } from './sns.ts';

/** What reading an SNS post needs from outside: the signing certificate, and confirming a subscription. */
export interface SnsEffects {
  certificate(url: string): Promise<string>;
  confirm(subscribeUrl: string): Promise<void>;
}

/**
 * Amazon SES notifications (bounce, complaint, delivery; open and click from an event
 * destination) arrive through an SNS topic. The message must be signed by SNS and come from the
 * project's topic (anyone can make a topic and subscribe our URL to it). A subscription
 * confirmation from that topic is confirmed by visiting its `SubscribeURL`. Our email is the
 * Message-ID SES reports in `mail.commonHeaders`, or the mailer's header in `mail.headers`;
 * the event id is the SNS MessageId, the same on every retry.
 */
export const ses: RelayProvider = {
  setting: 'topicArn',
  problemWith: (v) => (/^arn:aws(-cn|-us-gov)?:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/.test(v) ? undefined : 'An SNS topic ARN: arn:aws:sns:<region>:<account>:<topic>'),
  read: (req, topicArn, sns) => sesEvents(req, topicArn, sns),
};

async function sesEvents(req: RelayRequest, topicArn: string, effects: SnsEffects): Promise<RelayEvent[]> {
  const m = snsMessageOf(req);
  if (!isSnsUrl(m.SigningCertURL, '.pem')) throw badSignature('SNS');
  verifySns(m, await effects.certificate(m.SigningCertURL));
  if (m.TopicArn !== topicArn) {
    throw new AppError('UNAUTHORIZED', `The SNS topic ${m.TopicArn} is not this project's SES topic`);
  }
  if (m.Type === 'SubscriptionConfirmation') {
    if (!isSnsUrl(m.SubscribeURL)) throw invalid('SubscribeURL', 'The subscription link is not on an SNS host', 'untrusted_url');
    await effects.confirm(m.SubscribeURL);
    return [];
  }
  if (m.Type !== 'Notification') return [];

  let notification: unknown;
  try {
    notification = JSON.parse(m.Message);
  } catch {
    throw invalid('Message', 'The SNS Message is not an SES notification (JSON)', 'invalid_json');
  }
  const outcome = outcomeOf(notification);
  if (!outcome) return [];
  const mail = field(notification, 'mail');
  return [{ id: m.MessageId, refs: [field(mail, 'commonHeaders', 'messageId'), headerIn(field(mail, 'headers'), EMAIL_ID_HEADER)], outcome }];
}

function outcomeOf(n: unknown): RelayOutcome | undefined {
  // Notifications name their kind `notificationType`; event publishing names it `eventType`.
  switch (field(n, 'notificationType') ?? field(n, 'eventType')) {
    case 'Delivery':
      return { kind: 'delivery' };
    case 'Bounce': {
      const recipient = (field(n, 'bounce', 'bouncedRecipients') as unknown[] | undefined)?.[0];
      const type = field(n, 'bounce', 'bounceType') === 'Permanent' ? 'hard' : 'soft'; // Transient, Undetermined
      return { kind: 'bounce', bounce: bounceOf(type, field(recipient, 'diagnosticCode'), field(recipient, 'status')) };
    }
    case 'Complaint':
      return { kind: 'complaint' };
    case 'Open':
      return { kind: 'open' };
    case 'Click': {
      const url = field(n, 'click', 'link');
      return typeof url === 'string' ? { kind: 'click', url } : undefined;
    }
    default:
      return undefined;
  }
}
