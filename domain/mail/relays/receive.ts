import { createHash } from 'node:crypto';
import { DuplicateKeyError, type Doc } from '../../../ports/store.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { AppError } from '../../errors.ts';
import { nowIso } from '../../ids.ts';
import { emails } from '../outbound.ts';
import { EMAIL_RESULTS_TOPIC, type EmailResult } from '../results.ts';
import { recordEngagement } from '../tracking.ts';
import { emailIdIn, type RelayEvent, type RelayOutcome } from './events.ts';
import { PROVIDERS, type RelayProviderName } from './providers.ts';
import type { RelayRequest } from './request.ts';
import { relayCredential } from './settings.ts';
import { snsEffects } from './sns-fetch.ts';

/** One provider event taken in: its id is the receipt's, so a retry of it finds the receipt and records nothing. */
interface RelayReceiptDoc extends Doc {
  projectId: string;
  emailId: string;
  at: string;
}

const receipts = (p: Platform) => p.store.collection<RelayReceiptDoc>('relay_receipts');

/**
 * A provider's webhook post for a project: checked against the project's settings for that
 * provider (401 when they are missing or the signature is wrong, and nothing is recorded), then
 * each event about one of the project's emails is recorded once. Events about other mail
 * (another project's, mail we did not send) are counted but ignored, so the provider stops retrying.
 */
export async function receiveRelayPost(p: Platform, provider: RelayProviderName, projectId: string, req: RelayRequest) {
  const credential = await relayCredential(p, projectId, provider);
  if (!credential) {
    throw new AppError('UNAUTHORIZED', `This project has no ${provider} settings, so no ${provider} post can be checked`, {
      suggestion: `Set them with PUT /projects/:id/relays/${provider}.`,
    });
  }
  const events = await PROVIDERS[provider].read(req, credential.value, snsEffects(p));
  let recorded = 0;
  for (const event of events) if (await takeIn(p, provider, projectId, event)) recorded++;
  return { events: events.length, recorded };
}

async function takeIn(p: Platform, provider: RelayProviderName, projectId: string, event: RelayEvent): Promise<boolean> {
  const emailId = emailIdIn(event.refs);
  if (!emailId) return false;
  const email = await emails(p).findOne({ _id: emailId, projectId }, { projection: { contactId: 1 } });
  if (!email?.contactId) return false; // not this project's, or its contact deleted (the record is anonymised)

  const receipt = `${projectId}/${provider}/${event.id}`;
  try {
    await receipts(p).insertOne({ _id: receipt, projectId, emailId, at: nowIso() });
  } catch (err) {
    if (err instanceof DuplicateKeyError) return false; // a retry of an event already taken in
    throw err;
  }
  try {
    return await record(p, { projectId, emailId, contactId: email.contactId }, event.outcome, `relay-${createHash('sha256').update(receipt).digest('base64url').slice(0, 32)}`);
  } catch (err) {
    // Not recorded: forget the receipt, so the provider's retry (our error answer asks for one) records it.
    await receipts(p).deleteOne({ _id: receipt }).catch(() => undefined);
    throw err;
  }
}

/**
 * Deliveries, bounces and complaints are outcomes (results.ts records them once per email, and
 * suppresses and unsubscribes); opens and clicks are engagement (tracking.ts, whose repeat window
 * also applies). Says whether something was recorded.
 */
async function record(p: Platform, email: { projectId: string; emailId: string; contactId: string }, outcome: RelayOutcome, eventId: string): Promise<boolean> {
  if (outcome.kind === 'open' || outcome.kind === 'click') {
    const engagement = outcome.kind === 'open' ? { kind: 'open' as const, emailId: email.emailId } : { kind: 'click' as const, emailId: email.emailId, url: outcome.url };
    return (await recordEngagement(p, engagement, undefined, eventId)) === 'recorded';
  }
  await p.pubsub.publish<EmailResult>(EMAIL_RESULTS_TOPIC, {
    ...email,
    event: `email.${outcome.kind}`,
    ...(outcome.kind === 'bounce' ? { bounce: outcome.bounce, ...(outcome.bounce.diagnostic ? { detail: outcome.bounce.diagnostic } : {}) } : {}),
    at: nowIso(),
  });
  return true;
}
